"""paddle.save / paddle.load in static-graph mode, in Paddle's own file formats, so real Paddle
reads what psjob saves and psjob reads what Paddle saves
(https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/save_en.html, load_en.html).

What `paddle.save(obj, path)` writes, as Paddle 3.0.0 (legacy IR) does:

    a Program              its ProgramDesc protobuf (psjob.fluid.paddle_format), no feed/fetch ops
    a state dict           (a dict whose values are tensors, or dicts without tensors) the pickle
                           of the dict with every tensor as its numpy array
    anything else          (a tensor, a list/tuple/dict of tensors, numbers, strings, arrays)
                           its pickle, each tensor as eval("data", {"data": ndarray})
    a tensor with          Paddle's binary tensor format (one LoDTensor)
    use_binary_format=True

`paddle.load(path)` reads those, and the results of the other save APIs: a file by its full
name (paddle.static.save's .pdparams/.pdopt; a tensor file of fluid's save_vars); a
save_inference_model path prefix (<prefix>.pdmodel + .pdiparams: {name: ndarray}); a Fluid
1.x directory (save_params / save_persistables: a tensor file per variable; or
save_inference_model's, read through its program with `model_filename` / `params_filename`).
In static mode every ndarray of a pickle comes back as a tensor (a detached LoDTensor) unless
`return_numpy=True`; prefix and directory loads give ndarrays, as in Paddle. The pickles are
read by psjob.fluid.paddle_pickle's restricted unpickler: nothing but containers, numbers,
strings and arrays is built, and Paddle's eval wrapper is answered without evaluating anything.
Every file is written under a temporary name and renamed into place; a file that cannot be
read raises a ValueError naming it, and nothing is returned half-read.
"""
from __future__ import annotations

import io
import os
import pickle

import numpy as np

from psjob.device import DynamicModeError, in_dynamic_mode
from psjob.fluid import io as fluid_io
from psjob.fluid import paddle_format, paddle_pickle
from psjob.fluid.core import LoDTensor, SelectedRows, to_numpy
from psjob.fluid.framework import Program, Variable
from psjob.fluid.serialization import ProgramFormatError
from psjob.foundation.checkpoint import paddle_wire
from psjob.foundation.checkpoint.format import MANIFEST, CheckpointError, atomic_write, read_manifest, read_var

__all__ = ["save", "load"]

_SAVE_CONFIGS = ("use_binary_format", "pickle_protocol")
_LOAD_CONFIGS = ("model_filename", "params_filename", "keep_name_table", "return_numpy")
_NAME_TABLE = "StructuredToParameterName@@"


def _is_tensor(value) -> bool:
    return isinstance(value, (LoDTensor, SelectedRows))


def _tensor_array(value) -> np.ndarray:
    if isinstance(value, SelectedRows):
        value = value.to_dense()
    return to_numpy(np.asarray(value) if isinstance(value, LoDTensor) else value)


def _contains_tensor(value) -> bool:
    if _is_tensor(value) or isinstance(value, Program):
        return True
    if isinstance(value, dict):
        return any(_contains_tensor(v) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_contains_tensor(v) for v in value)
    return False


def _is_state_dict(obj) -> bool:
    """Paddle's rule: a dict whose values are tensors, or dicts holding no tensor."""
    if not isinstance(obj, dict):
        return False
    for value in obj.values():
        if isinstance(value, dict):
            if any(_contains_tensor(v) for v in value.values()):
                return False
        elif not _is_tensor(value):
            return False
    return True


_PLAIN = (str, bytes, int, float, complex, bool, type(None), np.ndarray, np.generic)


