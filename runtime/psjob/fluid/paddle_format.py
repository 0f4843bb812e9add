"""Paddle's own inference-model files: the program as a protobuf ProgramDesc, the parameters
as serialized DenseTensors, so a model psjob trains is served by Paddle Inference (C++ or
`paddle.inference`) or real Paddle's `load_inference_model`, and a model real
Paddle saved loads in psjob.

The wire formats are Paddle's public ones:

- ProgramDesc (Paddle's framework.proto, proto2): blocks of VarDescs and OpDescs, each op's
  inputs and outputs by slot name and its attributes typed (AttrType). An inference model's
  program also holds the `feed` / `fetch` ops Paddle's save_inference_model adds: one
  `feed` op per input (X = the `feed` variable, Out = the input, attribute `col` its position),
  one `fetch` op per output. Encoded and decoded here by hand on psjob.foundation.checkpoint.paddle_wire's
  protobuf primitives, so psjob needs no generated Paddle code.
- a parameter file (`.pdiparams`, Paddle's save_combine): the persistable variables sorted by
  name, each a serialized DenseTensor (psjob.foundation.checkpoint.paddle_wire).

Reading checks everything before anything is used: every tensor's dtype and dims against its
variable, the file consumed exactly; a mismatch names the variable.
"""
from __future__ import annotations

import struct

import numpy as np

from psjob.fluid import paddle_attr_types
from psjob.fluid.framework import (
    Block,
    Operator,
    Parameter,
    Program,
    ProgramFormatError,
    Variable,
    VarType,
    set_paddle_program_reader,
)
from psjob.foundation.checkpoint.paddle_wire import (  # noqa: F401  (the tensor functions: this module's API too)
    DTYPE_CODES,
    DTYPES,
    PaddleFormatError,
    bytes_field,
    double_field,
    float_field,
    int_field,
    ints,
    last,
    params_from_bytes,
    params_to_bytes,
    parse_fields,
    read_tensor_desc,
    signed,
    str_field,
    tensor_desc,
    tensor_from_bytes,
    tensor_to_bytes,
    text,
)

# Paddle's variable kinds (framework.proto's VarType.Type).
KIND_CODES = {VarType.LOD_TENSOR: 7, VarType.SELECTED_ROWS: 8, VarType.STEP_SCOPES: 11,
              VarType.LOD_RANK_TABLE: 12, VarType.LOD_TENSOR_ARRAY: 13, VarType.RAW: 17}
KINDS = {code: kind for kind, code in KIND_CODES.items()}
FEED_MINIBATCH, FETCH_LIST = 9, 10
# AttrType
INT, FLOAT, STRING, INTS, FLOATS, STRINGS, BOOLEAN, BOOLEANS, BLOCK, LONG, BLOCKS, LONGS, FLOAT64S = range(13)
VAR, VARS, FLOAT64, SCALAR, SCALARS = range(13, 18)
# The version Paddle 3.0 writes into a ProgramDesc.
PROGRAM_VERSION = 3000000
# Attributes holding a data type: psjob keeps its name ("float32"), Paddle its VarType code.
_DTYPE_ATTRS = {"dtype", "in_dtype", "out_dtype"}
_INT32 = (-(1 << 31), (1 << 31) - 1)


# -- the program -----------------------------------------------------------------------------

def _var_desc(var: Variable) -> bytes:
    kind = KIND_CODES.get(var.type, 7)
    vtype = int_field(1, kind)
    if var.type == VarType.LOD_TENSOR:
        vtype += bytes_field(3, bytes_field(1, tensor_desc(var.dtype, var.shape)) + int_field(2, var.lod_level))
    elif var.type == VarType.SELECTED_ROWS:
        vtype += bytes_field(2, tensor_desc(var.dtype, var.shape))
    elif var.type == VarType.LOD_TENSOR_ARRAY:
        vtype += bytes_field(4, bytes_field(1, tensor_desc(var.dtype, var.shape)) + int_field(2, var.lod_level))
    out = str_field(1, var.name) + bytes_field(2, vtype) + int_field(3, var.persistable)
    if var.is_data:
        out += int_field(4, True)
    if isinstance(var, Parameter):
        out += int_field(5, True)
    return out + int_field(6, var.stop_gradient)


