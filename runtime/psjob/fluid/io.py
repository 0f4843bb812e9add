"""Saving and loading variables, parameters and inference models.

On-disk format (version 1), one directory per save (docs/user/checkpoints.md):

    <dirname>/<var name>         one file per variable: Paddle's serialized tensor for a
                                 single-process program (real Paddle reads the directory;
                                 manifest entries with "format": "paddle"), numpy's .npy
                                 (loaded with allow_pickle=False) in distributed saves; or
    <dirname>/<filename>         all variables in one file when `filename` is given
                                 (Paddle's save_combine layout, or a .npz)
    <dirname>/__tables__/...     distributed-table shards keyed by feature id
                                 (distributed saves only)
    <dirname>/__manifest__.json  {"format": "psjob.vars", "version": 1, "time": ...,
                                  "vars": {name: {"file", "shape", "dtype",
                                  "bytes", "sha256", "lod", "file_bytes"}},
                                  "tables": {...}, "step": ...}  (optional keys)
    <dirname>/__model__          (inference models) the pruned program with its feed
                                 and fetch ops: Paddle's ProgramDesc, so Paddle Inference
                                 serves the directory; a transpiled program's is
                                 psjob.program JSON

A directory without a manifest is read as one Paddle wrote (Paddle's tensor files; the
Fluid saves of Paddle 1.x/2.x), each tensor checked against its variable.

Every file is written under a temporary name and renamed into place, and the
manifest is renamed in last, so a crash mid-save never leaves a directory
that loads as complete. Loading checks each file's checksum, shape and dtype
against the manifest and the program before anything is written into the
scope: a bad file raises and the scope keeps its previous values. The byte
format lives in psjob.foundation.checkpoint.format, shared with distributed checkpoints.

Transpiled programs (`program._is_distributed`) are saved and loaded the
Fluid 1.x's distributed way: `save_persistables` on trainer 0's program pulls the
pservers' slices and has them save the distributed table
(psjob.cluster.trainer.checkpoint_save); `load_persistables` on a pserver's main or
startup program loads just that pserver's slices (psjob.cluster.pserver.checkpoint_restore).
Those modules sit above the framework: it calls them through the hooks they
register (psjob.foundation.hooks), never by import.
"""
from __future__ import annotations

import json
import os
import pickle

import numpy as np

from psjob._batch import batch  # noqa: F401
from psjob.fluid import paddle_format, paddle_pickle
from psjob.fluid.core import SelectedRows, global_scope, to_numpy
from psjob.fluid.executor import Executor, ParallelExecutor
from psjob.fluid.framework import Parameter, Program, Variable, VarType, default_main_program
from psjob.fluid.ops.metric_ops import restack_stat

# Fluid 1.x's fluid.io also serves its Python readers and the reader decorators.
from psjob.fluid.reader import DataLoader, PyReader  # noqa: F401
from psjob.fluid.serialization import program_to_dict
from psjob.foundation import hooks
from psjob.foundation.checkpoint import paddle_wire, storage
from psjob.foundation.checkpoint.format import (  # noqa: F401
    FORMAT,
    MANIFEST,
    PADDLE_TENSORS,
    VERSION,
    CheckpointError,
    array_sha256,
    atomic_write,
    new_manifest,
    read_manifest,
    read_var,
    write_array,
    write_manifest,
)
from psjob.reader import ComposeNotAligned, buffered, cache, chain, compose, firstn, map_readers, shuffle, xmap_readers  # noqa: F401

MODEL_FILE = "__model__"
__all__ = ["CheckpointError", "save_vars", "save_params", "save_persistables", "load_vars", "load_params",
           "load_persistables", "save_inference_model", "load_inference_model",
           "load_inference_model_distributed", "is_parameter", "is_persistable", "is_belong_to_optimizer",
           "get_program_parameter", "get_program_persistable_vars", "save", "load", "load_program_state",
           "set_program_state"]


# -- predicates -------------------------------------------------------------------------

def is_parameter(var) -> bool:
    return isinstance(var, Parameter)


def is_persistable(var) -> bool:
    return bool(var.persistable) and var.type != VarType.RAW and not var.name.endswith("@GRAD")


def is_belong_to_optimizer(var) -> bool:
    return is_persistable(var) and not is_parameter(var)


