"""The pserver's half of checkpoints: freeze/save/thaw commands and restore at start-up.

`PserverState.on_checkpoint` and `PserverState.restore_from_checkpoints`
delegate here, so the pserver's state machine stays small; the files are
written by psjob.foundation.checkpoint (the numpy-only format, below the framework).

Freeze: `PserverState.freeze` holds a lease (monotonic seconds) under the
state's lock; `PserverState.on_send` waits while it lies in the future, so no
gradient or geo delta changes this pserver's variables until trainer 0
thaws it or the lease runs out. Reads (pulls, prefetches) go on. The lease is
short (PSJOB_CHECKPOINT_FREEZE_LEASE_S, default 10 s) and trainer 0 renews it
while it saves, so a trainer 0 that dies mid-checkpoint stalls training for at
most one lease — and its restarted successor thaws at once (an id-less thaw).
The freeze carries an id (one save): a renew or thaw naming
another id — the freeze expired, was released or replaced — answers
`expired`, and trainer 0 abandons that save. A lease above
protocol.MAX_FREEZE_LEASE_S (600 s) is refused (INVALID_ARGUMENT).

Where: a served pserver writes table shards (`psjob:save`, and the legacy
checkpoint block), when PSJOB_SAVE_ROOTS is set, only inside its save roots
(`state.save_roots`: the job's checkpoint root PSJOB_CHECKPOINT_DIR, the working
directory, where a Fluid script's relative save_persistables path lands, and
PSJOB_SAVE_ROOTS; unset, anywhere, as Paddle's pservers); any other
dirname — absolute elsewhere, `..` out, a symlink out, another bucket — is
refused with PERMISSION_DENIED naming the roots, before anything is written.

Save (`psjob:save`): while frozen nothing mutates the table (async updates wait; a sync
round cannot complete while trainer 0, who is checkpointing, has not sent its
barrier), so the shard is written without holding the lock and prefetches
keep being served. The table is a `psjob.foundation.tables.SparseTable`; its export (rows keyed
by id with their optimizer state) is taken under the lock unless frozen, and
written by `tables.save_shard`. A plain tag (Fluid's checkpoint_notify op) runs the
program's checkpoint block as before (`sparse_table_save`, under the lock).

A job may have several distributed tables; a pserver writes one shard of each
(`{table: shard entry}`, the manifest's `tables`).

Load (`psjob:load`, fleet.load_model): this pserver's part of the whole-model save in
dirname replaces its variables and is imported into its tables (ids the save lacks keep
their rows), once the updates already running finished and under the lock, so no update
or read sees half of it; everything is read and checked first (checkpoint_restore), so a
bad save raises and changes nothing. It reads only inside the save roots.

Deltas (foundation/checkpoint/chain.py): a save naming a chain link hands each table's
tracked changes (`SparseTable.take_changes`: rows changed, ids evicted) to
that link and keeps them as pending until the link is committed; a delta
writes, per table, the pending changes of every uncommitted save since its
parent (a failed or abandoned save loses nothing). `state.delta_base` — the link the
pending changes are relative to — is set by a commit of the link this pserver
saved, and by a restore; the freeze answers it, so trainer 0 writes a delta
only when every pserver can.
"""
from __future__ import annotations

import logging
import os
import posixpath
import time

import numpy as np

from psjob.cluster import checkpoint_protocol as protocol
from psjob.cluster.pserver.checkpoint_restore import is_state_var, load_pserver_slices, restore_newest
from psjob.fluid.transpiler.pserver_pass import TABLE_PATH_VAR
from psjob.foundation.checkpoint import storage, tables
from psjob.foundation.checkpoint.backend import Storage
from psjob.foundation.tables import SparseTable
from psjob.foundation.tables.table import sorted_unique

log = logging.getLogger("psjob.foundation.checkpoint")


