"""HeterState: a heter trainer's behaviour, independent of any transport.

A heter trainer serves the CPU trainers t with t mod K == its index. For each
it holds a `HeterSection`: the heter program split for that trainer
(heter_split.py), an Executor on the heter trainer's place whose "rpc"
service talks to the pservers *as trainer t* (so in sync mode the gradients
land in t's slots and the pservers' rounds are unchanged), and a Scope that
keeps the section's activations from a forward stage to the backward stage
of the same step. Requests of one trainer arrive one at a time (a trainer
runs its stages in order); different trainers run concurrently.

Lifecycle: `HeterState(endpoint, sections)` → `start()` (SERVING) →
`on_run_stage` per stage per step → `on_complete(t)` from each served
trainer (its section is closed: queued gradient pushes are flushed before the
reply, so the trainer may then complete with the pservers) → STOPPING once
every served trainer completed. The gRPC front end (psjob.cluster.rpc.heter_service)
and the in-process client (heter_inmemory.py) both call these handlers.
Errors: ValueError for a request that does not fit (unknown trainer or
stage, wrong inputs, signature of a different program), RuntimeError for a
trainer that already completed.

Observation: `HeterState.observe_stage`, when set (the heter trainer's
metrics, psjob.cluster.pserver.observability.HeterTelemetry), is called with (stage index,
seconds) after each stage's ops ran — the section's compute time, not the
wait for its gradient pushes or the RPC around it.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from psjob.fluid.core import Scope, SelectedRows
from psjob.fluid.executor import Executor
from psjob.fluid.ops.dist_ops import confirm_pushes
from psjob.fluid.transpiler.heter_split import HeterSplit

STARTING, SERVING, DONE = "STARTING", "SERVING", "STOPPING"


def _to_place(xp, value):
    if isinstance(value, SelectedRows):
        return SelectedRows(_to_place(xp, value.rows), _to_place(xp, value.values), value.height)
    if xp is np:
        arr = np.asarray(value)
        return arr if arr.flags.writeable else arr.copy()  # wire payloads are read-only views
    return xp.asarray(value)


def _confirm_pushes(executor) -> None:
    """Wait for the gradient pushes the stage's `send` ops issued.

    `send` (ops/dist_ops.py) does not wait: its pushes are confirmed at the
    executor's next barrier, recv or close. A heter section has no barrier of
    its own — the CPU trainer sends it right after this stage's reply — so the
    stage confirms its pushes before replying."""
    confirm_pushes(executor)


class HeterSection:
    """One CPU trainer's section on a heter trainer."""

    def __init__(self, split: HeterSplit, executor: Executor, scope: Scope | None = None):
        self.split, self.exe = split, executor
        self.scope = scope if scope is not None else Scope()
        self.stages_run = 0
        self._lock = threading.Lock()

    @property
    def trainer_id(self) -> int:
        return self.split.trainer_id

    def run_stage(self, stage: int, signature: str, values: dict, observe=None) -> dict:
        """values: {name: array | SelectedRows | (array, lod)} → {name: (value, lod or None)}.

        observe(stage, seconds), if given, receives the time the stage's ops ran."""
        info = self.split.stage(int(stage))
        if signature != info.signature:
            raise ValueError(f"stage {stage} of trainer {self.trainer_id}: signature {signature!r} differs from "
                             f"this heter trainer's {info.signature!r} — the CPU trainer and the heter trainer "
                             "built different programs (run the same script with the same arguments)")
        missing = [n for n in info.inputs if n not in values]
        extra = sorted(set(values) - set(info.inputs))
        if missing or extra:
            raise ValueError(f"stage {stage} of trainer {self.trainer_id} takes {list(info.inputs)}; "
                             f"missing {missing}, unexpected {extra}")
        with self._lock:
            xp = self.exe.xp
            if xp is not np:  # the current CUDA device is per thread; requests come on many
                xp.cuda.Device(self.exe.place.device_id).use()
            for name, value in values.items():
                lod = None
                if isinstance(value, tuple):
                    value, lod = value
                self.scope.vars[name] = _to_place(xp, value)
                if lod:
                    self.scope.lods[name] = [np.asarray(level, dtype=np.int64) for level in lod]
                else:
                    self.scope.lods.pop(name, None)
            t0 = time.perf_counter()
            self.exe.run_block(self.split.program, info.block_idx, self.scope)
            if xp is not np:  # kernels run asynchronously; the reply copies the outputs to host anyway
                xp.cuda.get_current_stream().synchronize()
            seconds = time.perf_counter() - t0
            _confirm_pushes(self.exe)
            out = {}
            for name in info.outputs:
                if name not in self.scope.vars:
                    raise RuntimeError(f"stage {stage} of trainer {self.trainer_id} did not compute {name!r}")
                out[name] = (self.scope.vars[name], self.scope.lods.get(name))
            self.stages_run += 1
        if observe is not None:
            observe(int(stage), seconds)
        return out

    def close(self) -> None:
        """Flush and release the section's pserver service (Executor close hooks)."""
        with self._lock:
            self.exe.close()


class HeterState:
    def __init__(self, endpoint: str, sections: dict, device: str = "cpu"):
        self.endpoint, self.device = endpoint, device
        self.sections: dict[int, HeterSection] = dict(sections)
        self.completed: list[int] = []
        self.state = STARTING
        self.observe_stage = None  # callable(stage, seconds), see the module doc
        self._cond = threading.Condition()

    def start(self) -> None:
        with self._cond:
            self.state = SERVING if self.sections else DONE
            self._cond.notify_all()

    def _section(self, trainer_id: int) -> HeterSection:
        t = int(trainer_id)
        if self.state == STARTING:
            raise RuntimeError(f"heter trainer {self.endpoint} is not serving yet")
        section = self.sections.get(t)
        if section is None:
            raise ValueError(f"heter trainer {self.endpoint} does not serve trainer {t} "
                             f"(it serves {sorted(self.sections)})")
        if t in self.completed:
            raise RuntimeError(f"trainer {t} already completed on heter trainer {self.endpoint}")
        return section

    def on_run_stage(self, trainer_id: int, stage: int, signature: str, values: dict) -> dict:
        return self._section(trainer_id).run_stage(stage, signature, values, self.observe_stage)

    def on_complete(self, trainer_id: int) -> int:
        t = int(trainer_id)
        with self._cond:
            done_already = t in self.completed
        if not done_already:
            section = self._section(t)
            section.close()
            with self._cond:
                if t not in self.completed:
                    self.completed.append(t)
                if len(self.completed) == len(self.sections):
                    self.state = DONE
                self._cond.notify_all()
        with self._cond:
            return len(self.sections) - len(self.completed)

    def on_status(self) -> dict:
        with self._cond:
            return {"state": self.state, "endpoint": self.endpoint, "trainers": sorted(self.sections),
                    "completed": sorted(self.completed), "device": self.device,
                    "stages_run": sum(s.stages_run for s in self.sections.values())}

    def wait_done(self, timeout_s: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.state == DONE, timeout=timeout_s)

    def close(self) -> None:
        """Release every section still open (a heter trainer stopped before its trainers completed)."""
        for t, section in self.sections.items():
            if t not in self.completed:
                try:
                    section.close()
                except Exception:  # noqa: BLE001 - best effort on shutdown
                    pass
