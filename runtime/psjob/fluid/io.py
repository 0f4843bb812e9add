"""Saving and loading variables, parameters and inference models.

On-disk format (version 1), one directory per save:

    <dirname>/<var name>         one .npy file per variable (numpy's format,
                                 loaded with allow_pickle=False), or
    <dirname>/<filename>         all variables in one .npz when `filename` is given
    <dirname>/__manifest__.json  {"format": "psjob.vars", "version": 1,
                                  "vars": {name: {"file", "shape", "dtype",
                                  "bytes", "sha256", "lod"}}}
    <dirname>/__model__          (inference models) the pruned program plus its
                                 feed and fetch names, as psjob.program JSON

Every file is written under a temporary name and renamed into place, and the
manifest is renamed in last, so a crash mid-save never leaves a directory
that loads as complete. Loading checks each file's checksum, shape and dtype
against the manifest and the program before anything is written into the
scope: a bad file raises and the scope keeps its previous values.

Distributed checkpoints (sharded tables, pserver slices) build on this format
in psjob.checkpoint.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

import numpy as np

from .core import SelectedRows, global_scope, to_numpy
from .executor import Executor
from .framework import Parameter, Program, Variable, VarType, default_main_program

MANIFEST = "__manifest__.json"
MODEL_FILE = "__model__"
FORMAT = "psjob.vars"
VERSION = 1


class CheckpointError(ValueError):
    """A saved directory or file is missing, corrupt, or does not fit the program."""


# -- predicates -------------------------------------------------------------------------

def is_parameter(var) -> bool:
    return isinstance(var, Parameter)


def is_persistable(var) -> bool:
    return bool(var.persistable) and var.type != VarType.RAW and not var.name.endswith("@GRAD")


def is_belong_to_optimizer(var) -> bool:
    return is_persistable(var) and not is_parameter(var)


def _check_executor(executor):
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be a fluid.Executor, got {type(executor).__name__}")


def _check_program(program):
    if program is None:
        return default_main_program()
    inner = getattr(program, "_program", None)
    if inner is not None:
        program = inner
    if not isinstance(program, Program):
        raise TypeError(f"main_program must be a fluid.Program, got {type(program).__name__}")
    return program


def _select(program, vars, predicate):
    if vars is not None:
        out = []
        for v in vars:
            out.append(program.global_block().var(v) if isinstance(v, str) else v)
        return out
    return [v for v in program.list_vars() if predicate is None or predicate(v)]


# -- atomic file helpers ------------------------------------------------------------------

def _sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(memoryview(np.ascontiguousarray(arr)).cast("B")).hexdigest()


def _atomic_write(path: str, write):
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _value_to_array(name, value) -> np.ndarray:
    if isinstance(value, SelectedRows):
        value = value.to_dense()
    return to_numpy(value)


# -- save ---------------------------------------------------------------------------------

def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    _check_executor(executor)
    program = _check_program(main_program)
    scope = scope or global_scope()
    selected = _select(program, vars, predicate)
    os.makedirs(dirname, exist_ok=True)
    arrays, entries = {}, {}
    for var in selected:
        name = var.name if isinstance(var, Variable) else var
        if name not in scope.vars:
            raise CheckpointError(f"cannot save {name!r}: it has no value in the scope "
                                  "(run the startup program first)")
        arr = _value_to_array(name, scope.vars[name])
        arrays[name] = arr
        entries[name] = {"file": filename or name, "shape": list(arr.shape), "dtype": arr.dtype.name,
                         "bytes": int(arr.nbytes), "sha256": _sha256(arr),
                         "lod": [np.asarray(level).tolist() for level in scope.lods.get(name, [])]}
    if filename is None:
        for name, arr in arrays.items():
            _atomic_write(os.path.join(dirname, name), lambda f, a=arr: np.save(f, a, allow_pickle=False))
    else:
        _atomic_write(os.path.join(dirname, filename), lambda f: np.savez(f, **arrays))
    _write_manifest(dirname, entries)


def _write_manifest(dirname, entries):
    doc = {"format": FORMAT, "version": VERSION, "vars": entries}
    existing = _read_manifest(dirname, required=False)
    if existing:  # several saves into one directory accumulate
        existing["vars"].update(entries)
        doc = existing
    data = json.dumps(doc, indent=1, sort_keys=True).encode()
    _atomic_write(os.path.join(dirname, MANIFEST), lambda f: f.write(data))


def save_params(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


# -- load ---------------------------------------------------------------------------------

def _read_manifest(dirname, required=True):
    path = os.path.join(dirname, MANIFEST)
    if not os.path.exists(path):
        if required:
            raise CheckpointError(f"{dirname!r} has no {MANIFEST}: not a complete psjob save "
                                  "(an interrupted save, or the wrong directory)")
        return None
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: unreadable manifest: {exc}") from exc
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise CheckpointError(f"{path}: format {doc.get('format')!r} version {doc.get('version')!r} "
                              f"is not {FORMAT!r} version {VERSION}")
    return doc


def _read_array(dirname, entry, name, npz_cache) -> np.ndarray:
    path = os.path.join(dirname, entry["file"])
    try:
        if entry["file"] != name:  # combined file
            if path not in npz_cache:
                npz_cache[path] = np.load(path, allow_pickle=False)
            arr = npz_cache[path][name]
        else:
            arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise CheckpointError(f"cannot read {name!r} from {path}: {exc}") from exc
    if _sha256(arr) != entry["sha256"]:
        raise CheckpointError(f"{path}: checksum mismatch for {name!r} (file corrupt or truncated)")
    return arr


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    _check_executor(executor)
    program = _check_program(main_program)
    scope = scope or global_scope()
    manifest = _read_manifest(dirname)
    selected = _select(program, vars, predicate)
    loaded, npz_cache = {}, {}
    for var in selected:
        name = var.name
        entry = manifest["vars"].get(name)
        if entry is None:
            raise CheckpointError(f"{dirname!r} holds no variable {name!r} "
                                  f"(it has: {', '.join(sorted(manifest['vars'])[:10])}...)")
        arr = _read_array(dirname, entry, name, npz_cache)
        want = tuple(var.shape)
        if want and (len(want) != arr.ndim or any(w >= 0 and w != a for w, a in zip(want, arr.shape))):
            raise CheckpointError(f"loading {name!r}: the file holds shape {list(arr.shape)} but the "
                                  f"program declares {list(want)}")
        if arr.dtype.name != var.dtype:
            raise CheckpointError(f"loading {name!r}: the file holds {arr.dtype.name}, "
                                  f"the program declares {var.dtype}")
        loaded[name] = (arr, entry.get("lod") or [])
    # Only now touch the scope: a failed load leaves it as it was.
    xp = executor.xp
    for name, (arr, lod) in loaded.items():
        scope.vars[name] = arr if xp is np else xp.asarray(arr)
        if lod:
            scope.lods[name] = [np.asarray(level, dtype=np.int64) for level in lod]


def load_params(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


# -- inference models ---------------------------------------------------------------------

def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False):
    """Write the program pruned to what `target_vars` need, plus its parameters."""
    from .serialization import program_to_dict
    _check_executor(executor)
    program = _check_program(main_program)
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not all(isinstance(n, str) for n in feeded_var_names):
        raise TypeError("feeded_var_names must be a list of variable names")
    targets = target_vars if isinstance(target_vars, (list, tuple)) else [target_vars]
    if not all(isinstance(t, Variable) for t in targets):
        raise TypeError("target_vars must be Variables")
    inference = program.clone(for_test=True)._prune(targets)
    block = inference.global_block()
    for n in feeded_var_names:
        if not block.has_var(n):
            raise ValueError(f"feed variable {n!r} is not needed to compute the targets "
                             "(or not in the program)")
    os.makedirs(dirname, exist_ok=True)
    doc = program_to_dict(inference)
    doc["feed"] = list(feeded_var_names)
    doc["fetch"] = [t.name for t in targets]
    data = json.dumps(doc, sort_keys=True).encode()
    _atomic_write(os.path.join(dirname, model_filename or MODEL_FILE), lambda f: f.write(data))
    if not program_only:
        params = [v for v in block.vars.values() if is_persistable(v)]
        save_vars(executor, dirname, inference, vars=params, filename=params_filename)
    return [t.name for t in targets]


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         pserver_endpoints=None):
    """Returns (program, feed_target_names, fetch_targets)."""
    from .serialization import ProgramFormatError, program_from_dict
    _check_executor(executor)
    path = os.path.join(dirname, model_filename or MODEL_FILE)
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"cannot read inference model {path}: {exc}") from exc
    try:
        program = program_from_dict(doc)
        feed, fetch = doc["feed"], doc["fetch"]
    except (ProgramFormatError, KeyError) as exc:
        raise CheckpointError(f"{path} is not a psjob inference model: {exc}") from exc
    params = [v for v in program.global_block().vars.values() if is_persistable(v)]
    load_vars(executor, dirname, program, vars=params, filename=params_filename)
    block = program.global_block()
    return program, feed, [block.var(n) for n in fetch]


def get_program_parameter(program):
    return [v for v in program.list_vars() if is_parameter(v)]


def get_program_persistable_vars(program):
    return [v for v in program.list_vars() if is_persistable(v)]
