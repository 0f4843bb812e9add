"""paddle.inference: Paddle's inference API (Config, create_predictor) over saved inference models.

    config = paddle.inference.Config("model/rec_inference.pdmodel", "model/rec_inference.pdiparams")
    config.disable_gpu()
    predictor = paddle.inference.create_predictor(config)
    for name, array in zip(predictor.get_input_names(), arrays):
        predictor.get_input_handle(name).copy_from_cpu(array)
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()

Paddle 3.0's API (https://www.paddlepaddle.org.cn/inference/ and the paddle.inference API
reference). A predictor reads the model with psjob.static.load_inference_model into a scope of
its own (two predictors never share parameters; a clone() shares its original's, as Paddle's
does), runs the inference program with an Executor on the CPU and hands outputs back as numpy
arrays. The models are Paddle's files, as psjob's and Paddle's save_inference_model write them
(psjob.fluid.paddle_format):

    Config(prog_file, params_file)   a Paddle 2.x save: <prefix>.pdmodel + <prefix>.pdiparams
                                     (other names too); a Paddle 3.x save with PIR on:
                                     <prefix>.json + <prefix>.pdiparams (psjob.fluid.paddle_pir);
                                     a Fluid combined save: __model__ and its params file (any
                                     names not ending in .pdmodel or .json)
    Config(model_dir)                a Fluid save: model_dir/__model__, its parameters one file
                                     each (or one file named __params__)

Accepted with no effect: the optimisation switches (IR passes, memory optimisation, oneDNN/MKLDNN,
feed/fetch ops, glog, profiling): psjob runs the program's own ops. Refused with a clear error:
GPU, XPU, custom devices, TensorRT, ONNX Runtime, OpenVINO, IPU, and models from memory buffers.
"""
from __future__ import annotations

import enum
import numbers
import os
import tempfile

import numpy as np

from psjob.fluid.core import CPUPlace, LoDTensor, Scope, scope_guard
from psjob.fluid.executor import Executor
from psjob.fluid.io import is_persistable
from psjob.io import eager_tensor
from psjob.static.io import load_inference_files, load_inference_model

__all__ = ["Config", "Predictor", "PredictorPool", "Tensor", "DataType", "PrecisionType", "PlaceType",
           "create_predictor", "get_num_bytes_of_data_type"]


class _Enum(enum.IntEnum):
    def __str__(self):
        return f"{type(self).__name__}.{self.name}"  # as Paddle prints its enums, not the int


class DataType(_Enum):
    """Paddle's PaddleDType, with its values."""
    FLOAT32 = 0
    INT64 = 1
    INT32 = 2
    UINT8 = 3
    INT8 = 4
    FLOAT16 = 5
    BOOL = 6
    FLOAT64 = 7
    BFLOAT16 = 8


class PrecisionType(_Enum):
    Float32 = 0
    Int8 = 1
    Half = 2
    Bfloat16 = 3


class PlaceType(_Enum):
    UNK = -1
    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM = 4


_DTYPES: dict[np.dtype, DataType] = {np.dtype("float32"): DataType.FLOAT32, np.dtype("int64"): DataType.INT64,
           np.dtype("int32"): DataType.INT32, np.dtype("uint8"): DataType.UINT8, np.dtype("int8"): DataType.INT8,
           np.dtype("float16"): DataType.FLOAT16, np.dtype("bool"): DataType.BOOL,
           np.dtype("float64"): DataType.FLOAT64}
_BYTES = {**{t: d.itemsize for d, t in _DTYPES.items()}, DataType.BFLOAT16: 2}


def get_num_bytes_of_data_type(dtype) -> int:
    return _BYTES[DataType(dtype)]


def _data_type(dtype, what) -> DataType:
    try:
        return _DTYPES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"{what}: dtype {dtype} is not one of paddle.inference's data types "
                        f"({', '.join(d.name for d in _DTYPES)})") from None


def _unsupported(what):
    raise NotImplementedError(f"paddle.inference.Config.{what}: psjob runs inference on the CPU only; "
                              "call config.disable_gpu() (the default) and leave this out")


