"""`psjob scale WORKDIR --workers N | --pservers M`: resize a running `psjob run`.

The command checks the request against the job's topology
(`WORKDIR/topology.json`) and writes it to `WORKDIR/scale-request.json`
(atomically: a temporary file renamed over it; a request for the other role
already there is kept). The `psjob run` that owns the workdir reads it on its
next poll (`Scaler`). The last request for a role wins; one that asks for the
current count does nothing.

Trainers (`--workers N`, an elastic job: `spec.worker.maxReplicas` set;
docs/user/local-runs.md, "Elastic trainers"), as Kubernetes applies an elastic
Indexed Job's new completions: 1 ≤ N ≤ maxReplicas; trainers of the indexes
now wanted and not running are started (they join the pservers' member set),
trainers of indexes ≥ N get SIGTERM (they finish their step, leave and exit
0). Running trainers below N, and the pservers, are left alone.

Pservers (`--pservers M`, a job that keeps checkpoints; docs/user/local-runs.md,
"Resizing the pservers"): the tables move from N pservers to M through a
checkpoint, in this order —

1. `relayout(M)` gives the run M pserver endpoints and rewrites
   topology.json (PSJOB_TOPOLOGY_FILE of every process); trainer 0's
   Checkpointer sees the endpoints change at its next step and checkpoints —
   the consistent cut (sync: the round boundary; the other modes: a freeze of
   every pserver) — then exits roles.RESIZE_HOLD_EXIT
   (fleet.checkpointer.HoldForResize);
2. as soon as that checkpoint is committed (its manifest written) or trainer
   0 held, every trainer and the N pservers are stopped (SIGKILL: the
   checkpoint is the state kept; what the other trainers did after it is
   redone — counted and reported as "steps redone");
3. the M pservers start on the new endpoints and restore that checkpoint,
   the tables resharded N→M (ps.checkpoint_restore: each keeps the rows
   `shard_of(id, M)` gives it; dense parameters are cut from the saved whole
   values by the new plan);
4. every trainer that had not been scaled away starts again with the new
   endpoints — so it transpiles its program for M pservers (the dense blocks'
   and the table's placement follow the pserver count) — and resumes at its
   position in the checkpoint.

Nothing of this counts against runPolicy.backoffLimit or a pserver's
restarts. The operator does the same with its ConfigMap (docs/user/operator.md).
Trainers learn the new endpoint set from the topology file (trainer 0, to
hold) and by being started again with it: their program split depends on the
pserver count, and a new process is the one place the whole plan (transpiler,
communicator, RPC clients) is built from scratch — the simplest sound way, at
the cost of the process start-up.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from psjob.foundation import roles
from psjob.foundation.checkpoint import storage, store

if TYPE_CHECKING:
    from psjob.launcher.supervisor import ProcessSpec, Supervisor

REQUEST_FILE = "scale-request.json"


class ScaleError(ValueError):
    """The request cannot apply; the message says why and what to do."""


def request(workdir: str, workers: int | None = None, pservers: int | None = None) -> None:
    """Check the counts asked for against the run's topology and leave the request for its
    `psjob run`."""
    topology_file = os.path.join(workdir, "topology.json")
    try:
        with open(topology_file) as f:
            topology = roles.topology_from_dict(json.load(f))
    except FileNotFoundError:
        raise ScaleError(f"{workdir} is not a psjob run workdir (no topology.json)") from None
    if workers is None and pservers is None:
        raise ScaleError("say what to scale: --workers N and/or --pservers M")
    if workers is not None:
        check_workers(topology, workers)
    if pservers is not None:
        check_pservers(topology, pservers)
    path = os.path.join(workdir, REQUEST_FILE)
    try:
        with open(path) as f:
            wanted = json.load(f)
    except (FileNotFoundError, ValueError):
        wanted = {}
    wanted.update({k: v for k, v in (("workers", workers), ("pservers", pservers)) if v is not None})
    tmp = os.path.join(workdir, f".{REQUEST_FILE}.{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump(wanted, f)
    os.replace(tmp, path)


def check_workers(topology: roles.JobTopology, workers: int) -> None:
    if not topology.max_trainers:
        raise ScaleError(f"job {topology.job_name} is not elastic: set spec.worker.maxReplicas in its "
                         f"YAML (and start it again) to change its trainer count while it runs")
    if not 1 <= workers <= topology.max_trainers:
        raise ScaleError(f"--workers {workers}: job {topology.job_name} scales from 1 to "
                         f"spec.worker.maxReplicas={topology.max_trainers} trainers")


def check_pservers(topology: roles.JobTopology, pservers: int) -> None:
    if pservers < 1:
        raise ScaleError(f"--pservers {pservers}: a job needs at least 1 pserver (its tables live there)")
    try:
        roles.local_pserver_host(pservers - 1)
    except ValueError as exc:
        raise ScaleError(f"--pservers {pservers}: {exc}") from None
    if not topology.checkpoint_dir:
        raise ScaleError(f"job {topology.job_name} keeps no checkpoints (spec.checkpoint.enabled is false): "
                         f"resizing its pservers restores their tables from a checkpoint; enable "
                         f"spec.checkpoint and start the job again")
    if topology.heter_trainers:
        raise ScaleError(f"job {topology.job_name} has heter trainers: resizing its pservers is not "
                         f"supported for heterogeneous jobs")


@dataclass
class PendingResize:
    """A pserver resize asked of trainer 0 and not yet applied."""
    target: int
    asked_at: float          # time.monotonic() of the request
    before: str | None       # the newest checkpoint when asked: a newer one is the resize's
    layout: object = None    # the run's topology before the resize (the processes still run it)


class Scaler:
    """Applies the newest scale request of one run; `poll` is the supervisor's on_poll hook.

    `new_process(role, index)` builds the ProcessSpec of a process under the run's current
    topology (psjob.launcher.run_job); `relayout(pservers)` gives the run that many pserver
    endpoints (topology.json rewritten) and returns the topology it replaced, which
    `put_layout(topology)` puts back; `checkpoint_dir` is the run's checkpoint root."""

    def __init__(self, workdir: str, new_process: Callable[[str, int], ProcessSpec],
                 relayout: Callable[[int], Any] | None = None, put_layout: Callable[[Any], None] | None = None,
                 checkpoint_dir: str = "") -> None:
        self.path = os.path.join(workdir, REQUEST_FILE)
        self.new_process = new_process
        # Given by a run whose pservers may resize (psjob run's); a resize is asked for only then.
        self.relayout = cast("Callable[[int], Any]", relayout)
        self.put_layout = cast("Callable[[Any], None]", put_layout)
        self.checkpoint_dir = checkpoint_dir
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the request last read
        self._applied: dict[str, int] = {}  # the counts of the request last read, by role
        self._retired: set[int] = set()  # indexes scaled away: started again when wanted again
        self._resize: PendingResize | None = None
        self.resizes: list[dict] = []  # one record per resize applied (the summary's)

    def poll(self, supervisor: Supervisor) -> None:
        self._read_request(supervisor)
        self._advance_resize(supervisor)

    def _read_request(self, supervisor: Supervisor) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        if (st.st_mtime_ns, st.st_size) == self._seen:
            return
        self._seen = (st.st_mtime_ns, st.st_size)
        with open(self.path) as f:
            wanted = {k: int(v) for k, v in json.load(f).items()}
        changed = {k: v for k, v in wanted.items() if self._applied.get(k) != v}
        self._applied = wanted
        if "workers" in changed:
            self._scale_workers(supervisor, changed["workers"])
        if "pservers" in changed:
            self._ask_resize(supervisor, changed["pservers"])

    # -- trainers ------------------------------------------------------------------------
    def _scale_workers(self, supervisor: Supervisor, wanted: int) -> None:
        trainers = _trainers(supervisor)
        running = {i for i, s in trainers.items() if s.proc is not None and s.exit_code is None}
        supervisor.on_event(f"scale request: {wanted} trainer(s) (running: {len(running)})")
        for index in range(wanted):
            if index not in trainers:
                supervisor.add(self.new_process(roles.TRAINER, index))
            elif index in self._retired and index not in running:
                self._retired.discard(index)
                supervisor.add(trainers[index])  # it left the job; it joins it again
        for index in sorted(running):
            if index >= wanted:
                self._retired.add(index)
                supervisor.retire(trainers[index])

    # -- pservers ------------------------------------------------------------------------
    def _ask_resize(self, supervisor: Supervisor, wanted: int) -> None:
        current = len(_pservers(supervisor))
        if self._resize is not None:
            self._resize.target = wanted
            self.relayout(wanted)  # a new layout again; `layout` stays the one that runs
            supervisor.on_event(f"pserver resize now to {wanted} (trainer 0 is checkpointing)")
            return
        if wanted == current:
            supervisor.on_event(f"scale request: {wanted} pserver(s), as running: nothing to do")
            return
        chief = _trainers(supervisor).get(0)
        if chief is None or chief.proc is None or chief.exit_code is not None:
            supervisor.on_event(f"pserver resize {current}→{wanted} not applied: trainer 0 is not running "
                                f"(it takes the checkpoint the resize restores)")
            return
        # Trainer 0 sees the new endpoints in topology.json at its next step.
        self._resize = PendingResize(wanted, time.monotonic(), self._newest(), self.relayout(wanted))
        supervisor.on_event(f"resizing the pservers {current}→{wanted}: trainer 0 checkpoints at its "
                            "next step, then every process is replaced")

    def _advance_resize(self, supervisor: Supervisor) -> None:
        chief = _trainers(supervisor).get(0)
        if chief is None or chief.proc is None:
            return
        code = chief.exit_code if chief.exit_code is not None else chief.proc.poll()
        if code == roles.RESIZE_HOLD_EXIT and chief.exit_code is None:
            chief.exit_code = code  # seen here first: recorded as the supervisor would
            chief.history.append(code)
        held = chief.exit_code == roles.RESIZE_HOLD_EXIT
        if self._resize is None:
            if not held:
                return
            # A hold nobody asked for (topology.json edited by hand): every process is replaced
            # on a fresh layout of the same size; the job goes on.
            self._resize = PendingResize(len(_pservers(supervisor)), time.monotonic(), None)
            self.relayout(self._resize.target)
        if held or self._newest() != self._resize.before:
            # Trainer 0 held, or its checkpoint is committed (the manifest is written last):
            # replace at once, so that the other trainers redo as few steps as possible.
            self._replace(supervisor)
        elif code is not None and chief.exit_code is not None:
            # Trainer 0 finished (or failed for good) before its checkpoint: the processes
            # running keep the old layout, and so does topology.json.
            self.put_layout(self._resize.layout)
            supervisor.on_event(f"pserver resize to {self._resize.target} abandoned: trainer 0 exited "
                                f"{code} before its checkpoint")
            self._resize = None

    def _newest(self) -> str | None:
        info = store.newest_good(self.checkpoint_dir)
        return info.path if info is not None else None

    def _replace(self, supervisor: Supervisor) -> None:
        info = store.newest_good(self.checkpoint_dir)
        if info is None:  # held, but its checkpoint is not listed yet (an object store): next poll
            return
        resize, self._resize = cast(PendingResize, self._resize), None  # _advance_resize: one is held
        servers = _pservers(supervisor)
        trainers = [s for i, s in sorted(_trainers(supervisor).items()) if i not in self._retired]
        supervisor.stop_for_resize(servers + trainers)
        redone = self._steps_redone(info, [t.index for t in trainers])
        for spec in servers[resize.target:]:
            supervisor.specs.remove(spec)
        for index in range(resize.target):
            if index < len(servers):
                servers[index].env = self.new_process(roles.PSERVER, index).env
                supervisor.add(servers[index])
            else:
                supervisor.add(self.new_process(roles.PSERVER, index))
        for spec in trainers:
            spec.env = self.new_process(roles.TRAINER, spec.index).env
            supervisor.add(spec)
        seconds = time.monotonic() - resize.asked_at
        self.resizes.append({"from": len(servers), "to": resize.target, "checkpoint": info.path,
                             "step": info.step, "steps_redone": sum(redone.values()),
                             "replaced_after_s": round(seconds, 3)})
        per = ", ".join(f"worker {i}: {n}" for i, n in sorted(redone.items()) if n)
        supervisor.on_event(
            f"resharded {len(servers)}→{resize.target} pservers from checkpoint step-{info.step} "
            f"({info.path}); every process replaced {seconds:.2f}s after the request; steps redone: "
            f"{sum(redone.values())}" + (f" ({per})" if per else ""))

    def _steps_redone(self, info: store.CheckpointInfo, indexes: list[int]) -> dict[int, int]:
        """Per trainer, the steps it trained after the checkpoint (lost with the old pservers).

        Sync mode: none — the round after the cut cannot complete without trainer 0, who held.
        Other modes: each trainer's last position hint (written every step) minus its position
        in the checkpoint."""
        manifest = cast(dict, info.manifest)  # a good checkpoint's
        saved = manifest.get("trainers") or {}
        if len(saved) <= 1:  # sync: only trainer 0's position, everyone's
            return {i: 0 for i in indexes}
        out = {}
        for index in indexes:
            resumed = int((saved.get(str(index)) or {}).get("step", info.step))
            out[index] = max(0, _last_position(self.checkpoint_dir, index, default=resumed) - resumed)
        return out


