"""psjob next to TensorFlow 2's ParameterServerStrategy, same rows and model, runs interleaved.

    python bench/peer_tf.py [--rows 1000000] [--reps 3] [--configs single,1x1,2x2]
                            [--sides worker,feed,dataset] [--anchor DIR] [--tf-python PY]
    python bench/peer_tf.py --batch-sweep 32,128,512,2048 [--rows ...] [--reps ...]

The TF side is the anchor in ../shared/anchors/tf_ps (its run.sh and tf_ctr_ps.py: one embedding
table of dim 16 shared by 26 slots, 13 dense, fc 256-128-1, lazy Adam 1e-3 on the ps tasks,
batch 1024, 16 steps packed per scheduled function, one thread per process). psjob runs the same
model on the same files (the Paddle anchor's gen_data.py, 40-column TSV, seed 2024, generated
once under --data) in three ways, each a side:

- worker:  bench/peer_psjob_worker.py, the bench's own trainer (as bench/peer_paddle.py runs it);
- feed:    the Paddle anchor's paddle_ctr_ps.py, unmodified, under `psjob launch --as-paddle`,
           fed batch by batch through exe.run(feed=...) as Paddle's examples do (--reader feed);
- dataset: the same script with --reader dataset (InMemoryDataset + train_from_dataset).

The script runs with --pull-dense-every 0 and --stop-servers 0: both work around Paddle 3.0's
parameter-server runtime (exe.run never pulls dense parameters back, stop_worker leaves the
servers running), psjob's programs pull by themselves and `psjob launch` ends the pservers.

Configurations: `single` (one process: psjob without pservers, TF without a strategy) and
SxT (S pservers / ps tasks, T trainers / workers, async). For each repetition and configuration
every psjob side runs, then TF, so every psjob/TF ratio compares adjacent runs. Per run:

- examples/s: worker side, the sum over trainers of examples / epoch seconds (the whole epoch);
  feed side and TF, after the first --warmup steps (each system's own figure: the script's
  examples_per_s_after_warmup_total, TF's examples_per_s_after_warmup, TF's measured on its
  coordinator); dataset side, the whole epoch (train_from_dataset has no warm-up split);
- AUC: the progressive AUC over the first epoch of every trainer's predictions together, as
  TF's is every worker's (4096 buckets; psjob's dataset side: the auc ops' buckets summed over
  trainers); trainer 0's alone beside it (the trainer that starts first scores lowest);
- CPU-s per 1M examples per role: psjob's processes sampled from /proc over the trainers'
  windows (bench/peer_paddle.py), TF's as its coordinator reads /proc at the window's edges;
- with single and 1x1 among --configs: per side, 1+1's examples/s over the single process's and
  the distributed overhead (1+1 trainer + pserver CPU-s per 1M minus the single process's),
  beside the MLP floor (bench/mlp_floor.py, run before and after).

--batch-sweep B1,B2,... runs the 1+1 async configuration at each batch size for psjob's worker
and feed sides, Paddle 3.0.0 (the Paddle anchor's run.sh, InMemoryDataset, as bench/peer_paddle.py
runs it) and TF, and prints examples/s per batch size and each system's fixed cost per step: the
intercept of the least-squares line wall ms per step = a + b x batch (bench/step_latency.py).
Without the TF venv (or Paddle's, in the sweep) only the other systems run, and the bench says so.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peer_paddle  # noqa: E402  (bench/peer_paddle.py: data, /proc sampling, psjob's worker side)
from step_latency import fixed_cost  # noqa: E402

REPO = os.path.dirname(HERE)
# The anchors next to the checkout (<repo>/../shared), else where bench/peer_paddle.py looks.
SHARED = next((d for d in (os.path.join(os.path.dirname(REPO), "shared", "anchors"),
                           os.path.dirname(peer_paddle.DEFAULT_ANCHOR)) if os.path.isdir(d)),
              os.path.join(os.path.dirname(REPO), "shared", "anchors"))
DEFAULT_ANCHOR = os.path.join(SHARED, "tf_ps")
DEFAULT_PADDLE_ANCHOR = os.path.join(SHARED, "paddle_ps")
DEFAULT_TF_PY = "/tmp/probe/vtf/bin/python"
DEFAULT_PADDLE_PY = "/tmp/probe/vpaddle300/bin/python"
SIDES = ("worker", "feed", "dataset")
ROLES = ("trainer", "pserver", "coordinator")

# The anchor script logs `[ctr <role> <seconds since its start>s] epoch 0 done: ...` (feed) or
# `... epoch 0: <seconds>s, ...` (dataset) when its first epoch ends.
_EPOCH_END = re.compile(r"\[ctr (\S+) ([\d.]+)s\] epoch 0(?: done|:)")


# -- psjob's script sides ------------------------------------------------------------------

def run_script(script, data, servers, trainers, reader, batch, warmup, period_s, timeout_s):
    """The Paddle anchor's script under psjob --as-paddle; a summary as peer_paddle's sides."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    args = ["--data-dir", data, "--reader", reader, "--epochs", "1", "--batch-size", str(batch),
            "--warmup-batches", str(warmup), "--pull-dense-every", "0", "--stop-servers", "0"]
    with tempfile.TemporaryDirectory(prefix=f"peer-tf-{reader}-") as tmp:
        log_dir, stats = os.path.join(tmp, "log"), os.path.join(tmp, "stats")
        args += ["--stats-dir", stats]
        if servers == 0:
            os.makedirs(log_dir)
            cmd = ["bash", "-c", f'exec "$@" > {log_dir}/single.log 2>&1', "-", sys.executable, "-m",
                   "psjob.cli", "as-paddle", sys.executable, script, "--mode", "single", *args]
        else:
            cmd = [sys.executable, "-m", "psjob.cli", "launch", "--as-paddle", "--server_num", str(servers),
                   "--worker_num", str(trainers), "--mode", "async", "--log_dir", log_dir,
                   script, "--mode", "async", *args]
        rc, stdout, stderr, sampler = peer_paddle._run_sampled(cmd, env, tmp, timeout_s, period_s)
        lines = [line for line in _logs(log_dir).splitlines() if line.startswith('{"bench": "paddle_ctr_ps"')]
        if rc != 0 or not lines:
            raise RuntimeError(f"psjob {reader} run failed (rc {rc}):\n{stderr[-3000:]}\n{_logs(log_dir)[-4000:]}")
        result = json.loads(lines[-1])
        per = [json.load(open(os.path.join(stats, f"trainer_{t}.json"))) for t in range(max(trainers, 1))]
        ends = _epoch_ends(log_dir)
    # A trainer's window: its process start + the log's time stamp of the epoch's end, minus
    # its training seconds; logs and processes are matched by order of start (as peer_paddle).
    starts = sorted(sampler.start_wall[pid] for pid in sampler.pids("trainer") if pid in sampler.scripts)
    if len(ends) != len(per) or len(starts) < len(ends):
        raise RuntimeError(f"psjob {reader} run: {len(ends)} epoch lines, {len(starts)} trainer processes, "
                           f"{len(per)} trainers")
    windows = [(s + end - r["train_s"], s + end) for s, end, r in zip(starts, ends, per)]
    trainer0 = result["trainer0"]["auc_first_epoch_progressive"]
    # One epoch: the anchor's last epoch is the first, pooled over every trainer's predictions
    # (feed) or AUC buckets (dataset), as TF's figure pools its workers'.
    summary = peer_paddle._summary(sampler, windows, [r["examples_trained"] for r in per],
                                   result.get("auc_last_epoch_all_trainers", trainer0), reader)
    summary["auc_trainer0"] = trainer0
    summary["rate"] = result["examples_per_s_after_warmup_total"]
    return summary