def table_placement(program):
    """(tables, shard index, shard count) of the distributed tables this pserver holds a
    shard of, or None when the job has none."""
    tables = list(getattr(program, "_distributed_lookup_tables", None) or [])
    if not tables:
        return None
    eps = list(getattr(program, "_endpoints", None) or [])
    ep = getattr(program, "_ps_endpoint", "")
    if ep not in eps:
        raise RuntimeError(f"pserver program for {ep!r} does not list itself among the endpoints {eps}")
    return tables, eps.index(ep), len(eps)


def pserver_only_persistables(program) -> list[str]:
    """State the trainers' overview does not describe (LR decay counters, learning rates)."""
    overview = getattr(program, "_parameters_on_pservers", None)
    tables = set(getattr(program, "_distributed_lookup_tables", None) or [])
    out = []
    for var in program.global_block().vars.values():
        if not is_state_var(var) or var.name in tables:
            continue
        if overview is not None and overview.get_distributed_var_by_slice(var.name) is not None:
            continue
        out.append(var.name)
    return sorted(out)


def handle(state, dirname: str, step: int, tag: str) -> list[str]:
    command, params = protocol.parse_tag(tag)
    if command == protocol.FREEZE:
        lease = _lease(params)
        version = state.freeze(params.get("id", ""), lease)  # replaces any older freeze
        log.info("pserver %s frozen for checkpoint step %s (lease %.1fs)", state.endpoint, step, lease)
        return protocol.encode_reply({"incarnation": state.incarnation, "version": version,
                                      "endpoint": state.endpoint, "delta_base": state.delta_base,
                                      "persistables": pserver_only_persistables(state.program)})
    if command == protocol.RENEW:
        held = state.renew(params.get("id", ""), _lease(params))
        return protocol.encode_reply({"incarnation": state.incarnation, "expired": not held})
    if command == protocol.THAW:
        # An id-less thaw: a (restarted) trainer 0 releases whatever is held; an
        # older trainer's save still inside it then finds its freeze gone.
        expired, released = state.thaw(params.get("id"))
        if released:
            log.warning("pserver %s: released a checkpoint freeze left by an earlier trainer 0", state.endpoint)
        return protocol.encode_reply({"incarnation": state.incarnation, "expired": expired,
                                      "released": released})
    if command == protocol.COMMIT:
        telemetry = getattr(state, "telemetry", None)
        if telemetry is not None:
            telemetry.m.last_checkpoint_timestamp.set(time.time())
            telemetry.m.last_checkpoint_step.clear()  # one series: the newest checkpoint
            telemetry.m.last_checkpoint_step.labels(dirname).set(int(step))
            _stream_gauges(telemetry.m, params)
        state.last_checkpoint = (int(step), dirname)
        _committed(state, params.get("link", ""))
        return protocol.encode_reply({"incarnation": state.incarnation, "delta_base": state.delta_base})
    if command == protocol.FAILED:
        error = params.get("error", "")
        log.warning("pserver %s: checkpoint step %s into %s failed on trainer 0: %s", state.endpoint, step,
                    dirname, error)
        telemetry = getattr(state, "telemetry", None)
        if telemetry is not None:
            telemetry.m.checkpoint_failures.inc()
            telemetry.m.last_checkpoint_failure_timestamp.set(time.time())
            telemetry.m.last_checkpoint_failure_step.clear()  # one series: the newest failure
            telemetry.m.last_checkpoint_failure_step.labels(error).set(int(step))
        state.last_checkpoint_failure = (int(step), error)
        return protocol.encode_reply({"incarnation": state.incarnation})
    if command == protocol.LOAD:
        check_save_dir(state, dirname)
        only = [params["table"]] if params.get("table") else None
        return protocol.encode_reply({"incarnation": state.incarnation,
                                      **load_save(state, dirname, only, params_only=params.get("params") == "1")})
    if command == protocol.SHRINK:
        return protocol.encode_reply({"incarnation": state.incarnation, "removed": shrink_tables(state)})
    if command == protocol.SAVE:
        check_save_dir(state, dirname)
        return protocol.encode_reply({"incarnation": state.incarnation,
                                      "tables": save_table(state, dirname, step, params)})
    check_save_dir(state, dirname)
    return legacy_save(state, dirname)


