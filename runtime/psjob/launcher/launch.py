"""`psjob launch`: run a Fluid/Fleet training script as N pservers + M trainers.

    psjob launch --server_num 2 --worker_num 2 [--servers ip:port,...] [--workers ip:port,...]
                 [--heter_worker_num K] [--log_dir DIR] [--mode sync] [--metrics-port P]
                 [--progress-interval S] [--summary PATH] script.py [args...]

Every process runs the same script with the role environment of
psjob.roles (PADDLE_TRAINING_ROLE, PADDLE_PSERVER_ENDPOINTS, ..., and Paddle
2.x's TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST, ...), as `fleetrun` does;
fleetrun's `--workers` list is taken for its length. Unless --servers names them, pserver i listens on
127.0.0.(i+1) at one free port shared by all, so scripts that join
PADDLE_PSERVER_IPS with PADDLE_PSERVER_PORT (as Fluid's do) find them. One log per process in --log_dir (default ./log): serverlog.N,
workerlog.N, heterlog.N. A per-run auth token is generated and passed by file.

While it runs, one progress line per trainer, read back from the trainers'
logs (launcher.job_progress, as `psjob run` shows them: a Fleet trainer
prints them, psjob.fleet.monitor), then a summary line (`--summary PATH`
also writes it as JSON). Every process serves /metrics on a free port it
logs; with --metrics-port P, pserver i on P+i, then heter trainers, then
trainer t, as `psjob run` numbers them (roles.role_environment).
Exit status: 0 when every trainer exited 0 (pservers that do not exit on
their own afterwards are stopped, and one that dies then is not restarted:
training is complete); otherwise the status of the process that failed with
no restarts left.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys
import time

from .. import roles
from .supervisor import ProcessSpec, Supervisor, SupervisorOptions


def checkpoint_root(where: str) -> str:
    """The checkpoint root every process gets: a URI as given, a directory made absolute."""
    if not where or "://" in where:
        return where
    return os.path.abspath(where)


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct free TCP ports (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port_block(count: int, tries: int = 50) -> int | None:
    """The first of `count` consecutive free ports on 127.0.0.1 (what `--metrics-port`
    numbering needs), or None."""
    for _ in range(tries):
        first = free_ports(1)[0]
        try:
            check_metrics_ports(first, count)
            return first
        except ValueError:  # one of the next ports is taken (or beyond 65535): try another
            continue
    return None


def loopback_endpoints(n: int) -> list[str]:
    """n pserver endpoints on distinct loopback addresses sharing one free port.

    Fluid scripts build endpoints as PADDLE_PSERVER_IPS × PADDLE_PSERVER_PORT
    (one port for all pservers, as on a real cluster); giving each local
    pserver its own address in 127.0.0.0/8 keeps that contract on one host.
    """
    for _ in range(50):
        port = free_ports(1)[0]
        hosts = [f"127.0.0.{i + 1}" for i in range(n)]
        socks = []
        try:
            for h in hosts:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind((h, port))
            return [f"{h}:{port}" for h in hosts]
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no port free on all of 127.0.0.1..127.0.0.{n}")


def check_metrics_ports(first: int, count: int) -> None:
    """`--metrics-port first` for `count` processes: ports first..first+count-1 must be free
    (checked before anything starts); ValueError naming the problem otherwise."""
    if first < 1024:
        raise ValueError(f"--metrics-port {first}: use a port from 1024 up (0: any free port)")
    if first + count - 1 > 65535:
        raise ValueError(f"--metrics-port {first}: {count} processes need ports up to "
                         f"{first + count - 1}, beyond 65535")
    for port in range(first, first + count):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                raise ValueError(f"--metrics-port {first}: port {port} is in use; the job's "
                                 f"{count} processes need {first}..{first + count - 1} free") from None


def metrics_banner(first: int, trainer_offset: int) -> str:
    """Where to scrape, for the opening lines (`trainer_offset`: processes before trainer 0)."""
    return (f"[psjob] metrics: pserver 0 at http://127.0.0.1:{first}/metrics, worker 0 at "
            f"http://127.0.0.1:{first + trainer_offset}/metrics (one port per process)")


def write_token(log_dir: str) -> str:
    path = os.path.join(os.path.abspath(log_dir), "auth-token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(32))
    return path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="psjob launch", description=__doc__.split("\n\n")[0])
    p.add_argument("--server_num", type=int, default=None, help="number of pservers on 127.0.0.1")
    p.add_argument("--worker_num", type=int, default=None, help="number of trainers (default 1)")
    p.add_argument("--workers", default="",
                   help="fleetrun's comma-separated trainer ip:port list: psjob trainers listen on no "
                        "port, so only its length counts (the number of trainers)")
    p.add_argument("--heter_worker_num", type=int, default=0, help="number of heterogeneous trainers")
    p.add_argument("--servers", default="", help="comma-separated ip:port of the pservers")
    p.add_argument("--log_dir", default="log", help="one log file per process goes here")
    p.add_argument("--mode", default="sync", choices=roles.MODES)
    p.add_argument("--k_steps", type=int, default=0, help="geo mode: local steps between exchanges")
    p.add_argument("--job_name", default="local")
    p.add_argument("--checkpoint_dir", "--checkpoint-uri", default="",
                   help="PSJOB_CHECKPOINT_DIR for every process: a directory or s3://BUCKET/PREFIX "
                        "(configured by the AWS_* variables of this environment)")
    p.add_argument("--pserver_restarts", type=int, default=0,
                   help="restart a failed pserver this many times (it recovers from the newest checkpoint)")
    p.add_argument("--timeout", type=float, default=0.0, help="stop everything after this many seconds")
    p.add_argument("--no_auth", action="store_true", help="do not authenticate RPCs (not recommended)")
    p.add_argument("--metrics-port", "--metrics_port", dest="metrics_port", type=int, default=0, metavar="P",
                   help="serve /metrics of pserver i on 127.0.0.1:P+i, then heter trainers, then "
                        "trainers (default: every process picks a free port and logs it)")
    p.add_argument("--progress-interval", "--progress_interval", dest="progress_interval", type=float,
                   default=5.0, metavar="S", help="seconds between progress lines")
    p.add_argument("--summary", default="", metavar="PATH", help="write the run's summary here as JSON")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def plan(args) -> list[ProcessSpec]:
    if args.servers:
        endpoints = [e.strip() for e in args.servers.split(",") if e.strip()]
        if args.server_num is not None and args.server_num != len(endpoints):
            raise SystemExit(f"psjob launch: --server_num {args.server_num} but --servers lists "
                             f"{len(endpoints)} endpoints")
    else:
        n = 1 if args.server_num is None else args.server_num
        if n < 1:
            raise SystemExit("psjob launch: --server_num must be at least 1")
        endpoints = loopback_endpoints(n)
    if args.workers:
        listed = len([e for e in args.workers.split(",") if e.strip()])
        if args.worker_num is not None and args.worker_num != listed:
            raise SystemExit(f"psjob launch: --worker_num {args.worker_num} but --workers lists {listed} endpoints")
        args.worker_num = listed
    elif args.worker_num is None:
        args.worker_num = 1
    if args.worker_num < 1:
        raise SystemExit("psjob launch: --worker_num must be at least 1")
    if not args.progress_interval > 0:
        raise SystemExit(f"psjob launch: --progress-interval must be > 0 seconds, got {args.progress_interval}")
    if args.metrics_port:
        try:
            check_metrics_ports(args.metrics_port, len(endpoints) + args.heter_worker_num + args.worker_num)
        except ValueError as exc:
            raise SystemExit(f"psjob launch: {exc}") from None
    os.makedirs(args.log_dir, exist_ok=True)
    token_file = "" if args.no_auth else write_token(args.log_dir)
    heter = [f"127.0.0.1:{p}" for p in free_ports(args.heter_worker_num)] if args.heter_worker_num else []
    topo = roles.JobTopology(
        job_name=args.job_name, namespace="local", pserver_endpoints=tuple(endpoints),
        trainers=args.worker_num, heter_trainers=len(heter), heter_endpoints=tuple(heter),
        mode=args.mode, k_steps=args.k_steps or (1 if args.mode == "geo" else 0),
        checkpoint_dir=checkpoint_root(args.checkpoint_dir),
        metrics_port=args.metrics_port, metrics_port_per_process=True, auth_token_file=token_file,
        trainer_host="127.0.0.1")
    argv = [sys.executable, "-u", args.script, *args.script_args]
    specs = []
    for i in range(len(endpoints)):
        specs.append(ProcessSpec(roles.PSERVER, i, argv, roles.role_environment(topo, roles.PSERVER, i),
                                 os.path.join(args.log_dir, f"serverlog.{i}"), args.pserver_restarts))
    for i in range(len(heter)):
        specs.append(ProcessSpec(roles.HETER_TRAINER, i, argv,
                                 roles.role_environment(topo, roles.HETER_TRAINER, i),
                                 os.path.join(args.log_dir, f"heterlog.{i}")))
    for i in range(args.worker_num):
        specs.append(ProcessSpec(roles.TRAINER, i, argv, roles.role_environment(topo, roles.TRAINER, i),
                                 os.path.join(args.log_dir, f"workerlog.{i}")))
    return specs


def main(argv=None) -> int:
    from .job_progress import LogWatcher, log_tail, summarize, summary_line
    args = build_parser().parse_args(argv)
    if not os.path.exists(args.script):
        print(f"psjob launch: script {args.script!r} not found", file=sys.stderr)
        return 2
    specs = plan(args)
    started = time.monotonic()
    workers = {sp.index: sp.log_path for sp in specs if sp.role == roles.TRAINER}
    pservers = sum(sp.role == roles.PSERVER for sp in specs)
    heter = f", {args.heter_worker_num} heter trainer(s)" if args.heter_worker_num else ""
    print(f"[psjob] {args.job_name}: {pservers} pserver(s){heter} and {len(workers)} trainer(s), "
          f"{args.mode} mode, on this machine; logs in {args.log_dir}", flush=True)
    if args.metrics_port:
        print(metrics_banner(args.metrics_port, len(specs) - len(workers)), flush=True)
    watcher = LogWatcher(workers, args.progress_interval, started).start()
    # Events stay on stderr (as before progress lines existed); the watcher keeps its block intact.
    sup = Supervisor(specs, SupervisorOptions(timeout_s=args.timeout),
                     on_event=lambda message: watcher.note(f"[psjob] {message}", out=sys.stderr))
    status = sup.run()
    watcher.stop()
    for spec in specs:
        print(f"[psjob] {spec.name}: exit {spec.exit_code} after {spec.starts} start(s), log {spec.log_path}",
              file=sys.stderr)
    summary = summarize(job=args.job_name, mode=args.mode, outcome=_outcome(args, specs, status, log_tail),
                        seconds=time.monotonic() - started, watcher=watcher, trainers=args.worker_num,
                        checkpoint_dir=checkpoint_root(args.checkpoint_dir),
                        specs=specs, name_of=lambda sp: sp.name)
    summary["log_dir"] = os.path.abspath(args.log_dir)
    print(summary_line(summary), flush=True)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f, indent=1)
    return status


def _outcome(args, specs, status: int, tail) -> tuple[int, str]:
    if status == 0:
        return 0, "Succeeded: every trainer completed"
    if status == 124 and args.timeout:
        return 124, f"Timeout: the job ran longer than --timeout {args.timeout:g}s"
    if status in (130, 143):
        return status, "Interrupted: stopped by a signal"
    for sp in specs:  # the process that ended the run failed on its last start
        if sp.history and len(sp.history) == sp.starts and sp.history[-1] != 0:
            return status, f"{sp.name} failed (exit {status}); see {sp.log_path}:\n{tail(sp.log_path)}"
    return status, f"Failed: exit status {status}"
