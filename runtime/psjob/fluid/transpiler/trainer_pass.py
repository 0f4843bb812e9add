"""Rewriting the trainer's programs (Fluid's DistributeTranspiler.transpile, trainer steps 1-6).

After backward, each gradient is cut into its blocks (`split_byref` for dense,
`split_selected_rows` for sparse gradients, rows rebased to the block) and
sent (`send`, one endpoint per block) right where backward finishes it, so
communication overlaps the rest of backward. In sync mode a `send_barrier`
tells the pservers the trainer's round is complete; then `recv` fetches the
updated parameter blocks, `fetch_barrier` closes the round and `concat`
reassembles sliced parameters. The startup program gets the same recv/concat
tail, so trainers start from the pservers' values.

A distributed lookup table (there may be several: each is its own pserver
table, handled alike) never reaches the trainer: each `lookup_table` on it becomes `split_ids` (ids by pserver) → `prefetch` (rows from the pservers)
→ `merge_ids` (rows back in the ids' order), and its SelectedRows gradient is
`split_ids`-ed by id and sent to the pservers holding those ids. When every
lookup feeds a sum `sequence_pool` (the CTR shape) or reaches the concat through
a reshape to [-1, dim] (PaddleRec's), `split_ids` also writes an `Index`, and
the executor runs `merge_ids` and the pools or reshapes, concat and gradients
as one `merge_ids_pool` and one `merge_ids_pool_grad` with a row per distinct
id (embedding_fusion.py). The program keeps every op and variable the user
built, so any of them can be fetched; a run that fetches one the fused ops skip
runs the ops as written.

Op removal (optimizer, LR schedule) waits for `get_trainer_program`, as in
Fluid's, so a transpiled program can still be inspected whole.
"""
from __future__ import annotations

from collections import OrderedDict

from psjob.fluid.embedding_fusion import fusable, plain_lookup
from psjob.fluid.framework import (
    OP_ROLE_ATTR_NAME,
    OP_ROLE_VAR_ATTR_NAME,
    GraphError,
    OpRole,
    VarType,
    generate_control_dev_var_name,
)
from psjob.fluid.transpiler.details import create_control_var, delete_ops, find_op_by_output_arg
from psjob.fluid.transpiler.plan import TablePlan, TranspilePlan

RPC = int(OpRole.RPC)
# lookup_table attribute: the trainer keeps the table's parameter and the prefetched rows
# (Fleet 2.x's sparse embeddings, fleet/sparse_tables.py; TablePlan.trainer_keeps_rows).
TRAINER_KEEPS_ROWS = "trainer_keeps_rows"
DIST = int(OpRole.Dist)
LOOKUP_TABLE = "lookup_table"


def _rpc_attrs(plan: TranspilePlan, **extra) -> dict:
    attrs = {OP_ROLE_ATTR_NAME: RPC, "trainer_id": plan.trainer_id}
    attrs.update(extra)
    return attrs


def table_grad_names(plan: TranspilePlan, table: TablePlan, trainer_id: int | None = None) -> list[str]:
    """Names of the per-pserver pieces of a table's gradient sent by a trainer."""
    t = plan.trainer_id if trainer_id is None else trainer_id
    g = table.grad
    if plan.sync_mode:
        return [f"{g}.trainer_{t}.pserver_{k}" for k in range(len(plan.endpoints))]
    return [f"{g}.pserver_{k}" for k in range(len(plan.endpoints))]


def check_rewritable(program, startup, plan: TranspilePlan) -> None:
    """Everything the rewrite relies on, checked before the first change, so a
    refused program is left exactly as it was."""
    block = program.global_block()
    for pp in plan.params.values():
        if find_op_by_output_arg(block, pp.grad) < 0:
            raise GraphError(f"no op writes the gradient {pp.grad!r} of {pp.param!r}: run backward "
                             "(optimizer.minimize) before transpiling")
    for table in plan.tables:
        _check_table_rewritable(block, startup, table)


def _check_table_rewritable(block, startup, table: TablePlan) -> None:
    if find_op_by_output_arg(block, table.grad) < 0:
        raise GraphError(f"no op writes the gradient {table.grad!r} of the distributed table")
    if block.var(table.grad).type != VarType.SELECTED_ROWS:
        raise GraphError(f"the distributed table {table.name!r} has a dense gradient: create it with "
                         "embedding(..., is_sparse=True, is_distributed=True)")
    inits = [op for op in startup.global_block().ops if table.name in op.output_arg_names]
    if len(inits) != 1:
        raise GraphError(f"the startup program should initialize the distributed table "
                         f"{table.name!r} with exactly one op, found {len(inits)}")