def _check_executor(executor, api="fluid.io"):
    if isinstance(executor, ParallelExecutor):
        raise TypeError(f"in {api}, executor must be an Executor; ParallelExecutor is not allowed")
    if not isinstance(executor, Executor):
        raise TypeError(f"in {api}, executor must be a fluid.Executor, got {type(executor).__name__}")


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


def _value_to_array(name, value) -> np.ndarray:
    if isinstance(value, SelectedRows):
        value = value.to_dense()
    return to_numpy(value)


# -- save ---------------------------------------------------------------------------------

def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None, paddle_tensors=None):
    """The arrays in Paddle's tensor format (one file a variable, or `filename` holding them
    sorted by name, as Paddle's save_combine writes them), so real Paddle's load_vars /
    load_persistables / load_inference_model read the directory too; the manifest records
    their checksums. `paddle_tensors=False` writes .npy / .npz instead, as the distributed
    saves do (their default, and None's for a transpiled program)."""
    _check_executor(executor)
    program = _check_program(main_program)
    if paddle_tensors is None:
        paddle_tensors = not getattr(program, "_is_distributed", False)
    scope = scope or global_scope()
    selected = _select(program, vars, predicate)
    storage.for_path(dirname).makedirs(dirname)  # a directory, or s3://BUCKET/PREFIX
    arrays, lods = {}, {}
    for var in selected:
        name = var.name if isinstance(var, Variable) else var
        if name not in scope.vars:
            raise CheckpointError(f"cannot save {name!r}: it has no value in the scope "
                                  "(run the startup program first)")
        arrays[name] = _value_to_array(name, scope.vars[name])
        lods[name] = [np.asarray(level).tolist() for level in scope.lods.get(name, [])]
    entries = {}
    if paddle_tensors:
        entries = _write_paddle_tensors(dirname, arrays, lods, filename)
    elif filename is None:
        for name, arr in arrays.items():
            entries[name] = write_array(storage.join(dirname, name), arr)
            entries[name]["file"] = name
    else:
        atomic_write(storage.join(dirname, filename), lambda f: np.savez(f, **arrays))
        for name, arr in arrays.items():
            entries[name] = {"file": filename, "shape": list(arr.shape), "dtype": arr.dtype.name,
                             "bytes": int(arr.nbytes), "sha256": array_sha256(arr)}
    for name in entries:
        entries[name]["lod"] = lods[name]
    _write_manifest(dirname, entries)


def _write_paddle_tensors(dirname, arrays, lods, filename):
    def entry(arr, file, **extra):
        return {"file": file, "format": PADDLE_TENSORS, "shape": list(arr.shape), "dtype": arr.dtype.name,
                "bytes": int(arr.nbytes), "sha256": array_sha256(arr), **extra}

    if filename is None:
        entries = {}
        for name, arr in arrays.items():
            data = paddle_wire.tensor_to_bytes(arr, lods[name])
            atomic_write(storage.join(dirname, name), lambda f, data=data: f.write(data))
            entries[name] = entry(arr, name, file_bytes=len(data))
        return entries
    data = paddle_wire.params_to_bytes(arrays)
    atomic_write(storage.join(dirname, filename), lambda f: f.write(data))
    return {name: entry(arrays[name], filename, index=i) for i, name in enumerate(sorted(arrays))}


def _write_manifest(dirname, entries):
    doc = new_manifest(entries)
    existing = _read_manifest(dirname, required=False)
    if existing:  # several saves into one directory accumulate
        existing["vars"].update(entries)
        existing["time"] = doc["time"]
        doc = existing
    write_manifest(dirname, doc)


