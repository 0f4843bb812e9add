"""Control flow: `conditional_block`, `select_input`/`select_output`, `while` and their
gradients; the tensor-array ops (`write_to_array`, `read_from_array`, `lod_array_length`);
IfElse's row routing (`split_lod_tensor`, `merge_lod_tensor`); DynamicRNN's ops (`lod_rank_table`,
`max_sequence_len`, `lod_tensor_to_array`, `array_to_lod_tensor`, `shrink_rnn_memory`,
`reorder_lod_tensor_by_rank`).

As in Paddle's static graph, a control-flow op owns a sub-block (its `sub_block` attribute)
that the Executor runs (executor.run_block). psjob's Scope is flat, so a sub-block runs in
the scope of its parent: what a branch computes stays in the scope and can be fetched after
the run, where Paddle keeps it in a child scope.

`while` keeps what its gradient needs per iteration, as Paddle's step scopes do: before an
iteration, the values of the outer variables it reads (X) that no op of the body both reads
and writes (Paddle's rule: those are copied into the step scope); after it, the values of
everything the body wrote. `while_grad` puts each iteration's values back, last iteration
first, runs the gradient block, and then restores the forward's final values so the run's
variables keep what the forward computed.

Gradients (backward.py builds the gradient blocks): the gradient block of a branch or a loop
body reads the gradients of the outer variables the forward wrote (Out@GRAD) and writes the
gradients of the outer variables it read under their own `X@GRAD` names; the grad op copies
those to its outputs. A branch not taken gives zero gradients. A loop's gradient of a
variable it both reads and writes (a loop variable) runs back through the iterations; the
gradient of one it only reads (a parameter) is the sum over the iterations.

A tensor array (fluid.layers.create_array) is a Python list of arrays in the scope; its
gradient is a list of the same length whose empty slots (None) are zeros: a read's gradient
fills the slot it read, a write's gradient is the slot it wrote, and in a loop the gradient of
an array passes from one iteration to the one before, each iteration's reads adding to it.
"""
from __future__ import annotations

from psjob.fluid.base import EMPTY_VAR_NAME, GRAD_SUFFIX, GraphError
from psjob.fluid.ops.registry import GradOpSpec, in_var, register_op, same_shape, set_out

LOD_TENSOR_ARRAY = "LOD_TENSOR_ARRAY"


def _scalar_true(ctx, slot="Cond") -> bool:
    value = ctx.input(slot)
    size = int(getattr(value, "size", 1))
    if size != 1:
        raise GraphError(f"{ctx.op_type}: condition {ctx.ins[slot][0]!r} must hold one bool value, "
                         f"got {size} values")
    return bool(value.reshape(-1)[0])


def block_writes(block) -> set[str]:
    """Every name an op of `block`, or of a block nested in it, writes."""
    names: set[str] = set()
    for op in block.ops:
        names.update(n for n in op.output_arg_names if n != EMPTY_VAR_NAME)
        sub = op.attr("sub_block")
        if sub is not None:
            names |= block_writes(sub)
    return names


def _zeros_like(xp, value):
    if isinstance(value, list):
        return [None if v is None else xp.zeros_like(v) for v in value]
    return xp.zeros_like(value)


def _add(xp, a, b):
    """a + b, where either may be a tensor array's gradient (a list; None slots are zero)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, list) or isinstance(b, list):
        a, b = list(a), list(b)
        size = max(len(a), len(b))
        a += [None] * (size - len(a))
        b += [None] * (size - len(b))
        return [_add(xp, u, v) for u, v in zip(a, b)]
    return a + b


def _copy_grads(ctx, names, outputs, ran_block):
    """Outputs[i] = the gradient block's `names[i]@GRAD`, zeros where it wrote none."""
    written = block_writes(ran_block) if ran_block is not None else set()
    vals = ctx.vals
    for name, out in zip(names, outputs):
        if out == EMPTY_VAR_NAME:
            continue
        inner = name + GRAD_SUFFIX
        if inner in written and inner in vals:
            vals[out] = vals[inner]
        elif name in vals:
            vals[out] = _zeros_like(ctx.xp, vals[name])
        ctx.lods.pop(out, None)