def _last_position(root: str, index: int, default: int) -> int:
    path = store.position_path(root, index)
    try:
        return int(json.loads(storage.for_path(path).read_bytes(path))["step"])
    except (OSError, ValueError, KeyError):
        return default


def _trainers(supervisor: Supervisor) -> dict:
    return {s.index: s for s in supervisor.specs if s.role == roles.TRAINER}


def _pservers(supervisor: Supervisor) -> list:
    return sorted((s for s in supervisor.specs if s.role == roles.PSERVER), key=lambda s: s.index)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="psjob scale", description="Resize a running `psjob run`: its "
                                "trainers (an elastic job, spec.worker.maxReplicas set) or its pservers "
                                "(a job with checkpoints: the tables are resharded N→M from one).")
    p.add_argument("workdir", help="the run's workdir (psjob run prints it)")
    p.add_argument("--workers", type=int, help="the trainer count wanted")
    p.add_argument("--pservers", type=int, help="the pserver count wanted")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        request(args.workdir, args.workers, args.pservers)
    except ScaleError as exc:
        print(f"psjob scale: {exc}", file=sys.stderr)
        return 2
    asked = " and ".join(f"{n} {what}" for n, what in ((args.workers, "trainer(s)"),
                                                        (args.pservers, "pserver(s)")) if n is not None)
    print(f"psjob scale: asked {args.workdir} for {asked}; its psjob run applies it on its next poll")
    return 0
