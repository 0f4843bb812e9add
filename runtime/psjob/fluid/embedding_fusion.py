"""Finding a table's lookups + sum pools (the CTR shape), and fusing them when the executor runs them.

A CTR model looks one embedding table up once per slot, sum-pools each slot,
concatenates the pooled slots with the dense features, and backward mirrors
that: one `sequence_pool_grad` and one `lookup_table_grad` per slot, then a
`sum` of the slots' SelectedRows into the table gradient, which the optimizer
merges again (a sort of every occurrence of every id). `pool_pattern` and
`concat_of_pools` recognize exactly that shape, and a Paddle 2.x model's
(`reshape_pattern`: PaddleRec's `Embedding` then `reshape` to [-1, dim], every
id its own row; or one `Embedding` of [-1, k] ids reshaped to [-1, k x dim], rows of
k ids, which the fused ops lay out as k slots). `execution_ops` below fuses it for
the executor: for a table
that lives in the process, `embedding_pool` gathers every slot's rows straight
into the concat's output and `embedding_pool_grad` writes the table gradient
with one row per distinct id (ops/embedding_pool_ops.py), so the optimizer
merges nothing; for a distributed table (the trainer pass,
transpiler/trainer_pass.py, turned its lookups into split_ids → prefetch →
merge_ids, the split with an `Index`), `merge_ids_pool` and
`merge_ids_pool_grad` do the same from the pservers' replies.

The fusion is the executor's business, not the program's: `execution_ops`
returns the ops to run, and the Program (what users print, save, clone, transpile
and fetch from) keeps every op and variable as built. A program that differs
anywhere from the shape — a padding id, a dense gradient, an intermediate
something else reads or the caller fetches — runs op by op as written, so
fetching any variable gives what the unfused program computes.
PSJOB_EMBEDDING_FUSION=0 (read at import; `enabled`) runs every program op by op.
"""
from __future__ import annotations

from psjob.fluid.framework import (
    EMPTY_VAR_NAME,
    OP_DEVICE_ATTR_NAME,
    OP_ROLE_ATTR_NAME,
    OP_ROLE_VAR_ATTR_NAME,
    Operator,
    OpRole,
)
from psjob.foundation.settings import process_settings

LOOKUP_TABLE = "lookup_table"
MERGE_IDS = "merge_ids"
# PSJOB_EMBEDDING_FUSION, read once at import (a process-wide switch of the engine: the
# process's settings as it starts); tests flip it to compare the two paths.
enabled = process_settings().switches.embedding_fusion


def sole(ops):
    return ops[0] if len(ops) == 1 else None


def plain_lookup(op) -> bool:
    """A lookup_table (or its gradient, which carries its attributes) without a padding
    id and with a SelectedRows gradient: what the fused ops compute."""
    return int(op.attr("padding_idx", -1)) == -1 and bool(op.attr("is_sparse", False))


def _slot_grad(readers_of, emb_grad: str, table_name: str):
    """The lookup_table_grad reading a lookup's output gradient `emb_grad`, when it is its
    only reader and a plain one of `table_name`; else None."""
    lk_grad = sole(readers_of.get(emb_grad, []))
    if (lk_grad is None or lk_grad.type != "lookup_table_grad" or lk_grad.input("W") != [table_name]
            or not plain_lookup(lk_grad)):
        return None
    return lk_grad


def pool_pattern(block, outs, table_name: str, table_grad: str):
    """The ops a fused lookup + sum-pool replaces, when the program has exactly that shape:
    every lookup's output (`outs`, one per slot) feeds one sum `sequence_pool` and nothing
    else, backward is sequence_pool_grad → lookup_table_grad per slot, summed into the
    table gradient. Returns {"pools", "backward", "grads_of_pools", "dead_vars", "sum"} or None."""
    pools, backward, pool_grads, dead = [], [], [], []
    readers_of = _readers(block)
    for emb in outs:
        readers = readers_of.get(emb, [])
        pool = sole([op for op in readers if op.type == "sequence_pool"])
        pool_grad = sole([op for op in readers if op.type == "sequence_pool_grad"])
        if (pool is None or pool_grad is None or len(readers) != 2
                or str(pool.attr("pooltype", "")).upper() != "SUM" or float(pool.attr("pad_value", 0.0)) != 0.0
                or pool_grad.input("Out@GRAD") != [f"{pool.output('Out')[0]}@GRAD"]):
            return None
        emb_grad = pool_grad.output("X@GRAD")[0]
        lk_grad = _slot_grad(readers_of, emb_grad, table_name)
        if lk_grad is None:
            return None
        pools.append(pool)
        backward += [pool_grad, lk_grad]
        pool_grads.append(pool_grad.input("Out@GRAD")[0])
        dead += [emb, emb_grad, lk_grad.output("W@GRAD")[0]]
    return _with_sum(block, table_grad, pools, backward, pool_grads, dead)


