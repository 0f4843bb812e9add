"""Supervises the processes of a local job, the way Kubernetes would.

Each process is described by a `ProcessSpec` (role, index, command,
environment, log file, restart policy). The supervisor starts them all, then
polls:

- a process that exits 0 is done (trainers finish; pservers exit 0 once every
  trainer has completed);
- a process that fails is restarted with the same index and environment while
  its policy allows (`restarts_left`, or a `RestartBudget` shared by several
  processes, as a Job's backoffLimit counts the failures of all its pods), as
  a StatefulSet recreates a pserver pod — it recovers from the newest
  checkpoint itself;
- a trainer with a shared budget (`psjob run`: runPolicy.backoffLimit) that
  exits `roles.PSERVER_UNREACHABLE_EXIT` (its pservers stayed unreachable) is
  restarted without drawing on it, as the worker Job's podFailurePolicy
  ignores that exit code (the run's deadline bounds it, as
  activeDeadlineSeconds does on Kubernetes);
- a collective trainer that exits `roles.PEER_LOST_EXIT` (its ring lost a peer during
  an all-reduce) is restarted without drawing on the budget either: the trainer that
  died is the failure, and counts; the survivors must start again to re-form the ring;
- trainer 0 that exits `roles.RESIZE_HOLD_EXIT` stopped at the checkpoint of a pserver
  resize (launcher.scale): it is neither a failure nor restarted here — the resize
  starts every process again (`stop_for_resize`, then `add`);
- a failure that a restart cannot fix stops the whole group at once, its reason
  kept in `ProcessSpec.fatal`: exit status 2 (a usage or configuration problem:
  entrypoints.CONFIG_EXIT, argparse's status), and any failure while the file
  system holding its log is full (or its log ends on ENOSPC) — retrying those
  only burns the restart budget in seconds;
- a failure with no restarts left stops the whole group (SIGTERM, then
  SIGKILL after a grace period) and the group's exit status is the worst one;
- a trainer that dies after the pservers recorded its completion has done its
  part: it is not restarted, and counts as succeeded (`ProcessSpec.completed`).
  It says so in its log the moment the pservers acknowledged it
  (COMPLETED_LINE, printed by the trainer's stop_worker / exe.close()); and once
  every pserver has exited 0 — they exit only when every trainer completed —
  any trainer still running is a restart of one that had completed (killed
  after its completion, before its exit): it is stopped, not waited for;
- once every trainer (and heter trainer) has exited 0 the job has succeeded,
  whatever the pservers do next — as on Kubernetes, where the job is
  Succeeded when its worker Job completes. Pservers get `pserver_exit_grace_s`
  to exit on their own, then are stopped; a pserver that dies in that window
  is not restarted: there is no trainer left to serve, and a restarted one
  could not learn which trainers completed (that is kept only in the
  pservers' memory, docs/user/local-runs.md). Either is reported, and the exit
  status stays 0.

Ctrl-C (SIGINT/SIGTERM to the supervisor) stops everything and exits 130/143.
Children run in their own sessions so a stop reaches their whole process trees.
"""
from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import cast

from psjob.foundation import roles
from psjob.foundation.role_env import process_environment

PSERVER, TRAINER, HETER_TRAINER = "PSERVER", "TRAINER", "HETER_TRAINER"
CONFIG_EXIT = 2  # entrypoints.CONFIG_EXIT, and what argparse exits with
# What a trainer prints once every pserver acknowledged its completion
# (psjob.cluster.trainer.client_service.announce_completion).
COMPLETED_LINE = re.compile(r"^\[psjob\] trainer \d+ completed: every pserver recorded it", re.M)
DISK_FULL_BYTES = 1 << 20  # a file system with less free space than this counts as full
ENOSPC_TEXT = "No space left on device"


@dataclass
class RestartBudget:
    """Restarts shared by several ProcessSpecs; `left` goes down on each restart."""
    left: int