# -- conditional_block ----------------------------------------------------------------------

def _cond_shape(op):
    in_var(op, "Cond")  # the condition must exist


@register_op("conditional_block", infer_shape=_cond_shape, no_grad_inputs=("Cond",))
def conditional_block(ctx):
    """Run sub_block when the scalar Cond is true (is_scalar_condition, Paddle's cond), or
    when every Cond input holds at least one element (the older IfElse form)."""
    if ctx.attr("is_scalar_condition", False):
        run = _scalar_true(ctx)
    else:
        run = all(int(getattr(v, "size", 0)) > 0 for v in ctx.input_list("Cond"))
    block = ctx.attr("sub_block")
    if run:
        ctx.executor.run_block(block.program, block.idx, ctx.scope)
    else:
        # what the branch computed in an earlier run is not this run's: fetching it fails
        # (the outer variables it writes keep their values, as in Paddle)
        for name in block.vars:
            ctx.vals.pop(name, None)
    if ctx.has_output("Scope"):
        ctx.vals[ctx.output_name("Scope")] = run  # Paddle's child scope; here whether the branch ran


# Its inputs are checked when it runs: the outputs of a branch that never ran (Out) exist
# nowhere, and a branch not taken needs none of them.
@register_op("conditional_block_grad", inputs_arrive_at_run_time=True)
def conditional_block_grad(ctx):
    ran = None
    if ctx.attr("is_scalar_condition", False):
        taken = _scalar_true(ctx)
    else:
        taken = all(int(getattr(v, "size", 0)) > 0 for v in ctx.input_list("Cond"))
    if taken:
        ran = ctx.attr("sub_block")
        given = set(ctx.ins.get("Out" + GRAD_SUFFIX, []))
        for o in ctx.ins.get("Out", []):
            # an output whose gradient never reaches the loss: zeros, as Paddle's fill_any_like
            if o + GRAD_SUFFIX not in given and o in ctx.vals:
                ctx.vals[o + GRAD_SUFFIX] = _zeros_like(ctx.xp, ctx.vals[o])
        ctx.executor.run_block(ran.program, ran.idx, ctx.scope)
    _copy_grads(ctx, ctx.ins.get("Input", []), ctx.outs.get("Input" + GRAD_SUFFIX, []), ran)


# -- select_input / select_output: merge the branches' outputs ------------------------------

def _select_input_shape(op):
    xs = [op.block._var_recursive(n) for n in op.input("X")]
    shape = xs[0].shape
    for x in xs[1:]:
        if len(x.shape) != len(shape):
            shape = x.shape if not shape else shape
            continue
        shape = tuple(a if a == b else -1 for a, b in zip(shape, x.shape))
    set_out(op, "Out", shape, xs[0].dtype, xs[0].lod_level)


def _mask(ctx) -> int:
    value = ctx.input("Mask")
    return int(value.reshape(-1)[0])


@register_op("select_input", infer_shape=_select_input_shape, no_grad_inputs=("Mask",),
             grad=lambda op: [GradOpSpec("select_output",
                                         {"Mask": op.input("Mask"), "X": [op.output("Out")[0] + GRAD_SUFFIX]},
                                         {"Out": [n + GRAD_SUFFIX for n in op.input("X")]}, {})])
def select_input(ctx):
    """Out = X[Mask]: the output of the branch that ran (Mask 1 is cond's true branch)."""
    names = ctx.ins["X"]
    i = _mask(ctx)
    if not 0 <= i < len(names):
        raise GraphError(f"select_input: Mask {i} is out of range for {len(names)} inputs")
    ctx.set_output("Out", ctx.vals[names[i]], lod=ctx.lods.get(names[i]))


