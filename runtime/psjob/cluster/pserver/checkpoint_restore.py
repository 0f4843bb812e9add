"""A pserver loads its part of a whole-model save (Fluid's `fluid.io._load_distributed_persistables`).

Trainer 0 saves every parameter and optimizer accumulator whole (it pulls the
slices and reassembles them), and the pservers save the distributed table
by feature id. A pserver needs only what it hosts. For each variable of its
program (the main or the startup program — both declare the same ones):

    saved under its own name          loaded whole (unsliced parameters,
                                      accumulators, learning rates, counters)
    a slice in the overview           cut out of the saved origin at the
                                      slice's element offset (parameter blocks
                                      and param-shaped accumulators such as
                                      `<p>_moment1_0.block1`; origin-shaped
                                      ones such as `<p>_beta1_pow_acc_0.block1`
                                      are the whole origin)
    a distributed table (each of them) the saved rows whose ids `shard_of` gives
                                      this pserver, imported into its SparseTable
                                      (tables.read_rows / import_into); a dense
                                      table saved whole loads as ids 0..H-1

so a checkpoint written with N pservers loads into M. Everything is read and
checked (sha256, shapes) before the scope is touched — every dense file of the
save, not only this pserver's: the trainers' own persistables too, since they
resume from the checkpoint the pservers restore — and a bad file raises
CheckpointError and the pserver keeps its previous values.

A delta checkpoint (foundation/checkpoint/chain.py) restores its dense variables from
itself and the table from its chain: the base's rows, then each delta's
tombstones and rows in order (chain.read_chain_rows), all read and checked
before the table is touched.

`restore_newest` walks the checkpoints of a root newest first and falls back
to an older one when a file turns out to be corrupt, logging why (a corrupt
file in a chain's link marks that link, so every delta on it is skipped too).
"""
from __future__ import annotations

import logging

import numpy as np

from psjob.fluid.core import global_scope
from psjob.fluid.framework import VarType
from psjob.fluid.transpiler.slicing import get_varname_parts
from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint.backend import Storage
from psjob.foundation.checkpoint.format import CheckpointError, CorruptFileError, read_manifest, read_var
from psjob.foundation.checkpoint.store import check_whole, committed, is_checkpoint_root, mark_corrupt
from psjob.foundation.checkpoint.tables import dense_rows, import_into, read_rows, rows_digest
from psjob.foundation.tables import SparseTable

log = logging.getLogger("psjob.foundation.checkpoint")


def is_state_var(var) -> bool:
    """Persistable values a checkpoint restores: not gradients, trainer slots or RAW handles."""
    if not var.persistable or var.type in (VarType.RAW, VarType.SELECTED_ROWS):
        return False
    origin, _block, trainer = get_varname_parts(var.name)
    return not origin.endswith("@GRAD") and not trainer


def _piece(arr: np.ndarray, offset: int, shape) -> np.ndarray:
    size = int(np.prod(shape)) if len(shape) else 1
    flat = arr.reshape(-1)
    if offset + size > flat.size:
        raise CheckpointError(f"slice at offset {offset} of {size} elements exceeds the saved "
                              f"variable's {flat.size}")
    return flat[offset:offset + size].reshape(shape)


def _endpoint_of(program, endpoint):
    if endpoint:
        return endpoint
    ep = getattr(program, "_ps_endpoint", "")
    if not ep:
        for op in program.global_block().ops:
            if op.type == "listen_and_serv":
                ep = op.attr("endpoint", "")
    if not ep:
        raise ValueError("loading a pserver's slices needs its endpoint: pass current_endpoint to "
                         "DistributeTranspiler.transpile, or use the program of get_pserver_program(ep)")
    return ep


