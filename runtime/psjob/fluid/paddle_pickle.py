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
                ("numpy._core.multiarray", "scalar"), ("collections", "OrderedDict")}

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a Paddle parameter file")
        return super().find_class(module, name)


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
    # Paddle splits arrays too big for protocol 2/3 into slices listed under this key.
    for name, info in state.pop("UnpackBigParamInfor@@", {}).items():
        parts = [state.pop(s) for s in info["slices"]]
        state[name] = np.concatenate(parts).reshape(info["OriginShape"])
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