def _logs(log_dir):
    text = ""
    for path in sorted(glob.glob(os.path.join(log_dir, "*"))):
        with open(path, errors="replace") as f:
            text += f"--- {os.path.basename(path)}\n{f.read()}\n"
    return text


def _epoch_ends(log_dir):
    """Seconds since its start at which each trainer's first epoch ended, by trainer index."""
    ends = {}
    for path in glob.glob(os.path.join(log_dir, "workerlog.*")) + glob.glob(os.path.join(log_dir, "single.log")):
        with open(path, errors="replace") as f:
            m = _EPOCH_END.search(f.read())
        if m:
            ends[m.group(1)] = float(m.group(2))
    return [ends[k] for k in sorted(ends, key=lambda k: int(re.sub(r"\D", "", k) or 0))]


def run_side(side, args, data, servers, trainers, batch=1024):
    if side == "worker":
        r = peer_paddle.run_psjob(data, servers, trainers, args.sample_s, args.timeout, side="worker",
                                  extra=("--batch", str(batch)))
        r["auc_trainer0"], r["auc"] = r["auc"], r["auc_all"]
        return r
    return run_script(os.path.join(args.paddle_anchor, "paddle_ctr_ps.py"), data, servers, trainers, side,
                      batch, args.warmup, args.sample_s, args.timeout)


# -- TF ------------------------------------------------------------------------------------