@register_op("select_output", no_grad_inputs=("Mask",))
def select_output(ctx):
    """Out[Mask] = X (the gradient of select_input); the other outputs are left unwritten,
    as their branch did not run."""
    names = ctx.outs["Out"]
    i = _mask(ctx)
    if not 0 <= i < len(names):
        raise GraphError(f"select_output: Mask {i} is out of range for {len(names)} outputs")
    if names[i] != EMPTY_VAR_NAME:
        ctx.vals[names[i]] = ctx.input("X")


# -- while ----------------------------------------------------------------------------------

def _while_shape(op):
    cond = in_var(op, "Condition")
    if cond.dtype != "bool":
        raise GraphError(f"while: Condition {cond.name} must be bool, got {cond.dtype}")


def _read_and_written(block) -> set[str]:
    """Names some op of `block` both reads and writes (Paddle's while copies none of them
    into a step scope: their value at the start of an iteration is not kept)."""
    names: set[str] = set()
    for op in block.ops:
        names.update(set(op.input_arg_names) & set(op.output_arg_names))
    return names


class _Steps:
    """What a `while` kept for its gradient: one (values before, values after) per iteration."""

    __slots__ = ("steps", "final")

    def __init__(self):
        self.steps = []
        self.final = {}


@register_op("while", infer_shape=_while_shape, no_grad_inputs=("Condition",))
def while_op(ctx):
    """Run sub_block while Condition holds. Unless is_test, keep each iteration's values
    for while_grad under StepScopes."""
    block = ctx.attr("sub_block")
    program, vals = block.program, ctx.vals
    keep = not ctx.attr("is_test", False) and ctx.has_output("StepScopes")
    if keep:
        copied = [n for n in ctx.ins.get("X", ()) if n not in _read_and_written(block)]
        written = sorted(block_writes(block))
        record = _Steps()
    while _scalar_true(ctx, "Condition"):
        if keep:
            before = {n: vals[n] for n in copied if n in vals}
        ctx.executor.run_block(program, block.idx, ctx.scope)
        if keep:
            record.steps.append((before, {n: vals[n] for n in written if n in vals}))
    if keep:
        record.final = {n: vals[n] for n in written if n in vals}
        vals[ctx.output_name("StepScopes")] = record


def _while_grad_shape(op):
    for x, g in zip(op.input("X"), op.output("X" + GRAD_SUFFIX)):
        if g != EMPTY_VAR_NAME:
            fwd = op.block._var_recursive(x)
            set_out(op, "X" + GRAD_SUFFIX, fwd.shape, fwd.dtype, i=op.output("X" + GRAD_SUFFIX).index(g))


@register_op("while_grad", infer_shape=_while_grad_shape)
def while_grad(ctx):
    """Back through the iterations, last first. A variable the loop reads and writes passes
    its gradient from one iteration to the one before; one it only reads sums its
    gradients over the iterations."""
    record = ctx.input("StepScopes")
    if not isinstance(record, _Steps):
        raise GraphError("while_grad: the while op did not keep its iterations (is_test=True?)")
    grad_block = ctx.attr("sub_block")
    program, vals, xp = grad_block.program, ctx.vals, ctx.xp
    written = block_writes(grad_block)
    xs, outs = ctx.ins.get("X", []), ctx.ins.get("Out", [])
    out_set = set(outs)
    # the gradient flowing into the end of the current iteration, per loop output
    given = set(ctx.ins.get("Out" + GRAD_SUFFIX, []))
    og = {o: vals.get(o + GRAD_SUFFIX) if o + GRAD_SUFFIX in given else None for o in outs}
    total = {}  # gradient sums of the variables the loop only reads
    for before, after in reversed(record.steps):
        vals.update(after)
        vals.update(before)
        for o in outs:
            value = og[o] if og[o] is not None else record.final.get(o, vals.get(o))
            if value is not None:
                vals[o + GRAD_SUFFIX] = value if og[o] is not None else _zeros_like(xp, value)
        ctx.executor.run_block(program, grad_block.idx, ctx.scope)
        for x in xs:
            g = x + GRAD_SUFFIX
            got = vals.get(g) if g in written else None
            if x in out_set and isinstance(record.final.get(x), list):
                # a tensor array: its reads in this iteration add to the gradient of its slots
                og[x] = _add(xp, og[x], got)
            elif x in out_set:
                og[x] = got  # None: this iteration overwrote x without reading it
            elif got is not None:
                total[x] = _add(xp, total.get(x), got)
    for _, after in record.steps:  # what an iteration wrote that the forward's end lacks
        for name in after.keys() - record.final.keys():
            vals.pop(name, None)
    vals.update(record.final)
    for x, out in zip(xs, ctx.outs.get("X" + GRAD_SUFFIX, [])):
        if out == EMPTY_VAR_NAME:
            continue
        value = og.get(x) if x in out_set else total.get(x)
        if value is None:
            value = _zeros_like(xp, vals[x])
        vals[out] = value
        ctx.lods.pop(out, None)


