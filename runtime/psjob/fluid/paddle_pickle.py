"""Reading a save made by Paddle 2.x/3.x itself (`paddle.static.save`): its .pdparams and .pdopt
are pickled {name: ndarray} dicts (protocol 2-4). They are read by an unpickler that builds
nothing but numpy arrays (any other class in the file is refused, not built), so a model can
start from parameters Paddle wrote — PaddleRec's `runner.model_init_path` — and a hostile file
cannot run code.
https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/static/load_program_state_en.html
"""
from __future__ import annotations

import io
import os
import pickle

import numpy as np

from psjob.foundation.checkpoint.format import CheckpointError


class _ArraysOnly(pickle.Unpickler):
    """Paddle's pickled state: dicts, numbers, strings and numpy arrays, nothing else."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("collections", "OrderedDict"),
                ("_codecs", "encode")}  # protocol 2's bytes

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a Paddle parameter file")
        return super().find_class(module, name)


def _tensor_marker(expr, env):
    """What a Paddle pickle's `builtins.eval` builds: paddle.save pickles a tensor as
    eval("data", {"data": ndarray}). Only that call is answered (with the array); nothing is
    evaluated."""
    if expr != "data" or not isinstance(env, dict) or set(env) != {"data"} or not isinstance(env["data"], np.ndarray):
        raise pickle.UnpicklingError("builtins.eval is allowed only as Paddle's tensor wrapper "
                                     "eval('data', {'data': ndarray})")
    return env["data"]


class _PaddleObjects(_ArraysOnly):
    """paddle.save's pickles of any object Paddle saves: containers, numbers, strings, numpy
    arrays, tensors (Paddle's eval wrapper, answered by _tensor_marker) and dygraph tensors
    (a (name, ndarray) tuple); protocol 2's bytes (_codecs.encode). Nothing else is built."""

    def find_class(self, module, name):
        if module == "__builtin__":  # protocol 2's name (Python 2's) for builtins
            module = "builtins"
        if (module, name) == ("builtins", "eval"):
            return _tensor_marker
        if (module, name) in {("builtins", "tuple"), ("builtins", "list"), ("builtins", "set"),
                              ("builtins", "frozenset"), ("builtins", "complex"), ("_codecs", "encode"),
                              ("builtins", "bytearray")}:
            return pickle.Unpickler.find_class(self, module, name)
        return super().find_class(module, name)


def read_object(data: bytes):
    """The object paddle.save pickled in `data`; pickle.UnpicklingError (or EOFError,
    ValueError...) for anything else. Big arrays split for protocol 2/3 are joined again."""
    obj = _PaddleObjects(io.BytesIO(data), encoding="latin1").load()
    if isinstance(obj, dict):
        _join_slices(obj)
    return obj


def _join_slices(state: dict) -> None:
    """Paddle splits arrays too big for protocol 2/3 into slices listed under this key."""
    for name, info in state.pop("UnpackBigParamInfor@@", {}).items():
        parts = [state.pop(s) for s in info["slices"]]
        state[name] = np.concatenate(parts).reshape(info["OriginShape"])


class _TensorPickler(pickle.Pickler):
    """Pickles `tensor_types` as paddle.save does a DenseTensor: eval("data", {"data": ndarray})."""

    def __init__(self, f, protocol, tensor_types, to_array):
        super().__init__(f, protocol=protocol)
        self.dispatch_table = {t: (lambda t_: (eval, ("data", {"data": to_array(t_)}))) for t in tensor_types}


def dump_object(obj, f, protocol: int, tensor_types: tuple = (), to_array=np.asarray) -> None:
    """Pickle `obj` as paddle.save does an object that is not a state dict."""
    _TensorPickler(f, protocol, tensor_types, to_array).dump(obj)


def is_paddle_save(model_path) -> bool:
    """Not psjob's: psjob's .pdmodel is JSON. Paddle's is a protobuf, or absent where only the
    parameters were copied (PaddleRec's `model_init_path` often names such a .pdparams)."""
    try:
        with open(model_path + ".pdmodel", "rb") as f:
            return not f.read(1).startswith(b"{")
    except FileNotFoundError:
        return os.path.exists(model_path + ".pdparams")


def read_arrays(path):
    try:
        with open(path, "rb") as f:
            state = _ArraysOnly(io.BytesIO(f.read())).load()
    except (OSError, pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path} as a Paddle save: {exc}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} is not a Paddle parameter file (a {type(state).__name__}, not a dict)")
    _join_slices(state)
    # Dygraph saves add a name map under "StructuredToParameterName@@": not an array.
    return {n: _array(a) for n, a in state.items()
            if isinstance(n, str) and not n.startswith("StructuredToParameterName")}


def _array(value):
    """Paddle 3 saves the learning rate as a Python float and other one-value state 0-D, as its
    own load_program_state returns them; loading into a program fits them to psjob's [1]
    (fluid/io.py's _into_scope)."""
    if isinstance(value, float):
        return np.array(value, dtype=np.float32)
    return np.asarray(value)


def load_state(model_path, wanted=None) -> dict:
    """{name: ndarray} of .pdparams and, when present, .pdopt; only `wanted` names if given."""
    state = {}
    for ext in (".pdparams", ".pdopt"):
        if os.path.exists(model_path + ext):
            state.update(read_arrays(model_path + ext))
    if wanted is not None:
        state = {n: a for n, a in state.items() if n in wanted}
    return state
