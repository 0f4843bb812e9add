"""Ops of transpiled programs: cutting/merging variables, RPC, and pserver-side table ops.

RPC ops (send, recv, send_barrier, fetch_barrier, prefetch, checkpoint_notify)
talk to the parameter-server client the runtime registers as
`executor.services["rpc"]` — any object with the ps-lite verbs of
`psjob.cluster.protocol.PSClient` (push / pull / prefetch return a
handle with `wait()`; barrier, checkpoint_notify, complete block). The gRPC
client and the in-memory test client both qualify; kernels never import
either, so this module imports no transport.

`listen_and_serv` hands its program to `executor.services["pserver"]`, a
callable (program, scope, executor) that serves until the trainers complete.
When none is registered, the executor creates the gRPC ones (see
Executor.service): plain Fluid scripts need no set-up.

Feature ids map to pservers only through `psjob.foundation.tables.shard_of` (a stable
hash of the id: any int64 id, the one replaceable placement seam); on a
pserver the distributed table is a `psjob.foundation.tables.SparseTable` keyed by id
(see ops/table_ops.py), so no op here knows local rows.
"""
from __future__ import annotations

import numbers
import os
import tempfile

import numpy as np

from psjob.fluid.core import SelectedRows, to_numpy
from psjob.fluid.framework import EMPTY_VAR_NAME, GraphError, VarType
from psjob.fluid.ops.registry import in_var, out_var, register_op, set_out
from psjob.foundation.kernels import native
from psjob.foundation.kernels.rows import stable_order
from psjob.foundation.tables import SparseTable, shard_of

# -- helpers ------------------------------------------------------------------------------

_CHECKED = "_rpc_checked"  # executor.services entry: {id(op): (op, the client its trainer id was checked against)}


def _client(ctx):
    # The gRPC client by default (psjob.cluster.trainer.client_service); tests register an
    # in-memory one in executor.services["rpc"] first.
    services = ctx.executor.services
    client = services.get("rpc")
    checked = services.get(_CHECKED)
    seen = checked.get(id(ctx.op)) if checked is not None else None
    if seen is not None and seen[0] is ctx.op and seen[1] is client:
        return client  # every step after the first: this op was checked against this client
    client = ctx.executor.service("rpc", ctx.op)
    want = ctx.attr("trainer_id")
    have = getattr(client, "trainer_id", None)
    if want is not None and have is not None and int(want) != int(have):
        raise RuntimeError(f"op {ctx.op.type!r} was transpiled for trainer {want} but runs with the client "
                           f"of trainer {have}")
    services.setdefault(_CHECKED, {})[id(ctx.op)] = (ctx.op, client)
    return client


def _by_endpoint(names, eps, what):
    if len(names) != len(eps):
        raise GraphError(f"{what}: {len(names)} variables but {len(eps)} endpoints in epmap")
    grouped: dict = {}
    for n, ep in zip(names, eps):
        grouped.setdefault(ep, []).append(n)
    return grouped


def _declared(ctx, name):
    return ctx.op.block._find_var_recursive(name)


def _host_ids(value) -> np.ndarray:
    if type(value) is np.ndarray and value.dtype == np.int64:  # the common case: a fed int64 array
        return value.reshape(-1)
    return np.asarray(to_numpy(value), dtype=np.int64).reshape(-1)


def _equal_ids(a: np.ndarray, b: np.ndarray) -> bool:
    """np.array_equal of two id arrays; one memcmp (native.same_ids) for the 1-D contiguous
    int64 arrays a batch's ids are (np.array_equal's wrapper costs several times that on
    the ~900 ids of a batch of 32, compared twice a step)."""
    if a.ndim == b.ndim == 1 and a.dtype == b.dtype == np.int64 and a.flags.c_contiguous \
            and b.flags.c_contiguous:
        return native.same_ids(a, b)
    return np.array_equal(a, b)


def _to_xp(ctx, arr):
    return arr if ctx.xp is np else ctx.xp.asarray(arr)


