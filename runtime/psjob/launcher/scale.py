"""`psjob scale WORKDIR --workers N`: change the trainer count of a running `psjob run`.

Only an elastic job scales (`spec.worker.maxReplicas` set; docs/local-runs.md,
"Elastic trainers"). The command checks N against the job's topology
(`WORKDIR/topology.json`: 1 ≤ N ≤ maxReplicas) and writes the request to
`WORKDIR/scale-request.json` (atomically: a temporary file renamed over it).
The `psjob run` that owns the workdir reads it on its next poll (`Scaler`) and
applies it as Kubernetes applies an elastic Indexed Job's new completions:
trainers of the indexes now wanted and not running are started (they join the
pservers' member set), trainers of indexes ≥ N get SIGTERM (they finish their
step, leave and exit 0). Running trainers below N, and the pservers, are left
alone. The last request wins; one that asks for the current count does nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .. import roles

REQUEST_FILE = "scale-request.json"


class ScaleError(ValueError):
    """The request cannot apply; the message says why and what to do."""


def request(workdir: str, workers: int) -> None:
    """Check `workers` against the run's topology and leave the request for its `psjob run`."""
    topology_file = os.path.join(workdir, "topology.json")
    try:
        with open(topology_file) as f:
            topology = roles.topology_from_dict(json.load(f))
    except FileNotFoundError:
        raise ScaleError(f"{workdir} is not a psjob run workdir (no topology.json)") from None
    if not topology.max_trainers:
        raise ScaleError(f"job {topology.job_name} is not elastic: set spec.worker.maxReplicas in its "
                         f"YAML (and start it again) to change its trainer count while it runs")
    if not 1 <= workers <= topology.max_trainers:
        raise ScaleError(f"--workers {workers}: job {topology.job_name} scales from 1 to "
                         f"spec.worker.maxReplicas={topology.max_trainers} trainers")
    tmp = os.path.join(workdir, f".{REQUEST_FILE}.{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump({"workers": workers}, f)
    os.replace(tmp, os.path.join(workdir, REQUEST_FILE))


class Scaler:
    """Applies the newest scale request of one run; `poll` is the supervisor's on_poll hook.

    `new_trainer(index)` builds the ProcessSpec of trainer `index` (psjob.launcher.run_job)."""

    def __init__(self, workdir: str, new_trainer):
        self.path = os.path.join(workdir, REQUEST_FILE)
        self.new_trainer = new_trainer
        self._seen = None  # (mtime_ns, size) of the request last applied
        self._retired: set[int] = set()  # indexes scaled away: started again when wanted again

    def poll(self, supervisor) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        if (st.st_mtime_ns, st.st_size) == self._seen:
            return
        self._seen = (st.st_mtime_ns, st.st_size)
        with open(self.path) as f:
            wanted = int(json.load(f)["workers"])
        trainers = {s.index: s for s in supervisor.specs if s.role == roles.TRAINER}
        running = {i for i, s in trainers.items() if s.proc is not None and s.exit_code is None}
        supervisor.on_event(f"scale request: {wanted} trainer(s) (running: {len(running)})")
        for index in range(wanted):
            if index not in trainers:
                supervisor.add(self.new_trainer(index))
            elif index in self._retired and index not in running:
                self._retired.discard(index)
                supervisor.add(trainers[index])  # it left the job; it joins it again
        for index in sorted(running):
            if index >= wanted:
                self._retired.add(index)
                supervisor.retire(trainers[index])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="psjob scale", description="Change the trainer count of a running "
                                "elastic `psjob run` (spec.worker.maxReplicas set).")
    p.add_argument("workdir", help="the run's workdir (psjob run prints it)")
    p.add_argument("--workers", type=int, required=True, help="the trainer count wanted")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        request(args.workdir, args.workers)
    except ScaleError as exc:
        print(f"psjob scale: {exc}", file=sys.stderr)
        return 2
    print(f"psjob scale: asked {args.workdir} for {args.workers} trainer(s); its psjob run applies it "
          f"on its next poll")
    return 0
