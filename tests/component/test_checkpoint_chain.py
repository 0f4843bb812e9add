"""Incremental (delta) checkpoints of real jobs: `psjob launch` with pserver and trainer processes.

A job checkpoints a chain (a base, then deltas); a job started on the root restores
the chain's newest link — on 3 pservers where 2 wrote it — and holds exactly what the
first job held at its last checkpoint; a job killed inside a delta's write leaves
the previous link as the newest, and the next job restores that; a chain in an S3
bucket (moto's server process) restores, falls back past a corrupt link and compacts.
"""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint import cli, storage, store

HERE = os.path.dirname(os.path.abspath(__file__))
def _load(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


faultkit = _load(os.path.join(HERE, "faultkit.py"))
roundtrip = _load(os.path.join(HERE, "test_checkpoint_roundtrip.py"))
s3server = _load(os.path.join(HERE, "s3server.py"))
chain_unit = _load(os.path.join(os.path.dirname(HERE), "unit", "test_checkpoint_chain.py"))
dist = chain_unit.dist
INCREMENTAL = ["--checkpoint_incremental", "--checkpoint_base_every", "10"]


def _rows_equal_on(saved_a, saved_b, ids):
    np.testing.assert_array_equal(saved_a["emb"][ids], saved_b["emb"][ids])
    for name in saved_a:
        if name != "emb":
            np.testing.assert_array_equal(saved_a[name], saved_b[name], err_msg=name)


def test_a_job_restores_the_chain_on_three_pservers_exactly_as_the_two_that_wrote_it_held_it(tmp_path, script):
    train, root = script("checkpoint_train.py"), tmp_path / "ckpt"
    first = roundtrip._start(train, tmp_path / "first", ["--server_num", "2", "--worker_num", "2",
                                                         "--checkpoint_dir", str(root), *INCREMENTAL],
                             ["--steps", "8", "--interval_steps", "2", "--final", str(tmp_path / "final")])
    roundtrip._finish(first, tmp_path / "first")
    infos = store.candidates(str(root))
    assert [(c.step, c.kind) for c in infos] == [(8, "delta"), (6, "delta"), (4, "delta"), (2, "base")]
    rows = [sum(s["rows"] for s in c.manifest["tables"]["emb"]["shards"]) for c in infos]
    had = roundtrip._table_ids(tmp_path / "final", "emb")
    # A delta holds the rows of its two steps' batches, not the whole table (the base holds
    # every row there was at step 2, which need not be more than a later delta's).
    assert all(0 < n < len(had) for n in rows[:-1]), (rows, len(had))

    # 3 pservers restore base + 3 deltas; trainer 0 saves what they hold before training on
    resumed = roundtrip._start(train, tmp_path / "resumed", ["--server_num", "3", "--worker_num", "2",
                                                             "--checkpoint_dir", str(root), *INCREMENTAL],
                               ["--steps", "8", "--interval_steps", "2", "--save_at_start", str(tmp_path / "reloaded")])
    logs = roundtrip._finish(resumed, tmp_path / "resumed")
    assert logs.count("restored step 8 from") == 3, logs
    final, reloaded = roundtrip._saved(tmp_path / "final"), roundtrip._saved(tmp_path / "reloaded")
    assert set(had) <= set(roundtrip._table_ids(tmp_path / "reloaded", "emb"))
    _rows_equal_on(final, reloaded, had)

    # compact folds the chain into a base holding the same model
    out = tmp_path / "compacted"
    done = subprocess.run([sys.executable, "-m", "psjob.cli", "checkpoint", "compact", str(root), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "compacted 4 link(s)" in done.stdout, done.stderr
    compacted = roundtrip._saved(out)
    assert sorted(roundtrip._table_ids(out, "emb")) == sorted(had)
    _rows_equal_on(final, compacted, had)
    assert cli.main(["verify", str(root)]) == 0


def test_a_job_killed_inside_a_delta_leaves_the_previous_link_and_the_next_job_restores_it(tmp_path, script):
    train, root = script("checkpoint_train.py"), tmp_path / "ckpt"
    job = faultkit.Job(tmp_path / "first", ["--server_num", "2", "--worker_num", "2", "--checkpoint_dir", str(root),
                                            *INCREMENTAL],
                       [train, "--out", str(tmp_path / "first"), "--steps", "8", "--interval_steps", "2",
                        "--pause_in_save", "6"], env={"PSJOB_SAVE_ROOTS": str(tmp_path)})
    log = tmp_path / "first" / "log" / "workerlog.0"
    try:
        assert faultkit.wait_until(lambda: log.exists() and "pausing inside the checkpoint of step 6" in log.read_text(),
                                   90, job, "trainer 0 inside the delta of step 6"), job.text + job.logs()
        step6 = root / store.step_dirname(6)
        assert any(n.startswith("emb.shard-") for n in os.listdir(step6 / "__tables__"))  # the shards are written
        os.kill(job.pid("trainer.0"), signal.SIGKILL)
        assert job.wait(60) != 0
    finally:
        job.kill()
    status = {c.step: c.status for c in store.scan(str(root))}
    assert status == {2: "ok", 4: "ok", 6: "incomplete"}
    assert store.newest_good(str(root)).kind == "delta"
    expected = tmp_path / "expected"
    chains.compact(str(root / store.step_dirname(4)), str(expected))  # what the chain up to step 4 holds

    resumed = roundtrip._start(train, tmp_path / "resumed", ["--server_num", "2", "--worker_num", "2",
                                                             "--checkpoint_dir", str(root), *INCREMENTAL],
                               ["--steps", "4", "--save_at_start", str(tmp_path / "reloaded")])
    logs = roundtrip._finish(resumed, tmp_path / "resumed")
    assert logs.count("restored step 4 from") == 2, logs
    want, got = roundtrip._saved(expected), roundtrip._saved(tmp_path / "reloaded")
    had = roundtrip._table_ids(expected, "emb")
    _rows_equal_on(want, got, had)


# -- a chain in an S3 bucket ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = s3server.S3Server(tmp_path_factory.mktemp("moto") / "moto.log")
    yield srv
    srv.stop()


@pytest.fixture
def root(server, monkeypatch):
    server.use(monkeypatch)
    return f"s3://{server.new_bucket()}/jobs/ctr"


def test_a_chain_in_s3_restores_resharded_falls_back_past_a_corrupt_link_and_compacts(root, tmp_path, capsys):
    job = dist.Job(2)
    chain_unit.train_with_checkpoints(job, root, 0, 6, {2, 4, 6}, whole=tmp_path / "whole")
    assert [(c.step, c.kind) for c in store.candidates(root)] == [(6, "delta"), (4, "delta"), (2, "base")]
    whole = dist.saved(str(tmp_path / "whole"))
    np.testing.assert_array_equal(chain_unit.restored(root, 3)[1], whole["emb"])

    out = storage.join(root, "compacted")
    assert cli.main(["compact", root, out]) == 0
    np.testing.assert_array_equal(dist.saved(out)["emb"], whole["emb"])
    assert store.verify(out) == []

    step4 = storage.join(root, store.step_dirname(4))
    shard = storage.join(step4, "__tables__", "emb.shard-0-of-2.values")
    data = bytearray(storage.for_path(shard).read_bytes(shard))
    data[-3] ^= 0x55
    storage.for_path(shard).write_bytes(shard, bytes(data))
    base = dist.saved(storage.join(root, store.step_dirname(2)))
    np.testing.assert_array_equal(chain_unit.restored(root, 3)[1], base["emb"])
    assert "checksum mismatch" in capsys.readouterr().out
    assert [c.step for c in store.candidates(root)] == [2]  # 4 marked corrupt, 6 is on it
    assert "its parent" in {c.step: c.reason for c in store.scan(root)}[6]


def test_a_launched_incremental_job_in_s3_survives_a_killed_pserver_restoring_its_chain(root, tmp_path):
    steps, interval = 40, 5
    job = faultkit.Job(tmp_path, ["--server_num", "2", "--worker_num", "2", "--checkpoint-uri", root,
                                  "--pserver_restarts", "1", *INCREMENTAL],
                       [faultkit.CKPT_SCRIPT, "--out", str(tmp_path), "--steps", str(steps),
                        "--interval_steps", str(interval), "--sleep_ms", "20"])
    try:
        assert faultkit.wait_until(lambda: faultkit.newest_step(root) >= 15 and job.pid("pserver.0"), 60, job,
                                   "a delta of step 15 in the bucket"), job.text + job.logs()
        os.kill(job.pid("pserver.0"), signal.SIGKILL)
        assert job.wait(90) == 0, job.text + job.logs()
    finally:
        job.kill()
    assert job.starts("pserver.0") == 2, job.text
    server_log = (tmp_path / "log" / "serverlog.0").read_text()
    assert "restored step" in server_log and f"from {root}/step-" in server_log, server_log
    trainer = json.loads((tmp_path / "trainer0.json").read_text())
    assert len(trainer["losses"]) == steps and trainer["failures"] == []
    infos = store.candidates(root)
    assert infos[0].step == steps and infos[0].kind == "delta"  # the chain went on after the restart
    assert store.verify(infos[0].path) == [] and cli.main(["verify", root]) == 0
    # everything the newest link needs is still there (retention keeps whole chains)
    assert all(store.inspect_dir(p).ok for p in infos[0].links)