def _check_saveable(obj, where="obj") -> None:
    """Only what paddle.load (Paddle's and psjob's restricted reader) gives back."""
    if isinstance(obj, _PLAIN) or _is_tensor(obj):
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool, tuple, type(None))):
                raise TypeError(f"paddle.save: {where} has a key of type {type(k).__name__}")
            _check_saveable(v, f"{where}[{k!r}]")
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            _check_saveable(v, f"{where}[{i}]")
        return
    if isinstance(obj, Variable):
        raise TypeError(f"paddle.save: {where} is the static Variable {obj.name!r}, which holds no value: save "
                        "its value (var.get_value()) or the program's state (program.state_dict())")
    if isinstance(obj, Program):
        raise TypeError(f"paddle.save: {where} is a Program inside a container: save a Program on its own")
    raise TypeError(f"paddle.save: {where} is a {type(obj).__module__}.{type(obj).__name__}; psjob saves "
                    "tensors, numpy arrays, numbers, strings and dicts/lists/tuples of them")


def _encode(obj, protocol: int, use_binary_format: bool) -> bytes:
    if isinstance(obj, Program):
        return paddle_format.program_to_bytes(obj)
    if use_binary_format:
        if not (_is_tensor(obj) or isinstance(obj, np.ndarray)):
            raise TypeError(f"paddle.save: use_binary_format=True saves one tensor, got {type(obj).__name__}")
        return paddle_wire.tensor_to_bytes(_tensor_array(obj), obj.lod() if isinstance(obj, LoDTensor) else ())
    _check_saveable(obj)
    buf = io.BytesIO()
    if _is_state_dict(obj):
        saved = {k: (_tensor_array(v) if _is_tensor(v) else v) for k, v in obj.items()}
        pickle.dump(saved, buf, protocol=protocol)
    else:
        paddle_pickle.dump_object(obj, buf, protocol, (LoDTensor, SelectedRows), _tensor_array)
    return buf.getvalue()


def _require_static(api: str) -> None:
    if in_dynamic_mode():
        raise DynamicModeError(f"paddle.{api} in dynamic (dygraph) mode is not supported by psjob (no eager "
                               "tensors): call paddle.enable_static() first, then save/load a program's "
                               "state (program.state_dict()), tensors or the Program")


def save(obj, path, protocol: int = 4, **configs) -> None:
    """paddle.save in static mode (see the module's docstring for what is written)."""
    _require_static("save")
    unknown = [k for k in configs if k not in _SAVE_CONFIGS]
    if unknown:
        raise ValueError(f"The additional config ({unknown[0]}) of `paddle.save` is not supported.")
    if configs.get("pickle_protocol") is not None:
        protocol = configs["pickle_protocol"]
    if not isinstance(protocol, int) or isinstance(protocol, bool):
        raise ValueError(f"The 'protocol' MUST be `int`, but received {type(protocol)}")
    if protocol < 2 or protocol > 4:
        raise ValueError(f"Expected 1<'protocol'<5, but received protocol={protocol}")
    use_binary = configs.get("use_binary_format", False)
    if not isinstance(use_binary, bool):
        raise TypeError(f"Type of `use_binary_format` should be bool, but received {type(use_binary)}.")
    data = _encode(obj, protocol, use_binary)
    if hasattr(path, "write"):  # a BytesIO
        path.write(data)
        return
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"only supports saving objects to file and `BytesIO`, but got {type(path)}")
    path = os.fspath(path)
    if os.path.basename(path) == "":
        raise ValueError("The input path MUST be format of dirname/filename [dirname\\filename in Windows system], "
                         f"but received filename is empty string: {path!r}.")
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, lambda f: f.write(data))


# -- load -----------------------------------------------------------------------------------

def _to_tensor(arr: np.ndarray) -> LoDTensor:
    t = LoDTensor()
    t.set(arr)
    return t


def _is_named_array(obj) -> bool:  # Paddle 2.1's pickle of a dygraph tensor: (name, ndarray)
    return isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray)


def _contains(obj, test) -> bool:
    if test(obj):
        return True
    if isinstance(obj, dict):
        return any(_contains(v, test) for v in obj.values())
    if isinstance(obj, (list, tuple, set)):
        return any(_contains(v, test) for v in obj)
    return False


def _convert(obj, test, convert):
    if test(obj):
        return convert(obj)
    if isinstance(obj, dict):
        return type(obj)((k, _convert(v, test, convert)) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set)):
        return type(obj)(_convert(v, test, convert) for v in obj)
    return obj


