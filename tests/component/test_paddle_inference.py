"""PaddleRec's serving flow (its doc/inference.md) under `psjob as-paddle`: tools/static_trainer.py
with runner.use_inference=True saves wide_deep's inference model, then PaddleRec's own
tools/paddle_infer.py (tests/thirdparty/paddlerec, unmodified) reads it through paddle.inference
and prints each batch's first prediction; they equal what psjob's Executor computes from the saved
model for the same rows, and, trained from the same start file, the ones Paddle 3.0.0 prints."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from paddlereczoo import run_tool, write_paddle_init  # noqa: E402
from thirdparty_code import require  # noqa: E402

pytest.importorskip("yaml", reason="PaddleRec's trainers need pyyaml (the test extras)")
pytest.importorskip("six", reason="PaddleRec's trainers need six (the test extras)")

PADDLEREC = require("paddlerec")
DATA = "data/sample_data/train"
BATCH = 5
# paddle_infer.py prints [output[0]] per batch: the first row's prediction
PRINTED = re.compile(r"^\[array\(\[([-0-9.e]+)\], dtype=float32\)\]$", re.M)
# What Paddle 3.0.0's paddle_infer.py prints (the same command) after `static_trainer.py -m config.yaml
# -o runner.epochs=1 runner.use_inference=True runner.print_interval=1 runner.model_init_path=INIT`,
# INIT being paddlereczoo.write_paddle_init's file (the shapes of psjob's save, RandomState(2024)):
# one Adam step over the 80 sample lines' one batch of 50 (cost 0.6835723, as the rank_b test pins),
# then the 16 batches of 5. Made by running those two commands under Paddle 3.0.0.
PADDLE_PREDICTIONS = [0.4919345, 0.49348077, 0.49453384, 0.48940697, 0.49509144, 0.49448967, 0.49565965,
                      0.49424973, 0.49019572, 0.49489808, 0.49482942, 0.4858367, 0.48850173, 0.49404877,
                      0.4930648, 0.49190348]


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


def _paddle_infer(model_dir, prefix):
    """PaddleRec's tools/paddle_infer.py under `psjob as-paddle`: the printed predictions."""
    cmd = [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-u",
           os.path.join("..", "..", "..", "tools", "paddle_infer.py"),
           f"--model_file={prefix}.pdmodel", f"--params_file={prefix}.pdiparams", "--use_gpu=False",
           f"--data_dir={DATA}", "--reader_file=criteo_reader.py", f"--batchsize={BATCH}", "--benchmark", "False"]
    r = subprocess.run(cmd, cwd=model_dir, capture_output=True, text=True, timeout=150)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    printed = np.array([float(v) for v in PRINTED.findall(r.stdout)], "float32")
    assert len(printed) == 80 // BATCH, out[-3000:]  # the sample file's 80 lines, drop_last batches
    return printed


def _train(model_dir, overrides=()):
    r, log = run_tool(model_dir, "static_trainer.py", ["runner.epochs=1", "runner.use_inference=True", *overrides])
    assert r.returncode == 0, log[-3000:]
    prefix = model_dir / "output_model_wide_deep" / "0" / "rec_inference"
    assert os.path.isfile(f"{prefix}.pdmodel") and os.path.isfile(f"{prefix}.pdiparams"), log[-3000:]
    return prefix


def test_static_trainer_use_inference_then_paddle_infer(tmp_path):
    """paddle_infer's predictions equal the Executor's from the same save; then, trained again from a
    start file in Paddle's format, they equal Paddle 3.0.0's (one test: the second run needs the
    first one's save for its parameter names)."""
    root = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(PADDLEREC, "tools"), root / "tools")
    model_dir = root / "models" / "rank" / "wide_deep"
    shutil.copytree(os.path.join(PADDLEREC, "models", "rank", "wide_deep"), model_dir)
    prefix = _train(model_dir)
    printed = _paddle_infer(model_dir, prefix)

    files = os.listdir(model_dir / DATA)
    assert len(files) == 1, files  # paddle_infer reads the folder in listdir order: one file keeps it plain
    rows = _criteo_rows(model_dir / DATA / files[0])
    feeds, want = _executor_predictions(prefix, rows)
    assert feeds == [str(i) for i in range(1, 27)] + ["dense_input"]  # the config's save_inference_feed_varnames
    assert len(rows) // BATCH == len(printed)
    # the same program, parameters and rows: float32 printed to its shortest exact repr
    np.testing.assert_allclose(printed, want, rtol=1e-6, atol=0)
    assert len(set(printed.tolist())) > 1  # predictions of a trained model, not one constant

    write_paddle_init(model_dir / "output_model_wide_deep" / "0" / "rec_static", tmp_path / "init")
    prefix = _train(model_dir, ["runner.print_interval=1", f"runner.model_init_path={tmp_path / 'init'}"])
    # float32 rounding: the same ops in another summation order, through one Adam step
    np.testing.assert_allclose(_paddle_infer(model_dir, prefix), PADDLE_PREDICTIONS, rtol=1e-5, atol=0)