def save_params(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    """Every persistable of the program. On a transpiled trainer program this is Fluid's
    distributed save (trainer 0 writes the whole model; see _save_distributed_persistables)."""
    program = _check_program(main_program)
    if getattr(program, "_is_distributed", False):
        if filename is not None:
            raise ValueError("distributed save_persistables writes one file per variable; filename "
                             "is not supported")
        return _save_distributed_persistables(executor, dirname, program)
    save_vars(executor, dirname, program, predicate=is_persistable, filename=filename)


def _save_distributed_persistables(executor, dirname, main_program, scope=None):
    """save_persistables of a transpiled trainer program (Fluid's `_save_distributed_persistables`).

    Trainer 0 (the chief) saves everything: its own persistables, every parameter
    and optimizer slice pulled from the pservers and reassembled whole (recv_save),
    the pservers' state (LR counters) and the distributed table, whose shards the
    pservers write themselves (checkpoint_notify); the manifest goes last. Other
    trainers save only what they hold, as Fluid's does. The work is the trainer
    runtime's (psjob.cluster.trainer.checkpoint_save), reached through the hook it registers."""
    _check_executor(executor, "save_persistables")
    if not isinstance(main_program, Program):
        raise TypeError("'main_program' should be an instance of Program.")
    if not main_program._is_distributed:
        raise ValueError("'_save_distributed_persistables' just be designed for distributed training.")
    return hooks.lookup(hooks.DISTRIBUTED_SAVE)(executor, dirname, main_program, scope=scope)


# -- load ---------------------------------------------------------------------------------

def _read_manifest(dirname, required=True):
    return read_manifest(dirname, required=required)


def _read_array(dirname, entry, name, npz_cache) -> np.ndarray:
    return read_var(dirname, name, entry, npz_cache)


def _restacked(program, name, arr, var):
    """`arr` as `var` holds it where `var` is a sliding auc statistic saved in the other layout
    (fluid.layers.auc's rows, paddle.static.auc's flat array: metric_ops.restack_stat), else `arr`."""
    if arr.shape == tuple(var.shape):
        return arr
    for op in program.global_block().ops:
        if op.type == "auc" and name in op.input("StatPos") + op.input("StatNeg"):
            restacked = restack_stat(arr, tuple(var.shape), int(op.attr("slide_steps", 1)),
                                     int(op.attr("num_thresholds", 2 ** 12 - 1)))
            return arr if restacked is None else restacked
    return arr


def _check_fits(name, arr, var):
    want = tuple(var.shape)
    if want and (len(want) != arr.ndim or any(w >= 0 and w != a for w, a in zip(want, arr.shape))):
        raise CheckpointError(f"loading {name!r}: the file holds shape {list(arr.shape)} but the "
                              f"program declares {list(want)}")
    if arr.dtype.name != var.dtype:
        raise CheckpointError(f"loading {name!r}: the file holds {arr.dtype.name}, "
                              f"the program declares {var.dtype}")


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    _check_executor(executor)
    program = _check_program(main_program)
    scope = scope or global_scope()
    selected = _select(program, vars, predicate)
    if not selected:
        return  # nothing to load (Paddle 1.8 reads no file then, whatever dirname holds)
    loaded: dict = {}
    npz_cache: dict = {}
    manifest = _read_manifest(dirname, required=False)
    if manifest is None and selected and os.path.isdir(dirname):
        manifest = _paddle_save_manifest(dirname, selected, filename, npz_cache)
    elif manifest is None:
        manifest = _read_manifest(dirname)  # raises, naming what is missing
    tables = manifest.get("tables", {})
    table_states = _table_state_sources(program, tables)
    for var in selected:
        name = var.name
        entry = manifest["vars"].get(name)
        if entry is None and name in table_states:
            arr = _assemble_table_state(dirname, tables, table_states[name], var, scope)
            if arr is not None:
                loaded[name] = (arr, [])
            continue
        if entry is None and name in tables:
            # A distributed table saved as shards by id: the single-process view is the whole table.
            from psjob.foundation.checkpoint.tables import assemble
            height = var.shape[0] if var.shape and var.shape[0] >= 0 else None
            arr = assemble(dirname, name, tables[name], height)
            _check_fits(name, arr, var)
            loaded[name] = (arr, [])
            continue
        if entry is None:
            raise CheckpointError(f"{dirname!r} holds no variable {name!r} "
                                  f"(it has: {', '.join(sorted(manifest['vars'])[:10])}...)")
        arr = _restacked(program, name, _read_array(dirname, entry, name, npz_cache), var)
        _check_fits(name, arr, var)
        loaded[name] = (arr, entry.get("lod") or [])
    # Only now touch the scope: a failed load leaves it as it was.
    xp = executor.xp
    for name, (arr, lod) in loaded.items():
        scope.vars[name] = arr if xp is np else xp.asarray(arr)
        if lod:
            scope.lods[name] = [np.asarray(level, dtype=np.int64) for level in lod]


def _paddle_save_manifest(dirname, selected, filename, tensor_cache) -> dict:
    """A directory without a manifest is taken for one Paddle wrote (fluid.io.save_vars /
    save_persistables / save_inference_model): one file a variable in Paddle's tensor format, or
    `filename` holding them sorted by name. Their entries, read and checked as a manifest's are
    (the checksums are computed here: nothing was recorded to compare them with)."""
    entries = {}
    names = sorted(v.name for v in selected)
    for i, name in enumerate(names):
        file = filename or name
        entry = {"file": file, "format": PADDLE_TENSORS, "index": i if filename else 0}
        path = storage.join(dirname, file)
        try:
            if path not in tensor_cache:
                with storage.for_path(path).open_read(path) as f:
                    tensor_cache[path] = paddle_wire.tensors_from_bytes(f.read(), path)
        except OSError as exc:
            raise CheckpointError(f"{dirname!r} has no {MANIFEST}: not a complete psjob save, nor a Paddle "
                                  f"one ({name!r}: {exc.strerror or exc})") from exc
        except paddle_wire.PaddleFormatError as exc:
            raise CheckpointError(f"{dirname!r} has no manifest, and {path} is not a Paddle tensor file: {exc}") from exc
        tensors = tensor_cache[path]
        if entry["index"] >= len(tensors) or (filename and len(tensors) != len(names)):
            raise CheckpointError(f"{path} holds {len(tensors)} tensors, the program reads {len(names)} from it")
        arr = tensors[entry["index"]]
        entries[name] = {**entry, "shape": list(arr.shape), "dtype": arr.dtype.name, "sha256": array_sha256(arr)}
    return {"vars": entries}


def _table_state_sources(program, tables) -> dict:
    """Accumulator variable → (table, state name, optimizer op type) for the optimizer ops
    that update a parameter saved as a distributed table: in a distributed save the table's
    optimizer state lives only in the table shards, under the accumulator's name."""
    from psjob.fluid.optimizer import accumulator_slots
    sources = {}
    for op in program.global_block().ops:
        params = op.input("Param") if "Param" in op.inputs else []
        if not params or params[0] not in tables:
            continue
        for state, slot in accumulator_slots(op.type).items():
            for name in op.input(slot):
                sources[name] = (params[0], state, op.type)
    return sources


def _assemble_table_state(dirname, tables, source, var, scope):
    """The table's state for accumulator `var`, dense, over the startup value in `scope` (the
    fresh state of rows the table never held); None where the program's accumulator has no
    per-row form of the table's state or the table was trained by another rule: that
    accumulator then keeps its startup value."""
    from psjob.foundation.checkpoint.tables import assemble_state
    table, state, op_type = source
    fresh = scope.vars.get(var.name)
    if fresh is None:
        raise CheckpointError(f"loading {var.name!r} (the {state!r} state of table {table!r}) needs its "
                              "startup value: run the startup program before loading")
    fresh = to_numpy(fresh)
    if fresh.shape != tuple(var.shape) or not fresh.shape or var.shape[0] < 0:
        return None
    arr = assemble_state(dirname, table, tables[table], state, op_type, fresh)
    if arr is not None:
        _check_fits(var.name, arr, var)
    return arr


def load_params(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    """Every persistable of the program. On a pserver's transpiled program (main or startup,
    transpiled with current_endpoint) only that pserver's slices are loaded."""
    program = _check_program(main_program)
    if getattr(program, "_is_distributed", False):
        return _load_distributed_persistables(executor, dirname, program)
    load_vars(executor, dirname, program, predicate=is_persistable, filename=filename)


def _load_distributed_persistables(executor, dirname, main_program=None, scope=None):
    """Load a pserver's slices of a whole-model save (Fluid's `_load_distributed_persistables`), by the overview's offsets;
    the distributed table by feature id, so the save may come from another number of pservers.

    `dirname` is a save (it has a manifest) or a checkpoint root, whose newest good
    checkpoint is loaded (falling back past corrupt ones). The work is the pserver
    runtime's (psjob.cluster.pserver.checkpoint_restore), reached through the hook it registers."""
    _check_executor(executor, "load_persistables")
    if not isinstance(main_program, Program):
        raise TypeError("'main_program' should be an instance of Program.")
    if not main_program._is_distributed:
        raise ValueError("'_load_distributed_persistables' just be designed for distributed training.")
    if not main_program._ps_endpoint:
        raise ValueError("'_load_distributed_persistables' need current_endpoint set in "
                         "DistributeTranspiler.transpile")
    return hooks.lookup(hooks.DISTRIBUTED_LOAD)(executor, dirname, main_program, scope=scope)


# -- inference models ---------------------------------------------------------------------

def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False):
    """Write the program pruned to what `target_vars` need, plus its parameters."""
    from psjob.fluid.serialization import program_to_dict
    _check_executor(executor)
    program = _check_program(main_program)
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not all(isinstance(n, str) for n in feeded_var_names):
        raise TypeError("feeded_var_names must be a list of variable names")
    targets = target_vars if isinstance(target_vars, (list, tuple)) else [target_vars]
    if not all(isinstance(t, Variable) for t in targets):
        raise TypeError("target_vars must be Variables")
    inference = program.clone(for_test=True)._prune(targets, feeded_var_names)
    block = inference.global_block()
    for n in feeded_var_names:
        if not block.has_var(n):
            raise ValueError(f"feed variable {n!r} is not needed to compute the targets "
                             "(or not in the program)")
    _keep_tables(program, inference)
    os.makedirs(dirname, exist_ok=True)
    distributed = getattr(inference, "_is_distributed", False)
    fetch_names = [t.name for t in targets]
    if distributed:
        # Its lookups name pservers and its tables are shards: psjob's own program document.
        doc = program_to_dict(inference)
        doc["feed"], doc["fetch"] = list(feeded_var_names), fetch_names
        data = json.dumps(doc, sort_keys=True).encode()
    else:  # Paddle's ProgramDesc: Paddle Inference's Config(dirname) serves it
        data = paddle_format.program_to_bytes(inference, list(feeded_var_names), fetch_names)
    atomic_write(os.path.join(dirname, model_filename or MODEL_FILE), lambda f: f.write(data))
    if not program_only:
        if distributed and params_filename is None:
            # A transpiled program: its parameters live on the pservers (trainer 0 pulls them).
            _save_distributed_persistables(executor, dirname, inference)
        else:
            params = [v for v in block.vars.values() if is_persistable(v)]
            save_vars(executor, dirname, inference, vars=params, filename=params_filename,
                      paddle_tensors=not distributed)
    return fetch_names


def _keep_tables(program, inference) -> None:
    """A distributed program's tables travel with its inference model even where the model is
    fed their lookups (PaddleRec's online models feed the embeddings), as Paddle's parameter
    servers write them beside the dense part for the serving side that looks the ids up. The
    pruned program holds them as variables no op reads (load_inference_model skips them)."""
    if not getattr(inference, "_is_distributed", False):
        return
    block, source = inference.global_block(), program.global_block()
    for name in getattr(inference, "_distributed_lookup_tables", None) or []:
        if not block.has_var(name) and source.has_var(name):
            var = source.var(name)
            block.create_var(name=name, shape=var.shape, dtype=var.dtype, persistable=True)


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         pserver_endpoints=None):
    """Returns (program, feed_target_names, fetch_targets).

    `pserver_endpoints`: a model saved from a transpiled trainer program looks its
    distributed table up on pservers; these endpoints replace the ones it was saved
    with (same count, same order), and the table is not loaded locally."""
    _check_executor(executor, "load_inference_model")
    if not os.path.isdir(dirname):
        raise ValueError(f"There is no directory named '{dirname}'")
    path = os.path.join(dirname, os.path.basename(model_filename or MODEL_FILE))
    program, feed, fetch = _read_inference_program(path)
    remote_tables = _remote_tables(program)
    if pserver_endpoints:
        _replace_endpoints(program, pserver_endpoints)
    # Only what the program's ops read: a model fed with a table's lookups (PaddleRec's
    # online models feed the embeddings) keeps the table's variable but never reads it.
    read = {n for b in program.blocks for op in b.ops for n in op.input_arg_names}
    params = [v for v in program.global_block().vars.values()
              if is_persistable(v) and v.name in read and not (pserver_endpoints and v.name in remote_tables)]
    if params_filename is not None and _read_manifest(dirname, required=False) is None:
        # Paddle's own combined save holds every persistable of the program, sorted by name.
        params = [v for v in program.global_block().vars.values() if is_persistable(v)]
    load_vars(executor, dirname, program, vars=params, filename=params_filename)
    block = program.global_block()
    return program, feed, [block.var(n) for n in fetch]


