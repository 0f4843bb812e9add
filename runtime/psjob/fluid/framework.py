"""The static-graph IR: Program → Block → (Variable, Operator).

A user script builds a Program by calling layers; nothing runs until an
Executor interprets it. Programs are plain data — names, shapes, attributes —
so the transpiler can rewrite them and `serialize` can ship them to another
process. Shapes use -1 for the batch dimension.

Every operator carries `op_role` (Forward, Backward, Optimize, RPC, Dist,
LRSched — the values and bit layout PaddlePaddle uses, so role tests written
against Paddle's read the same) and optimizer ops carry `op_role_var`, the
(param, grad) pair the DistributeTranspiler keys on.
"""
from __future__ import annotations

import contextlib
import copy
import enum
from collections.abc import Iterable
from typing import Any

import numpy as np

from psjob.fluid import core as _core
from psjob.fluid import unique_name
from psjob.fluid.base import EMPTY_VAR_NAME, GRAD_SUFFIX, GraphError, convert_dtype  # noqa: F401 - the IR's names
from psjob.fluid.ops.registry import infer_shape

OP_ROLE_ATTR_NAME = "op_role"
OP_ROLE_VAR_ATTR_NAME = "op_role_var"
OP_DEVICE_ATTR_NAME = "op_device"
# The device named by the innermost fluid.device_guard (device_guard.py sets
# it); forward ops appended meanwhile carry it as their `op_device`.
_current_device: str | None = None


class OpRole(enum.IntFlag):
    Forward = 0x0000
    Backward = 0x0001
    Optimize = 0x0002
    RPC = 0x0004
    Dist = 0x0008
    LRSched = 0x0010
    Loss = 0x0100


class VarType(str, enum.Enum):
    LOD_TENSOR = "LOD_TENSOR"
    SELECTED_ROWS = "SELECTED_ROWS"
    RAW = "RAW"  # control-dependency placeholders (send/recv "dummy" outputs)
    STEP_SCOPES = "STEP_SCOPES"  # what a control-flow op keeps for its gradient
    LOD_TENSOR_ARRAY = "LOD_TENSOR_ARRAY"  # a tensor array (fluid.layers.create_array)
    LOD_RANK_TABLE = "LOD_RANK_TABLE"  # sequences by length (fluid.layers.DynamicRNN)


# fn(x, other, op_type, reverse) -> Variable: what `x + y` builds (layers/math_sugar.py).
_arithmetic = None


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


# fn(bytes) -> Program, or None for bytes that are not Paddle's ProgramDesc: how
# Program.parse_from_string reads Paddle's format (paddle_format.py installs it, on import).
_paddle_program_reader = None


def set_paddle_program_reader(fn) -> None:
    global _paddle_program_reader
    _paddle_program_reader = fn


def set_arithmetic(fn) -> None:
    """Install the builder of Variable arithmetic (psjob.fluid.layers does, on import)."""
    global _arithmetic
    _arithmetic = fn


# fn(x, item) -> Variable: what `x[item]` builds (layers/indexing.py).
_indexing = None


def set_indexing(fn) -> None:
    """Install the builder of Variable indexing (psjob.fluid.layers does, on import)."""
    global _indexing
    _indexing = fn


# What Paddle 3.0 calls psjob's (Fluid's) variable types when it prints a program.
_PADDLE3_TYPE_NAMES = {"LOD_TENSOR": "DENSE_TENSOR", "LOD_TENSOR_ARRAY": "DENSE_TENSOR_ARRAY"}


_PROTO_DTYPES = {"bool": "BOOL", "int8": "INT8", "uint8": "UINT8", "int16": "INT16", "int32": "INT32",
                 "int64": "INT64", "float16": "FP16", "bfloat16": "BF16", "float32": "FP32", "float64": "FP64",
                 "complex64": "COMPLEX64", "complex128": "COMPLEX128"}


def _proto_dtype(dtype) -> str:
    """Paddle's VarType name of a dtype, as its VarDesc's text shows it (float32 -> FP32)."""
    return _PROTO_DTYPES.get(str(dtype), str(dtype).upper())


def grad_var_name(name: str) -> str:
    return name + GRAD_SUFFIX