# -- tensor arrays --------------------------------------------------------------------------

def _index(ctx, slot="I") -> int:
    i = int(ctx.input(slot).reshape(-1)[0])
    if i < 0:
        raise GraphError(f"{ctx.op_type}: index {i} must not be negative")
    return i


def _array_shape(op):
    x = in_var(op, "X")
    out = op.block._find_var_recursive(op.output("Out")[0])
    if out is not None and out.dtype is None:
        out.dtype = x.dtype


@register_op("write_to_array", infer_shape=_array_shape, no_grad_inputs=("I",),
             grad=lambda op: [GradOpSpec("write_to_array_grad",
                                         {"X": op.input("X"), "I": op.input("I"),
                                          "Out" + GRAD_SUFFIX: [op.output("Out")[0] + GRAD_SUFFIX]},
                                         {"X" + GRAD_SUFFIX: [op.input("X")[0] + GRAD_SUFFIX]})])
def write_to_array(ctx):
    """Out[I] = X; the array grows to I + 1 (its new slots empty until written)."""
    i = _index(ctx)
    name = ctx.output_name("Out")
    array = list(ctx.vals.get(name) or [])  # a new list: the value a while step kept stays as it was
    while len(array) <= i:
        array.append(None)
    array[i] = ctx.input("X")
    ctx.vals[name] = array


def _read_shape(op):
    arr = in_var(op, "X")
    shape = arr.shape if arr.type == LOD_TENSOR_ARRAY else arr.shape[1:]  # the element's
    set_out(op, "Out", shape or (-1,), arr.dtype or "float32")


@register_op("read_from_array", infer_shape=_read_shape, no_grad_inputs=("I",),
             grad=lambda op: [GradOpSpec("read_from_array_grad",
                                         {"X": op.input("X"), "I": op.input("I"),
                                          "Out" + GRAD_SUFFIX: [op.output("Out")[0] + GRAD_SUFFIX]},
                                         {"X" + GRAD_SUFFIX: [op.input("X")[0] + GRAD_SUFFIX]})])
def read_from_array(ctx):
    array, i = ctx.input("X"), _index(ctx)
    if not isinstance(array, list) and getattr(array, "ndim", 0) < 1:
        raise GraphError(f"read_from_array: {ctx.ins['X'][0]!r} is not a tensor array")
    if i >= len(array) or array[i] is None:  # (an array given stacked, as one tensor, is read along axis 0)
        raise GraphError(f"read_from_array: index {i} of {ctx.ins['X'][0]!r} was never written "
                         f"(the array holds {len(array)} slots)")
    ctx.set_output("Out", array[i])


@register_op("lod_array_length", infer_shape=lambda op: set_out(op, "Out", (1,), "int64"))
def lod_array_length(ctx):
    array = ctx.input("X")
    if not isinstance(array, list):
        raise GraphError(f"lod_array_length: {ctx.ins['X'][0]!r} is not a tensor array")
    ctx.set_output("Out", ctx.xp.asarray([len(array)], dtype="int64"))


@register_op("write_to_array_grad", no_grad_inputs=("I",))
def write_to_array_grad(ctx):
    """X@GRAD = slot I of the array's gradient (zeros where nothing read that slot)."""
    grads, i = ctx.input("Out" + GRAD_SUFFIX), _index(ctx)
    got = grads[i] if grads is not None and i < len(grads) else None
    ctx.set_output("X" + GRAD_SUFFIX, got if got is not None else ctx.xp.zeros_like(ctx.input("X")))


