"""The top-level names of Paddle 2.x's API (`paddle.enable_static`, `paddle.reshape`,
`paddle.ParamAttr`, ...), which `psjob.__getattr__` resolves on first use."""
from __future__ import annotations

from psjob.device import *  # noqa: F403
from psjob.device import __all__ as _device_names
from psjob.fluid.framework import Variable as Tensor
from psjob.param_attr import ParamAttr
from psjob.static.paddle_io import load, save
from psjob.tensor import *  # noqa: F403
from psjob.tensor import __all__ as _tensor_names


def _refuse(name, alternative):
    def refused(*args, **kwargs):
        raise RuntimeError(f"paddle.{name} is not supported by psjob (no dygraph mode): {alternative}")
    refused.__name__ = name
    return refused


DataParallel = _refuse("DataParallel", "psjob trains with parameter servers: use paddle.distributed.fleet")
Model = _refuse("Model", "build a static Program and run it with paddle.static.Executor")


def get_default_dtype():
    return "float32"


class no_grad:  # noqa: N801 (Paddle's name)
    """paddle.no_grad, as a context manager or a decorator: it stops gradients in Paddle's
    dygraph mode and does nothing to a static graph, as in Paddle (code shared between the
    modes uses it, e.g. around an evaluation step)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper


__all__ = (list(_device_names) + list(_tensor_names)
           + ["Tensor", "ParamAttr", "save", "load", "DataParallel", "Model", "get_default_dtype", "no_grad"])