class Variable:
    """A named slot in a Block; holds no data (the Scope does)."""

    def __init__(self, block: Block, name: str, shape=None, dtype=None, *,
                 lod_level: int = 0, persistable: bool = False,
                 stop_gradient: bool = False, type: VarType = VarType.LOD_TENSOR,
                 is_data: bool = False):
        self.block = block
        self.name = name
        self.shape = tuple(int(d) for d in shape) if shape is not None else ()
        self.dtype = convert_dtype(dtype)
        self.lod_level = lod_level
        self.persistable = persistable
        self.stop_gradient = stop_gradient
        self.type = VarType(type)
        self.is_data = is_data

    # Paddle scripts call var.desc.* occasionally; the Variable is its own desc.
    @property
    def desc(self):
        return self

    def to_dict(self) -> dict:
        return {
            "name": self.name, "shape": list(self.shape), "dtype": self.dtype,
            "lod_level": self.lod_level, "persistable": self.persistable,
            "stop_gradient": self.stop_gradient, "type": self.type.value,
            "is_data": self.is_data, "kind": "var",
        }

    def __repr__(self):
        """Paddle 3.0's legacy-graph text of a variable (its Variable._to_readable_code), e.g.
        `persist trainable param fc_0.w_0 : DENSE_TENSOR.shape(3, 2).dtype(float32).stop_gradient(False)`."""
        kind = _PADDLE3_TYPE_NAMES.get(self.type.value, self.type.value)
        if self.type in (VarType.LOD_TENSOR, VarType.SELECTED_ROWS):
            text = (f"{self.name} : {kind}.shape{tuple(self.shape)}.dtype({self.dtype})"
                    f".stop_gradient({self.stop_gradient})")
        else:
            text = f"{self.name} : {kind})"
        if self.is_parameter:
            text = ("trainable param " if getattr(self, "trainable", True) else "param ") + text
        else:
            text = "var " + text
        return ("persist " + text) if self.persistable else text

    __str__ = __repr__

    def to_string(self, throw_on_error=True, with_details=False) -> str:
        """Paddle 3.0's text of the variable's VarDesc (protobuf text format); with_details adds
        its Python-side attributes (for a Parameter: trainable, optimize_attr, ...)."""
        if not isinstance(throw_on_error, bool) or not isinstance(with_details, bool):
            raise TypeError("to_string: throw_on_error and with_details must be bools")
        kind = _PADDLE3_TYPE_NAMES.get(self.type.value, self.type.value)
        lines = [f'name: "{self.name}"', "type {", f"  type: {kind}"]
        if self.type in (VarType.LOD_TENSOR, VarType.LOD_TENSOR_ARRAY):
            holder = "dense_tensor" if self.type == VarType.LOD_TENSOR else "tensor_array"
            lines += [f"  {holder} {{", "    tensor {", f"      data_type: {_proto_dtype(self.dtype)}"]
            if self.type == VarType.LOD_TENSOR:
                lines += [f"      dims: {d}" for d in self.shape]
            lines.append("    }")
            if self.type == VarType.LOD_TENSOR and not self.is_parameter:
                lines.append(f"    legacy_lod_level: {self.lod_level}")
            lines.append("  }")
        lines.append("}")
        if self.type != VarType.LOD_TENSOR_ARRAY:
            lines.append(f"persistable: {str(bool(self.persistable)).lower()}")
        if self.is_parameter:
            lines.append("is_parameter: true")
        if self.is_data:
            lines.append("need_check_feed: true")
        lines.append(f"stop_gradient: {str(bool(self.stop_gradient)).lower()}")
        if with_details:
            lines.append(f"error_clip: {getattr(self, 'error_clip', None)}")
            if isinstance(self, Parameter):
                lines += [f"trainable: {self.trainable}", f"optimize_attr: {self.optimize_attr}",
                          f"regularizer: {self.regularizer}",
                          f"do_model_average: {True if self.do_model_average is None else self.do_model_average}",
                          f"need_clip: {getattr(self, 'need_clip', True)}"]
        return "\n".join(lines) + "\n"

    # -- Paddle's descriptive attributes of a static Variable ----------------------------
    @property
    def is_parameter(self) -> bool:
        return isinstance(self, Parameter)

    @property
    def grad_name(self) -> str:
        """The name of this variable's gradient (name@GRAD)."""
        return grad_var_name(self.name)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        """The number of dimensions (Paddle's Variable.dim / ndimension / ndim)."""
        return len(self.shape)

    ndimension = dim

    def element_size(self) -> int:
        """Bytes per element of the variable's dtype (bool 1, float16 2, float32 4, ...)."""
        if self.dtype in ("bfloat16", "float16"):
            return 2
        try:
            return int(np.dtype(self.dtype).itemsize)
        except TypeError as exc:
            raise ValueError(f"element_size: variable {self.name!r} has no element dtype ({self.dtype})") from exc

    # Arithmetic sugar as in Fluid (x + y builds an elementwise op). The ops are the
    # layers' (above this module), which install the builder: set_arithmetic.
    def _binary(self, other, op_type, reverse=False):
        if _arithmetic is None:
            raise GraphError(f"{op_type} on Variable {self.name!r}: arithmetic on Variables is built by "
                             "psjob.fluid.layers, which is not loaded (import psjob.fluid.layers, or use any "
                             "name of psjob.fluid)")
        return _arithmetic(self, other, op_type, reverse)

    def __add__(self, o):
        return self._binary(o, "elementwise_add")

    def __radd__(self, o):
        return self._binary(o, "elementwise_add", True)

    def __sub__(self, o):
        return self._binary(o, "elementwise_sub")

    def __rsub__(self, o):
        return self._binary(o, "elementwise_sub", True)

    def __mul__(self, o):
        return self._binary(o, "elementwise_mul")

    def __rmul__(self, o):
        return self._binary(o, "elementwise_mul", True)

    def __truediv__(self, o):
        return self._binary(o, "elementwise_div")

    def __rtruediv__(self, o):
        return self._binary(o, "elementwise_div", True)

    def __floordiv__(self, o):
        return self._binary(o, "elementwise_floordiv")

    def __mod__(self, o):
        return self._binary(o, "elementwise_mod")

    def __pow__(self, o):
        return self._binary(o, "elementwise_pow")

    def __rpow__(self, o):
        return self._binary(o, "elementwise_pow", True)

    # Comparisons build bool ops as Paddle's do; == and != stay identity so that
    # Variables keep working as dict keys and in `in` tests — except against a number
    # (`ids != 0`, PaddleRec's TiSAS), where identity could only ever say False.
    def __eq__(self, o):
        return self._binary(o, "equal") if _is_number(o) else self is o

    def __ne__(self, o):
        return self._binary(o, "not_equal") if _is_number(o) else self is not o

    __hash__ = object.__hash__

    def __lt__(self, o):
        return self._binary(o, "less_than")

    def __le__(self, o):
        return self._binary(o, "less_equal")

    def __gt__(self, o):
        return self._binary(o, "greater_than")

    def __ge__(self, o):
        return self._binary(o, "greater_equal")

    def __neg__(self):
        return self._binary(-1.0, "elementwise_mul")

    def __matmul__(self, o):
        return self._binary(o, "matmul")

    def astype(self, dtype):
        """A cast (Paddle 2.x's Variable.astype)."""
        return self._binary(convert_dtype(dtype), "cast")

    def item(self):
        """The Variable itself (Paddle's static `item`, there for code shared with dygraph, e.g.
        `paddle.shape(x)[0].item()` as a dimension of paddle.full); more than 1-D is a TypeError."""
        if len(self.shape) > 1:
            raise TypeError(f"item: {self.name!r} must be a 0-D or 1-D Variable, got shape {list(self.shape)}")
        return self

    def __getitem__(self, item):
        """x[1:3], x[:, 0], x[..., ::-1], x[None]: a strided_slice (layers/indexing.py)."""
        if _indexing is None:
            raise GraphError(f"indexing Variable {self.name!r} is built by psjob.fluid.layers, which is not "
                             "loaded (import psjob.fluid.layers, or use any name of psjob.fluid)")
        return _indexing(self, item)

    def __iter__(self):
        # __getitem__ alone would make Python iterate x[0], x[1], ... without end on a -1 dimension.
        raise TypeError(f"Variable {self.name!r} is not iterable in a static graph: index it (x[i]) or "
                        "split it (paddle.split)")

    # -- values in a scope (Paddle's Variable.get_value / set_value) --------------------
    def get_value(self, scope=None):
        """The variable's tensor in `scope` (the global scope by default): a LoDTensor viewing
        the scope's slot, as Paddle returns the scope's tensor."""
        scope = _scope_of(scope)
        if scope.find_var(self.name) is None:
            raise ValueError(f"Can not find Variable '{self.name}' in the Scope.")
        return _core.LoDTensor(scope, self.name)

    def set_value(self, value, scope=None):
        """Write `value` (an ndarray or a tensor) into the variable's slot in `scope`. As in
        Paddle, a shape other than the variable's is a ValueError naming it; a value of another
        dtype is cast to the declared one where the kind agrees (float to float, int to int;
        Paddle stores the given dtype), else a ValueError."""
        scope = _scope_of(scope)
        if scope.find_var(self.name) is None:
            raise ValueError(f"Can not find Variable '{self.name}' in the Scope.")
        arr = _fit_value(self, value)
        xp = _array_module_of(scope.vars[self.name])
        scope.vars[self.name] = arr if xp is np else xp.asarray(arr)


