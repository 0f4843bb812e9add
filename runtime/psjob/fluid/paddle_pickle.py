"""Read the parameter files real Paddle writes with paddle.static.save.

Paddle 2.x's paddle.static.save writes <prefix>.pdparams (the parameters) and <prefix>.pdopt
(the other persistables: optimizer moments, learning rate, metric state) as Python pickles of
{name: numpy.ndarray} (protocol 4 by default; see the paddle.static.save API docs), and
paddle.static.load_program_state returns that dict. Users start a psjob run from a model
trained with Paddle this way (PaddleRec's `runner.model_init_path`), so psjob reads these files.

Only numpy arrays are unpickled: any other class in the file is refused by name, so a
.pdparams cannot run code when it is read.
"""
from __future__ import annotations

import os
import pickle

import numpy as np

from psjob.foundation.checkpoint.format import CheckpointError

__all__ = ["is_paddle_pickle", "read_paddle_state"]

# What pickling a numpy array refers to (numpy 1.x and 2.x spell the module differently).
_ALLOWED = {
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
}
# paddle.static.save with protocol 2/3 splits arrays over 4 GB under this key; psjob does not join them.
_BIG_PARAM_KEY = "UnpackBigParamInfor@@"


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"refusing {module}.{name}: a Paddle parameter file holds numpy arrays only")
        return super().find_class(module, name)


def is_paddle_pickle(path):
    """True when `path` starts as a pickle (protocol 2+) does, as Paddle's .pdparams do."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError:
        return False
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _read_one(path):
    try:
        with open(path, "rb") as f:
            state = _ArrayUnpickler(f).load()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path} as a Paddle parameter file: {exc}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: a Paddle parameter file holds a dict of arrays, got {type(state).__name__}")
    if _BIG_PARAM_KEY in state:
        raise CheckpointError(f"{path} was saved with pickle protocol 2/3 and holds a parameter split over 4 GB; "
                              "save it again with paddle.static.save(..., protocol=4)")
    out = {}
    for name, value in state.items():
        arr = np.asarray(value)
        if arr.dtype == object:
            raise CheckpointError(f"{path}: {name!r} is not a numeric array")
        out[name] = arr
    return out


def read_paddle_state(prefix, wanted=None):
    """{name: ndarray} from <prefix>.pdparams and, when present, <prefix>.pdopt, as
    paddle.static.load_program_state returns them; `wanted` (a set of names) filters."""
    state = _read_one(prefix + ".pdparams")
    if os.path.exists(prefix + ".pdopt"):
        state.update(_read_one(prefix + ".pdopt"))
    if wanted is not None:
        state = {n: a for n, a in state.items() if n in wanted}
    return state