def run_tf(anchor, tf_py, data, servers, trainers, batch, warmup, timeout_s):
    mode = ["--mode", "single"] if servers == 0 else \
        ["--mode", "ps", "--servers", str(servers), "--workers", str(trainers)]
    with tempfile.TemporaryDirectory(prefix="peer-tf-") as tmp:
        cmd = ["bash", os.path.join(anchor, "run.sh"), "--data-dir", data, "--python", tf_py,
               "--batch-size", str(batch), "--timeout", str(timeout_s), "--log-dir", os.path.join(tmp, "log"),
               *mode, "--", "--warmup-steps", str(warmup)]
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        rc, stdout, stderr, _ = peer_paddle._run_sampled(cmd, env, tmp, timeout_s + 60, 5.0)
    lines = [line for line in stdout.splitlines() if line.startswith('{"bench": "tf_ctr_ps"')]
    if rc != 0 or not lines:
        raise RuntimeError(f"TF run failed (rc {rc}):\n{stderr[-3000:]}")
    r = json.loads(lines[-1])
    rate, note = r["examples_per_s_after_warmup"], ""
    if not r.get("examples_after_warmup"):
        # Too few rows: every step ran in the warm-up's scheduled functions (16 steps each).
        rate, note = r["examples_per_s_incl_warmup"], "TF: no step after the warm-up, rate incl. warm-up"
    names = {"trainer": "trainer", "worker": "trainer", "ps": "pserver", "coordinator": "coordinator"}
    cpu = {names[k]: v["cpu_s_per_1M_examples"] for k, v in r["cpu"].items() if k in names}
    rss = {names[k]: v["peak_rss_mb_max"] * 2**20 for k, v in r["cpu"].items() if k in names}
    if note:
        cpu = {}  # TF's window after the warm-up is empty
    return {"side": "tf", "rate": rate, "auc": r["auc_first_epoch_progressive"], "cpu_per_1m": cpu, "rss": rss,
            "examples": r["examples"], "note": note}


# -- output --------------------------------------------------------------------------------

def _fmt(r):
    cpu, rss = r["cpu_per_1m"], r["rss"]
    roles = "  ".join(f"{role} {cpu[role]:5.1f}" for role in ROLES if role in cpu)
    mem = "  ".join(f"{role} {rss[role] / 2**20:5.0f}" for role in ROLES if role in rss)
    note = f"  [{r['note']}]" if r.get("note") else ""
    first = f" (trainer 0 {r['auc_trainer0']:.4f})" if "auc_trainer0" in r else ""
    return (f"{r['rate']:9,.0f} ex/s  AUC {r['auc']:.4f}{first}  CPU-s/1M: {roles}  (sum {sum(cpu.values()):5.1f})  "
            f"peak RSS MiB: {mem}{note}")


def _spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def _header(args, what):
    with open("/proc/cpuinfo") as f:
        cpu_model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    print(f"CTR-DNN (26 slots x 16 + 13 dense, fc 256-128-1, Adam 1e-3), {args.rows:,} rows, 1 epoch, {what}; "
          f"{os.cpu_count()} cores ({cpu_model}); loadavg {os.getloadavg()[0]:.1f}")
    print(f"command: {' '.join(sys.argv)}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def _available(name, python, setup):
    if os.access(python, os.X_OK):
        return True
    print(f"{name} side SKIPPED: no venv at {python} (create it with {setup}); the others run alone.")
    return False


def mlp_floor():
    """bench/mlp_floor.py's figure on this machine now (one BLAS thread, its own process: the
    thread count is read when numpy loads)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, os.path.join(HERE, "mlp_floor.py")], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r": ([\d.]+) CPU-s per 1M", out).group(1))


def _distributed_costs(runs, sides, floors):
    """What the distributed path costs each side, from the runs' single and 1x1 pairs (same
    repetition): 1x1 examples/s over the single process's, and the distributed overhead —
    (1x1 trainer + pserver CPU-s per 1M) minus the single process's — with the MLP floor."""
    single = {r["rep"]: r for r in runs if r["config"] == "single"}
    pairs = [(single[r["rep"]], r) for r in runs if r["config"] == "1x1" and r["rep"] in single]
    print(f"\nMLP floor (bench/mlp_floor.py, one thread): {' and '.join(f'{f:.2f}' for f in floors)} CPU-s per "
          "1M examples (before and after the runs)")
    if not pairs:
        return
    print("distributed path, per side over repetitions (targets: 1+1 >= 0.95x single, overhead <= 4 CPU-s/1M):")
    for side in sides:
        measured = [(alone, one) for alone, one in pairs if alone[side]["rate"] and one[side]["cpu_per_1m"]]
        if not measured:
            print(f"  {side:7s} not measured (too few rows for its window)")
            continue
        ratio = [one[side]["rate"] / alone[side]["rate"] for alone, one in measured]
        over = [sum(one[side]["cpu_per_1m"].values()) - alone[side]["cpu_per_1m"]["trainer"]
                for alone, one in measured]
        above = [alone[side]["cpu_per_1m"]["trainer"] - statistics.mean(floors) for alone, _ in measured]
        print(f"  {side:7s} 1+1 / single {_spread(ratio, lambda x: f'{x:.2f}')}   overhead "
              f"{_spread(over, lambda x: f'{x:.1f}')} CPU-s/1M   single process above the floor "
              f"{_spread(above, lambda x: f'{x:.1f}')}")
    tf_single = [alone["tf"]["cpu_per_1m"]["trainer"] for alone, _ in pairs
                 if "tf" in alone and alone["tf"]["cpu_per_1m"].get("trainer")]
    if tf_single:
        # A one-thread process that did nothing but the MLP's products would spend the floor
        # per example: TF's single-process CPU over it bounds any single process's ratio to TF.
        print(f"  ceiling: TF's single process spends {_spread(tf_single, lambda x: f'{x:.1f}')} CPU-s/1M, so a "
              f"one-thread single process at the floor would run "
              f"{_spread([t / statistics.mean(floors) for t in tf_single], lambda x: f'{x:.2f}')}x TF's examples/s")


