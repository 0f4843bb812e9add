"""Per-table configuration: frozen dataclasses, validated when built.

A pserver builds one `SparseTable` per `TableConfig`; the same config must be
given to every pserver holding a shard of the table (and to a table that
imports a checkpoint of it), because the seed, the initializer and the
optimizer state layout are part of what makes shards interchangeable.
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import types
from collections.abc import Mapping

from psjob.foundation.kernels import optimizers as _kernels
from psjob.foundation.tables.accessor import AccessorConfig

INITIALIZERS = ("uniform", "normal", "truncated_normal", "constant")
# lars_momentum and lamb need the norm of the whole parameter, which a sparse table
# never has in one place; every other Fluid optimizer is elementwise per row.
OPTIMIZERS = tuple(name for name in _kernels.DENSE_UPDATES if name not in _kernels.WHOLE_PARAMETER)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _finite(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


@dataclasses.dataclass(frozen=True)
class InitializerConfig:
    """How a row is created: a function of (table seed, id, column) only.

    ``uniform`` draws from [low, high); ``normal`` from N(mean, std²);
    ``truncated_normal`` from N(mean, std²) redrawn beyond 2 std (Fluid's
    TruncatedNormal); ``constant`` fills ``value``.
    """
    kind: str = "uniform"
    low: float = -0.05
    high: float = 0.05
    mean: float = 0.0
    std: float = 0.01
    value: float = 0.0

    def __post_init__(self) -> None:
        _require(self.kind in INITIALIZERS,
                 f"initializer kind must be one of {INITIALIZERS}, got {self.kind!r}")
        for name in ("low", "high", "mean", "std", "value"):
            _finite(f"initializer {name}", getattr(self, name))
        _require(self.low < self.high, f"initializer low ({self.low}) must be below high ({self.high})")
        _require(self.std > 0, f"initializer std must be positive, got {self.std}")


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """The per-row optimizer: a name from `OPTIMIZERS` and its hyperparameters.

    ``hyper`` holds the keyword arguments of ``psjob.foundation.kernels.optimizers.<name>_update``
    other than ``lr`` (e.g. ``{"epsilon": 1e-6}`` for adagrad, ``beta1``/``beta2``/
    ``epsilon`` for adam); missing ones take the kernel's defaults. ``lr`` is the
    default learning rate; `SparseTable.push` may override it per call.
    """
    name: str = "sgd"
    lr: float = 0.01
    hyper: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _require(self.name in OPTIMIZERS, f"optimizer must be one of {OPTIMIZERS}, got {self.name!r}")
        _finite("optimizer lr", self.lr)
        accepted = self.hyperparameter_names()
        for key, value in dict(self.hyper).items():
            _require(key in accepted, f"optimizer {self.name!r} has no hyperparameter {key!r};"
                                      f" it accepts {sorted(accepted)}")
            if not isinstance(value, bool):
                _finite(f"optimizer {key}", value)
        missing = sorted(self.required_hyperparameters() - set(self.hyper))
        _require(not missing, f"optimizer {self.name!r} needs hyperparameters {missing} in hyper")
        object.__setattr__(self, "hyper", types.MappingProxyType(dict(self.hyper)))

    def hyperparameter_names(self) -> frozenset[str]:
        params = inspect.signature(_kernels.DENSE_UPDATES[self.name]).parameters.values()
        return frozenset(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name != "lr")

    def required_hyperparameters(self) -> frozenset[str]:
        params = inspect.signature(_kernels.DENSE_UPDATES[self.name]).parameters
        return frozenset(n for n in self.hyperparameter_names() if params[n].default is inspect.Parameter.empty)

    def resolved_hyper(self) -> dict:
        """Every hyperparameter with the kernel's default filled in."""
        params = inspect.signature(_kernels.DENSE_UPDATES[self.name]).parameters
        out = {name: params[name].default for name in self.hyperparameter_names()
               if params[name].default is not inspect.Parameter.empty}
        out.update(self.hyper)
        return out