def load_pserver_slices(executor, dirname, program, overview=None, endpoint=None, scope=None, tables_only=None,
                        params_only=False):
    """Load this pserver's variables from the save in `dirname`; (loaded names, missing names).
    `tables_only`: load only these distributed tables' rows (fleet.load_one_table), which the
    save must hold; every other variable keeps its value. `params_only`: the parameters and
    the tables' rows alone (fleet.load_inference_model); optimizer accumulators and counters
    keep their values even where the save holds them."""
    scope = scope if scope is not None else global_scope()
    overview = overview if overview is not None else getattr(program, "_parameters_on_pservers", None)
    endpoint = _endpoint_of(program, endpoint)
    manifest = read_manifest(dirname)
    saved, saved_tables = manifest["vars"], manifest.get("tables", {})
    placement = _table_placement(program, endpoint)
    shard = placement[1:] if placement else (0, 1)
    table_names = set(placement[0]) if placement else set()
    chain = chains.resolve(dirname, manifest) if table_names and chains.is_delta_doc(manifest) else None
    cache: dict = {}
    npz: dict = {}

    def read(name):
        if name not in cache:
            cache[name] = read_var(dirname, name, saved[name], npz)
        return cache[name]

    loaded, missing, params = {}, [], set()
    table_rows: dict = {}
    if tables_only is not None:
        unknown = sorted(set(tables_only) - table_names)
        if unknown:
            raise CheckpointError(f"{', '.join(unknown)} is not a distributed table of this pserver's program")
    for var in program.global_block().vars.values():
        if not is_state_var(var) or (tables_only is not None and var.name not in tables_only):
            continue
        shape = tuple(var.shape)
        dv = overview.get_distributed_var_by_slice(var.name) if overview is not None else None
        if dv is not None and dv.vtype == "Param":
            params.add(var.name)
        if params_only and var.name not in params and var.name not in table_names:
            continue
        if var.name in table_names:
            params.add(var.name)
            table = var.name
            if table in saved_tables:
                live = scope.vars.get(table)
                rule = live.rule if isinstance(live, SparseTable) else None
                if chain is not None:  # the base, then every delta in order
                    table_rows[table] = chains.read_chain_rows(chain, table, shard[0], shard[1], rule)
                else:
                    table_rows[table] = read_rows(dirname, table, saved_tables[table], shard[0], shard[1], rule)
            elif table in saved:  # a dense table saved whole (single machine): ids 0..H-1
                table_rows[table] = [dense_rows(read(table), shard[0], shard[1])]
            else:
                missing.append(var.name)
            continue
        if var.name in saved:
            arr = read(var.name)
        elif dv is not None and dv.origin.name in saved:
            origin = read(dv.origin.name)
            if tuple(origin.shape) != tuple(dv.origin.shape):
                raise CheckpointError(f"{dirname}: {dv.origin.name!r} was saved with shape {list(origin.shape)}, "
                                      f"this job's program declares {list(dv.origin.shape)}")
            arr = _piece(origin, dv.offset, shape) if dv.is_slice else origin
        else:
            missing.append(var.name)
            continue
        if shape and tuple(arr.shape) != shape:
            raise CheckpointError(f"{dirname}: {var.name!r} would load shape {list(arr.shape)}, the pserver "
                                  f"program declares {list(shape)}")
        # Dense arrays may be shared by several variables (cached origins): each gets its own copy.
        loaded[var.name] = np.array(arr, dtype=var.dtype, copy=True)
    lost = sorted(set(missing) & params)
    if lost:
        raise CheckpointError(f"{dirname} lacks parameters this pserver holds: {', '.join(lost[:8])}")
    # The other dense files too — other pservers' variables, what only trainers hold — before
    # the scope is touched: the trainers resume from the checkpoint the pservers restore, so a
    # damaged file anywhere makes it unusable for all (checkpoint.store.read_dense). A table
    # load (tables_only) reads the table alone.
    for name, entry in sorted(saved.items()) if tables_only is None else ():
        if name not in cache:
            read_var(dirname, name, entry, npz)
    for table in table_rows:
        live = scope.vars.get(table)
        if not isinstance(live, SparseTable):
            raise CheckpointError(f"table {table!r} holds {type(live).__name__} in the scope, not a SparseTable: "
                                  "run the pserver startup program before loading")
    for table, rows in table_rows.items():
        import_into(scope.vars[table], table, rows)
        loaded[table] = None
    xp = executor.xp
    for name, arr in loaded.items():
        if name in table_rows:
            continue
        scope.vars[name] = arr if xp is np else xp.asarray(arr)
    if missing:
        log.warning("pserver %s: %s holds no %s; they keep their startup values", endpoint, dirname,
                    ", ".join(missing[:8]))
    return sorted(loaded), missing


