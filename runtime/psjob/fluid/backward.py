"""append_backward: derive gradient ops from the forward ops of a block.

Walks the ops that lie between the parameters and the loss in reverse order
and asks each op's registered grad maker for its gradient ops. A variable read
by several ops receives several gradient contributions: each is written under
a temporary `X@GRAD@RENAME@k` name and a `sum` op adds them into `X@GRAD`
right after the last contribution (backward order guarantees every
contribution is written before anything reads `X@GRAD`).

Gradients of sparse embeddings are SelectedRows; `sum` concatenates those.
"""
from __future__ import annotations

from collections import defaultdict

from psjob.fluid import unique_name
from psjob.fluid.framework import (
    EMPTY_VAR_NAME,
    GRAD_SUFFIX,
    Block,
    GraphError,
    OpRole,
    Parameter,
    Variable,
    grad_var_name,
)
from psjob.fluid.ops.registry import GradOpSpec, get_op_def

_PASS_PREFIX = "grad/"  # a later gradients() pass's gradient names: grad/x@GRAD


def _requires_grad(block, no_grad: set[str]) -> set[str]:
    """Forward pass: names whose value depends on a trainable parameter."""
    req = {p.name for p in block.all_parameters() if p.trainable and p.name not in no_grad}
    # a fed variable the user marked stop_gradient=False gets its gradient too, as in Paddle
    req.update(v.name for v in block.vars.values()
               if v.is_data and not v.stop_gradient and v.name not in no_grad
               and str(v.dtype).startswith(("float", "bfloat")))
    for op in block.ops:
        opdef = get_op_def(op.type)
        if any(n in req for slot, names in op.inputs.items()
               if slot not in opdef.no_grad_inputs for n in names):
            for n in op.output_arg_names:
                var = block._find_var_recursive(n)
                if n not in no_grad and not (var is not None and var.stop_gradient and var.is_data):
                    req.add(n)
    return req


def _relevant_ops(block, loss_name: str, req: set[str]) -> list:
    """Ops on a path from a grad-requiring input to the loss, in forward order."""
    needed = {loss_name}
    relevant = []
    for op in reversed(block.ops):
        if int(op.attr("op_role", 0)) & (OpRole.Backward | OpRole.Optimize):
            continue
        if not any(n in needed for n in op.output_arg_names):
            continue
        if not any(n in req for n in op.input_arg_names):
            continue
        relevant.append(op)
        opdef = get_op_def(op.type)
        for slot, names in op.inputs.items():
            if slot not in opdef.no_grad_inputs:
                needed.update(n for n in names if n in req)
    relevant.reverse()
    return relevant


def append_backward(loss: Variable, parameter_list=None, no_grad_set=None, callbacks=None, *, _prefix: str = ""):
    """Append gradient ops for `loss`; returns [(param, grad_var)]. (`_prefix`, for
    `gradients`: prepended to every gradient variable's name, so that another pass over a
    program that has gradients already writes its own, as Paddle's `grad/x@GRAD`.)"""
    if not isinstance(loss, Variable):
        raise TypeError(f"append_backward needs the loss Variable, got {type(loss).__name__}")
    block = loss.block
    program = block.program
    if block.idx != 0:
        raise GraphError("append_backward supports losses in the global block only")
    numel = 1
    for d in loss.shape:
        numel *= max(int(d), 1)
    if numel != 1:
        raise GraphError(f"loss {loss.name!r} must be a scalar (shape [1]), got {list(loss.shape)}; "
                         "reduce it with fluid.layers.mean")

    no_grad = {n.name if isinstance(n, Variable) else n for n in (no_grad_set or ())}
    no_grad.update(v.name for v in block.vars.values() if v.stop_gradient and not isinstance(v, Parameter))
    req = _requires_grad(block, no_grad)
    # A loss no trainable parameter reaches gets its own gradient and nothing else: no
    # (param, grad) pairs, so minimize adds no update (Paddle 1.8.5's and 3.0.0's ([], [])).
    ops = _relevant_ops(block, loss.name, req)

    for op in block.ops:
        if loss.name in op.output_arg_names:
            op.attrs["op_role"] = int(OpRole.Forward | OpRole.Loss)

    specs = _grad_specs(ops, req, {grad_var_name(loss.name)})
    if _prefix:
        _prefix_grad_names(specs, _prefix)

    with program._backward_role_guard():
        block.append_op(
            type="fill_constant",
            outputs={"Out": [_prefix + grad_var_name(loss.name)]},
            attrs={"shape": [1], "value": 1.0, "dtype": loss.dtype,
                   "op_role": int(OpRole.Backward | OpRole.Loss)})
        for spec in specs:
            _declare_grad_vars(block, spec)
            spec.attrs.pop("op_role", None)
            spec.attrs.pop("op_role_var", None)
            block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs, attrs=spec.attrs)

    params = parameter_list or [p for p in block.all_parameters() if p.trainable]
    params_grads = []
    for p in params:
        p = block.var(p) if isinstance(p, str) else p
        g = _prefix + grad_var_name(p.name)
        if p.trainable and p.name not in no_grad and block.has_var(g):
            params_grads.append((p, block.var(g)))
    return params_grads


