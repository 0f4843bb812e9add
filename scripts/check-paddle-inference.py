"""Serves psjob-saved PaddleRec models with real Paddle Inference and compares the predictions.

    .venv/bin/python scripts/check-paddle-inference.py --paddle-python PY [--models rank/dnn,...]

For each model of PaddleRec's local copy (tests/thirdparty/README.md; its code, unmodified): psjob builds the model's
StaticModel under `psjob as-paddle`, initialises it and saves an inference model of its
inference_target_var with paddle.static.save_inference_model (Paddle's .pdmodel/.pdiparams); psjob
loads it back and predicts a batch of 4 generated inputs (ids 0-2, normal floats); then Paddle's own
`paddle.inference` predictor (PY: a Python with real Paddle, 3.0.0 checked) loads the same two files
and predicts the same inputs, with its IR optimisation on and off. Prints the largest absolute
difference per model, or the first error line. Nothing here is part of the test suite (it needs a
real Paddle); tests/unit/test_paddle_format.py pins what it can without one.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = os.path.join(REPO, "tests", "thirdparty", "paddlerec")
DEFAULT_MODELS = ("rank/autoint,rank/bst,rank/dcn,rank/deepfm,rank/dien,rank/difm,rank/din,rank/dlrm,rank/dnn,"
                  "rank/fm,rank/gatenet,rank/logistic_regression,rank/naml,rank/wide_deep,rank/xdeepfm,"
                  "multitask/dselect_k,multitask/escm2,multitask/esmm,multitask/mmoe,multitask/ple,"
                  "multitask/share_bottom,contentunderstanding/tagspace,match/multiview-simnet,recall/mind,"
                  "recall/ncf,recall/word2vec")

# Under psjob as-paddle, in the model's folder: save the inference model, predict generated inputs.
EXPORT = r"""
import os, sys
import numpy as np
import paddle
from psjob.fluid.framework import prune_program
sys.path.insert(0, os.path.abspath(os.path.join("..", "..", "..", "tools")))
from utils.static_ps.common_ps import YamlHelper
paddle.enable_static()
config = YamlHelper().load_yaml("config.yaml")
config["config_abs_dir"] = os.getcwd()
sys.path.insert(0, os.getcwd())
from static_model import StaticModel
model = StaticModel(config)
feeds = model.create_feeds()
metrics = model.net(feeds)
target = getattr(model, "inference_target_var", None) or list(metrics.values())[0]
exe = paddle.static.Executor(paddle.CPUPlace())
exe.run(paddle.static.default_startup_program())
main = paddle.static.default_main_program()
read = {n for op in prune_program(main.clone(for_test=True), [target]).global_block().ops for n in op.input_arg_names}
paddle.static.save_inference_model(sys.argv[1], [f for f in feeds if f.name in read], [target], exe)
with paddle.static.scope_guard(paddle.static.Scope()):
    program, names, fetches = paddle.static.load_inference_model(sys.argv[1], exe)
    rng = np.random.default_rng(0)
    feed = {}
    for n in names:
        v = program.global_block().var(n)
        shape = [4 if d < 0 else d for d in v.shape]
        feed[n] = (rng.integers(0, 3, size=shape) if v.dtype.startswith("int") else rng.normal(size=shape)).astype(v.dtype)
    outs = exe.run(program, feed=feed, fetch_list=fetches)
np.savez(sys.argv[2], **{"feed_" + k: v for k, v in feed.items()}, **{"out_%d" % i: np.asarray(o) for i, o in enumerate(outs)})
"""

# Under real Paddle: Paddle Inference on the same files and inputs; argv[3] "off" turns IR optimisation off.
SERVE = r"""
import sys
import numpy as np
from paddle.inference import Config, create_predictor
ref = np.load(sys.argv[2])
config = Config(sys.argv[1] + ".pdmodel", sys.argv[1] + ".pdiparams")
config.disable_gpu()
config.switch_ir_optim(sys.argv[3] != "off")
predictor = create_predictor(config)
for name in predictor.get_input_names():
    predictor.get_input_handle(name).copy_from_cpu(ref["feed_" + name])
predictor.run()
diff = max(float(np.abs(predictor.get_output_handle(n).copy_to_cpu() - ref["out_%d" % i]).max())
           for i, n in enumerate(predictor.get_output_names()))
print("MAXDIFF %.3g" % diff)
"""


def _last_error(text):
    lines = [line for line in text.splitlines() if "Error" in line or "error" in line]
    return (lines[-1] if lines else text.strip().splitlines()[-1] if text.strip() else "no output")[:160]


def check(model, paddle_python, work):
    root = os.path.join(work, os.path.basename(model))
    shutil.copytree(os.path.join(ZOO, "tools"), os.path.join(root, "tools"))
    folder = os.path.join(root, "models", model)
    shutil.copytree(os.path.join(ZOO, "models", model), folder)
    prefix, ref = os.path.join(root, "inference"), os.path.join(root, "ref.npz")
    r = subprocess.run([sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-c", EXPORT, prefix, ref],
                       cwd=folder, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return f"psjob: {_last_error(r.stdout + r.stderr)}", ""
    results = []
    for ir in ("on", "off"):
        r = subprocess.run([paddle_python, "-c", SERVE, prefix, ref, ir], capture_output=True, text=True, timeout=300)
        lines = [line for line in r.stdout.splitlines() if line.startswith("MAXDIFF")]
        results.append(lines[-1].split()[1] if r.returncode == 0 and lines else _last_error(r.stdout + r.stderr))
    return results[0], results[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--paddle-python", required=True, help="a Python with real Paddle installed")
    p.add_argument("--models", default=DEFAULT_MODELS)
    args = p.parse_args()
    print(f"{'model':28s} {'IR on':>12s} {'IR off':>12s}   (largest |Paddle Inference - psjob| over the outputs)")
    with tempfile.TemporaryDirectory(prefix="paddle-inference-") as work:
        for model in args.models.split(","):
            on, off = check(model, args.paddle_python, work)
            print(f"{model:28s} {on:>12s} {off:>12s}", flush=True)


if __name__ == "__main__":
    main()