def compare(args, data, tf):
    _header(args, "async, batch 1024")
    floors = [mlp_floor()]
    configs = [peer_paddle._config(c) for c in args.configs.split(",")]
    runs = []
    for rep in range(args.reps):
        for name, servers, trainers in configs:
            pair = {"rep": rep, "config": name}
            for side in args.sides:
                pair[side] = run_side(side, args, data, servers, trainers)
                print(f"[rep {rep}] {name:6s} {side:7s} {_fmt(pair[side])}", flush=True)
            if tf:
                pair["tf"] = run_tf(args.anchor, args.tf_python, data, servers, trainers, 1024, args.warmup,
                                    args.timeout)
                print(f"[rep {rep}] {name:6s} {'tf':7s} {_fmt(pair['tf'])}   psjob/TF "
                      + "  ".join(f"{s} {pair[s]['rate'] / pair['tf']['rate']:.2f}x" for s in args.sides),
                      flush=True)
            runs.append(pair)

    print("\nsummary: median (min–max) over repetitions; targets psjob/TF ex/s >= 2, AUC psjob-TF >= -0.005 "
          "(AUC: every trainer's predictions together)")
    print(f"  {'config':6s} {'side':7s} {'ex/s':>28s} {'AUC':>22s} {'psjob/TF ex/s':>22s} {'AUC psjob-TF':>26s}")
    for name, _, _ in configs:
        mine = [r for r in runs if r["config"] == name]
        for side in (*args.sides, "tf"):
            rs = [r for r in mine if side in r]
            if not rs:
                continue
            rate = _spread([r[side]["rate"] for r in rs], lambda x: f"{x:,.0f}")
            auc = _spread([r[side]["auc"] for r in rs], lambda x: f"{x:.3f}")
            ratio = gain = ""
            if side != "tf" and all("tf" in r for r in rs):
                ratio = _spread([r[side]["rate"] / r["tf"]["rate"] for r in rs], lambda x: f"{x:.2f}")
                gain = _spread([r[side]["auc"] - r["tf"]["auc"] for r in rs], lambda x: f"{x:+.3f}")
            cpu = {role: [r[side]["cpu_per_1m"][role] for r in rs if role in r[side]["cpu_per_1m"]] for role in ROLES}
            cpu_text = "  ".join(f"{role} {statistics.median(v):.1f}" for role, v in cpu.items() if v)
            first = [r[side]["auc_trainer0"] for r in rs if "auc_trainer0" in r[side]]
            first_text = f"   AUC trainer 0 {_spread(first, lambda x: f'{x:.3f}')}" if first else ""
            print(f"  {name:6s} {side:7s} {rate:>28s} {auc:>22s} {ratio:>22s} {gain:>26s}   CPU-s/1M {cpu_text}"
                  + first_text)
    floors.append(mlp_floor())
    _distributed_costs(runs, args.sides, floors)
    return runs


