"""Checkpoints of real jobs: save, resume on another number of pservers, seed 004's recipe.

Every job is `psjob launch` with real pserver and trainer processes talking gRPC
on 127.0.0.x; nothing is faked.
"""
import json
import os
import subprocess
import sys

import numpy as np

import psjob.fluid as fluid
from psjob.foundation.checkpoint import cli, store
from psjob.foundation.checkpoint.format import read_array, read_manifest, read_var
from psjob.foundation.checkpoint.tables import assemble

PSJOB = [sys.executable, "-m", "psjob.cli", "launch"]


def _start(script, out, launch_args, script_args):
    os.makedirs(out, exist_ok=True)
    # The saves go to the test's directory, outside the pservers' working directory and
    # checkpoint root: a save root of their own (cluster/pserver/checkpoint_service.py).
    env = dict(os.environ, PSJOB_SAVE_ROOTS=str(out.parent))
    return subprocess.Popen(PSJOB + ["--log_dir", str(out / "log"), "--timeout", "150", *launch_args, script,
                                     "--out", str(out), *script_args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _finish(proc, out):
    text = proc.communicate(timeout=200)[0]
    logs = "".join(f"\n--- {n}\n{(out / 'log' / n).read_text()[-2500:]}" for n in sorted(os.listdir(out / "log")))
    assert proc.returncode == 0, text + logs
    return logs


def _saved(path):
    doc = read_manifest(str(path))
    values = {n: read_var(str(path), n, e) for n, e in doc["vars"].items()}
    for table, tdoc in doc.get("tables", {}).items():
        values[table] = assemble(str(path), table, tdoc)
    return values


def _table_ids(path, table):
    """The feature ids a checkpoint holds rows for (every shard's ids file)."""
    shards = read_manifest(str(path))["tables"][table]["shards"]
    return np.concatenate([read_array(os.path.join(str(path), s["files"]["ids"]["file"]), s["files"]["ids"])
                           for s in shards])


def test_a_sync_job_resumed_on_three_pservers_continues_exactly_like_an_uninterrupted_one(tmp_path, script):
    train = script("checkpoint_train.py")
    root = tmp_path / "ckpt"
    first = _start(train, tmp_path / "first", ["--server_num", "2", "--worker_num", "2", "--checkpoint_dir",
                                               str(root)], ["--steps", "6", "--interval_steps", "3"])
    straight = _start(train, tmp_path / "straight", ["--server_num", "2", "--worker_num", "2"],
                      ["--steps", "10", "--final", str(tmp_path / "straight" / "final"),
                       "--inference", str(tmp_path / "inference")])
    _finish(first, tmp_path / "first")
    assert [c.step for c in store.candidates(str(root))] == [6, 3]

    resumed = _start(train, tmp_path / "resumed", ["--server_num", "3", "--worker_num", "2", "--checkpoint_dir",
                                                   str(root)],
                     ["--steps", "10", "--interval_steps", "3", "--save_at_start", str(tmp_path / "reloaded"),
                      "--final", str(tmp_path / "resumed" / "final")])
    logs = _finish(resumed, tmp_path / "resumed")
    _finish(straight, tmp_path / "straight")
    assert logs.count("restored step 6 from") == 3, logs

    # What 3 pservers loaded from the 2-pserver checkpoint, saved again by trainer 0: identical,
    # parameters, Adam moments and beta pows, the LR counter and the table (assembled by id).
    saved6, reloaded = _saved(root / store.step_dirname(6)), _saved(tmp_path / "reloaded")
    assert saved6.keys() == reloaded.keys() and "emb" in saved6
    for name in saved6:
        if name != "emb":
            np.testing.assert_array_equal(reloaded[name], saved6[name], err_msg=name)
    # The table holds every saved row unchanged; the other trainer's first prefetch may already
    # have created more rows (fresh, from the per-id initializer) by the time trainer 0 saves.
    had = _table_ids(root / store.step_dirname(6), "emb")
    assert set(had) <= set(_table_ids(tmp_path / "reloaded", "emb"))
    np.testing.assert_array_equal(reloaded["emb"][had], saved6["emb"][had])
    assert read_manifest(str(root / store.step_dirname(6)))["position"] == {"step": 6, "epoch": 0, "offset": 96}

    # Training on from step 6 reproduces the uninterrupted run: the same losses, the same model.
    cont = json.loads((tmp_path / "resumed" / "trainer0.json").read_text())
    full = json.loads((tmp_path / "straight" / "trainer0.json").read_text())
    assert cont["start"] == 6 and cont["resumed_from"].endswith(store.step_dirname(6))
    np.testing.assert_allclose(cont["losses"], full["losses"][6:], rtol=1e-6)
    a, b = _saved(tmp_path / "resumed" / "final"), _saved(tmp_path / "straight" / "final")
    for name in b:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-6, atol=1e-7, err_msg=name)
    # The inference model of the uninterrupted job serves in one process, the table assembled.
    exe = fluid.Executor()
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model_distributed(str(tmp_path / "inference"), exe)
        scope = fluid.global_scope()
        for name in ("fc_0.w_0", "fc_1.w_0", "emb"):
            np.testing.assert_array_equal(scope.vars[name], b[name], err_msg=name)
        ids = np.arange(4, dtype="int64").reshape(4, 1)
        pred, = exe.run(program, feed={"ids": ids, "x": np.ones((4, 13), "float32")}, fetch_list=fetches)
    assert feeds == ["ids", "x"] and pred.shape == (4, 1) and np.isfinite(pred).all()
    # the resumed job checkpointed on; retention kept the newest three
    assert [c.step for c in store.candidates(str(root))] == [9, 6, 3]
    assert cli.main(["verify", str(root)]) == 0


def test_seed_004_incremental_training_trainer_0_saves_and_pservers_load_with_current_endpoint(tmp_path, script):
    inc, model = script("incremental_train.py"), tmp_path / "model"
    two = ["--server_num", "2", "--worker_num", "2"]
    _finish(_start(inc, tmp_path / "save", two, ["--phase", "save", "--path", str(model)]), tmp_path / "save")
    saved = _saved(model)
    assert {"fc_0.w_0", "fc_0.w_0_moment1_0", "fc_0.w_0_beta1_pow_acc_0", "learning_rate_0"} <= saved.keys()

    out = tmp_path / "load"
    _finish(_start(inc, out, two, ["--phase", "load", "--path", str(model)]), out)
    # each pserver loaded just its slices (fc_0.w_0 is cut in two at a row offset) ...
    loaded = [np.load(out / f) for f in sorted(os.listdir(out)) if f.startswith("pserver-")]
    assert len(loaded) == 2
    blocks = sorted((n, z[n]) for z in loaded for n in z.files if n.startswith("fc_0.w_0.block"))
    assert [n for n, _ in blocks] == ["fc_0.w_0.block0", "fc_0.w_0.block1"]
    np.testing.assert_array_equal(np.concatenate([b for _, b in blocks]), saved["fc_0.w_0"])
    moments = sorted((n, z[n]) for z in loaded for n in z.files if n.startswith("fc_0.w_0_moment1_0.block"))
    np.testing.assert_array_equal(np.concatenate([m for _, m in moments]), saved["fc_0.w_0_moment1_0"])
    for z in loaded:
        for n in z.files:
            if n.startswith("fc_0.w_0_beta1_pow_acc_0"):
                np.testing.assert_array_equal(z[n], saved["fc_0.w_0_beta1_pow_acc_0"])
    # ... and the trainers started from the saved model, fetched from the pservers
    start = np.load(out / "trainer0-start.npz")
    for name in start.files:
        np.testing.assert_array_equal(start[name], saved[name], err_msg=name)