@register_op("read_from_array_grad", no_grad_inputs=("I",))
def read_from_array_grad(ctx):
    """The array's gradient from one read: Out@GRAD in slot I, nothing elsewhere (several
    reads' gradients are summed slot by slot)."""
    array, i = ctx.input("X"), _index(ctx)
    if not isinstance(array, list):  # an array given stacked, as one tensor
        grads = ctx.xp.zeros_like(array)
        grads[i] = ctx.input("Out" + GRAD_SUFFIX)
    else:
        grads = [None] * max(len(array), i + 1)
        grads[i] = ctx.input("Out" + GRAD_SUFFIX)
    ctx.set_output("X" + GRAD_SUFFIX, grads)


# -- split_lod_tensor / merge_lod_tensor: fluid.layers.IfElse's row routing ----------------------

def _row_mask(ctx, data_slot):
    mask = ctx.input("Mask").reshape(-1).astype(bool)
    if ctx.lods.get(ctx.ins[data_slot][0]):
        raise GraphError(f"{ctx.op_type}: {ctx.ins[data_slot][0]!r} holds sequences (LoD); psjob's IfElse "
                         "routes the rows of tensors without LoD only")
    return mask


def _split_shape(op):
    x = in_var(op, "X")
    set_out(op, "OutTrue", (-1,) + tuple(x.shape[1:]), x.dtype)
    set_out(op, "OutFalse", (-1,) + tuple(x.shape[1:]), x.dtype)


@register_op("split_lod_tensor", infer_shape=_split_shape, no_grad_inputs=("Mask",),
             grad=lambda op: [GradOpSpec("merge_lod_tensor",
                                         {"X": op.input("X"), "Mask": op.input("Mask"),
                                          "InTrue": [op.output("OutTrue")[0] + GRAD_SUFFIX],
                                          "InFalse": [op.output("OutFalse")[0] + GRAD_SUFFIX]},
                                         {"Out": [op.input("X")[0] + GRAD_SUFFIX]}, {"level": 0})])
def split_lod_tensor(ctx):
    """OutTrue: the rows of X whose Mask is true; OutFalse: the others (level 0, rows)."""
    x, mask = ctx.input("X"), _row_mask(ctx, "X")
    if mask.shape[0] != x.shape[0]:
        raise GraphError(f"split_lod_tensor: Mask has {mask.shape[0]} rows, X {x.shape[0]}")
    ctx.set_output("OutTrue", x[mask])
    ctx.set_output("OutFalse", x[~mask])


def _merge_shape(op):
    t = in_var(op, "InTrue")
    set_out(op, "Out", (-1,) + tuple(t.shape[1:]), t.dtype)


@register_op("merge_lod_tensor", infer_shape=_merge_shape, no_grad_inputs=("Mask", "X"),
             grad=lambda op: [GradOpSpec("split_lod_tensor",
                                         {"X": [op.output("Out")[0] + GRAD_SUFFIX], "Mask": op.input("Mask")},
                                         {"OutTrue": [op.input("InTrue")[0] + GRAD_SUFFIX],
                                          "OutFalse": [op.input("InFalse")[0] + GRAD_SUFFIX]}, {"level": 0})])
def merge_lod_tensor(ctx):
    """Out: InTrue's rows where Mask is true, InFalse's elsewhere, in Mask's order."""
    mask = _row_mask(ctx, "InTrue")
    t, f = ctx.input("InTrue"), ctx.input("InFalse")
    if t.shape[0] != int(mask.sum()) or f.shape[0] != mask.shape[0] - int(mask.sum()):
        raise GraphError(f"merge_lod_tensor: {t.shape[0]} true and {f.shape[0]} false rows do not match a mask "
                         f"of {int(mask.sum())} true rows out of {mask.shape[0]}")
    xp = ctx.xp
    out = xp.zeros((mask.shape[0],) + tuple(t.shape[1:]), dtype=t.dtype)
    out[mask] = t
    out[~mask] = f
    ctx.set_output("Out", out)


