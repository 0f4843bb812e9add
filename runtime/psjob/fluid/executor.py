"""Executor: interprets a Program's ops in order on a Place, in a Scope.

The first run of a (program version, scope, feed names) compiles the block:
each op is checked (every input fed, already in the scope, or produced by an
earlier op — otherwise the program has a missing input or a cycle) and bound
to its kernel and a reusable KernelContext. Later runs only loop over the
bound kernels, so the per-op overhead is one Python call.

Runtime services (the RPC client of a trainer, the table server of a pserver)
live in `executor.services`; kernels of distributed ops find them there. A
service not set there is made on first use by the factory the runtime layer
registered under its name (psjob.foundation.hooks): the framework never imports it. `close()` runs registered close hooks — for a trainer this tells
the pservers it has completed, as `exe.close()` does in Fluid.

Deferred tails. Where the next batch's embedding prefetches may travel ahead of it (an
async or half-async communicator that allows a stale step, the ids fed: what
psjob.fluid.pipeline does for train_from_dataset), a run ends once it has computed what
it fetches: the ops after the last one writing a fetch target (the backward and the
sends) run at the start of the next run of the same program, right after that run's
feed has sent its prefetches, so they compute while the rows travel. Anything else
first finishes them: reading or writing a scope (its methods, global_scope(),
LoDTensor), a run of another program or scope, fleet's calls, close(). Every variable
holds, whenever the user can look, what op-by-op execution gives; the only difference
is the async staleness a pipelined dataset already has (the rows of batch N+1 are read
before batch N's gradients are sent). Only the main thread's runs defer: a Hogwild
thread may end with nothing left to finish its last run.

Step observers (`observe_steps(program, fn)`) are called after every
successful `run` of one program, by any Executor: psjob.fleet counts a
trainer's steps, examples, loss and AUC this way without wrapping the user's
training loop. A run of a program nobody observes costs one dict lookup.
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import defaultdict

import numpy as np

from psjob.fluid import core
from psjob.fluid.core import CPUPlace, EOFException, LoDTensor, Scope, SelectedRows, to_numpy
from psjob.fluid.embedding_fusion import execution_ops
from psjob.fluid.framework import EMPTY_VAR_NAME, GraphError, Program, Variable
from psjob.fluid.ops.registry import KernelContext, get_op_def
from psjob.fluid.pipeline import ALREADY_ISSUED, CANNOT_ISSUE, ahead_of_run
from psjob.foundation import hooks

# Runtime services a kernel may need, created on first use when nobody
# registered one. They live in higher layers (gRPC client and server), so they
# are named here, not imported: the framework never imports the transport.


# program → observers called after each run of it; weak keys, so an observer goes with its program.
_STEP_OBSERVERS: weakref.WeakKeyDictionary[Program, tuple] = weakref.WeakKeyDictionary()
_OBSERVED_READS: weakref.WeakKeyDictionary[Program, frozenset] = weakref.WeakKeyDictionary()

# Ops whose effect reaches past the scope and the communicator (files, the user's Python,
# the terminal, barriers with other processes): a run whose tail holds one is not deferred.
_NOT_DEFERRED = frozenset({
    "print", "py_func", "save", "save_combine", "load", "load_combine", "checkpoint_notify",
    "send_barrier", "fetch_barrier", "recv_save", "listen_and_serv", "barrier"})


def observe_steps(program, fn, reads=()):
    """Call `fn(executor, program, feed, scope, seconds)` after every successful `Executor.run`
    of `program` (`seconds`: the whole run, feed to fetch). `reads`: the variables `fn` reads
    from the scope, computed before it is called as if fetched (a deferred tail comes after).
    Returns a function that removes the observer. Runs of clones of `program` are not observed."""
    program = _unwrap(program)
    _STEP_OBSERVERS[program] = _STEP_OBSERVERS.get(program, ()) + (fn,)
    reads = {n for n in reads if n} - _OBSERVED_READS.get(program, frozenset())
    if reads:
        _OBSERVED_READS[program] = _OBSERVED_READS.get(program, frozenset()) | reads
        program._bump()  # compiled runs split their ops again (_tail_from)

    def remove():
        rest = tuple(f for f in _STEP_OBSERVERS.get(program, ()) if f is not fn)
        if rest:
            _STEP_OBSERVERS[program] = rest
        else:
            _STEP_OBSERVERS.pop(program, None)
            _OBSERVED_READS.pop(program, None)
    return remove


class ExecutionError(RuntimeError):
    """An op failed while running; the message names the op and its inputs."""


class FeedError(ValueError):
    """A fed value does not match the variable it feeds."""


class _Compiled:
    __slots__ = ("steps", "block", "head", "tail")

    def __init__(self, block, steps, tail_from: int | None = None):
        self.block = block
        self.steps = steps  # list of (kernel, ctx)
        # A run that may end early (deferred tails, above): the steps up to the last one
        # writing a fetched or observed variable, and the rest. tail None: runs whole.
        self.head, self.tail = (steps, None) if tail_from is None else (steps[:tail_from], steps[tail_from:])


class _Tail:
    """The deferred rest of one run (a main-thread run: only those defer)."""

    __slots__ = ("program", "scope", "steps")

    def __init__(self, program, scope, steps):
        self.program, self.scope, self.steps = program, scope, steps


class Executor:
    def __init__(self, place=None):
        if place is not None and not hasattr(place, "array_module"):
            raise TypeError(f"Executor needs a place (fluid.CPUPlace() or fluid.CUDAPlace(i)), got {place!r}")
        self.place = place if place is not None else CPUPlace()
        self._xp = None
        self._cache: dict = {}
        self._feed_cache: dict = {}  # id(block) -> (block, program version, {name: _FeedSlot})
        self.services: dict = {}
        self._close_hooks: list = []
        self._closed = False
        # Timing of kernels, filled when `collect_timing` is set (bench/local_train.py), by
        # `timing_clock` (time.thread_time counts this thread's CPU, not a loaded machine's wall).
        self.collect_timing = False
        self.timing_clock = time.perf_counter
        self.kernel_seconds = defaultdict(float)
        self._timed_total = 0.0  # every op's seconds so far (a sub-block's ops are subtracted from their op's)
        self._tail: _Tail | None = None  # the last run's deferred ops (main thread's runs only)
        self._tail_lock = threading.Lock()

    @property
    def xp(self):
        if self._xp is None:
            self._xp = self.place.array_module()
        return self._xp

    def service(self, name: str, op=None):
        """The runtime service `name` ("rpc", "pserver", "heter"); created on first use by
        the factory the runtime registered (psjob.foundation.hooks), unless one was set in `services`."""
        svc = self.services.get(name)
        if svc is None:
            try:
                factory = hooks.lookup(name)
            except LookupError:
                raise KeyError(f"no runtime service {name!r} registered on this executor") from None
            svc = self.services[name] = factory(self, op)
        return svc

    def add_close_hook(self, fn):
        self._close_hooks.append(fn)

    def close(self):
        """Release runtime resources; a trainer tells its pservers it completed."""
        if self._closed:
            return
        self.settle()
        self._closed = True
        hooks, self._close_hooks = self._close_hooks, []
        for fn in reversed(hooks):
            fn()

    # -- running ------------------------------------------------------------------------
    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed",
            fetch_var_name="fetch", scope=None, return_numpy=True, use_program_cache=False):
        if self._closed:
            raise RuntimeError("Executor.run after close(): create a new Executor")
        program = _unwrap(program)
        observers = _STEP_OBSERVERS.get(program) if _STEP_OBSERVERS else None
        if observers:
            t0 = time.perf_counter()
        scope = scope if scope is not None else core.current_scope()
        if not isinstance(scope, Scope):
            raise TypeError(f"scope must be a fluid Scope, got {type(scope).__name__}")
        if isinstance(fetch_list, (Variable, str)):
            fetch_list = [fetch_list]  # one target, not in a list: Paddle 1.8 fetches it as [target]
        feed = feed or {}
        if isinstance(feed, list) and len(feed) == 1 and isinstance(feed[0], dict):
            feed = feed[0]  # one place's feed, as paddle.io.DataLoader yields it (return_list=False)
        if not isinstance(feed, dict):
            raise TypeError(f"feed must be a dict of name → value, got {type(feed).__name__}")
        ahead = None
        on_main = threading.current_thread() is threading.main_thread()
        if self._tail is not None:
            tail = self._tail
            if tail.program is program and tail.scope is scope and on_main:
                try:
                    ahead = ahead_of_run(self, program, feed, issue=True)  # they travel while the tail runs
                except (TypeError, ValueError):
                    ahead = None  # a malformed feed, which _feed names below
            self.settle()
        core.settle_deferred()  # another executor's, on this thread
        block = program.global_block()
        self._set_scheduled_lr(program, scope)
        self._feed(block, feed, scope)
        fetch_names = [_fetch_name(f) for f in (fetch_list or [])]
        compiled = self._compile(program, block, scope, tuple(sorted(feed)), tuple(fetch_names))
        if compiled.tail is None or not on_main:
            self._run_steps(compiled.steps)  # other threads' runs (Hogwild's) run whole: one may end first
        else:
            if ahead is None:
                try:
                    ahead = ahead_of_run(self, program, feed, issue=False)
                except (TypeError, ValueError):  # ids the feed check let through as another dtype
                    ahead = CANNOT_ISSUE
            if ahead in (CANNOT_ISSUE, ALREADY_ISSUED):  # nothing to overlap, or pipelined already
                self._run_steps(compiled.steps)
            else:
                self._run_steps(compiled.head)
                self._tail = _Tail(program, scope, compiled.tail)
                core.defer(self.settle)
        fetched = [self._fetch(scope, n, return_numpy) for n in fetch_names]
        if observers:
            seconds = time.perf_counter() - t0
            for fn in observers:
                fn(self, program, feed, scope, seconds)
        return fetched

    def settle(self):
        """Run what the last run deferred (the module docstring), if anything."""
        with self._tail_lock:
            tail, self._tail = self._tail, None
        if tail is None:
            return
        core.undefer(self.settle)
        try:
            self._run_steps(tail.steps)
        except ExecutionError as exc:
            exc.add_note("(raised by the previous Executor.run's backward, which psjob runs at the start of "
                         "the next run or before the scope is read: see psjob.fluid.executor)")
            raise

    def train_from_dataset(self, program=None, dataset=None, scope=None, thread=0, debug=False,
                           fetch_list=None, fetch_info=None, print_period=100, fetch_handler=None):
        """Run `program` over every batch of `dataset` (fluid/dataset_trainer.py); thread > 1
        runs that many Hogwild threads over one program. Returns None, as Paddle does."""
        from psjob.fluid.dataset_trainer import run_dataset
        if fetch_handler is not None:
            raise NotImplementedError("train_from_dataset(fetch_handler=...) is not supported by psjob; "
                                      "use fetch_list with fetch_info and print_period")
        names = [_fetch_name(f) for f in (fetch_list or [])]
        self.settle()
        return run_dataset(self, _unwrap(program), dataset, scope, thread, names, fetch_info, print_period, debug)

    def infer_from_dataset(self, program=None, dataset=None, scope=None, thread=0, debug=False,
                           fetch_list=None, fetch_info=None, print_period=100, fetch_handler=None):
        """train_from_dataset that changes no parameter server: as Paddle's infer mode
        (its device workers skip the push ops), a trainer program runs without its
        `send` ops, so its gradients reach no pserver (dataset_trainer.infer_program)."""
        from psjob.fluid.dataset_trainer import infer_program
        return self.train_from_dataset(infer_program(_unwrap(program)), dataset, scope, thread, debug, fetch_list,
                                       fetch_info, print_period, fetch_handler)

    def run_block(self, program: Program, block_idx: int, scope: Scope):
        """Run one block of `program` (pserver optimize blocks, sub-blocks)."""
        block = program.block(block_idx)
        compiled = self._compile(program, block, scope, (), ())
        self._run_steps(compiled.steps)

    def _run_steps(self, steps: list):
        if self.collect_timing:
            return self._run_steps_timed(steps)
        for kernel, ctx in steps:
            try:
                kernel(ctx)
            except (ExecutionError, EOFException, KeyboardInterrupt):
                raise
            except Exception as exc:
                raise _op_error(ctx, exc) from exc

    def _run_steps_timed(self, steps: list):
        # One clock reading per op: each op's end is the next one's start (the loop's own
        # few instructions count to the op before), half the clock calls of a start/end pair.
        # A control-flow op's sub-block times its own ops: the op keeps only the rest.
        clock, seconds = self.timing_clock, self.kernel_seconds
        t0 = clock()
        for kernel, ctx in steps:
            inner = self._timed_total
            try:
                kernel(ctx)
            except (ExecutionError, EOFException, KeyboardInterrupt):
                raise  # as untimed: an inner op's error already names that op
            except Exception as exc:
                raise _op_error(ctx, exc) from exc
            t1 = clock()
            spent = t1 - t0 - (self._timed_total - inner)
            seconds[ctx.op_type] += spent
            self._timed_total += spent
            t0 = t1

    # -- compile ------------------------------------------------------------------------
    def _compile(self, program, block, scope, feed_names, fetch_names) -> _Compiled:
        key = (id(program), program._version, block.idx, id(scope), feed_names, fetch_names)
        compiled = self._cache.get(key)
        if compiled is not None:
            return compiled
        # programs rebuilt in a loop must not leak; one run of a program with control flow
        # compiles each of its blocks
        if len(self._cache) > max(64, 2 * program.num_blocks):
            self._cache.clear()
        # A local embedding table's lookups and pools run fused (embedding_fusion.py);
        # anything fetched is computed as written.
        view = hooks.registered(hooks.REMOTE_TABLE_VIEW)
        if view is not None:  # lookups of a table the pservers hold become prefetches
            block = view(program, block)
        ops = execution_ops(block, keep=fetch_names)
        producers = {}
        for i, op in enumerate(ops):
            for n in op.output_arg_names:
                producers.setdefault(n, i)
        available = set(scope.vars) | set(feed_names)
        steps = []
        for i, op in enumerate(ops):
            opdef = get_op_def(op.type)
            # A while lists the variables its body writes among its inputs too (as Paddle's);
            # the body's own ops check those it reads before writing.
            own = set(op.output_arg_names) if op.attr("sub_block") is not None else ()
            for slot, names in ({} if opdef.inputs_arrive_at_run_time else op.inputs).items():
                for n in names:
                    if n == EMPTY_VAR_NAME or n in available or n in own:
                        continue
                    later = producers.get(n)
                    if later is not None and later >= i:
                        raise GraphError(
                            f"op #{i} {op.type!r} reads {n!r} (input {slot}) which is only written "
                            f"later by op #{later} {ops[later].type!r}: the program has a cycle "
                            "or its ops are out of order")
                    raise GraphError(
                        f"op #{i} {op.type!r} reads {n!r} (input {slot}) but nothing provides it: "
                        + ("feed it" if _is_data(block, n) else
                           "it is not fed, not initialized in the scope (did you run the startup "
                           "program?) and no earlier op writes it"))
            available.update(op.output_arg_names)
            sub = op.attr("sub_block")
            if sub is not None:  # what a control-flow op's sub-block computes can be fetched
                available.update(_sub_block_outputs(sub))
            steps.append((opdef.kernel, KernelContext(op, self.xp, self.place, scope, self)))
        for n in fetch_names:
            if n not in available and _find_in_program(program, n) is None:
                raise GraphError(f"fetch target {n!r} is not a variable of the program")
            if n not in available:
                raise GraphError(f"fetch target {n!r} is never computed by this program and not in the scope")
        compiled = _Compiled(block, steps, _tail_from(ops, fetch_names, _OBSERVED_READS.get(program, ()))
                             if block.idx == 0 else None)
        self._cache[key] = compiled
        return compiled

    def _set_scheduled_lr(self, program, scope):
        """A paddle.optimizer.lr scheduler drives the rate: write its current value, as
        Paddle's Executor does before each run (the attribute keeps Paddle's spelling)."""
        scheduler = getattr(program, "lr_sheduler", None)
        if scheduler is not None and program._is_distributed:
            # The optimizer ops, and the rate they read, now run on the parameter servers.
            raise ExecutionError(
                f"a paddle.optimizer.lr.{type(scheduler).__name__} does not reach the parameter servers "
                "of a transpiled program: use a Fluid schedule (fluid.layers.exponential_decay, "
                "piecewise_decay, ...), which the transpiler moves to the pservers")
        if scheduler is not None and scheduler._var_name is not None:
            var = program.global_block()._find_var_recursive(scheduler._var_name)
            if var is not None:
                scope.vars[var.name] = self.xp.asarray([scheduler()], dtype=var.dtype)

    # -- feed / fetch -------------------------------------------------------------------
    def _feed(self, block, feed: dict, scope: Scope):
        xp = self.xp
        slots = self._feed_slots(block)
        checked = {}  # (id of a fed LoD, rows) -> its checked levels: slots sharing one LoD check it once
        for name, value in feed.items():
            slot = slots.get(name)
            if slot is None:
                var = block._find_var_recursive(name)
                if var is None:
                    raise FeedError(f"feed target {name!r} is not a variable of the program")
                slot = slots[name] = _FeedSlot(var)
            var = slot.var
            lod = None
            if type(value) is not np.ndarray:
                if isinstance(value, LoDTensor):
                    lod = value._scope.lods.get(value._name)
                    value = value._value()
                elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
                    value, lod = value
            if xp is np and type(value) is np.ndarray and slot.accepts(value):
                # A plain array of a dtype and shape this variable took before: no check,
                # only the copy (below).
                arr = value.copy()
            else:
                arr = _check_feed(var, value)
                if xp is not np:
                    arr = xp.asarray(arr)
                elif isinstance(value, np.ndarray) and np.may_share_memory(arr, value):
                    # Fed arrays are copied, as Paddle's feed does: an op that writes its
                    # variable in place (a fed persistable, increment) must not reach the caller.
                    arr = arr.copy()
                if (arr is not value and type(value) is np.ndarray and arr.dtype == value.dtype
                        and arr.shape == value.shape):
                    slot.accepted(value)  # checked: the next array of this dtype and shape skips the check
            scope.vars[name] = arr
            if lod is not None and len(lod):
                key = (id(lod), arr.shape[0])
                if key not in checked:
                    checked[key] = _check_lod(name, lod, arr.shape[0])
                scope.lods[name] = checked[key]
            else:
                scope.lods.pop(name, None)
                if var.lod_level > 0:
                    # One id per sequence unless told otherwise.
                    scope.lods[name] = [np.arange(arr.shape[0] + 1, dtype=np.int64)]

    def _feed_slots(self, block) -> dict:
        """name -> _FeedSlot of the variables fed to `block` so far; rebuilt when its program changes."""
        program = block.program
        entry = self._feed_cache.get(id(block))
        if entry is None or entry[0] is not block or entry[1] != program._version:
            if len(self._feed_cache) > 64:  # blocks rebuilt in a loop must not leak
                self._feed_cache.clear()
            entry = self._feed_cache[id(block)] = (block, program._version, {})
        return entry[2]

    def _fetch(self, scope, name, return_numpy):
        try:
            value = scope.vars[name]
        except KeyError:
            raise GraphError(f"fetch target {name!r} was not computed") from None
        if isinstance(value, list):  # a tensor array: a list of arrays, as Paddle fetches one
            value = [v.copy() if isinstance(v, np.ndarray) else to_numpy(v) for v in value]
        elif isinstance(value, SelectedRows):
            # A snapshot too: a sent gradient's arrays may be queued unsnapshotted
            # (dist_ops.sends_owned), and the caller may write what it fetched.
            value = SelectedRows(value.rows.copy(), value.values.copy(), value.height, unique=value.unique)
        elif not return_numpy:
            value = value.copy() if hasattr(value, "copy") else value  # a LoDTensor keeps its device
        else:
            # A snapshot: optimizer ops update persistable arrays in place on the next run.
            value = value.copy() if isinstance(value, np.ndarray) else to_numpy(value)
            if value.dtype.char == "l" and np.dtype(np.longlong).itemsize == 8:
                # Paddle hands int64 out as C's long long ('q'; numpy prints dtype=int64), the same
                # type as numpy's int64 ('l') but for its repr: fetched ids print as Paddle's do.
                value = value.view(np.longlong)
        if return_numpy:
            return value
        # A LoDTensor of its own, as Paddle's fetch list holds: the next run changes nothing
        # in what this run fetched (the scope's own tensor: scope.find_var(name).get_tensor()).
        fetched = LoDTensor()
        fetched._scope.vars[fetched._name] = value
        if name in scope.lods:
            fetched._scope.lods[fetched._name] = [np.array(level, copy=True) for level in scope.lods[name]]
        return fetched


def _tail_from(ops, fetch_names, observed) -> int | None:
    """Where a run of `ops` may stop until the next run (the module docstring): after
    the last op writing a fetched or observed variable, when what follows sends
    something and touches nothing past the scope and the communicator; else None."""
    wanted = set(fetch_names) | set(observed)
    start = 0
    for i, op in enumerate(ops):
        if wanted.intersection(op.output_arg_names):
            start = i + 1
    tail = ops[start:]
    if not any(op.type == "send" for op in tail):
        return None
    if any(op.type in _NOT_DEFERRED or op.attr("sub_block") is not None for op in tail):
        return None
    if not any(op.type == "prefetch" for op in ops[:start]):
        return None  # no embedding prefetch to send ahead: nothing would overlap
    return start


def _unwrap(program):
    from psjob.fluid.framework import default_main_program
    if program is None:
        return default_main_program()
    inner = getattr(program, "_program", None)  # CompiledProgram
    if inner is not None:
        program = inner
    if not isinstance(program, Program):
        raise TypeError(f"Executor.run needs a fluid Program or CompiledProgram, got {type(program).__name__}")
    return program


def _sub_block_outputs(block) -> set[str]:
    names: set[str] = set()
    for op in block.ops:
        names.update(op.output_arg_names)
        sub = op.attr("sub_block")
        if sub is not None:
            names |= _sub_block_outputs(sub)
    return names


def _find_in_program(program, name):
    """The variable `name` of any block (a control-flow sub-block's too)."""
    for block in program.blocks:
        if name in block.vars:
            return block.vars[name]
    return None


def _fetch_name(f) -> str:
    if isinstance(f, Variable):
        return f.name
    if isinstance(f, str):
        return f
    raise TypeError(f"fetch_list items must be Variables or names, got {type(f).__name__}")


def _is_data(block, name) -> bool:
    var = block._find_var_recursive(name)
    return var is not None and var.is_data


class _FeedSlot:
    """A fed variable and the (dtype, shape) pairs of plain arrays it was checked against
    (_check_feed): the same pair fed again passes without the check. A pair is kept while
    the variable's declared dtype and shape stay the objects it was checked against."""

    __slots__ = ("var", "dtype", "shape", "ok")

    def __init__(self, var):
        self.var = var
        self.dtype, self.shape = var.dtype, var.shape
        self.ok: set = set()

    def accepts(self, value) -> bool:
        var = self.var
        if var.dtype is not self.dtype or var.shape is not self.shape:
            self.dtype, self.shape = var.dtype, var.shape
            self.ok.clear()
            return False
        return (value.dtype, value.shape) in self.ok

    def accepted(self, value):
        if len(self.ok) < 64:  # a handful of batch sizes; unbounded shapes are checked each time
            self.ok.add((value.dtype, value.shape))


def _check_feed(var, value) -> np.ndarray:
    arr = to_numpy(value) if not isinstance(value, (list, int, float)) else np.asarray(value)
    want = np.dtype(var.dtype)
    if arr.dtype != want:
        if arr.dtype.kind == "f" and want.kind in "iu":
            raise FeedError(f"feed {var.name!r}: expected {want.name}, got {arr.dtype.name} "
                            "(float values for an integer input)")
        if arr.dtype.kind not in "biuf":
            raise FeedError(f"feed {var.name!r}: expected {want.name}, got {arr.dtype}")
        arr = arr.astype(want)
    shape = var.shape
    if shape:
        # Paddle's feed check (core.diff_tensor_shape, 1.8 and 2.x alike) compares only the fed
        # dimensions with the declared leading ones, so [N] feeds a [-1, 1] label and keeps its
        # shape [N]; more dimensions than declared, or none, are refused.
        if not 1 <= arr.ndim <= len(shape):
            raise FeedError(f"feed {var.name!r}: expected {len(shape)}-D data shaped {list(shape)}, "
                            f"got shape {list(arr.shape)}")
        for i, (want_d, got_d) in enumerate(zip(shape, arr.shape)):
            if want_d >= 0 and want_d != got_d:
                raise FeedError(f"feed {var.name!r}: dimension {i} must be {want_d} "
                                f"(declared shape {list(shape)}), got shape {list(arr.shape)}")
    return arr


# (offsets' bytes, rows) -> the checked level of a one-level LoD: a batch's slots and the
# batches after it mostly repeat a few layouts (one id per row, a fixed count per row).
_CHECKED_LODS: dict = {}


def _check_lod(name, lod, rows):
    """LoD levels as int64 arrays; offsets must start at 0, not decrease, end at `rows`."""
    levels = [level if type(level) is np.ndarray and level.dtype == np.int64 else
              np.asarray(level, dtype=np.int64) for level in lod]
    last = levels[-1]
    key = None
    if len(levels) == 1 and last.ndim == 1:
        key = (last.tobytes(), rows)
        known = _CHECKED_LODS.get(key)
        if known is not None:
            return known
    if (last.ndim != 1 or last.size == 0 or last[0] != 0 or last[-1] != rows
            or (last.size > 1 and bool(np.logical_or.reduce(np.less(last[1:], last[:-1]))))):
        raise FeedError(f"feed {name!r}: LoD offsets {last[:8].tolist()}... must start at 0, never "
                        f"decrease and end at the number of rows ({rows})")
    if key is not None:
        if len(_CHECKED_LODS) > 256:
            _CHECKED_LODS.clear()
        shared = last.copy()  # the caller may refill the array it fed
        shared.flags.writeable = False  # shared by every feed of this layout
        _CHECKED_LODS[key] = levels = [shared]
    return levels


def _op_error(ctx: KernelContext, exc: Exception) -> ExecutionError:
    op = ctx.op
    shapes = []
    for slot, names in op.inputs.items():
        for n in names:
            v = ctx.vals.get(n)
            desc = getattr(v, "shape", type(v).__name__ if v is not None else "missing")
            shapes.append(f"{slot}={n}{list(desc) if isinstance(desc, tuple) else desc}")
    where = (f"op #{op.block.ops.index(op)} {op.type!r}" if op in op.block.ops else
             f"op {op.type!r} ({op.attrs.get('fused_from', 'not in the program')})")
    return ExecutionError(f"{where} failed: {type(exc).__name__}: {exc} "
                          f"[inputs: {', '.join(shapes)}]")


def collective_program(program, num_trainers, strategy=None):
    """The program to run for `num_trainers` (NCCL2-mode collective training when > 1 outside a
    parameter-server trainer program): a copy with every parameter gradient all-reduced among
    the trainers after backward (transpiler/collective.py), scaled as BuildStrategy's
    gradient_scale_strategy says (CoeffNumDevice, Paddle's default: the mean over trainers)."""
    from psjob.fluid.transpiler.collective import insert_grad_allreduce
    n = 1 if num_trainers is None else int(num_trainers)
    if n <= 1 or getattr(program, "_is_distributed", False):
        return program
    scale_strategy = int(getattr(strategy, "gradient_scale_strategy", 0) or 0)
    copy = program.clone()
    return insert_grad_allreduce(copy, n, scale=scale_strategy == 0)


def _num_trainers(explicit, strategy):
    """num_trainers from the argument or the BuildStrategy; they must agree when both say > 1."""
    a, b = int(explicit or 1), int(getattr(strategy, "num_trainers", 1) or 1)
    if a > 1 and b > 1 and a != b:
        raise ValueError(f"num_trainers={a} but BuildStrategy.num_trainers={b}")
    return max(a, b)


class CompiledProgram:
    """Fluid's CompiledProgram. psjob runs one device per process, so data
    parallelism across devices is a no-op here; across trainers
    (BuildStrategy.num_trainers > 1) it is collective training: the gradients
    are all-reduced among the trainers (docs/user/collective.md)."""

    def __init__(self, program_or_graph, build_strategy=None):
        if not isinstance(program_or_graph, Program):
            raise TypeError("CompiledProgram needs a fluid Program")
        self._program = program_or_graph
        self._build_strategy = build_strategy

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None,
                           share_vars_from=None, places=None):
        strategy = build_strategy if build_strategy is not None else self._build_strategy
        self._program = collective_program(self._program, _num_trainers(1, strategy), strategy)
        return self


class ParallelExecutor:
    """Fluid's ParallelExecutor on one device: runs the main program with an Executor.

    num_trainers > 1 is collective (NCCL2-mode) training: it runs a copy of the program
    whose gradients are all-reduced among the trainers (collective_program); a transpiled
    parameter-server trainer program's trainers already meet through the pservers."""

    def __init__(self, use_cuda=False, loss_name=None, main_program=None, share_vars_from=None,
                 exec_strategy=None, build_strategy=None, num_trainers=1, trainer_id=0, scope=None):
        from psjob.fluid.core import CUDAPlace
        from psjob.fluid.framework import default_main_program
        program = main_program or default_main_program()
        self._program = collective_program(program, _num_trainers(num_trainers, build_strategy),
                                           build_strategy)
        self._exe = Executor(CUDAPlace(0) if use_cuda else CPUPlace())
        self._scope = scope or (share_vars_from._scope if share_vars_from else core.global_scope())

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        return self._exe.run(self._program, feed=feed or feed_dict, fetch_list=fetch_list,
                             scope=self._scope, return_numpy=return_numpy)