def _grad_specs(ops, req: set[str], seeds: set[str], tag: str = "", step_back=False) -> list[GradOpSpec]:
    """The gradient ops of `ops` (forward order), last op first, their duplicate writes
    summed and their unreached input gradients filled with zeros. `seeds`: the gradients
    written before them (the loss's; a sub-block's output gradients). `tag` keeps the renamed
    parts of a gradient block apart from its parent's (one flat scope holds both); `step_back`:
    the ops are a loop body's, whose counters stepped in place are stepped back."""
    specs: list[GradOpSpec] = []
    written = set(seeds)
    for op in reversed(ops):
        opdef = get_op_def(op.type)
        if op.type in _SUB_BLOCK_GRADS:
            made = [_SUB_BLOCK_GRADS[op.type](op, req, written)]
        elif step_back and _counts_in_place(op):
            # A loop body's counter stepped in place (`increment(i)`, DynamicRNN's step index):
            # the gradient block steps it back at the same point, as Paddle's increment grad
            # does, so the gradients of the ops before it read the index they read.
            made = [GradOpSpec("increment", {"X": op.output("Out")}, {"Out": op.input("X")},
                               {"step": -float(op.attr("step", 1.0))})]
        elif opdef.grad is None:
            raise GraphError(f"op {op.type!r} has no gradient but lies between the parameters and the loss")
        else:
            made = opdef.grad(op)
        for spec in made:
            keep = False
            for slot, names in spec.outputs.items():
                new = []
                for n in names:
                    fwd = n[: -len(GRAD_SUFFIX)] if n.endswith(GRAD_SUFFIX) else None
                    if fwd is not None and fwd not in req:
                        new.append(EMPTY_VAR_NAME)
                    else:
                        new.append(n)
                        keep = True
                spec.outputs[slot] = new
            if keep:
                specs.append(spec)
                written.update(n for names in spec.outputs.values() for n in names)
    _rename_duplicate_writes(specs, tag)
    _fill_unreached_grads(specs, seeds)
    return specs


# -- control flow: the gradient of an op that runs a sub-block is an op that runs a gradient
# block, built here from the sub-block's ops (as Paddle's backward builds it).

def _counts_in_place(op) -> bool:
    return op.type == "increment" and op.input("X") == op.output("Out")


def _is_float(block, name) -> bool:
    var = block._find_var_recursive(name)
    return var is not None and str(var.dtype or "").startswith(("float", "bfloat"))