# -- split / merge ------------------------------------------------------------------------

def _split_shape(op, key):
    x = in_var(op, "X")
    for i, rows in enumerate(op.attr(key) or []):
        set_out(op, "Out", (rows,) + tuple(x.shape[1:]), x.dtype, i=i)
        name = op.outputs["Out"][i]
        if name != EMPTY_VAR_NAME:
            out_var(op, "Out", i).type = x.type


def _check_sections(ctx, height, sections):
    if sum(sections) != height:
        raise GraphError(f"{ctx.op.type}: sections {sections} add up to {sum(sections)}, "
                         f"but the input has {height} rows")


@register_op("split_byref", infer_shape=lambda op: _split_shape(op, "sections"))
def split_byref(ctx):
    """Row blocks of a dense tensor (views; `copy` detaches them, as startup needs)."""
    x = ctx.input("X")
    sections = list(ctx.attr("sections"))
    _check_sections(ctx, x.shape[0], sections)
    copy = bool(ctx.attr("copy", False))
    start = 0
    for i, rows in enumerate(sections):
        if ctx.outs["Out"][i] != EMPTY_VAR_NAME:
            part = x[start:start + rows]
            ctx.set_output("Out", part.copy() if copy else part, i=i)
        start += rows


@register_op("split_selected_rows", infer_shape=lambda op: _split_shape(op, "height_sections"))
def split_selected_rows(ctx):
    """Rows of a SelectedRows by height section, rebased to each section."""
    x = ctx.input("X")
    sections = list(ctx.attr("height_sections"))
    _check_sections(ctx, x.height, sections)
    rows = _host_ids(x.rows)
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= x.height):
        raise ValueError(f"split_selected_rows: row ids must lie in [0, {x.height}), got "
                         f"[{int(rows.min())}, {int(rows.max())}]")
    start = 0
    for i, height in enumerate(sections):
        idx = np.nonzero((rows >= start) & (rows < start + height))[0]
        ctx.set_output("Out", SelectedRows(_to_xp(ctx, rows[idx] - start), x.values[_to_xp(ctx, idx)], height),
                       i=i)
        start += height


def _split_ids_shape(op):
    x = in_var(op, "Ids")
    for i, _ in enumerate(op.outputs.get("Out", [])):
        if x.type == VarType.SELECTED_ROWS:
            set_out(op, "Out", x.shape, x.dtype, i=i)
            out_var(op, "Out", i).type = VarType.SELECTED_ROWS
        else:
            set_out(op, "Out", (-1, 1), x.dtype, i=i)
    set_out(op, "Index", (-1,), "int64")


@register_op("split_ids", infer_shape=_split_ids_shape)
def split_ids(ctx):
    """Ids (unique, sorted) or a SelectedRows gradient's rows, by the pserver holding them.

    With an `Index` output (ids inputs only) it also writes, for every input id, its row
    in the outputs laid end to end: merge_ids_pool gathers with it, unsorted.

    The gradient pieces carry height 0: their rows are feature ids of an
    unbounded table, not rows of a sized array (the codec range-checks rows
    only when height > 0)."""
    n = len(ctx.outs["Out"])
    inputs = ctx.input_list("Ids")
    if len(inputs) == 1 and isinstance(inputs[0], SelectedRows):
        sr = inputs[0]
        if n == 1:
            # One pserver holds every row: the gradient goes as it is (send copies what it queues).
            ctx.set_output("Out", SelectedRows(sr.rows, sr.values, 0), i=0)
            return
        rows = _host_ids(sr.rows)
        shard = shard_of(rows, n)
        for k in range(n):
            idx = np.nonzero(shard == k)[0]
            ctx.set_output("Out", SelectedRows(_to_xp(ctx, rows[idx]), sr.values[_to_xp(ctx, idx)], 0), i=k)
        return
    wanted = np.concatenate([_host_ids(x) for x in inputs]) if inputs else np.zeros(0, np.int64)
    done = take_ahead(ctx.executor, ctx.op, lambda entry: _equal_ids(entry[0], wanted))
    pieces, index = done[1] if done is not None else split_wanted_ids(wanted, n, with_index=ctx.has_output("Index"))
    for k, piece in enumerate(pieces):
        ctx.set_output("Out", _to_xp(ctx, piece.reshape(-1, 1)), i=k)
    if index is not None:
        ctx.set_output("Index", index)


