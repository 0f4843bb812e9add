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
from psjob.fluid.framework import Variable, default_main_program
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
           "set_program_state"]


# -- inference models -------------------------------------------------------------------

def _var_list(value, what):
    items = value if isinstance(value, (list, tuple)) else [value]
    for v in items:
        if not isinstance(v, Variable):
            raise TypeError(f"save_inference_model: {what} must be Variables, got {type(v).__name__}")
    return list(items)


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor, program=None, **kwargs):
    """The program pruned to what `fetch_vars` need (for test: dropout and batch_norm in
    inference mode) to <path_prefix>.pdmodel, its persistables to <path_prefix>.pdiparams,
    both in Paddle's own format."""
    fluid_io._check_executor(executor, "save_inference_model")
    feeds, fetches = _var_list(feed_vars, "feed_vars"), _var_list(fetch_vars, "fetch_vars")
    program = program if program is not None else default_main_program()
    inference = program.clone(for_test=True)._prune(fetches, feeds)
    block = inference.global_block()
    for v in feeds:
        if not block.has_var(v.name):
            raise ValueError(f"save_inference_model: feed variable {v.name!r} is not needed to compute "
                             "the fetch_vars (or not in the program)")
    path = _prefix(path_prefix, "save_inference_model")
    names = [v.name for v in block.vars.values() if fluid_io.is_persistable(v)]
    model = paddle_format.program_to_bytes(inference, [v.name for v in feeds], [v.name for v in fetches])
    params = paddle_format.params_to_bytes(_arrays(global_scope(), names, "save_inference_model"))
    atomic_write(path + ".pdiparams", lambda f: f.write(params))
    atomic_write(path + ".pdmodel", lambda f: f.write(model))


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