class Parameter(Variable):
    """A trainable, persistable Variable created by a layer or `create_parameter`."""

    def __init__(self, block, name, shape, dtype, *, trainable=True,
                 optimize_attr=None, regularizer=None, initializer=None,
                 gradient_clip_attr=None, do_model_average=None, **kwargs):
        if not shape or any(d <= 0 for d in shape):
            raise GraphError(f"parameter {name!r} needs a fully known positive shape, got {shape}")
        kwargs.setdefault("persistable", True)
        super().__init__(block, name, shape, dtype, **kwargs)
        self.trainable = trainable
        self.stop_gradient = not trainable
        self.optimize_attr = optimize_attr or {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.initializer = initializer
        self.gradient_clip_attr = gradient_clip_attr
        self.do_model_average = do_model_average

    def to_dict(self):
        d = super().to_dict()
        d.update(kind="param", trainable=self.trainable,
                 optimize_attr=dict(self.optimize_attr))
        return d


def _names(value) -> list[str]:
    """Normalize an op input/output argument to a list of variable names."""
    if value is None:
        return []
    if isinstance(value, (Variable, str)):
        value = [value]
    out = []
    for v in value:
        if isinstance(v, Variable):
            out.append(v.name)
        elif isinstance(v, str):
            out.append(v)
        else:
            raise GraphError(f"op argument must be a Variable or a name, got {type(v).__name__}")
    return out


class Operator:
    """One op: a type, named input/output slots (lists of var names), attributes."""

    def __init__(self, block: Block, type: str, inputs=None, outputs=None, attrs=None):
        self.block = block
        self.type = type
        self.inputs: dict[str, list[str]] = {k: _names(v) for k, v in (inputs or {}).items()}
        self.outputs: dict[str, list[str]] = {k: _names(v) for k, v in (outputs or {}).items()}
        self.attrs: dict[str, Any] = dict(attrs or {})

    @property
    def desc(self):
        return self

    @property
    def idx(self) -> int:
        return self.block.ops.index(self)

    # -- Fluid's accessor names -------------------------------------------------
    def input(self, slot: str) -> list[str]:
        return list(self.inputs.get(slot, []))

    def output(self, slot: str) -> list[str]:
        return list(self.outputs.get(slot, []))

    @property
    def input_names(self) -> list[str]:
        return list(self.inputs)

    @property
    def output_names(self) -> list[str]:
        return list(self.outputs)

    @property
    def input_arg_names(self) -> list[str]:
        return [n for names in self.inputs.values() for n in names]

    @property
    def output_arg_names(self) -> list[str]:
        return [n for names in self.outputs.values() for n in names]

    @property
    def attr_names(self) -> list[str]:
        return list(self.attrs)

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def _set_attr(self, name: str, value):
        self.attrs[name] = value

    set_attr = _set_attr

    def all_attrs(self) -> dict:
        return dict(self.attrs)

    def _rename_input(self, old: str, new: str):
        for names in self.inputs.values():
            names[:] = [new if n == old else n for n in names]

    def _rename_output(self, old: str, new: str):
        for names in self.outputs.values():
            names[:] = [new if n == old else n for n in names]

    def to_dict(self) -> dict:
        attrs = {}
        for k, v in self.attrs.items():
            if isinstance(v, Block):
                attrs[k] = {"__block__": v.idx}
            elif isinstance(v, (list, tuple)) and v and all(isinstance(b, Block) for b in v):
                attrs[k] = {"__blocks__": [b.idx for b in v]}
            elif isinstance(v, np.ndarray):
                attrs[k] = {"__ndarray__": v.tolist(), "dtype": v.dtype.name}
            elif isinstance(v, (np.integer, np.floating)):
                attrs[k] = v.item()
            else:
                attrs[k] = v
        return {"type": self.type, "inputs": self.inputs, "outputs": self.outputs, "attrs": attrs}

    def __repr__(self):
        ins = ", ".join(f"{k}={v}" for k, v in self.inputs.items())
        outs = ", ".join(f"{k}={v}" for k, v in self.outputs.items())
        return f"{{{outs}}} = {self.type}({ins})"

    __str__ = __repr__


class Block:
    def __init__(self, program: Program, idx: int, parent_idx: int = -1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.forward_block_idx = -1
        self.vars: dict[str, Variable] = {}
        self.ops: list[Operator] = []

    @property
    def desc(self):
        return self

    @property
    def parent_block(self):
        return self.program.block(self.parent_idx) if self.parent_idx >= 0 else None

    # -- variables ----------------------------------------------------------------
    def create_var(self, name=None, shape=None, dtype=None, **kwargs) -> Variable:
        if name is None:
            name = unique_name.generate_in(self.program, "_generated_var")
        if name in self.vars:
            # Fluid returns the existing var; keep that, but fill in a missing shape.
            var = self.vars[name]
            if shape is not None and not var.shape:
                var.shape = tuple(shape)
            return var
        kwargs.pop("belong_to_optimizer", None)
        var = Variable(self, name, shape, dtype, **kwargs)
        self.vars[name] = var
        self.program._bump()
        return var

    def create_parameter(self, name, shape, dtype="float32", **kwargs) -> Parameter:
        if name in self.vars:
            raise GraphError(f"parameter {name!r} already exists in block {self.idx}")
        param = Parameter(self, name, shape, dtype, **kwargs)
        self.vars[name] = param
        self.program._bump()
        return param

    def var(self, name: str) -> Variable:
        if not isinstance(name, str):
            raise TypeError(f"var() takes a name, got {type(name).__name__}")
        if name not in self.vars:
            raise GraphError(f"variable {name!r} is not in block {self.idx}")
        return self.vars[name]

    def has_var(self, name: str) -> bool:
        return name in self.vars

    def _find_var_recursive(self, name: str):
        """This block's variable `name`, or its parents'; a gradient block also sees the
        block it differentiates (forward_block_idx), as in Paddle."""
        block = self
        while block is not None:
            if name in block.vars:
                return block.vars[name]
            if block.forward_block_idx >= 0:
                var = self.program.block(block.forward_block_idx)._find_var_recursive(name)
                if var is not None:
                    return var
            block = block.parent_block
        return None

    def _var_recursive(self, name: str) -> Variable:
        var = self._find_var_recursive(name)
        if var is None:
            raise GraphError(f"variable {name!r} is not in block {self.idx} or its parents")
        return var

    def _remove_var(self, name: str):
        self.vars.pop(name, None)
        self.program._bump()

    def _rename_var(self, old: str, new: str) -> Variable:
        var = self.var(old)
        del self.vars[old]
        var.name = new
        self.vars[new] = var
        for op in self.ops:
            op._rename_input(old, new)
            op._rename_output(old, new)
        self.program._bump()
        return var

    def _clone_variable(self, var: Variable, force_persistable=True) -> Variable:
        """Copy a variable's declaration (not its data) into this block."""
        new = copy.copy(var)
        new.block = self
        if force_persistable:
            new.persistable = True
        self.vars[var.name] = new
        self.program._bump()
        return new

    def all_parameters(self) -> list[Parameter]:
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def iter_parameters(self):
        return iter(self.all_parameters())

    # -- operators ------------------------------------------------------------------
    def _make_op(self, type, inputs, outputs, attrs) -> Operator:
        attrs = dict(attrs or {})
        attrs.setdefault(OP_ROLE_ATTR_NAME, int(self.program._current_role))
        if OP_ROLE_VAR_ATTR_NAME not in attrs and self.program._op_role_var:
            attrs[OP_ROLE_VAR_ATTR_NAME] = list(self.program._op_role_var)
        if _current_device is not None and self.program._current_role == OpRole.Forward:
            attrs.setdefault(OP_DEVICE_ATTR_NAME, _current_device)
        if len(_name_scopes) > 1:
            attrs.setdefault("op_namescope", _current_name_scope())
        op = Operator(self, type, inputs, outputs, attrs)
        infer_shape(op)
        return op

    def append_op(self, type, inputs=None, outputs=None, attrs=None, **_ignored) -> Operator:
        op = self._make_op(type, inputs, outputs, attrs)
        self.ops.append(op)
        self.program._bump()
        return op

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None, **_ignored) -> Operator:
        op = self._make_op(type, inputs, outputs, attrs)
        self.ops.insert(index, op)
        self.program._bump()
        return op

    def _prepend_op(self, *args, **kwargs) -> Operator:
        return self._insert_op(0, *args, **kwargs)

    def _remove_op(self, index: int):
        del self.ops[index]
        self.program._bump()

    def to_dict(self) -> dict:
        return {
            "idx": self.idx, "parent_idx": self.parent_idx,
            "forward_block_idx": self.forward_block_idx,
            "vars": [v.to_dict() for v in self.vars.values()],
            "ops": [op.to_dict() for op in self.ops],
        }

    def __repr__(self):
        lines = [f"block {self.idx} (parent {self.parent_idx}):"]
        lines += [f"  {v!r}" for v in self.vars.values()]
        lines += [f"  {op!r}" for op in self.ops]
        return "\n".join(lines)


_global_seed = 0  # set by global_seed (paddle.seed)


class Program:
    """A list of blocks; block 0 is the global block."""

    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.current_block_idx = 0
        self.random_seed = _global_seed
        self._version = 0
        self._current_role = OpRole.Forward
        self._op_role_var: list[str] = []
        self._is_distributed = False
        self._is_chief = False
        self._endpoints: list[str] = []
        self._ps_endpoint = ""
        self._distributed_lookup_tables: list[str] = []  # in first-lookup order
        self._parameters_on_pservers = None
        self._trainers_endpoints: list[str] = []
        # Paddle's trainer settings for train_from_dataset, which fleet 2.x's minimize fills
        # (psjob.distributed.fleet); None until then, and not copied by clone(), as in Paddle.
        self._fleet_opt = None
        # Paddle 3.0's per-program names (psjob.fluid.unique_name.generate_in); clone() copies it.
        self._name_generator = unique_name.UniqueNameGenerator()

    def _bump(self):
        self._version += 1

    # -- blocks ---------------------------------------------------------------------
    def global_block(self) -> Block:
        return self.blocks[0]

    def block(self, idx: int) -> Block:
        return self.blocks[idx]

    def current_block(self) -> Block:
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    def _create_block(self, parent_idx=None) -> Block:
        parent = self.current_block_idx if parent_idx is None else parent_idx
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        self.current_block_idx = block.idx
        self._bump()
        return block

    def _rollback(self):
        self.current_block_idx = self.current_block().parent_idx

    def list_vars(self):
        for block in self.blocks:
            yield from block.vars.values()

    def state_dict(self, mode: str = "all", scope=None) -> dict:
        """{name: LoDTensor} of the persistables in `scope` (Paddle's Program.state_dict):
        "param" the Parameters, "opt" the other persistables (optimizer state, learning
        rate, counters), "all" both."""
        return _program_state_dict(self, mode, scope)

    def set_state_dict(self, state_dict: dict, scope=None) -> None:
        """Set the persistables named in `state_dict` (Paddle's Program.set_state_dict)."""
        _program_set_state_dict(self, state_dict, scope)

    def all_parameters(self) -> list[Parameter]:
        return [p for b in self.blocks for p in b.all_parameters()]

    # -- op roles -------------------------------------------------------------------
    @contextlib.contextmanager
    def _role_guard(self, role: OpRole, role_var: Iterable = ()):
        old_role, old_var = self._current_role, self._op_role_var
        self._current_role = role
        self._op_role_var = [v.name if isinstance(v, Variable) else v for v in role_var]
        try:
            yield
        finally:
            self._current_role, self._op_role_var = old_role, old_var

    def _optimized_guard(self, param_and_grad):
        return self._role_guard(OpRole.Optimize, param_and_grad)

    def _lr_schedule_guard(self):
        return self._role_guard(OpRole.LRSched)

    def _backward_role_guard(self):
        return self._role_guard(OpRole.Backward)

    @property
    def _distributed_lookup_table(self) -> str | None:
        """Fluid 1.x's single-table attribute: the first distributed lookup table, or None."""
        return self._distributed_lookup_tables[0] if self._distributed_lookup_tables else None

    @_distributed_lookup_table.setter
    def _distributed_lookup_table(self, name: str | None) -> None:
        rest = [t for t in self._distributed_lookup_tables if t != name]
        self._distributed_lookup_tables = ([name] if name else []) + (rest if name else [])

    # -- copies ---------------------------------------------------------------------
    def clone(self, for_test: bool = False) -> Program:
        """Deep copy. for_test=True keeps only forward ops and sets `is_test`."""
        p = program_from_dict(self.to_dict())
        p.random_seed = self.random_seed
        for attr in ("_is_distributed", "_is_chief", "_endpoints", "_ps_endpoint",
                     "_distributed_lookup_tables", "_trainers_endpoints"):
            setattr(p, attr, copy.copy(getattr(self, attr)))
        p._parameters_on_pservers = self._parameters_on_pservers
        p._name_generator = self._name_generator.clone()
        if for_test:
            training_roles = OpRole.Backward | OpRole.Optimize | OpRole.LRSched
            for block in p.blocks:
                block.ops = [op for op in block.ops
                             if not (int(op.attr(OP_ROLE_ATTR_NAME, 0)) & training_roles)]
                for op in block.ops:
                    if "is_test" in op.attrs:
                        op.attrs["is_test"] = True
            p._bump()
        return p

    def _prune(self, targets, feeds=()) -> Program:
        """Keep only the ops needed to compute `targets` (forward only) from `feeds`."""
        return prune_program(self, targets, feeds)

    def to_dict(self) -> dict:
        return program_to_dict(self)

    @staticmethod
    def parse_from_string(binary_str) -> Program:
        """Fluid's `Program.parse_from_string`: the Program in a saved program file's bytes
        (an inference model's `__model__`: Paddle's ProgramDesc, or the JSON document of a
        distributed one). The feed and fetch ops are taken out."""
        import json
        program = _paddle_program_reader(binary_str) if _paddle_program_reader is not None else None
        if program is not None:
            return program
        try:
            doc = json.loads(binary_str)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProgramFormatError(f"parse_from_string: not a psjob program: {exc}") from exc
        return program_from_dict(doc)

    def __repr__(self):
        return "\n".join(repr(b) for b in self.blocks)

    to_string = lambda self, throw_on_error=False, with_details=False: repr(self)

    def global_seed(self, seed: int = 0) -> None:
        """Fluid 1.8's Program.global_seed: the random_seed of this Program and of every
        Program created after it."""
        global_seed(seed)
        self.random_seed = int(seed)


# -- default programs and guards --------------------------------------------------------
def global_seed(seed: int):
    """The random_seed of every Program created from now on (paddle.seed)."""
    global _global_seed
    _global_seed = int(seed)


_main_program = Program()
_startup_program = Program()


def default_main_program() -> Program:
    return _main_program


def default_startup_program() -> Program:
    return _startup_program


def switch_main_program(program: Program) -> Program:
    global _main_program
    old, _main_program = _main_program, program
    return old


def switch_startup_program(program: Program) -> Program:
    global _startup_program
    old, _startup_program = _startup_program, program
    return old


@contextlib.contextmanager
def program_guard(main_program: Program, startup_program: Program | None = None):
    if not isinstance(main_program, Program):
        raise TypeError(f"program_guard needs a Program, got {type(main_program).__name__}")
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError(f"startup_program must be a Program, got {type(startup_program).__name__}")
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)


