"""Prints the costs tests/component/test_paddle_rec_zoo_recall_match.py pins, as real Paddle gives them.

Run from a PaddleRec model folder laid out as the test lays it out (DIR/tools, DIR/models/<group>/<name>),
after one `python ../../../tools/static_trainer.py -m config.yaml -o runner.epochs=1` there:
    /tmp/probe/vpaddle300/bin/python paddle_costs.py <model_save_path> [-o overrides...]
It writes the test's initial parameters (init_params below, the same function as the test's) for
the names and shapes Paddle saved in <model_save_path>/0, trains one epoch from them and prints the
metrics of each printed batch."""
import os
import pickle
import re
import subprocess
import sys
import zlib

import numpy as np


def init_params(shapes):
    """{name: float32 array}: uniform(-0.1, 0.1), seeded by the name alone; a GRU's flat weight
    is its cells' parameters, as in every file Paddle saves (below)."""
    params = {n: np.random.RandomState(zlib.crc32(n.encode())).uniform(-0.1, 0.1, s).astype("float32")
              for n, s in shapes.items()}
    # Paddle's static nn.GRU coalesces its cells' parameters into one flat parameter (gru_N.w_0)
    # in the startup program and its rnn op reads that buffer: keep the two equal, all the
    # cells' weights (w_ih, w_hh) then all their biases (b_ih, b_hh). One GRU per model here.
    cells = sorted({n.split(".")[0] for n in params if re.fullmatch(r"gru_cell_\d+\.[wb]_[01]", n)})
    if "gru_0.w_0" in params and cells:
        parts = ([params[f"{c}.w_{i}"] for c in cells for i in (0, 1)]
                 + [params[f"{c}.b_{i}"] for c in cells for i in (0, 1)])
        flat = np.concatenate([p.ravel() for p in parts])
        if flat.shape == params["gru_0.w_0"].shape:
            params["gru_0.w_0"] = flat
    return params


def metrics(log):
    """[[value, ...] per batch line and the epoch line], the numbers before avg_reader_cost."""
    out = []
    for line in log.splitlines():
        if re.search(r"epoch: \d+(, batch_id: \d+| done)", line):
            head = line.split("avg_reader_cost")[0].split("epoch time")[0]
            out.append([float(v) for v in re.findall(r"(?<![\w])(?:Loss|loss|cost|auc|Auc|acc|Acc): ([-0-9.e]+)", head)])
    return out


if __name__ == "__main__":
    save = sys.argv[1]
    with open(os.path.join(save, "0", "rec_static.pdparams"), "rb") as f:
        shapes = {n: a.shape for n, a in pickle.load(f).items()}
    os.makedirs("init_params", exist_ok=True)
    with open("init_params/rec_static.pdparams", "wb") as f:
        pickle.dump(init_params(shapes), f, protocol=4)
    extra = sys.argv[3:] if sys.argv[2:3] == ["-o"] else []
    run = subprocess.run([sys.executable, "-u", "../../../tools/static_trainer.py", "-m", "config.yaml", "-o",
                          "runner.epochs=1", "runner.print_interval=1", "runner.model_init_path=init_params"]
                         + extra, capture_output=True, text=True, check=True)
    print(sorted(shapes))
    got = metrics(run.stdout + run.stderr)
    print(got[:5], got[-1])
