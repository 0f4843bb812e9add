"""Control flow with sub-blocks, as Paddle's static graph builds it (paddle.static.nn.cond,
case, switch_case, while_loop; fluid.layers.cond, While, Switch, IfElse, StaticRNN,
DynamicRNN; the tensor-array layers).

`cond(pred, true_fn, false_fn)` builds each branch in a sub-block run by a
`conditional_block` op (the false branch's condition is `logical_not(pred)`) and merges
the branches' outputs with `select_input`, indexed by `cast(pred, int32)`. `While(cond)`
builds its body in a sub-block run by a `while` op until `cond` is false; `while_loop`
assigns the body's results back into the loop variables and recomputes the condition at
the end of the body. An op that runs a sub-block lists the outer variables the block reads
(`Input`, `X`) and writes (`Out`), so programs prune, clone, save and differentiate as
plain ones (ops/control_flow_ops.py runs them; backward.py builds their gradients).

Reference: Paddle's paddle.static.nn.cond / while_loop / While API docs (legacy static graph).
"""
from __future__ import annotations

import contextlib
import functools
import numbers

from psjob.fluid import unique_name
from psjob.fluid.framework import EMPTY_VAR_NAME, Variable, default_main_program
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_variable

__all__ = ["cond", "case", "switch_case", "Switch", "While", "while_loop", "create_array", "array_write",
           "array_read", "array_length", "StaticRNN", "IfElse", "DynamicRNN"]

STEP_SCOPES = "STEP_SCOPES"
LOD_TENSOR_ARRAY = "LOD_TENSOR_ARRAY"


def _check_scalar_bool(var, arg, api, kind=TypeError):
    check_variable(var, arg, api)
    if var.dtype != "bool":
        raise TypeError(f"{api}: {arg} ({var.name}) must be a bool Variable, got dtype {var.dtype}")
    # a size unknown until the program runs (a [-1, 1] pred) is checked then, as Paddle does
    if any(int(d) not in (1, -1) for d in var.shape):
        raise kind(f"{api}: {arg} ({var.name}) must hold one value (shape [1] or []), got shape "
                   f"{list(var.shape)}")


@contextlib.contextmanager
def _sub_block():
    """Build ops in a new sub-block of the current block; yields the block."""
    program = default_main_program()
    block = program._create_block()
    try:
        yield block
    finally:
        program._rollback()


def _block_io(block):
    """(names the block reads from its parents, names it writes that live in its parents),
    in first-use order; ops of nested blocks are listed by their own control-flow op."""
    parent = block.parent_block
    reads, writes, produced = {}, {}, set()
    for op in block.ops:
        for n in op.input_arg_names:
            if n != EMPTY_VAR_NAME and n not in produced:
                reads[n] = None
        for n in op.output_arg_names:
            if n != EMPTY_VAR_NAME:
                produced.add(n)
                writes[n] = None
    inputs = [n for n in reads if not block.has_var(n) and parent._find_var_recursive(n) is not None]
    outputs = [n for n in writes if not block.has_var(n) and parent._find_var_recursive(n) is not None]
    return inputs, outputs


def _flatten(structure):
    if isinstance(structure, (list, tuple)):
        return [v for item in structure for v in _flatten(item)]
    if isinstance(structure, dict):
        return [v for k in sorted(structure) for v in _flatten(structure[k])]
    return [structure]


def _pack(structure, flat):
    """`flat` (an iterator) packed as `structure`."""
    if isinstance(structure, (list, tuple)):
        items = [_pack(item, flat) for item in structure]
        return type(structure)(items) if isinstance(structure, list) else tuple(items)
    if isinstance(structure, dict):
        return {k: _pack(structure[k], flat) for k in sorted(structure)}
    return next(flat)


def _same_structure(a, b) -> str | None:
    """None when `a` and `b` nest alike, else what differs."""
    if isinstance(a, (list, tuple)) != isinstance(b, (list, tuple)) or isinstance(a, dict) != isinstance(b, dict):
        return f"{type(a).__name__} against {type(b).__name__}"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{len(a)} items against {len(b)}"
        return next((d for d in map(_same_structure, a, b) if d), None)
    if isinstance(a, dict):
        if sorted(a) != sorted(b):
            return f"keys {sorted(a)} against {sorted(b)}"
        return next((d for d in (_same_structure(a[k], b[k]) for k in sorted(a)) if d), None)
    return None


# -- cond -----------------------------------------------------------------------------------

def _copy_to_parent(value, helper):
    """A branch output becomes a variable of the parent block, assigned at the branch's end."""
    if not isinstance(value, Variable):
        return value
    program = default_main_program()
    parent = program.block(program.current_block().parent_idx)
    out = parent.create_var(shape=value.shape, dtype=value.dtype,
                            lod_level=value.lod_level, type=value.type, stop_gradient=value.stop_gradient)
    helper.append_op(type="assign", inputs={"X": [value]}, outputs={"Out": [out]})
    return out


