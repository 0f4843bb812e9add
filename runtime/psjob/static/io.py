"""paddle.static.save/load and save_inference_model/load_inference_model (2.x signatures).

Files are named as Paddle 2.x names them, from a path prefix:

    <prefix>.pdmodel     (save_inference_model) Paddle's own ProgramDesc protobuf, with the
                         feed and fetch ops Paddle adds (psjob.fluid.paddle_format)
    <prefix>.pdiparams   (save_inference_model) the inference program's persistables in
                         Paddle's combined tensor format, sorted by name
    <prefix>.pdmodel     (save) the program (psjob.program JSON) plus {name: shape, dtype,
                         sha256} of every array saved beside it
    <prefix>.pdparams    (save) the parameters, Paddle's pickled {name: ndarray}
    <prefix>.pdopt       (save) the other persistables (optimizer state, counters), the same

An inference model is Paddle's: Paddle Inference and real Paddle's
load_inference_model load what psjob saves, and psjob loads what Paddle saves (and the JSON
inference models earlier psjob versions wrote); load_inference_model also reads the
<prefix>.json program Paddle 3.x writes with PIR on where no <prefix>.pdmodel is next to it
(psjob.fluid.paddle_pir; psjob writes only the .pdmodel). `save`'s .pdparams/.pdopt are Paddle's
pickles too (real Paddle's paddle.static.load reads them), its .pdmodel psjob's record of the
program and of every array's checksum; load_program_state (so load and set_program_state's
usual input) also reads a save made by Paddle 2.x/3.x itself (psjob.fluid.paddle_pickle).
Every file is written under a temporary name and renamed into place; a load checks every
array against the program (and, for `save`'s files, against the sha256 recorded in the
.pdmodel) before anything is written into the scope, so a bad file raises and the scope
keeps its values.
"""
from __future__ import annotations

import os

from psjob.fluid import io as fluid_io
from psjob.fluid import paddle_format, paddle_pir
from psjob.fluid.core import global_scope
from psjob.fluid.framework import Program, Variable, default_main_program
from psjob.fluid.io import (  # noqa: F401  (save/load: paddle.static's names for them)
    _arrays,
    _into_scope,
    _prefix,
    _read_model,
    _read_saved_arrays,
    is_persistable,
    load,
    load_program_state,
    load_vars,
    save,
    save_vars,
    set_program_state,
)
from psjob.fluid.serialization import ProgramFormatError, program_from_dict
from psjob.foundation.checkpoint.format import CheckpointError, atomic_write

__all__ = ["save", "load", "save_inference_model", "load_inference_model", "load_program_state",
           "set_program_state", "normalize_program", "serialize_program", "serialize_persistables",
           "deserialize_program", "deserialize_persistables", "save_to_file", "load_from_file"]


# -- inference models -------------------------------------------------------------------

def _var_list(value, what, api="save_inference_model"):
    items = value if isinstance(value, (list, tuple)) else [value]
    for v in items:
        if not isinstance(v, Variable):
            raise TypeError(f"{api}: {what} must be Variables, got {type(v).__name__}")
    return list(items)


def _inference_program(feed_vars, fetch_vars, program, what, prune=True):
    """(program, feeds, fetches): `program` (the default main program if None) cloned for test
    and pruned to what `fetch_vars` need from `feed_vars`."""
    feeds, fetches = _var_list(feed_vars, "feed_vars", what), _var_list(fetch_vars, "fetch_vars", what)
    program = program if program is not None else default_main_program()
    if not isinstance(program, Program):
        raise TypeError(f"{what}: program must be a paddle.static.Program, got {type(program).__name__}")
    if not program.global_block().ops:
        raise ValueError(f"{what}: the program has no operators")
    inference = program.clone(for_test=True)
    if prune:
        inference = inference._prune(fetches, feeds)
    block = inference.global_block()
    for v in feeds:
        if not block.has_var(v.name):
            raise ValueError(f"{what}: feed variable {v.name!r} is not needed to compute "
                             "the fetch_vars (or not in the program)")
    return inference, feeds, fetches