def rewrite_trainer_program(program, plan: TranspilePlan) -> None:
    block = program.global_block()
    _declare_split_vars(block, plan)
    send_deps: OrderedDict = OrderedDict()
    for pp in plan.params.values():
        send_deps[pp.grad] = _insert_split_and_send(block, plan, pp)
    for table in plan.tables:
        send_deps[table.grad] = create_control_var(block, generate_control_dev_var_name())

    barrier_out = None
    if plan.sync_mode:
        barrier_out = create_control_var(block, generate_control_dev_var_name())
        block.append_op("send_barrier", inputs={"X": list(send_deps.values())},
                        outputs={"Out": [barrier_out]},
                        attrs=_rpc_attrs(plan, endpoints=list(plan.endpoints), sync_mode=True))

    all_recv = []
    for pp in plan.params.values():
        outs = [b.name for b in pp.blocks]
        dep = barrier_out if plan.sync_mode else send_deps[pp.grad]
        sent_role_name = pp.grad if pp.sliced else plan.sent_grad_name(pp.grad)
        block.append_op("recv", inputs={"X": [dep]}, outputs={"Out": outs},
                        attrs=_rpc_attrs(plan, epmap=[b.endpoint for b in pp.blocks],
                                         sync_mode=not plan.sync_mode,
                                         **{OP_ROLE_VAR_ATTR_NAME: [pp.param, sent_role_name]}))
        all_recv.extend(outs)
    if plan.sync_mode:
        # Outputs form a write-after-write dependency only; the kernel writes nothing.
        block.append_op("fetch_barrier", inputs={}, outputs={"Out": all_recv},
                        attrs=_rpc_attrs(plan, endpoints=list(plan.endpoints)))
    for pp in plan.params.values():
        if pp.sliced:
            block.append_op("concat", inputs={"X": [b.name for b in pp.blocks]},
                            outputs={"Out": [pp.param]}, attrs={"axis": 0, OP_ROLE_ATTR_NAME: DIST})

    for table in plan.tables:
        lookups = find_table_lookups(block, table.name)
        batch_ids = lookups[0].input("Ids")[0] if lookups and table.accessor else None
        _replace_table_lookups(block, plan, table)
        _split_and_send_table_grad(block, plan, table, send_deps[table.grad], batch_ids)


def _declare_split_vars(block, plan: TranspilePlan) -> None:
    for pp in plan.params.values():
        gvar = block.var(pp.grad)
        if pp.sliced:
            for b, gb in zip(pp.blocks, pp.grad_blocks):
                block.create_var(name=b.name, shape=b.shape, dtype=pp.dtype, persistable=False)
                block.create_var(name=plan.sent_grad_name(gb.name), shape=gb.shape, dtype=gvar.dtype,
                                 type=gvar.type, lod_level=gvar.lod_level)
        elif plan.per_trainer_grads:
            # Sent under a per-trainer name; the gradient keeps its own (share_data, below),
            # so a user can still fetch it.
            block.create_var(name=plan.sent_grad_name(pp.grad), shape=gvar.shape, dtype=gvar.dtype,
                             type=gvar.type, lod_level=gvar.lod_level)


def _insert_split_and_send(block, plan: TranspilePlan, pp):
    local = pp.grad if pp.sliced else plan.sent_grad_name(pp.grad)
    idx = find_op_by_output_arg(block, pp.grad, reverse=True)  # exists: check_rewritable
    sent = [plan.sent_grad_name(gb.name) for gb in pp.grad_blocks]
    if local != pp.grad:
        block._insert_op(idx + 1, "share_data", inputs={"X": [pp.grad]}, outputs={"Out": [local]},
                         attrs={OP_ROLE_ATTR_NAME: DIST})
        idx += 1
    if pp.sliced:
        if pp.sparse_grad:
            block._insert_op(idx + 1, "split_selected_rows", inputs={"X": [local]}, outputs={"Out": sent},
                             attrs={"height_sections": pp.sections(), OP_ROLE_ATTR_NAME: DIST})
        else:
            block._insert_op(idx + 1, "split_byref", inputs={"X": [local]}, outputs={"Out": sent},
                             attrs={"sections": pp.sections(), OP_ROLE_ATTR_NAME: DIST})
        idx += 1
    dummy = create_control_var(block, generate_control_dev_var_name())
    block._insert_op(idx + 1, "send", inputs={"X": sent}, outputs={"Out": [dummy]},
                     attrs=_rpc_attrs(plan, epmap=[gb.endpoint for gb in pp.grad_blocks],
                                      sync_mode=not plan.sync_mode,
                                      **{OP_ROLE_VAR_ATTR_NAME: [pp.param, local]}))
    return dummy