def _stream_gauges(m, params: dict) -> None:
    """A stream job's commit carries where the checkpoint is in the stream (psjob.training.stream):
    the newest folder it holds, that folder's done-marker time, and since when complete folders
    wait that it does not hold (0: none)."""
    if "stream_folder" not in params:
        return
    try:
        until, behind = float(params.get("stream_until", 0)), float(params.get("stream_behind_since", 0))
    except ValueError:
        return
    m.stream_published_until.clear()  # one series: the newest checkpoint's folder
    m.stream_published_until.labels(params["stream_folder"]).set(until)
    m.stream_behind_since.set(behind)


def check_save_dir(state, dirname: str) -> None:
    """PermissionError unless `dirname` lies inside one of `state.save_roots` (None: anywhere)."""
    roots = getattr(state, "save_roots", None)
    if roots is None:
        return
    if not dirname:
        raise ValueError("checkpoint command: no directory to save into")
    if any(_inside(dirname, root) for root in roots):
        return
    raise PermissionError(f"pserver {state.endpoint} saves only under {', '.join(roots)} (the job's checkpoint "
                          f"root, the working directory and PSJOB_SAVE_ROOTS), not {dirname!r}")


def _inside(path: str, root: str) -> bool:
    if storage.is_uri(path) or storage.is_uri(root):
        if not (storage.is_uri(path) and storage.is_uri(root)):
            return False
        scheme, rest = path.split("://", 1)
        root_scheme, root_rest = root.split("://", 1)
        norm, root_norm = posixpath.normpath("/" + rest), posixpath.normpath("/" + root_rest)
        return scheme == root_scheme and (norm == root_norm or norm.startswith(root_norm.rstrip("/") + "/"))
    # Resolved: `..` and symlinks cannot lead out (relative paths are the working directory's).
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, real_root]) == real_root


def _lease(params) -> float:
    raw = params.get("lease", "")
    try:
        lease = float(raw) if raw else protocol.DEFAULT_FREEZE_LEASE_S
    except ValueError:
        raise ValueError(f"checkpoint command: lease={raw!r} is not a number of seconds") from None
    if not 0 < lease < float("inf"):
        raise ValueError(f"checkpoint command: lease={raw!r} must be a positive number of seconds")
    if lease > protocol.MAX_FREEZE_LEASE_S:
        raise ValueError(f"checkpoint command: lease={raw!r} exceeds the longest freeze a pserver grants, "
                         f"{protocol.MAX_FREEZE_LEASE_S:.0f} seconds")
    return lease


def legacy_save(state, dirname: str) -> list[str]:
    """Fluid's checkpoint_notify: run the program's checkpoint block (a `sparse_table_save` per
    table, one .npz of ids and values per shard); the file names written."""
    if state.checkpoint_block < 0:
        return []
    ops = state.program.block(state.checkpoint_block).ops
    with state.exclusive():
        state.scope.vars[TABLE_PATH_VAR] = str(dirname)
        state.exe.run_block(state.program, state.checkpoint_block, state.scope)
        return [f for op in ops for f in state.scope.vars[op.output("Out")[0]]]


def load_save(state, dirname: str, tables_only=None, params_only=False) -> dict:
    """fleet.load_model: load this pserver's part of the whole-model save in `dirname` into the
    live state (module docstring); the variables loaded and those the save lacks. `tables_only`
    (fleet.load_one_table): those tables' rows alone; `params_only` (fleet.load_inference_model):
    the parameters and tables' rows, no optimizer state."""
    t0 = time.monotonic()
    with state.exclusive():
        state.updates.wait_for_updates()
        loaded, missing = load_pserver_slices(state.exe, dirname, state.program, scope=state.scope,
                                              endpoint=state.endpoint, tables_only=tables_only,
                                              params_only=params_only)
    log.info("pserver %s loaded %d variable(s) from %s in %.2fs%s", state.endpoint, len(loaded), dirname,
             time.monotonic() - t0, f"; the save lacks {', '.join(missing[:8])}" if missing else "")
    return {"loaded": loaded, "missing": missing}


