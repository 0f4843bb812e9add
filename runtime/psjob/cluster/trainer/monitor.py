"""Trainer telemetry and progress lines for a Fleet script's trainer.

`fleet.init_worker()` starts a `TrainerMonitor`: a TrainerTelemetry
(psjob.cluster.trainer.telemetry — /metrics on PSJOB_METRICS_PORT when it is set)
and a ProgressReporter (psjob.foundation.progress — a line every few seconds,
the format `psjob run` and `psjob launch` read back from the logs). It
observes every `Executor.run` of `fleet.main_program` through the executor's
step observers (`psjob.fluid.executor.observe_steps`), so the user's loop is
not wrapped and nothing extra is fetched:

- examples: the batch dimension of the feed (the most common first
  dimension of the fed tensors; a LoD input counts its sequences);
- loss: the variable given to `distributed_optimizer(...).minimize(loss)`,
  read from the scope after the run;
- AUC: the output of the program's running `auc` op (the one with
  `slide_steps=0`, as `fluid.layers.auc` makes next to its batch AUC), when
  the program has one, read the same way;
- batch time split into push / pull / compute by the executor's kernel
  timings (`collect_timing` is turned on for each executor that runs the
  program: two clock reads per op, well under 0.1% of a CTR step);
- staleness of confirmed pushes and the client's RPC retries.

`fleet.stop_worker()` prints the final line and stops /metrics. When the
process already runs a trainer telemetry (the built-in job,
psjob.training.job, observes its own loop), Fleet starts none.
"""
from __future__ import annotations

import collections
import sys

from psjob.cluster.trainer import telemetry as telemetry_mod
from psjob.fluid.executor import observe_steps
from psjob.foundation.progress import ProgressReporter, ProgressState
from psjob.foundation.settings import Settings

# Seconds between progress lines, as the built-in job's default `--log_every`.
PROGRESS_EVERY_S = 5.0


class TrainerMonitor:
    def __init__(self, program, trainer_id: int, loss_name: str | None, settings: Settings, service=None,
                 client=None, every_s: float = PROGRESS_EVERY_S, out=None):
        self.telemetry = telemetry_mod.TrainerTelemetry.start(trainer_id, settings)
        self.telemetry.attach(None, service)  # a Communicator's sender reports staleness
        self._client = client
        self._loss = loss_name
        self._auc = running_auc_name(program)
        ckpt_dir = settings.checkpoint.root
        self.reporter = ProgressReporter(ProgressState(trainer_id, None, None), every_s,
                                         checkpoint=lambda: checkpoint_label(ckpt_dir),
                                         on_window=self.telemetry.window, out=out)
        self._executors: set[int] = set()
        self._failed = False
        self._remove = observe_steps(program, self._observe, reads=(loss_name, self._auc))

    def _observe(self, executor, program, feed, scope, seconds) -> None:
        if self._failed:
            return
        try:
            first = id(executor) not in self._executors
            if first:
                # Timings start now: this run was not timed, so it gets no push/pull split.
                self._executors.add(id(executor))
                self.telemetry.time_executor(executor)
                self.telemetry.attach(executor)  # its send ops report staleness
            examples = batch_size(feed, scope)
            loss, auc = scalar(scope, self._loss), scalar(scope, self._auc)
            self.telemetry.step(examples, seconds, loss, auc, executor=None if first else executor,
                                client=self._client)
            self.reporter.step(1, examples, loss, auc)
        except Exception as exc:  # noqa: BLE001 — metrics must never fail a training step
            self._failed = True
            print(f"[psjob] trainer telemetry stopped: {type(exc).__name__}: {exc}", file=sys.stderr,
                  flush=True)

    def close(self, finished: bool = True) -> None:
        """Stop observing; print the final progress line (when the trainer finished) and stop /metrics."""
        self._remove()
        try:
            if finished:
                self.reporter.finish()
        finally:
            self.telemetry.close()


def running_auc_name(program) -> str | None:
    """Output of the program's running AUC op (slide_steps 0; else the first `auc` op), or None."""
    aucs = [op for op in program.global_block().ops if op.type == "auc"]
    if not aucs:
        return None
    running = [op for op in aucs if int(op.attrs.get("slide_steps", 1)) == 0]
    names = (running or aucs)[0].output("AUC")
    return names[0] if names else None


def batch_size(feed: dict, scope) -> int:
    """Examples in one run: the most common first dimension of the fed tensors (a LoD input
    counts its top-level sequences), so a fed scalar or a flattened id list does not decide."""
    rows = []
    lods, values = scope.lods, scope.vars
    for name in feed:
        lod = lods.get(name)
        if lod:
            rows.append(len(lod[0]) - 1)
            continue
        shape = getattr(values.get(name), "shape", ())
        if shape:
            rows.append(int(shape[0]))
    if not rows:
        return 0
    if rows.count(rows[0]) == len(rows):  # every input agrees, as in most steps: no tally
        return rows[0]
    return collections.Counter(rows).most_common(1)[0][0]


def scalar(scope, name: str | None) -> float:
    """First element of a variable in the scope as a float; nan when it is not there."""
    if name is None:
        return float("nan")
    value = scope.vars.get(name)
    if value is None or not hasattr(value, "reshape"):
        return float("nan")
    try:
        out = float(value.reshape(-1)[0])  # one element: no copy of a whole device array
    except (IndexError, TypeError, ValueError):
        return float("nan")
    return out


def checkpoint_label(root: str) -> str:
    """One word for progress lines (a Fleet script's and the built-in job's): `step-120` for
    the newest good checkpoint under `root`, else `none`."""
    if not root:
        return "none"
    from psjob.foundation.checkpoint import store
    newest = store.newest_good(root)
    return f"step-{newest.step}" if newest is not None else "none"
