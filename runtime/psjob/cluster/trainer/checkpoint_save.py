"""Trainer 0's distributed save (Fluid's `fluid.io._save_distributed_persistables`, crash-safe).

What a save of a transpiled job writes into one directory:

- the variables only the trainer holds, from its scope (metric states, ...);
- every parameter and optimizer accumulator the pservers hold, whole: the
  slices are pulled from their pservers and put back together at the
  offsets of the transpiler's overview (`recv_save`); param-shaped
  accumulators are sliced like their parameter, origin-shaped ones (beta
  pows) are the same on every block and saved once;
- the state only pservers keep (LR-decay counters, learning rates);
- the distributed lookup table: each pserver writes its own shard, keyed by
  feature id (`checkpoint_notify`), and answers its files' checksums;
- last, the manifest, by atomic rename.

The consistent cut: before pulling anything trainer 0 *freezes* every
pserver (protocol.py): no update is applied anywhere until it thaws them,
so everything saved is the state of one instant. In sync mode that instant
is the round boundary trainer 0 stands at (no round can complete without its
barrier); in async and geo modes it is the moment the last pserver
acknowledged the freeze, after trainer 0 flushed its own queued gradients.
The pulls and the table shards happen inside the freeze; the dense files
are written after the thaw (from memory), so training waits only for the
transfer and the table write.

The freeze has a short lease (PSJOB_CHECKPOINT_FREEZE_LEASE_S, default
10 s) that a helper thread renews every lease/4 while the save runs, so a
save may take as long as it needs, but a trainer 0 that dies inside the freeze
holds the pservers for at most one lease (its restarted successor thaws them
at once: periodic.Checkpointer.resume). Each save's freeze carries its own
id, so a save whose freeze expired, or was released by a successor, finds
out at the thaw.

If a pserver restarts during the save (its incarnation changes) or a freeze
lease expires, the save is abandoned: no manifest is written, so the
directory never counts as a checkpoint.

A periodic checkpoint is a link of a chain (foundation/checkpoint/chain.py): its request
carries a `ChainPlan`, a base or a delta on the previous link. A delta is
written only if every pserver's freeze answer says its tracked table changes
start at that parent (`delta_base`); otherwise the save becomes a base. The
pservers then write the changed rows and tombstones of their shard; the
dense variables are whole in every link.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from psjob.cluster import checkpoint_protocol as protocol
from psjob.fluid.core import SelectedRows, global_scope, to_numpy
from psjob.fluid.framework import VarType
from psjob.fluid.io import save_vars
from psjob.fluid.transpiler.slicing import get_varname_parts
from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint import storage
from psjob.foundation.checkpoint.format import CheckpointError, invalidate, new_manifest, write_array, write_manifest
from psjob.foundation.checkpoint.tables import table_entry
from psjob.foundation.settings import Settings, process_settings

log = logging.getLogger("psjob.foundation.checkpoint")


class CheckpointAbandoned(CheckpointError):
    """A save was given up (a pserver restarted, or a freeze expired); no manifest was written."""


@dataclass(frozen=True)
class DistInfo:
    """Where a transpiled job's variables live (the attributes of a transpiled program)."""

    overview: object                 # VarsDistributed
    endpoints: tuple
    tables: tuple = ()          # the distributed lookup tables, first-lookup order
    trainer_id: int = 0
    is_chief: bool = True
    # The settings of the save's RPC client (token, TLS, retries): the trainer's RoleEnv
    # settings; None = this process's environment's (a Fluid script has no RoleEnv).
    settings: Settings | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, program, trainer_id: int | None = None, settings: Settings | None = None) -> DistInfo:
        if not getattr(program, "_is_distributed", False):
            raise ValueError("not a transpiled program: it carries no distributed attributes")
        tid = trainer_id
        if tid is None:
            tid = 0 if program._is_chief else _trainer_id_of(program, settings)
        return cls(program._parameters_on_pservers, tuple(program._endpoints),
                   tuple(program._distributed_lookup_tables), int(tid), bool(program._is_chief), settings)