def _sub_block_requires(sub, req: set[str]) -> set[str]:
    """req extended by what the sub-block's float outputs depend on; repeated until nothing
    changes, as a loop body's outputs feed its next iteration."""
    req = set(req)
    while True:
        size = len(req)
        for op in sub.ops:
            opdef = get_op_def(op.type)
            if any(n in req for slot, names in op.inputs.items()
                   if slot not in opdef.no_grad_inputs for n in names):
                req.update(n for n in op.output_arg_names if _is_float(sub, n))
        if len(req) == size:
            return req


def _sub_block_grad(op, req: set[str], written: set[str], outs_slot: str):
    """(gradient block, output gradients the parent wrote) for `op`'s sub-block."""
    sub = op.attr("sub_block")
    program = sub.program
    inner_req = _sub_block_requires(sub, req)
    req.update(n for n in op.output(outs_slot) if n in inner_req)
    outs = [n for n in op.output(outs_slot) if n in inner_req]
    given = [grad_var_name(n) for n in outs if grad_var_name(n) in written]
    needed, relevant = set(outs), []
    for inner in reversed(sub.ops):
        if op.type == "while" and _counts_in_place(inner):
            relevant.append(inner)  # its gradient block steps the counter back (below)
            continue
        if not any(n in needed for n in inner.output_arg_names):
            continue
        if not any(n in inner_req for n in inner.input_arg_names):
            continue
        relevant.append(inner)
        opdef = get_op_def(inner.type)
        needed.update(n for slot, names in inner.inputs.items() if slot not in opdef.no_grad_inputs
                      for n in names if n in inner_req)
    relevant.reverse()
    saved = program.current_block_idx
    grad_block = program._create_block(parent_idx=op.block.idx)
    program.current_block_idx = saved
    grad_block.forward_block_idx = sub.idx
    seeds = {grad_var_name(n) for n in outs}
    specs = _grad_specs(relevant, inner_req, seeds, tag=f"block{grad_block.idx}@", step_back=op.type == "while")
    for n in outs:  # the output gradients the parent writes (declared there later)
        fwd = sub._var_recursive(n)
        if grad_block._find_var_recursive(grad_var_name(n)) is None:
            grad_block.create_var(name=grad_var_name(n), shape=fwd.shape, dtype=fwd.dtype, lod_level=fwd.lod_level)
    with program._backward_role_guard():
        for spec in specs:
            _declare_grad_vars(grad_block, spec)
            spec.attrs.pop("op_role", None)
            spec.attrs.pop("op_role_var", None)
            grad_block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs, attrs=spec.attrs)
    return grad_block, given


def _input_grads(op, slot, req):
    return [grad_var_name(n) if n in req and _is_float(op.block, n) else EMPTY_VAR_NAME
            for n in op.input(slot)]


def _conditional_block_grad(op, req, written):
    grad_block, given = _sub_block_grad(op, req, written, "Out")
    return GradOpSpec(
        "conditional_block_grad",
        {"Cond": op.input("Cond"), "Input": op.input("Input"), "Out": op.output("Out"),
         "Out" + GRAD_SUFFIX: given, "Scope": op.output("Scope")},
        {"Input" + GRAD_SUFFIX: _input_grads(op, "Input", req)},
        {"sub_block": grad_block, "is_scalar_condition": op.attr("is_scalar_condition", False)})


def _while_grad(op, req, written):
    grad_block, given = _sub_block_grad(op, req, written, "Out")
    return GradOpSpec(
        "while_grad",
        {"X": op.input("X"), "Out": op.output("Out"), "Out" + GRAD_SUFFIX: given,
         "StepScopes": op.output("StepScopes")},
        {"X" + GRAD_SUFFIX: _input_grads(op, "X", req)},
        {"sub_block": grad_block, "is_test": op.attr("is_test", False), "original_output_grad": given})


_SUB_BLOCK_GRADS = {"conditional_block": _conditional_block_grad, "while": _while_grad}