def _read_inference_program(path):
    """(program, feed names, fetch names) of an inference model's program file: Paddle's
    ProgramDesc (psjob's saves and Paddle's), or the JSON document of a distributed one."""
    from psjob.fluid.serialization import ProgramFormatError, program_from_dict
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CheckpointError(f"cannot read inference model {path}: {exc}") from exc
    if paddle_format.is_program_bytes(data):
        try:
            return paddle_format.program_from_bytes(data)
        except (ProgramFormatError, paddle_wire.PaddleFormatError) as exc:
            raise CheckpointError(f"{path}: not a Paddle inference model this psjob reads: {exc}") from exc
    try:
        doc = json.loads(data)
        return program_from_dict(doc), doc["feed"], doc["fetch"]
    except (UnicodeDecodeError, json.JSONDecodeError, ProgramFormatError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path} is neither a Paddle nor a psjob inference model: {exc}") from exc


def load_inference_model_distributed(dirname, executor, model_filename=None, params_filename=None,
                                     pserver_endpoints=None):
    """Fluid 1.x's DistributeTranspiler guide's name for load_inference_model with pserver endpoints (see there)."""
    return load_inference_model(dirname, executor, model_filename, params_filename, pserver_endpoints)


def _remote_tables(program) -> set:
    return {t for b in program.blocks for op in b.ops if op.type == "prefetch"
            for t in op.attr("table_names") or []}