def _parse_result(obj, return_numpy: bool):
    """Paddle's _parse_load_result: (name, ndarray) tuples become tensors where any is present,
    else every ndarray does; with return_numpy, the arrays stay arrays."""
    if _contains(obj, _is_named_array):
        return _convert(obj, _is_named_array, lambda t: t[1] if return_numpy else _to_tensor(t[1]))
    if return_numpy:
        return obj
    return _convert(obj, lambda v: isinstance(v, np.ndarray), _to_tensor)


def _load_bytes(data: bytes, what: str, config: dict):
    return_numpy = bool(config.get("return_numpy", False))
    try:
        obj = paddle_pickle.read_object(data)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, UnicodeDecodeError, MemoryError) as exc:
        pickle_error = exc
    else:
        if isinstance(obj, dict) and _NAME_TABLE in obj:
            obj = dict(obj)
            table = obj[_NAME_TABLE]
            if not config.get("keep_name_table"):
                del obj[_NAME_TABLE]
            parsed = {k: (_parse_result(v, return_numpy) if isinstance(v, np.ndarray) else v) for k, v in obj.items()}
            if _NAME_TABLE in parsed:
                parsed[_NAME_TABLE] = table
            return parsed
        return _parse_result(obj, return_numpy)
    if "refused" in str(pickle_error) or "is not part of a Paddle" in str(pickle_error) or \
            "builtins.eval" in str(pickle_error):
        raise ValueError(f"`paddle.load` can not parse the file:{what}: {pickle_error}") from pickle_error
    try:  # one tensor in Paddle's binary format (use_binary_format=True; fluid's save_vars)
        tensors = paddle_wire.tensors_from_bytes(data, what)
        if len(tensors) == 1:
            return tensors[0] if return_numpy else _to_tensor(tensors[0])
    except (paddle_wire.PaddleFormatError, ValueError, IndexError):
        pass
    if paddle_format.is_program_bytes(data):  # a Program's ProgramDesc
        try:
            return paddle_format.program_from_bytes(data)[0]
        except (ProgramFormatError, paddle_wire.PaddleFormatError, ValueError, IndexError, KeyError) as exc:
            raise ValueError(f"`paddle.load` can not parse the file:{what}: not a pickle, a tensor, nor a "
                             f"Program this psjob reads ({exc})") from exc
    raise ValueError(f"`paddle.load` can not parse the file:{what}: neither a pickle paddle.save wrote "
                     f"({pickle_error}), a Paddle tensor, nor a Program")


def load(path, **configs):
    """paddle.load in static mode (see the module's docstring for what it reads)."""
    _require_static("load")
    for key in configs:
        if key not in _LOAD_CONFIGS:
            raise ValueError(f"The additional config ({key}) of `paddle.load` is not supported.")
    if hasattr(path, "read"):  # a BytesIO
        return _load_bytes(path.read(), "<BytesIO>", configs)
    path = os.fspath(path)
    if os.path.isfile(path):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ValueError(f"`paddle.load` can not read the file:{path}: {exc}") from exc
        return _load_bytes(data, path, configs)
    prefix_exists = os.path.exists(path + ".pdmodel")
    dir_exists = os.path.isdir(path)
    if prefix_exists and dir_exists:
        raise ValueError(f"The {path}.pdmodel and {path} directory exist at the same time, don't know which one "
                         "to load, please make sure that the specified target of ``path`` is unique.")
    if not prefix_exists and not dir_exists:
        msg = f"The ``path`` ({path}) to load model not exists."
        if os.path.exists(path + ".pdparams") or os.path.exists(path + ".pdopt"):
            msg += (" please specify the full file name, not just the file name prefix. For example, it should "
                    "be written as `paddle.load('model.pdparams')` instead of `paddle.load('model')`.")
        raise ValueError(msg)
    try:
        if prefix_exists:
            return _load_inference_prefix(path)
        return _load_directory(path, configs.get("model_filename"), configs.get("params_filename"))
    except CheckpointError as exc:
        raise ValueError(f"`paddle.load` can not load {path}: {exc}") from exc