@dataclass
class ProcessSpec:
    role: str
    index: int
    argv: list[str]
    env: dict[str, str]
    log_path: str
    restarts_left: int = 0
    budget: RestartBudget | None = None  # when set, restarts draw on it, not restarts_left
    # Filled while running.
    proc: subprocess.Popen | None = None
    exit_code: int | None = None
    starts: int = 0
    history: list[int] = field(default_factory=list)
    log_offset: int = 0     # the log's size at the latest start: what that start wrote follows
    completed: bool = False  # a trainer whose completion the pservers recorded (it may have died after)
    fatal: str = ""          # why its failure stopped the job without a restart

    @property
    def name(self) -> str:
        return f"{self.role.lower()}.{self.index}"

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 or self.completed

    def log_since_start(self, limit: int = 64 << 10) -> str:
        """The end (at most `limit` bytes) of what the latest start wrote to the log."""
        try:
            with open(self.log_path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(self.log_offset, size - limit))
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""


@dataclass(frozen=True)
class SupervisorOptions:
    poll_interval_s: float = 0.1
    stop_grace_s: float = 10.0
    pserver_exit_grace_s: float = 30.0
    timeout_s: float = 0.0  # 0 = no limit


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL if the supervisor dies (Linux), so a
    killed `psjob run`/`psjob launch` never leaves pservers serving on their own."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the supervisor's own stop_all still applies


class JobFailed(RuntimeError):
    pass


def _exit_status(code: int) -> int:
    return 128 - code if code < 0 else code  # -9 (killed by SIGKILL) → 137