def split_wanted_ids(wanted: np.ndarray, n: int, with_index: bool):
    """([distinct ids of pserver k, ascending] for k < n, Index or None): split_ids' math."""
    if not with_index:
        ids = _unique_sorted(wanted)
        if n == 1:  # one pserver: no hashing
            return [ids], None
        shard = shard_of(ids, n)
        return [ids[shard == k] for k in range(n)], None
    # The one id pass of a batch (merge_ids_pool and its gradient reuse it): the distinct
    # ids by pserver, and for every wanted id its row in the pservers' replies laid end to
    # end (pserver 0's rows, then pserver 1's, ...; each pserver's ids ascending).
    ids, inverse = _unique_inverse(wanted)
    if n == 1:
        return [ids], inverse
    shard = shard_of(ids, n)
    by_shard = np.argsort(shard, kind="stable")
    position = np.empty(ids.size, np.int64)
    position[by_shard] = np.arange(ids.size, dtype=np.int64)
    return [ids[shard == k] for k in range(n)], position[inverse]


# Below this many ids, _unique_inverse finds each id's distinct value by binary search
# after a plain sort (numpy's vectorized sort is several times faster than an argsort);
# above it the searches cost more than one argsort's scatter.
_SEARCH_BELOW = 2048


def _unique_sorted(ids: np.ndarray) -> np.ndarray:
    """Sorted unique ids: sort + compare-neighbours (np.unique's hash path is several
    times slower on the ~30K ids of a CTR batch; a plain sort, not an argsort: no order
    is needed)."""
    s = np.sort(ids)
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def _unique_inverse(ids: np.ndarray):
    """(sorted distinct ids, index of each id's distinct value): one argsort (a sort and a
    binary search per id for a small batch's ids)."""
    if ids.size < _SEARCH_BELOW:
        distinct = _unique_sorted(ids)
        return distinct, np.searchsorted(distinct, ids)
    # Any sorting order gives the same inverse: stable_order's radix passes where they
    # apply (ids in [0, 2^32)), else numpy's default argsort (~1.5x a stable one on 64-bit hashes).
    radix = int(ids.min()) >= 0 and int(ids.max()) < 1 << 32
    order = stable_order(ids) if radix else np.argsort(ids)
    s = ids[order]
    first = np.empty(s.size, dtype=bool)
    first[:1] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    inverse = np.empty(ids.size, np.int64)
    inverse[order] = np.cumsum(first) - 1
    return s[first], inverse


def _embedding_shape(ids_shape, width):
    ids_shape = tuple(ids_shape)
    base = ids_shape[:-1] if len(ids_shape) >= 2 and ids_shape[-1] == 1 else ids_shape
    return base + (width,)


