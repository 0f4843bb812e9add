"""PaddleRec's rank models autoint ... dlrm (tests/thirdparty/paddlerec/models/rank, unmodified) trained
by PaddleRec's own tools/static_trainer.py under `psjob as-paddle`, then read back by
tools/static_infer.py; where pinned, their costs equal Paddle 3.0.0's from the same parameters.

Every run is in a copy under tmp_path (PaddleRec's layout: DIR/tools, DIR/models/rank/<name>) whose
sample data file is cut to a few batches, so a run takes seconds (the models' 1,000,001-row tables
stay as configured: the sample ids are hashed over that range). autofis, bert4rec, dcn_v2 and
deeprec have dygraph code only (no static_model.py) and are out of static_trainer's reach.
"""
from __future__ import annotations

import math
import os
import pickle
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from thirdparty_code import require  # noqa: E402

pytest.importorskip("yaml", reason="PaddleRec's trainers need pyyaml (the test extras)")
pytest.importorskip("six", reason="PaddleRec's trainers need six (the test extras)")

PADDLEREC = require("paddlerec")
# static_trainer prints "epoch: E, batch_id: B, cost: C, auc: ..." (dien: auc before cost)
COST = re.compile(r"epoch: (\d+), batch_id: (\d+),.*? cost: ([-0-9.e]+|nan|inf)")
EPOCH_DONE = re.compile(r"epoch: (\d+) done")


@dataclass(frozen=True)
class Model:
    data: str  # the sample data file its config reads
    lines: int | None  # the first lines kept (None: all)
    save: str  # runner.model_save_path of its config.yaml
    overrides: tuple = ()


MODELS = {
    # its config says use_gpu: True
    "autoint": Model("data/sample_data/train/sample_train.txt", 8, "output_model_autoint", ("runner.use_gpu=False",)),
    "bst": Model("data/train_data/paddle_train.txt", 5, "output_model_bst"),  # one batch: ~5 s a step
    "dcn": Model("data/sample_data/sample_train.txt", 32, "output_model_deepCross"),
    "deepfefm": Model("data/sample_data/train/sample_train.txt", 32, "output_model_deepfefm"),
    "deepfm": Model("data/sample_data/train/sample_train.txt", 8, "output_model_deepfm"),
    "dien": Model("data/train_data/sample_data.txt", None, "output_model_dien"),
    "difm": Model("data/sample_data/train/sample_train.txt", 16, "output_model_difm"),
    "din": Model("data/train_data/sample_data.txt", None, "output_model_din"),
    "dlrm": Model("data/sample_data/train/sample_train.txt", 8, "output_model_dlrm"),
}

# What psjob prints for the models it cannot run yet (the last line of the trainer's error).
BLOCKED: dict[str, str] = {}

INIT_SEED = 2024
# Paddle 3.0.0's costs at batches 0, 1, ... of `static_trainer.py -m config.yaml -o runner.epochs=1
# runner.print_interval=1 runner.model_init_path=INIT` (the same cut data and overrides, one math
# thread as this suite runs), INIT being _write_init's file: every parameter of the model, in
# sorted-name order, numpy.random.RandomState(2024).uniform(-0.02, 0.02, shape) as float32, pickled
# as Paddle's paddle.static.save writes a .pdparams (optimizer state starts from the startup
# program, as in psjob). Made by running that command under Paddle 3.0.0. These six models have no
# dropout and read in file order; bst and deepfefm have dropout (random by design: they only run).
PADDLE_COSTS = {
    "autoint": [0.7829424, 0.82257354, 0.60915315, 0.74001837],
    "dcn": [0.69605076, 0.6978545, 0.6988353, 0.6975147],
    "deepfm": [0.6844257, 0.6780417, 0.6516733, 0.70618546],
    "difm": [0.7012115, 0.70474154, 0.6922796, 0.7025545],
    # dien: batch 0 only. Its reader draws negative samples from Python's global random while
    # Paddle's DataLoader runs it in a thread: Paddle's own runs differ from batch 1 on (and in 2
    # of 7 runs at batch 0 too); this is a run whose first batch was psjob's, array for array.
    "dien": [-0.69274676],
    "din": [0.6947855, 0.8180406, 0.82270706],  # 100 lines: three batches of 32
    "dlrm": [0.69316757, 0.7986382, 0.7188083, 0.63500535],
}