def find_table_lookups(block, table: str) -> list:
    return [op for op in block.ops if op.type == LOOKUP_TABLE and op.input("W") == [table]]


def prefetch_table_lookups(block, plan: TranspilePlan) -> None:
    """Replace a forward-only block's lookups of the distributed tables by prefetches of their
    rows from the pservers (split_ids → prefetch → merge_ids), unfused: an inference
    program has no gradients to fuse with (fleet's DistributedInfer)."""
    for table in plan.tables:
        if find_table_lookups(block, table.name):
            _replace_table_lookups(block, plan, table, fuse=False)


def _replace_table_lookups(block, plan: TranspilePlan, table: TablePlan, fuse: bool = True) -> None:
    lookups = find_table_lookups(block, table.name)
    first = block.ops.index(lookups[0])
    ids = [op.input("Ids")[0] for op in lookups]
    outs = [op.output("Out")[0] for op in lookups]
    # One prefetch for all lookups (Fluid's shape) when every ids variable
    # exists before the first lookup; otherwise one per lookup, in place.
    late = any(find_op_by_output_arg(block, n, reverse=True) >= first for n in ids)
    groups = [(first, ids, outs, "")] if not late else [
        (block.ops.index(op), [i], [o], f"_{j}") for j, (op, i, o) in enumerate(zip(lookups, ids, outs))]
    # The CTR shape (sum pools), else a Paddle 2.x model's (reshapes to [-1, dim] into a
    # concat: PaddleRec's sparse_embedding + reshape), whose every id is its own row: the
    # split also writes an Index, from which the executor runs the fused ops
    # (embedding_fusion.execution_ops) unless the caller fetches what they skip.
    index = None
    if fuse and not late and all(map(plain_lookup, lookups)) and fusable(
            block, outs, table.name, table.grad, table.width) is not None:
        index = f"{table.name}@PREFETCH_INDEX"
        block.create_var(name=index, shape=(-1,), dtype="int64")
    delete_ops(block, lookups)
    shift = 0
    for pos, g_ids, g_outs, suffix in groups:
        pos += shift  # earlier lookups each became three ops
        n = len(plan.endpoints)
        in_names, out_names = _prefetch_vars(block, plan, table, block.var(g_ids[0]), block.var(g_outs[0]).dtype,
                                             suffix)
        block._insert_op(pos, "split_ids", inputs={"Ids": g_ids},
                         outputs={"Out": in_names, **({"Index": [index]} if index else {})})
        block._insert_op(pos + 1, "prefetch", inputs={"X": in_names}, outputs={"Out": out_names},
                         attrs={"epmap": list(plan.endpoints), "table_names": [table.name] * n,
                                "trainer_id": plan.trainer_id})
        block._insert_op(pos + 2, "merge_ids", inputs={"Ids": g_ids, "Rows": in_names, "X": out_names},
                         outputs={"Out": g_outs})
        shift += 2
        if table.trainer_keeps_rows:
            written = prefetched_rows_name(table.name)
            if not block.has_var(written):
                block.create_var(name=written, shape=(table.height,), dtype="bool", persistable=False)
            block._insert_op(pos + 2, "write_prefetched_rows", inputs={"Rows": in_names, "X": out_names},
                             outputs={"Out": [table.name], "Written": [written]}, attrs={OP_ROLE_ATTR_NAME: DIST})
            shift += 1


def prefetched_rows_name(table: str) -> str:
    """The trainer's bool-per-row record of the table rows it holds (trainer_keeps_rows)."""
    return f"{table}@PREFETCHED_ROWS"


def _prefetch_vars(block, plan: TranspilePlan, table: TablePlan, ids_var, out_dtype, suffix=""):
    """Fluid's names (prefetch_compress_{in,out}_tmp_<k>) for the first table; later tables'
    carry their name, so that two tables' pieces never share a variable."""
    n = len(plan.endpoints)
    tag = "" if table is plan.tables[0] else f"{table.name}."
    in_names = [f"{tag}prefetch_compress_in_tmp{suffix}_{k}" for k in range(n)]
    out_names = [f"{tag}prefetch_compress_out_tmp{suffix}_{k}" for k in range(n)]
    for a, b in zip(in_names, out_names):
        block.create_var(name=a, shape=(-1, 1), dtype=ids_var.dtype)
        block.create_var(name=b, shape=(-1, table.width), dtype=out_dtype)
    return in_names, out_names


