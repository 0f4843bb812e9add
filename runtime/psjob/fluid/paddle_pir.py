"""Inference models Paddle 3.x saves in its PIR format: `<prefix>.json` (the program) next to
`<prefix>.pdiparams` (the parameters), what `paddle.static.save_inference_model` writes with
PIR on (FLAGS_enable_pir_api=1, Paddle 3.0's default), read into a psjob Program.

The `.json` file, as Paddle 3.0.0 writes it (version 1):

    {"base_code": {"magic": "pir", "version": 1, "trainable": ...},
     "program": {"regions": [{"#": "region_0", "blocks": [{"#": "block_0", "args": [], "ops": [...]}]}]}}

Each op is {"#": name, "A": attributes, "I": inputs, "O": outputs, "OA": output attributes}. The
name is `<dialect>.<op>`, the dialect a number: 0 = `builtin`, 1 = `pd_op` (so "1.relu" is
`pd_op.relu`); "p" is `builtin.parameter`, whose "A" ends with the parameter's name and whose "O"
is one output. An attribute is {"N": name, "AT": {"#": kind, "D": value}} (kinds such as
"0.a_bool", "0.a_i32", "0.a_i64", "0.a_f32", "0.a_f64", "0.a_str", "0.a_array", "1.a_intarray",
"1.a_dtype", "1.a_place"). Values are numbered: an output is {"%": id, "TT": type}, an input {"%": id};
a tensor type is {"#": "0.t_dtensor", "D": [{"#": "0.t_f32"}, dims, layout, lod, offset]}, and
`builtin.combine` makes a vector value ("0.t_vec") of its inputs (the list a concat takes).

Values have no names in PIR except parameters (their name), inputs (`pd_op.data`'s `name`) and
outputs (`pd_op.fetch`'s `name`, "fetch_name_<col>", the names Paddle Inference's predictor
gives its outputs); psjob names every other value `pir_<id>`. Arguments PIR passes as tensors made
by `pd_op.full` / `pd_op.full_int_array` (an axis, a shape, a scale) become the attributes of
psjob's (Paddle 2.x) ops; such a constant used as a tensor becomes a fill_constant / assign_value.

Only the op set below is read (the ops PaddleRec's rank models and plain fc / CTR nets
produce): any other op is refused by its name, and a malformed file by what is wrong, the file
named in both; the Program is built whole before it is returned, so nothing is half-loaded.
`.pdiparams` holds the parameters sorted by name, as in a legacy save (checked against Paddle
3.0.0), so the legacy parameter reader reads it.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from psjob.fluid.framework import Operator, Parameter, Program, ProgramFormatError, Variable

# The PIR version Paddle 3.0 writes; the only one read.
PIR_VERSIONS = (1,)
_DIALECTS = {"0": "builtin", "1": "pd_op"}
_DTYPES = {"t_f16": "float16", "t_bf16": "bfloat16", "t_f32": "float32", "t_f64": "float64",
           "t_i8": "int8", "t_ui8": "uint8", "t_i16": "int16", "t_i32": "int32", "t_i64": "int64",
           "t_bool": "bool"}
_UNDEFINED_DTYPE = "Undefined(ALL_DTYPE)"
_SPECIAL_FLOATS = {"INF": float("inf"), "-INF": float("-inf"), "NaN": float("nan")}
_ELEMENTWISE = {"pd_op.add": "elementwise_add", "pd_op.subtract": "elementwise_sub",
                "pd_op.multiply": "elementwise_mul"}
_UNARY = {"pd_op.relu": "relu", "pd_op.sigmoid": "sigmoid", "pd_op.tanh": "tanh", "pd_op.square": "square"}


class _Reader:
    """One file's translation: PIR values to psjob variables, PIR ops to psjob ops."""

    def __init__(self, what: str):
        self.what = what
        self.program = Program()
        self.block = self.program.global_block()
        self.names: dict[int, str] = {}            # value id -> psjob variable name
        self.types: dict[int, Any] = {}            # value id -> (dtype, dims) or ("vec", [ids])
        self.constants: dict[int, dict] = {}       # value id -> a full / full_int_array's value
        self.vectors: dict[int, list[int]] = {}    # builtin.combine's value -> its members
        self.feeds: list[str] = []
        self.fetches: dict[int, str] = {}
        self.fetch_names: dict[int, str] = {}      # value id -> the fetch name it takes
        self.op = ""

    def fail(self, message: str) -> ProgramFormatError:
        where = f" (op {self.op})" if self.op else ""
        return ProgramFormatError(f"{self.what}: {message}{where}")

    # -- types, attributes, values ----------------------------------------------------------

    def tensor_type(self, tt: Any) -> tuple[str, list[int]]:
        if not isinstance(tt, dict) or tt.get("#") != "0.t_dtensor":
            kind = tt.get("#") if isinstance(tt, dict) else tt
            raise self.fail(f"a value of type {kind!r}, not a dense tensor")
        d = tt.get("D")
        if not isinstance(d, list) or len(d) < 2 or not isinstance(d[0], dict) or not isinstance(d[1], list):
            raise self.fail(f"a malformed tensor type {tt!r}")
        code = str(d[0].get("#", "")).split(".", 1)[-1]
        if code not in _DTYPES:
            raise self.fail(f"data type {d[0].get('#')!r} is not one psjob reads")
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in d[1]):
            raise self.fail(f"malformed dims {d[1]!r}")
        return _DTYPES[code], list(d[1])

    def attrs(self, op: dict) -> dict[str, Any]:
        raw = op.get("A", [])
        if not isinstance(raw, list):
            raise self.fail("attributes are not a list")
        out = {}
        for a in raw:
            if not isinstance(a, dict) or not isinstance(a.get("N"), str) or not isinstance(a.get("AT"), dict):
                raise self.fail(f"a malformed attribute {a!r}")
            out[a["N"]] = self.attr_value(a["AT"], a["N"])
        return out

    def attr_value(self, at: dict, name: str) -> Any:
        kind: Any = at.get("#")
        value: Any = at.get("D")
        if kind in ("0.a_f32", "0.a_f64") and "D" not in at and at.get("VD") in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[at["VD"]]  # Paddle writes infinities and NaN as strings under "VD"
        checks: dict[str, Callable[[Any], bool]] = {
            "0.a_bool": lambda v: isinstance(v, bool),
            "0.a_i32": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "0.a_i64": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "0.a_f32": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "0.a_f64": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "0.a_str": lambda v: isinstance(v, str),
            "1.a_dtype": lambda v: isinstance(v, str),
            "1.a_place": lambda v: isinstance(v, list),
            "1.a_intarray": lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                                                  for x in v),
        }
        if kind == "0.a_array":
            if not isinstance(value, list):
                raise self.fail(f"attribute {name!r}: a malformed array {value!r}")
            return [self.attr_value(v, name) if isinstance(v, dict) else self.bad_attr(name, v) for v in value]
        if kind not in checks:
            raise self.fail(f"attribute {name!r} of kind {kind!r} is not one psjob reads")
        if not checks[kind](value):
            return self.bad_attr(name, at)
        if kind in ("0.a_f32", "0.a_f64"):
            return float(value)
        return value

    def bad_attr(self, name: str, value: Any) -> Any:
        raise self.fail(f"attribute {name!r}: malformed value {value!r}")

    def value_ids(self, items: Any, what: str) -> list[int]:
        if not isinstance(items, list):
            raise self.fail(f"{what} are not a list")
        ids = []
        for v in items:
            if not isinstance(v, dict) or not isinstance(v.get("%"), int) or isinstance(v.get("%"), bool):
                raise self.fail(f"a malformed {what[:-1]} {v!r}")
            ids.append(v["%"])
        return ids

    def inputs(self, op: dict, n: int) -> list[int]:
        ids = self.value_ids(op.get("I", []), "inputs")
        if len(ids) != n:
            raise self.fail(f"{len(ids)} inputs, {n} expected")
        for i in ids:
            if i not in self.types:
                raise self.fail(f"input %{i} is not defined before its use")
        return ids

    def output(self, op: dict) -> tuple[int, Any]:
        outs = op.get("O")
        if isinstance(outs, dict):  # builtin.parameter: one output, not a list
            outs = [outs]
        if not isinstance(outs, list) or len(outs) != 1 or not isinstance(outs[0], dict):
            raise self.fail("not one output")
        vid = self.value_ids(outs, "outputs")[0]
        if vid in self.types:
            raise self.fail(f"value %{vid} is defined twice")
        return vid, outs[0].get("TT")

    def fresh_name(self, base: str) -> str:
        name, i = base, 0
        while name in self.block.vars:
            i += 1
            name = f"{base}_{i}"
        return name

    def define(self, vid: int, tt: Any, name: str | None = None, **kwargs: Any) -> str:
        dtype, dims = self.tensor_type(tt)
        if name is None:
            name = self.fetch_names.get(vid) or self.fresh_name(f"pir_{vid}")
        if name in self.block.vars:
            raise self.fail(f"two values are named {name!r}")
        self.block.vars[name] = Variable(self.block, name, dims, dtype, **kwargs)
        self.names[vid], self.types[vid] = name, (dtype, dims)
        return name

    def tensor(self, vid: int) -> str:
        """The variable of value `vid`; a constant used as a tensor is materialised here."""
        if vid in self.vectors:
            raise self.fail(f"the vector %{vid} (builtin.combine) used where a tensor is expected")
        if vid not in self.names and vid in self.constants:
            c = self.constants[vid]
            name = self.define(vid, c["type"])
            if c["kind"] == "full":
                self.emit("fill_constant", {}, {"Out": [name]},
                          {"shape": list(c["shape"]), "value": c["value"], "dtype": c["dtype"]})
            else:
                self.emit("assign_value", {}, {"Out": [name]},
                          {"shape": [len(c["value"])], "values": list(c["value"]), "dtype": c["dtype"]})
        return self.names[vid]

    def constant(self, vid: int, what: str, kind: str) -> Any:
        c = self.constants.get(vid)
        if c is None or c["kind"] != kind:
            made = "pd_op.full" if kind == "full" else "pd_op.full_int_array"
            raise self.fail(f"its {what} is computed at run time (psjob reads it only as a constant {made})")
        return c["value"]

    def emit(self, op_type: str, inputs: dict, outputs: dict, attrs: dict) -> None:
        self.block.ops.append(Operator(self.block, op_type, inputs, outputs, attrs))

    # -- the ops ----------------------------------------------------------------------------

    def read(self, ops: list) -> tuple[Program, list[str], list[str]]:
        for op in ops:  # the fetch names first: a fetched value takes its fetch's name
            if isinstance(op, dict) and op.get("#") == "1.fetch":
                self.op = "pd_op.fetch"
                ids = self.value_ids(op.get("I", []), "inputs")
                name = self.attrs(op).get("name")
                if len(ids) != 1 or not isinstance(name, str):
                    raise self.fail("a fetch needs one input and a name")
                self.fetch_names.setdefault(ids[0], name)
        for op in ops:
            if not isinstance(op, dict) or not isinstance(op.get("#"), str):
                self.op = ""
                raise self.fail(f"a malformed op {str(op)[:80]!r}")
            self.op = self.op_name(op["#"])
            handler = _HANDLERS.get(self.op)
            if handler is None:
                raise self.fail(f"op {self.op} is not one psjob reads from a PIR program (it reads "
                                f"{', '.join(sorted(_HANDLERS))})")
            if self.op != "builtin.parameter":
                extra = set(self.attrs(op)) - _ATTRS.get(self.op, set()) - _IGNORED_ATTRS
                if extra:
                    raise self.fail(f"attribute(s) {', '.join(sorted(extra))} psjob does not read")
            handler(self, op)
        self.op = ""
        if not self.fetches:
            raise self.fail("the program has no pd_op.fetch (not an inference model)")
        self.program._bump()
        return self.program, self.feeds, [self.fetches[k] for k in sorted(self.fetches)]

    def op_name(self, code: str) -> str:
        if code == "p":
            return "builtin.parameter"
        dialect, _, name = code.partition(".")
        if dialect not in _DIALECTS or not name:
            return code  # refused by name below
        return f"{_DIALECTS[dialect]}.{name}"

    def parameter(self, op: dict) -> None:
        a = op.get("A")
        if not isinstance(a, list) or not a or not isinstance(a[-1], str):
            raise self.fail(f"a parameter without a name: {a!r}")
        vid, tt = self.output(op)
        dtype, dims = self.tensor_type(tt)
        name = a[-1]
        if name in self.block.vars:
            raise self.fail(f"parameter {name!r} is declared twice")
        if not dims or any(d <= 0 for d in dims):
            raise self.fail(f"parameter {name!r} has shape {dims}, not a fully known one")
        self.block.vars[name] = Parameter(self.block, name, dims, dtype)
        self.names[vid], self.types[vid] = name, (dtype, dims)

    def data(self, op: dict) -> None:
        attrs = self.attrs(op)
        name = attrs.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail("an input without a name")
        vid, tt = self.output(op)
        self.define(vid, tt, name, is_data=True, stop_gradient=True)
        self.feeds.append(name)

    def fetch(self, op: dict) -> None:
        (vid,) = self.inputs(op, 1)
        attrs = self.attrs(op)
        name, col = attrs.get("name"), attrs.get("col", len(self.fetches))
        if not isinstance(col, int) or col in self.fetches:
            raise self.fail(f"fetch column {col!r} is not a fresh column number")
        src = self.tensor(vid)
        if src != name:  # a value fetched twice, or an input or parameter fetched: a copy
            out_vid, tt = self.output(op)
            self.define(out_vid, tt, self.fresh_name(str(name)))
            self.emit("assign", {"X": [src]}, {"Out": [self.names[out_vid]]}, {})
            src = self.names[out_vid]
        self.fetches[col] = src

    def full(self, op: dict) -> None:
        a = self.attrs(op)
        vid, tt = self.output(op)
        dtype, dims = self.tensor_type(tt)
        if not isinstance(a.get("shape"), list) or not isinstance(a.get("value"), float):
            raise self.fail("a full without its shape and value")
        value: Any = a["value"]
        if dtype.startswith(("int", "uint")):
            if value != int(value):
                raise self.fail(f"value {value} for an integer full")
            value = int(value)
        elif dtype == "bool":
            value = bool(value)
        self.types[vid] = (dtype, dims)
        self.constants[vid] = {"kind": "full", "shape": a["shape"], "value": value, "dtype": dtype, "type": tt}

    def full_int_array(self, op: dict) -> None:
        a = self.attrs(op)
        vid, tt = self.output(op)
        dtype, dims = self.tensor_type(tt)
        values = a.get("value")
        if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise self.fail(f"a full_int_array whose value is {values!r}")
        self.types[vid] = (dtype, dims)
        self.constants[vid] = {"kind": "array", "value": values, "dtype": dtype, "type": tt}

    def combine(self, op: dict) -> None:
        ids = self.value_ids(op.get("I", []), "inputs")
        for i in ids:
            if i not in self.types:
                raise self.fail(f"input %{i} is not defined before its use")
        vid, tt = self.output(op)
        if not isinstance(tt, dict) or tt.get("#") != "0.t_vec":
            raise self.fail("a combine whose output is not a vector")
        self.types[vid] = ("vec", ids)
        self.vectors[vid] = ids

    def out(self, op: dict) -> str:
        vid, tt = self.output(op)
        return self.define(vid, tt)

    def concat(self, op: dict) -> None:
        vec, axis = self.inputs(op, 2)
        if vec not in self.vectors:
            raise self.fail("its first input is not a builtin.combine vector")
        ax = self.constant(axis, "axis", "full")
        xs = [self.tensor(i) for i in self.vectors[vec]]
        self.emit("concat", {"X": xs}, {"Out": [self.out(op)]}, {"axis": int(ax)})

    def reduce(self, op: dict) -> None:
        x, axis = self.inputs(op, 2)
        a = self.attrs(op)
        dims = self.constant(axis, "axis", "array")
        dtype = a.get("dtype", _UNDEFINED_DTYPE)
        x_dtype = self.types[x][0]
        if dtype not in (_UNDEFINED_DTYPE, x_dtype) or (dtype == _UNDEFINED_DTYPE and not x_dtype.startswith("float")):
            raise self.fail(f"a sum of {x_dtype} to {dtype} (psjob reads sums that keep a float type)")
        keep = a.get("keepdim", False)
        if not isinstance(keep, bool):
            raise self.fail(f"keepdim {keep!r}")
        kind = "reduce_sum" if self.op == "pd_op.sum" else "reduce_mean"
        self.emit(kind, {"X": [self.tensor(x)]}, {"Out": [self.out(op)]},
                  {"dim": list(dims) or [0], "keep_dim": keep, "reduce_all": not dims})

    def reshape(self, op: dict) -> None:
        x, shape = self.inputs(op, 2)
        target = self.constant(shape, "shape", "array")
        self.emit("reshape2", {"X": [self.tensor(x)]}, {"Out": [self.out(op)]}, {"shape": list(target)})

    def unsqueeze(self, op: dict) -> None:
        x, axes = self.inputs(op, 2)
        target = self.constant(axes, "axes", "array")
        self.emit("unsqueeze2", {"X": [self.tensor(x)]}, {"Out": [self.out(op)]}, {"axes": list(target)})

    def scale(self, op: dict) -> None:
        x, s = self.inputs(op, 2)
        a = self.attrs(op)
        factor = self.constant(s, "scale", "full")
        bias, after = a.get("bias", 0.0), a.get("bias_after_scale", True)
        if not isinstance(bias, float) or not isinstance(after, bool):
            raise self.fail("malformed bias / bias_after_scale")
        self.emit("scale", {"X": [self.tensor(x)]}, {"Out": [self.out(op)]},
                  {"scale": float(factor), "bias": bias, "bias_after_scale": after})

    def matmul(self, op: dict) -> None:
        x, y = self.inputs(op, 2)
        a = self.attrs(op)
        tx, ty = a.get("transpose_x", False), a.get("transpose_y", False)
        if not isinstance(tx, bool) or not isinstance(ty, bool):
            raise self.fail("malformed transpose_x / transpose_y")
        self.emit("matmul_v2", {"X": [self.tensor(x)], "Y": [self.tensor(y)]}, {"Out": [self.out(op)]},
                  {"trans_x": tx, "trans_y": ty})

    def elementwise(self, op: dict) -> None:
        x, y = self.inputs(op, 2)
        self.emit(_ELEMENTWISE[self.op], {"X": [self.tensor(x)], "Y": [self.tensor(y)]}, {"Out": [self.out(op)]},
                  {"axis": -1})

    def unary(self, op: dict) -> None:
        (x,) = self.inputs(op, 1)
        self.emit(_UNARY[self.op], {"X": [self.tensor(x)]}, {"Out": [self.out(op)]}, {})

    def softmax(self, op: dict) -> None:
        (x,) = self.inputs(op, 1)
        axis = self.attrs(op).get("axis", -1)
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise self.fail(f"axis {axis!r}")
        self.emit("softmax", {"X": [self.tensor(x)]}, {"Out": [self.out(op)]}, {"axis": axis})

    def embedding(self, op: dict) -> None:
        ids, w = self.inputs(op, 2)
        a = self.attrs(op)
        pad = a.get("padding_idx", -1)
        if not isinstance(pad, int) or isinstance(pad, bool):
            raise self.fail(f"padding_idx {pad!r}")
        if not self.types[ids][0].startswith("int"):
            raise self.fail(f"ids of type {self.types[ids][0]}")
        self.emit("lookup_table_v2", {"Ids": [self.tensor(ids)], "W": [self.tensor(w)]}, {"Out": [self.out(op)]},
                  {"padding_idx": pad, "is_sparse": bool(a.get("sparse", False))})