@contextlib.contextmanager
def name_scope(prefix=None):
    """Ops built inside get the attribute op_namescope '/outer/inner/' (Paddle's name_scope: a
    prefix used again at one level becomes prefix_1, prefix_2, ...). Names only decorate
    graph visualisations; nothing depends on them."""
    if not prefix or not isinstance(prefix, str):  # Paddle asserts the same
        raise ValueError(f"name_scope needs a non-empty prefix string, got {prefix!r}")
    node = _name_scopes[-1]
    used = node["used"].get(prefix, 0)
    node["used"][prefix] = used + 1
    child = {"name": prefix if used == 0 else f"{prefix}_{used}", "used": {}}
    _name_scopes.append(child)
    try:
        yield
    finally:
        _name_scopes.pop()


# The name_scope nesting: its root, then each scope entered ("used": prefix -> times used there).
_name_scopes: list[dict] = [{"name": "", "used": {}}]


def _current_name_scope() -> str:
    return "/" + "".join(node["name"] + "/" for node in _name_scopes[1:])


def generate_control_dev_var_name() -> str:
    return unique_name.generate("control_dep_var")


# -- a Program as a document (serialization.py writes it as bytes) ----------------------
# A serialized program is what a pserver or trainer process is started from (the
# transpiler's plan) and what `__model__` holds in an inference model, so the format
# is explicit and checked on load:
#
#     {"format": "psjob.program", "version": 1, "random_seed": 0,
#      "blocks": [{"idx", "parent_idx", "forward_block_idx",
#                  "vars": [{"name", "shape", "dtype", "lod_level", "persistable",
#                            "stop_gradient", "type", "is_data", "kind", ...}],
#                  "ops": [{"type", "inputs", "outputs", "attrs"}]}]}
#
# Block-valued attributes are written as {"__block__": idx} (or {"__blocks__": [...]})
# and ndarray attributes as {"__ndarray__", "dtype"}. Loading never re-runs shape
# inference: the shapes on disk are the truth. Program.clone() is a round trip.