def _replace_endpoints(program, endpoints):
    """Point a saved program's RPC ops at other pservers (Fluid's _endpoints_replacement)."""
    if isinstance(endpoints, str):
        endpoints = [e for e in endpoints.split(",") if e]
    old = []
    for b in program.blocks:
        for op in b.ops:
            for key in ("epmap", "endpoints"):
                for ep in op.attr(key) or []:
                    if ep not in old:
                        old.append(ep)
    if not old:
        return
    if len(old) != len(endpoints):
        raise ValueError(f"the model was saved for {len(old)} pserver(s) ({', '.join(old)}); "
                         f"{len(endpoints)} endpoint(s) given")
    mapping = dict(zip(old, endpoints))
    for b in program.blocks:
        for op in b.ops:
            for key in ("epmap", "endpoints"):
                if op.attr(key):
                    op.attrs[key] = [mapping.get(ep, ep) for ep in op.attr(key)]
    program._endpoints = list(endpoints)
    program._bump()


def get_program_parameter(program):
    return [v for v in program.list_vars() if is_parameter(v)]


def get_program_persistable_vars(program):
    return [v for v in program.list_vars() if is_persistable(v)]



# -- fluid.io.save / fluid.io.load (Fluid 1.6+; paddle.static.save / load in 2.x) -------------
# A program's state under a path prefix (Paddle's file names):
#     <prefix>.pdparams  the parameters, Paddle's pickled {name: ndarray} (earlier psjob: .npz)
#     <prefix>.pdopt     the other persistables (optimizer state, counters), the same way
#     <prefix>.pdmodel   the program (psjob.program JSON) and {name: shape, dtype, sha256}
#                        of every array saved beside it (Paddle's load reads only the pickles)
# Every file is written under a temporary name and renamed into place; a load checks every array
# against its record and the program before anything is written into the scope.
# https://www.paddlepaddle.org.cn/documentation/docs/en/1.8/api/io/save.html

