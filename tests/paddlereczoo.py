"""What the PaddleRec zoo tests (tests/component/test_paddlerec_zoo_*.py) share: running one of
PaddleRec's tools on a model folder under `psjob as-paddle`, and writing a start file in Paddle's
own `paddle.static.save` format (a pickled {name: float32 array}) that both psjob and Paddle load
through `runner.model_init_path`."""
from __future__ import annotations

import json
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
    from psjob.fluid.paddle_pickle import read_arrays
    shapes = {n: a.shape for n, a in read_arrays(str(saved_prefix) + ".pdparams").items()}
    write_init_from_shapes(shapes, init_dir, seed)


def write_init_from_shapes(shapes, init_dir, seed=INIT_SEED):
    """write_paddle_init's file from {parameter name: shape}."""
    rs = np.random.RandomState(seed)
    state = {n: rs.uniform(-0.02, 0.02, shapes[n]).astype(np.float32) for n in sorted(shapes)}
    init_dir.mkdir()
    with open(init_dir / "rec_static.pdparams", "wb") as f:
        pickle.dump(state, f, protocol=4)


def write_psjob_init(init_dir, save_dir):
    """The start file of write_paddle_init as a psjob save (save_persistables' layout: one .npy
    a variable and a manifest), the form `fleet.init_server(dirname)` loads on a pserver: what
    PaddleRec's static_ps_trainer.py passes it as runner.warmup_model_path."""
    from psjob.foundation.checkpoint.format import new_manifest, write_array, write_manifest
    with open(os.path.join(init_dir, "rec_static.pdparams"), "rb") as f:
        state = pickle.load(f)
    os.makedirs(save_dir)
    entries = {}
    for name, arr in state.items():
        entries[name] = {**write_array(os.path.join(save_dir, name), arr), "file": name, "lod": []}
    write_manifest(str(save_dir), new_manifest(entries))


def run_ps(model_dir, overrides, workers=1, timeout=240, config="config.yaml", tool="static_ps_trainer.py",
           log_dir="pslog"):
    """PaddleRec's tools/<tool> (static_ps_trainer.py) -m CONFIG [-o OVERRIDES] as 1 pserver +
    `workers` trainers under `psjob launch --as-paddle`, from the model's folder, logging into
    its `log_dir`; (result, {log name: text}). `python` in a pipe_command is this interpreter
    (its folder first on PATH)."""
    log_dir = os.path.join(model_dir, log_dir)
    cmd = [sys.executable, "-m", "psjob.cli", "launch", "--as-paddle", "--server_num", "1",
           "--worker_num", str(workers), "--log_dir", log_dir, "--timeout", str(timeout),
           os.path.join("..", "..", "..", "tools", tool), "-m", config, *(["-o", *overrides] if overrides else [])]
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    r = subprocess.run(cmd, cwd=model_dir, capture_output=True, text=True, timeout=timeout + 60, env=env)
    logs = {}
    if os.path.isdir(log_dir):
        for name in sorted(os.listdir(log_dir)):
            if name.startswith(("serverlog", "workerlog")):
                with open(os.path.join(log_dir, name), errors="replace") as f:
                    logs[name] = f.read()
    return r, logs


# Run under `psjob as-paddle` in a model's folder: argv = [saved inference model dir]. Loads it
# with paddle.static.load_inference_model, feeds it the first train_batch_size examples of the
# model's own reader (fields matched to feeds by the order of create_feeds, as the reader yields
# them) and prints "INFER-OK <feed count> <fetch count>" when every fetched value is finite.
INFER_CHECK = r"""
import os, sys
import numpy as np
import paddle
sys.path.insert(0, os.path.abspath(os.path.join("..", "..", "..", "tools")))
from utils.static_ps.common_ps import YamlHelper
paddle.enable_static()
config = YamlHelper().load_yaml("config.yaml")
config["config_abs_dir"] = os.getcwd()
sys.path.insert(0, os.getcwd())
from static_model import StaticModel
with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
    names = [v.name for v in StaticModel(config).create_feeds(is_infer=False)]
reader = __import__(config.get("runner.train_reader_path", "reader"))
data_dir = os.path.join(os.getcwd(), config.get("runner.train_data_dir"))
files = [os.path.join(data_dir, f) for f in sorted(os.listdir(data_dir))]
batch = []
for example in reader.RecDataset(files, config=config):
    batch.append(example)
    if len(batch) == int(config.get("runner.train_batch_size")):
        break
exe = paddle.static.Executor(paddle.CPUPlace())
program, feeds, fetches = paddle.static.load_inference_model(sys.argv[1], exe, model_filename=None,
                                                             params_filename=None)
feed = {n: np.stack([np.asarray(e[names.index(n)]) for e in batch]) for n in feeds}
values = exe.run(program, feed=feed, fetch_list=fetches)
assert all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for v in values), values
print("INFER-OK", len(feeds), len(values))
"""


def check_inference_model(model_dir, saved_dir, timeout=120):
    cmd = [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-c", INFER_CHECK, str(saved_dir)]
    r = subprocess.run(cmd, cwd=model_dir, capture_output=True, text=True, timeout=timeout)
    return r, r.stdout + r.stderr


# Run under `psjob as-paddle` in a model's folder: builds the model's training program as
# static_trainer.py does (create_feeds, net) and prints its parameters' shapes as JSON, the
# names and shapes of static_trainer's save (what write_init_from_shapes needs), without training.
PARAM_SHAPES = r"""
import json, os, sys
import paddle
sys.path.insert(0, os.path.abspath(os.path.join("..", "..", "..", "tools")))
from utils.static_ps.common_ps import YamlHelper
paddle.enable_static()
config = YamlHelper().load_yaml("config.yaml")
for item in sys.argv[1:]:
    key, value = item.split("=")
    kind = type(config.get(key))  # as PaddleRec's trainers read -o key=value
    config[key] = (value.lower() == "true") if kind is bool else kind(value) if kind in (int, float) else value
config["config_abs_dir"] = os.getcwd()
sys.path.insert(0, os.getcwd())
from static_model import StaticModel
model = StaticModel(config)
model.net(model.create_feeds())
main = paddle.static.default_main_program()
print("PARAM-SHAPES " + json.dumps({p.name: list(p.shape) for p in main.all_parameters()}))
"""


def param_shapes(model_dir, overrides=(), timeout=120):
    """{parameter name: shape} of the model's training program (PARAM_SHAPES)."""
    cmd = [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-c", PARAM_SHAPES, *overrides]
    r = subprocess.run(cmd, cwd=model_dir, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in r.stdout.splitlines() if line.startswith("PARAM-SHAPES ")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"PARAM_SHAPES failed in {model_dir}:\n{(r.stdout + r.stderr)[-3000:]}")
    return {n: tuple(s) for n, s in json.loads(lines[-1][len("PARAM-SHAPES "):]).items()}