# -- DynamicRNN's ops: a batch of sequences stepped through time, longest first -----------------
# The rank table orders the sequences of an input's level-0 LoD by length, longest first (a
# stable sort, as Paddle's LoDRankTable); step t of the recurrence holds one row per sequence
# longer than t, in that order, so a step's batch is the first rows of the one before.

class RankTable:
    """(sequence index, length) longest first, and the level-0 offsets they came from."""

    __slots__ = ("items", "offsets")

    def __init__(self, offsets):
        self.offsets = [int(o) for o in offsets]
        lengths = [b - a for a, b in zip(self.offsets, self.offsets[1:])]
        self.items = sorted(enumerate(lengths), key=lambda item: -item[1])

    def alive(self, t: int) -> int:
        """How many sequences are longer than t."""
        return sum(1 for _, length in self.items if length > t)

    def rows(self, t: int) -> list:
        """The input rows of step t, in rank order."""
        return [self.offsets[index] + t for index, length in self.items if length > t]


def _table(ctx, slot="RankTable") -> RankTable:
    """The rank table of input `slot`, or one built from the level-0 offsets it holds."""
    table = ctx.input(slot)
    if isinstance(table, RankTable):
        return table
    if getattr(table, "ndim", 0) == 1 and str(table.dtype).startswith("int"):
        return RankTable([int(o) for o in table.tolist()])
    raise GraphError(f"{ctx.op_type}: {ctx.ins[slot][0]!r} is not a rank table (lod_rank_table)")


@register_op("lod_rank_table", infer_shape=lambda op: None)
def lod_rank_table(ctx):
    lod = ctx.input_lod("X")
    level = int(ctx.attr("level", 0))
    if not lod or level >= len(lod):
        raise GraphError(f"lod_rank_table: {ctx.ins['X'][0]!r} has no LoD level {level}: DynamicRNN.step_input "
                         "takes a sequence (LoD) input")
    if level != 0 or len(lod) != 1:
        raise GraphError("lod_rank_table: psjob's DynamicRNN steps through sequences of one LoD level (level 0)")
    ctx.vals[ctx.output_name("Out")] = RankTable(lod[0])


@register_op("max_sequence_len", infer_shape=lambda op: set_out(op, "Out", (1,), "int64"))
def max_sequence_len(ctx):
    table = _table(ctx)
    ctx.set_output("Out", ctx.xp.asarray([table.items[0][1] if table.items else 0], dtype="int64"))


def _to_array_grad(op):
    return [GradOpSpec("array_to_lod_tensor", {"X": [op.output("Out")[0] + GRAD_SUFFIX],
                                               "RankTable": op.input("RankTable")},
                       {"Out": [op.input("X")[0] + GRAD_SUFFIX]}, {})]


@register_op("lod_tensor_to_array", infer_shape=lambda op: None, no_grad_inputs=("RankTable",),
             grad=_to_array_grad)
def lod_tensor_to_array(ctx):
    """Out[t]: the rows of step t of every sequence longer than t, longest sequence first."""
    x, table = ctx.input("X"), _table(ctx)
    steps = table.items[0][1] if table.items else 0
    ctx.vals[ctx.output_name("Out")] = [x[table.rows(t)] for t in range(steps)]


def _from_array_grad(op):
    return [GradOpSpec("lod_tensor_to_array", {"X": [op.output("Out")[0] + GRAD_SUFFIX],
                                               "RankTable": op.input("RankTable")},
                       {"Out": [op.input("X")[0] + GRAD_SUFFIX]}, {})]


def _from_array_shape(op):
    arr = in_var(op, "X")
    step = arr.shape if arr.type == LOD_TENSOR_ARRAY else arr.shape[1:]  # a step's shape
    set_out(op, "Out", (-1,) + tuple(step[1:]), arr.dtype, lod_level=1)