def sweep(args, data, tf, paddle):
    batches = [int(b) for b in args.batch_sweep.split(",")]
    _header(args, "1 pserver + 1 trainer async, batch sweep")
    systems = ["worker", "feed"] + (["paddle"] if paddle else []) + (["tf"] if tf else [])
    runs = []
    for rep in range(args.reps):
        for batch in batches:
            row = {"rep": rep, "batch": batch}
            for system in systems:
                if system == "paddle":
                    r = peer_paddle.run_paddle(args.paddle_anchor, args.paddle_python, data, 1, 1, args.sample_s,
                                               args.timeout, batch_size=batch)
                elif system == "tf":
                    r = run_tf(args.anchor, args.tf_python, data, 1, 1, batch, args.warmup, args.timeout)
                else:
                    r = run_side(system, args, data, 1, 1, batch)
                row[system] = r
                print(f"[rep {rep}] batch {batch:5d} {system:7s} {_fmt(r)}", flush=True)
            runs.append(row)

    print("\nsummary: examples/s, median over repetitions; fixed cost per step = intercept a of "
          "wall ms per step = a + b x batch (least squares over the batch sizes)")
    print(f"  {'batch':>6s} " + " ".join(f"{s:>10s}" for s in systems)
          + "   " + " ".join(f"{'psjob ' + s + '/' + o:>22s}" for s in ("worker", "feed")
                                for o in systems if o in ("paddle", "tf")))
    for batch in batches:
        rs = [r for r in runs if r["batch"] == batch]
        med = {s: statistics.median(r[s]["rate"] for r in rs) for s in systems}
        ratios = [statistics.median(r[s]["rate"] / r[o]["rate"] for r in rs)
                  for s in ("worker", "feed") for o in systems if o in ("paddle", "tf")]
        print(f"  {batch:6d} " + " ".join(f"{med[s]:10,.0f}" for s in systems)
              + "   " + " ".join(f"{x:22.2f}" for x in ratios))
    for system in systems:
        # One trainer: wall seconds per step = batch / its examples per second.
        rows = [{"batch": r["batch"], "wall": r["batch"] / r[system]["rate"], "steps": 1} for r in runs]
        a, b = fixed_cost(rows)
        print(f"  fixed cost per step, {system:7s}: a = {a:6.2f} ms, b = {1e3 * b:6.2f} µs per example"
              + ("   (target for psjob: a <= 2 ms)" if system in ("worker", "feed") else ""))
    return runs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--configs", default="single,1x1,2x2", help="pservers x trainers (async), or single")
    p.add_argument("--sides", default="worker,feed,dataset", help=f"psjob's sides, of {','.join(SIDES)}")
    p.add_argument("--batch-sweep", help="comma-separated batch sizes: the 1x1 sweep instead of the comparison")
    p.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "psjob-peer-data"))
    p.add_argument("--anchor", default=DEFAULT_ANCHOR, help="the TF anchor (tf_ps)")
    p.add_argument("--tf-python", default=DEFAULT_TF_PY)
    p.add_argument("--paddle-anchor", default=DEFAULT_PADDLE_ANCHOR,
                   help="the Paddle anchor (paddle_ps): gen_data.py, the script of the feed and dataset sides")
    p.add_argument("--paddle-python", default=DEFAULT_PADDLE_PY, help="Paddle 3.0.0 (--batch-sweep)")
    p.add_argument("--no-tf", action="store_true", help="psjob only")
    p.add_argument("--warmup", type=int, default=30, help="steps before TF's and the feed side's window")
    p.add_argument("--sample_s", type=float, default=0.2, help="/proc sampling period")
    p.add_argument("--timeout", type=int, default=1200, help="seconds per run")
    p.add_argument("--json", help="also write every run's figures to this file")
    args = p.parse_args()
    args.sides = [s for s in args.sides.split(",") if s]
    unknown = [s for s in args.sides if s not in SIDES]
    if unknown:
        p.error(f"--sides: unknown {','.join(unknown)} (sides: {','.join(SIDES)})")
    if not os.path.isfile(os.path.join(args.paddle_anchor, "gen_data.py")):
        p.error(f"--paddle-anchor {args.paddle_anchor}: no gen_data.py there")

    data = os.path.join(args.data, f"rows-{args.rows}-files-{args.files}")
    peer_paddle.ensure_data(args.paddle_anchor, data, args.rows, args.files)
    tf = False
    if args.no_tf:
        print("TF side not run (--no-tf).")
    elif not os.path.isfile(os.path.join(args.anchor, "run.sh")):
        print(f"TF side SKIPPED: no anchor at {args.anchor} (--anchor); psjob runs alone.")
    else:
        tf = _available("TF", args.tf_python, os.path.join(args.anchor, "setup_venv.sh"))
    if args.batch_sweep:
        paddle = _available("Paddle", args.paddle_python, os.path.join(args.paddle_anchor, "setup_venv.sh"))
        runs = sweep(args, data, tf, paddle)
    else:
        runs = compare(args, data, tf)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