class Supervisor:
    def __init__(self, specs: list[ProcessSpec], options: SupervisorOptions = SupervisorOptions(),
                 on_event: Callable[[str], None] | None = None,
                 on_poll: Callable[[Supervisor], None] | None = None) -> None:
        self.specs = specs
        self.options = options
        self.on_event = on_event or (lambda msg: print(f"[psjob] {msg}", file=sys.stderr, flush=True))
        # Called with the supervisor once per poll while the job runs (psjob run's scaling).
        self.on_poll = on_poll or (lambda supervisor: None)
        self._stopping = False
        self._signal_status = 0

    def _start(self, spec: ProcessSpec) -> None:
        os.makedirs(os.path.dirname(spec.log_path) or ".", exist_ok=True)
        log = open(spec.log_path, "ab", buffering=0)
        spec.log_offset = log.seek(0, os.SEEK_END)
        env = dict(process_environment())
        env.update(spec.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        threads = str(roles.math_threads(len(self.specs)))
        for var in roles.MATH_THREAD_ENV:  # every process of the job shares this host's cores
            env.setdefault(var, threads)
        spec.proc = subprocess.Popen(spec.argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        log.close()
        spec.starts += 1
        spec.exit_code = None
        spec.completed, spec.fatal = False, ""  # a new start has done nothing yet
        self.on_event(f"started {spec.name} (pid {spec.proc.pid}, log {spec.log_path})")

    def add(self, spec: ProcessSpec) -> None:
        """Start one more process while the job runs (a trainer added to an elastic job),
        or start again one that exited (a trainer scaled away, then wanted again)."""
        if spec not in self.specs:
            self.specs.append(spec)
        self._start(spec)

    def retire(self, spec: ProcessSpec) -> None:
        """SIGTERM one process (a trainer scaled away: it finishes its step, leaves, exits 0)."""
        if spec.proc is not None and spec.proc.poll() is None:
            self.on_event(f"stopping {spec.name} (scaled away)")
            try:
                os.killpg(spec.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop_for_resize(self, specs: list[ProcessSpec]) -> None:
        """SIGKILL these processes and wait for them (a pserver resize replaces them: the
        checkpoint it restores is the state to keep, nothing after it). Each is recorded as
        stopped with roles.RESIZE_HOLD_EXIT — not a failure — until `add` starts it again."""
        running = [s for s in specs if s.proc is not None and s.exit_code is None]
        for spec in running:
            try:
                os.killpg(cast(subprocess.Popen, spec.proc).pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for spec in running:
            cast(subprocess.Popen, spec.proc).wait()
            spec.exit_code = roles.RESIZE_HOLD_EXIT
            spec.history.append(roles.RESIZE_HOLD_EXIT)

    def _signal_all(self, sig: int) -> None:
        for spec in self.specs:
            if spec.proc is not None and spec.proc.poll() is None:
                try:
                    os.killpg(spec.proc.pid, sig)
                except ProcessLookupError:
                    pass

    def stop_all(self) -> None:
        self._signal_all(signal.SIGTERM)
        t_end = time.monotonic() + self.options.stop_grace_s
        while time.monotonic() < t_end and any(s.proc and s.proc.poll() is None for s in self.specs):
            time.sleep(0.05)
        self._signal_all(signal.SIGKILL)
        for spec in self.specs:
            if spec.proc is not None:
                spec.proc.wait()
                if spec.exit_code is None:
                    spec.exit_code = spec.proc.returncode

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._stopping = True
        self._signal_status = 128 + signum

    def run(self) -> int:
        """Run to completion; returns the group's exit status (0 = success)."""
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._run()
        finally:
            # Whatever path ended the run, no child outlives it.
            if any(sp.proc is not None and sp.proc.poll() is None for sp in self.specs):
                self.stop_all()
            for s, h in old.items():
                signal.signal(s, h)

    @staticmethod
    def _take_restart(spec: ProcessSpec) -> bool:
        if spec.budget is not None:
            if spec.budget.left > 0:
                spec.budget.left -= 1
                return True
            return False
        if spec.restarts_left > 0:
            spec.restarts_left -= 1
            return True
        return False

    def _run(self) -> int:
        for spec in self.specs:
            self._start(spec)
        t_start = time.monotonic()
        trainers_done_at = None
        while True:
            if trainers_done_at is None:
                self.on_poll(self)
            workers = [s for s in self.specs if s.role != PSERVER]
            servers = [s for s in self.specs if s.role == PSERVER]
            if self._stopping:
                self.on_event("interrupted: stopping every process")
                self.stop_all()
                return self._signal_status
            if self.options.timeout_s and time.monotonic() - t_start > self.options.timeout_s:
                self.on_event(f"job exceeded {self.options.timeout_s:.0f}s: stopping every process")
                self.stop_all()
                return 124
            # Trainers first: a pserver that dies in the same poll as the last trainer
            # completes must see the job as done (and not be restarted).
            for spec in workers + servers:
                if spec.proc is None or spec.exit_code is not None:
                    continue
                code = spec.proc.poll()
                if code is None:
                    continue
                spec.exit_code = code
                spec.history.append(code)
                if code == 0 or self._completed_before(spec, code, servers):
                    if code == 0:
                        self.on_event(f"{spec.name} exited 0")
                    if trainers_done_at is None and workers and all(s.succeeded for s in workers):
                        trainers_done_at = time.monotonic()
                    continue
                if trainers_done_at is not None:
                    # Only pservers can still be running: training is complete.
                    self.on_event(f"{spec.name} exited with status {_exit_status(code)} after every trainer "
                                  "completed; not restarted: training is complete (see "
                                  f"{spec.log_path})")
                    continue
                if code == roles.RESIZE_HOLD_EXIT and spec.role == TRAINER:
                    self.on_event(f"{spec.name} holds at its checkpoint for a pserver resize")
                    continue
                spec.fatal = self._fatal(spec, code)
                if spec.fatal:
                    self.on_event(f"{spec.name} failed with status {_exit_status(code)}: {spec.fatal}; "
                                  f"not restarted: stopping the job (see {spec.log_path})")
                    self.stop_all()
                    return _exit_status(code) or 1
                if code == roles.PSERVER_UNREACHABLE_EXIT and spec.role != PSERVER \
                        and spec.budget is not None:
                    self.on_event(f"{spec.name} exited {code}: its pservers were unreachable; "
                                  "restarting it (not counted against runPolicy.backoffLimit)")
                    self._start(spec)
                    continue
                if code == roles.PEER_LOST_EXIT and spec.role == TRAINER and spec.budget is not None:
                    self.on_event(f"{spec.name} exited {code}: its all-reduce ring lost a peer; "
                                  "restarting it to re-form the ring (not counted against "
                                  "runPolicy.backoffLimit)")
                    self._start(spec)
                    continue
                if self._take_restart(spec):
                    left = spec.budget.left if spec.budget is not None else spec.restarts_left
                    self.on_event(f"{spec.name} failed with status {_exit_status(code)}; restarting it "
                                  f"({left} restarts left)")
                    self._start(spec)
                    continue
                self.on_event(f"{spec.name} failed with status {_exit_status(code)} and has no restarts "
                              f"left: stopping the job (see {spec.log_path})")
                self.stop_all()
                return _exit_status(code) or 1
            if trainers_done_at is None and self._stop_restarts_of_completed(workers, servers):
                trainers_done_at = time.monotonic()
            if trainers_done_at is not None:
                if all(s.exit_code is not None for s in servers):
                    return 0
                if time.monotonic() - trainers_done_at > self.options.pserver_exit_grace_s:
                    lingering = [s.name for s in servers if s.exit_code is None]
                    self.on_event(f"{', '.join(lingering)} did not exit within "
                                  f"{self.options.pserver_exit_grace_s:.0f}s after every trainer completed: "
                                  "stopping them (training is complete)")
                    self.stop_all()
                    return 0
            time.sleep(self.options.poll_interval_s)

    @staticmethod
    def _every_pserver_done(servers: list[ProcessSpec]) -> bool:
        """Every pserver exited 0 by itself: it does so only once every trainer completed."""
        return bool(servers) and all(s.exit_code == 0 for s in servers)

    def _completed_before(self, spec: ProcessSpec, code: int, servers: list[ProcessSpec]) -> bool:
        """A trainer that failed after the pservers recorded its completion: done, not restarted."""
        if spec.role != TRAINER:
            return False
        if COMPLETED_LINE.search(spec.log_since_start()):
            why = "after the pservers recorded its completion"
        elif self._every_pserver_done(servers):
            why = "after every pserver recorded every trainer's completion and exited"
        else:
            return False
        spec.completed = True
        self.on_event(f"{spec.name} exited with status {_exit_status(code)} {why}; not restarted: "
                      "its part of the job is done")
        return True

    def _stop_restarts_of_completed(self, workers: list[ProcessSpec], servers: list[ProcessSpec]) -> bool:
        """Once every pserver exited 0, a trainer still running was restarted after it had
        completed (it would wait for pservers that are gone): stop it, it counts as done.
        True when that leaves every trainer done."""
        if not self._every_pserver_done(servers):
            return False
        # A restarted trainer that completed in this start says so in its log: it is left to
        # finish what it does after its completion (a script may write its outputs then).
        stale = [s for s in workers if s.role == TRAINER and s.exit_code is None and s.starts > 1
                 and s.proc is not None and not COMPLETED_LINE.search(s.log_since_start())]
        if not stale:
            return False
        for spec in stale:
            self.on_event(f"{spec.name} was restarted after it had completed, and every pserver has "
                          "recorded every trainer's completion and exited: stopping it (its part of the "
                          "job is done)")
            self._stop_one(spec)
            spec.completed = True
        return all(s.succeeded for s in workers)

    def _stop_one(self, spec: ProcessSpec) -> None:
        """SIGTERM, then SIGKILL after the stop grace; records its exit."""
        proc = cast(subprocess.Popen, spec.proc)  # a started one
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=self.options.stop_grace_s)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        spec.exit_code = proc.returncode
        spec.history.append(spec.exit_code)

    @staticmethod
    def _fatal(spec: ProcessSpec, code: int) -> str:
        """Why this failure cannot be fixed by a restart, or "" (it may be retried)."""
        full = disk_full(os.path.dirname(spec.log_path) or ".")
        tail = spec.log_since_start(8 << 10).strip().splitlines()[-5:]
        if not full and any(ENOSPC_TEXT in line for line in tail):
            full = f"its log ends on ENOSPC ({ENOSPC_TEXT})"
        if full:
            return f"DiskFull: {full}"
        if code == CONFIG_EXIT:
            return ("ConfigError: exit status 2 is a usage or configuration problem, which a restart "
                    "cannot fix")
        return ""


def disk_full(directory: str) -> str:
    """A description when the file system holding `directory` is full (ENOSPC: under
    DISK_FULL_BYTES free, or no free inode), else ""."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return ""
    free = st.f_bavail * st.f_frsize
    if free < DISK_FULL_BYTES:
        return (f"the file system holding {directory} is full (ENOSPC, {ENOSPC_TEXT}): "
                f"{free:,} bytes free")
    if st.f_files and not st.f_favail:
        return f"the file system holding {directory} has no free inode (ENOSPC, {ENOSPC_TEXT})"
    return ""
