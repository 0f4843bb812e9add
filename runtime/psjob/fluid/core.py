"""Run-time values: places, the Scope, LoD tensors and SelectedRows.

The Scope maps variable names to values. A value is an array of the place's
array module (numpy on CPUPlace, cupy on CUDAPlace) or a SelectedRows; the
level-of-detail offsets of sequence inputs live beside it in `Scope.lods`, so
kernels that ignore sequences see plain arrays.

Fluid users read and write parameters through views:
`scope.find_var(name).get_tensor()` → LoDTensor, `np.array(tensor)`,
`tensor.set(array, place)`. Views hold the scope and the name, never a copy,
so a set() through a view is visible to the next Executor.run.
"""
from __future__ import annotations

import contextlib
import enum
import importlib
import threading

import numpy as np

from psjob.fluid import tensor_text


class PlaceError(RuntimeError):
    pass


class EOFException(Exception):
    """A non-iterable py_reader / DataLoader ran out of batches: `exe.run` (and
    `ParallelExecutor.run`) raise it; catch it, call `reader.reset()`, start the next pass."""


class CPUPlace:
    def array_module(self):
        return np

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __hash__(self):
        return hash("cpu")

    def __repr__(self):
        return "CPUPlace"


class CUDAPlace:
    def __init__(self, device_id: int = 0):
        self.device_id = int(device_id)

    def array_module(self):
        try:
            cupy = importlib.import_module("cupy")
            if cupy.cuda.runtime.getDeviceCount() <= self.device_id:
                raise PlaceError(f"CUDAPlace({self.device_id}): only "
                                 f"{cupy.cuda.runtime.getDeviceCount()} GPU(s) visible")
        except ImportError as exc:
            raise PlaceError(
                f"CUDAPlace({self.device_id}) needs cupy and an NVIDIA GPU: "
                "install psjob[cuda] on a GPU machine, or use fluid.CPUPlace()") from exc
        except PlaceError:
            raise
        except Exception as exc:  # cupy present but no driver/device
            raise PlaceError(f"CUDAPlace({self.device_id}) is not usable here: {exc}") from exc
        cupy.cuda.Device(self.device_id).use()
        return cupy

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(("cuda", self.device_id))

    def __repr__(self):
        return f"CUDAPlace({self.device_id})"


class CUDAPinnedPlace(CPUPlace):
    def __repr__(self):
        return "CUDAPinnedPlace"


class VarDesc:
    """Fluid's `core.VarDesc.VarType`, which programs pass as a dtype
    (`layers.cast(x, core.VarDesc.VarType.INT64)`) and compare with `Variable.dtype`.
    psjob's dtypes are numpy's names, so the data types' members are those names
    (`VarType.FP32 == "float32" == x.dtype`) and work wherever a dtype is taken;
    the variable kinds are psjob's variable types' names."""

    class VarType(str, enum.Enum):
        BOOL = "bool"
        INT8 = "int8"
        UINT8 = "uint8"
        INT16 = "int16"
        INT32 = "int32"
        INT64 = "int64"
        FP16 = "float16"
        FP32 = "float32"
        FP64 = "float64"
        LOD_TENSOR = "LOD_TENSOR"
        SELECTED_ROWS = "SELECTED_ROWS"
        LOD_TENSOR_ARRAY = "LOD_TENSOR_ARRAY"
        FEED_MINIBATCH = "FEED_MINIBATCH"
        FETCH_LIST = "FETCH_LIST"
        STEP_SCOPES = "STEP_SCOPES"
        LOD_RANK_TABLE = "LOD_RANK_TABLE"
        PLACE_LIST = "PLACE_LIST"
        READER = "READER"
        RAW = "RAW"

        def __str__(self):  # as Paddle prints it; the value is what a dtype reads
            return f"VarType.{self.name}"

        __hash__ = str.__hash__  # equal to its name string, so hashed as it


def cpu_places(device_count=None) -> list:
    """The places a loader feeds: one CPUPlace, as psjob runs one device per process
    (Paddle gives CPU_NUM of them); device_count may only ask for that one."""
    if device_count not in (None, 1):
        raise ValueError(f"cpu_places({device_count}): psjob runs one device per process, so one "
                         "CPUPlace; run more trainer processes instead")
    return [CPUPlace()]


def cuda_places(device_ids=None) -> list:
    """CUDAPlace(i) for each id asked (default: GPU 0); one per process in psjob."""
    ids = [0] if device_ids is None else list(device_ids)
    if len(ids) != 1:
        raise ValueError(f"cuda_places({device_ids}): psjob runs one device per process; "
                         "give one id (or none for GPU 0)")
    return [CUDAPlace(ids[0])]


