"""Load a pserver's slices out of a whole-model save (`fleet.init_server(model_dir)`).

A model saved by trainer 0 (`fluid.io.save_persistables` on the original
program, psjob.vars format) holds every parameter and optimizer accumulator
whole. A pserver needs only the slices it hosts: the transpiler's
`VarsDistributed` overview says, for each pserver variable, which origin it
slices and at which element offset. Variables saved under their own name
(not sliced) load directly; a distributed lookup table loads the rows of the
ids its shard owns (transpiler.placement). Everything is read and checked
before the scope is touched: a missing or mis-shaped variable raises and the
pserver keeps its startup values.
"""
from __future__ import annotations

import numpy as np

from ..fluid import io as fio
from ..fluid.core import global_scope
from ..fluid.transpiler import placement


def _piece(arr: np.ndarray, offset: int, shape) -> np.ndarray:
    size = int(np.prod(shape)) if len(shape) else 1
    flat = arr.reshape(-1)
    if offset + size > flat.size:
        raise fio.CheckpointError(f"slice at offset {offset} of {size} elements exceeds the saved "
                                  f"variable's {flat.size}")
    return flat[offset:offset + size].reshape(shape)


def load_pserver_slices(executor, dirname, pserver_program, overview, endpoint, scope=None):
    scope = scope or global_scope()
    manifest = fio._read_manifest(dirname)
    saved = manifest["vars"]
    block = pserver_program.global_block()
    table = pserver_program._distributed_lookup_table
    loaded, missing, cache = {}, [], {}

    def read(name):
        if name not in cache:
            cache[name] = fio._read_array(dirname, saved[name], name, {})
        return cache[name]

    for var in block.vars.values():
        if not fio.is_persistable(var):
            continue
        shape = tuple(var.shape)
        if var.name in saved:
            arr = read(var.name)
        else:
            dv = overview.get_distributed_var_by_slice(var.name) if overview is not None else None
            if dv is not None and dv.origin.name in saved:
                arr = _piece(read(dv.origin.name), dv.offset, shape)
            elif table and var.name.startswith(table) and table in saved:
                eps = list(pserver_program._endpoints or [])
                k = eps.index(endpoint) if endpoint in eps else 0
                full = read(table)
                arr = full[placement.shard_ids(full.shape[0], k, max(1, len(eps)))]
            else:
                missing.append(var.name)
                continue
        if shape and tuple(arr.shape) != shape:
            raise fio.CheckpointError(f"{dirname}: {var.name!r} would load shape {list(arr.shape)}, the pserver "
                                      f"program declares {list(shape)}")
        loaded[var.name] = np.array(arr, dtype=var.dtype, copy=True)
    params = {p.name for p in block.all_parameters()} | {
        v.name for v in block.vars.values() if fio.is_persistable(v) and overview is not None
        and (overview.get_distributed_var_by_slice(v.name) or None) is not None
        and overview.get_distributed_var_by_slice(v.name).vtype == "Param"}
    lost = sorted(set(missing) & params)
    if lost:
        raise fio.CheckpointError(f"{dirname} lacks parameters this pserver holds: {', '.join(lost[:8])}")
    xp = executor.xp
    for name, arr in loaded.items():
        scope.vars[name] = arr if xp is np else xp.asarray(arr)
    return sorted(loaded), missing
