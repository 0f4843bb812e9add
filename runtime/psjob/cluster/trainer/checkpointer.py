"""Periodic checkpoints driven by the trainers, and resuming from them.

    ckpt = Checkpointer.for_fleet(fleet, exe)   # the role's PSJOB_CHECKPOINT_* settings
    position = ckpt.resume()          # None, or {"step": 120, "epoch": 1, "offset": 3840, ...}
    for step in range(position["step"] if position else 0, steps):
        exe.run(...)
        ckpt.after_step(step + 1, epoch=epoch, offset=offset)

Every trainer calls `after_step` after each step. Trainer 0 decides: when
`interval_steps` steps or `interval_seconds` seconds have passed since its
last checkpoint it saves `<root>/step-<N>/` (distributed.save: freeze,
pull, table shards, thaw, manifest last), then applies retention (keep the
newest `keep`). Checkpointing on trainer 0's schedule makes one process
decide, so the pservers never disagree about which cut is which. With
`incremental` (PSJOB_CHECKPOINT_INCREMENTAL) the checkpoints form chains: a
base every `base_every` checkpoints and deltas on the previous link between
(foundation/checkpoint/chain.py; checkpoint_save writes a base instead when a pserver
cannot write the delta).

Data positions: in sync mode every trainer is at trainer 0's step when it
checkpoints (the rounds are lock-step), so the manifest's `position` is
everyone's. In async and geo modes each trainer also writes its latest
position to `<root>/positions/trainer-<i>.json` (atomically, every step,
without fsync — it is a hint; on an object store at most once a second, a
PUT per step would slow training), and trainer 0 copies them into the
manifest's `trainers` map. A resumed trainer continues from its own
recorded position, falling back to trainer 0's; in async modes that may
replay or skip the few steps that were in flight at the cut.

Holding for a pserver resize (docs/user/local-runs.md "Resizing the pservers",
docs/user/operator.md): trainer 0 watches the job's topology file
(PSJOB_TOPOLOGY_FILE: `psjob run`'s topology.json, the operator's ConfigMap
volume) — one stat per step. When its pserver endpoints differ from the ones
this trainer runs with, the pservers are being replaced: its next
`after_step` checkpoints at once — the consistent cut of the resize (a step
boundary in sync mode, a freeze in the others) — and raises `HoldForResize`,
a SystemExit with status roles.RESIZE_HOLD_EXIT; the launcher (or the
operator) then replaces every process, the new pservers restore that
checkpoint resharded N→M and the trainers resume from it. If that save fails,
training goes on and the next step tries again.

A Checkpointer without a root (PSJOB_CHECKPOINT_DIR unset) does nothing, so
scripts can call it unconditionally. A save that fails (a pserver restarted
mid-save, a full disk) is logged and training goes on; the previous
checkpoints stay. The failed save's directory is removed, the pservers are told
(they export it as metrics, which the operator's status shows) and its line
(`checkpoint at step N failed: ERROR`) is what `psjob run` shows on the
terminal and in its summary.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import time
from dataclasses import dataclass

import numpy as np

from psjob.cluster import checkpoint_protocol as protocol
from psjob.cluster.trainer import checkpoint_save as distributed
from psjob.fluid.core import global_scope
from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint import storage
from psjob.foundation.checkpoint.backend import Storage
from psjob.foundation.checkpoint.format import (
    MANIFEST,
    CheckpointError,
    CorruptFileError,
    invalidate,
    new_manifest,
    read_manifest_bytes,
    write_array,
    write_manifest,
)
from psjob.foundation.checkpoint.store import (
    POSITIONS,
    apply_retention,
    committed,
    has_manifest,
    mark_corrupt,
    position_path,
    read_dense,
    step_dirname,
)
from psjob.foundation.roles import RESIZE_HOLD_EXIT, Mode
from psjob.foundation.settings import Settings

log = logging.getLogger("psjob.foundation.checkpoint")
REMOTE_POSITION_INTERVAL_S = 1.0  # object stores: one position write a second at most


@dataclass(frozen=True)
class CheckpointConfig:
    root: str = ""
    interval_steps: int = 0
    interval_seconds: float = 0.0
    keep: int = 3
    trainer_id: int = 0
    mode: Mode = Mode.SYNC
    freeze_lease_s: float = protocol.DEFAULT_FREEZE_LEASE_S  # PSJOB_CHECKPOINT_FREEZE_LEASE_S
    topology_file: str = ""        # PSJOB_TOPOLOGY_FILE: watched by trainer 0 for a resize
    pserver_endpoints: tuple = ()  # PADDLE_PSERVER_ENDPOINTS: the layout this trainer runs
    incremental: bool = False      # PSJOB_CHECKPOINT_INCREMENTAL: write deltas between bases
    base_every: int = protocol.DEFAULT_BASE_EVERY  # PSJOB_CHECKPOINT_BASE_EVERY: every N-th is a base

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))  # a Mode, or its name

    @classmethod
    def of(cls, settings: Settings) -> CheckpointConfig:
        """This trainer's checkpoint configuration from its process's settings (the
        PSJOB_CHECKPOINT_* ones, its trainer id, mode and pservers)."""
        c, p = settings.checkpoint, settings.process
        return cls(root=c.root, interval_steps=c.interval_steps, interval_seconds=c.interval_seconds,
                   keep=c.keep, trainer_id=p.trainer_id, mode=p.mode, freeze_lease_s=c.freeze_lease_s,
                   topology_file=c.topology_file, pserver_endpoints=p.pserver_endpoints,
                   incremental=c.incremental, base_every=c.base_every)

    @property
    def enabled(self) -> bool:
        return bool(self.root)


class TopologyWatch:
    """The job's topology file as trainer 0 sees it: `resized()` is true once its pserver
    endpoints differ from the ones this trainer runs with (read again only when the file
    changes: a ConfigMap volume swaps its data, `psjob run` renames a new file over it)."""

    def __init__(self, path: str, endpoints: tuple):
        self.path, self.endpoints = path, tuple(endpoints)
        self._stamp = None  # never read: the first check reads it (a trainer started mid-resize)

    def resized(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            with open(self.path) as f:
                endpoints = tuple(json.load(f)["pserver_endpoints"])
        except (OSError, ValueError, KeyError, TypeError):
            return False  # caught mid-write: the next change is read again
        return endpoints != self.endpoints


class HoldForResize(SystemExit):
    """Trainer 0 committed the resize checkpoint at `step` (in `path`) and stops there; as a
    SystemExit it ends any training script with status roles.RESIZE_HOLD_EXIT."""

    def __init__(self, step: int, path: str):
        super().__init__(RESIZE_HOLD_EXIT)
        self.step, self.path = step, path


class Checkpointer:
    def __init__(self, executor, program, config: CheckpointConfig, scope=None, dist=None):
        self.exe, self.program, self.config = executor, program, config
        self.scope = scope if scope is not None else global_scope()
        if dist is None and getattr(program, "_is_distributed", False):
            dist = distributed.DistInfo.of(program)
        self.dist = dist  # None: a single-process program, checkpointed locally
        self._last_step = None
        self._last_time = time.monotonic()
        self._last_position_write = float("-inf")
        self.saved: list[str] = []
        self.failures: list[str] = []
        self.resumed_from = None
        c = self.config
        self.topology = (TopologyWatch(c.topology_file, c.pserver_endpoints)
                         if c.enabled and self.is_chief and c.topology_file and c.pserver_endpoints
                         else None)
        self.holding = False  # a resize was seen: checkpoint now, then HoldForResize
        # The newest link this trainer 0 committed or resumed from: (path, manifest, its sha256);
        # the next delta is written on it (None: the next checkpoint is a base).
        self._last_link = None
        if c.base_every < 1:
            raise ValueError(f"base_every must be at least 1, got {c.base_every!r}")
        self.commit_params: dict = {}  # sent with the COMMIT of the next saves (psjob.training.stream)

    @classmethod
    def for_program(cls, executor, program, settings: Settings, scope=None) -> Checkpointer:
        """A Checkpointer of `program` (a transpiled trainer program, or a single-process
        one) with the process's `settings`, the saves' RPC client's included."""
        distributed_program = getattr(program, "_is_distributed", False)
        dist = distributed.DistInfo.of(program, settings=settings) if distributed_program else None
        return cls(executor, program, CheckpointConfig.of(settings), scope, dist)

    @classmethod
    def for_fleet(cls, fleet, executor, scope=None, settings: Settings | None = None,
                  **overrides) -> Checkpointer:
        """The trainer's Checkpointer under the Fleet API (any mode, geo included).

        Settings come from the fleet's role (its RoleEnv's settings, or the process
        environment's for a user-defined role) unless `settings` is given; `overrides`
        replace CheckpointConfig fields (e.g. interval_steps=100)."""
        fleet = getattr(fleet, "fleet", fleet)  # the psjob.fleet module or its Fleet singleton
        program, dist = fleet.checkpoint_target()
        config = CheckpointConfig.of(fleet.role_settings() if settings is None else settings)
        if fleet.mode:
            config = dataclasses.replace(config, mode=Mode(fleet.mode))
        config = dataclasses.replace(config, **overrides)
        return cls(executor, program, config, scope, dist)

    @property
    def is_chief(self) -> bool:
        return self.config.trainer_id == 0

    @functools.cached_property
    def store(self) -> Storage:
        """The checkpoint root's store, resolved once (on first use: a root the store cannot
        serve fails the first save, which is logged, as any failed save)."""
        return storage.for_path(self.config.root)

    # -- resume --------------------------------------------------------------------------
    def resume(self) -> dict | None:
        """Position recorded for this trainer in the newest good checkpoint (None: start fresh).

        Also loads the trainer-local persistables the checkpoint holds (metric states...);
        the parameters themselves come from the pservers, which restored them."""
        if not self.config.enabled:
            return None
        if self.is_chief and self.dist is not None:
            self._thaw_leftover()
        info = None
        for c in committed(self.config.root, self.store):
            reason = c.reason
            if c.ok:
                try:
                    # Every dense file, as the pservers check it when they restore: they skip
                    # the same checkpoints, so both sides resume from the same one.
                    locals_ = read_dense(c.path, c.manifest, keep=self._local_names())
                    info = c
                    break
                except CheckpointError as exc:
                    reason = str(exc)
                    if isinstance(exc, CorruptFileError):
                        mark_corrupt(c.path, reason)
            print(f"[psjob] trainer {self.config.trainer_id}: checkpoint {c.path} is unusable ({reason}); "
                  "falling back to the previous good checkpoint", flush=True)
        if info is None:
            return None
        doc = info.manifest
        trainers = doc.get("trainers") or {}
        mine = trainers.get(str(self.config.trainer_id))
        if mine is None and trainers and self.config.mode is not Mode.SYNC:
            # Async trainers each keep their own place in their own share: one the checkpoint
            # holds no position of had recorded none yet, and starts its share again (the
            # chief's position is not its own: taking it would skip data).
            mine = {"step": 0}
        position = dict(mine or doc.get("position") or {"step": info.step})
        position.setdefault("step", info.step)
        xp = self.exe.xp
        for name, arr in locals_.items():  # all read and verified first
            self.scope.vars[name] = arr if xp.__name__ == "numpy" else xp.asarray(arr)
        self._last_step = int(position["step"])
        self.resumed_from = info.path
        self._remember_link(info.path)
        log.info("trainer %d resumes at %s from %s", self.config.trainer_id, position, info.path)
        return position

    def _thaw_leftover(self):
        """A trainer 0 that restarts may have died inside a save, leaving the pservers
        frozen (updates held) until the lease runs out: release them now. Nothing of
        the dead save can be committed any more, so this never breaks a cut."""
        try:
            client, _flush, close = distributed.rpc_service(self.exe, self.program, self.dist)
        except Exception as exc:  # noqa: BLE001 - best effort: the lease still bounds the stall
            log.warning("cannot check the pservers for a leftover checkpoint freeze: %s", exc)
            return
        try:
            released = distributed.thaw_leftover(client, self.dist.endpoints)
        except Exception as exc:  # noqa: BLE001
            log.warning("cannot release a leftover checkpoint freeze: %s", exc)
            return
        finally:
            if close is not None:
                close()
        if released:
            print(f"[psjob] trainer 0: released the checkpoint freeze an earlier trainer 0 left on "
                  f"{', '.join(released)} (it died inside a save; that save is abandoned)", flush=True)

    def _local_names(self) -> list[str]:
        """The persistables a resume loads into this trainer (metric states...); the
        parameters come from the pservers."""
        if self.dist is not None:
            remote = distributed.remote_groups(self.program, self.dist)
            return [v.name for v in distributed.local_vars(self.program, self.dist, remote)]
        return [v.name for v in self.program.list_vars() if distributed._saveable(v)]

    # -- periodic saves ------------------------------------------------------------------
    def due(self, step: int) -> bool:
        c = self.config
        if self._last_step is None:
            self._last_step = 0
        if c.interval_steps and step - self._last_step >= c.interval_steps:
            return True
        return bool(c.interval_seconds) and time.monotonic() - self._last_time >= c.interval_seconds

    def after_step(self, step: int, **position) -> str | None:
        """Record this trainer's position; on trainer 0, checkpoint when due. The path saved, or None."""
        if not self.config.enabled:
            return None
        position = {**position, "step": int(step)}
        if not self.is_chief:
            if self.config.mode is not Mode.SYNC:
                self._write_position(position)
            return None
        if self.holding or (self.topology is not None and self.topology.resized()):
            self.holding = True
            return self._hold(position)
        if not self.due(step):
            return None
        return self.save(**position)

    def _hold(self, position: dict) -> str | None:
        """The resize checkpoint, then HoldForResize; after a failed save training goes on and
        the next step tries again."""
        path = self.save(**position)
        if path is None:
            print(f"[psjob] trainer 0: the checkpoint for the pserver resize failed at step "
                  f"{position['step']}; training goes on and the next step tries again", flush=True)
            return None
        print(f"[psjob] trainer 0 holds at step {position['step']} for a pserver resize; the pservers "
              f"restore {path}", flush=True)
        raise HoldForResize(int(position["step"]), path)

    def save(self, step: int, **position) -> str | None:
        """Checkpoint now (trainer 0). Failures are logged and counted, not raised."""
        position = {**position, "step": int(step)}
        path = storage.join(self.config.root, step_dirname(step))
        request = distributed.SaveRequest(step=int(step), position=position, trainers=self._positions(position),
                                          mode=self.config.mode, kind="checkpoint",
                                          freeze_lease_s=self.config.freeze_lease_s,
                                          chain=self._plan(path) if self.dist is not None else None,
                                          commit=dict(self.commit_params))
        t0 = time.monotonic()
        try:
            if self.dist is not None:
                distributed.save(self.exe, path, self.program, self.dist, request, scope=self.scope)
            else:
                save_local(path, self.program, self.scope, request)
        except (CheckpointError, OSError, RuntimeError) as exc:
            error = " ".join(str(exc).split())  # one line: launchers read it back from the log
            self.failures.append(error)
            log.warning("checkpoint at step %d failed: %s", step, error)
            self._discard(path)
            if self.dist is not None:
                distributed.report_failure(self.exe, self.program, self.dist, path, int(step), error)
            # Read back by psjob run / psjob launch (launcher.job_progress.CKPT_FAILED).
            print(f"[psjob] checkpoint at step {step} failed: {error}", flush=True)
            self._last_step, self._last_time = int(step), time.monotonic()
            self._last_link = None  # whatever failed, the next checkpoint is a base: it depends on nothing
            return None
        self._last_step, self._last_time = int(step), time.monotonic()
        self.saved.append(path)
        if request.chain is not None:
            self._remember_link(path)
        removed = apply_retention(self.config.root, self.config.keep, self.store)
        print(f"[psjob] checkpoint step {step} saved to {path} in {time.monotonic() - t0:.2f}s"
              + (f"; removed {len(removed)} old" if removed else ""), flush=True)
        return path

    # -- chains (incremental checkpoints) -----------------------------------------------
    def _plan(self, path: str) -> distributed.ChainPlan:
        """A delta on the last link when incremental checkpoints are on and the chain since
        the last base is shorter than base_every; otherwise a base."""
        c, last = self.config, self._last_link
        link_id = chains.new_link_id()
        if not c.incremental or last is None or last[0] == path:
            return distributed.ChainPlan(link_id, track=c.incremental)
        depth = int((chains.link_of(last[1]) or {}).get("depth", 0))
        if depth + 1 >= c.base_every:
            return distributed.ChainPlan(link_id, track=True)
        return distributed.ChainPlan(link_id, parent_path=last[0], parent_doc=last[1], parent_sha256=last[2])

    def _remember_link(self, path: str) -> None:
        try:
            doc, digest = read_manifest_bytes(path)
        except (CheckpointError, OSError) as exc:
            log.warning("cannot read back checkpoint %s (%s); the next checkpoint is a base", path, exc)
            self._last_link = None
            return
        self._last_link = (path, doc, digest) if (chains.link_of(doc) or {}).get("id") else None

    def _discard(self, path: str) -> None:
        """Remove what a failed save left in `path` (no manifest: it is no checkpoint), so
        failing saves do not pile up directories that retention keeps (it never touches what
        is newer than the newest good checkpoint)."""
        if has_manifest(path):
            return  # committed after all (the failure came later): a checkpoint, keep it
        try:
            self.store.remove_tree(path, first=MANIFEST)
        except OSError as exc:  # nothing was created, or the store refuses: retention tries later
            log.debug("could not remove the partial checkpoint %s: %s", path, exc)

    # -- positions -----------------------------------------------------------------------
    def _write_position(self, position: dict) -> None:
        root, store = self.config.root, self.store
        now = time.monotonic()
        if not store.local and now - self._last_position_write < REMOTE_POSITION_INTERVAL_S:
            return
        self._last_position_write = now
        path = position_path(root, self.config.trainer_id)
        data = json.dumps(position).encode()
        try:
            if store.local:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.tmp-{os.getpid()}"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)  # atomic; not fsync'ed: a hint, not worth a disk flush per step
            else:
                store.write_bytes(path, data)
        except OSError as exc:  # never fail training over it
            log.debug("cannot record position: %s", exc)

    def _positions(self, mine: dict) -> dict:
        out = {"0": mine}
        if self.config.mode is Mode.SYNC:
            return out
        d = storage.join(self.config.root, POSITIONS)
        store = self.store
        for name in sorted(store.sizes(d)):
            if name.startswith("trainer-") and name.endswith(".json"):
                try:
                    out[name[len("trainer-"):-len(".json")]] = json.loads(store.read_bytes(storage.join(d, name)))
                except (OSError, ValueError):
                    continue
        return out


def save_local(path: str, program, scope, request: distributed.SaveRequest) -> dict:
    """A single-process checkpoint: every persistable of `program` from `scope`, manifest last."""
    storage.for_path(path).makedirs(path)
    invalidate(path)
    entries = {}
    for var in program.list_vars():
        if not distributed._saveable(var) or var.name in entries:
            continue
        arr = distributed._scope_value(scope, var.name)
        entry = write_array(storage.join(path, var.name), arr)
        entry["file"] = var.name
        entry["lod"] = [np.asarray(level).tolist() for level in scope.lods.get(var.name, [])]
        entries[var.name] = entry
    doc = new_manifest(entries, step=request.step, kind=request.kind, position=request.position,
                       trainers=request.trainers, job={"mode": "local"})
    write_manifest(path, doc)
    return doc