def _committed(state, link: str) -> None:
    """Trainer 0 committed chain link `link`: if this pserver saved it, its changes are on disk
    and the next delta may be written on top of it."""
    if not link or link != getattr(state, "last_saved_link", None):
        return
    pending = state.pending_changes
    done = [i for i, (lid, _changes) in enumerate(pending) if lid == link]
    if done:
        del pending[:done[-1] + 1]
    placement = table_placement(state.program)
    live = [state.scope.vars.get(t) for t in (placement[0] if placement else [])]
    tracking = all(isinstance(sparse, SparseTable) and sparse.tracking_changes for sparse in live)
    state.delta_base = link if tracking else None  # a delta needs the changes since this link


def _take_changes(state, live: dict, link: str, params: dict):
    """Hand every table's changes to the save of `link`; {table: (changed ids, evicted ids)}
    since the pserver's delta base, or None when the tables do not track changes. Called under
    the lock or while frozen, with the tables' export. `state.pending_changes` holds
    (link, {table: (changed, evicted)}) per uncommitted save."""
    if not all(sparse.tracking_changes for sparse in live.values()):
        if params.get("track") == "1":
            for sparse in live.values():  # from this save on: it is a base, the next may be a delta
                if not sparse.tracking_changes:
                    sparse.track_changes()
        return None
    state.pending_changes.append((link, {name: sparse.take_changes() for name, sparse in live.items()}))
    if len(state.pending_changes) == 1:  # the common case: the last save was committed
        return state.pending_changes[0][1]
    merged = {}
    for name in live:
        saves = [changes[name] for _l, changes in state.pending_changes if name in changes]
        merged[name] = (sorted_unique(np.concatenate([c for c, _g in saves])),
                        sorted_unique(np.concatenate([g for _c, g in saves])))
    return merged


def save_table(state, dirname: str, step: int, params: dict | None = None) -> dict:
    """Write this pserver's shard of each distributed table; {table: shard entry}. `params`
    (the SAVE command's): link, kind (base|delta), parent, track (module docstring)."""
    params = params or {}
    placement = table_placement(state.program)
    if placement is None:
        if params.get("link"):
            state.last_saved_link = params["link"]
        return {}
    names, index, num = placement
    link, delta = params.get("link", ""), params.get("kind") == "delta"
    if delta and (not link or params.get("parent", "") != state.delta_base or state.delta_base is None):
        raise ValueError(f"pserver {state.endpoint} cannot write a delta on checkpoint {params.get('parent')!r}: "
                         f"its tables' changes are tracked since {state.delta_base or 'no checkpoint'} "
                         "(write a base)")
    t0 = time.monotonic()
    outcome = "error"
    changes = None
    out = {}
    try:
        with state.exclusive():
            frozen = state.frozen
            live = {name: _sparse_table(state.scope, name) for name in names}
            if link:
                changes = _take_changes(state, live, link, params)
                state.last_saved_link = link
            if delta and changes is None:
                raise ValueError(f"pserver {state.endpoint} does not track its tables' changes: write a base")
            if not frozen:
                rows = {name: _export(sparse, changes, name, delta) for name, sparse in live.items()}
        if frozen:  # consistent: a frozen pserver applies no update
            rows = {name: _export(sparse, changes, name, delta) for name, sparse in live.items()}
        for name, sparse in live.items():
            gone = changes[name][1] if delta and changes is not None else None
            out[name] = tables.save_shard(dirname, name, rows[name], index, num,
                                          optimizer=sparse.rule, tombstones=gone)
            log.info("pserver %s saved %d rows%s of table %r for step %s", state.endpoint, out[name]["rows"],
                     f" and {out[name]['tombstones']} tombstones (delta)" if delta else "", name, step)
        outcome = "ok"
    finally:
        telemetry = getattr(state, "telemetry", None)
        if telemetry is not None:
            telemetry.m.checkpoint_duration.labels(outcome).observe(time.monotonic() - t0)
    log.info("pserver %s saved its shard of %d table(s) for step %s in %.2fs", state.endpoint, len(out), step,
             time.monotonic() - t0)
    return out