PROGRAM_STATE_FORMAT = "psjob.paddle2"


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
        out[name] = _value_to_array(name, scope.vars[name])
    return out


def _write_model(path, doc):
    data = json.dumps(doc, sort_keys=True).encode()
    atomic_write(path, lambda f: f.write(data))


def _read_model(path):
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"cannot read {path}: {exc}") from exc
    if doc.get("format") != PROGRAM_STATE_FORMAT:
        raise CheckpointError(f"{path} is not a psjob save (format {doc.get('format')!r})")
    return doc


def _write_paddle_pickle(path, arrays, protocol=4):
    """{name: array} pickled as Paddle's paddle.static.save pickles a .pdparams/.pdopt (so real
    Paddle's paddle.static.load / load_program_state read it); their records for the .pdmodel."""
    atomic_write(path, lambda f: pickle.dump({n: np.ascontiguousarray(a) for n, a in arrays.items()}, f,
                                             protocol=protocol))
    return {n: {"shape": list(a.shape), "dtype": a.dtype.name, "sha256": array_sha256(a)}
            for n, a in arrays.items()}


def _read_saved_arrays(path, records):
    """{name: array} of the names in `records`, each checked against its record: from a .npz
    (psjob's saves before they wrote Paddle's pickles) or a Paddle pickle."""
    try:
        with open(path, "rb") as f:
            zipped = f.read(4) == b"PK\x03\x04"
        if zipped:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {n: npz[n] for n in records}
        else:
            saved = paddle_pickle.read_arrays(path)
            arrays = {n: saved[n] for n in records}
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
                # Paddle >= 2.5 saves one-value state (learning_rate_0) 0-D where the program holds [1].
                arrays[name] = arr = arr.reshape(1)
            arrays[name] = arr = _restacked(program, name, arr, var)
            _check_fits(name, arr, var)
    for name, arr in arrays.items():
        scope.vars[name] = arr if xp is np else xp.asarray(arr)