class Config:
    """Where the model is and how to run it (Paddle's AnalysisConfig)."""

    Precision = PrecisionType
    Float32, Int8, Half, Bfloat16 = (PrecisionType.Float32, PrecisionType.Int8, PrecisionType.Half,
                                     PrecisionType.Bfloat16)

    def __init__(self, *args):
        self._model_dir = self._prog_file = self._params_file = ""
        self._threads = 1
        self._switches = {"ir_optim": True, "memory_optim": False, "mkldnn": False, "use_feed_fetch_ops": False,
                          "specify_input_name": False, "glog_info_disabled": False, "profile": False,
                          "ir_debug": False}
        self._deleted_passes: list[str] = []
        if len(args) == 1 and isinstance(args[0], Config):
            other = args[0]
            self._model_dir, self._prog_file, self._params_file = other._model_dir, other._prog_file, other._params_file
            self._threads, self._switches = other._threads, dict(other._switches)
            self._deleted_passes = list(other._deleted_passes)
        elif args:
            self.set_model(*args)

    # -- the model ----------------------------------------------------------------------
    def set_model(self, *args):
        """set_model(model_dir) or set_model(prog_file, params_file)."""
        if len(args) not in (1, 2) or not all(isinstance(a, str) for a in args):
            raise TypeError("Config.set_model takes a model directory, or a program file and a "
                            f"parameters file (strings); got {args!r}")
        if len(args) == 1:
            self._model_dir, self._prog_file, self._params_file = args[0], "", ""
        else:
            self._model_dir, (self._prog_file, self._params_file) = "", args

    def set_prog_file(self, path: str):
        self._prog_file = _string(path, "set_prog_file")

    def set_params_file(self, path: str):
        self._params_file = _string(path, "set_params_file")

    def model_dir(self) -> str:
        return self._model_dir

    def prog_file(self) -> str:
        return self._prog_file

    def params_file(self) -> str:
        return self._params_file

    def model_from_memory(self) -> bool:
        return False

    def set_model_buffer(self, *args):
        raise NotImplementedError("paddle.inference.Config.set_model_buffer: psjob reads models from files; "
                                  "write the buffers to <prefix>.pdmodel/.pdiparams and use set_model")

    # -- devices: the CPU only -------------------------------------------------------------
    def disable_gpu(self):
        """The CPU (psjob's only inference device)."""

    def use_gpu(self) -> bool:
        return False

    def gpu_device_id(self) -> int:
        return 0

    def use_xpu(self) -> bool:
        return False

    def enable_use_gpu(self, memory_pool_init_size_mb=0, device_id=0, precision_mode=PrecisionType.Float32):
        _unsupported("enable_use_gpu")

    def enable_xpu(self, *args, **kwargs):
        _unsupported("enable_xpu")

    def enable_custom_device(self, *args, **kwargs):
        _unsupported("enable_custom_device")

    def enable_ipu(self, *args, **kwargs):
        _unsupported("enable_ipu")

    def enable_tensorrt_engine(self, *args, **kwargs):
        _unsupported("enable_tensorrt_engine")

    def enable_onnxruntime(self):
        _unsupported("enable_onnxruntime")

    def enable_openvino_engine(self, *args, **kwargs):
        _unsupported("enable_openvino_engine")

    def enable_mkldnn_bfloat16(self):
        # it changes the results (bfloat16 arithmetic): refused rather than ignored
        _unsupported("enable_mkldnn_bfloat16")

    def enable_mkldnn_int8(self, *args, **kwargs):
        _unsupported("enable_mkldnn_int8")

    def tensorrt_engine_enabled(self) -> bool:
        return False

    def onnxruntime_enabled(self) -> bool:
        return False

    # -- CPU settings -------------------------------------------------------------------
    def set_cpu_math_library_num_threads(self, n: int):
        """Recorded (and shown by summary()); no effect: psjob's BLAS threads are set when its
        process starts (the launcher sizes them to the host's cores)."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"set_cpu_math_library_num_threads: a thread count >= 1, got {n!r}")
        self._threads = int(n)

    def cpu_math_library_num_threads(self) -> int:
        return self._threads

    def enable_mkldnn(self):
        """Accepted, no effect: psjob's CPU kernels are numpy's (oneDNN's fusions change no result)."""
        self._switches["mkldnn"] = True

    def disable_mkldnn(self):
        """Accepted, no effect (see enable_mkldnn)."""
        self._switches["mkldnn"] = False

    def mkldnn_enabled(self) -> bool:
        return self._switches["mkldnn"]

    def set_mkldnn_cache_capacity(self, capacity=0):
        """Accepted, no effect (see enable_mkldnn)."""

    # -- optimisation switches: accepted, no effect (psjob runs the saved program's ops) ---------
    def switch_ir_optim(self, x=True):
        """Accepted, no effect: psjob runs the saved ops without Paddle's IR passes."""
        self._switches["ir_optim"] = bool(x)

    def ir_optim(self) -> bool:
        return self._switches["ir_optim"]

    def enable_memory_optim(self, x=True):
        """Accepted, no effect."""
        self._switches["memory_optim"] = bool(x)

    def switch_use_feed_fetch_ops(self, x=True):
        """Accepted, no effect: inputs and outputs go through the handles either way."""
        self._switches["use_feed_fetch_ops"] = bool(x)

    def use_feed_fetch_ops_enabled(self) -> bool:
        return self._switches["use_feed_fetch_ops"]

    def switch_specify_input_names(self, x=True):
        """Accepted, no effect: inputs are always found by name."""
        self._switches["specify_input_name"] = bool(x)

    def specify_input_name(self) -> bool:
        return self._switches["specify_input_name"]

    def disable_glog_info(self):
        """Accepted: psjob writes no glog lines."""
        self._switches["glog_info_disabled"] = True

    def glog_info_disabled(self) -> bool:
        return self._switches["glog_info_disabled"]

    def enable_profile(self):
        """Accepted, no effect."""
        self._switches["profile"] = True

    def switch_ir_debug(self, x=True):
        """Accepted, no effect."""
        self._switches["ir_debug"] = bool(x)

    def delete_pass(self, name: str):
        """Accepted, no effect (no IR passes run)."""
        self._deleted_passes.append(name)

    def enable_new_ir(self, x=True):
        """Accepted, no effect."""

    def enable_new_executor(self, x=True):
        """Accepted, no effect."""

    def set_optim_cache_dir(self, path):
        """Accepted, no effect (nothing is optimised to cache)."""

    def summary(self) -> str:
        """The settings as a table, as Paddle prints it."""
        if self._prog_file or self._params_file:  # what create_predictor reads when both are set
            rows = [[("model_file", self._prog_file), ("params_file", self._params_file)]]
        else:
            rows = [[("model_dir", self._model_dir)]]
        rows.append([("cpu_math_thread", str(self._threads)), ("enable_mkldnn", _bool(self._switches["mkldnn"]))])
        rows.append([("use_gpu", "false")])
        rows.append([("ir_optim", _bool(self._switches["ir_optim"])),
                     ("memory_optim", _bool(self._switches["memory_optim"])),
                     ("enable_profile", _bool(self._switches["profile"])),
                     ("enable_log", _bool(not self._switches["glog_info_disabled"]))])
        return _table([[("Option", "Value")], *rows])


def _string(value, what):
    if not isinstance(value, str):
        raise TypeError(f"Config.{what}: a path string, got {type(value).__name__}")
    return value


def _bool(flag) -> str:
    return "true" if flag else "false"


def _table(groups) -> str:
    width = [max(len(k) for g in groups for k, _ in g), max(len(v) for g in groups for _, v in g)]
    rule = "+" + "+".join("-" * (w + 2) for w in width) + "+"
    lines = [rule]
    for group in groups:
        lines += [f"| {k.ljust(width[0])} | {v.ljust(width[1])} |" for k, v in group]
        lines.append(rule)
    return "\n".join(lines) + "\n"


# -- loading ----------------------------------------------------------------------------

def _need_file(path, what):
    if not path:
        raise ValueError(f"create_predictor: the Config has no {what} (Config(prog_file, params_file) "
                         "or Config(model_dir))")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"create_predictor: {what} {path} does not exist")