def _persistable_names(program):
    return sorted(v.name for v in program.global_block().vars.values() if fluid_io.is_persistable(v))


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor, program=None, **kwargs):
    """The program pruned to what `fetch_vars` need (for test: dropout and batch_norm in
    inference mode) to <path_prefix>.pdmodel, its persistables to <path_prefix>.pdiparams,
    both in Paddle's own format."""
    fluid_io._check_executor(executor, "save_inference_model")
    inference, feeds, fetches = _inference_program(feed_vars, fetch_vars, program, "save_inference_model")
    path = _prefix(path_prefix, "save_inference_model")
    model = paddle_format.program_to_bytes(inference, [v.name for v in feeds], [v.name for v in fetches])
    params = paddle_format.params_to_bytes(_arrays(global_scope(), _persistable_names(inference),
                                                   "save_inference_model"))
    atomic_write(path + ".pdiparams", lambda f: f.write(params))
    atomic_write(path + ".pdmodel", lambda f: f.write(model))


# -- the same in memory (Paddle 2.x's serialize_* / deserialize_*, save_to_file, load_from_file) --

def normalize_program(program, feed_vars, fetch_vars, **kwargs):
    """`program` cloned for inference and pruned to what `fetch_vars` need from `feed_vars`
    (skip_prune_program=True: not pruned), as save_inference_model saves it. Paddle's also holds
    feed and fetch ops; psjob's programs have none (its Executor feeds and fetches by name), and
    serialize_program adds Paddle's when it writes the program."""
    unknown = set(kwargs) - {"skip_prune_program"}
    if unknown:
        raise TypeError(f"normalize_program: unexpected keyword argument(s) {sorted(unknown)}")
    if not isinstance(program, Program):
        raise TypeError(f"normalize_program: program must be a paddle.static.Program, got {type(program).__name__}")
    return _inference_program(feed_vars, fetch_vars, program, "normalize_program",
                              prune=not kwargs.get("skip_prune_program", False))[0]


def serialize_program(feed_vars, fetch_vars, **kwargs):
    """The inference program (normalize_program of kwargs' `program`, else the default main
    program) as bytes of Paddle's ProgramDesc, with its feed and fetch ops: what
    save_inference_model writes to the .pdmodel."""
    unknown = set(kwargs) - {"program", "legacy_format"}
    if unknown:
        raise TypeError(f"serialize_program: unexpected keyword argument(s) {sorted(unknown)}")
    inference, feeds, fetches = _inference_program(feed_vars, fetch_vars, kwargs.get("program"),
                                                   "serialize_program")
    return paddle_format.program_to_bytes(inference, [v.name for v in feeds], [v.name for v in fetches])


def serialize_persistables(feed_vars, fetch_vars, executor, **kwargs):
    """The inference program's persistables, from the global scope, as bytes of Paddle's
    combined parameter file (sorted by name): what save_inference_model writes to the .pdiparams."""
    unknown = set(kwargs) - {"program"}
    if unknown:
        raise TypeError(f"serialize_persistables: unexpected keyword argument(s) {sorted(unknown)}")
    fluid_io._check_executor(executor, "serialize_persistables")
    inference, _, _ = _inference_program(feed_vars, fetch_vars, kwargs.get("program"), "serialize_persistables")
    return paddle_format.params_to_bytes(_arrays(global_scope(), _persistable_names(inference),
                                                 "serialize_persistables"))


def deserialize_program(data):
    """The Program of serialize_program's bytes (Paddle's ProgramDesc; its feed and fetch ops are
    dropped, as psjob's Executor feeds and fetches by name)."""
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"deserialize_program: data must be bytes, got {type(data).__name__}")
    if not paddle_format.is_program_bytes(bytes(data)):
        raise ValueError("deserialize_program: data is not a serialized Paddle program (ProgramDesc bytes, "
                         "as serialize_program returns)")
    try:
        return paddle_format.program_from_bytes(bytes(data))[0]
    except (ProgramFormatError, paddle_format.PaddleFormatError) as exc:
        raise ValueError(f"deserialize_program: not a Paddle program psjob reads: {exc}") from exc


