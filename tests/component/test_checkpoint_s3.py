"""Checkpoints on an S3 API server: the same format and guarantees as on a local directory.

Real: moto's S3 server as a process on 127.0.0.1 (s3server.py), psjob's own S3
client speaking HTTP and SigV4 to it, the pserver programs (in-memory transport
for the N -> M reloads), and in the last test a whole `psjob launch` job whose
pservers and trainers checkpoint to the bucket and restore from it. Faked: nothing.
"""
import importlib.util
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.pserver.pserver_state import PserverState
from psjob.foundation.checkpoint import s3, s3client, storage, store
from psjob.foundation.checkpoint.format import (
    CORRUPT_MARKER,
    CorruptFileError,
    new_manifest,
    read_manifest,
    read_var,
    write_array,
    write_manifest,
)
from psjob.foundation.tables import shard_of

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(path):
    """A helper module loaded by path (tests have no packages)."""
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


s3server = _load(os.path.join(HERE, "s3server.py"))
faultkit = _load(os.path.join(HERE, "faultkit.py"))
# The in-memory distributed jobs of the unit tier (real pserver programs, in-memory wire).
dist = _load(os.path.join(os.path.dirname(HERE), "unit", "test_checkpoint_distributed.py"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = s3server.S3Server(tmp_path_factory.mktemp("moto") / "moto.log")
    yield srv
    srv.stop()


@pytest.fixture
def root(server, monkeypatch):
    """A checkpoint root in a fresh bucket, with the AWS_* environment pointing at the server."""
    server.use(monkeypatch)
    return f"s3://{server.new_bucket()}/jobs/ctr"


def _save(root, step, arrays, complete=True):
    """What a save writes: the arrays first, the manifest last (or not at all: a crash)."""
    d = storage.join(root, store.step_dirname(step))
    entries = {}
    for name, arr in arrays.items():
        entries[name] = dict(write_array(storage.join(d, name), arr), file=name)
    if complete:
        write_manifest(d, new_manifest(entries, step=step, kind="checkpoint"))
    return d


def _objects(uri):
    return storage.for_path(uri).sizes(uri)


def _psjob(*args, env):
    return subprocess.run([sys.executable, "-m", "psjob.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_a_large_array_streams_as_a_multipart_upload_and_reads_back_verified(root, monkeypatch):
    monkeypatch.setattr(s3, "PART_BYTES", 5 << 20)  # S3's smallest part: 3 parts for 12 MB
    arr = np.random.default_rng(0).normal(size=(3000, 1000)).astype("float32")
    d = _save(root, 1, {"w": arr})
    etag = s3.storage().client.request("HEAD", storage.join(d, "w"))[1]["ETag"]
    assert etag.strip('"').endswith("-3")  # a multipart object's ETag counts its parts
    entry = read_manifest(d)["vars"]["w"]
    np.testing.assert_array_equal(read_var(d, "w", entry), arr)
    assert store.verify(d) == [] and store.newest_good(root).path == d


def test_a_write_that_fails_midway_leaves_no_object_and_no_pending_upload(root, monkeypatch):
    monkeypatch.setattr(s3, "PART_BYTES", 5 << 20)
    path = storage.join(root, "step-00000001", "w")
    with pytest.raises(RuntimeError, match="crash"):
        with storage.for_path(path).open_write(path) as f:
            f.write(b"x" * (11 << 20))  # two parts sent
            raise RuntimeError("crash")
    assert not storage.for_path(path).exists(path)
    bucket = s3client.parse(root)[0]
    uploads = s3.storage().client.request("GET", f"s3://{bucket}", {"uploads": ""})[2]
    assert b"<UploadId>" not in uploads  # aborted: no parts left behind


def test_a_checkpoint_without_its_manifest_is_skipped_and_restores_fall_back_to_the_previous_one(root):
    _save(root, 2, {"w": np.full(4, 2.0, "float32")})
    _save(root, 4, {"w": np.full(4, 4.0, "float32")}, complete=False)  # crashed before the manifest
    statuses = {c.step: c.status for c in store.scan(root)}
    assert statuses == {2: store.OK, 4: store.INCOMPLETE}
    assert [c.step for c in store.candidates(root)] == [2]


def test_a_corrupt_array_fails_its_sha256_and_loading_falls_back_marking_it_corrupt(root, server):
    good = _save(root, 2, {"w": np.full(64, 2.0, "float32")})
    bad = _save(root, 4, {"w": np.full(64, 4.0, "float32")})
    target = storage.join(bad, "w")
    data = bytearray(storage.for_path(target).read_bytes(target))
    data[-1] ^= 0xFF  # same size: only the checksum can tell
    storage.for_path(target).write_bytes(target, bytes(data))
    assert store.newest_good(root).path == bad  # a size check cannot see it ...
    problems = store.verify(bad)
    assert len(problems) == 1 and "checksum mismatch" in problems[0] and target in problems[0]  # ... sha256 can
    env = dict(os.environ)
    verify = _psjob("checkpoint", "verify", root, env=env)
    assert verify.returncode == 1 and "FAILED  " + bad in verify.stdout and "1 of 2" in verify.stdout
    # a loader that reads it refuses it; marked, every later reader skips it
    with pytest.raises(CorruptFileError):
        read_var(bad, "w", read_manifest(bad)["vars"]["w"])
    store.mark_corrupt(bad, problems[0])
    assert CORRUPT_MARKER in _objects(bad)
    assert store.newest_good(root).path == good and store.inspect_dir(bad).status == store.DAMAGED


def test_retention_deletes_old_checkpoints_whole_and_keeps_the_newest(root):
    for step in (1, 2, 3, 4):
        _save(root, step, {"w": np.full(8, step, "float32"), "b": np.zeros(2, "float32")})
    _save(root, 5, {"w": np.zeros(8, "float32")}, complete=False)  # newer than the newest: a save in progress
    removed = store.apply_retention(root, 2)
    assert sorted(storage.basename(p) for p in removed) == ["step-00000001", "step-00000002"]
    assert sorted(storage.for_path(root).list_dirs(root)) == ["step-00000003", "step-00000004", "step-00000005"]
    assert _objects(storage.join(root, "step-00000001")) == {}
    assert [c.step for c in store.candidates(root)] == [4, 3]


def test_the_cli_lists_inspects_and_verifies_an_s3_uri(root):
    _save(root, 3, {"fc_0.w_0": np.ones((4, 3), "float32")})
    _save(root, 6, {"fc_0.w_0": np.full((4, 3), 2.0, "float32")})
    env = dict(os.environ)
    listed = _psjob("checkpoint", "list", root, env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[1].split()[:2] == ["3", "ok"] and lines[2].split()[:3] == ["*", "6", "ok"]
    assert lines[2].endswith(f"{root}/step-00000006")
    inspected = _psjob("checkpoint", "inspect", root, "--step", "3", env=env)
    assert inspected.returncode == 0 and f"checkpoint {root}/step-00000003" in inspected.stdout
    assert "fc_0.w_0" in inspected.stdout and "[4, 3]" in inspected.stdout
    verified = _psjob("checkpoint", "verify", root, env=env)
    assert verified.returncode == 0 and "2 of 2 checkpoint(s) verified" in verified.stdout


@pytest.mark.parametrize("uri, message", [
    ("gs://bucket/x", "unsupported scheme 'gs'"),
    ("s3:///x", "names no bucket"),
    ("s3://Bad_Bucket/x", "not a valid bucket name"),
])
def test_a_bad_uri_is_refused_naming_the_problem(uri, message, root):
    done = _psjob("checkpoint", "list", uri, env=dict(os.environ))
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_missing_credentials_and_a_missing_bucket_are_named(root):
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    done = _psjob("checkpoint", "list", root, env=env)
    assert done.returncode == 2 and "no S3 credentials" in done.stderr and "AWS_ACCESS_KEY_ID" in done.stderr
    done = _psjob("checkpoint", "verify", "s3://no-such-bucket-psjob/x", env=dict(os.environ))
    assert done.returncode == 2 and "bucket 'no-such-bucket-psjob' does not exist" in done.stderr, done.stderr
    env = dict(os.environ, AWS_ENDPOINT_URL="ftp://127.0.0.1:1")
    done = _psjob("checkpoint", "list", root, env=env)
    assert done.returncode == 2 and "is not an http:// or https:// URL" in done.stderr


def test_an_empty_prefix_is_not_a_directory(root):
    done = _psjob("checkpoint", "list", root + "/nothing-here", env=dict(os.environ))
    assert done.returncode == 2 and "nothing is stored under that prefix" in done.stderr


@pytest.mark.parametrize("filename", [None, "params"])
def test_single_machine_save_and_load_persistables_round_trip_through_s3(root, filename):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x, y = fluid.layers.data(name="x", shape=[4]), fluid.layers.data(name="y", shape=[1])
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        fluid.optimizer.Adam(0.1).minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": np.ones((2, 4), "float32"), "y": np.zeros((2, 1), "float32")}, fetch_list=[loss],
            scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, root, main, filename=filename)  # filename: one .npz object
    fresh = fluid.Scope()
    exe.run(startup, scope=fresh)
    with fluid.scope_guard(fresh):
        fluid.io.load_persistables(exe, root, main, filename=filename)
    names = read_manifest(root)["vars"]
    assert {"fc_0.w_0", "fc_0.w_0_moment1_0"} <= set(names)
    for name in names:
        np.testing.assert_array_equal(fresh.vars[name], scope.vars[name], err_msg=name)


# -- distributed saves: sliced dense variables and a sparse table, through the pservers ----------

@pytest.mark.parametrize("pservers", [3, 1])
def test_a_two_pserver_save_to_s3_loads_into_another_number_of_pservers_and_saves_back_identically(
        root, pservers):
    a, b = storage.join(root, "a"), storage.join(root, "b")
    dist.Job(2).train(0, 3, a)
    assert any(rel.startswith("__tables__/emb.shard-1-of-2.") for rel in _objects(a))  # pservers wrote shards
    dist.Job(pservers, load_dir=a).train(3, 0, b)
    saved_a, saved_b = dist.saved(a), dist.saved(b)
    assert saved_a.keys() == saved_b.keys() and {"emb", "fc_0.w_0", "fc_0.w_0_moment1_0"} <= saved_a.keys()
    for name in saved_a:
        np.testing.assert_array_equal(saved_a[name], saved_b[name], err_msg=name)
    assert store.verify(b) == []


def test_psjob_export_reads_s3_and_checkpoint_import_writes_s3_for_another_pserver_count(root, tmp_path):
    a, b, c = (storage.join(root, n) for n in ("a", "b", "c"))
    dist.Job(2).train(0, 3, a)
    out = str(tmp_path / "export")
    env = dict(os.environ)
    done = _psjob("export", a, out, "--format", "parquet", "--with-optimizer-state", env=env)
    assert done.returncode == 0 and "table emb:" in done.stdout, done.stderr
    assert json.loads((tmp_path / "export" / "manifest.json").read_text())["source"]["checkpoint"] == a
    done = _psjob("checkpoint", "import", out, b, "--pservers", "3", env=env)
    assert done.returncode == 0 and "in 3 shard(s)" in done.stdout, done.stderr
    assert store.verify(b) == [] and "__manifest__.json" in _objects(b)
    dist.Job(3, load_dir=b).train(3, 0, c)  # 3 pservers load the import and trainer 0 saves what they hold
    saved_a, saved_c = dist.saved(a), dist.saved(c)
    assert saved_a.keys() == saved_c.keys() and "emb" in saved_a
    for name in saved_a:
        np.testing.assert_array_equal(saved_a[name], saved_c[name], err_msg=name)
    done = _psjob("checkpoint", "import", out, b, env=env)  # the prefix holds a checkpoint now
    assert done.returncode == 1 and "already holds objects" in done.stderr


def test_a_pserver_restores_from_s3_falling_back_past_a_corrupt_table_shard(root, capsys):
    step2, step4 = storage.join(root, store.step_dirname(2)), storage.join(root, store.step_dirname(4))
    job = dist.Job(2).train(0, 2, step2)
    dist.Job(2, load_dir=step2).train(2, 2, step4)
    shard = storage.join(step4, "__tables__", "emb.shard-1-of-2.values")
    data = bytearray(storage.for_path(shard).read_bytes(shard))
    data[-3] ^= 0x55
    storage.for_path(shard).write_bytes(shard, bytes(data))
    main, startup = job.pserver_programs[dist.EPS[1]]
    state = PserverState(main, scope=fluid.Scope(), executor=fluid.Executor())
    state.run_startup(startup)
    info = state.restore_from_checkpoints(root)
    out = capsys.readouterr().out
    assert info.step == 2 and f"checkpoint {step4} is unusable" in out and "checksum mismatch" in out
    assert CORRUPT_MARKER in _objects(step4)
    want = dist.saved(step2)["emb"]
    mine = shard_of(np.arange(dist.VOCAB), 2) == 1
    np.testing.assert_array_equal(dist.live_table(state.scope.vars["emb"])[mine], want[mine])


# -- a whole job: psjob launch checkpointing to the bucket, a pserver killed and restored ------

def test_a_launched_job_checkpoints_to_s3_and_a_killed_pserver_restores_from_the_bucket(root, tmp_path):
    steps, interval = 40, 5
    job = faultkit.Job(tmp_path, ["--server_num", "2", "--worker_num", "2", "--checkpoint-uri", root,
                                  "--pserver_restarts", "1"],
                       [faultkit.CKPT_SCRIPT, "--out", str(tmp_path), "--steps", str(steps),
                        "--interval_steps", str(interval), "--sleep_ms", "20"])
    try:
        assert faultkit.wait_until(lambda: faultkit.newest_step(root) >= 10 and job.pid("pserver.0"), 60, job,
                                   "a checkpoint of step 10 in the bucket"), job.text + job.logs()
        os.kill(job.pid("pserver.0"), signal.SIGKILL)
        assert job.wait(90) == 0, job.text + job.logs()
    finally:
        job.kill()
    assert job.starts("pserver.0") == 2, job.text
    server_log = (tmp_path / "log" / "serverlog.0").read_text()
    assert "restored step" in server_log and f"from {root}/step-" in server_log, server_log
    trainer = json.loads((tmp_path / "trainer0.json").read_text())
    assert len(trainer["losses"]) == steps and trainer["failures"] == []
    assert all(p.startswith(root + "/step-") for p in trainer["saved"])
    # retention kept the newest three; every one is whole, and the CLI agrees
    assert [c.step for c in store.candidates(root)] == [steps, steps - interval, steps - 2 * interval]
    faultkit.assert_checkpoints_sound(root)


def test_psjob_run_takes_the_uri_from_the_job_yaml_and_checkpoints_only_to_the_bucket(root, tmp_path):
    run_job = _load(os.path.join(HERE, "test_run_job.py"))
    job = run_job.write_job(tmp_path, spec={"checkpoint": {"uri": root, "intervalSteps": 5,
                                                           "credentialsSecret": "ckpt-s3"}})
    status, out = run_job.finish(run_job.start_run(job, tmp_path))
    assert status == 0, out
    assert f"checkpoints go to {root} (spec.checkpoint.credentialsSecret is a cluster Secret: ignored" in out
    newest = store.newest_good(root)
    assert newest is not None and newest.path.startswith(root + "/step-"), store.scan(root)
    assert store.verify(newest.path) == [] and newest.manifest["tables"]  # the sparse table's shards too
    assert not (tmp_path / "work" / "checkpoints").exists()


def test_a_job_whose_store_has_no_credentials_fails_at_start_up_saying_so(root, tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    job = faultkit.Job(tmp_path, ["--server_num", "1", "--worker_num", "1", "--checkpoint-uri", root],
                       [faultkit.CKPT_SCRIPT, "--out", str(tmp_path), "--steps", "5", "--interval_steps", "2"])
    try:
        assert job.wait(60) != 0
    finally:
        job.kill()
    server_log = (tmp_path / "log" / "serverlog.0").read_text()
    assert "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in server_log, server_log


def test_without_keys_a_web_identity_token_assumes_the_role_as_irsa_gives_pods(root, tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    token = tmp_path / "token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbTpwc2pvYiJ9.c2ln\n")
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/psjob-checkpoints")
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token))
    d = _save(root, 1, {"w": np.arange(5, dtype="float32")})  # STS at AWS_ENDPOINT_URL: moto
    keys = s3.storage().client.keys(d)
    assert keys.access_key.startswith("ASIA") and keys.session_token and keys.expires > 0
    assert store.verify(d) == []
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "missing"))
    done = _psjob("checkpoint", "list", root, env=dict(os.environ))
    assert done.returncode == 2 and "cannot read the web identity token" in done.stderr, done.stderr