FORMAT = "psjob.program"
VERSION = 1


class ProgramFormatError(GraphError):
    pass


def program_to_dict(program: Program) -> dict:
    return {"format": FORMAT, "version": VERSION, "random_seed": program.random_seed,
            "blocks": [b.to_dict() for b in program.blocks]}


def program_from_dict(doc: dict) -> Program:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ProgramFormatError("not a psjob program document (missing format marker)")
    if doc.get("version") != VERSION:
        raise ProgramFormatError(f"program format version {doc.get('version')!r} is not supported "
                                 f"(this psjob reads version {VERSION})")
    try:
        program = Program()
        program.random_seed = int(doc.get("random_seed", 0))
        program.blocks = []
        for bd in doc["blocks"]:
            block = Block(program, int(bd["idx"]), int(bd["parent_idx"]))
            block.forward_block_idx = int(bd.get("forward_block_idx", -1))
            program.blocks.append(block)
        for bd, block in zip(doc["blocks"], program.blocks):
            for vd in bd["vars"]:
                block.vars[vd["name"]] = _var_from_dict(block, vd)
            for od in bd["ops"]:
                attrs = {k: _attr_from_json(program, v) for k, v in od["attrs"].items()}
                block.ops.append(Operator(block, od["type"], od["inputs"], od["outputs"], attrs))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ProgramFormatError(f"malformed program document: {type(exc).__name__}: {exc}") from exc
    program._bump()
    return program