def is_compiled_with_cuda() -> bool:
    try:
        CUDAPlace(0).array_module()
        return True
    except PlaceError:
        return False


def to_numpy(value) -> np.ndarray:
    """Host copy of an array of any array module (cupy arrays have .get())."""
    if isinstance(value, np.ndarray):
        # a subclass (psjob.io's EagerTensor) as the plain array it views
        return value if type(value) is np.ndarray else value.view(np.ndarray)
    get = getattr(value, "get", None)
    return get() if callable(get) else np.asarray(value)


def scatter_add(xp, out, rows, values):
    """out[rows[i]] += values[i], duplicates accumulated (unbuffered)."""
    if xp is np:
        np.add.at(out, rows, values)
    else:
        importlib.import_module("cupyx").scatter_add(out, rows, values)


class SelectedRows:
    """A sparse gradient: `values[i]` is the row `rows[i]` of a [height, ...] tensor.

    Rows may repeat (two lookups of the same id in one batch); consumers that
    need unique rows merge them by summing. `unique=True` says the producer
    already did (the fused embedding ops): no row repeats, so there is nothing
    to merge.
    """

    __slots__ = ("rows", "values", "height", "unique")

    def __init__(self, rows, values, height: int, unique: bool = False):
        self.rows = rows
        self.values = values
        self.height = int(height)
        self.unique = bool(unique)

    def to_dense(self, xp=np):
        out = xp.zeros((self.height,) + tuple(self.values.shape[1:]), dtype=self.values.dtype)
        if len(self.rows):
            scatter_add(xp, out, self.rows, self.values)
        return out

    def get_tensor(self):
        return self.values

    def __repr__(self):
        return f"SelectedRows(height={self.height}, rows={len(self.rows)}, dim={self.values.shape[1:]})"


class LoDTensor:
    """A view of one scope slot (or a detached value when fed by the user)."""

    def __init__(self, scope: Scope | None = None, name: str | None = None):
        self._scope = scope if scope is not None else Scope()
        self._name = name if name is not None else "@detached@"

    # -- Fluid API ---------------------------------------------------------------
    def set(self, array, place=None):
        # A copy, as Paddle's: the scope's arrays are updated in place by optimizer
        # ops, which must never rewrite the caller's array.
        xp = (place or CPUPlace()).array_module()
        settle_deferred()
        self._scope.vars[self._name] = xp.array(array, copy=True)

    def set_lod(self, lod):
        settle_deferred()
        self._scope.lods[self._name] = [np.asarray(level, dtype=np.int64) for level in lod]

    def set_recursive_sequence_lengths(self, lengths):
        lod = []
        for level in lengths:
            lod.append([0] + list(np.cumsum(level, dtype=np.int64).tolist()))
        self.set_lod(lod)

    def lod(self):
        settle_deferred()
        return [np.asarray(level).tolist() for level in self._scope.lods.get(self._name, [])]

    def recursive_sequence_lengths(self):
        return [list(np.diff(level).tolist()) for level in self.lod()]

    def shape(self):
        return list(self._value().shape)

    _get_dims = shape  # Paddle's private spelling, which PaddleRec's helpers call

    def _get_float_element(self, index):
        """Element `index` of the flattened tensor as a Python float (Paddle's private
        accessor, which PaddlePaddle/models' Fluid 1.x examples call on fetched results)."""
        flat = to_numpy(self._value()).reshape(-1)
        if not 0 <= index < flat.size:
            raise IndexError(f"_get_float_element: index {index} is out of range for {flat.size} elements")
        return float(flat[index])

    def _value(self):
        settle_deferred()
        try:
            value = self._scope.vars[self._name]
        except KeyError:
            raise KeyError(f"variable {self._name!r} holds no value yet (run the startup program?)") from None
        if isinstance(value, SelectedRows):
            return value.values
        return value

    def __array__(self, dtype=None, copy=None):
        arr = to_numpy(self._value())
        if dtype is not None:
            return arr.astype(dtype)
        # Optimizer ops update parameters in place: hand out a snapshot
        # unless the caller explicitly asked for no copy.
        return arr if copy is False else arr.copy()

    def __repr__(self):
        return f"LoDTensor({self._name}, shape={self.shape()}, lod={self.lod()})"

    def __str__(self):
        """Paddle's text of the tensor (lod, shape, layout, place, dtype, data), as print() of a
        fetched tensor shows it there."""
        value = self._value()
        place = CUDAPlace(getattr(value.device, "id", 0)) if not isinstance(value, np.ndarray) \
            and hasattr(value, "device") else CPUPlace()
        return tensor_text.tensor_text(to_numpy(value), self.lod(), place)