@dataclasses.dataclass(frozen=True)
class AdmissionConfig:
    """Which unseen ids get a row.

    An id is admitted when both hold: it has been looked up (with
    ``create=True``) at least ``min_count`` times while absent, counted in a
    count-min sketch of ``sketch_depth`` × ``sketch_width`` uint32 counters
    (bounded memory; collisions can only admit an id early, never late); and
    a uniform number drawn from (table seed, id) is below ``probability`` (so
    the same ids are admitted on every pserver and in every run).
    """
    min_count: int = 1
    probability: float = 1.0
    sketch_width: int = 1 << 20
    sketch_depth: int = 4

    def __post_init__(self) -> None:
        _require(isinstance(self.min_count, int) and 1 <= self.min_count < 2**31,
                 f"admission min_count must be an int in [1, 2**31), got {self.min_count!r}")
        _finite("admission probability", self.probability)
        _require(0.0 < self.probability <= 1.0,
                 f"admission probability must be in (0, 1], got {self.probability}")
        _require(isinstance(self.sketch_width, int) and self.sketch_width >= 64,
                 f"admission sketch_width must be an int >= 64, got {self.sketch_width!r}")
        _require(isinstance(self.sketch_depth, int) and 1 <= self.sketch_depth <= 8,
                 f"admission sketch_depth must be an int in [1, 8], got {self.sketch_depth!r}")

    @property
    def counts(self) -> bool:
        return self.min_count > 1


@dataclasses.dataclass(frozen=True)
class EvictionConfig:
    """Which rows `SparseTable.evict` removes (either rule; None disables it).

    Mirrors Paddle's CtrCommonAccessor::Shrink with steps for days: first
    show and click decay by ``show_click_decay_rate`` per step elapsed since
    the previous evict, then a row goes when it was not pushed for more than
    ``delete_after_unseen_steps`` steps, or when its score
    ``(show - click) * nonclk_coeff + click * click_coeff`` is below
    ``delete_threshold``.
    """
    delete_after_unseen_steps: int | None = None
    delete_threshold: float | None = None
    nonclk_coeff: float = 0.1
    click_coeff: float = 1.0
    show_click_decay_rate: float = 1.0

    def __post_init__(self) -> None:
        steps = self.delete_after_unseen_steps
        _require(steps is None or (isinstance(steps, int) and steps >= 0),
                 f"eviction delete_after_unseen_steps must be None or an int >= 0, got {steps!r}")
        if self.delete_threshold is not None:
            _finite("eviction delete_threshold", self.delete_threshold)
        _finite("eviction nonclk_coeff", self.nonclk_coeff)
        _finite("eviction click_coeff", self.click_coeff)
        _finite("eviction show_click_decay_rate", self.show_click_decay_rate)
        _require(0.0 < self.show_click_decay_rate <= 1.0,
                 f"eviction show_click_decay_rate must be in (0, 1], got {self.show_click_decay_rate}")

    @property
    def tracks_show_click(self) -> bool:
        return self.delete_threshold is not None


@dataclasses.dataclass(frozen=True)
class TableConfig:
    """A sparse embedding table: rows of ``dim`` float32 keyed by int64 id.

    ``seed`` (mixed with ``name``) keys the initializer and the admission
    draw, so two tables with the same seed still get different rows.
    ``initial_capacity`` only sizes the first allocation; storage grows.
    ``accessor`` (Paddle's sparse-table accessor, foundation/tables/accessor.py), when
    given, replaces ``initializer`` and ``optimizer``: it creates and trains the rows.
    """
    name: str
    dim: int
    seed: int = 0
    initializer: InitializerConfig = InitializerConfig()
    optimizer: OptimizerConfig = OptimizerConfig()
    admission: AdmissionConfig = AdmissionConfig()
    eviction: EvictionConfig = EvictionConfig()
    initial_capacity: int = 1024
    accessor: AccessorConfig | None = None

    def __post_init__(self) -> None:
        _require(isinstance(self.name, str) and self.name != "",
                 f"table name must be a non-empty string, got {self.name!r}")
        _require(isinstance(self.dim, int) and not isinstance(self.dim, bool) and self.dim >= 1,
                 f"table dim must be a positive int, got {self.dim!r}")
        _require(isinstance(self.seed, int) and 0 <= self.seed < 2**64,
                 f"table seed must be an int in [0, 2**64), got {self.seed!r}")
        _require(isinstance(self.initial_capacity, int) and self.initial_capacity >= 1,
                 f"table initial_capacity must be a positive int, got {self.initial_capacity!r}")
        for field, kind in (("initializer", InitializerConfig), ("optimizer", OptimizerConfig),
                            ("admission", AdmissionConfig), ("eviction", EvictionConfig)):
            _require(isinstance(getattr(self, field), kind),
                     f"table {field} must be a {kind.__name__}, got {type(getattr(self, field)).__name__}")
        if self.accessor is not None:
            _require(isinstance(self.accessor, AccessorConfig),
                     f"table accessor must be an AccessorConfig, got {type(self.accessor).__name__}")
            _require(self.accessor.dim == self.dim,
                     f"table {self.name!r}: its accessor trains 1 + embedx_dim = {self.accessor.dim} columns,"
                     f" the table has {self.dim}")