def _var_from_dict(block, vd) -> Variable:
    common = dict(lod_level=vd.get("lod_level", 0), persistable=vd.get("persistable", False),
                  type=vd.get("type", "LOD_TENSOR"), is_data=vd.get("is_data", False))
    if vd.get("kind") == "param":
        p = Parameter(block, vd["name"], vd["shape"], vd["dtype"], trainable=vd.get("trainable", True),
                      optimize_attr=vd.get("optimize_attr"), **common)
        return p
    v = Variable(block, vd["name"], vd["shape"], vd["dtype"], stop_gradient=vd.get("stop_gradient", False),
                 **common)
    return v


def _attr_from_json(program, v):
    if isinstance(v, dict):
        if "__block__" in v:
            return program.block(v["__block__"])
        if "__blocks__" in v:
            return [program.block(i) for i in v["__blocks__"]]
        if "__ndarray__" in v:
            return np.asarray(v["__ndarray__"], dtype=v["dtype"])
    return v


def prune_program(program: Program, targets, feeds=()) -> Program:
    """A copy holding only the global-block ops needed to compute `targets` from `feeds`
    (names): as Paddle's _prune_with_input, what computes a fed variable is cut, the feed
    standing in for it (an inference model fed with embedding lookups keeps no lookup)."""
    names = {t.name if isinstance(t, Variable) else t for t in targets}
    fed = {f.name if isinstance(f, Variable) else f for f in feeds} - names
    p = program.clone()
    block = p.global_block()
    needed = set(names)
    kept = []
    for op in reversed(block.ops):
        if any(n in needed for n in op.output_arg_names):
            kept.append(op)
            needed.update(n for n in op.input_arg_names if n not in fed)
    kept.reverse()
    block.ops = kept
    used = needed | {n for op in kept for n in op.output_arg_names + op.input_arg_names}
    subs = [op.attr("sub_block") for op in kept if op.attr("sub_block") is not None]
    for sub in subs:  # a control-flow op's sub-block (and the blocks nested in it) stays, as written
        used |= _names_in_block(sub)
    block.vars = {k: v for k, v in block.vars.items() if k in used}
    if not subs:
        p.blocks = [block]
    p._bump()
    return p


