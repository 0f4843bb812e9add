"""What the PaddleRec zoo tests (tests/component/test_paddlerec_zoo_*.py) share: running one of
PaddleRec's tools on a model folder under `psjob as-paddle`, and writing a start file in Paddle's
own `paddle.static.save` format (a pickled {name: float32 array}) that both psjob and Paddle load
through `runner.model_init_path`."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np

# The seed of the start files the pinned Paddle costs were made from.
INIT_SEED = 2024


def run_tool(model_dir, script, overrides, timeout=150):
    """PaddleRec's tools/<script> -m config.yaml -o OVERRIDES, run from the model's folder."""
    cmd = [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-u",
           os.path.join("..", "..", "..", "tools", script), "-m", "config.yaml", "-o", *overrides]
    r = subprocess.run(cmd, cwd=model_dir, capture_output=True, text=True, timeout=timeout)
    return r, r.stdout + r.stderr


def write_paddle_init(saved_prefix, init_dir, seed=INIT_SEED):
    """A Paddle-format .pdparams with the names and shapes of psjob's own save: every parameter,
    in sorted-name order, RandomState(seed).uniform(-0.02, 0.02, shape) as float32."""
    with np.load(str(saved_prefix) + ".pdparams") as saved:
        shapes = {n: saved[n].shape for n in saved.files}
    rs = np.random.RandomState(seed)
    state = {n: rs.uniform(-0.02, 0.02, shapes[n]).astype(np.float32) for n in sorted(shapes)}
    init_dir.mkdir()
    with open(init_dir / "rec_static.pdparams", "wb") as f:
        pickle.dump(state, f, protocol=4)