def _special_var(name: str, kind: int) -> bytes:
    return str_field(1, name) + bytes_field(2, int_field(1, kind)) + int_field(3, True)


def _declared(op_type: str, name: str):
    return paddle_attr_types.BY_OP.get(f"{op_type}.{name}", paddle_attr_types.BY_NAME.get(name))


def _scalar_msg(v) -> bytes:
    if isinstance(v, bool):
        return int_field(1, 1) + int_field(2, v)
    if isinstance(v, int):
        return int_field(1, 2) + int_field(3, v)
    return int_field(1, 3) + double_field(4, float(v))


def _typed(head: bytes, kind: int, value) -> bytes | None:
    """The attribute as the type Paddle's operator declares; None where the value does not fit it."""
    many = isinstance(value, (list, tuple))
    if kind in (INTS, LONGS, FLOATS, FLOAT64S, STRINGS, BOOLEANS, BLOCKS, SCALARS) and not many:
        return None
    if kind in (INT, LONG, FLOAT, FLOAT64, STRING, BOOLEAN, BLOCK, SCALAR) and many:
        return None
    if kind == INT and isinstance(value, (int, float)):
        return head + int_field(2, INT) + int_field(3, int(value))
    if kind == LONG and isinstance(value, (int, float)):
        return head + int_field(2, LONG) + int_field(13, int(value))
    if kind == FLOAT and isinstance(value, (int, float)):
        return head + int_field(2, FLOAT) + float_field(4, value)
    if kind == FLOAT64 and isinstance(value, (int, float)):
        return head + int_field(2, FLOAT64) + double_field(19, value)
    if kind == BOOLEAN and isinstance(value, (bool, int)):
        return head + int_field(2, BOOLEAN) + int_field(10, bool(value))
    if kind == STRING and isinstance(value, str):
        return head + int_field(2, STRING) + str_field(5, value)
    if kind == SCALAR and isinstance(value, (int, float)):
        return head + int_field(2, SCALAR) + bytes_field(20, _scalar_msg(value))
    if kind == BLOCK and isinstance(value, Block):
        return head + int_field(2, BLOCK) + int_field(12, value.idx)
    if not many:
        return None
    fields = {INTS: (6, int), LONGS: (15, int), BOOLEANS: (11, bool)}
    if kind in fields and all(isinstance(v, (int, float)) for v in value):
        n, cast = fields[kind]
        return head + int_field(2, kind) + b"".join(int_field(n, cast(v)) for v in value)
    if kind in (FLOATS, FLOAT64S) and all(isinstance(v, (int, float)) for v in value):
        write = float_field if kind == FLOATS else double_field
        return head + int_field(2, kind) + b"".join(write(7 if kind == FLOATS else 16, v) for v in value)
    if kind == STRINGS and all(isinstance(v, str) for v in value):
        return head + int_field(2, STRINGS) + b"".join(str_field(8, v) for v in value)
    if kind == SCALARS and all(isinstance(v, (int, float)) for v in value):
        return head + int_field(2, SCALARS) + b"".join(bytes_field(21, _scalar_msg(v)) for v in value)
    if kind == BLOCKS and all(isinstance(v, Block) for v in value):
        return head + int_field(2, BLOCKS) + b"".join(int_field(14, v.idx) for v in value)
    return None