def _split_and_send_table_grad(block, plan: TranspilePlan, table: TablePlan, dummy,
                               batch_ids: str | None = None) -> None:
    idx = find_op_by_output_arg(block, table.grad, reverse=True)
    gvar = block.var(table.grad)
    names = table_grad_names(plan, table)
    for n in names:
        block.create_var(name=n, shape=gvar.shape, dtype=gvar.dtype, type=VarType.SELECTED_ROWS)
    sent = table.grad
    if batch_ids is not None:
        # A table with Paddle's accessor gets what Paddle's trainers push: the gradient
        # times the batch size (the accessor's rules divide by the shows, not the batch).
        sent = f"{table.grad}@BATCH_SCALED"
        block.create_var(name=sent, shape=gvar.shape, dtype=gvar.dtype, type=VarType.SELECTED_ROWS)
        block._insert_op(idx + 1, "scale_rows_by_batch", inputs={"X": [table.grad], "Ids": [batch_ids]},
                         outputs={"Out": [sent]}, attrs={OP_ROLE_ATTR_NAME: DIST})
        idx += 1
    block._insert_op(idx + 1, "split_ids", inputs={"Ids": [sent]}, outputs={"Out": names},
                     attrs={OP_ROLE_ATTR_NAME: DIST})
    block._insert_op(idx + 2, "send", inputs={"X": names}, outputs={"Out": [dummy]},
                     attrs=_rpc_attrs(plan, epmap=list(plan.endpoints), sync_mode=not plan.sync_mode,
                                      **{OP_ROLE_VAR_ATTR_NAME: [table.name, table.grad]}))


def rewrite_trainer_startup(startup, program, plan: TranspilePlan) -> None:
    """Trainers start from the pservers' parameter values: recv, fetch_barrier, concat."""
    sb = startup.global_block()
    for pp in plan.params.values():
        for b in pp.blocks:
            if not sb.has_var(b.name):
                sb.create_var(name=b.name, shape=b.shape, dtype=pp.dtype, persistable=False)
        sb.append_op("recv", inputs={"X": []}, outputs={"Out": [b.name for b in pp.blocks]},
                     attrs=_rpc_attrs(plan, epmap=[b.endpoint for b in pp.blocks]))
    out = create_control_var(sb, generate_control_dev_var_name())
    sb.append_op("fetch_barrier", inputs={}, outputs={"Out": [out]},
                 attrs=_rpc_attrs(plan, endpoints=list(plan.endpoints)))
    for pp in plan.params.values():
        if not pp.sliced:
            continue
        if not sb.has_var(pp.param):
            src = program.global_block().var(pp.param)
            sb.create_var(name=pp.param, shape=src.shape, dtype=src.dtype, persistable=True)
        sb.append_op("concat", inputs={"X": [b.name for b in pp.blocks]}, outputs={"Out": [pp.param]},
                     attrs={"axis": 0})


def finalize_trainer_program(program, startup, plan: TranspilePlan, opt_ops, lr_ops) -> None:
    """Remove the optimize pass from the trainer; fake_init each distributed table (unless the
    trainer keeps its rows) and drop its optimizer state."""
    block = program.global_block()
    delete_ops(block, list(opt_ops) + list(lr_ops))
    for table in plan.tables:
        if not table.trainer_keeps_rows:
            _fake_init_table(startup, table)
        _drop_table_state(program, startup, table)


def _fake_init_table(startup, table: TablePlan) -> None:
    sb = startup.global_block()
    inits = [op for op in sb.ops if table.name in op.output_arg_names]  # one: check_rewritable
    shape = list(inits[0].attr("shape") or sb.var(table.name).shape)
    sb.append_op("fake_init", inputs={}, outputs={"Out": [table.name]},
                 attrs={"shape": shape, "dtype": table.dtype})
    delete_ops(sb, inits)


def _drop_table_state(program, startup, table: TablePlan) -> None:
    block, sb = program.global_block(), startup.global_block()
    # The table's optimizer state (moments, per-row beta powers: [height, ...] each) lives in
    # the pservers' SparseTable; only the removed optimizer op read it. Dropping it keeps the
    # trainers from allocating it and checkpoints from saving it as trainer-local state.
    state = set(table.state_vars)
    used = {n for op in block.ops for n in op.input_arg_names + op.output_arg_names}
    state -= used
    delete_ops(sb, [op for op in sb.ops if op.output_arg_names and set(op.output_arg_names) <= state])
    for name in state:
        block._remove_var(name)
        sb._remove_var(name)