def _names_in_block(block) -> set[str]:
    names: set[str] = set()
    for op in block.ops:
        names.update(op.input_arg_names + op.output_arg_names)
        if op.attr("sub_block") is not None:
            names |= _names_in_block(op.attr("sub_block"))
    return names


# -- values in a scope: Variable.get_value/set_value, Program.state_dict/set_state_dict --------

def _scope_of(scope):
    _core.settle_deferred()  # an async run's deferred backward first (psjob.fluid.executor)
    if scope is None:
        return _core.global_scope()
    if not isinstance(scope, _core.Scope):
        raise TypeError(f"`scope` should be None or `paddle.static.Scope` type, but received {type(scope)}.")
    _core.settle_deferred()
    return scope


def _array_module_of(value):
    import sys
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(value, cupy.ndarray):
        return cupy
    return np


def _fit_value(var: Variable, value) -> np.ndarray:
    """`value` as an array the variable holds: its shape (-1 matches any size; a 0-D value
    fits a [1] variable, as Paddle >= 2.5 saves one-value state 0-D) and its dtype."""
    if not (isinstance(value, np.ndarray) or hasattr(value, "__array__")):
        raise TypeError(f"`value` should be `numpy.ndarray` or `DenseTensor`, but received {type(value)}.")
    arr = np.array(value, copy=True)
    want = [int(d) for d in (var.shape or [])]
    if arr.ndim == 0 and want == [1]:
        arr = arr.reshape(1)
    if len(want) != arr.ndim or any(w >= 0 and w != a for w, a in zip(want, arr.shape)):
        raise ValueError(f"{var.name} expected a shape {want}, but the received shape is {list(arr.shape)}.")
    dtype = np.dtype(convert_dtype(var.dtype)) if var.dtype else arr.dtype
    if arr.dtype != dtype:
        if arr.dtype.kind != dtype.kind and not (arr.dtype.kind in "iu" and dtype.kind in "iu"):
            raise ValueError(f"{var.name} expected dtype {dtype.name}, but the received dtype is {arr.dtype.name}.")
        arr = arr.astype(dtype)
    return arr