def shrink_tables(state) -> dict[str, int]:
    """fleet.shrink() on this pserver: {table: rows removed} for its accessor tables."""
    placement = table_placement(state.program)
    removed = {}
    for name in placement[0] if placement is not None else []:
        sparse = state.scope.vars.get(name)
        if isinstance(sparse, SparseTable) and sparse.config.accessor is not None:
            removed[name] = sparse.shrink()
    if removed:
        log.info("pserver %s: fleet.shrink removed %s", state.endpoint, removed)
    return removed


def _export(sparse, changes, name: str, delta: bool):
    """The rows a save writes: all of them, or for a delta those changed since its parent."""
    if not delta:
        return sparse.export()
    return sparse.export(ids=changes[name][0] if changes is not None else None)


def _sparse_table(scope, name):
    value = scope.vars.get(name)
    if not isinstance(value, SparseTable):
        raise RuntimeError(f"the distributed table {name!r} holds {type(value).__name__}, not a SparseTable "
                           "(run the pserver startup program first)")
    return value


def restore(state, root: str, digest: bool = False, store: Storage | None = None):
    """Load this pserver's part of the newest good checkpoint under root (or None); `store`:
    root's, resolved once by the caller."""
    with state.exclusive():
        info = restore_newest(state.exe, root, state.program, state.scope, digest=digest, store=store)
        if info is not None:
            state.restored_step = info.step
            _track_from_restore(state, info)
        return info


def _track_from_restore(state, info) -> None:
    """After a restore the table holds exactly checkpoint `info`: with PSJOB_CHECKPOINT_INCREMENTAL,
    track its changes from here, so the next checkpoint may be a delta on it."""
    placement = table_placement(state.program)
    link = (info.manifest or {}).get("chain") or {}
    if not getattr(state, "incremental_checkpoints", False) or not link.get("id"):
        return
    if placement is not None:
        live = [state.scope.vars.get(name) for name in placement[0]]
        if not all(isinstance(sparse, SparseTable) for sparse in live):
            return
        for sparse in live:
            sparse.track_changes()
    state.pending_changes = []
    state.delta_base = link["id"]
    state.last_saved_link = link["id"]


def adopt_peer_completions(state, token: str = "", timeout_s: float = 2.0, tls="env") -> list[int]:
    """Mark completed the trainers the other pservers saw complete (a restarted pserver
    lost that; without it, it would wait for them forever). Unreachable peers are skipped.

    The peers are asked through a GrpcPSClient, so the call carries the job token and
    speaks TLS exactly when this process is configured for it (`tls`: the pserver's
    own TlsFiles, or "env" for PSJOB_TLS_*); one attempt per peer, all peers at once,
    each bounded by `timeout_s`. A peer that refuses the connection is skipped at once: it is
    restarting too (every pserver of a resized job starts at the same time) and knows
    nothing this one lost."""
    from concurrent.futures import ThreadPoolExecutor

    from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy, RpcError
    peers = [ep for ep in getattr(state.program, "_endpoints", None) or [] if ep != state.endpoint]
    if not peers:
        return []
    client = GrpcPSClient(peers, auth_token=token, tls=tls,
                      retry=RetryPolicy(deadline_s=timeout_s, max_attempts=1))

    def ask(ep):
        try:
            return [int(t) for t in client.probe_status(ep, deadline=timeout_s).completed_trainers]
        except RpcError as exc:
            log.info("pserver %s: peer %s did not say which trainers completed: %s", state.endpoint, ep, exc)
            return []

    try:
        with ThreadPoolExecutor(max_workers=min(len(peers), 16)) as pool:
            done = {t for answer in pool.map(ask, peers) for t in answer}
    finally:
        client.close()
    for t in sorted(done):
        state.on_complete(t)
    if done:
        print(f"[psjob] pserver {state.endpoint}: trainers {sorted(done)} had already completed", flush=True)
    return sorted(done)