def _rename_duplicate_writes(specs: list[GradOpSpec], tag: str = ""):
    """Writers of one gradient are summed after the last of them. An op that reads a
    gradient and writes it again (while_grad: the gradient of a loop variable after the
    loop in, before the loop out) ends the writers before it and starts a new group."""
    groups = defaultdict(lambda: [[]])  # grad name -> groups of [(spec index, slot, position)]
    for i, spec in enumerate(specs):
        reads = {n for names in spec.inputs.values() for n in names}
        for slot, names in spec.outputs.items():
            for j, n in enumerate(names):
                if n != EMPTY_VAR_NAME and n.endswith(GRAD_SUFFIX):
                    if n in reads and groups[n][-1]:
                        groups[n].append([])
                    groups[n][-1].append((i, slot, j))
    inserts = []
    renamed = defaultdict(int)  # grad name -> parts named so far, over its groups
    for name, places in ((name, places) for name, gs in groups.items() for places in gs):
        if len(places) < 2:
            continue
        parts = []
        for i, slot, j in places:
            part = f"{name}@RENAME@{tag}{renamed[name]}"
            renamed[name] += 1
            specs[i].outputs[slot][j] = part
            parts.append(part)
        inserts.append((places[-1][0], GradOpSpec("sum", {"X": parts}, {"Out": [name]}, {})))
    for after, spec in sorted(inserts, key=lambda t: t[0], reverse=True):
        specs.insert(after + 1, spec)


def _fill_unreached_grads(specs: list[GradOpSpec], seeds: set[str]):
    """A grad op may read the gradient of a forward output that never reaches
    the loss (one piece of a `split`, an output in no_grad_set): nothing writes
    it, so a `fill_zeros_like` in front supplies zeros, as Fluid does."""
    written = set(seeds)
    out = []
    for spec in specs:
        for names in spec.inputs.values():
            for n in names:
                if n.endswith(GRAD_SUFFIX) and n not in written:
                    out.append(GradOpSpec("fill_zeros_like", {"X": [n[: -len(GRAD_SUFFIX)]]}, {"Out": [n]}, {}))
                    written.add(n)
        out.append(spec)
        written.update(n for names in spec.outputs.values() for n in names)
    specs[:] = out


def _prefix_grad_names(specs: list[GradOpSpec], prefix: str) -> None:
    """Prepend `prefix` to every gradient name the specs read or write (forward names stay)."""
    for spec in specs:
        for value in spec.attrs.values():
            if isinstance(value, Block) or (isinstance(value, list) and any(isinstance(b, Block) for b in value)):
                raise GraphError(f"gradients: this program has gradients already and op {spec.type!r} holds a "
                                 "sub-block (control flow): psjob takes one gradients() pass over such a "
                                 "program (build the second in its own Program)")
        for slots in (spec.inputs, spec.outputs):
            for slot, names in slots.items():
                slots[slot] = [prefix + n if n != EMPTY_VAR_NAME and GRAD_SUFFIX in n else n for n in names]


