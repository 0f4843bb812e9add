"""One local launcher: what `psjob launch` (a script) and `psjob run` (a job YAML) share.

The two commands differ only in how they learn the job — launch.py reads
fleetrun-style flags and runs one script in every process, run_job.py reads a
ParameterServerJob and runs its commands — and in the words they report with.
Everything else is here, so the two cannot drift apart:

- placement: pserver i on its own loopback address 127.0.0.(i+1), all on one
  shared free port (Fluid scripts join PADDLE_PSERVER_IPS with
  PADDLE_PSERVER_PORT); heter trainers on 127.0.0.1 (`place`);
- the per-run auth token file, the checkpoint root, the `--metrics-port` and
  `--progress-interval` checks;
- supervision (launcher.supervisor) with one grace for pservers after the
  last trainer, the progress lines (launcher.job_progress) and the summary;
- the outcome: success iff every trainer (and heter trainer) exited 0, one
  reason per way a run ends (`conclude`).
"""
from __future__ import annotations

import json
import os
import random
import secrets
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from psjob.foundation import roles
from psjob.launcher.job_progress import LogWatcher, exit_status, log_tail, summarize, summary_line
from psjob.launcher.supervisor import ProcessSpec, Supervisor, SupervisorOptions

# After every trainer completed, pservers exit on their own (they saw every trainer
# complete) or are stopped after this long; the job has succeeded either way.
PSERVER_EXIT_GRACE_S = 10.0
# A stopped job (a failure past its budget, its deadline, Ctrl-C): each process gets SIGTERM,
# then SIGKILL this long after (--stop-grace; Kubernetes' terminationGracePeriodSeconds).
STOP_GRACE_S = 10.0
PROGRESS_INTERVAL_S = 5.0  # default seconds between progress lines
# Exits that draw on no budget: pservers unreachable, a hold for a pserver resize.
NOT_FAILURES = (0, roles.PSERVER_UNREACHABLE_EXIT, roles.RESIZE_HOLD_EXIT)


def checkpoint_root(where: str) -> str:
    """The checkpoint root every process gets: a URI as given, a directory made absolute."""
    if not where or "://" in where:
        return where
    return os.path.abspath(where)


# Local listeners take ports from below the kernel's ephemeral range. A port that bind(0)
# hands out goes back to that range when the probe closes, and another process's bind(0) or
# connect() can take it before our pserver binds it; the pserver then fails on every restart.
# Below the range only other listeners compete, and the probe sees those.
LISTEN_PORTS_FLOOR = 10000