@register_op("merge_ids")
def merge_ids(ctx):
    """Rows prefetched per pserver, put back in the order of each original Ids input.

    split_ids prefetched exactly the distinct ids of the inputs, so the sorted
    distinct wanted ids equal the sorted prefetched ids: one sort of each side
    (np.unique's inverse for the wanted ids) maps every wanted id to its row —
    several times cheaper than a binary search per id over a batch's ~26K
    unordered ids. Each output is a slice of the gathered rows."""
    xp = ctx.xp
    rows = [_host_ids(r) for r in ctx.input_list("Rows")]
    xs = ctx.input_list("X")
    all_ids = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    all_x = xp.concatenate(xs, axis=0)
    order = np.argsort(all_ids, kind="stable")
    ordered = all_ids[order]
    width = all_x.shape[1]
    names = ctx.ins["Ids"]
    flats = [_host_ids(ctx.vals[name]) for name in names]
    wanted = np.concatenate(flats) if flats else np.zeros(0, np.int64)
    distinct, inverse = np.unique(wanted, return_inverse=True)
    if distinct.shape != ordered.shape or not np.array_equal(distinct, ordered):
        missing = np.setdiff1d(distinct, ordered, assume_unique=True)
        if missing.size:
            bad = int(missing[0])
            owner = next(n for n, f in zip(names, flats) if (f == bad).any())
            raise RuntimeError(f"merge_ids: id {bad} of {owner!r} was not prefetched")
        # More rows than wanted ids (a caller prefetched extra): fall back to a search.
        inverse = np.searchsorted(ordered, distinct)[inverse]
    gathered = all_x[_to_xp(ctx, order[inverse.reshape(-1)])]
    start = 0
    for j, (name, flat) in enumerate(zip(names, flats)):
        vals = gathered[start:start + flat.size]
        start += flat.size
        ctx.set_output("Out", vals.reshape(_embedding_shape(ctx.vals[name].shape, width)), i=j,
                       lod=ctx.lods.get(name))


# -- RPC (trainer side) -------------------------------------------------------------------

def record_staleness(sink, result) -> None:
    """Hand a confirmed push's staleness to `sink` (a callable(int), or None).

    A push handle's `wait()` returns the pserver's async staleness of that push
    (an int; 0 in sync mode). Anything else — None from a Communicator's queued
    push (not applied yet: its sender thread reports it when it is), or a reply
    object from a client without staleness — is not an observation."""
    if sink is None or result is None:
        return
    if type(result) is int:  # the usual reply: skips the Integral ABC's check (once per push)
        sink(max(result, 0))
    elif not isinstance(result, bool) and isinstance(result, numbers.Integral):
        sink(max(int(result), 0))


class _InFlight:
    """RPCs a trainer has issued but not yet waited for (one per executor).

    Sends do not wait: each gradient is pushed as soon as backward produces
    it, overlapping the rest of backward, and all pushes are confirmed before
    the next barrier, recv or close. A run of consecutive recv ops pulls every
    parameter block in one request per pserver, issued by the first of them.
    Confirmed pushes report their staleness to `executor.services["staleness"]`
    (a callable(int) the trainer's telemetry registers; none = not recorded).
    """

    def __init__(self, services=None):
        self.sends = []
        self.groups = {}      # id(first recv op) -> {endpoint: names} its run of recv ops pulls
        self.pulled = None    # {endpoint: {name: array}} of the current recv group
        self._services = services if services is not None else {}

    def drain(self):
        pending, self.sends = self.sends, []
        sink = self._services.get("staleness")
        for h in pending:
            record_staleness(sink, h.wait())


# Unconfirmed pushes allowed before a send waits (bounds memory in async mode).
MAX_SENDS_IN_FLIGHT = 64


def confirm_pushes(executor) -> None:
    """Wait until every gradient push this executor's `send` ops issued was applied.

    For code that must order later work after the pushes without a barrier
    (a heter trainer replies to its CPU trainer only after its pushes land).
    Each push's staleness goes to `executor.services["staleness"]` when set."""
    state = executor.services.get("_rpc_inflight")
    if state is not None:
        state.drain()


def _inflight(ctx) -> _InFlight:
    state = ctx.executor.services.get("_rpc_inflight")
    if state is None:
        state = ctx.executor.services["_rpc_inflight"] = _InFlight(ctx.executor.services)
        ctx.executor.add_close_hook(state.drain)  # runs before the client's close hook
    return state