_HANDLERS: dict[str, Callable[[_Reader, dict], None]] = {
    "builtin.parameter": _Reader.parameter, "builtin.combine": _Reader.combine,
    "pd_op.data": _Reader.data, "pd_op.fetch": _Reader.fetch, "pd_op.full": _Reader.full,
    "pd_op.full_int_array": _Reader.full_int_array, "pd_op.concat": _Reader.concat,
    "pd_op.sum": _Reader.reduce, "pd_op.mean": _Reader.reduce, "pd_op.reshape": _Reader.reshape,
    "pd_op.unsqueeze": _Reader.unsqueeze, "pd_op.scale": _Reader.scale, "pd_op.matmul": _Reader.matmul,
    "pd_op.softmax": _Reader.softmax, "pd_op.embedding": _Reader.embedding,
    **{k: _Reader.elementwise for k in _ELEMENTWISE}, **{k: _Reader.unary for k in _UNARY},
}
# The attributes each op's translation reads: any other refuses the op (a setting psjob would drop).
_ATTRS = {"pd_op.data": {"name", "shape", "dtype", "place"}, "pd_op.fetch": {"name", "col"},
          "pd_op.full": {"shape", "value", "dtype", "place"}, "pd_op.full_int_array": {"value", "dtype", "place"},
          "pd_op.sum": {"dtype", "keepdim"}, "pd_op.mean": {"keepdim"}, "pd_op.scale": {"bias", "bias_after_scale"},
          "pd_op.matmul": {"transpose_x", "transpose_y"}, "pd_op.softmax": {"axis"},
          "pd_op.embedding": {"padding_idx", "sparse"}}