@contextlib.contextmanager
def _conditional_block_guard(cond_var, is_scalar=True):
    """Ops built inside run in a conditional_block's sub-block when the scalar `cond_var`
    holds (is_scalar), or whenever it holds any element (Fluid's IfElse)."""
    program = default_main_program()
    with _sub_block() as block:
        yield
    parent = program.current_block()
    inputs, outputs = _block_io(block)
    scope = parent.create_var(type=STEP_SCOPES)
    parent.append_op(type="conditional_block", inputs={"Cond": [cond_var], "Input": inputs},
                     outputs={"Out": outputs, "Scope": [scope]},
                     attrs={"sub_block": block, "is_scalar_condition": is_scalar})


def _conditional_block(cond_var, fn, helper):
    """Run `fn` in a conditional_block's sub-block; returns its outputs, copied to the parent."""
    with _conditional_block_guard(cond_var):
        result = fn()
        if result is not None:
            flat = [_copy_to_parent(v, helper) for v in _flatten(result)]
            result = _pack(result, iter(flat))
    return result


def _merge(true_value, false_value, mask, helper):
    if not isinstance(true_value, Variable) or not isinstance(false_value, Variable):
        if isinstance(true_value, Variable) or isinstance(false_value, Variable) or true_value != false_value:
            raise TypeError("cond: a branch output that is not a Variable must be the same value in both "
                            f"branches, got {true_value!r} and {false_value!r}")
        return true_value
    # The branches may differ in dtype (an int32 sum against an int64 zero): as Paddle's
    # select_input, the value is the taken branch's, declared with the true branch's dtype.
    out = helper.create_variable_for_type_inference(true_value.dtype)
    helper.append_op(type="select_input", inputs={"X": [false_value, true_value], "Mask": [mask]},
                     outputs={"Out": [out]})
    out.stop_gradient = true_value.stop_gradient and false_value.stop_gradient
    return out