@register_op("write_prefetched_rows")
def write_prefetched_rows(ctx):
    """Write a prefetch's rows (X, one per pserver, for the ids in Rows) into the trainer's
    copy of the table (Out, updated in place): Paddle 2.x trainers keep a sparse
    embedding's parameter and the rows they pulled (fleet/sparse_tables.py). Written (a
    bool per row) marks the rows written, which fleet.barrier_worker pulls again."""
    table = ctx.vals[ctx.outs["Out"][0]]
    written = ctx.vals.get(ctx.outs["Written"][0])
    if written is None or written.shape != (table.shape[0],):
        written = np.zeros(table.shape[0], dtype=bool)
    for ids, rows in zip(ctx.input_list("Rows"), ctx.input_list("X")):
        ids = _host_ids(ids)
        if ids.size:
            table[_to_xp(ctx, ids)] = rows
            written[ids] = True
    ctx.set_output("Out", table)
    ctx.set_output("Written", written)


# Op types whose kernels write into no array they did not make in the same call: each
# output is a new array, or an input's array or a view of it, and none writes into an input
# or into its output variable's previous array (read from their kernels; the fused ops
# psjob.fluid.embedding_fusion runs in place of a program's lookups are among them). A
# program made of these ops alone never changes an array once an op made it: the executor
# stores every output anew, fetches copy, and the next run makes new arrays. So its `send`
# ops hand their gradients to the client without a snapshot (`owned`: the communicator's
# push skips its copy, the gRPC client its join). Any other op type in any block — an
# optimizer op, `increment`, write_prefetched_rows, a control-flow op — keeps the snapshot.
WRITES_NOTHING_IN_PLACE = frozenset({
    "auc", "cast", "concat", "concat_grad", "elementwise_add", "elementwise_add_grad",
    "embedding_pool", "embedding_pool_grad", "fill_constant", "lookup_table_grad", "mean",
    "mean_grad", "merge_ids", "merge_ids_pool", "merge_ids_pool_grad", "mul", "mul_grad",
    "prefetch", "recv", "relu", "relu_grad", "reshape2", "reshape2_grad", "scale", "send",
    "sequence_pool", "sequence_pool_grad", "sigmoid", "sigmoid_cross_entropy_with_logits",
    "sigmoid_cross_entropy_with_logits_grad", "split_ids", "sum",
})
_SENDS_OWNED = "_sends_owned"  # executor.services entry: {id(program): (program, its _version, owned)}


def sends_owned(executor, program) -> bool:
    """Whether no op of `program` (any block) writes an array in place, so that an array a
    `send` op pushes stays unchanged after it (WRITES_NOTHING_IN_PLACE); per program version."""
    cache = executor.services.setdefault(_SENDS_OWNED, {})
    seen = cache.get(id(program))
    if seen is None or seen[0] is not program or seen[1] != program._version:
        if len(cache) > 64:  # programs rebuilt in a loop must not leak
            cache.clear()
        owned = all(op.type in WRITES_NOTHING_IN_PLACE for block in program.blocks for op in block.ops)
        seen = cache[id(program)] = (program, program._version, owned)
    return seen[2]


@register_op("send")
def send(ctx):
    client = _client(ctx)
    state = _inflight(ctx)
    owned = sends_owned(ctx.executor, ctx.op.block.program)
    for ep, names in _by_endpoint(ctx.ins["X"], ctx.attr("epmap"), "send").items():
        values = {n: ctx.vals[n] for n in names}
        lods = {n: ctx.lods[n] for n in names if n in ctx.lods}
        kwargs = {"owned": True} if owned else {}
        if lods:
            kwargs["lods"] = lods
        state.sends.append(client.push(ep, values, **kwargs))
    if len(state.sends) > MAX_SENDS_IN_FLIGHT:
        state.drain()


def _recv_group(ctx, state):
    """{endpoint: names} that the consecutive recv ops starting at this one pull (None if
    it is not the first); worked out on the op's first run, as the ops do not change."""
    key = id(ctx.op)
    if key not in state.groups:
        ops = ctx.op.block.ops
        i = ops.index(ctx.op)
        if i > 0 and ops[i - 1].type == "recv":
            state.groups[key] = None
        else:
            j = i
            while j < len(ops) and ops[j].type == "recv":
                j += 1
            by_ep = {}
            for op in ops[i:j]:
                for ep, names in _by_endpoint(op.outputs["Out"], op.attr("epmap"), "recv").items():
                    by_ep.setdefault(ep, []).extend(names)
            state.groups[key] = by_ep
    return state.groups[key]