@dataclass(frozen=True)
class ChainPlan:
    """What link of a chain a save should be: a base, or a delta on the save at `parent_path`
    (its manifest and that manifest's sha256). `track`: ask the pservers to track changes."""

    link_id: str
    parent_path: str = ""
    parent_doc: dict | None = None
    parent_sha256: str = ""
    track: bool = True

    @property
    def delta(self) -> bool:
        return bool(self.parent_path)

    @property
    def parent_id(self) -> str:
        return (chains.link_of(self.parent_doc) or {}).get("id", "")


@dataclass(frozen=True)
class SaveRequest:
    """What a save records besides the arrays."""

    step: int | None = None
    position: dict | None = None      # trainer 0's data position {"step", "epoch", "offset", ...}
    trainers: dict | None = None      # other trainers' positions (async/geo)
    mode: str = ""
    kind: str = "persistables"        # "checkpoint" for periodic ones
    freeze_lease_s: float | None = None  # None: PSJOB_CHECKPOINT_FREEZE_LEASE_S, else 10 s
    extra: dict = field(default_factory=dict)
    chain: ChainPlan | None = None    # a chain link (periodic checkpoints); None: outside chains
    commit: dict = field(default_factory=dict)  # parameters of the COMMIT the pservers export (a stream's place)


def _trainer_id_of(program, settings: Settings | None) -> int:
    for block in program.blocks:
        for op in block.ops:
            if op.attr("trainer_id") is not None:
                return int(op.attr("trainer_id"))
    return (process_settings() if settings is None else settings).process.trainer_id


# -- what goes where -------------------------------------------------------------------

def _saveable(var) -> bool:
    if not var.persistable or var.type == VarType.RAW:
        return False
    return not get_varname_parts(var.name)[0].endswith("@GRAD")


def remote_groups(program, dist: DistInfo) -> dict:
    """origin name -> its pieces on the pservers, for the persistables `program` declares."""
    declared = {v.name for v in program.list_vars() if _saveable(v)}
    groups: dict = {}
    if dist.overview is None:
        return groups
    for dv in dist.overview.get_distributed_vars_by_vtypes(["Param", "Optimizer", "RemotePrefetch"]):
        if dv.origin.name in declared:
            groups.setdefault(dv.origin.name, []).append(dv)
    return groups


def local_vars(program, dist: DistInfo, remote: dict) -> list:
    """The persistables the trainer itself holds (Fluid's `__exclude_vars`)."""
    skip = set(remote) | set(dist.tables)
    seen, out = set(), []
    for v in program.list_vars():
        if _saveable(v) and v.name not in skip and v.name not in seen:
            seen.add(v.name)
            out.append(v)
    return out


def assemble(origin: str, pieces: list, values: dict) -> np.ndarray:
    """One origin variable from its pulled pieces (slices at element offsets, or whole copies)."""
    first = pieces[0].origin
    shape, dtype = tuple(first.shape), np.dtype(first.dtype)
    sliced = [p for p in pieces if p.is_slice]
    if not sliced:
        whole = min(pieces, key=lambda p: p.block_id)
        arr = np.asarray(values[(whole.endpoint, whole.slice.name)])
        if tuple(arr.shape) != shape:
            raise CheckpointError(f"{origin}: pserver {whole.endpoint} sent shape {list(arr.shape)}, "
                                  f"expected {list(shape)}")
        return np.array(arr, dtype=dtype, copy=True)
    out = np.empty(int(np.prod(shape)), dtype=dtype)
    covered = 0
    for p in sorted(sliced, key=lambda p: p.offset):
        part = np.asarray(values[(p.endpoint, p.slice.name)]).reshape(-1)
        if p.offset + part.size > out.size:
            raise CheckpointError(f"{origin}: slice {p.slice.name} at offset {p.offset} overruns {out.size}")
        out[p.offset:p.offset + part.size] = part
        covered += part.size
    if covered != out.size:
        raise CheckpointError(f"{origin}: the pservers' slices cover {covered} of {out.size} elements")
    return out.reshape(shape)


# -- the RPC side ----------------------------------------------------------------------