@register_op("array_to_lod_tensor", infer_shape=_from_array_shape, no_grad_inputs=("RankTable",),
             grad=_from_array_grad)
def array_to_lod_tensor(ctx):
    """The inverse of lod_tensor_to_array: the steps' rows back in their sequences, in the
    sequences' own order, with the table's LoD (empty slots of a gradient are zeros)."""
    array, table = ctx.input("X"), _table(ctx)
    total = table.offsets[-1] - table.offsets[0]
    sample = next((a for a in array if a is not None), None)
    if sample is None:
        raise GraphError(f"array_to_lod_tensor: {ctx.ins['X'][0]!r} holds no step")
    out = ctx.xp.zeros((total,) + tuple(sample.shape[1:]), dtype=sample.dtype)
    for t, step in enumerate(array):
        if step is not None:
            out[[r - table.offsets[0] for r in table.rows(t)]] = step
    ctx.set_output("Out", out, lod=[list(table.offsets)])


def _shrink_grad(op):
    return [GradOpSpec("shrink_rnn_memory_grad", {"X": op.input("X"), "Out" + GRAD_SUFFIX:
                                                  [op.output("Out")[0] + GRAD_SUFFIX]},
                       {"X" + GRAD_SUFFIX: [op.input("X")[0] + GRAD_SUFFIX]}, {})]


def _rows_unknown(op):
    x = in_var(op, "X")
    set_out(op, "Out", (-1,) + tuple(x.shape[1:]), x.dtype)


@register_op("shrink_rnn_memory", infer_shape=_rows_unknown, no_grad_inputs=("I", "RankTable"), grad=_shrink_grad)
def shrink_rnn_memory(ctx):
    """The first rows of X: one per sequence longer than step I."""
    table, i = _table(ctx), _index(ctx)
    ctx.set_output("Out", ctx.input("X")[: table.alive(i)])


@register_op("shrink_rnn_memory_grad", infer_shape=same_shape("X", "X" + GRAD_SUFFIX))
def shrink_rnn_memory_grad(ctx):
    x, g = ctx.input("X"), ctx.input("Out" + GRAD_SUFFIX)
    out = ctx.xp.zeros_like(x)
    out[: g.shape[0]] = g
    ctx.set_output("X" + GRAD_SUFFIX, out)


def _reorder_grad(op):
    return [GradOpSpec("reorder_lod_tensor_by_rank_grad",
                       {"X": op.input("X"), "RankTable": op.input("RankTable"),
                        "Out" + GRAD_SUFFIX: [op.output("Out")[0] + GRAD_SUFFIX]},
                       {"X" + GRAD_SUFFIX: [op.input("X")[0] + GRAD_SUFFIX]}, {})]


def _rank_order(ctx):
    table = _table(ctx)
    if ctx.input_lod("X"):
        raise GraphError(f"{ctx.op_type}: {ctx.ins['X'][0]!r} holds sequences (LoD); psjob reorders the rows of a "
                         "tensor without LoD (one per sequence)")
    if ctx.input("X").shape[0] != len(table.items):
        raise GraphError(f"{ctx.op_type}: {ctx.ins['X'][0]!r} has {ctx.input('X').shape[0]} rows for "
                         f"{len(table.items)} sequences")
    return [index for index, _ in table.items]


@register_op("reorder_lod_tensor_by_rank", infer_shape=same_shape(), no_grad_inputs=("RankTable",),
             grad=_reorder_grad)
def reorder_lod_tensor_by_rank(ctx):
    """X's rows (one per sequence) in the rank table's order, longest sequence first."""
    ctx.set_output("Out", ctx.input("X")[_rank_order(ctx)])


@register_op("reorder_lod_tensor_by_rank_grad", infer_shape=same_shape("X", "X" + GRAD_SUFFIX))
def reorder_lod_tensor_by_rank_grad(ctx):
    out = ctx.xp.zeros_like(ctx.input("X"))
    out[_rank_order(ctx)] = ctx.input("Out" + GRAD_SUFFIX)
    ctx.set_output("X" + GRAD_SUFFIX, out)