def _in_state_dict(var: Variable, mode: str) -> bool:
    """Paddle's Program.state_dict condition: a Parameter ("param"), a persistable that is
    no Parameter and no feed/fetch/reader holder ("opt"), either ("all")."""
    if mode not in ("param", "opt", "all"):
        raise ValueError(f"`mode` string should be 'param', 'opt' or 'all', but received {mode}.")
    is_param = isinstance(var, Parameter)
    is_opt = (not is_param and bool(var.persistable) and var.type != VarType.RAW
              and var.name not in ("feed", "fetch"))
    return {"param": is_param, "opt": is_opt, "all": is_param or is_opt}[mode]


def _program_state_dict(program: Program, mode: str = "all", scope=None) -> dict:
    scope = _scope_of(scope)
    out = {}
    for var in program.list_vars():
        if not _in_state_dict(var, mode):
            continue
        if scope.find_var(var.name) is None:
            raise ValueError(f"Can not find Variable '{var.name}' in the scope. Make sure it is initialized")
        out[var.name] = _core.LoDTensor(scope, var.name)
    return out


def _program_set_state_dict(program: Program, state_dict: dict, scope=None) -> None:
    """Paddle's semantics: each name the program's state_dict("all") holds is set with
    Variable.set_value; a name the program lacks, or a value set_value refuses (its shape),
    is skipped with a warning naming it."""
    import warnings
    scope = _scope_of(scope)
    if not isinstance(state_dict, dict):
        raise TypeError(f"set_state_dict needs a dict of name -> tensor, got {type(state_dict).__name__}")
    targets = {v.name: v for v in program.list_vars() if _in_state_dict(v, "all")}
    renames = state_dict.get("StructuredToParameterName@@") or {}
    for name, value in state_dict.items():
        if name == "StructuredToParameterName@@":
            continue
        name = renames.get(name, name)
        if name not in targets:
            warnings.warn(f"Skip loading for '{name}'. Because '{name}' not in the program.", stacklevel=3)
            continue
        try:
            targets[name].set_value(value, scope)
        except (ValueError, TypeError) as err:
            warnings.warn(f"Skip loading for '{name}'. {err}", stacklevel=3)