def _attr(name: str, value, op_type: str) -> bytes | None:
    """One OpDesc.Attr: of the type Paddle's operator declares for it (paddle_attr_types), else
    typed from the Python value; None: not written (Paddle's default applies)."""
    head = str_field(1, name)
    if name in _DTYPE_ATTRS and isinstance(value, str):
        if value not in DTYPE_CODES:
            raise ProgramFormatError(f"op {op_type!r}: {name} {value!r} has no Paddle data type")
        return head + int_field(2, INT) + int_field(3, DTYPE_CODES[value])
    if isinstance(value, np.ndarray):
        value = value.ravel().tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (list, tuple)):
        value = [v.item() if isinstance(v, np.generic) else v for v in value]
    if value is None:
        return None
    kind = _declared(op_type, name)
    if kind in (VAR, VARS):
        return None  # Paddle takes a Tensor there; psjob's op holds the value as an input or plain attribute
    if kind is not None:
        typed = _typed(head, kind, value)
        if typed is not None:
            return typed
    if isinstance(value, Block):
        return head + int_field(2, BLOCK) + int_field(12, value.idx)
    if isinstance(value, bool):
        return head + int_field(2, BOOLEAN) + int_field(10, value)
    if isinstance(value, int):
        if not _INT32[0] <= value <= _INT32[1]:
            return head + int_field(2, LONG) + int_field(13, value)
        return head + int_field(2, INT) + int_field(3, value)
    if isinstance(value, float):
        return head + int_field(2, FLOAT) + float_field(4, value)
    if isinstance(value, str):
        return head + int_field(2, STRING) + str_field(5, value)
    if isinstance(value, list):
        if not value:
            return None
        if all(isinstance(v, Block) for v in value):
            return head + int_field(2, BLOCKS) + b"".join(int_field(14, v.idx) for v in value)
        if all(isinstance(v, bool) for v in value):
            return head + int_field(2, BOOLEANS) + b"".join(int_field(11, v) for v in value)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            if not all(_INT32[0] <= v <= _INT32[1] for v in value):
                return head + int_field(2, LONGS) + b"".join(int_field(15, v) for v in value)
            return head + int_field(2, INTS) + b"".join(int_field(6, v) for v in value)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return head + int_field(2, FLOATS) + b"".join(float_field(7, v) for v in value)
        if all(isinstance(v, str) for v in value):
            return head + int_field(2, STRINGS) + b"".join(str_field(8, v) for v in value)
    raise ProgramFormatError(f"op {op_type!r}: attribute {name!r} = {value!r} has no Paddle attribute type")


def _op_desc(op_type: str, inputs: dict, outputs: dict, attrs: dict) -> bytes:
    out = b"".join(bytes_field(1, str_field(1, slot) + b"".join(str_field(2, n) for n in names)) for slot, names in inputs.items())
    out += b"".join(bytes_field(2, str_field(1, slot) + b"".join(str_field(2, n) for n in names)) for slot, names in outputs.items())
    out += str_field(3, op_type)
    for name, value in attrs.items():
        encoded = _attr(name, value, op_type)
        if encoded is not None:
            out += bytes_field(4, encoded)
    return out


def _paddle_attrs(op) -> dict:
    """The op's attributes plus those Paddle's own layers always write and its kernels read
    without a usable default (the slices' per-axis `infer_flags`: their shape inference indexes it)."""
    attrs = op.attrs
    if op.type in ("slice", "strided_slice") and "infer_flags" not in attrs:
        attrs = {**attrs, "infer_flags": [1] * len(attrs.get("axes") or [])}
    return attrs


# Outputs Paddle's operators require that psjob's ops leave out (nothing reads them in an
# inference program): op -> {slot: dtype}; written as fresh variables.
_REQUIRED_OUTPUTS = {"sequence_pool": {"MaxIndex": "int32"}}


def _with_required_outputs(op, block, taken: set) -> tuple[dict, list[bytes]]:
    """The op's outputs plus Paddle's required ones it lacks, and the var descs they need."""
    outputs, var_descs = dict(op.outputs), []
    for slot, dtype in _REQUIRED_OUTPUTS.get(op.type, {}).items():
        if outputs.get(slot):
            continue
        base = f"{(op.output_arg_names or [op.type])[0]}.{slot.lower()}"
        name, i = base, 0
        while name in block.vars or name in taken:
            i += 1
            name = f"{base}_{i}"
        taken.add(name)
        outputs[slot] = [name]
        var_descs.append(str_field(1, name) + bytes_field(2, int_field(1, 7) + bytes_field(
            3, bytes_field(1, tensor_desc(dtype, [-1, 1])))))
    return outputs, var_descs


def _broadcast_dims(*shapes) -> list[int]:
    rank = max(len(sh) for sh in shapes)
    dims = []
    for i in range(rank):
        ds = [sh[len(sh) - rank + i] for sh in shapes if len(sh) - rank + i >= 0]
        known = [d for d in ds if d > 1]
        dims.append(known[0] if known else (-1 if any(d < 0 for d in ds) else 1))
    return dims