# Paddle's static nn.GRU keeps its cells' parameters as views into one flat weight (its cudnn
# layout: every layer's w_ih, w_hh, then every layer's b_ih, b_hh), so Paddle's own saves hold
# the cells' values in it too, and on loading the flat weight's values are the ones it uses.
# _write_init keeps that true of its file (dien's two-layer GRU: gru_0 over gru_cell_0 and 1).
FLAT_GRU = {"gru_0.w_0": ("gru_cell_0", "gru_cell_1")}


def _flat_gru_weight(state, cells):
    parts = [state[f"{c}.w_{i}"] for c in cells for i in (0, 1)] + [state[f"{c}.b_{i}"] for c in cells for i in (0, 1)]
    return np.concatenate([p.reshape(-1) for p in parts])


def _model_dir(tmp_path, name):
    root = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(PADDLEREC, "tools"), root / "tools")
    model_dir = root / "models" / "rank" / name
    shutil.copytree(os.path.join(PADDLEREC, "models", "rank", name), model_dir)
    spec = MODELS[name]
    if spec.lines is not None:
        data = model_dir / spec.data
        data.write_text("".join(data.read_text().splitlines(keepends=True)[:spec.lines]))
    return model_dir


def _run(model_dir, script, overrides, timeout=180):
    cmd = [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-u",
           os.path.join("..", "..", "..", "tools", script), "-m", "config.yaml", "-o", *overrides]
    r = subprocess.run(cmd, cwd=model_dir, capture_output=True, text=True, timeout=timeout)
    return r, r.stdout + r.stderr


def _write_init(saved_prefix, init_dir):
    """A Paddle-format .pdparams with the names and shapes of psjob's own save."""
    from psjob.fluid.paddle_pickle import read_arrays
    shapes = {n: a.shape for n, a in read_arrays(str(saved_prefix) + ".pdparams").items()}
    rs = np.random.RandomState(INIT_SEED)
    state = {n: rs.uniform(-0.02, 0.02, shapes[n]).astype(np.float32) for n in sorted(shapes)}
    for flat, cells in FLAT_GRU.items():
        if flat in state:
            state[flat] = _flat_gru_weight(state, cells)
    init_dir.mkdir()
    with open(init_dir / "rec_static.pdparams", "wb") as f:
        pickle.dump(state, f, protocol=4)


def _train(model_dir, name, overrides=()):
    """One epoch of static_trainer, every batch's cost printed; [(batch, cost)]."""
    spec = MODELS[name]
    r, log = _run(model_dir, "static_trainer.py", ["runner.epochs=1", "runner.print_interval=1",
                                                   *spec.overrides, *overrides])
    if name in BLOCKED:
        # still stopped where BLOCKED says (a model that runs, or stops elsewhere, fails here)
        assert r.returncode != 0 and BLOCKED[name] in log, log[-3000:]
        pytest.xfail(BLOCKED[name])
    assert r.returncode == 0, log[-3000:]
    assert EPOCH_DONE.findall(log) == ["0"], log[-3000:]
    costs = [(int(b), float(c)) for e, b, c in COST.findall(log)]
    assert costs and all(math.isfinite(c) for _, c in costs), log[-3000:]
    assert (model_dir / spec.save / "0" / "rec_static.pdparams").is_file(), sorted(os.listdir(model_dir))
    return costs


@pytest.mark.parametrize("name", sorted(MODELS))
def test_static_trainer_then_static_infer(tmp_path, name):
    """Train one epoch; where pinned, train again from _write_init's parameters and compare the
    costs with Paddle's; then static_infer reads the last save back."""
    model_dir = _model_dir(tmp_path, name)
    _train(model_dir, name)
    want = PADDLE_COSTS.get(name)
    if want is not None:
        _write_init(model_dir / MODELS[name].save / "0" / "rec_static", tmp_path / "init")
        got = _train(model_dir, name, [f"runner.model_init_path={tmp_path / 'init'}"])[:len(want)]
        assert [b for b, _ in got] == list(range(len(want))), got
        # float32 rounding: the same ops in another summation order, through a few optimizer steps
        np.testing.assert_allclose([c for _, c in got], want, rtol=1e-4, atol=1e-7)
    r, log = _run(model_dir, "static_infer.py",
                  ["runner.infer_start_epoch=0", "runner.infer_end_epoch=1", *MODELS[name].overrides])
    assert r.returncode == 0, log[-3000:]
    assert EPOCH_DONE.findall(log) == ["0"], log[-3000:]
    assert "batch_id: 0," in log, log[-3000:]
