"""psjob next to PaddlePaddle 3.0.0's own parameter server, same data, runs interleaved.

    python bench/peer_paddle.py [--rows 1000000] [--reps 3] [--configs 1x1,2x2,single]
                                [--anchor /work/shared/anchors/paddle_ps] [--paddle-python PY]

The Paddle side is the anchor in ../shared/anchors/paddle_ps (its run.sh,
paddle_ctr_ps.py with the InMemoryDataset reader, the venv its setup_venv.sh
makes); psjob's side is bench/peer_psjob_worker.py, the same model (26 slots
× dim 16 in one table, 13 dense, fc 256-128-1, Adam 1e-3, batch 1024) on the
same files. The data is generated once with the anchor's gen_data.py
(40-column TSV, seed 2024) under --data.

For each repetition and configuration (pservers x trainers in async mode,
or `single`: one process without pservers) psjob runs, then Paddle runs, so
every ratio compares an adjacent pair. For each run:

- examples/s: the sum over trainers of examples / training seconds (one
  epoch; loading the files is outside the window, as in the anchor);
- AUC: trainer 0's progressive AUC over that first epoch (the auc op's, as the
  anchor reports Paddle's); for psjob also "all": the exact progressive AUC over
  every trainer's predictions together (the job's, as fleet.metrics.auc pools it),
  which a trainer starting ahead of the others does not move;
- CPU-s per 1M examples per role: every process of the run is sampled from
  /proc (utime + stime, every --sample_s) and its CPU is interpolated at the
  training window's ends — the trainers' reported window for psjob, the
  window the anchor's log lines give for Paddle (an epoch's end time and
  length) — then summed per role and divided by the examples trained;
- peak RSS per role: the largest VmHWM of any process of that role.

Paddle runs with MKL_DEBUG_CPU_TYPE=5 (its bundled MKL takes a slow path on
AMD otherwise) and both sides with OMP_NUM_THREADS=1. Without the Paddle
venv only psjob's side runs, and the bench says so.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ANCHOR = "/work/shared/anchors/paddle_ps"
DEFAULT_PADDLE_PY = os.path.expanduser("~/.cache/psjob-peer/vpaddle300/bin/python")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- /proc sampling ------------------------------------------------------------------------

def _children_map():
    kids = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def _descendants(root):
    kids, out, todo = _children_map(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def _cpu_and_hwm(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime
    hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return cpu, hwm


SCRIPTS = (b"paddle_ctr_ps.py", b"peer_psjob_worker.py")


def _role(pid):
    """pserver / trainer from the role variables both launchers set, trainer for the training
    script without one (single process), `other` for the rest (launchers, shells)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        script = _is_script(pid)
    except OSError:
        return None
    role = (env.get(b"PADDLE_TRAINING_ROLE") or env.get(b"TRAINING_ROLE") or b"").upper()
    if role == b"PSERVER":
        return "pserver"
    if role == b"TRAINER" or (not role and script):
        return "trainer"
    return "other"


