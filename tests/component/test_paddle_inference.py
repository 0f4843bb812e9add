"""PaddleRec's serving flow (its doc/inference.md) under `psjob as-paddle`: tools/static_trainer.py
with runner.use_inference=True saves wide_deep's inference model, then PaddleRec's own
tools/paddle_infer.py (tests/thirdparty/paddlerec, unmodified) reads it through paddle.inference
and prints each batch's first prediction; they equal what psjob's Executor computes from the saved
model for the same rows."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from paddlereczoo import run_tool  # noqa: E402

pytest.importorskip("yaml", reason="PaddleRec's trainers need pyyaml (the test extras)")
pytest.importorskip("six", reason="PaddleRec's trainers need six (the test extras)")

PADDLEREC = os.path.join(os.path.dirname(__file__), "..", "thirdparty", "paddlerec")
DATA = "data/sample_data/train"
BATCH = 5
# paddle_infer.py prints [output[0]] per batch: the first row's prediction
PRINTED = re.compile(r"^\[array\(\[([-0-9.e]+)\], dtype=float32\)\]$", re.M)


def _criteo_rows(path):
    """criteo_reader.RecDataset's inference samples: 26 sparse ids (one each), 13 dense values."""
    rows = []
    with open(path) as f:
        for line in f:
            slots: dict = {}
            for item in line.split():
                slot, value = item.split(":")
                slots.setdefault(slot, []).append(value)
            sparse = [np.array([int(v) for v in slots.get(str(i), ["0"])], "int64") for i in range(1, 27)]
            dense = np.array([float(v) for v in slots.get("dense_feature", ["0"] * 13)], "float32")
            rows.append(sparse + [dense])
    return rows


def _executor_predictions(prefix, rows):
    """Each full batch's first prediction, from psjob's own load_inference_model and Executor."""
    import psjob.static as static
    exe = static.Executor(static.CPUPlace())
    with static.scope_guard(static.Scope()):
        program, feeds, fetches = static.load_inference_model(str(prefix), exe)
        out = []
        for start in range(0, len(rows) - BATCH + 1, BATCH):
            batch = rows[start:start + BATCH]
            feed = {name: np.stack([r[i] for r in batch]) for i, name in enumerate(feeds)}
            out.append(exe.run(program, feed=feed, fetch_list=fetches)[0][0, 0])
    return feeds, np.array(out, "float32")


def test_static_trainer_use_inference_then_paddle_infer(tmp_path):
    root = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(PADDLEREC, "tools"), root / "tools")
    model_dir = root / "models" / "rank" / "wide_deep"
    shutil.copytree(os.path.join(PADDLEREC, "models", "rank", "wide_deep"), model_dir)
    r, log = run_tool(model_dir, "static_trainer.py", ["runner.epochs=1", "runner.use_inference=True"])
    assert r.returncode == 0, log[-3000:]
    prefix = model_dir / "output_model_wide_deep" / "0" / "rec_inference"
    assert os.path.isfile(f"{prefix}.pdmodel") and os.path.isfile(f"{prefix}.pdiparams"), log[-3000:]

    cmd = [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-u",
           os.path.join("..", "..", "..", "tools", "paddle_infer.py"),
           f"--model_file={prefix}.pdmodel", f"--params_file={prefix}.pdiparams", "--use_gpu=False",
           f"--data_dir={DATA}", "--reader_file=criteo_reader.py", f"--batchsize={BATCH}", "--benchmark", "False"]
    r = subprocess.run(cmd, cwd=model_dir, capture_output=True, text=True, timeout=150)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    printed = np.array([float(v) for v in PRINTED.findall(r.stdout)], "float32")

    files = os.listdir(model_dir / DATA)
    assert len(files) == 1, files  # paddle_infer reads the folder in listdir order: one file keeps it plain
    rows = _criteo_rows(model_dir / DATA / files[0])
    feeds, want = _executor_predictions(prefix, rows)
    assert feeds == [str(i) for i in range(1, 27)] + ["dense_input"]  # the config's save_inference_feed_varnames
    assert len(printed) == len(rows) // BATCH == 16, out[-3000:]
    # the same program, parameters and rows: float32 printed to its shortest exact repr
    np.testing.assert_allclose(printed, want, rtol=1e-6, atol=0)
    assert len(set(printed.tolist())) > 1  # predictions of a trained model, not one constant