def rpc_service(executor, program, dist: DistInfo):
    """(raw client, flush or None, close or None): the trainer's own RPC service when it has
    one (bypassing an async communicator's cache), else a temporary client."""
    from psjob.cluster.trainer import client_service
    svc = executor.services.get("rpc") or client_service.installed()
    if svc is not None:
        return getattr(svc, "client", svc), getattr(svc, "flush", None), None
    from psjob.cluster.rpc.auth import job_token
    from psjob.cluster.rpc.client import GrpcPSClient
    settings = process_settings() if dist.settings is None else dist.settings
    client = GrpcPSClient(list(dist.endpoints), dist.trainer_id, auth_token=job_token(settings), settings=settings)
    return client, None, client.close


def report_failure(executor, program, dist: DistInfo, dirname: str, step: int, error: str) -> None:
    """Tell every pserver the save of `step` failed (protocol.FAILED: they export it as
    metrics). In the background and best effort: a save often fails because a pserver is
    gone, and training must not wait for it to answer."""
    def send():
        try:
            client, _flush, close = rpc_service(executor, program, dist)
        except Exception as exc:  # noqa: BLE001 - best effort
            log.warning("could not report the failed checkpoint %s: %s", dirname, exc)
            return
        try:
            _command(client, list(dist.endpoints), dirname, step, protocol.FAILED,
                     error=protocol.error_param(error))
        except Exception as exc:  # noqa: BLE001 - best effort
            log.warning("could not report the failed checkpoint %s to the pservers: %s", dirname, exc)
        finally:
            if close is not None:
                close()
    threading.Thread(target=send, name="psjob-checkpoint-failure", daemon=True).start()


def _command(client, endpoints, dirname, step, command, **params) -> dict:
    """Send one checkpoint command to every pserver at once; {endpoint: answer}. Every answer is
    awaited before an error is raised: a pserver still writing its shard when another failed
    must be done before the failed save's directory is removed (it would create it again)."""
    tag, endpoints = protocol.tag(command, **params), list(endpoints)
    if len(endpoints) == 1:
        replies = client.checkpoint_notify(dirname, int(step or 0), tag, endpoints=endpoints)
    else:
        with ThreadPoolExecutor(max_workers=len(endpoints), thread_name_prefix="psjob-ckpt") as pool:
            calls = [pool.submit(client.checkpoint_notify, dirname, int(step or 0), tag, endpoints=[ep])
                     for ep in endpoints]
        replies = {}
        for call in calls:  # all done (the pool was shut down): raise the first error
            replies.update(call.result())
    return {ep: protocol.decode_reply(ep, files) for ep, files in replies.items()}


def _pull_all(client, wanted: dict) -> dict:
    """{(endpoint, name): array} for {endpoint: [names]}, one request per pserver, concurrently."""
    handles = {ep: client.pull(ep, names) for ep, names in wanted.items() if names}
    out = {}
    for ep, h in handles.items():
        for name, value in h.wait().items():
            out[(ep, name)] = value.to_dense() if isinstance(value, SelectedRows) else to_numpy(value)
    return out


# -- save --------------------------------------------------------------------------------

def save(executor, dirname: str, program, dist: DistInfo, request: SaveRequest | None = None,
         scope=None) -> dict:
    """Write a complete distributed save into dirname; returns the manifest written."""
    request = request if request is not None else SaveRequest()
    scope = scope if scope is not None else global_scope()
    remote = remote_groups(program, dist)
    local = local_vars(program, dist, remote)
    tables = [t for t in dist.tables if program.global_block()._find_var_recursive(t)]
    storage.for_path(dirname).makedirs(dirname)
    invalidate(dirname)
    client, flush, close = rpc_service(executor, program, dist)
    try:
        doc = _save(client, flush, dirname, program, dist, request, scope, remote, local, tables)
        try:  # let the pservers report it (metrics); the checkpoint is complete either way
            link = {"link": request.chain.link_id} if request.chain is not None else {}
            _command(client, list(dist.endpoints), dirname, request.step, protocol.COMMIT, **request.commit, **link)
        except Exception as exc:  # noqa: BLE001 - best effort
            log.warning("could not tell the pservers about checkpoint %s: %s", dirname, exc)
        return doc
    finally:
        if close is not None:
            close()


