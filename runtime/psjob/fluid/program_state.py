"""fluid.io.save / fluid.io.load (also fluid.save / fluid.load, Fluid 1.6+) and
paddle.static.save / load, which Paddle 2.x kept with the same files: a program's state
under a path prefix.

    <prefix>.pdparams    the parameters, one .npz
    <prefix>.pdopt       the other persistables (optimizer state, counters), one .npz
    <prefix>.pdmodel     the program (psjob.program JSON) and {name: shape, dtype, sha256}
                         of every array saved beside it

The content is psjob's, not Paddle's protobuf/pickle: a psjob save loads in psjob. Every
file is written under a temporary name and renamed into place; a load checks every array
against the sha256, shape and dtype recorded in the .pdmodel and against the program before
anything is written into the scope, so a bad file raises and the scope keeps its values.
paddle.static's inference-model files (psjob.static.io) share these helpers.
See https://www.paddlepaddle.org.cn/documentation/docs/en/1.8/api/io/save.html
"""
from __future__ import annotations

import json
import os

import numpy as np

from psjob.fluid import io as fluid_io
from psjob.fluid.core import global_scope
from psjob.fluid.executor import Executor
from psjob.fluid.framework import Program, Variable
from psjob.fluid.serialization import program_to_dict
from psjob.foundation.checkpoint.format import CheckpointError, array_sha256, atomic_write

__all__ = ["save", "load", "load_program_state", "set_program_state"]

FORMAT = "psjob.paddle2"


def _prefix(path, what):
    if not isinstance(path, str) or not path or path.endswith(("/", os.sep)):
        raise ValueError(f"{what}: the path must be a file prefix such as 'output/model', got {path!r}")
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    return path


def _arrays(scope, names, what):
    out = {}
    for name in names:
        if name not in scope.vars:
            raise CheckpointError(f"{what}: {name!r} has no value in the scope (run the startup program first)")
        out[name] = fluid_io._value_to_array(name, scope.vars[name])
    return out


def _write_npz(path, arrays):
    atomic_write(path, lambda f: np.savez(f, **arrays))
    return {n: {"shape": list(a.shape), "dtype": a.dtype.name, "sha256": array_sha256(a)}
            for n, a in arrays.items()}


def _write_model(path, doc):
    data = json.dumps(doc, sort_keys=True).encode()
    atomic_write(path, lambda f: f.write(data))


def _read_model(path):
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"cannot read {path}: {exc}") from exc
    if doc.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a psjob save (format {doc.get('format')!r})")
    return doc


def _read_npz(path, records):
    """{name: array} of the names in `records`, each checked against its record."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {n: npz[n] for n in records}
    except (OSError, KeyError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path}: {exc}") from exc
    for name, arr in arrays.items():
        rec = records[name]
        if list(arr.shape) != rec["shape"] or arr.dtype.name != rec["dtype"] or array_sha256(arr) != rec["sha256"]:
            raise CheckpointError(f"{path}: {name!r} does not match its record in the .pdmodel "
                                  "(a corrupt or mixed-up file)")
    return arrays


def _into_scope(program, arrays, scope, xp=np):
    """Check every array against the program, then write them all."""
    block = program.global_block()
    for name, arr in arrays.items():
        var = block._find_var_recursive(name)
        if var is not None:
            fluid_io._check_fits(name, arr, var)
    for name, arr in arrays.items():
        scope.vars[name] = arr if xp is np else xp.asarray(arr)


# -- save / load ------------------------------------------------------------------------

def save(program, model_path, protocol=4, **configs):
    """Parameters to <model_path>.pdparams, other persistables to .pdopt, the program to .pdmodel."""
    if not isinstance(program, Program):
        raise TypeError(f"paddle.static.save needs a Program, got {type(program).__name__}")
    path = _prefix(model_path, "paddle.static.save")
    scope = global_scope()
    persistables = [v for v in program.list_vars() if fluid_io.is_persistable(v)]
    params = [v.name for v in persistables if fluid_io.is_parameter(v)]
    others = [v.name for v in persistables if not fluid_io.is_parameter(v)]
    records = {"params": _write_npz(path + ".pdparams", _arrays(scope, params, "paddle.static.save")),
               "opt": _write_npz(path + ".pdopt", _arrays(scope, others, "paddle.static.save"))}
    _write_model(path + ".pdmodel", {"format": FORMAT, "program": program_to_dict(program), "arrays": records})


def load_program_state(model_path, var_list=None):
    """{name: ndarray} of a paddle.static.save (parameters and, when saved, optimizer state)."""
    doc = _read_model(model_path + ".pdmodel")
    state = {}
    for kind, ext in (("params", ".pdparams"), ("opt", ".pdopt")):
        records = doc["arrays"].get(kind, {})
        if var_list is not None:
            wanted = {v.name if isinstance(v, Variable) else v for v in var_list}
            records = {n: r for n, r in records.items() if n in wanted}
        if records:
            state.update(_read_npz(model_path + ext, records))
    return state


def set_program_state(program, state_dict):
    """Write the arrays of `state_dict` that `program` declares into the global scope."""
    names = {v.name for v in program.list_vars() if fluid_io.is_persistable(v)}
    _into_scope(program, {n: np.asarray(a) for n, a in state_dict.items() if n in names}, global_scope())


def load(program, model_path, executor=None, var_list=None):
    """Load a paddle.static.save into the scope: every persistable of `program` must be in it."""
    if not isinstance(program, Program):
        raise TypeError(f"paddle.static.load needs a Program, got {type(program).__name__}")
    state = load_program_state(model_path, var_list)
    wanted = [v for v in program.list_vars() if fluid_io.is_persistable(v)]
    if var_list is not None:
        names = {v.name if isinstance(v, Variable) else v for v in var_list}
        wanted = [v for v in wanted if v.name in names]
    missing = [v.name for v in wanted if v.name not in state]
    if missing:
        raise CheckpointError(f"paddle.static.load: {model_path} holds no {', '.join(sorted(missing)[:10])}")
    xp = executor.xp if isinstance(executor, Executor) else np
    _into_scope(program, {v.name: state[v.name] for v in wanted}, global_scope(), xp)