def _declare_grad_vars(block, spec: GradOpSpec):
    """Create grad vars shaped like their forward vars (infer_shape may refine)."""
    for names in spec.outputs.values():
        for n in names:
            if n == EMPTY_VAR_NAME or block.has_var(n):
                continue
            if not n.endswith(GRAD_SUFFIX) and block._find_var_recursive(n) is not None:
                continue  # a forward variable (a loop counter stepped back) declared already
            base = n.split(GRAD_SUFFIX)[0]
            fwd = block._find_var_recursive(base)
            while fwd is None and base.startswith(_PASS_PREFIX):  # gradients' later passes: grad/x@GRAD
                base = base[len(_PASS_PREFIX):]
                fwd = block._find_var_recursive(base)
            if fwd is not None:
                block.create_var(name=n, shape=fwd.shape, dtype=fwd.dtype, lod_level=fwd.lod_level)
            else:
                block.create_var(name=n)


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """The gradients of the targets' sum with respect to `inputs` (Paddle's
    paddle.static.gradients, Fluid's calc_gradient): sum_i J_i^T g_i over the targets, g_i being
    target_gradients[i] (a Variable of the target's shape) or ones where it is None, so a
    target need not be a scalar. An input the targets do not depend on gets None."""
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for what, vs in (("targets", targets), ("inputs", inputs)):
        if not vs or not all(isinstance(v, Variable) for v in vs):
            raise TypeError(f"gradients: {what} must be a Variable or a non-empty list of Variables, got "
                            f"{[type(v).__name__ for v in vs]}")
    if target_gradients is None:
        target_gradients = [None] * len(targets)
    elif not isinstance(target_gradients, (list, tuple)):
        target_gradients = [target_gradients]
    if len(target_gradients) != len(targets):
        raise ValueError(f"gradients: {len(target_gradients)} target_gradients for {len(targets)} targets "
                         "(give one per target, None for ones)")
    for t, g in zip(targets, target_gradients):
        if g is not None and (not isinstance(g, Variable) or len(g.shape) != len(t.shape)
                              or any(a != b and a >= 0 and b >= 0 for a, b in zip(g.shape, t.shape))):
            raise ValueError(f"gradients: target_gradient {getattr(g, 'name', g)!r} must be a Variable of "
                             f"target {t.name!r}'s shape {list(t.shape)}, got {list(getattr(g, 'shape', []))}")
    block = targets[0].block
    if any(t.block is not block for t in targets):
        raise GraphError("gradients: the targets must all be in one block")
    # A program that holds gradients already (an earlier gradients() or minimize) gets this
    # pass's under new names, grad/x@GRAD (then grad/grad/x@GRAD ...), as Paddle names them.
    prefix = ""
    while any(GRAD_SUFFIX in n and n.startswith(prefix) for n in block.vars):
        prefix += _PASS_PREFIX
    loss = _gradient_seed(block, targets, target_gradients)
    for v in inputs:
        v.stop_gradient = False
    # Treat the inputs as parameters for the requires-grad pass.
    saved = {}
    for v in inputs:
        if not isinstance(v, Parameter):
            saved[v.name] = v
            block.vars[v.name] = _as_param(v)
    try:
        append_backward(loss, no_grad_set=no_grad_set, _prefix=prefix)
    finally:
        block.vars.update(saved)
    return [block.vars.get(prefix + grad_var_name(v.name)) for v in inputs]


def _gradient_seed(block, targets, target_gradients) -> Variable:
    """A scalar whose gradient is what `gradients` asks for: the target itself when it is one
    scalar seeded with 1, else sum_i reduce_sum(target_i * g_i) (g_i kept out of the gradient)."""
    t0 = targets[0]
    if len(targets) == 1 and target_gradients[0] is None and all(d == 1 for d in t0.shape):
        return t0
    pieces = []
    for t, g in zip(targets, target_gradients):
        weighted = t
        if g is not None:
            g.stop_gradient = True
            weighted = block.create_var(name=unique_name.generate_in(block.program, "target_grad_mul.tmp"),
                                        dtype=t.dtype)
            block.append_op(type="elementwise_mul", inputs={"X": [t], "Y": [g]}, outputs={"Out": [weighted]},
                            attrs={"axis": -1})
        total = block.create_var(name=unique_name.generate_in(block.program, "target_sum.tmp"), dtype=t.dtype)
        block.append_op(type="reduce_sum", inputs={"X": [weighted]}, outputs={"Out": [total]},
                        attrs={"dim": [0], "keep_dim": False, "reduce_all": True})
        pieces.append(total)
    if len(pieces) == 1:
        return pieces[0]
    loss = block.create_var(name=unique_name.generate_in(block.program, "targets_sum.tmp"), dtype=t0.dtype)
    block.append_op(type="sum", inputs={"X": pieces}, outputs={"Out": [loss]})
    return loss


def _as_param(v: Variable) -> Parameter:
    p = Parameter.__new__(Parameter)
    p.__dict__.update(v.__dict__)
    p.trainable = True
    p.optimize_attr = {"learning_rate": 1.0}
    p.regularizer = p.initializer = p.gradient_clip_attr = p.do_model_average = None
    return p