def _save(client, flush, dirname, program, dist, request, scope, remote, local, tables) -> dict:
    t0 = time.monotonic()
    if flush is not None:
        flush()  # async: this trainer's queued gradients belong before the cut
    eps = list(dist.endpoints)
    if request.freeze_lease_s is not None:
        lease = request.freeze_lease_s
    else:  # the trainer's settings (PSJOB_CHECKPOINT_FREEZE_LEASE_S)
        lease = (process_settings() if dist.settings is None else dist.settings).checkpoint.freeze_lease_s
    freeze_id = uuid.uuid4().hex
    renewal = _Renewal(client, eps, dirname, request.step, freeze_id, lease)
    frozen = {}
    try:
        frozen = _command(client, eps, dirname, request.step, protocol.FREEZE, id=freeze_id, lease=lease)
        renewal.start()
        plan = _chain_kind(request.chain, frozen, tables)
        pulled, server_vars, shards = _capture(client, dirname, request, remote, local, tables, frozen, plan)
    finally:
        renewal.stop()
        thawed = _command(client, eps, dirname, request.step, protocol.THAW, id=freeze_id)
    restarted = [ep for ep in eps if frozen[ep]["incarnation"] != thawed[ep]["incarnation"]]
    expired = [ep for ep in eps if thawed[ep].get("expired")]
    if restarted or expired:
        why = (f"pserver(s) {', '.join(restarted)} restarted during it" if restarted else
               f"the freeze of {', '.join(expired)} expired or was released before the thaw "
               f"(lease {lease:g}s, renewed every {renewal.every_s:g}s{renewal.trouble()})")
        raise CheckpointAbandoned(f"checkpoint {dirname} abandoned: {why}; no manifest written")
    frozen_s = time.monotonic() - t0

    entries = {}
    arrays = {v.name: _scope_value(scope, v.name) for v in local if v.name not in server_vars}
    arrays.update({origin: assemble(origin, pieces, pulled) for origin, pieces in remote.items()})
    arrays.update(server_vars)
    for name, arr in arrays.items():
        entry = write_array(storage.join(dirname, name), arr)
        entry["file"] = name
        entry["lod"] = [np.asarray(level).tolist() for level in scope.lods.get(name, [])]
        entries[name] = entry
    tables_doc = {}
    delta = plan is not None and plan.delta
    for table in tables:
        var = program.global_block()._find_var_recursive(table)
        tables_doc[table] = table_entry(var.shape[0], var.shape[1], var.dtype, shards[table], delta=delta)
    link = None
    if plan is not None:
        link = (chains.delta_link(plan.link_id, plan.parent_path, plan.parent_doc, plan.parent_sha256) if delta
                else chains.base_link(plan.link_id))
    doc = new_manifest(entries, step=request.step, kind=request.kind, tables=tables_doc or None,
                       position=request.position, trainers=request.trainers,
                       job={"mode": request.mode, "pservers": list(dist.endpoints), "frozen_s": round(frozen_s, 3)},
                       **request.extra, **chains.manifest_version(link))
    write_manifest(dirname, doc)
    return doc


class _Renewal:
    """Renews the freeze every lease/4 from a helper thread while trainer 0 saves.

    A renewal never freezes anew (the pserver extends only the freeze of this id
    while it still holds), so a late renewal after the thaw is harmless. The thread
    is a daemon and stop() does not wait for a renewal stuck on a dead pserver: the
    thaw that follows reports what happened."""

    def __init__(self, client, endpoints, dirname, step, freeze_id, lease_s):
        self.client, self.endpoints, self.dirname, self.step = client, endpoints, dirname, step
        self.freeze_id, self.lease_s = freeze_id, lease_s
        self.every_s = lease_s / 4
        self.renewals = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="psjob-freeze-renewal", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=min(self.every_s, 1.0))

    def trouble(self) -> str:
        return f"; last renewal error: {self.errors[-1]}" if self.errors else ""

    def _run(self):
        while not self._stop.wait(self.every_s):
            try:
                replies = _command(self.client, self.endpoints, self.dirname, self.step, protocol.RENEW,
                                   id=self.freeze_id, lease=self.lease_s)
            except Exception as exc:  # noqa: BLE001 - the thaw decides; keep trying meanwhile
                self.errors.append(str(exc))
                log.warning("could not renew the checkpoint freeze of %s: %s", self.dirname, exc)
                continue
            self.renewals += 1
            lost = [ep for ep, reply in replies.items() if reply.get("expired")]
            if lost:  # nothing to save any more: the thaw will abandon it
                log.warning("checkpoint freeze of %s lost on %s before its renewal", self.dirname,
                            ", ".join(lost))
                return


