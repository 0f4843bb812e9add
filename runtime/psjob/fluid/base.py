"""What every part of the framework shares, below the IR itself: its error, the
reserved variable names and dtype names. The op registry (ops/registry.py) needs
them and the IR (framework.py) needs the registry, so they live here, under both."""
import numpy as np

GRAD_SUFFIX = "@GRAD"
EMPTY_VAR_NAME = "@EMPTY@"


class GraphError(ValueError):
    """A program is malformed: unknown variable, bad shape, misuse of an API."""


def convert_dtype(dtype) -> str:
    """Canonical dtype name ('float32', 'int64', ...) from a str, a numpy dtype or
    Fluid's core.VarDesc.VarType."""
    if dtype is None:
        return "float32"
    if isinstance(dtype, str) and dtype in ("bool", "bool_"):
        return "bool"
    try:
        return np.dtype(dtype).name
    except TypeError as exc:
        raise GraphError(f"unsupported dtype {dtype!r}") from exc