# -- save / load ------------------------------------------------------------------------

def save(program, model_path, protocol=4, **configs):
    """Parameters to <model_path>.pdparams, other persistables to .pdopt (Paddle's pickles of
    {name: array}: real Paddle loads them), the program and every array's checksum to .pdmodel
    (psjob's JSON, which Paddle's load does not read)."""
    if protocol not in (2, 3, 4):
        raise ValueError(f"paddle.static.save: protocol must be 2, 3 or 4, got {protocol!r}")
    if not isinstance(program, Program):
        raise TypeError(f"paddle.static.save needs a Program, got {type(program).__name__}")
    path = _prefix(model_path, "paddle.static.save")
    scope = global_scope()
    persistables = [v for v in program.list_vars() if is_persistable(v)]
    params = [v.name for v in persistables if is_parameter(v)]
    others = [v.name for v in persistables if not is_parameter(v)]
    records = {"params": _write_paddle_pickle(path + ".pdparams", _arrays(scope, params, "paddle.static.save"),
                                              protocol),
               "opt": _write_paddle_pickle(path + ".pdopt", _arrays(scope, others, "paddle.static.save"), protocol)}
    _write_model(path + ".pdmodel", {"format": PROGRAM_STATE_FORMAT, "program": program_to_dict(program), "arrays": records})


def load_program_state(model_path, var_list=None):
    """{name: ndarray} of a paddle.static.save (parameters and, when saved, optimizer state),
    psjob's or Paddle's own (psjob.fluid.paddle_pickle)."""
    if paddle_pickle.is_paddle_save(model_path):
        wanted = None if var_list is None else {v.name if isinstance(v, Variable) else v for v in var_list}
        return paddle_pickle.load_state(model_path, wanted)
    doc = _read_model(model_path + ".pdmodel")
    state = {}
    for kind, ext in (("params", ".pdparams"), ("opt", ".pdopt")):
        records = doc["arrays"].get(kind, {})
        if var_list is not None:
            wanted = {v.name if isinstance(v, Variable) else v for v in var_list}
            records = {n: r for n, r in records.items() if n in wanted}
        if records:
            state.update(_read_saved_arrays(model_path + ext, records))
    return state


def set_program_state(program, state_dict):
    """Write the arrays of `state_dict` that `program` declares into the global scope."""
    names = {v.name for v in program.list_vars() if is_persistable(v)}
    _into_scope(program, {n: np.asarray(a) for n, a in state_dict.items() if n in names}, global_scope())


def load(program, model_path, executor=None, var_list=None):
    """Load a paddle.static.save into the scope: every persistable of `program` must be in it."""
    if not isinstance(program, Program):
        raise TypeError(f"paddle.static.load needs a Program, got {type(program).__name__}")
    state = load_program_state(model_path, var_list)
    wanted = [v for v in program.list_vars() if is_persistable(v)]
    if var_list is not None:
        names = {v.name if isinstance(v, Variable) else v for v in var_list}
        wanted = [v for v in wanted if v.name in names]
    missing = [v.name for v in wanted if v.name not in state]
    if missing:
        raise CheckpointError(f"paddle.static.load: {model_path} holds no {', '.join(sorted(missing)[:10])}")
    xp = executor.xp if isinstance(executor, Executor) else np
    _into_scope(program, {v.name: state[v.name] for v in wanted}, global_scope(), xp)