def deserialize_persistables(program, data, executor):
    """Load serialize_persistables' bytes into the global scope: one array per persistable of
    `program`, by sorted name, each checked against its variable before any is written."""
    if not isinstance(program, Program):
        raise TypeError(f"deserialize_persistables: program must be a paddle.static.Program, "
                        f"got {type(program).__name__}")
    fluid_io._check_executor(executor, "deserialize_persistables")
    names = _persistable_names(program)
    if data is None:
        if any(fluid_io.is_parameter(program.global_block().var(n)) for n in names):
            raise ValueError("deserialize_persistables: data is None but the program has parameters")
        return None
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"deserialize_persistables: data must be bytes, got {type(data).__name__}")
    try:
        arrays = paddle_format.params_from_bytes(bytes(data), names, "deserialize_persistables")
    except paddle_format.PaddleFormatError as exc:
        raise ValueError(str(exc)) from exc
    _into_scope(program, arrays, global_scope(), executor.xp)
    return None


def save_to_file(path, content):
    """Write bytes (serialize_program's or serialize_persistables') to `path`."""
    if not isinstance(content, (bytes, bytearray)):
        raise ValueError(f"save_to_file: content must be bytes, got {type(content).__name__}")
    atomic_write(path, lambda f: f.write(content))


def load_from_file(path):
    """The bytes of the file at `path` (what save_to_file wrote)."""
    with open(path, "rb") as f:
        return f.read()


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
    legacy, pir = path_prefix + ".pdmodel", path_prefix + ".json"
    if os.path.isdir(path_prefix) and not os.path.exists(legacy) and not os.path.exists(pir):
        raise ValueError(f"load_inference_model: {path_prefix} is a directory (a Fluid-style save, as "
                         "fleet.save_inference_model writes); load it as Paddle does, with "
                         "model_filename=None (its __model__) and params_filename=None")
    # Paddle 3.0 reads <prefix>.pdmodel with PIR off (the static graph psjob runs, and what psjob
    # writes) and <prefix>.json with it on: the .pdmodel wins where both exist, the .json (a
    # Paddle 3.x PIR save) is read where it alone does.
    model = pir if os.path.exists(pir) and not os.path.exists(legacy) else legacy
    return load_inference_files(model, path_prefix + ".pdiparams", executor)


def load_inference_files(model_path, params_path, executor):
    """load_inference_model of a program file and a parameters file of any names (what
    paddle.inference's Config(prog_file, params_file) names)."""
    program, feed, fetch, arrays = read_inference_model(model_path, params_path)
    _into_scope(program, arrays, global_scope(), executor.xp)
    block = program.global_block()
    return [program, feed, [block.var(n) for n in fetch]]


def read_inference_model(model_path, params_path):
    """(program, feed names, fetch names, {name: array}) of an inference model's two files,
    in Paddle's format or the JSON one psjob wrote before; nothing is loaded anywhere."""
    try:
        with open(model_path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CheckpointError(f"cannot read {model_path}: {exc}") from exc
    if paddle_pir.is_pir_path(model_path):
        try:
            program, feed, fetch = paddle_pir.program_from_json(data, model_path)
        except ProgramFormatError as exc:
            raise CheckpointError(str(exc)) from exc
    elif not paddle_format.is_program_bytes(data):
        return _read_json_inference_model(model_path, params_path)
    else:
        try:
            program, feed, fetch = paddle_format.program_from_bytes(data)
        except (ProgramFormatError, paddle_format.PaddleFormatError) as exc:
            raise CheckpointError(f"{model_path}: not a Paddle inference model this psjob reads: {exc}") from exc
    names = [v.name for v in program.global_block().vars.values() if fluid_io.is_persistable(v)]
    try:
        with open(params_path, "rb") as f:
            arrays = paddle_format.params_from_bytes(f.read(), names, params_path)
    except paddle_format.PaddleFormatError as exc:
        raise CheckpointError(str(exc)) from exc
    except OSError as exc:
        raise CheckpointError(f"cannot read {params_path}: {exc}") from exc
    return program, feed, fetch, arrays


def _read_json_inference_model(model_path, params_path):
    doc = _read_model(model_path)
    try:
        program = program_from_dict(doc["program"])
        feed, fetch = doc["feed"], doc["fetch"]
    except (ProgramFormatError, KeyError) as exc:
        raise CheckpointError(f"{model_path} is not a psjob inference model: {exc}") from exc
    return program, feed, fetch, _read_saved_arrays(params_path, doc["arrays"]["inference"])