def _load(config, executor):
    """load_inference_model's [program, feed names, fetch variables] for what `config` names."""
    if config._prog_file or config._params_file:
        prog, params = config._prog_file, config._params_file
        _need_file(prog, "program file")
        _need_file(params, "parameters file")
        if prog.endswith((".pdmodel", ".json")):  # a Paddle 2.x save, or a Paddle 3.x one with PIR on
            return load_inference_files(prog, params, executor)
        # A Fluid combined save (__model__ and __params__, or the names its saver was given).
        if os.path.dirname(os.path.abspath(prog)) == os.path.dirname(os.path.abspath(params)):
            return load_inference_model(os.path.dirname(os.path.abspath(prog)), executor,
                                        model_filename=os.path.basename(prog), params_filename=os.path.basename(params))
        with tempfile.TemporaryDirectory(prefix="psjob-inference-") as d:
            os.symlink(os.path.abspath(prog), os.path.join(d, "__model__"))
            os.symlink(os.path.abspath(params), os.path.join(d, "__params__"))
            return load_inference_model(d, executor, model_filename="__model__", params_filename="__params__")
    model_dir = config._model_dir
    if not model_dir:
        raise ValueError("create_predictor: the Config names no model: Config(prog_file, params_file) "
                         "or Config(model_dir)")
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"create_predictor: model directory {model_dir} does not exist")
    if not os.path.isfile(os.path.join(model_dir, "__model__")):
        raise FileNotFoundError(f"create_predictor: {model_dir} has no __model__ (Config(model_dir) reads a "
                                "Fluid save; for a .pdmodel/.pdiparams pair use Config(prog_file, params_file))")
    combined = "__params__" if os.path.isfile(os.path.join(model_dir, "__params__")) else None
    return load_inference_model(model_dir, executor, model_filename=None, params_filename=combined)