def _where_as_paddle(op, block, taken: set) -> tuple[list, list]:
    """A `where` whose operands broadcast, as Paddle's `paddle.where` builds it (its op needs
    operands of one shape): each operand plus the sum of the three's zeros, the condition
    through its value cast. (op descs, var descs) to write in the op's place."""
    c, x, y = (block._find_var_recursive(op.input(s)[0]) for s in ("Condition", "X", "Y"))
    if c is None or x is None or y is None or tuple(c.shape) == tuple(x.shape) == tuple(y.shape):
        return [_op_desc(op.type, op.inputs, op.outputs, op.attrs)], []
    dims, dtype = _broadcast_dims(c.shape, x.shape, y.shape), x.dtype
    names = {}
    for part in ("zx", "zy", "cc", "zc", "z1", "z", "bx", "by", "bc", "c"):
        n, i = f"{op.output('Out')[0]}.where_{part}", 0
        while n in block.vars or n in taken:
            i += 1
            n = f"{op.output('Out')[0]}.where_{part}_{i}"
        taken.add(n)
        names[part] = n
    shapes = {"zx": x.shape, "zy": y.shape, "cc": c.shape, "zc": c.shape}
    var_descs = [str_field(1, names[p]) + bytes_field(2, int_field(1, 7) + bytes_field(3, bytes_field(1, tensor_desc(
        "bool" if p == "c" else dtype, shapes.get(p, dims))))) for p in names]

    def add(a, b, out):
        return _op_desc("elementwise_add", {"X": [a], "Y": [b]}, {"Out": [out]}, {"axis": -1})

    zeros = {"value": 0.0, "dtype": -1}
    ops = [_op_desc("fill_any_like", {"X": [x.name]}, {"Out": [names["zx"]]}, zeros),
           _op_desc("fill_any_like", {"X": [y.name]}, {"Out": [names["zy"]]}, zeros),
           _op_desc("cast", {"X": [c.name]}, {"Out": [names["cc"]]}, {"in_dtype": c.dtype, "out_dtype": dtype}),
           _op_desc("fill_any_like", {"X": [names["cc"]]}, {"Out": [names["zc"]]}, zeros),
           add(names["zx"], names["zy"], names["z1"]), add(names["z1"], names["zc"], names["z"]),
           add(x.name, names["z"], names["bx"]), add(y.name, names["z"], names["by"]),
           add(names["cc"], names["z"], names["bc"]),
           _op_desc("cast", {"X": [names["bc"]]}, {"Out": [names["c"]]}, {"in_dtype": dtype, "out_dtype": "bool"}),
           _op_desc("where", {"Condition": [names["c"]], "X": [names["bx"]], "Y": [names["by"]]}, op.outputs,
                    op.attrs)]
    return ops, var_descs


def program_to_bytes(program: Program, feed_names=(), fetch_names=()) -> bytes:
    """The ProgramDesc of `program`; with feed/fetch names, as Paddle's save_inference_model
    writes it (the `feed` and `fetch` variables, a `feed` op per input before the program's
    ops, in reverse order as Paddle prepends them, and a `fetch` op per output after)."""
    blocks = []
    for block in program.blocks:
        body = int_field(1, block.idx) + int_field(2, block.parent_idx)
        body += b"".join(bytes_field(3, _var_desc(v)) for v in block.vars.values())
        ops: list[bytes] = []
        taken: set[str] = set()
        for op in block.ops:
            if op.type == "where":
                where_ops, where_vars = _where_as_paddle(op, block, taken)
                ops += where_ops
                body += b"".join(bytes_field(3, v) for v in where_vars)
            else:
                outputs, extra_vars = _with_required_outputs(op, block, taken)
                ops.append(_op_desc(op.type, op.inputs, outputs, _paddle_attrs(op)))
                body += b"".join(bytes_field(3, v) for v in extra_vars)
        if block.idx == 0 and (feed_names or fetch_names):
            body += bytes_field(3, _special_var("feed", FEED_MINIBATCH)) + bytes_field(3, _special_var("fetch", FETCH_LIST))
            feeds = [_op_desc("feed", {"X": ["feed"]}, {"Out": [n]}, {"col": i}) for i, n in enumerate(feed_names)]
            fetches = [_op_desc("fetch", {"X": [n]}, {"Out": ["fetch"]}, {"col": i})
                       for i, n in enumerate(fetch_names)]
            ops = feeds[::-1] + ops + fetches
        body += b"".join(bytes_field(4, op) for op in ops)
        body += int_field(5, block.forward_block_idx)
        blocks.append(body)
    return b"".join(bytes_field(1, b) for b in blocks) + bytes_field(4, int_field(1, PROGRAM_VERSION))


