"""paddle.static.save/load and save_inference_model/load_inference_model (2.x signatures).

Files are named as Paddle 2.x names them, from a path prefix:

    <prefix>.pdmodel     the program (psjob.program JSON) and, for inference models, the
                         feed and fetch names; plus {name: shape, dtype, sha256} of every
                         array saved beside it
    <prefix>.pdparams    (save) the parameters, one .npz
    <prefix>.pdopt       (save) the other persistables (optimizer state, counters), one .npz
    <prefix>.pdiparams   (save_inference_model) the inference program's persistables, one .npz

The content is psjob's, not Paddle's protobuf/pickle: a psjob save loads in psjob.
load_program_state / load also read the arrays of a save made by Paddle itself (its
.pdparams and .pdopt are pickled {name: ndarray} dicts): a reader that builds numpy
arrays and nothing else takes them, so a Paddle checkpoint can start a psjob run.
Every file is written under a temporary name and renamed into place; a load checks every
array against the sha256, shape and dtype recorded in the .pdmodel and against the program
before anything is written into the scope, so a bad file raises and the scope keeps its values.
"""
from __future__ import annotations

import io
import json
import os
import pickle

import numpy as np

from psjob.fluid import io as fluid_io
from psjob.fluid.core import global_scope
from psjob.fluid.executor import Executor
from psjob.fluid.framework import Program, Variable, default_main_program
from psjob.fluid.serialization import ProgramFormatError, program_from_dict, program_to_dict
from psjob.foundation.checkpoint.format import CheckpointError, array_sha256, atomic_write

__all__ = ["save", "load", "save_inference_model", "load_inference_model", "load_program_state",
           "set_program_state"]

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
    for name, arr in list(arrays.items()):
        var = block._find_var_recursive(name)
        if var is not None:
            if arr.ndim == 0 and tuple(var.shape) == (1,):
                # Paddle >= 2.5 saves a scalar (learning_rate_0) 0-D where the program holds [1].
                arrays[name] = arr = arr.reshape(1)
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


class _ArrayUnpickler(pickle.Unpickler):
    """Paddle's pickled {name: ndarray}: numpy's array reconstruction and nothing else."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar")}

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a saved array")
        return super().find_class(module, name)


def _read_paddle_pickle(path):
    """{name: ndarray} of one of Paddle's own .pdparams / .pdopt files."""
    try:
        with open(path, "rb") as f:
            loaded = _ArrayUnpickler(io.BufferedReader(f)).load()
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise CheckpointError(f"cannot read {path} as Paddle's saved arrays: {exc}") from exc
    if not isinstance(loaded, dict) or "UnpackBigParamInfor@@" in loaded:
        raise CheckpointError(f"{path}: not a dict of arrays (or a parameter split in parts, which psjob "
                              "does not read)")
    bad = [n for n, a in loaded.items() if not isinstance(a, np.ndarray)]
    if bad:
        raise CheckpointError(f"{path}: {bad[0]!r} is not an array")
    return loaded


def _is_paddle_save(model_path):
    try:
        with open(model_path + ".pdparams", "rb") as f:
            return f.read(1) == b"\x80"  # a pickle's PROTO opcode; psjob's .npz starts with PK
    except OSError:
        return False


def load_program_state(model_path, var_list=None):
    """{name: ndarray} of a paddle.static.save (parameters and, when saved, optimizer state)."""
    if _is_paddle_save(model_path):
        state = _read_paddle_pickle(model_path + ".pdparams")
        if os.path.exists(model_path + ".pdopt"):
            state.update(_read_paddle_pickle(model_path + ".pdopt"))
        if var_list is not None:
            wanted = {v.name if isinstance(v, Variable) else v for v in var_list}
            state = {n: a for n, a in state.items() if n in wanted}
        return state
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


# -- inference models -------------------------------------------------------------------

def _var_list(value, what):
    items = value if isinstance(value, (list, tuple)) else [value]
    for v in items:
        if not isinstance(v, Variable):
            raise TypeError(f"save_inference_model: {what} must be Variables, got {type(v).__name__}")
    return list(items)


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor, program=None, **kwargs):
    """The program pruned to what `fetch_vars` need (for test: dropout and batch_norm in
    inference mode) to <path_prefix>.pdmodel, its persistables to <path_prefix>.pdiparams."""
    fluid_io._check_executor(executor, "save_inference_model")
    feeds, fetches = _var_list(feed_vars, "feed_vars"), _var_list(fetch_vars, "fetch_vars")
    program = program if program is not None else default_main_program()
    inference = program.clone(for_test=True)._prune(fetches)
    block = inference.global_block()
    for v in feeds:
        if not block.has_var(v.name):
            raise ValueError(f"save_inference_model: feed variable {v.name!r} is not needed to compute "
                             "the fetch_vars (or not in the program)")
    path = _prefix(path_prefix, "save_inference_model")
    names = [v.name for v in block.vars.values() if fluid_io.is_persistable(v)]
    records = _write_npz(path + ".pdiparams", _arrays(global_scope(), names, "save_inference_model"))
    _write_model(path + ".pdmodel", {"format": FORMAT, "program": program_to_dict(inference),
                                     "feed": [v.name for v in feeds], "fetch": [v.name for v in fetches],
                                     "arrays": {"inference": records}})


def load_inference_model(path_prefix, executor, **kwargs):
    """[program, feed_target_names, fetch_targets]; the parameters go into the global scope.

    As in Paddle 2.x, passing `model_filename` and/or `params_filename` selects the old form:
    `path_prefix` is then a directory written by the Fluid-style savers
    (fluid.io.save_inference_model, fleet.save_inference_model)."""
    unknown = set(kwargs) - {"model_filename", "params_filename"}
    if unknown:
        raise TypeError(f"load_inference_model: unexpected keyword argument(s) {sorted(unknown)}")
    if kwargs:
        program, feed, fetch = fluid_io.load_inference_model(path_prefix, executor, kwargs.get("model_filename"),
                                                             kwargs.get("params_filename"))
        return [program, feed, fetch]
    fluid_io._check_executor(executor, "load_inference_model")
    if os.path.isdir(path_prefix) and not os.path.exists(path_prefix + ".pdmodel"):
        raise ValueError(f"load_inference_model: {path_prefix} is a directory (a Fluid-style save, as "
                         "fleet.save_inference_model writes); load it as Paddle does, with "
                         "model_filename=None (its __model__) and params_filename=None")
    doc = _read_model(path_prefix + ".pdmodel")
    try:
        program = program_from_dict(doc["program"])
        feed, fetch = doc["feed"], doc["fetch"]
    except (ProgramFormatError, KeyError) as exc:
        raise CheckpointError(f"{path_prefix}.pdmodel is not a psjob inference model: {exc}") from exc
    arrays = _read_npz(path_prefix + ".pdiparams", doc["arrays"]["inference"])
    _into_scope(program, arrays, global_scope(), executor.xp)
    block = program.global_block()
    return [program, feed, [block.var(n) for n in fetch]]
