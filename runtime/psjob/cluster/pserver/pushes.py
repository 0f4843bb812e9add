"""What a push may hold, checked before any of it is stored; and how a geo delta lands.

A pushed value must name a variable this pserver receives (a gradient slot) or, for a
geo delta, one it holds; a trainer may write only its own slots; dtype and shape (the
row width, for SelectedRows) must be the declared ones.

Non-finite values: a push (gradient or geo delta, dense or sparse rows) holding a NaN or
an infinity is refused as a whole before anything of it is stored or applied — one NaN
would turn the parameter NaN for every trainer and every later checkpoint. The trainer
gets INVALID_ARGUMENT naming the variable; the refusal is counted
(`psjob_pserver_nonfinite_pushes_total{variable}`).

Geo-SGD (Paddle's GeoCommunicator): the trainer sends parameter deltas, added in place.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from psjob.cluster.pserver.state_core import PserverCore, slot_owner
from psjob.fluid.core import SelectedRows, scatter_add
from psjob.foundation.kernels import native


def _all_finite(arr: Any, xp: Any) -> bool:
    """No NaN or infinity in a float array (ints cannot hold one). Exact, one pass (in C for
    contiguous float32/float64 numpy arrays: no bool temporary)."""
    if arr.dtype.kind not in "fc" or arr.size == 0:
        return True
    answer = native.all_finite(arr)
    if answer is not None:
        return answer
    isfinite = np.isfinite if isinstance(arr, np.ndarray) else xp.isfinite
    return bool(isfinite(arr).all())


def check_owner(t: int, names: Iterable[str]) -> None:
    """Trainer t writes only its own receiving slots."""
    for name in names:
        owner = slot_owner(name)
        if owner is not None and owner != t:
            raise ValueError(f"trainer {t} sent {name!r}, the slot of trainer {owner}")


def _declared(core: PserverCore, name: str, is_delta: bool) -> tuple[np.dtype, tuple]:
    """The declared dtype and shape of a variable a push may hold, or KeyError. Remembered per
    core: a program's declarations do not change while it serves, and looking them up (the
    block's var, numpy's dtype from its name) was a few microseconds per tensor of every push."""
    memo = core.push_declarations
    key = (name, is_delta)
    known = memo.get(key)
    if known is not None:
        return known
    gb = core._gb
    allowed = name in gb.vars and gb.var(name).persistable if is_delta else name in core.recv_names
    if not allowed:
        raise KeyError(f"pserver {core.endpoint} does not {'hold' if is_delta else 'receive'} {name!r}")
    decl = gb.var(name)
    found = memo[key] = (np.dtype(decl.dtype), tuple(decl.shape))
    return found


def check_value(core: PserverCore, name: str, value: Any, is_delta: bool) -> Any:
    """`value` as the pserver stores it (in the executor's array module), or an error
    naming what is wrong with it."""
    if isinstance(value, tuple):  # (array, lod) from the wire; LoD is irrelevant to gradients
        value = value[0]
    dtype, shape = _declared(core, name, is_delta)
    xp = core.exe.xp
    got = (value.values if isinstance(value, SelectedRows) else value).dtype
    if got != dtype:
        raise ValueError(f"{name!r}: dtype {got}, expected {dtype}")
    if not _all_finite(value.values if isinstance(value, SelectedRows) else value, xp):
        if core.telemetry is not None:
            core.telemetry.m.nonfinite_pushes.labels(name).inc()
        raise ValueError(f"{name!r} holds NaN or infinite values: the push is refused and the "
                         f"parameters on pserver {core.endpoint} are unchanged")
    if isinstance(value, SelectedRows):
        if value.values.shape[1:] != shape[1:]:
            raise ValueError(f"{name!r}: rows of width {list(value.values.shape[1:])}, expected "
                             f"{list(shape[1:])}")
        if len(value.rows) != value.values.shape[0]:
            raise ValueError(f"{name!r}: {len(value.rows)} row ids for {value.values.shape[0]} rows")
        if xp is not np and core.placement is None:
            value = SelectedRows(xp.asarray(value.rows), xp.asarray(value.values), value.height)
        return value
    if tuple(value.shape) != shape:
        raise ValueError(f"{name!r}: shape {list(value.shape)}, expected {list(shape)}")
    return value if xp is np or core.placement is not None else xp.asarray(value)


def apply_delta(core: PserverCore, name: str, value: Any) -> None:
    """Add a geo delta (dense, or SelectedRows rows) to parameter `name` in place."""
    param: Any = core.scope.vars[name]
    if isinstance(value, SelectedRows):
        scatter_add(core.exe.xp, param, value.rows, value.values)
    else:
        param += value
