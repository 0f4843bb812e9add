"""paddle.static: Paddle 2.x's static-graph API over psjob's Program and Executor.

    import psjob as paddle
    paddle.enable_static()
    x = paddle.static.data("x", [None, 13], "float32")
    y = paddle.static.nn.fc(x, 1)

Programs, executors, scopes and the backward pass are Fluid's (psjob.fluid); this package
adds the 2.x spellings: `data` takes the whole shape (None or -1 for the batch), the
save functions take path prefixes (see static/io.py), and `nn` holds the layer functions.
"""
from __future__ import annotations

from psjob.fluid.backward import append_backward, gradients
from psjob.fluid.compiler import BuildStrategy, ExecutionStrategy
from psjob.fluid.core import CPUPlace, CUDAPlace, Scope, global_scope, scope_guard
from psjob.fluid.device_guard import device_guard
from psjob.fluid.executor import CompiledProgram, Executor, ParallelExecutor
from psjob.fluid.framework import (
    Parameter,
    Program,
    Variable,
    convert_dtype,
    default_main_program,
    default_startup_program,
    name_scope,
    program_guard,
)
from psjob.fluid.layers import create_global_var, create_parameter
from psjob.fluid.layers.control_flow import Print
from psjob.fluid.layers.metric_op import accuracy, ctr_metric_bundle
from psjob.fluid.layers.metric_op import static_auc as auc
from psjob.fluid.layers.nn import py_func
from psjob.fluid.param_attr import WeightNormParamAttr
from psjob.foundation.settings import process_settings
from psjob.static import nn
from psjob.static.ema import ExponentialMovingAverage
from psjob.static.io import (
    deserialize_persistables,
    deserialize_program,
    load,
    load_from_file,
    load_inference_model,
    load_program_state,
    load_vars,
    normalize_program,
    save,
    save_inference_model,
    save_to_file,
    save_vars,
    serialize_persistables,
    serialize_program,
    set_program_state,
)


def data(name, shape, dtype=None, lod_level=0):
    """A fed input of exactly `shape` (None or -1 marks the batch or any unknown dimension)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"paddle.static.data: name must be a non-empty string, got {name!r}")
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"paddle.static.data({name!r}): shape must be a list, got {shape!r}")
    dims = [-1 if d is None else int(d) for d in shape]
    if any(d < -1 for d in dims):
        raise ValueError(f"paddle.static.data({name!r}): bad shape {list(shape)}")
    block = default_main_program().global_block()
    dtype = convert_dtype(dtype or "float32")
    if block.has_var(name):
        var = block.var(name)
        if list(var.shape) != dims or var.dtype != dtype:
            raise ValueError(f"paddle.static.data({name!r}) already declared as {var.dtype}"
                             f"{list(var.shape)}, now {dtype}{dims}")
        return var
    return block.create_var(name=name, shape=dims, dtype=dtype, lod_level=lod_level,
                            stop_gradient=True, is_data=True)


class InputSpec:
    """The shape, dtype and name of a model input (Paddle 2.x's paddle.static.InputSpec);
    batch() and unbatch() change the spec in place and return it, as Paddle's."""

    def __init__(self, shape, dtype="float32", name=None, stop_gradient=False):
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"InputSpec: shape must be a list or tuple, got {type(shape).__name__}")
        self.shape = tuple(-1 if d is None else int(d) for d in shape)
        self.dtype = convert_dtype(dtype)
        self.name = name
        self.stop_gradient = bool(stop_gradient)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name or tensor.name)

    @classmethod
    def from_numpy(cls, ndarray, name=None):
        return cls(ndarray.shape, ndarray.dtype, name)

    def batch(self, batch_size):
        """Prepend the batch dimension (an int, or a list of one int) to the shape."""
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 1:
                raise ValueError(f"InputSpec.batch: batch_size must be an int or a list of one, got {batch_size!r}")
            batch_size = batch_size[0]
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise TypeError(f"InputSpec.batch: batch_size must be an int, got {type(batch_size).__name__}")
        self.shape = (batch_size,) + self.shape
        return self

    def unbatch(self):
        """Drop the first (batch) dimension of the shape."""
        if not self.shape:
            raise ValueError("InputSpec.unbatch: the spec has no dimensions")
        self.shape = self.shape[1:]
        return self

    def __eq__(self, other):
        return (isinstance(other, InputSpec)
                and (self.shape, self.dtype, self.name, self.stop_gradient)
                == (other.shape, other.dtype, other.name, other.stop_gradient))

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name, self.stop_gradient))

    def __repr__(self):
        return (f"InputSpec(shape={self.shape}, dtype=paddle.{self.dtype}, name={self.name}, "
                f"stop_gradient={self.stop_gradient})")


def cpu_places(device_count=None):
    """`device_count` CPUPlaces (default: $CPU_NUM, else 1), as Paddle lists them."""
    count = device_count if device_count is not None else process_settings().process.cpu_num
    return [CPUPlace() for _ in range(count)]


def cuda_places(device_ids=None):
    from psjob.fluid.core import is_compiled_with_cuda
    if not is_compiled_with_cuda():
        raise RuntimeError("paddle.static.cuda_places: no CUDA device (psjob needs CuPy and a GPU)")
    return [CUDAPlace(i) for i in (device_ids if device_ids is not None else [0])]