# Where the op was made (the nn.Layer's name): nothing to compute from.
_IGNORED_ATTRS = {"struct_name"}
SUPPORTED_OPS = tuple(sorted(_HANDLERS))


def program_from_json(data: bytes | str, what: str) -> tuple[Program, list[str], list[str]]:
    """(program, feed names, fetch names) of a PIR program file's contents; `what` (the file's
    path) is named in every error. Feed names come in the program's order of its pd_op.data ops
    (as Paddle 3.0's load_inference_model gives them), fetch names in their `col` order."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProgramFormatError(f"{what}: not a JSON document (truncated or not a PIR program): {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("base_code"), dict) \
            or doc["base_code"].get("magic") != "pir":
        raise ProgramFormatError(f"{what}: not a Paddle PIR program (no base_code with magic \"pir\")")
    version = doc["base_code"].get("version")
    if version not in PIR_VERSIONS:
        raise ProgramFormatError(f"{what}: PIR version {version!r}; psjob reads version(s) "
                                 f"{', '.join(map(str, PIR_VERSIONS))} (Paddle 3.0's)")
    regions = doc.get("program", {}).get("regions") if isinstance(doc.get("program"), dict) else None
    if not isinstance(regions, list) or len(regions) != 1 or not isinstance(regions[0], dict):
        raise ProgramFormatError(f"{what}: the program needs exactly one region")
    blocks = regions[0].get("blocks")
    if not isinstance(blocks, list) or len(blocks) != 1 or not isinstance(blocks[0], dict):
        raise ProgramFormatError(f"{what}: the program's region needs exactly one block (psjob reads no "
                                 "control flow from a PIR program)")
    if blocks[0].get("args"):
        raise ProgramFormatError(f"{what}: the program's block takes arguments")
    ops = blocks[0].get("ops")
    if not isinstance(ops, list):
        raise ProgramFormatError(f"{what}: the program's block has no op list")
    return _Reader(what).read(ops)


def is_pir_path(path: str) -> bool:
    """A PIR program file is named `<prefix>.json`."""
    return path.endswith(".json")