def _load_inference_prefix(path: str) -> dict:
    """A save_inference_model's <path>.pdmodel + .pdiparams: {name: ndarray}."""
    with open(path + ".pdmodel", "rb") as f:
        head = f.read(1)
    if head == b"{" and os.path.exists(path + ".pdparams"):
        raise ValueError(f"{path}.pdmodel is psjob's record of a paddle.static.save, not an inference model: "
                         f"load {path}.pdparams (and {path}.pdopt) by their full names")
    from psjob.static.io import read_inference_model
    _, _, _, arrays = read_inference_model(path + ".pdmodel", path + ".pdiparams")
    return {n: np.asarray(a) for n, a in arrays.items()}


def _load_directory(dirname: str, model_filename, params_filename) -> dict:
    """A Fluid 1.x directory: {name: ndarray}."""
    model_path = os.path.join(dirname, os.path.basename(model_filename or fluid_io.MODEL_FILE))
    if model_filename is not None or os.path.exists(model_path):
        return _load_fluid_inference_dir(dirname, model_path, params_filename)
    if params_filename is not None:
        raise ValueError(f"`paddle.load` can not load {dirname}: params_filename={params_filename!r} holds its "
                         f"tensors unnamed; the directory has no program ({fluid_io.MODEL_FILE}, or "
                         "model_filename) to name them")
    manifest = read_manifest(dirname, required=False)
    if manifest is not None:  # psjob's save: its manifest names every variable's file
        if manifest.get("tables"):
            raise ValueError(f"`paddle.load` can not load {dirname}: it holds distributed tables (a distributed "
                             "save); load it with fluid.io.load_persistables")
        return {name: read_var(dirname, name, entry) for name, entry in sorted(manifest["vars"].items())}
    out = {}
    for root, _, files in os.walk(dirname):
        for filename in sorted(files):
            if filename == MANIFEST or filename.startswith("."):
                continue
            file_path = os.path.join(root, filename)
            name = os.path.relpath(file_path, dirname).replace("\\", "/")
            with open(file_path, "rb") as f:
                data = f.read()
            try:
                tensors = paddle_wire.tensors_from_bytes(data, file_path)
            except (paddle_wire.PaddleFormatError, ValueError, IndexError) as exc:
                raise ValueError(f"`paddle.load` can not load {dirname}: {file_path} is not a Paddle tensor "
                                 f"file ({exc})") from exc
            if len(tensors) != 1:
                raise ValueError(f"`paddle.load` can not load {dirname}: {file_path} holds {len(tensors)} tensors, "
                                 "not one (a combined file: give the program with model_filename)")
            out[name] = tensors[0]
    return out


def _load_fluid_inference_dir(dirname: str, model_path: str, params_filename) -> dict:
    program, _, _ = fluid_io._read_inference_program(model_path)
    names = sorted(v.name for v in program.global_block().vars.values() if fluid_io.is_persistable(v))
    if params_filename is not None:
        params_path = os.path.join(dirname, os.path.basename(params_filename))
        try:
            with open(params_path, "rb") as f:
                return paddle_wire.params_from_bytes(f.read(), names, params_path)
        except OSError as exc:
            raise CheckpointError(f"cannot read {params_path}: {exc}") from exc
    manifest = read_manifest(dirname, required=False)
    out = {}
    for name in names:
        if manifest is not None and name in manifest["vars"]:
            out[name] = read_var(dirname, name, manifest["vars"][name])
            continue
        file_path = os.path.join(dirname, name)
        try:
            with open(file_path, "rb") as f:
                tensors = paddle_wire.tensors_from_bytes(f.read(), file_path)
        except OSError as exc:
            raise CheckpointError(f"cannot read {file_path} (the program's persistable {name!r}): {exc}") from exc
        if len(tensors) != 1:
            raise CheckpointError(f"{file_path} holds {len(tensors)} tensors, not one")
        out[name] = tensors[0]
    return out
