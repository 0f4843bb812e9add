"""PaddleRec's own models and trainer under psjob and under PaddlePaddle 3.0.0, interleaved.

    python bench/paddlerec.py [--models dnn,wide_deep,deepfm] [--rounds 2]
                              [--userland ../shared/userland] [--paddle-python PY]

Each run is the userland harness `paddlerec/run.sh MODE MODEL`: PaddleRec's rank model and
its static PS trainer helpers, unmodified but for import lines, at PaddleRec's own
configuration (batch 32, fc 512-256-128-32, a 1,000,001 × 9 table, Adam 1e-3, the
QueueDataset pipe reader), 1 pserver + 2 async trainers, 3 epochs of 4000 examples per
trainer. For every round and model psjob and Paddle run back to back (the order alternates
by round), so each ratio compares an adjacent pair on a shared, noisy machine.

Per run it prints examples/s per epoch — 2 trainers × 4000 examples over the slower
trainer's epoch seconds, as the driver measures them around `train_from_dataset` — and the
verdict of the harness's checks (AUC, loss, saved models). The summary is the median over
rounds of each side's epochs 2-3 (epoch 1 includes first pulls and the readers' start) and
psjob / Paddle.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
EXAMPLES_PER_TRAINER = 4000  # the harness's epoch: 2 files × 25 × the 80-line sample
TRAINERS = 2


def run_one(userland: str, mode: str, model: str, paddle_py: str, timeout: int) -> dict:
    scratch = tempfile.mkdtemp(prefix=f"psjob-bench-paddlerec-{mode}-")
    env = dict(os.environ, KEEP_WORKDIR="1", PADDLEREC_SCRATCH=scratch, PADDLEREC_TIMEOUT=str(timeout),
               PADDLE_PY=paddle_py, PY=os.path.join(REPO, ".venv", "bin", "python"))
    try:
        r = subprocess.run(["bash", os.path.join(userland, "paddlerec", "run.sh"), mode, model], cwd=REPO,
                           env=env, capture_output=True, text=True, timeout=timeout + 120)
        verdict = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
        epochs = []
        for run_dir in os.listdir(scratch):
            for t in range(TRAINERS):
                log = os.path.join(scratch, run_dir, "log", f"workerlog.{t}")
                if not os.path.exists(log):
                    continue
                with open(log, errors="replace") as f:
                    lines = [x for x in f if x.startswith("PADDLEREC_RESULT ")]
                if lines:
                    epochs.append(json.loads(lines[-1][len("PADDLEREC_RESULT "):])["epoch_seconds"])
        rates = []
        if len(epochs) == TRAINERS:
            for seconds in zip(*epochs):
                rates.append(TRAINERS * EXAMPLES_PER_TRAINER / max(seconds))
        return {"verdict": verdict, "rates": rates, "passed": r.returncode == 0}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="dnn,wide_deep,deepfm")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--userland", default=os.path.join(REPO, "..", "shared", "userland"))
    ap.add_argument("--paddle-python", default="/tmp/probe/vpaddle300/bin/python",
                    help="real Paddle 3.0.0 (../shared/anchors/paddle_ps/setup_venv.sh makes it)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run")
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.userland, "paddlerec", "run.sh")):
        sys.exit(f"no PaddleRec harness under {args.userland}/paddlerec (--userland)")
    sides = ["psjob"] + (["paddle"] if os.access(args.paddle_python, os.X_OK) else [])
    if len(sides) == 1:
        print(f"no Paddle at {args.paddle_python}: psjob's side only")
    models = args.models.split(",")
    got = {(m, s): [] for m in models for s in sides}
    print(f"PaddleRec rank models, 1 pserver + 2 async trainers, batch 32, examples/s per epoch "
          f"(epochs 1, 2, 3); {os.cpu_count()} cores")
    for rnd in range(args.rounds):
        for model in models:
            for side in (sides if rnd % 2 == 0 else sides[::-1]):
                load = os.getloadavg()[0]
                res = run_one(args.userland, side, model, args.paddle_python, args.timeout)
                got[(model, side)].extend(res["rates"][1:])
                rates = " ".join(f"{x:8,.0f}" for x in res["rates"]) or "-"
                print(f"  round {rnd + 1} {model:10} {side:6} {rates:>28}   load {load:4.1f}   {res['verdict']}",
                      flush=True)
    print("\nmedian examples/s of epochs 2-3 over rounds")
    for model in models:
        med = {s: statistics.median(got[(model, s)]) if got[(model, s)] else float("nan") for s in sides}
        ratio = f"   psjob / Paddle {med['psjob'] / med['paddle']:.2f}x" if "paddle" in med else ""
        print(f"  {model:10} " + "  ".join(f"{s} {med[s]:8,.0f}" for s in sides) + ratio)


if __name__ == "__main__":
    main()