def _table_placement(program, endpoint):
    """(tables, shard index, shard count), or None when the job has no distributed table."""
    tables = list(getattr(program, "_distributed_lookup_tables", None) or [])
    if not tables:
        return None
    eps = list(getattr(program, "_endpoints", None) or [])
    if endpoint not in eps:
        raise ValueError(f"endpoint {endpoint!r} is not one of the job's pservers {eps}")
    return tables, eps.index(endpoint), len(eps)


def report_fallback(path, exc) -> None:
    log.warning("checkpoint %s is unusable (%s); falling back to the previous good checkpoint", path, exc)
    print(f"[psjob] checkpoint {path} is unusable ({exc}); falling back to the previous good checkpoint",
          flush=True)


def restore_newest(executor, root, program, scope=None, endpoint=None, digest: bool = False,
                   store: Storage | None = None):
    """Load the newest checkpoint under root that loads cleanly; its CheckpointInfo, or None if
    root holds none. Raises CheckpointError if checkpoints exist but none can be loaded.
    "Cleanly" is judged on the whole checkpoint, every pserver's files, so that pservers
    restoring together agree on the step: each reads the other shards once more to check
    them (docs/user/checkpoints.md). `digest`: the line it prints gives the restored table's
    rows_digest (see _table_summary). `store`: root's, when the caller resolved it already
    (storage.for_path(root))."""
    problems = []
    for info in committed(root, store):
        try:
            if not info.ok:  # found by a stat: a missing or truncated file, or marked corrupt
                raise CheckpointError(info.reason)
            check_whole(info.path)  # every shard: all pservers choose the same checkpoint
            load_pserver_slices(executor, info.path, program, endpoint=endpoint, scope=scope)
        except CheckpointError as exc:
            problems.append(f"{info.path}: {exc}")
            if isinstance(exc, chains.ChainCorrupt):
                mark_corrupt(exc.link, str(exc))  # the link that holds the bad file: its deltas go too
            elif isinstance(exc, CorruptFileError):
                mark_corrupt(info.path, str(exc))
            report_fallback(info.path, exc)
            continue
        msg = f"[psjob] pserver {_endpoint_of(program, endpoint)} restored step {info.step} from {info.path}"
        msg += _table_summary(program, scope if scope is not None else global_scope(), digest)
        if problems:
            msg += f" (skipped {len(problems)} newer unusable checkpoint(s))"
        print(msg, flush=True)
        log.info(msg)
        return info
    if problems:
        raise CheckpointError(f"no checkpoint under {root} could be loaded:\n  " + "\n  ".join(problems))
    log.info("no complete checkpoint under %s yet; keeping the startup values", root)
    return None


def _table_summary(program, scope, digest: bool) -> str:
    """"; table T: R rows" per distributed table this pserver now holds a shard of (with
    `digest`, ", digest D": checkpoint.tables.rows_digest, so a resize can be checked row for
    row against the checkpoint), or "". The digest exports and sorts the whole table: a second
    copy of it in memory, which a large table's pserver may not have to spare."""
    out = ""
    for table in getattr(program, "_distributed_lookup_tables", None) or []:
        live = scope.vars.get(table)
        if not isinstance(live, SparseTable):
            continue
        if not digest:
            out += f"; table {table}: {len(live)} rows"
            continue
        rows = live.export()
        out += f"; table {table}: {len(rows)} rows, digest {rows_digest(rows)}"
    return out


def load_persistables(executor, dirname, program, scope=None):
    """fluid.io.load_persistables of a pserver's transpiled program (the DISTRIBUTED_LOAD
    hook): `dirname` is a save (it has a manifest) or a checkpoint root, whose newest good
    checkpoint is loaded."""
    if is_checkpoint_root(dirname):
        info = restore_newest(executor, dirname, program, scope=scope)
        if info is None:
            raise CheckpointError(f"{dirname!r} holds no complete checkpoint")
        return info
    return load_pserver_slices(executor, dirname, program, scope=scope)