# Ops that only change a shape, keeping the elements' order, and their gradients' types.
SHAPE_OPS = {"reshape2": "reshape2_grad", "unsqueeze2": "unsqueeze2_grad", "squeeze2": "squeeze2_grad",
             "flatten_contiguous_range": "flatten_contiguous_range_grad"}


def reshape_pattern(block, outs, table_name: str, table_grad: str, width: int):
    """pool_pattern's counterpart for a Paddle 2.x model (PaddleRec's DNN: `Embedding`, then
    `paddle.reshape(emb, [-1, dim])`): each lookup's output (`outs`) reaches a [-1, k x width]
    variable through shape-only ops (SHAPE_OPS) that nothing else reads, backward mirrors them,
    and the slots' lookup_table_grads are summed into the table gradient. Shape ops keep the
    elements' order, so row r of that variable holds the rows of ids r*k .. r*k + k-1 of the
    lookup, whatever the ids' LoD: k = 1 is PaddleRec's one id per row, k > 1 one lookup of
    every slot at once (`Embedding` over the [-1, k] concat of the slots, reshaped to [-1, k x
    dim]). Same result shape as pool_pattern ("pools": the ops writing the [-1, k x width]
    variables), plus "ids_per_row": k per lookup."""
    pools, backward, outs_grads, dead, per_row = [], [], [], [], []
    readers_of = _readers(block)
    for emb in outs:
        var, chain = emb, []
        while True:
            readers = readers_of.get(var, [])
            step = sole(readers)
            if step is None or step.type not in SHAPE_OPS or step.input("X") != [var]:
                break
            chain.append(step)
            var = step.output("Out")[0]
        if not chain:
            return None
        shape = tuple(block.var(var).shape)
        if (len(shape) != 2 or shape[0] not in (-1, None) or shape[1] is None or int(shape[1]) <= 0
                or int(shape[1]) % width):
            return None
        per_row.append(int(shape[1]) // width)
        grads = []
        for step in chain:   # each step's gradient: Out@GRAD -> X@GRAD, through its XShape
            grad = sole([op for op in readers_of.get(f"{step.output('Out')[0]}@GRAD", [])
                         if op.type == SHAPE_OPS[step.type]])
            if (grad is None or grad.input("XShape") != step.output("XShape")
                    or grad.output("X@GRAD") != [f"{step.input('X')[0]}@GRAD"]):
                return None
            grads.append(grad)
        lk_grad = _slot_grad(readers_of, f"{emb}@GRAD", table_name)
        if lk_grad is None:
            return None
        # Nothing outside this slot's ops reads what they pass between them.
        mine = {id(op) for op in chain + grads + [lk_grad]}
        passed = [f"{step.input('X')[0]}@GRAD" for step in chain] + [n for step in chain for n in step.output("XShape")]
        if any(id(op) not in mine for name in passed for op in readers_of.get(name, [])):
            return None
        dead += [n for op in chain[:-1] + grads for n in op.output_arg_names] + chain[-1].output("XShape")
        pools.append(chain[-1])
        backward += chain[:-1] + grads + [lk_grad]
        outs_grads.append(f"{var}@GRAD")
        dead += [emb, lk_grad.output("W@GRAD")[0]]
    found = _with_sum(block, table_grad, pools, backward, outs_grads, dead)
    if found is not None:
        found["ids_per_row"] = per_row
    return found


def _readers(block) -> dict:
    """Variable name → the ops reading it, each once, in program order (one pass, so the
    matchers cost O(ops) rather than O(lookups × ops) on a program with many slots)."""
    out: dict[str, list] = {}
    for op in block.ops:
        for name in set(op.input_arg_names):
            out.setdefault(name, []).append(op)
    return out


def _with_sum(block, table_grad, pools, backward, grads_of_pools, dead):
    """A matcher's result once every slot matched: the slots' lookup_table_grad outputs
    must be the table gradient (one slot) or be added into it by one `sum` that nothing
    else of theirs reads; None otherwise."""
    parts = [op.output("W@GRAD")[0] for op in backward if op.type == "lookup_table_grad"]
    total = None
    if parts != [table_grad]:
        total = sole([op for op in block.ops if table_grad in op.output_arg_names])
        if total is None or total.type != "sum" or sorted(total.input("X")) != sorted(parts):
            return None
        if any(set(parts) & set(op.input_arg_names) for op in block.ops if op is not total and op not in backward):
            return None
    return {"pools": pools, "backward": backward, "grads_of_pools": grads_of_pools,
            "dead_vars": [v for v in dead if v != table_grad], "sum": total}


def concat_of_pools(block, pooled, grads_of_pools, backward):
    """The `concat` (axis 1) whose inputs hold every pooled slot, in order and side by
    side, and its `concat_grad`, when nothing but `backward` (the fused ops' gradients)
    reads the pooled slots' gradients, nothing else the pooled slots, no other input of
    the concat wants a gradient (the CTR model's concat of the slots and the dense
    features, before or after them) and each input before the slots has a known width,
    and the concat runs on the lookups' device: the fused op then writes the concat's
    output itself, and its gradient reads the concat's gradient. Returns (concat,
    concat_grad) or None."""
    readers = [op for op in block.ops if set(pooled) & set(op.input_arg_names)]
    cat = sole([op for op in readers if op.type == "concat"])
    cat_grad = sole([op for op in readers if op.type == "concat_grad"])
    if cat is None or cat_grad is None or len(readers) != 2:
        return None
    at = head_count(cat, pooled)
    if at is None or any(_width(block, name) is None for name in cat.input("X")[:at]):
        return None
    # A lookup's gradient carries the lookup's attributes, its device among them.
    lookup = next(op for op in backward if op.type == "lookup_table_grad")
    ndim = len(block.var(pooled[0]).shape)
    if ndim != 2 or int(cat.attr("axis", 0)) % 2 != 1 or cat.attr(OP_DEVICE_ATTR_NAME) != lookup.attr(OP_DEVICE_ATTR_NAME):
        return None
    grads = cat_grad.output("X@GRAD")
    if (cat_grad.input("X") != cat.input("X") or grads[at:at + len(pooled)] != grads_of_pools
            or any(n != EMPTY_VAR_NAME for n in grads[:at] + grads[at + len(pooled):])
            or cat_grad.input("Out@GRAD") != [f"{cat.output('Out')[0]}@GRAD"]):
        return None
    allowed = {id(op) for op in backward}
    if any(set(grads_of_pools) & set(op.input_arg_names) for op in block.ops if id(op) not in allowed):
        return None
    return cat, cat_grad


def head_count(cat, pooled) -> int | None:
    """How many of the concat's inputs come before the pooled slots (which must be side
    by side, in order), or None."""
    xs = cat.input("X")
    at = xs.index(pooled[0]) if pooled and pooled[0] in xs else -1
    return at if at >= 0 and xs[at:at + len(pooled)] == pooled else None


def _width(block, name):
    var = block._find_var_recursive(name)
    shape = tuple(var.shape) if var is not None else ()
    return int(shape[1]) if len(shape) == 2 and shape[1] is not None and int(shape[1]) > 0 else None


def fusable(block, outs, table_name: str, table_grad: str, width: int):
    """The one fused shape of a table's lookups (their outputs `outs`, one per slot): the
    CTR shape (pool_pattern), else a Paddle 2.x model's (reshape_pattern), which is fused
    only together with its concat. (found, each_id_a_row, pooled, cat) with `pooled` the
    variables the pools or reshapes write and `cat` concat_of_pools' answer; None when
    neither matches."""
    found, each_id_a_row = pool_pattern(block, outs, table_name, table_grad), False
    if found is None:
        found, each_id_a_row = reshape_pattern(block, outs, table_name, table_grad, width), True
    if found is None:
        return None
    pooled = [op.output("Out")[0] for op in found["pools"]]
    cat = concat_of_pools(block, pooled, found["grads_of_pools"], found["backward"])
    if cat is None and each_id_a_row:
        return None
    return found, each_id_a_row, pooled, cat


def fused_wiring(block, found, pooled, cat) -> dict:
    """What a fused forward / gradient pair reads and writes besides the table and the ids,
    for a matcher's result `found` and concat_of_pools' `cat` (both fusions below build
    their ops from it):
    out / out_grad: the forward's Out and the gradient's Out@GRAD (the concat's, when
    fused with it, else the pooled slots'); head / tail: the concat's other inputs, before
    and after the slots, and head_width: the head's columns; concat;
    replaced: every op the pair stands for but the lookups; last_grad: the op the
    gradient takes the place of; role: its op-role attributes."""
    last_grad = found["sum"] or found["backward"][-1]
    wiring = {"out": pooled, "out_grad": found["grads_of_pools"], "head": [], "tail": [], "head_width": 0,
              "concat": cat is not None,
              "replaced": found["pools"] + found["backward"] + [op for op in [found["sum"]] if op],
              "last_grad": last_grad,
              "role": {k: v for k, v in last_grad.attrs.items() if k in (OP_ROLE_ATTR_NAME, OP_ROLE_VAR_ATTR_NAME)}}
    if cat is not None:
        concat, concat_grad = cat
        at = head_count(concat, pooled)
        head = concat.input("X")[:at]
        wiring.update(out=concat.output("Out"), out_grad=concat_grad.input("Out@GRAD"), head=head,
                      head_width=sum(_width(block, name) for name in head),
                      tail=concat.input("X")[at + len(pooled):], replaced=wiring["replaced"] + [concat, concat_grad])
    return wiring


def ids_ready_before(block, ids, position: int) -> bool:
    """Every ids variable is fed or written by an op before `position` (so one op there
    can look every slot up)."""
    return not any(name in op.output_arg_names for op in block.ops[position:] for name in ids)


def execution_ops(block, keep=()) -> list:
    """The ops the executor runs for `block`: its own, except where a table's lookups
    have the CTR shape (pool_pattern) or the Paddle 2.x one (reshape_pattern, concat
    required): a local table's lookups, pools or reshapes, concat (when concat_of_pools
    finds one) and their gradients are replaced by one `embedding_pool` and one
    `embedding_pool_grad`; a distributed table's `merge_ids` (its split_ids with an
    `Index`), pools or reshapes, concat and gradients by one `merge_ids_pool` and one
    `merge_ids_pool_grad`. `keep`: variables the caller fetches, which must still be
    computed as written. The new ops are not in `block.ops`."""
    if not enabled:
        return block.ops
    by_table: dict[str, list] = {}
    merges = []
    for op in block.ops:
        if op.type == LOOKUP_TABLE:
            by_table.setdefault(op.input("W")[0], []).append(op)
        elif op.type == MERGE_IDS:
            merges.append(op)
    if not by_table and not merges:
        return block.ops
    keep = set(keep)
    fusions = [_local_fusion(block, table, lookups, keep) for table, lookups in by_table.items()]
    fusions += [_remote_fusion(block, merge, keep) for merge in merges]
    removed, before = set(), {}   # ids of replaced ops; id(op) → fused ops to run in its place
    for fused in fusions:
        if fused is None:
            continue
        replaced, (fwd_at, fwd), (grad_at, grad) = fused
        removed.update(id(op) for op in replaced)
        before.setdefault(id(fwd_at), []).append(fwd)
        before.setdefault(id(grad_at), []).append(grad)
    if not removed:
        return block.ops
    ops = []
    for op in block.ops:
        ops.extend(before.get(id(op), ()))
        if id(op) not in removed:
            ops.append(op)
    return ops


def _matched(block, outs, table: str, width: int, keep: set):
    """fusable's answer and its fused_wiring for lookups writing `outs`, unless the caller
    fetches a variable the fused ops do not compute as written (a lookup's output, a pooled
    slot fused into the concat, their gradients, the table gradient: the fused one has one
    row per distinct id); None otherwise."""
    table_grad = f"{table}@GRAD"
    matched = fusable(block, outs, table, table_grad, width)
    if matched is None:
        return None
    found, each_id_a_row, pooled, cat = matched
    gone = set(found["dead_vars"]) | {table_grad}
    if cat is not None:
        gone |= set(pooled) | set(found["grads_of_pools"])
    if gone & keep:
        return None
    return matched, fused_wiring(block, found, pooled, cat)


def _per_row_attr(found) -> dict:
    """{"ids_per_row": [k per lookup]} when a lookup's rows hold several ids each (the fused
    ops then lay its ids out as k slots), else {} (one id per row, or sum pools)."""
    per_row = found.get("ids_per_row") or []
    return {"ids_per_row": per_row} if any(k != 1 for k in per_row) else {}


def _described(each_id_a_row, cat, what: str) -> str:
    shape = "reshape" if each_id_a_row else "sum sequence_pool"
    return f"{what} + {shape}{' + concat' if cat else ''}"


def _local_fusion(block, table: str, lookups: list, keep: set):
    """(ops replaced, (op the forward runs in place of, embedding_pool), (op the gradient
    runs in place of, embedding_pool_grad)) for one local table, or None."""
    var = block._find_var_recursive(table)
    if var is None or not var.persistable or len(var.shape) != 2 or not all(map(plain_lookup, lookups)):
        return None
    ids = [op.input("Ids")[0] for op in lookups]
    if not ids_ready_before(block, ids, block.ops.index(lookups[0])):
        return None
    matched = _matched(block, [op.output("Out")[0] for op in lookups], table, int(var.shape[1]), keep)
    if matched is None:
        return None
    (found, each_id_a_row, pooled, cat), wiring = matched
    attrs = {"concat": wiring["concat"], "each_id_a_row": each_id_a_row, "head_width": wiring["head_width"],
             **_per_row_attr(found)}
    fwd_inputs = {"W": [table], "Ids": ids,
                  **({"Head": wiring["head"], "Tail": wiring["tail"]} if cat is not None else {})}
    grad_inputs = {"W": [table], "Ids": ids, "Out@GRAD": wiring["out_grad"]}
    # The forward runs where the concat was (after every input of it), else at the first lookup.
    fwd_at = cat[0] if cat is not None else lookups[0]
    # Errors name what the fused op stands for (it has no index in the program).
    what = f"the {_described(each_id_a_row, cat, f'{len(lookups)} lookup_table')} of table {table!r}"
    fwd = Operator(block, "embedding_pool", inputs=fwd_inputs, outputs={"Out": wiring["out"]},
                   attrs=dict(attrs, fused_from=f"runs {what}",
                              **{k: v for k, v in lookups[0].attrs.items() if k == OP_DEVICE_ATTR_NAME}))
    grad = Operator(block, "embedding_pool_grad", inputs=grad_inputs, outputs={"W@GRAD": [f"{table}@GRAD"]},
                    attrs=dict(attrs, fused_from=f"runs the gradient of {what}", **wiring["role"]))
    return list(lookups) + wiring["replaced"], (fwd_at, fwd), (wiring["last_grad"], grad)


def _remote_fusion(block, merge, keep: set):
    """_local_fusion's counterpart for a distributed table: the trainer pass's split_ids
    (with an `Index`: every lookup of the table in one prefetch) → prefetch → `merge`
    (merge_ids), the pools or reshapes, concat and gradients after it become one
    `merge_ids_pool` and one `merge_ids_pool_grad`, which read the split's Index and the
    prefetched rows. None when the program lacks any of that."""
    split = sole([op for op in block.ops if op.type == "split_ids" and op.output("Out") == merge.input("Rows")])
    prefetch = sole([op for op in block.ops if op.type == "prefetch" and op.output("Out") == merge.input("X")])
    if split is None or prefetch is None or not split.output("Index") or split.input("Ids") != merge.input("Ids"):
        return None
    tables = set(prefetch.attr("table_names") or ())
    table = tables.pop() if len(tables) == 1 else None
    var = None if table is None else block._find_var_recursive(table)
    if var is None or len(var.shape) != 2:
        return None
    matched = _matched(block, merge.output("Out"), table, int(var.shape[1]), keep)
    if matched is None:
        return None
    (found, each_id_a_row, pooled, cat), wiring = matched
    ids, index, rows = merge.input("Ids"), split.output("Index"), split.output("Out")
    attrs = dict({"concat": True} if cat is not None else {}, each_id_a_row=each_id_a_row,
                 head_width=wiring["head_width"], **_per_row_attr(found))
    what = f"the {_described(each_id_a_row, cat, f'merge_ids of {len(ids)} lookups')} of table {table!r}"
    fwd = Operator(block, "merge_ids_pool",
                   inputs={"Ids": ids, "Index": index, "X": merge.input("X"),
                           **({"Head": wiring["head"], "Tail": wiring["tail"]} if cat is not None else {})},
                   outputs={"Out": wiring["out"]},
                   attrs=dict(attrs, fused_from=f"runs {what}", **{OP_ROLE_ATTR_NAME: int(OpRole.Forward)}))
    grad = Operator(block, "merge_ids_pool_grad",
                    inputs={"Ids": ids, "Index": index, "Rows": rows, "Out@GRAD": wiring["out_grad"]},
                    outputs={"W@GRAD": [f"{table}@GRAD"]},
                    attrs=dict(wiring["role"], height=int(var.shape[0]), **attrs,
                               **({"width": int(var.shape[1])} if cat is not None else {}),
                               fused_from=f"runs the gradient of {what}"))
    # The forward runs where the concat was (after every input of it), else where merge_ids was.
    return [merge] + wiring["replaced"], (cat[0] if cat is not None else merge, fwd), (wiring["last_grad"], grad)
