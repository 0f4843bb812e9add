"""`psjob export` and `psjob checkpoint import` around real jobs: a checkpoint of 2 pservers goes out
as Parquet, comes back split for 3, and 3 real pserver processes restore it row for row.

Every job is `psjob launch` with real pserver and trainer processes on 127.0.0.x; the
export and import run as the `psjob` command.
"""
import os
import subprocess
import sys

import numpy as np
import pyarrow.dataset as ds

from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import read_manifest, read_var
from psjob.foundation.checkpoint.tables import read_rows

PSJOB = [sys.executable, "-m", "psjob.cli"]


def _job(script, out, launch_args, script_args):
    os.makedirs(out, exist_ok=True)
    proc = subprocess.run(PSJOB + ["launch", "--log_dir", str(out / "log"), "--timeout", "150", *launch_args,
                                   script, "--out", str(out), *script_args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    logs = "".join(f"\n--- {n}\n{(out / 'log' / n).read_text()[-2500:]}" for n in sorted(os.listdir(out / "log")))
    assert proc.returncode == 0, proc.stdout + logs
    return logs


def _psjob(*args):
    proc = subprocess.run(PSJOB + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def _table(path):
    doc = read_manifest(str(path))
    rows = read_rows(str(path), "emb", doc["tables"]["emb"], 0, 1)  # every shard's rows, for one reader
    ids = np.concatenate([r.ids for r in rows])
    order = np.argsort(ids)
    cols = {"values": np.concatenate([r.values for r in rows])[order]}
    for group in ("state", "meta"):
        for name in getattr(rows[0], group):
            cols[f"{group}.{name}"] = np.concatenate([getattr(r, group)[name] for r in rows])[order]
    return ids[order], cols, doc


def test_a_2_pserver_checkpoint_exported_and_imported_for_3_pservers_restores_identical_rows(tmp_path, script):
    train, root = script("checkpoint_train.py"), tmp_path / "ckpt"
    _job(train, tmp_path / "first", ["--server_num", "2", "--worker_num", "1", "--checkpoint_dir", str(root)],
         ["--steps", "4", "--interval_steps", "4"])
    saved = root / store.step_dirname(4)
    assert [c.step for c in store.candidates(str(root))] == [4]

    export = tmp_path / "export"
    text = _psjob("export", str(root), str(export), "--format", "parquet", "--with-optimizer-state")
    assert "table emb:" in text and "opt_moment1" in text
    ids, cols, doc = _table(saved)
    assert {"state.moment1", "state.moment2", "state.beta1_pow_acc", "meta.last_seen"} <= set(cols)
    assert ds.dataset(str(export / "tables" / "emb"), format="parquet").count_rows() == len(ids) > 0

    root3 = tmp_path / "ckpt3"
    _psjob("checkpoint", "import", str(export), str(root3 / store.step_dirname(4)), "--pservers", "3")
    assert read_manifest(str(root3 / store.step_dirname(4)))["tables"]["emb"]["num_shards"] == 3

    # 3 pservers restore the imported checkpoint; trainer 0 saves what they hold before any step.
    reloaded = tmp_path / "reloaded"
    logs = _job(train, tmp_path / "second", ["--server_num", "3", "--worker_num", "1", "--checkpoint_dir",
                                             str(root3)],
                ["--steps", "4", "--interval_steps", "4", "--save_at_start", str(reloaded)])
    assert logs.count("restored step 4 from") == 3, logs
    ids2, cols2, doc2 = _table(reloaded)
    np.testing.assert_array_equal(ids2, ids)
    assert cols2.keys() == cols.keys()
    for name in cols:
        np.testing.assert_array_equal(cols2[name], cols[name], err_msg=name)
    # the dense parameters, Adam accumulators and LR counter came back through the export too
    assert doc2["vars"].keys() == doc["vars"].keys()
    for name, entry in doc["vars"].items():
        np.testing.assert_array_equal(read_var(str(reloaded), name, doc2["vars"][name]),
                                      read_var(str(saved), name, entry), err_msg=name)