def cond(pred, true_fn=None, false_fn=None, name=None, return_names=None):
    """true_fn() if the scalar bool `pred` holds, else false_fn(); the outputs (any nesting of
    Variables; None when both branches return None) are merged with select_input."""
    from psjob.fluid.layers.control_flow import logical_not
    from psjob.fluid.layers.tensor import cast
    check_variable(pred, "pred", "paddle.static.nn.cond")
    if pred.dtype != "bool":
        raise TypeError(f"paddle.static.nn.cond: pred ({pred.name}) must be a bool Variable, got {pred.dtype}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"paddle.static.nn.cond: name must be a str or None, got {type(name).__name__}")
    _check_scalar_bool(pred, "pred", "paddle.static.nn.cond")
    helper = LayerHelper("cond", name)
    true_output = false_output = None
    if true_fn is not None:
        if not callable(true_fn):
            raise TypeError(f"The true_fn in cond must be callable, but received {type(true_fn).__name__}")
        true_output = _conditional_block(pred, true_fn, helper)
    if false_fn is not None:
        if not callable(false_fn):
            raise TypeError(f"The false_fn in cond must be callable, but received {type(false_fn).__name__}")
        false_output = _conditional_block(logical_not(pred), false_fn, helper)
    if true_output is None and false_output is None:
        return None
    if true_output is None:
        raise ValueError("Incompatible return values of true_fn and false_fn in cond: "
                         "true_fn returns None while false_fn returns non-None")
    if false_output is None:
        raise ValueError("Incompatible return values of true_fn and false_fn in cond: "
                         "true_fn returns non-None while false_fn returns None")
    differs = _same_structure(true_output, false_output)
    if differs:
        raise ValueError(f"Incompatible return values of true_fn and false_fn in cond: {differs}")
    mask = cast(pred, "int32")
    merged = [_merge(t, f, mask, helper) for t, f in zip(_flatten(true_output), _flatten(false_output))]
    return _pack(true_output, iter(merged))


def case(pred_fn_pairs, default=None, name=None):
    """The fn of the first (pred, fn) pair whose pred holds, else default() (the last pair's fn
    when default is None): nested conds, as Paddle's case."""
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError(f"case: pred_fn_pairs must be a list or tuple, got {type(pred_fn_pairs).__name__}")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple):
            raise TypeError(f"The elements' type in 'pred_fn_pairs' of API 'case' must be tuple, but received "
                            f"{type(pair).__name__}.")
        if len(pair) != 2:
            raise TypeError(f"The tuple's size in 'pred_fn_pairs' of API 'case' must be 2, but received "
                            f"{len(pair)}-tuple.")
        pred, fn = pair
        check_variable(pred, "pred", "paddle.static.nn.case")
        if pred.dtype != "bool":
            raise TypeError(f"paddle.static.nn.case: pred ({pred.name}) must be a bool Variable, got {pred.dtype}")
        if not callable(fn):
            raise TypeError("The fn of pred_fn_pairs in Op(case) must be callable.")
    pairs = list(pred_fn_pairs)
    if default is None:
        if not pairs:
            raise ValueError("case: pred_fn_pairs is empty and there is no default")
        default = pairs.pop()[1]
    elif not callable(default):
        raise TypeError("The default in Op(case) must be callable.")
    false_fn = default
    for pred, true_fn in reversed(pairs):
        false_fn = functools.partial(cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """The branch of `branch_fns` (a dict or list of (int, fn), or a list of fns indexed from 0)
    whose key equals the scalar branch_index, else default() (the largest key's fn when None)."""
    from psjob.fluid.layers.control_flow import equal
    from psjob.fluid.layers.tensor import cast, fill_constant
    check_variable(branch_index, "branch_index", "static.nn.switch_case")
    if branch_index.dtype not in ("uint8", "int32", "int64"):
        raise TypeError(f"static.nn.switch_case: branch_index ({branch_index.name}) must be uint8, int32 or "
                        f"int64, got {branch_index.dtype}")
    if branch_index.dtype != "int64":
        branch_index = cast(branch_index, "int64")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError(f"switch_case: branch_fns must be a dict, list or tuple, got {type(branch_fns).__name__}")
    fns = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in fns):
        fns = list(enumerate(fns))
    keys = set()
    for pair in fns:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"The elements of 'branch_fns' of API 'switch_case' must be (int, callable) "
                            f"pairs, got {pair!r}")
        key, fn = pair
        if not isinstance(key, int) or isinstance(key, bool):
            raise TypeError(f"The key's type in 'branch_fns' of API 'switch_case' must be int, but received "
                            f"{type(key).__name__}.")
        if key in keys:
            raise ValueError(f"The key in 'branch_fns' must be unique, but '{key}' appears more than once.")
        keys.add(key)
        if not callable(fn):
            raise TypeError(f"The type of function for key {key} in 'branch_fns' of API 'switch_case' must be "
                            f"callable, but received {type(fn).__name__}.")
    fns.sort(key=lambda pair: pair[0])
    if default is None:
        default = fns.pop()[1]
    elif not callable(default):
        raise TypeError("The default in Op(case) must be callable.")
    pairs = [(equal(branch_index, fill_constant([1], "int64", key)), fn) for key, fn in fns]
    false_fn = default
    for pred, true_fn in pairs:  # Paddle nests them in this order: the first key is tested last
        false_fn = functools.partial(cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


class Switch:
    """Fluid's Switch: `with switch.case(cond):` blocks, the first whose condition holds runs,
    else the `with switch.default():` block; each a conditional_block (the conditions of the
    cases before it negated and and-ed in)."""

    def __init__(self, name=None):
        self.helper = LayerHelper("switch", name)
        self.inside_scope = False
        self.pre_not_conditions = []

    def case(self, condition):
        from psjob.fluid.layers.control_flow import logical_and, logical_not
        if not self.inside_scope:
            raise ValueError("case should be called inside with")
        _check_scalar_bool(condition, "condition", "the member function case of fluid.layers.Switch")
        if not self.pre_not_conditions:
            self.pre_not_conditions.append(logical_not(condition))
            return _conditional_block_guard(condition)
        before = self.pre_not_conditions[-1]
        self.pre_not_conditions.append(logical_and(before, logical_not(condition)))
        return _conditional_block_guard(logical_and(before, condition))

    def default(self):
        if not self.pre_not_conditions:
            raise ValueError("there should be at least one condition")
        return _conditional_block_guard(self.pre_not_conditions[-1])

    def __enter__(self):
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.inside_scope = False
        return False


# -- while ----------------------------------------------------------------------------------

class While:
    """Fluid's While: `with loop.block():` builds the body, run while `cond` holds; the body
    updates `cond` (fluid.layers.less_than(..., cond=cond) or assign)."""

    def __init__(self, cond, is_test=False, name=None):
        check_variable(cond, "cond", "static.nn.While")
        if cond.dtype != "bool":
            raise TypeError(f"static.nn.While: cond ({cond.name}) must be a bool Variable, got {cond.dtype}")
        numel = 1
        for d in cond.shape:
            numel *= int(d)
        if numel != 1:
            raise TypeError(f"condition expected shape as [1], but given shape as {list(cond.shape)}.")
        self.cond_var = cond
        self.is_test = bool(is_test)
        self.helper = LayerHelper("while", name)

    @contextlib.contextmanager
    def block(self):
        program = default_main_program()
        with _sub_block() as body:
            yield
        parent = program.current_block()
        inputs, outputs = _block_io(body)
        if self.cond_var.name not in outputs:
            outputs.append(self.cond_var.name)  # Paddle lists the condition among the outputs
        xs = list(dict.fromkeys(inputs + [o for o in outputs if o != self.cond_var.name]))
        scopes = parent.create_var(type=STEP_SCOPES)
        parent.append_op(type="while", inputs={"X": xs, "Condition": [self.cond_var]},
                         outputs={"Out": outputs, "StepScopes": [scopes]},
                         attrs={"sub_block": body, "is_test": self.is_test})


def _assign_loop_var(new, old):
    from psjob.fluid.layers.tensor import assign
    if isinstance(new, Variable) and isinstance(old, Variable):
        if new.name != old.name:
            assign(new, old)
        return
    if isinstance(old, Variable) and isinstance(new, (bool, numbers.Number)):
        from psjob.fluid.layers.tensor import fill_constant
        fill_constant(shape=list(old.shape) or [1], dtype=old.dtype, value=new, out=old)
        return
    if isinstance(old, Variable) or isinstance(new, Variable):
        raise TypeError(f"while_loop: body returned {type(new).__name__} for the loop variable {old!r}")


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` holds; returns the loop
    variables (the same Variables, updated in place, as Paddle's while_loop)."""
    if not callable(cond):
        raise TypeError("cond in while_loop should be callable")
    if not callable(body):
        raise TypeError("body in while_loop should be callable")
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError(f"static.nn.while_loop: loop_vars must be a list or tuple, got {type(loop_vars).__name__}")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars in while_loop should not be empty")
    pre_cond = cond(*loop_vars)
    check_variable(pre_cond, "var of cond returned", "static.nn.while_loop")
    if pre_cond.dtype != "bool":
        raise TypeError(f"static.nn.while_loop: the var of cond returned ({pre_cond.name}) must be bool, "
                        f"got {pre_cond.dtype}")
    numel = 1
    for d in pre_cond.shape:
        numel *= int(d)
    if numel != 1:
        raise TypeError("the shape of the variable returned by cond should be [1],"
                        f"but given shape as {list(pre_cond.shape)}.")
    loop = While(pre_cond, is_test, name)
    with loop.block():
        output_vars = body(*loop_vars)
        if not isinstance(output_vars, (list, tuple)):
            output_vars = [output_vars]
        differs = _same_structure(list(output_vars), list(loop_vars))
        if differs:
            raise ValueError("body in while_loop should return the same arity (length and structure) as "
                             f"loop_vars: {differs}")
        now_cond = cond(*output_vars)
        for new, old in zip(_flatten(list(output_vars)), _flatten(list(loop_vars))):
            _assign_loop_var(new, old)
        from psjob.fluid.layers.tensor import assign
        assign(now_cond, pre_cond)
    return loop_vars


# -- tensor arrays --------------------------------------------------------------------------

def create_array(dtype="float32", initialized_list=None):
    """An empty tensor array (a LOD_TENSOR_ARRAY variable), or one holding `initialized_list`."""
    helper = LayerHelper("array")
    array = helper.block().create_var(name=unique_name.generate(f"{helper.name}.out"), dtype=dtype,
                                      type=LOD_TENSOR_ARRAY)
    if initialized_list is not None:
        if not isinstance(initialized_list, (list, tuple)):
            raise TypeError(f"create_array: initialized_list must be a list, got {type(initialized_list).__name__}")
        from psjob.fluid.layers.tensor import fill_constant
        for i, value in enumerate(initialized_list):
            check_variable(value, f"initialized_list[{i}]", "create_array")
            array_write(value, fill_constant([1], "int64", i), array)
    return array


def _check_index(i, api):
    check_variable(i, "i", api)
    if i.dtype != "int64" or [int(d) for d in i.shape] not in ([1], []):
        raise TypeError(f"{api}: i ({i.name}) must be an int64 Variable of shape [1], got "
                        f"{i.dtype}{list(i.shape)}")


def array_write(x, i, array=None):
    """array[i] = x (the array grows as needed); a new array when `array` is None."""
    check_variable(x, "x", "array_write")
    _check_index(i, "array_write")
    if array is None:
        array = create_array(x.dtype)
    elif array.type != LOD_TENSOR_ARRAY:
        raise TypeError(f"array_write: array ({array.name}) must be a tensor array (create_array)")
    if not array.shape:
        array.shape = x.shape
    LayerHelper("array_write").append_op(type="write_to_array", inputs={"X": [x], "I": [i]},
                                         outputs={"Out": [array]})
    return array


def array_read(array, i):
    """array[i]."""
    check_variable(array, "array", "array_read")
    if array.type != LOD_TENSOR_ARRAY:
        raise TypeError(f"array_read: array ({array.name}) must be a tensor array (create_array)")
    _check_index(i, "array_read")
    helper = LayerHelper("array_read")
    out = helper.create_variable_for_type_inference(array.dtype)
    helper.append_op(type="read_from_array", inputs={"X": [array], "I": [i]}, outputs={"Out": [out]})
    return out


def array_length(array):
    """The number of slots of `array`, an int64 [1]."""
    check_variable(array, "array", "array_length")
    if array.type != LOD_TENSOR_ARRAY:
        raise TypeError(f"array_length: array ({array.name}) must be a tensor array (create_array)")
    helper = LayerHelper("array_length")
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="lod_array_length", inputs={"X": [array]}, outputs={"Out": [out]})
    return out


# -- StaticRNN --------------------------------------------------------------------------------

class StaticRNN:
    """Fluid's StaticRNN over time-major inputs [seq_len, batch, ...] of a length known when
    the program is built. `with rnn.step():` builds one step (step_input, memory,
    update_memory, step_output); `rnn()` returns the step outputs stacked over time.

    Paddle runs the step block with a `recurrent` op; psjob unrolls it when the step is
    built: the step's ops are copied once per time step into the parent block (step t reads
    row t of each step input and the memories step t-1 wrote), so the values, and the
    gradients plain backward derives, are those of the recurrence."""

    def __init__(self, name=None):
        self.helper = LayerHelper("static_rnn", name)
        self.inputs = []     # (step variable, outer sequence)
        self.memories = {}   # step variable name -> [initial value, updated step variable]
        self.outputs = []    # step variables to stack
        self.seq_len = None
        self.result = None
        self._block = None

    def _in_step(self, api):
        if self._block is None:
            raise ValueError(f"StaticRNN.{api} must be called inside `with rnn.step():`")

    @contextlib.contextmanager
    def step(self):
        if self.result is not None or self._block is not None:
            raise ValueError("StaticRNN.step() can be entered once")
        with _sub_block() as block:
            self._block = block
            yield
        self._unroll(block)
        self._block = None

    def step_input(self, x):
        self._in_step("step_input")
        check_variable(x, "x", "StaticRNN.step_input")
        if not x.shape or int(x.shape[0]) <= 0:
            raise ValueError(f"StaticRNN.step_input: {x.name}{list(x.shape)} needs a known sequence length in its "
                             "first dimension (time-major [seq_len, batch, ...])")
        if self.seq_len is None:
            self.seq_len = int(x.shape[0])
        elif self.seq_len != int(x.shape[0]):
            raise ValueError(f"StaticRNN.step_input: {x.name} has {x.shape[0]} steps, an earlier input "
                             f"{self.seq_len}")
        ipt = self._block.create_var(name=unique_name.generate(f"{self.helper.name}.step_in"),
                                     shape=x.shape[1:], dtype=x.dtype)
        self.inputs.append((ipt, x))
        return ipt

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0, init_batch_dim_idx=0,
               ref_batch_dim_idx=1):
        """A state carried from step to step, starting from `init` (or `init_value` in `shape`,
        its batch size that of `batch_ref`, as Fluid's)."""
        self._in_step("memory")
        if init is None:
            if shape is None or batch_ref is None:
                raise ValueError("if init is None, memory at least need shape and batch_ref")
            from psjob.fluid.layers.tensor import fill_constant_batch_size_like
            ref = next((x for ipt, x in self.inputs if ipt.name == batch_ref.name), batch_ref)
            program = default_main_program()
            inner, program.current_block_idx = program.current_block_idx, self._block.parent_idx
            try:
                init = fill_constant_batch_size_like(ref, list(shape), ref.dtype, init_value,
                                                     input_dim_idx=ref_batch_dim_idx,
                                                     output_dim_idx=init_batch_dim_idx)
            finally:
                program.current_block_idx = inner
        check_variable(init, "init", "StaticRNN.memory")
        pre = self._block.create_var(name=unique_name.generate(f"{self.helper.name}.mem"), shape=init.shape,
                                     dtype=init.dtype)
        self.memories[pre.name] = [init, None]
        return pre

    def update_memory(self, mem, var):
        self._in_step("update_memory")
        if mem.name not in self.memories:
            raise ValueError(f"StaticRNN.update_memory: {mem.name} is not a memory of this StaticRNN")
        check_variable(var, "var", "StaticRNN.update_memory")
        self.memories[mem.name][1] = var

    def step_output(self, o):
        self._in_step("step_output")
        check_variable(o, "o", "StaticRNN.step_output")
        self.outputs.append(o)

    def output(self, *outputs):
        for o in outputs:
            self.step_output(o)

    def __call__(self, *args, **kwargs):
        if self.result is None:
            raise ValueError("RNN output can only be retrieved after rnn block")
        return self.result[0] if len(self.result) == 1 else self.result

    def _unroll(self, block):
        from psjob.fluid.layers.manip import squeeze, stack
        from psjob.fluid.layers.nn import slice as slice_
        if self.seq_len is None:
            raise ValueError("StaticRNN: the step has no step_input")
        for name, (_, updated) in self.memories.items():
            if updated is None:
                raise ValueError(f"StaticRNN: memory {name} is never updated (call update_memory)")
        if any(op.attr("sub_block") is not None for op in block.ops):
            raise ValueError("StaticRNN: control flow inside a StaticRNN step is not supported by psjob")
        parent = block.parent_block
        steps = []
        carried = {name: init.name for name, (init, _) in self.memories.items()}
        for t in range(self.seq_len):
            names = dict(carried)
            for ipt, x in self.inputs:
                names[ipt.name] = squeeze(slice_(x, axes=[0], starts=[t], ends=[t + 1]), axes=[0]).name
            for name, var in block.vars.items():
                if name not in names:
                    names[name] = unique_name.generate(f"{name}@step{t}")
                    parent.create_var(name=names[name], shape=var.shape, dtype=var.dtype, lod_level=var.lod_level,
                                      stop_gradient=var.stop_gradient)
            for op in block.ops:
                parent.append_op(type=op.type,
                                 inputs={k: [names.get(n, n) for n in v] for k, v in op.inputs.items()},
                                 outputs={k: [names.get(n, n) for n in v] for k, v in op.outputs.items()},
                                 attrs=dict(op.attrs))
            carried = {name: names.get(updated.name, updated.name) for name, (_, updated) in self.memories.items()}
            steps.append(names)
        block.ops, block.vars = [], {}  # the step lives on in its copies
        self.result = [stack([parent.var(s[o.name]) if o.name in s else parent._var_recursive(o.name) for s in steps],
                             axis=0) for o in self.outputs]


# -- IfElse ---------------------------------------------------------------------------------

class IfElse:
    """Fluid's IfElse over the rows of a batch: `cond` is a [N, 1] bool; in `with
    ie.true_block():` `ie.input(x)` is the rows of x where cond holds (in false_block, the
    others), `ie.output(...)` names the block's results, and `ie()` merges each pair of
    outputs back into N rows in their original order (split_lod_tensor / merge_lod_tensor,
    each block a conditional_block, as Fluid 1.x builds it)."""

    OUT, IN_TRUE, IN_FALSE = 0, 1, 2

    def __init__(self, cond, name=None):
        check_variable(cond, "cond", "fluid.layers.IfElse")
        if cond.dtype != "bool":
            raise TypeError(f"fluid.layers.IfElse: cond ({cond.name}) must be a bool Variable, got {cond.dtype}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"fluid.layers.IfElse: name must be a str or None, got {type(name).__name__}")
        self.helper = LayerHelper("ifelse", name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT
        self.output_table = ([], [])  # (false outputs, true outputs)

    def _parent_block(self):
        program = default_main_program()
        return program.block(program.current_block().parent_idx)

    def input(self, x):
        if self.status == IfElse.OUT:
            raise ValueError("input must in true/false blocks")
        check_variable(x, "x", "fluid.layers.IfElse.input")
        if x.name not in self.input_table:
            parent = self._parent_block()
            pair = tuple(parent.create_var(name=unique_name.generate(f"ifelse_input{self.helper.name}"),
                                           dtype=x.dtype, shape=(-1,) + tuple(x.shape[1:])) for _ in range(2))
            parent.append_op(type="split_lod_tensor", inputs={"X": [x], "Mask": [self.cond]},
                             outputs={"OutTrue": [pair[0]], "OutFalse": [pair[1]]}, attrs={"level": 0})
            self.input_table[x.name] = pair
        out_true, out_false = self.input_table[x.name]
        return out_true if self.status == IfElse.IN_TRUE else out_false

    @contextlib.contextmanager
    def _block(self, status):
        if self.status != IfElse.OUT:
            raise ValueError("IfElse blocks cannot be nested in one another")
        with _conditional_block_guard(self.cond, is_scalar=False):
            self.status = status
            try:
                yield
            finally:
                self.status = IfElse.OUT

    def true_block(self):
        return self._block(IfElse.IN_TRUE)

    def false_block(self):
        return self._block(IfElse.IN_FALSE)

    def output(self, *outs):
        from psjob.fluid.layers.tensor import assign
        if self.status == IfElse.OUT:
            raise ValueError("output can only be invoked in the sub-block")
        table = self.output_table[1 if self.status == IfElse.IN_TRUE else 0]
        parent = self._parent_block()
        for out in outs:
            check_variable(out, "each output", "fluid.layers.IfElse.output")
            outside = parent.create_var(name=unique_name.generate(f"{self.helper.name}_output"), dtype=out.dtype,
                                        shape=out.shape)
            table.append(outside)
            assign(out, outside)

    def __call__(self):
        if self.status != IfElse.OUT:
            raise ValueError("IfElse::__call__ must be out of sub-block")
        false_len, true_len = map(len, self.output_table)
        if false_len == 0 and true_len == 0:
            raise ValueError("Must invoke true_block/false_block before __call__")
        if false_len != true_len and false_len != 0 and true_len != 0:
            raise ValueError("The output side must be same")
        if false_len == 0 or true_len == 0:
            return self.output_table[0 if false_len != 0 else 1]
        merged = []
        for false_var, true_var in zip(*self.output_table):
            out = self.helper.create_variable_for_type_inference(true_var.dtype)
            self.helper.append_op(type="merge_lod_tensor",
                                  inputs={"X": [self.cond], "Mask": [self.cond], "InTrue": [true_var],
                                          "InFalse": [false_var]},
                                  outputs={"Out": [out]}, attrs={"level": 0})
            merged.append(out)
        return merged


# -- DynamicRNN -------------------------------------------------------------------------------

class DynamicRNN:
    """Fluid's DynamicRNN over a batch of sequences (a LoD level-1 step input), built as Fluid
    1.x builds it: a rank table orders the sequences longest first, lod_tensor_to_array cuts
    the input into one step per time step (one row per sequence still running), a while loop
    runs the step block with a step index, memories live in tensor arrays and shrink to the
    sequences still running (shrink_rnn_memory), and array_to_lod_tensor puts each output back
    into the input's sequences."""

    BEFORE_RNN, IN_RNN, AFTER_RNN = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("dynamic_rnn", name)
        self.status = DynamicRNN.BEFORE_RNN
        self.lod_rank_table = self.max_seq_len = self.step_idx = self.zero_idx = None
        self.mem_dict = {}
        self.output_array, self.outputs, self.input_array, self.mem_link = [], [], [], []
        self.cond = self.helper.create_variable_for_type_inference("bool", stop_gradient=True)
        self.while_op = While(self.cond)

    def _parent_block(self):
        program = default_main_program()
        return program.block(program.current_block().parent_idx)

    def _in_block(self, api):
        if self.status != DynamicRNN.IN_RNN:
            raise ValueError(f"{api} can only be invoked inside rnn block.")

    @contextlib.contextmanager
    def block(self):
        from psjob.fluid.layers.control_flow import less_than
        from psjob.fluid.layers.tensor import fill_constant, increment
        if self.status != DynamicRNN.BEFORE_RNN:
            raise ValueError("rnn.block() can only be invoke once")
        self.step_idx = fill_constant([1], "int64", 0)
        self.status = DynamicRNN.IN_RNN
        with self.while_op.block():
            yield
            if self.lod_rank_table is None:
                raise ValueError("DynamicRNN: the block has no step_input")
            increment(self.step_idx, 1.0, in_place=True)
            for new_mem, mem_array in self.mem_link:
                array_write(new_mem, self.step_idx, mem_array)
            less_than(self.step_idx, self.max_seq_len, cond=self.cond)
        self.status = DynamicRNN.AFTER_RNN
        for array in self.output_array:
            out = self.helper.create_variable_for_type_inference(array.dtype)
            self.helper.append_op(type="array_to_lod_tensor", inputs={"X": [array], "RankTable": [self.lod_rank_table]},
                                  outputs={"Out": [out]})
            self.outputs.append(out)

    def __call__(self, *args, **kwargs):
        if self.status != DynamicRNN.AFTER_RNN:
            raise ValueError("Output of the dynamic RNN can only be visited outside the rnn block.")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def step_input(self, x, level=0):
        """The rows of `x`'s sequences at the current step (one per sequence still running)."""
        self._in_block("step_input")
        check_variable(x, "x", "fluid.layers.DynamicRNN.step_input()")
        if x.lod_level < 1 or level != 0:
            raise ValueError(f"DynamicRNN.step_input: {x.name} must be a sequence (lod_level >= 1), stepped at "
                             f"level 0; got lod_level {x.lod_level}, level {level}")
        parent = self._parent_block()
        if self.lod_rank_table is None:
            self.lod_rank_table = parent.create_var(name=unique_name.generate("lod_rank_table"),
                                                    type="LOD_RANK_TABLE", stop_gradient=True)
            parent.append_op(type="lod_rank_table", inputs={"X": [x]}, outputs={"Out": [self.lod_rank_table]},
                             attrs={"level": level})
            self.max_seq_len = parent.create_var(name=unique_name.generate("dynamic_rnn_max_seq_len"),
                                                 dtype="int64", shape=[1], stop_gradient=True)
            parent.append_op(type="max_sequence_len", inputs={"RankTable": [self.lod_rank_table]},
                             outputs={"Out": [self.max_seq_len]})
            parent.append_op(type="less_than", inputs={"X": [self.step_idx], "Y": [self.max_seq_len]},
                             outputs={"Out": [self.cond]})
        array = parent.create_var(name=unique_name.generate("dynamic_rnn_input_array"), type=LOD_TENSOR_ARRAY,
                                  dtype=x.dtype, shape=(-1,) + tuple(x.shape[1:]))
        self.input_array.append((array, x.dtype))
        parent.append_op(type="lod_tensor_to_array", inputs={"X": [x], "RankTable": [self.lod_rank_table]},
                         outputs={"Out": [array]})
        return array_read(array, self.step_idx)

    def static_input(self, x):
        """`x` (one row per sequence, no LoD) reordered longest sequence first and cut to the
        sequences still running at each step."""
        self._in_block("static_input")
        check_variable(x, "x", "fluid.layers.DynamicRNN.static_input()")
        if self.lod_rank_table is None:
            raise RuntimeError("static_input() must be called after step_input().")
        parent = self._parent_block()
        reordered = parent.create_var(name=unique_name.generate("dynamic_rnn_static_input_reordered"),
                                      dtype=x.dtype, shape=x.shape)
        parent.append_op(type="reorder_lod_tensor_by_rank", inputs={"X": [x], "RankTable": [self.lod_rank_table]},
                         outputs={"Out": [reordered]})
        return self._shrink(reordered)

    def _shrink(self, x):
        out = self.helper.create_variable_for_type_inference(x.dtype)
        self.helper.append_op(type="shrink_rnn_memory",
                              inputs={"X": [x], "I": [self.step_idx], "RankTable": [self.lod_rank_table]},
                              outputs={"Out": [out]})
        return out

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype="float32"):
        """A state carried between steps: `init` (rows in rank order, or in the sequences' order
        with need_reorder=True), or `value` in `shape` per sequence."""
        from psjob.fluid.layers.tensor import fill_constant
        self._in_block("memory")
        parent = self._parent_block()
        if self.zero_idx is None:
            program = default_main_program()
            inner, program.current_block_idx = program.current_block_idx, parent.idx
            try:
                self.zero_idx = fill_constant([1], "int64", 0)
            finally:
                program.current_block_idx = inner
        if shape is not None and not isinstance(shape, (list, tuple)):
            raise TypeError(f"DynamicRNN.memory: shape must be a list or tuple, got {type(shape).__name__}")
        if init is None:
            if not self.input_array:
                raise ValueError("step_input should be invoked before memory(shape=..., value=...)")
            if shape is None:
                raise ValueError("DynamicRNN.memory: give init or shape")
            arr, in_dtype = self.input_array[0]
            in0 = parent.create_var(name=unique_name.generate("in0"), dtype=in_dtype, shape=arr.shape)
            parent.append_op(type="read_from_array", inputs={"X": [arr], "I": [self.zero_idx]}, outputs={"Out": [in0]})
            init = parent.create_var(name=unique_name.generate("mem_init"), dtype=dtype, shape=[-1] + list(shape),
                                     stop_gradient=True)
            parent.append_op(type="fill_constant_batch_size_like", inputs={"Input": [in0]}, outputs={"Out": [init]},
                             attrs={"shape": [-1] + list(shape), "value": float(value), "dtype": dtype})
            return self.memory(init=init)
        check_variable(init, "init", "fluid.layers.DynamicRNN.memory()")
        if need_reorder:
            if self.lod_rank_table is None:
                raise ValueError("If set need_reorder to True, make sure step_input be invoked before "
                                 "memory(init=init, need_reordered=True, ...).")
            reordered = parent.create_var(name=unique_name.generate("dynamic_rnn_mem_init_reordered"),
                                          dtype=init.dtype, shape=init.shape)
            parent.append_op(type="reorder_lod_tensor_by_rank",
                             inputs={"X": [init], "RankTable": [self.lod_rank_table]}, outputs={"Out": [reordered]})
            init = reordered
        mem_array = parent.create_var(name=unique_name.generate("dynamic_rnn_mem_array"), type=LOD_TENSOR_ARRAY,
                                      dtype=init.dtype, shape=init.shape)
        parent.append_op(type="write_to_array", inputs={"X": [init], "I": [self.zero_idx]},
                         outputs={"Out": [mem_array]})
        retv = self._shrink(array_read(mem_array, self.step_idx))
        self.mem_dict[retv.name] = mem_array
        return retv

    def update_memory(self, ex_mem, new_mem):
        self._in_block("update_memory")
        check_variable(new_mem, "new_mem", "fluid.layers.DynamicRNN.update_memory()")
        mem_array = self.mem_dict.get(ex_mem.name)
        if mem_array is None:
            raise ValueError("Please invoke memory before update_memory")
        self.mem_link.append((new_mem, mem_array))

    def output(self, *outputs):
        self._in_block("output")
        parent = self._parent_block()
        for each in outputs:
            check_variable(each, "outputs", "fluid.layers.DynamicRNN.output()")
            array = parent.create_var(name=unique_name.generate(f"{self.helper.name}_output_array"),
                                      type=LOD_TENSOR_ARRAY, dtype=each.dtype, shape=each.shape)
            array_write(each, self.step_idx, array)
            self.output_array.append(array)