@register_op("recv")
def recv(ctx):
    client = _client(ctx)
    state = _inflight(ctx)
    by_ep = _recv_group(ctx, state)
    if by_ep is not None:
        state.drain()  # our own gradients reach the pservers before we pull
        handles = [client.pull(ep, list(names)) for ep, names in by_ep.items()]
        state.pulled = {}
        for handle in handles:
            state.pulled.update(handle.wait())
    got = state.pulled or {}
    for i, name in enumerate(ctx.outs["Out"]):
        if name not in got:
            raise RuntimeError(f"recv: pserver did not return {name!r}")
        ctx.set_output("Out", _to_xp(ctx, got[name]), i=i)


@register_op("send_barrier")
def send_barrier(ctx):
    _inflight(ctx).drain()
    _client(ctx).barrier("send", list(ctx.attr("endpoints")))


@register_op("fetch_barrier")
def fetch_barrier(ctx):
    # Its outputs only order ops after the recvs; nothing is written.
    _client(ctx).barrier("fetch", list(ctx.attr("endpoints")))


PREFETCH_AHEAD = "prefetch_ahead"  # executor.services entry: {id(prefetch op): [issued batches, oldest first]}


def take_ahead(executor, op, matches):
    """What prefetch_ahead prepared for `op` and `matches(entry)` accepts, dropping the
    entries prepared before it (batches no run will take); None when there is none."""
    ahead = executor.services.get(PREFETCH_AHEAD)
    queue = ahead.get(id(op)) if ahead else None
    for k, entry in enumerate(queue or ()):
        if matches(entry):
            del queue[:k + 1]
            return entry
    return None


def _same_ids(batch, wanted):
    return len(batch) == len(wanted) and all(_equal_ids(ids, w) for (ids, _), w in zip(batch, wanted))


@register_op("prefetch")
def prefetch(ctx):
    client = _client(ctx)
    ins, outs = ctx.ins["X"], ctx.outs["Out"]
    eps, tables = ctx.attr("epmap"), ctx.attr("table_names")
    if not (len(ins) == len(outs) == len(eps) == len(tables)):
        raise GraphError(f"prefetch: {len(ins)} inputs, {len(outs)} outputs, {len(eps)} endpoints and "
                         f"{len(tables)} table names must match")
    wanted = [_host_ids(ctx.vals[name]) for name in ins]
    issued = take_ahead(ctx.executor, ctx.op, lambda batch: _same_ids(batch, wanted))  # sent while
    handles = {}                                                                     # the last batch ran
    for i, ids in enumerate(wanted):
        if issued is not None:
            if issued[i][1] is not None:
                handles[i] = issued[i][1]
        elif ids.size:
            handles[i] = client.prefetch(eps[i], tables[i], ids)
    for i, name in enumerate(outs):
        if i in handles:
            ctx.set_output("Out", _to_xp(ctx, handles[i].wait()), i=i)
        else:
            decl = _declared(ctx, name)
            ctx.set_output("Out", ctx.xp.zeros((0, int(decl.shape[-1])), dtype=decl.dtype), i=i)


@register_op("checkpoint_notify")
def checkpoint_notify(ctx):
    """Ask pservers to save their shards (the distributed table) under attr `dir`."""
    _inflight(ctx).drain()
    _client(ctx).checkpoint_notify(ctx.attr("dir"), endpoints=list(ctx.attr("epmap")))


# -- pserver side ---------------------------------------------------------------------------

@register_op("listen_and_serv", inputs_arrive_at_run_time=True)
def listen_and_serv(ctx):
    serve = ctx.executor.service("pserver", ctx.op)
    serve(ctx.op.block.program, ctx.scope, ctx.executor)


def _lookup_sparse_shape(op):
    w = in_var(op, "W")
    set_out(op, "Out", (-1, w.shape[-1]), w.dtype)