def _start_wall(pid):
    """Wall-clock start time of a process (/proc/<pid>/stat field 22, ticks since boot)."""
    with open(f"/proc/{pid}/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        boot = time.time() - float(f.read().split()[0])
    return boot + ticks / CLOCK_TICKS


def _is_script(pid):
    """Whether the process is `python [-u] <training script> ...` (a launcher names the script
    further down its command line)."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a for a in f.read().split(b"\0")[1:3] if a != b"-u"]
    return bool(argv) and os.path.basename(argv[0]) in SCRIPTS


class ProcSampler:
    """Samples CPU time and peak RSS of every descendant of `root` until stopped."""

    def __init__(self, root, period_s):
        self.root, self.period_s = root, period_s
        self.samples = {}   # pid -> [(wall time, cpu s)]
        self.hwm = {}       # pid -> bytes
        self.roles = {}     # pid -> role
        self.start_wall = {}  # pid -> wall-clock start
        self.scripts = set()  # pids running the training script (not awk, not a launcher)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period_s)

    def sample(self):
        for pid in _descendants(self.root):
            # `other` is asked again: a child seen between fork and exec still shows its
            # launcher's environment and command line.
            if self.roles.get(pid, "other") == "other":
                role = _role(pid)
                if role is None:
                    continue
                try:
                    self.start_wall[pid] = _start_wall(pid)
                    if _is_script(pid):
                        self.scripts.add(pid)
                except OSError:
                    continue
                self.roles[pid] = role
            try:
                cpu, hwm = _cpu_and_hwm(pid)
            except (OSError, IndexError, ValueError):
                continue
            self.samples.setdefault(pid, []).append((time.time(), cpu))
            self.hwm[pid] = max(self.hwm.get(pid, 0), hwm)

    def stop(self):
        self._stop.set()
        self._thread.join()

    def cpu_between(self, pid, t0, t1):
        return _interp(self.samples.get(pid, []), t1) - _interp(self.samples.get(pid, []), t0)

    def pids(self, role):
        return [pid for pid, r in self.roles.items() if r == role]


def _interp(samples, t):
    """CPU seconds of a process at wall time t, linear between samples (0 before the first)."""
    if not samples or t <= samples[0][0]:
        return 0.0 if not samples or t < samples[0][0] else samples[0][1]
    for (ta, ca), (tb, cb) in zip(samples, samples[1:]):
        if ta <= t <= tb:
            return ca + (cb - ca) * (t - ta) / (tb - ta) if tb > ta else cb
    return samples[-1][1]


def _run_sampled(cmd, env, cwd, timeout_s, period_s):
    """Run cmd in its own session, sampled; returns (CompletedProcess-like, sampler)."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    sampler = ProcSampler(proc.pid, period_s)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[peer_paddle] timed out after {timeout_s}s"
    finally:
        sampler.stop()
        if proc.poll() is None:  # interrupted: take the run's processes down with us
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out, err, sampler


# -- one run of each side ------------------------------------------------------------------

def _summary(sampler, windows, examples, auc, name):
    """windows: [(t_start, t_end)] per trainer, in wall time."""
    seconds = [t1 - t0 for t0, t1 in windows]
    rate = sum(e / s for e, s in zip(examples, seconds))
    total = sum(examples)
    first, last = min(t0 for t0, _ in windows), max(t1 for _, t1 in windows)
    cpu = {}
    for role in ("trainer", "pserver"):
        pids = sampler.pids(role)
        if not pids:
            continue
        cpu[role] = sum(sampler.cpu_between(pid, first, last) for pid in pids) / total * 1e6
    rss = {role: max((sampler.hwm.get(pid, 0) for pid in sampler.pids(role)), default=0)
           for role in ("trainer", "pserver") if sampler.pids(role)}
    return {"side": name, "rate": rate, "auc": auc, "cpu_per_1m": cpu, "rss": rss, "examples": total}


def run_psjob(data, servers, trainers, period_s, timeout_s, source=None, side="psjob", extra=()):
    """source: a directory holding another psjob package (a baseline checkout's runtime/),
    put first on PYTHONPATH; None runs the installed one."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if source:
        env["PYTHONPATH"] = os.pathsep.join([source] + [p for p in [env.get("PYTHONPATH")] if p])
    worker = os.path.join(HERE, "peer_psjob_worker.py")
    with tempfile.TemporaryDirectory(prefix="peer-psjob-") as out:
        if servers == 0:
            cmd = [sys.executable, worker, "--data", data, "--out", out, "--single", *extra]
        else:
            cmd = [sys.executable, "-m", "psjob.cli", "launch", "--server_num", str(servers),
                   "--worker_num", str(trainers), "--mode", "async", "--log_dir", os.path.join(out, "log"),
                   worker, "--data", data, "--out", out, "--mode", "async", *extra]
        rc, stdout, stderr, sampler = _run_sampled(cmd, env, None, timeout_s, period_s)
        if rc != 0:
            logs = ""
            for path in sorted(glob.glob(os.path.join(out, "log", "*"))):
                with open(path, errors="replace") as f:
                    logs += f"--- {os.path.basename(path)}\n{f.read()[-3000:]}\n"
            raise RuntimeError(f"psjob run failed (rc {rc}):\n{stderr[-3000:]}\n{logs}")
        results = [json.load(open(os.path.join(out, f"trainer{t}.json"))) for t in range(max(trainers, 1))]
        summary = _summary(sampler, [(r["t_start"], r["t_end"]) for r in results],
                           [r["examples"] for r in results], results[0]["auc"], side)
        summary["auc_all"] = _pooled_auc([os.path.join(out, f"trainer{t}.scores.npz") for t in range(len(results))])
    return summary


def _pooled_auc(paths):
    """The progressive AUC over every trainer's predictions together (None when a tree's
    worker writes no scores, e.g. an older --baseline)."""
    if not all(os.path.exists(p) for p in paths):
        return None
    import numpy as np

    from psjob.dataset.ctr import roc_auc
    scores = [np.load(p) for p in paths]
    return roc_auc(np.concatenate([s["label"] for s in scores]), np.concatenate([s["predict"] for s in scores]))


_EPOCH_LINE = re.compile(r"\[ctr (\S+) ([\d.]+)s\] epoch 0: ([\d.]+)s")


def _paddle_windows(log_dir):
    """(seconds since the process started, epoch seconds) of each Paddle trainer's first
    epoch: the anchor logs `[ctr <role> <seconds since its start>s] epoch 0: <seconds>s`."""
    windows = []
    for path in sorted(glob.glob(os.path.join(log_dir, "workerlog.*")) + glob.glob(os.path.join(log_dir, "single.log"))):
        with open(path, errors="replace") as f:
            m = _EPOCH_LINE.search(f.read())
        if m:
            windows.append((float(m.group(2)), float(m.group(3))))
    return windows


def run_paddle(anchor, paddle_py, data, servers, trainers, period_s, timeout_s, batch_size=1024):
    env = dict(os.environ, MKL_DEBUG_CPU_TYPE="5", OMP_NUM_THREADS="1", PADDLE_PY=paddle_py)
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory(prefix="peer-paddle-") as tmp:
        log_dir = os.path.join(tmp, "log")
        mode = ["--mode", "single"] if servers == 0 else \
            ["--mode", "async", "--servers", str(servers), "--workers", str(trainers)]
        cmd = ["bash", os.path.join(anchor, "run.sh"), "--data-dir", data, "--reader", "dataset",
               "--epochs", "1", "--batch-size", str(batch_size), "--log-dir", log_dir, "--timeout", str(timeout_s), "--grace", "5", *mode,
               "--", "--pir", "0"]
        rc, stdout, stderr, sampler = _run_sampled(cmd, env, tmp, timeout_s + 60, period_s)
        lines = [line for line in stdout.splitlines() if line.startswith('{"bench": "paddle_ctr_ps"')]
        if rc != 0 or not lines:
            raise RuntimeError(f"Paddle run failed (rc {rc}):\n{stderr[-3000:]}")
        result = json.loads(lines[-1])
        logged = _paddle_windows(log_dir)
    # A trainer's window: its process start + the log's time stamp of the epoch's end, minus the epoch.
    starts = sorted(sampler.start_wall[pid] for pid in sampler.pids("trainer") if pid in sampler.scripts)
    if len(logged) != max(trainers, 1) or len(starts) < len(logged):
        raise RuntimeError(f"Paddle run: found {len(logged)} epoch lines and {len(starts)} trainer "
                           f"processes for {trainers} trainers")
    # Logs and processes are matched by order of start: close enough for the window's edges
    # (all trainers start within a fraction of a second of each other).
    windows = [(s + end - length, s + end) for s, (end, length) in zip(starts, logged)]
    per = max(trainers, 1)
    examples = [result["examples_trained_total"] // per] * per
    return _summary(sampler, windows, examples, result["trainer0"]["auc_first_epoch_progressive"], "paddle")


# -- driver --------------------------------------------------------------------------------

def ensure_data(anchor, data, rows, files):
    if os.path.exists(os.path.join(data, "meta.json")):
        with open(os.path.join(data, "meta.json")) as f:
            meta = json.load(f)
        if meta.get("rows") == rows and meta.get("files") == files:
            return
    print(f"generating {rows:,} rows in {files} files under {data} (the anchor's gen_data.py, seed 2024)",
          flush=True)
    subprocess.run([sys.executable, os.path.join(anchor, "gen_data.py"), "--rows", str(rows), "--files",
                    str(files), "--out-dir", data, "--seed", "2024"], check=True, stdout=subprocess.DEVNULL)


def _config(text):
    if text == "single":
        return text, 0, 1
    s, t = (int(v) for v in text.split("x"))
    return text, s, t


def _fmt(r):
    cpu, rss = r["cpu_per_1m"], r["rss"]
    both = sum(cpu.values())
    roles = "  ".join(f"{role} {cpu[role]:5.1f}" for role in ("trainer", "pserver") if role in cpu)
    mem = "  ".join(f"{role} {rss[role] / 2**20:6.0f}" for role in ("trainer", "pserver") if role in rss)
    every = f" (all {r['auc_all']:.4f})" if r.get("auc_all") is not None else ""
    return (f"{r['rate']:9,.0f} ex/s  AUC {r['auc']:.4f}{every}  CPU-s/1M: {roles}  (sum {both:5.1f})  "
            f"peak RSS MiB: {mem}")


def _spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--configs", default="1x1,2x2,single", help="pservers x trainers (async), or single")
    p.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "psjob-peer-data"))
    p.add_argument("--anchor", default=DEFAULT_ANCHOR)
    p.add_argument("--paddle-python", default=DEFAULT_PADDLE_PY)
    p.add_argument("--sample_s", type=float, default=0.2, help="/proc sampling period")
    p.add_argument("--timeout", type=int, default=1200, help="seconds per run")
    p.add_argument("--json", help="also write every run's figures to this file")
    p.add_argument("--no-paddle", action="store_true", help="psjob only (and --baseline)")
    p.add_argument("--baseline", help="a directory holding another psjob package (e.g. `git archive main "
                   "runtime | tar -x -C DIR` → DIR/runtime): run it as side `base` next to psjob")
    p.add_argument("--base-args", default="", help="extra bench/peer_psjob_worker.py arguments of the base "
                   "side, e.g. '--prefetch_ahead 0' (with --baseline runtime: this tree without one feature)")
    args = p.parse_args()
    if args.baseline and not os.path.isfile(os.path.join(args.baseline, "psjob", "__init__.py")):
        # Put first on PYTHONPATH, a directory without psjob/ would silently run the installed
        # tree on both sides (DIR instead of DIR/runtime does that).
        p.error(f"--baseline {args.baseline}: no psjob package there (pass the directory holding psjob/, "
                f"e.g. DIR/runtime)")

    data = os.path.join(args.data, f"rows-{args.rows}-files-{args.files}")
    ensure_data(args.anchor, data, args.rows, args.files)
    paddle = os.access(args.paddle_python, os.X_OK) and not args.no_paddle
    with open("/proc/cpuinfo") as f:
        cpu_model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    print(f"CTR-DNN (26 slots x 16 + 13 dense, fc 256-128-1, Adam 1e-3, batch 1024), {args.rows:,} rows, "
          f"1 epoch, async; {os.cpu_count()} cores ({cpu_model}); loadavg {os.getloadavg()[0]:.1f}")
    print(f"command: {' '.join(sys.argv)}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.no_paddle:
        print("Paddle side not run (--no-paddle).")
    elif not paddle:
        print(f"Paddle side SKIPPED: no Paddle venv at {args.paddle_python} "
              f"(create it with {os.path.join(args.anchor, 'setup_venv.sh')}); psjob runs alone.")
    configs = [_config(c) for c in args.configs.split(",")]
    runs = []
    for rep in range(args.reps):
        for name, servers, trainers in configs:
            pair = {"rep": rep, "config": name,
                    "psjob": run_psjob(data, servers, trainers, args.sample_s, args.timeout)}
            print(f"[rep {rep}] {name:6s} psjob  {_fmt(pair['psjob'])}", flush=True)
            if args.baseline:
                pair["base"] = run_psjob(data, servers, trainers, args.sample_s, args.timeout,
                                         source=args.baseline, side="base", extra=args.base_args.split())
                print(f"[rep {rep}] {name:6s} base   {_fmt(pair['base'])}   "
                      f"psjob/base {pair['psjob']['rate'] / pair['base']['rate']:.2f}x", flush=True)
            if paddle:
                pair["paddle"] = run_paddle(args.anchor, args.paddle_python, data, servers, trainers,
                                            args.sample_s, args.timeout)
                print(f"[rep {rep}] {name:6s} paddle {_fmt(pair['paddle'])}   "
                      f"psjob/paddle {pair['psjob']['rate'] / pair['paddle']['rate']:.2f}x", flush=True)
            runs.append(pair)

    print("\nsummary: median (min–max) over repetitions")
    single = {r["rep"]: r for r in runs if r["config"] == "single"}
    for name, _, _ in configs:
        mine = [r for r in runs if r["config"] == name]
        for side in ("psjob", "base", "paddle"):
            rs = [r[side] for r in mine if side in r]
            if not rs:
                continue
            cpu = {role: [r["cpu_per_1m"][role] for r in rs if role in r["cpu_per_1m"]]
                   for role in ("trainer", "pserver")}
            cpu_text = "  ".join(f"{role} {_spread(v, lambda x: f'{x:.1f}')}" for role, v in cpu.items() if v)
            rss = "  ".join(f"{role} {max(r['rss'][role] for r in rs) / 2**20:.0f}"
                            for role in ("trainer", "pserver") if role in rs[0]["rss"])
            every = [r["auc_all"] for r in rs if r.get("auc_all") is not None]
            every = f" all trainers {_spread(every, lambda x: f'{x:.3f}')}" if len(every) == len(rs) else ""
            print(f"  {name:6s} {side:6s} ex/s {_spread([r['rate'] for r in rs], lambda x: f'{x:,.0f}')}  "
                  f"AUC {_spread([r['auc'] for r in rs], lambda x: f'{x:.3f}')}{every}  CPU-s/1M {cpu_text}  "
                  f"max peak RSS MiB {rss}")
        based = [r for r in mine if "base" in r]
        if based:
            cpu_ratio = [sum(r["psjob"]["cpu_per_1m"].values()) / sum(r["base"]["cpu_per_1m"].values())
                         for r in based]
            print(f"  {name:6s} psjob/base ex/s {_spread([r['psjob']['rate'] / r['base']['rate'] for r in based], lambda x: f'{x:.2f}')}"
                  f"  CPU-s per 1M (all roles) psjob/base {_spread(cpu_ratio, lambda x: f'{x:.2f}')}")
        pairs = [r for r in mine if "paddle" in r]
        if pairs:
            ratios = [r["psjob"]["rate"] / r["paddle"]["rate"] for r in pairs]
            gains = [r["psjob"]["auc"] - r["paddle"]["auc"] for r in pairs]
            print(f"  {name:6s} psjob/paddle ex/s {_spread(ratios, lambda x: f'{x:.2f}')}  "
                  f"AUC psjob-paddle {_spread(gains, lambda x: f'{x:+.3f}')}")
        for side in ("psjob", "base"):
            own = [r[side]["rate"] / single[r["rep"]][side]["rate"] for r in mine
                   if name != "single" and r["rep"] in single and side in r]
            if own:
                print(f"  {name:6s} {side} / {side} single process (same repetition) "
                      f"{_spread(own, lambda x: f'{x:.2f}')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