def _read_var(block: Block, data: bytes):
    f = parse_fields(data, "a VarDesc")
    name = text(f, 1)
    vtype = parse_fields(last(f, 2, b""), f"variable {name!r}'s type")
    kind = last(vtype, 1, 7)
    if kind in (FEED_MINIBATCH, FETCH_LIST):
        return None
    if kind not in KINDS:
        raise ProgramFormatError(f"variable {name!r}: Paddle variable type {kind} is not one psjob runs")
    dtype, dims, lod_level = "float32", list[int](), 0
    if kind in (7, 13):
        dense = parse_fields(last(vtype, 3 if kind == 7 else 4, b""), f"variable {name!r}")
        if 1 in dense:
            dtype, dims = read_tensor_desc(last(dense, 1), f"variable {name!r}")
        lod_level = signed(last(dense, 2, 0), 32)
    elif kind == 8 and 2 in vtype:
        dtype, dims = read_tensor_desc(last(vtype, 2), f"variable {name!r}")
    persistable = bool(last(f, 3, 0))
    if last(f, 5, 0) and dims and all(d > 0 for d in dims):
        return Parameter(block, name, dims, dtype, lod_level=lod_level, persistable=persistable, type=KINDS[kind])
    return Variable(block, name, dims, dtype, stop_gradient=bool(last(f, 6, 0)), is_data=bool(last(f, 4, 0)),
                    lod_level=lod_level, persistable=persistable, type=KINDS[kind])


def _read_attr(program: Program, data: bytes, op_type: str):
    f = parse_fields(data, f"an attribute of op {op_type!r}")
    name, kind = text(f, 1), last(f, 2, -1)
    if kind == INT:
        return name, signed(last(f, 3, 0), 32)
    if kind == LONG:
        return name, signed(last(f, 13, 0))
    if kind == FLOAT:
        return name, struct.unpack("<f", last(f, 4, b"\0\0\0\0"))[0]
    if kind == FLOAT64:
        return name, struct.unpack("<d", last(f, 19, b"\0" * 8))[0]
    if kind == STRING:
        return name, text(f, 5)
    if kind == BOOLEAN:
        return name, bool(last(f, 10, 0))
    if kind == INTS:
        return name, ints(f.get(6, []), 32)
    if kind == LONGS:
        return name, ints(f.get(15, []))
    if kind == FLOATS:
        return name, _unpack_reals(f.get(7, []), "<f")
    if kind == FLOAT64S:
        return name, _unpack_reals(f.get(16, []), "<d")
    if kind == STRINGS:
        return name, [s.decode() for s in f.get(8, [])]
    if kind == BOOLEANS:
        return name, [bool(v) for v in ints(f.get(11, []))]
    if kind == BLOCK:
        return name, ("__block__", signed(last(f, 12, 0), 32))
    if kind == BLOCKS:
        return name, ("__blocks__", ints(f.get(14, []), 32))
    if kind == SCALAR:
        return name, _scalar(last(f, 20, b""))
    if kind == SCALARS:
        return name, [_scalar(s) for s in f.get(21, [])]
    if kind in (VAR, VARS):
        return name, None  # a Tensor-valued attribute: the op's input carries it in psjob
    raise ProgramFormatError(f"op {op_type!r}: attribute {name!r} has unknown type {kind}")


def _unpack_reals(values: list, fmt: str) -> list[float]:
    width = struct.calcsize(fmt)
    out: list[float] = []
    for v in values:  # one value per field, or a packed run of them
        out.extend(x for (x,) in struct.iter_unpack(fmt, v[: len(v) - len(v) % width]))
    return out