@register_op("lookup_sparse_table", infer_shape=_lookup_sparse_shape, no_grad_inputs=("Ids",))
def lookup_sparse_table(ctx):
    """Rows of this pserver's SparseTable for feature ids (the prefetch block's op).

    Absent ids get a row from the table's per-id initializer on first use;
    `padding_idx` rows read as zeros (and are created like any other id, as
    a dense table would hold a row there too)."""
    padding = ctx.attr("padding_idx")
    out = sparse_table_rows(ctx.input("W"), ctx.ins["W"][0], _host_ids(ctx.input("Ids")),
                            -1 if padding is None else int(padding))
    ctx.set_output("Out", _to_xp(ctx, out))


def sparse_table_rows(table, name: str, ids: np.ndarray, padding_idx: int = -1) -> np.ndarray:
    """lookup_sparse_table's kernel: rows of SparseTable `table` (variable `name`) for int64
    `ids`, `padding_idx` rows zeroed. The pserver's prefetch calls it directly
    (psjob.cluster.pserver.reads) when the prefetch block is just this op."""
    if not isinstance(table, SparseTable):
        raise TypeError(f"lookup_sparse_table: {name!r} holds {type(table).__name__}, not a "
                        "SparseTable (run the pserver startup program first)")
    out = table.lookup(ids)
    if padding_idx >= 0:
        out[ids == padding_idx] = 0
    return out


@register_op("fake_init", infer_shape=lambda op: set_out(op, "Out", op.attr("shape"), op.attr("dtype", "float32")))
def fake_init(ctx):
    """The trainer's placeholder for a distributed table: the right width, no rows.

    The rows live on the pservers; nothing on the trainer reads them (lookups
    became prefetches), so no memory is spent on them.
    """
    shape = tuple(ctx.attr("shape"))
    ctx.set_output("Out", ctx.xp.zeros((0,) + shape[1:], dtype=ctx.attr("dtype", "float32")))


@register_op("delete_var")
def delete_var(ctx):
    for name in ctx.ins.get("X", ()):
        ctx.vals.pop(name, None)
        ctx.lods.pop(name, None)


@register_op("ref_by_trainer_id",
             infer_shape=lambda op: set_out(op, "Out", in_var(op, "X").shape, in_var(op, "X").dtype))
def ref_by_trainer_id(ctx):
    xs = ctx.input_list("X")
    tid = int(_host_ids(ctx.input("TrainerId"))[0])
    if not 0 <= tid < len(xs):
        raise ValueError(f"ref_by_trainer_id: trainer id {tid} out of range [0, {len(xs)})")
    ctx.set_output("Out", xs[tid])


@register_op("sparse_table_save")
def sparse_table_save(ctx):
    """Write this pserver's SparseTable as {ids, values, <optimizer state>} keyed by id (any
    pserver count can load it back); the file is written under a temporary name, then renamed."""
    dirname = ctx.input("Path")
    if not isinstance(dirname, str) or not dirname:
        raise ValueError("sparse_table_save: the checkpoint directory (kLookupTablePath) is not set")
    table = ctx.input("X")
    if not isinstance(table, SparseTable):
        raise TypeError(f"sparse_table_save: {ctx.ins['X'][0]!r} holds {type(table).__name__}, not a SparseTable")
    shard = table.export()
    k, n = int(ctx.attr("shard_index")), int(ctx.attr("shard_num"))
    os.makedirs(dirname, exist_ok=True)
    fname = f"{ctx.attr('table_name')}.shard_{k}_of_{n}.npz"
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=dirname)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, ids=shard.ids, values=shard.values,
                     **{f"state.{name}": arr for name, arr in shard.state.items()})
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(dirname, fname))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    ctx.set_output("Out", [fname])


@register_op("geo_sgd_step")
def geo_sgd_step(ctx):
    """End of a geo-mode step: every k-th call exchanges parameter deltas (psjob.cluster.trainer.geo)."""
    ctx.executor.service("rpc", ctx.op).geo_step()