def create_lod_tensor(data, recursive_seq_lens, place=None) -> LoDTensor:
    """A detached LoDTensor for feeding, as fluid.create_lod_tensor builds."""
    t = LoDTensor()
    t.set(np.asarray(data), place)
    t.set_recursive_sequence_lengths(recursive_seq_lens)
    return t


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high) -> LoDTensor:
    """Fluid 1.8's test helper: an int64 LoDTensor of sum(last level's lengths) rows shaped
    base_shape, drawn uniformly from [low, high] (both ends included, as Paddle's
    np.random.random_integers)."""
    if not isinstance(base_shape, list):
        raise TypeError(f"create_random_int_lodtensor: base_shape must be a list, got {base_shape!r}")
    if high < low:
        raise ValueError(f"create_random_int_lodtensor: high ({high}) is below low ({low})")
    rows = sum(recursive_seq_lens[-1])
    data = np.random.randint(low, high + 1, size=[rows] + base_shape).astype("int64")
    return create_lod_tensor(data, recursive_seq_lens, place)


class LoDTensorArray(list):
    """Fluid's LoDTensorArray: a list of LoDTensors (what a tensor-array variable holds)."""

    def append(self, tensor) -> None:
        if not isinstance(tensor, LoDTensor):
            raise TypeError(f"LoDTensorArray holds LoDTensors, got {type(tensor).__name__}")
        super().append(tensor)


class ScopeVar:
    """What `scope.find_var(name)` returns."""

    def __init__(self, scope: Scope, name: str):
        self._scope, self._name = scope, name

    def get_tensor(self) -> LoDTensor:
        return LoDTensor(self._scope, self._name)

    def get_selected_rows(self) -> SelectedRows:
        settle_deferred()
        value = self._scope.vars.get(self._name)
        if not isinstance(value, SelectedRows):
            raise TypeError(f"variable {self._name!r} does not hold SelectedRows")
        return value

    def is_initialized(self) -> bool:
        settle_deferred()
        return self._name in self._scope.vars


class Scope:
    """Name → value store shared by successive Executor.run calls. Its Paddle methods
    (and global_scope(), LoDTensor's reads and writes) first finish what an executor
    deferred on this thread (`defer`): the user sees the scope op-by-op execution leaves."""

    def __init__(self):
        self.vars: dict[str, object] = {}
        self.lods: dict[str, list] = {}

    def var(self, name: str) -> ScopeVar:
        settle_deferred()
        return ScopeVar(self, name)

    def find_var(self, name: str) -> ScopeVar | None:
        settle_deferred()
        return ScopeVar(self, name) if name in self.vars else None

    def erase(self, names):
        settle_deferred()
        for n in names:
            self.vars.pop(n, None)
            self.lods.pop(n, None)

    def local_var_names(self):
        settle_deferred()
        return list(self.vars)

    def new_scope(self) -> Scope:
        return Scope()


_global_scope = Scope()


def global_scope() -> Scope:
    settle_deferred()
    return _global_scope


def current_scope() -> Scope:
    """global_scope() for the executor itself, which settles its own deferred work when
    it is due (a run of the same program first sends the next batch's prefetches)."""
    return _global_scope


# Work an executor finished its run without (psjob.fluid.executor: an async step's
# backward and sends, run at the start of the next run so that the next batch's
# embedding prefetches travel meanwhile), by thread: thread id -> settle functions.
# Reading or writing a scope from outside a run (above), fleet's calls and a run of
# another program settle it first. Another thread's reads settle nothing: they could
# have come mid-step anyway.
_deferred: dict[int, list] = {}


def defer(settle) -> None:
    """Register `settle()`, to be called (once) before this thread next touches a scope."""
    _deferred.setdefault(threading.get_ident(), []).append(settle)


def undefer(settle) -> None:
    """Forget `settle` (its owner ran the work itself)."""
    ident = threading.get_ident()
    pending = _deferred.get(ident)
    if pending and settle in pending:
        pending.remove(settle)
        if not pending:
            _deferred.pop(ident, None)


def settle_deferred() -> None:
    """Run what this thread's executors deferred."""
    if not _deferred:  # the common case: one dict test
        return
    ident = threading.get_ident()
    pending = _deferred.pop(ident, None)
    while pending:
        settle = pending.pop(0)
        try:
            settle()
        except BaseException:
            if pending:
                _deferred.setdefault(ident, []).extend(pending)
            raise


@contextlib.contextmanager
def scope_guard(scope: Scope):
    global _global_scope
    if not isinstance(scope, Scope):
        raise TypeError(f"scope_guard needs a Scope, got {type(scope).__name__}")
    old, _global_scope = _global_scope, scope
    try:
        yield
    finally:
        _global_scope = old