def thaw_leftover(client, endpoints) -> list[str]:
    """Release any freeze the pservers still hold (an id-less thaw): a restarted trainer 0
    calls it at start-up, so a predecessor killed inside a save stalls no one. Returns
    the endpoints where a live freeze was released."""
    replies = _command(client, list(endpoints), "", 0, protocol.THAW)
    return [ep for ep, reply in replies.items() if reply.get("released")]


def _chain_kind(plan: ChainPlan | None, frozen: dict, tables) -> ChainPlan | None:
    """`plan`, or a base in its place when some pserver cannot write the delta (its tracked
    changes start elsewhere: it restarted, missed a commit, or never tracked)."""
    if plan is None or not plan.delta or not tables:
        return plan
    behind = sorted(ep for ep, reply in frozen.items() if reply.get("delta_base") != plan.parent_id)
    if not behind:
        return plan
    log.info("checkpoint: pserver(s) %s track their changes since another checkpoint than %s; writing a base",
             ", ".join(behind), plan.parent_path)
    return ChainPlan(plan.link_id, track=plan.track)


def _capture(client, dirname, request, remote, local, tables, frozen, plan=None):
    """Inside the freeze: pull the remote pieces and server-only state, have the tables saved
    (shards: {table: [one shard entry per pserver]})."""
    wanted: dict = {}
    for pieces in remote.values():
        for p in pieces:
            wanted.setdefault(p.endpoint, [])
            if p.slice.name not in wanted[p.endpoint]:
                wanted[p.endpoint].append(p.slice.name)
    declared = {v.name for v in local}
    owner = {}
    for ep, reply in frozen.items():
        for name in reply.get("persistables", []):
            if name in declared and name not in owner:
                owner[name] = ep
    for name, ep in owner.items():
        wanted.setdefault(ep, []).append(name)
    pulled = _pull_all(client, wanted)
    server_vars = {name: np.array(pulled[(ep, name)], copy=True) for name, ep in owner.items()}
    shards: dict = {t: [] for t in tables}
    if tables:
        params = {}
        if plan is not None:
            params = {"link": plan.link_id, "kind": "delta" if plan.delta else "base", "track": int(plan.track)}
            if plan.delta:
                params["parent"] = plan.parent_id
        saved = _command(client, list(frozen), dirname, request.step, protocol.SAVE, **params)
        for ep, reply in saved.items():
            for table in tables:
                entry = reply.get("tables", {}).get(table)
                if entry is None:
                    raise CheckpointError(f"pserver {ep} saved no shard of table {table!r}")
                shards[table].append(entry)
    return pulled, server_vars, shards


def _scope_value(scope, name):
    if name not in scope.vars:
        raise CheckpointError(f"cannot save {name!r}: it has no value in the trainer's scope "
                              "(run the startup program first)")
    value = scope.vars[name]
    return value.to_dense() if isinstance(value, SelectedRows) else to_numpy(value)


def save_persistables(executor, dirname, program, scope=None):
    """fluid.io.save_persistables of a transpiled trainer program (the DISTRIBUTED_SAVE
    hook): trainer 0 saves the whole job; other trainers only what they hold."""
    dist = DistInfo.of(program)
    if not dist.is_chief:
        save_vars(executor, dirname, program, vars=local_vars(program, dist, remote_groups(program, dist)),
                  scope=scope, paddle_tensors=False)
        return None
    return save(executor, dirname, program, dist, scope=scope)