# -- tensors and predictors ----------------------------------------------------------------

class Tensor:
    """An input or output of a Predictor (Paddle's ZeroCopy tensor handle)."""

    def __init__(self, predictor, name, var, is_input):
        self._predictor, self._name, self._var, self._is_input = predictor, name, var, is_input
        self._array = None
        self._lod: list = []
        self._shape = [0]

    def name(self) -> str:
        return self._name

    def copy_from_cpu(self, data):
        """A copy of `data` (a numpy array) becomes this input's value; its shape is the input's shape."""
        if not self._is_input:
            raise ValueError(f"copy_from_cpu: {self._name!r} is an output of the model; inputs: "
                             f"{', '.join(self._predictor.get_input_names())}")
        if not isinstance(data, np.ndarray):
            raise TypeError(f"copy_from_cpu({self._name!r}): takes a numpy ndarray, got {type(data).__name__}")
        _data_type(data.dtype, f"copy_from_cpu({self._name!r})")
        self._array = np.array(data.view(np.ndarray))
        self._shape = list(self._array.shape)

    def copy_to_cpu(self) -> np.ndarray:
        if self._array is None:
            raise RuntimeError(f"tensor {self._name!r} holds no value yet ("
                               + ("copy_from_cpu first)" if self._is_input else "run the predictor first)"))
        return self._array.copy()

    def shape(self) -> list:
        return list(self._shape)

    def reshape(self, shape):
        """The shape copy_to_cpu gives; a value of another size is dropped (copy_from_cpu sets both)."""
        dims = [int(shape)] if isinstance(shape, (int, np.integer)) else [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise ValueError(f"reshape({self._name!r}): dimensions must be >= 0, got {dims}")
        if self._array is not None:
            self._array = self._array.reshape(dims) if self._array.size == int(np.prod(dims)) else None
        self._shape = dims

    def type(self) -> DataType:
        dtype = self._array.dtype if self._array is not None else np.dtype(self._var.dtype)
        return _data_type(dtype, f"tensor {self._name!r}")

    def set_lod(self, lod):
        self._lod = [[int(i) for i in level] for level in lod]

    def lod(self) -> list:
        return [list(level) for level in self._lod]

    def _set_output(self, fetched: LoDTensor):
        self._array = np.asarray(fetched)
        self._shape = list(self._array.shape)
        self._lod = fetched.lod()

    def _clear(self):
        self._array, self._lod, self._shape = None, [], [0]


class Predictor:
    """The model loaded into a scope of its own, run with an Executor on the CPU."""

    def __init__(self, config: Config, _source: Predictor | None = None):
        self._config = config
        self._scope = Scope()
        self._executor = Executor(CPUPlace())
        if _source is None:
            with scope_guard(self._scope):
                self._program, feeds, fetches = _load(config, self._executor)
        else:
            # Paddle's clone shares the parameters: the same arrays (inference never writes them)
            self._program, feeds, fetches = _source._program, _source._feeds, _source._fetches
            for name in _source._persistables():
                self._scope.vars[name] = _source._scope.vars[name]
        self._feeds: list[str] = list(feeds)
        self._fetches: list = list(fetches)
        block = self._program.global_block()
        self._inputs = {n: Tensor(self, n, block.var(n), True) for n in self._feeds}
        self._outputs = {v.name: Tensor(self, v.name, v, False) for v in self._fetches}

    def _persistables(self):
        return [n for n, v in self._program.global_block().vars.items()
                if is_persistable(v) and n in self._scope.vars]

    def get_input_names(self) -> list:
        return list(self._feeds)

    def get_output_names(self) -> list:
        return [v.name for v in self._fetches]

    def get_input_handle(self, name: str) -> Tensor:
        return _handle(self._inputs, name, "input")

    def get_output_handle(self, name: str) -> Tensor:
        return _handle(self._outputs, name, "output")

    def run(self, inputs=None):
        """run(): the inputs' handles to the outputs' handles. run(list): the list's arrays (or
        tensors: anything with .numpy()) as the inputs in get_input_names() order; returns the
        outputs, as tensors (numpy arrays with .numpy()), in get_output_names() order."""
        if inputs is not None:
            if not isinstance(inputs, (list, tuple)) or len(inputs) != len(self._feeds):
                raise ValueError(f"Predictor.run(inputs): a list of {len(self._feeds)} arrays, one per input "
                                 f"({', '.join(self._feeds)}); got {_describe(inputs)}")
            for name, value in zip(self._feeds, inputs):
                self._inputs[name].copy_from_cpu(value.numpy() if hasattr(value, "numpy") else value)
        missing = [n for n in self._feeds if self._inputs[n]._array is None]
        if missing:
            raise ValueError(f"Predictor.run: input(s) {', '.join(map(repr, missing))} not set: "
                             "get_input_handle(name).copy_from_cpu(array) first")
        feed = {}
        for name in self._feeds:
            handle = self._inputs[name]
            feed[name] = (handle._array, handle._lod) if handle._lod else handle._array
        fetched = self._executor.run(self._program, feed=feed, fetch_list=self._fetches, scope=self._scope,
                                     return_numpy=False)
        for var, value in zip(self._fetches, fetched):
            self._outputs[var.name]._set_output(value)
        if inputs is not None:
            return [eager_tensor(self._outputs[v.name].copy_to_cpu()) for v in self._fetches]
        return None

    def clone(self, stream=None) -> Predictor:
        """A predictor over the same parameters with inputs and outputs of its own."""
        return Predictor(self._config, _source=self)

    def clear_intermediate_tensor(self):
        """Drops every value but the parameters (the next run computes them again)."""
        keep = set(self._persistables())
        for name in [n for n in self._scope.vars if n not in keep]:
            del self._scope.vars[name]
            self._scope.lods.pop(name, None)

    def try_shrink_memory(self) -> int:
        """clear_intermediate_tensor; returns 0 (no memory pool to shrink)."""
        self.clear_intermediate_tensor()
        return 0


def _handle(handles, name, kind):
    try:
        return handles[name]
    except (KeyError, TypeError):
        raise ValueError(f"the model has no {kind} named {name!r}; its {kind}s: {', '.join(handles)}") from None


def _describe(value):
    if isinstance(value, (list, tuple)):
        return f"{len(value)} value(s)"
    return type(value).__name__


def create_predictor(config: Config) -> Predictor:
    if not isinstance(config, Config):
        raise TypeError(f"create_predictor takes a paddle.inference.Config, got {type(config).__name__}")
    return Predictor(config)


class PredictorPool:
    """`size` predictors over one model's parameters (the first loads it, the others are its clones)."""

    def __init__(self, config: Config, size: int = 1):
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
            raise ValueError(f"PredictorPool: size must be an int >= 1, got {size!r}")
        first = create_predictor(config)
        self._predictors: list[Predictor] = [first] + [first.clone() for _ in range(int(size) - 1)]

    def retrive(self, idx: int) -> Predictor:  # Paddle's spelling
        if not 0 <= idx < len(self._predictors):
            raise IndexError(f"PredictorPool.retrive({idx}): the pool holds {len(self._predictors)} predictors")
        return self._predictors[idx]
