"""PaddleRec's multitask and content-understanding models (tests/thirdparty/paddlerec/models,
unmodified) trained by PaddleRec's own tools/static_trainer.py under `psjob as-paddle`, then
read back by tools/static_infer.py; where pinned, their first batches' costs equal Paddle
3.0.0's from the same initial parameters.

Every run is in a copy under tmp_path (PaddleRec's layout: DIR/tools, DIR/models/<group>/<name>)
with `-o runner.epochs=1` so it takes a few seconds. The multitask models with a static_model.py
are here; aitm, maml and metaheac have dygraph code only (no static_model.py) and are out of
static_trainer's reach under Paddle as well as psjob.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from paddlereczoo import run_tool, write_paddle_init  # noqa: E402
from thirdparty_code import require  # noqa: E402

pytest.importorskip("yaml", reason="PaddleRec's trainers need pyyaml (the test extras)")
pytest.importorskip("six", reason="PaddleRec's trainers need six (the test extras)")

PADDLEREC = require("paddlerec")
COST = re.compile(r"epoch: 0, batch_id: (\d+), cost: ([-0-9.e]+|nan|inf)")
EPOCH_DONE = re.compile(r"epoch: (\d+) done")

# The embedding tables are cut to 1000 rows (the sample data's ids stop at 966) so that a save
# is 1 MB rather than 100 MB; nothing else is overridden.
SMALL_TABLE = ["hyper_parameters.sparse_feature_number=1000"]

# name: (group, save dir from its config.yaml, extra overrides)
MODELS = {
    "dselect_k": ("multitask", "output_model_dselect_k", []),
    "escm2": ("multitask", "output_model_escm", SMALL_TABLE),
    "esmm": ("multitask", "output_model_esmm", SMALL_TABLE),
    "mmoe": ("multitask", "output_model_mmoe", []),
    "ple": ("multitask", "output_model_ple", []),
    "share_bottom": ("multitask", "output_model_share_btm", []),
    "tagspace": ("contentunderstanding", "output_model_tagspace", []),
    "textcnn": ("contentunderstanding", "output_model_textcnn", []),
}

# What psjob prints for the models it cannot run yet (the last line of the trainer's error):
# none at present.
BLOCKED: dict[str, str] = {}

# Paddle 3.0.0's costs at batches 0, 1, 2, ... (print_interval=1) of `static_trainer.py -m
# config.yaml -o runner.epochs=1 runner.print_interval=1 runner.model_init_path=INIT` (plus the
# model's overrides above), INIT being _write_init's file: every parameter, in sorted-name order,
# numpy.random.RandomState(2024).uniform(-0.02, 0.02, shape) as float32, pickled as Paddle's
# paddle.static.save writes a .pdparams. Made by running that command under Paddle 3.0.0 with
# the vendored static_trainer.py, which sets FLAGS_enable_pir_api=0 (Paddle's legacy executor),
# except where PIR says so.
PADDLE_COSTS = {
    "dselect_k": [4.6048393, 4.6048226, 4.605822, 4.604993],
    # PIR: esmm, escm2 and tagspace made with static_trainer.py's FLAGS_enable_pir_api line set
    # to '1' (Paddle's PIR executor). Under the legacy executor Paddle moves their sparse
    # embeddings differently (Adam: by 0.744*lr on the first step, as with the second step's
    # beta pows; the padding row too), so only the costs up to their first update agree
    # (docs/user/paddle2.md); psjob's costs equal the PIR executor's over these batches.
    "escm2": [1.5386081, 0.9869339, 0.9806576, 0.9796456, 0.97835195],
    "esmm": [1.5295603, 0.9819443, 0.9833507, 0.98133314, 0.9788995],
    "mmoe": [1.35881, 1.3362262, 1.3798835, 1.3606433, 1.2522162, 1.258082, 1.308472, 1.3048201],
    "ple": [1.3823043, 1.3664418, 1.3552349, 1.3572563, 1.2967271, 1.3273954, 1.3166476, 1.2703867],
    "share_bottom": [1.3568068, 1.2948457, 1.3833665, 1.3242247, 1.0612289, 1.0718014, 1.173211, 1.2030547],
    # PIR (as esmm above); the hinge loss is 0 but at batches 7, 45, 49, ...
    "tagspace": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.08281185] + [0.0] * 37 + [
        0.0013365417, 0.0, 0.0, 0.0, 0.25182852, 0.05160421, 0.0, 0.035903852, 0.07073562, 0.029653857, 0.0,
        0.0025702305, 0.0, 0.029308593, 0.020048719],
    "textcnn": [0.69948435, 0.69398314, 0.6884117, 0.69321305, 0.676348, 0.69340146, 0.7249259, 0.72549814],
}


def _model_dir(tmp_path, name):
    group = MODELS[name][0]
    root = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(PADDLEREC, "tools"), root / "tools")
    shutil.copytree(os.path.join(PADDLEREC, "models", group, name), root / "models" / group / name)
    return root / "models" / group / name


def _costs(log):
    return [(int(b), float(c)) for b, c in COST.findall(log)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_static_trainer_then_static_infer(tmp_path, name):
    model_dir = _model_dir(tmp_path, name)
    _, save_dir, extra = MODELS[name]
    r, log = run_tool(model_dir, "static_trainer.py", ["runner.epochs=1", *extra])
    if name in BLOCKED:
        # still stopped where BLOCKED says (a model that runs, or stops elsewhere, fails here)
        assert r.returncode != 0 and BLOCKED[name] in log, log[-3000:]
        pytest.xfail(BLOCKED[name])
    assert r.returncode == 0, log[-3000:]
    assert EPOCH_DONE.findall(log) == ["0"], log[-3000:]
    costs = _costs(log)
    assert costs and all(math.isfinite(c) for _, c in costs), log[-3000:]
    saved = model_dir / save_dir / "0" / "rec_static.pdparams"
    assert saved.is_file(), sorted(os.listdir(model_dir))

    r, log = run_tool(model_dir, "static_infer.py", ["runner.infer_start_epoch=0", "runner.infer_end_epoch=1", *extra])
    assert r.returncode == 0, log[-3000:]
    assert EPOCH_DONE.findall(log) == ["0"], log[-3000:]
    assert "batch_id: 0," in log, log[-3000:]


@pytest.mark.parametrize("name", sorted(PADDLE_COSTS))
def test_costs_equal_paddle_from_the_same_parameters(tmp_path, name):
    model_dir = _model_dir(tmp_path, name)
    _, save_dir, extra = MODELS[name]
    r, log = run_tool(model_dir, "static_trainer.py", ["runner.epochs=1", *extra])
    assert r.returncode == 0, log[-3000:]
    write_paddle_init(model_dir / save_dir / "0" / "rec_static", tmp_path / "init")

    r, log = run_tool(model_dir, "static_trainer.py", ["runner.epochs=1", "runner.print_interval=1",
                                                  f"runner.model_init_path={tmp_path / 'init'}", *extra])
    assert r.returncode == 0, log[-3000:]
    want = PADDLE_COSTS[name]
    got = _costs(log)[:len(want)]
    assert [b for b, _ in got] == list(range(len(want))), log[-3000:]
    # float32 rounding: the same ops in a different summation order
    np.testing.assert_allclose([c for _, c in got], want, rtol=2e-5, atol=1e-7)
