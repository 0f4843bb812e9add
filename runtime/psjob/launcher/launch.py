"""`psjob launch`: run a Fluid/Fleet training script as N pservers + M trainers.

    psjob launch --server_num 2 --worker_num 2 [--servers ip:port,...] [--workers ip:port,...]
    psjob launch --mode collective --worker_num 2 script.py        (collective: no pservers)
    psjob launch --server_num 0 --worker_num 2 script.py          (the same)
    psjob launch --gpus 0,1 script.py                              (collective, Paddle's form)
                 [--heter_worker_num K] [--log_dir DIR] [--mode sync] [--metrics-port P]
                 [--progress-interval S] [--summary PATH] [--stop-grace S] [--as-paddle]
                 script.py [args...]

Every process runs the same script with the role environment of
psjob.foundation.roles (PADDLE_TRAINING_ROLE, PADDLE_PSERVER_ENDPOINTS, ..., and Paddle
2.x's TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST, ...), as `fleetrun` does;
fleetrun's `--workers` list is taken for its length. Unless --servers names them, pserver i listens on
127.0.0.(i+1) at one free port shared by all, so scripts that join
PADDLE_PSERVER_IPS with PADDLE_PSERVER_PORT (as Fluid's do) find them. One log per process in --log_dir (default ./log): serverlog.N,
workerlog.N, heterlog.N. A per-run auth token is generated and passed by file.

While it runs, one progress line per trainer, read back from the trainers'
logs (launcher.job_progress, as `psjob run` shows them: a Fleet trainer
prints them, psjob.cluster.trainer.monitor), then a summary line (`--summary PATH`
also writes it as JSON). Every process serves /metrics on a free port it
logs; with --metrics-port P, pserver i on P+i, then heter trainers, then
trainer t, as `psjob run` numbers them (roles.role_environment).
With --as-paddle the script runs unmodified: in every process (and the
processes it starts, such as a dataset's pipe_command) `import paddle` and
`paddle.X.Y` are psjob (psjob.launcher.aspaddle puts its `paddle` alias first on
PYTHONPATH); each process says so on stderr when it imports paddle.
Placement, supervision, progress, summary and outcome are launcher.local's,
shared with `psjob run`; this module is the fleetrun-style front.
Collective (NCCL2-mode) jobs: with --server_num 0, --gpus or --nproc_per_node there are no
pservers; trainer t gets Paddle's collective environment — PADDLE_TRAINER_ID,
PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS (one free loopback port per trainer,
its ring port) and PADDLE_CURRENT_ENDPOINT — and the auth token (docs/user/collective.md).
Without any of them and with no --servers, one pserver is started, as before (fleetrun
would run collective there).
Exit status: 0 when every trainer exited 0 (pservers that do not exit on
their own afterwards are stopped, and one that dies then is not restarted:
training is complete); otherwise the status of the process that failed with
no restarts left.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from psjob import __version__
from psjob.foundation import roles
from psjob.foundation.role_env import process_environment
from psjob.launcher.aspaddle import SHIM_DIR
from psjob.launcher.aspaddle import environment as as_paddle_environment
from psjob.launcher.local import (  # noqa: F401
    PROGRESS_INTERVAL_S,
    STOP_GRACE_S,
    Deadline,
    LocalJob,
    check_metrics_ports,
    check_options,
    checkpoint_root,
    free_port_block,
    free_ports,
    loopback_endpoints,
    metrics_banner,
    place,
    run_local,
    write_token,
)
from psjob.launcher.supervisor import ProcessSpec


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="psjob launch", description=__doc__.split("\n\n")[0])
    p.add_argument("--server_num", type=int, default=None, help="number of pservers on 127.0.0.1")
    p.add_argument("--worker_num", type=int, default=None, help="number of trainers (default 1)")
    p.add_argument("--workers", default="",
                   help="fleetrun's comma-separated trainer ip:port list: psjob trainers listen on no "
                        "port, so only its length counts (the number of trainers)")
    p.add_argument("--gpus", "--selected_gpus", dest="gpus", default="",
                   help="Paddle's collective launch: one trainer per listed device (psjob's ring runs "
                        "on CPU; the ids only count the trainers)")
    p.add_argument("--nproc_per_node", type=int, default=None,
                   help="Paddle 2.x's collective launch: this many trainers, no pservers")
    p.add_argument("--heter_worker_num", type=int, default=0, help="number of heterogeneous trainers")
    p.add_argument("--servers", default="", help="comma-separated ip:port of the pservers")
    p.add_argument("--log_dir", default="log", help="one log file per process goes here")
    p.add_argument("--mode", default=roles.Mode.SYNC.value, choices=[m.value for m in roles.Mode],
                   help="how trainers share parameters: through pservers (sync, async, half_async, geo) "
                        "or collective (a ring all-reduce among the trainers, no pservers)")
    p.add_argument("--k_steps", type=int, default=0,
                   help="geo mode: local steps between exchanges (default "
                        f"{roles.DEFAULT_GEO_K_STEPS}, Paddle's and a job YAML's)")
    p.add_argument("--job_name", default="local")
    p.add_argument("--checkpoint_dir", "--checkpoint-uri", default="",
                   help="the checkpoint root of every process (PSJOB_CHECKPOINT_DIR): a directory or s3://BUCKET/PREFIX "
                        "(configured by the AWS_* variables of this environment)")
    p.add_argument("--checkpoint_incremental", "--checkpoint-incremental", action="store_true",
                   help="write delta checkpoints (the table rows changed since the previous one) "
                        "between bases (PSJOB_CHECKPOINT_INCREMENTAL)")
    p.add_argument("--checkpoint_base_every", "--checkpoint-base-every", type=int, default=10,
                   help="with --checkpoint_incremental: every N-th checkpoint is a base (default 10)")
    p.add_argument("--pserver_restarts", type=int, default=0,
                   help="restart a failed pserver this many times (it recovers from the newest checkpoint)")
    p.add_argument("--timeout", type=float, default=0.0, help="stop everything after this many seconds")
    p.add_argument("--no_auth", action="store_true", help="do not authenticate RPCs (not recommended)")
    p.add_argument("--metrics-port", "--metrics_port", dest="metrics_port", type=int, default=0, metavar="P",
                   help="serve /metrics of pserver i on 127.0.0.1:P+i, then heter trainers, then "
                        "trainers (default: every process picks a free port and logs it)")
    p.add_argument("--progress-interval", "--progress_interval", dest="progress_interval", type=float,
                   default=PROGRESS_INTERVAL_S, metavar="S", help="seconds between progress lines")
    p.add_argument("--summary", default="", metavar="PATH", help="write the run's summary here as JSON")
    p.add_argument("--stop-grace", "--stop_grace", dest="stop_grace", type=float, default=STOP_GRACE_S,
                   metavar="S", help="when the job is stopped (a failure with no restarts left, --timeout, "
                   "Ctrl-C), seconds each process gets to exit after SIGTERM before SIGKILL")
    p.add_argument("--as-paddle", "--as_paddle", dest="as_paddle", action="store_true",
                   help="run an unmodified Paddle script: `import paddle` (and every paddle.X.Y) gives "
                        "psjob in the launched processes and the processes they start")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def is_collective(args: argparse.Namespace) -> bool:
    """No pservers: --mode collective, --server_num 0, --gpus or --nproc_per_node (Paddle's collective launch)."""
    return (args.mode == roles.Mode.COLLECTIVE or args.server_num == 0 or bool(args.gpus)
            or args.nproc_per_node is not None)


def plan_collective(args: argparse.Namespace) -> LocalJob:
    if args.servers or args.heter_worker_num or (args.server_num or 0) > 0:
        raise SystemExit("psjob launch: a collective job (--mode collective, --server_num 0, --gpus, "
                         "--nproc_per_node) has no pservers or heter trainers: drop "
                         "--servers/--server_num/--heter_worker_num")
    if args.mode not in (roles.Mode.COLLECTIVE, roles.Mode.SYNC):  # sync: the flag's default
        raise SystemExit(f"psjob launch: --mode {args.mode.value} needs pservers, but this job has none "
                         "(--server_num 0, --gpus or --nproc_per_node): use --mode collective or give pservers")
    counts = {n for n in (args.worker_num, args.nproc_per_node,
                          len([g for g in args.gpus.split(",") if g.strip()]) or None) if n is not None}
    if len(counts) > 1:
        raise SystemExit(f"psjob launch: --worker_num/--nproc_per_node/--gpus disagree on the number of "
                         f"trainers ({sorted(counts)})")
    n = counts.pop() if counts else 1
    if n < 1:
        raise SystemExit("psjob launch: a collective job needs at least one trainer")
    try:
        check_options(args.metrics_port, n, args.progress_interval, args.stop_grace)
    except ValueError as exc:
        raise SystemExit(f"psjob launch: {exc}") from None
    os.makedirs(args.log_dir, exist_ok=True)
    token_file = "" if args.no_auth else write_token(args.log_dir)
    ring = [f"{roles.LOCAL_HOST}:{port}" for port in free_ports(n)]
    argv = [sys.executable, "-u", args.script, *args.script_args]
    extra = as_paddle_environment(process_environment()) if args.as_paddle else {}
    specs = []
    for t in range(n):
        env = roles.collective_launch_environment(args.job_name, t, ring, token_file,
                                                  args.metrics_port + t if args.metrics_port else None)
        specs.append(ProcessSpec(roles.TRAINER, t, argv, {**env, **extra},
                                 os.path.join(args.log_dir, f"workerlog.{t}"), 0))
    return LocalJob(name=args.job_name, mode=roles.Mode.COLLECTIVE, trainers=n, checkpoint_dir="", specs=specs,
                    deadline=Deadline(args.timeout, "Timeout", f"--timeout {args.timeout:g}s")
                    if args.timeout else None,
                    summary_extra={"log_dir": os.path.abspath(args.log_dir)})


def plan(args: argparse.Namespace) -> LocalJob:
    args.mode = roles.Mode(args.mode)  # the flag's name, a Mode from here on
    if is_collective(args):
        return plan_collective(args)
    if args.servers:
        endpoints = [e.strip() for e in args.servers.split(",") if e.strip()]
        if args.server_num is not None and args.server_num != len(endpoints):
            raise SystemExit(f"psjob launch: --server_num {args.server_num} but --servers lists "
                             f"{len(endpoints)} endpoints")
    else:
        if args.server_num is not None and args.server_num < 1:
            raise SystemExit("psjob launch: --server_num must be at least 1")
    if args.workers:
        listed = len([e for e in args.workers.split(",") if e.strip()])
        if args.worker_num is not None and args.worker_num != listed:
            raise SystemExit(f"psjob launch: --worker_num {args.worker_num} but --workers lists {listed} endpoints")
        args.worker_num = listed
    elif args.worker_num is None:
        args.worker_num = 1
    if args.worker_num < 1:
        raise SystemExit("psjob launch: --worker_num must be at least 1")
    servers = len(endpoints) if args.servers else (args.server_num or 1)
    try:
        check_options(args.metrics_port, servers + args.heter_worker_num + args.worker_num,
                      args.progress_interval, args.stop_grace)
    except ValueError as exc:
        raise SystemExit(f"psjob launch: {exc}") from None
    placed, heter = place(0 if args.servers else servers, args.heter_worker_num)
    endpoints = endpoints if args.servers else placed
    os.makedirs(args.log_dir, exist_ok=True)
    token_file = "" if args.no_auth else write_token(args.log_dir)
    topo = roles.JobTopology(
        job_name=args.job_name, namespace="local", pserver_endpoints=tuple(endpoints),
        trainers=args.worker_num, heter_trainers=len(heter), heter_endpoints=tuple(heter),
        mode=args.mode, k_steps=args.k_steps or (roles.DEFAULT_GEO_K_STEPS if args.mode is roles.Mode.GEO else 0),
        checkpoint_dir=checkpoint_root(args.checkpoint_dir),
        checkpoint_incremental=args.checkpoint_incremental, checkpoint_base_every=args.checkpoint_base_every,
        metrics_port=args.metrics_port, metrics_port_per_process=True, auth_token_file=token_file,
        trainer_host=roles.LOCAL_HOST)
    argv = [sys.executable, "-u", args.script, *args.script_args]
    # --as-paddle: the `paddle` alias first on PYTHONPATH (after it, this environment's entries).
    extra = as_paddle_environment(process_environment()) if args.as_paddle else {}
    specs = []
    for role, count, log in ((roles.PSERVER, len(endpoints), "serverlog"),
                             (roles.HETER_TRAINER, len(heter), "heterlog"),
                             (roles.TRAINER, args.worker_num, "workerlog")):
        for i in range(count):
            specs.append(ProcessSpec(role, i, argv, {**roles.role_environment(topo, role, i), **extra},
                                     os.path.join(args.log_dir, f"{log}.{i}"),
                                     args.pserver_restarts if role == roles.PSERVER else 0))
    return LocalJob(name=args.job_name, mode=args.mode, trainers=args.worker_num,
                    checkpoint_dir=topo.checkpoint_dir, specs=specs,
                    deadline=Deadline(args.timeout, "Timeout", f"--timeout {args.timeout:g}s")
                    if args.timeout else None,
                    summary_extra={"log_dir": os.path.abspath(args.log_dir)})


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not os.path.exists(args.script):
        print(f"psjob launch: script {args.script!r} not found", file=sys.stderr)
        return 2
    job = plan(args)
    pservers = sum(sp.role == roles.PSERVER for sp in job.specs)
    heter = f", {args.heter_worker_num} heter trainer(s)" if args.heter_worker_num else ""
    mode = "collective (ring all-reduce)" if job.mode == roles.Mode.COLLECTIVE else f"{args.mode} mode"
    opening = [f"[psjob] {args.job_name}: {pservers} pserver(s){heter} and {job.trainers} trainer(s), "
               f"{mode}, on this machine; logs in {args.log_dir}"]
    if args.metrics_port:
        opening.append(metrics_banner(args.metrics_port, len(job.specs) - job.trainers))
    if args.as_paddle:
        opening.append(f"[psjob] --as-paddle: `import paddle` is psjob {__version__} in every process "
                       f"(PYTHONPATH starts with {SHIM_DIR})")
    # Events stay on stderr (as before progress lines existed); the watcher keeps its block intact.
    return run_local(job, progress_interval=args.progress_interval, summary_path=args.summary,
                   opening=opening, report_exits=True, stop_grace_s=args.stop_grace,
                   on_event=lambda message, note: note(f"[psjob] {message}", out=sys.stderr))