def _scalar(data: bytes):
    f = parse_fields(data, "a Scalar attribute")
    kind = last(f, 1, 0)
    if kind == 1:
        return bool(last(f, 2, 0))
    if kind == 2:
        return signed(last(f, 3, 0))
    if kind == 3:
        return struct.unpack("<d", last(f, 4, b"\0" * 8))[0]
    raise ProgramFormatError(f"a Scalar attribute of kind {kind} (complex) is not one psjob reads")


def _read_op(program: Program, block: Block, data: bytes):
    f = parse_fields(data, "an OpDesc")
    op_type = text(f, 3)

    def slots(values):
        out = {}
        for v in values:
            s = parse_fields(v, f"an input or output of op {op_type!r}")
            out[text(s, 1)] = [n.decode() for n in s.get(2, [])]
        return out

    attrs = dict(_read_attr(program, a, op_type) for a in f.get(4, []))
    for name in _DTYPE_ATTRS & set(attrs):
        if attrs[name] == -1:  # Paddle's "the input's data type"
            del attrs[name]
        elif isinstance(attrs[name], int) and not isinstance(attrs[name], bool):
            if attrs[name] not in DTYPES:
                raise ProgramFormatError(f"op {op_type!r}: {name} {attrs[name]} is not a data type psjob runs")
            attrs[name] = DTYPES[attrs[name]]
    return op_type, slots(f.get(1, [])), slots(f.get(2, [])), {k: v for k, v in attrs.items() if v is not None}


def program_from_bytes(data: bytes) -> tuple[Program, list[str], list[str]]:
    """(program, feed names, fetch names) of a ProgramDesc; the feed and fetch ops and
    variables are taken out (their names come back in `col` order)."""
    top = parse_fields(bytes(data), "the program")
    raw_blocks = top.get(1, [])
    if not raw_blocks:
        raise ProgramFormatError("the program has no blocks (not a Paddle ProgramDesc)")
    program = Program()
    program.blocks = []
    parsed = []
    for raw in raw_blocks:
        b = parse_fields(raw, "a BlockDesc")
        block = Block(program, signed(last(b, 1, 0), 32), signed(last(b, 2, -1), 32))
        block.forward_block_idx = signed(last(b, 5, -1), 32)
        program.blocks.append(block)
        parsed.append(b)
    feeds: dict[int, str] = {}
    fetches: dict[int, str] = {}
    for block, b in zip(program.blocks, parsed):
        for raw in b.get(3, []):
            var = _read_var(block, raw)
            if var is not None:
                block.vars[var.name] = var
        for raw in b.get(4, []):
            op_type, inputs, outputs, attrs = _read_op(program, block, raw)
            if op_type == "feed":
                feeds[int(attrs.get("col", len(feeds)))] = outputs["Out"][0]
                continue
            if op_type == "fetch":
                fetches[int(attrs.get("col", len(fetches)))] = inputs["X"][0]
                continue
            block.ops.append(Operator(block, op_type, inputs, outputs, attrs))
    for block in program.blocks:  # block attributes, now every block exists
        for op in block.ops:
            for k, v in op.attrs.items():
                if isinstance(v, tuple) and v and v[0] == "__block__":
                    op.attrs[k] = _block(program, v[1], op)
                elif isinstance(v, tuple) and v and v[0] == "__blocks__":
                    op.attrs[k] = [_block(program, i, op) for i in v[1]]
    program._bump()
    return program, [feeds[k] for k in sorted(feeds)], [fetches[k] for k in sorted(fetches)]


def _block(program: Program, idx: int, op) -> Block:
    if not 0 <= idx < len(program.blocks):
        raise ProgramFormatError(f"op {op.type!r} names block {idx}; the program has {len(program.blocks)}")
    return program.blocks[idx]


def is_program_bytes(data: bytes) -> bool:
    """A ProgramDesc starts with its first block (field 1, length-delimited); psjob's own
    program documents are JSON."""
    return bool(data) and data[:1] == b"\x0a"




def _parse_from_string(data: bytes) -> Program | None:
    """Program.parse_from_string's reader of Paddle's ProgramDesc (None: not one)."""
    if not is_program_bytes(data):
        return None
    try:
        return program_from_bytes(data)[0]
    except PaddleFormatError as exc:
        raise ProgramFormatError(f"parse_from_string: {exc}") from exc


set_paddle_program_reader(_parse_from_string)