def listen_port_pool() -> range:
    """Ports a local job's listeners choose from: the ones between LISTEN_PORTS_FLOOR and the
    kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), or above that range."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    below = range(LISTEN_PORTS_FLOOR, low)
    above = range(high + 1, 65536)
    return below if len(below) >= len(above) else above


def free_ports(n: int, host: str = roles.LOCAL_HOST) -> list[int]:
    """n distinct TCP ports free on `host` now, outside the ephemeral range (held open
    together while chosen, so they differ)."""
    pool = listen_port_pool()
    if len(pool) < 1000:  # the ephemeral range covers nearly everything: let the kernel choose
        pool = range(0, 1)
    chooser = random.SystemRandom()
    socks: list[socket.socket] = []
    try:
        for _ in range(50 * n + 50):
            if len(socks) == n:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, chooser.choice(pool)))
            except OSError:  # taken (or chosen twice): draw again
                s.close()
                continue
            socks.append(s)
        if len(socks) < n:
            raise RuntimeError(f"no {n} free TCP ports on {host} in {pool.start}..{pool.stop - 1}")
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
        hosts = [roles.local_pserver_host(i) for i in range(n)]
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


def place(pservers: int, heter_trainers: int) -> tuple[list[str], list[str]]:
    """(pserver endpoints, heter trainer endpoints) of a local job, as both commands place them."""
    heter = [f"{roles.LOCAL_HOST}:{p}" for p in free_ports(heter_trainers)] if heter_trainers else []
    return loopback_endpoints(pservers), heter


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
                sock.bind((roles.LOCAL_HOST, port))
            except OSError:
                raise ValueError(f"--metrics-port {first}: port {port} is in use; the job's "
                                 f"{count} processes need {first}..{first + count - 1} free") from None


def check_options(metrics_port: int, processes: int, progress_interval: float,
                  stop_grace: float = STOP_GRACE_S) -> None:
    """The options both commands take; ValueError naming the problem."""
    if not progress_interval > 0:
        raise ValueError(f"--progress-interval must be > 0 seconds, got {progress_interval}")
    if not stop_grace >= 0:
        raise ValueError(f"--stop-grace must be >= 0 seconds, got {stop_grace}")
    if metrics_port:
        check_metrics_ports(metrics_port, processes)


def metrics_banner(first: int, trainer_offset: int) -> str:
    """Where to scrape, for the opening lines (`trainer_offset`: processes before trainer 0)."""
    return (f"[psjob] metrics: pserver 0 at http://127.0.0.1:{first}/metrics, worker 0 at "
            f"http://127.0.0.1:{first + trainer_offset}/metrics (one port per process)")


def write_token(directory: str) -> str:
    """A fresh per-run auth token in `directory`/auth-token (mode 600); its path."""
    path = os.path.join(os.path.abspath(directory), "auth-token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(32))
    return path


@dataclass(frozen=True)
class Deadline:
    """How a front names its time limit: `reason` (one word) and `setting` (what the user set)."""
    seconds: float
    reason: str
    setting: str


@dataclass
class LocalJob:
    """A local run as a front decided it: its processes and how to report on them."""
    name: str
    mode: str
    trainers: int
    checkpoint_dir: str
    specs: list[ProcessSpec]
    deadline: Deadline | None = None
    backoff_limit: int | None = None  # the worker retries a job allows (psjob run), None for a script
    name_of: Callable[[ProcessSpec], str] = staticmethod(lambda sp: sp.name)  # a process in the summary ("trainer.0")
    label_of: Callable[[ProcessSpec], str] = staticmethod(lambda sp: sp.name)  # a process in the reason ("worker 0")
    summary_extra: dict = field(default_factory=dict)


def run_local(job: LocalJob, *, progress_interval: float, on_event: Callable[[str, Callable[..., None]], None],
              summary_path: str = "", out: TextIO | None = None, opening: Sequence[str] = (),
              report_exits: bool = False, on_poll: Callable[[LogWatcher], Callable[[Supervisor], None]] | None = None,
              stop_grace_s: float = STOP_GRACE_S) -> int:
    """Run the job's processes to the end under one Supervisor, with progress lines and a
    summary line (and JSON at `summary_path`); the exit status of `conclude`.

    `on_event(message, note)` reports a supervisor event (`note` writes through the
    progress block); `opening` lines are printed first; `report_exits` adds one line per
    process (its exit status and starts) on stderr at the end; `on_poll(watcher)`, when
    given, makes the supervisor's per-poll hook (psjob run's scaling, launcher.scale).
    """
    out = out or sys.stdout
    started = time.monotonic()
    for line in opening:
        print(line, file=out, flush=True)
    workers = {sp.index: sp.log_path for sp in job.specs if sp.role == roles.TRAINER}
    watcher = LogWatcher(workers, progress_interval, started, out=out).start()
    supervisor = Supervisor(job.specs, SupervisorOptions(
        timeout_s=job.deadline.seconds if job.deadline else 0.0,
        pserver_exit_grace_s=PSERVER_EXIT_GRACE_S, stop_grace_s=stop_grace_s),
        on_event=lambda message: on_event(message, watcher.note),
        on_poll=on_poll(watcher) if on_poll else None)
    status = supervisor.run()
    watcher.stop()
    if report_exits:
        for spec in job.specs:
            print(f"[psjob] {spec.name}: exit {spec.exit_code} after {spec.starts} start(s), "
                  f"log {spec.log_path}", file=sys.stderr)
    return finish(job, status, watcher, time.monotonic() - started, summary_path, out)


def finish(job: LocalJob, status: int, watcher: LogWatcher, seconds: float, summary_path: str, out: TextIO) -> int:
    outcome = conclude(job, status)
    summary = summarize(job=job.name, mode=job.mode, outcome=outcome, seconds=seconds, watcher=watcher,
                        trainers=job.trainers, checkpoint_dir=job.checkpoint_dir, specs=job.specs,
                        name_of=job.name_of)
    summary.update(job.summary_extra)
    print(summary_line(summary), file=out, flush=True)
    if summary_path:
        with open(summary_path, "w") as f:
            json.dump(summary, f, indent=1)
    return outcome[0]


def conclude(job: LocalJob, status: int) -> tuple[int, str]:
    """(exit status, reason): success iff every trainer and heter trainer exited 0."""
    non_servers = [sp for sp in job.specs if sp.role != roles.PSERVER]
    if status == 124 and job.deadline:
        return 124, f"{job.deadline.reason}: the job ran longer than {job.deadline.setting}"
    if status in (130, 143):
        return status, "Interrupted: stopped by a signal"
    if non_servers and all(sp.succeeded for sp in non_servers):
        return 0, "Succeeded: every trainer completed"
    for sp in job.specs:  # a failure no restart could fix ended the run at once
        if sp.fatal:
            return status or 1, (f"{sp.fatal}: {job.label_of(sp)} failed (exit {exit_status(sp.history[-1])}), "
                                 f"not retried; see {_short(sp.log_path)}:\n{log_tail(sp.log_path)}")
    # The process that ended the run failed on its last start (the others were stopped).
    failed = [sp for sp in job.specs if sp.history and len(sp.history) == sp.starts and sp.history[-1] != 0]
    for sp in failed:
        name, code = job.label_of(sp), exit_status(sp.history[-1])
        where = f"see {_short(sp.log_path)}:\n{log_tail(sp.log_path)}"
        if sp.role == roles.PSERVER:
            return status or 1, (f"PserverFailed: {name} failed {len(sp.history)} time(s), last with "
                                 f"exit {code}; {where}")
        if job.backoff_limit is None:
            return status or 1, f"{name} failed (exit {code}); {where}"
        total = sum(1 for x in non_servers for c in x.history if c not in NOT_FAILURES)
        return status or 1, (
            f"BackoffLimitExceeded: {name} failed (exit {code}), worker failure {total} of this run; "
            f"runPolicy.backoffLimit={job.backoff_limit} allows {job.backoff_limit} retries; {where}")
    return status or 1, f"Failed: exit status {status}"


def _short(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path
