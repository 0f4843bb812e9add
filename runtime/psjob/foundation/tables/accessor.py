"""Paddle's sparse-table accessor: how a parameter server's MemorySparseTable trains a row.

Paddle 2.x/3.x (`paddle.distributed.fleet.DistributedStrategy.sparse_table_configs`,
the ``TableAccessorParameter`` of Paddle's ``the_one_ps.proto``) configures a sparse
table by an accessor (``SparseAccessor``, ``CtrCommonAccessor``) and two SGD rules: the
``embed`` rule trains a row's first column, the ``embedx`` rule the other
``embedx_dim`` columns. This module is that configuration (`AccessorConfig`, built from
Paddle's flat ``table_parameters.<table>.accessor...`` keys by `parse_table_config` and
`resolve_accessor`) and the update (`AccessorUpdate`), written from Paddle's documented
semantics (Paddle's "Parameter Server" guide and the ``SparseCommonSGDRuleParameter``,
``CtrAccessorParameter`` messages) and checked against Paddle 3.0.0's pservers
(tests/unit/test_sparse_sgd_rules.py):

* a push carries, per id, the summed gradient of its occurrences and its show (the
  occurrences) and click counts; show and click accumulate on the row;
* ``SparseNaiveSGDRule``: ``w -= lr * g``;
* ``SparseAdaGradSGDRule``: ``g' = g / show``; ``w -= lr * g' * sqrt(g0 / (g0 + g2sum))``,
  then ``g2sum += mean(g'^2)``: one g2sum per rule and row (the mean over its columns);
* ``StdAdaGradSGDRule``: the same with one g2sum per column;
* ``SparseAdamSGDRule``: Adam on the summed gradient (no division by show) with
  per-row beta powers that start at beta1/beta2;
* every rule clips the weights to ``weight_bounds`` after each update and at creation;
* a new row's embed weight is 0 (``zero_init``, Paddle's default when embedx_dim > 0),
  else uniform in ``[-initial_range, initial_range]``; its embedx columns do not exist
  yet (they read as zeros). After a push leaves the row's score
  ``(show - click) * nonclk_coeff + click * click_coeff`` at or above
  ``embedx_threshold``, the embedx columns are created, uniform in
  ``[-initial_range, initial_range]`` of the embedx rule, and from the next push on the
  embedx rule trains them (the push that creates them does not);
* `shrink` (Paddle's ``fleet.shrink()``): show and click decay by
  ``show_click_decay_rate``, then a row goes when its score is below
  ``delete_threshold`` or it was unseen for more than ``delete_after_unseen_days``
  days. A push makes a row seen (0 days); psjob counts a day per shrink (PaddleRec's
  online trainer shrinks once a day), where Paddle counts days by its day-end saves.

Draws are a function of (table seed, id, column), as every psjob table's, not Paddle's
thread-local random engine: only initial_range = 0 reproduces Paddle's values exactly.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from psjob.foundation.tables.storage import Column

SGD_RULES = ("SparseNaiveSGDRule", "SparseAdaGradSGDRule", "StdAdaGradSGDRule", "SparseAdamSGDRule")
ACCESSORS = ("SparseAccessor", "CtrCommonAccessor")
# The sub-message of SparseCommonSGDRuleParameter each rule reads.
RULE_PARAMS = {"SparseNaiveSGDRule": "naive", "SparseAdaGradSGDRule": "adagrad",
               "StdAdaGradSGDRule": "adagrad", "SparseAdamSGDRule": "adam"}
# Fields of each sub-message (the_one_ps.proto).
PARAM_FIELDS = {
    "naive": ("learning_rate", "initial_range", "weight_bounds"),
    "adagrad": ("learning_rate", "initial_range", "initial_g2sum", "weight_bounds"),
    "adam": ("learning_rate", "initial_range", "beta1_decay_rate", "beta2_decay_rate", "ada_epsilon",
             "weight_bounds"),
}
CTR_FIELDS = ("nonclk_coeff", "click_coeff", "base_threshold", "delta_threshold", "delta_keep_days",
              "show_click_decay_rate", "delete_threshold", "delete_after_unseen_days",
              "ssd_unseenday_threshold", "zero_init", "show_scale", "load_filter_slots")
ACCESSOR_FIELDS = ("accessor_class", "fea_dim", "embedx_dim", "embedx_threshold")
# Table-level keys Paddle reads beside the accessor; psjob accepts them (sharding, caches
# and SSD are its own business) and they change nothing here.
TABLE_FIELDS = ("table_class", "shard_num", "enable_sparse_table_cache", "sparse_table_cache_rate",
                "sparse_table_cache_file_num", "enable_revert", "shard_merge_rate", "use_gpu_graph",
                "type", "compress_in_save", "table_id")
TABLE_CLASSES = ("MemorySparseTable", "CommonSparseTable", "SSDSparseTable")


class AccessorConfigError(ValueError):
    """A sparse_table_configs entry psjob cannot honour as Paddle would."""


def _number(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise AccessorConfigError(f"{where} must be a finite number, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class SGDRuleConfig:
    """One rule (``embed_sgd_param`` or ``embedx_sgd_param``) with every field filled."""
    name: str = "SparseAdaGradSGDRule"
    learning_rate: float = 0.05
    initial_range: float = 1e-4
    weight_bounds: tuple = (-10.0, 10.0)
    initial_g2sum: float = 3.0
    beta1_decay_rate: float = 0.9
    beta2_decay_rate: float = 0.999
    ada_epsilon: float = 1e-8

    def __post_init__(self) -> None:
        if self.name not in SGD_RULES:
            raise AccessorConfigError(f"unknown SGD rule {self.name!r}; psjob honours {', '.join(SGD_RULES)}")
        for field in ("learning_rate", "initial_range", "initial_g2sum", "beta1_decay_rate",
                      "beta2_decay_rate", "ada_epsilon"):
            _number(f"{self.name} {field}", getattr(self, field))
        if self.initial_range < 0:
            raise AccessorConfigError(f"{self.name} initial_range must be >= 0, got {self.initial_range}")
        bounds = tuple(self.weight_bounds)
        if len(bounds) != 2:
            raise AccessorConfigError(f"{self.name} weight_bounds must be [min, max], got {list(bounds)}")
        low, high = (_number(f"{self.name} weight_bounds", b) for b in bounds)
        if not low <= high:
            raise AccessorConfigError(f"{self.name} weight_bounds [{low}, {high}]: min is above max")
        object.__setattr__(self, "weight_bounds", (low, high))
        if self.name in ("SparseAdaGradSGDRule", "StdAdaGradSGDRule") and self.initial_g2sum <= 0:
            raise AccessorConfigError(f"{self.name} initial_g2sum must be positive, got {self.initial_g2sum}")
        if self.name == "SparseAdamSGDRule":
            for field in ("beta1_decay_rate", "beta2_decay_rate"):
                if not 0.0 <= getattr(self, field) < 1.0:
                    raise AccessorConfigError(f"{self.name} {field} must be in [0, 1), got {getattr(self, field)}")


@dataclasses.dataclass(frozen=True)
class AccessorConfig:
    """A table's accessor, resolved for an embedding of ``1 + embedx_dim`` columns."""
    embedx_dim: int
    accessor_class: str = "SparseAccessor"
    embedx_threshold: float = 0.0
    embed: SGDRuleConfig = SGDRuleConfig()
    embedx: SGDRuleConfig = SGDRuleConfig()
    zero_init: bool = True
    nonclk_coeff: float = 0.1
    click_coeff: float = 1.0
    show_click_decay_rate: float = 1.0
    delete_threshold: float = 0.0
    delete_after_unseen_days: float = 30.0

    def __post_init__(self) -> None:
        if self.accessor_class not in ACCESSORS:
            raise AccessorConfigError(f"unknown accessor_class {self.accessor_class!r}; psjob honours "
                                      f"{', '.join(ACCESSORS)}")
        if isinstance(self.embedx_dim, bool) or not isinstance(self.embedx_dim, int) or self.embedx_dim < 0:
            raise AccessorConfigError(f"embedx_dim must be an int >= 0, got {self.embedx_dim!r}")
        for field in ("embedx_threshold", "nonclk_coeff", "click_coeff", "show_click_decay_rate",
                      "delete_threshold", "delete_after_unseen_days"):
            _number(field, getattr(self, field))
        for field in ("embed", "embedx"):
            rule = getattr(self, field)
            if isinstance(rule, Mapping):
                object.__setattr__(self, field, SGDRuleConfig(**rule))
            elif not isinstance(rule, SGDRuleConfig):
                raise AccessorConfigError(f"{field} must be an SGDRuleConfig, got {type(rule).__name__}")

    @property
    def dim(self) -> int:
        return 1 + self.embedx_dim

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def score(self, show: np.ndarray, click: np.ndarray) -> np.ndarray:
        return (show - click) * self.nonclk_coeff + click * self.click_coeff


# ------------------------------------------------------------------ Paddle's flat keys

def parse_table_config(table: str, flat: Mapping) -> dict:
    """The nested accessor fields of one ``sparse_table_configs[table]`` entry, keyed as in
    Paddle (``table_parameters.<table>.accessor.embed_sgd_param.adagrad.learning_rate``...),
    checked for unknown keys and value types; dims are checked by `resolve_accessor`."""
    if not isinstance(flat, Mapping):
        raise AccessorConfigError(f"sparse_table_configs[{table!r}] must be a dict of "
                                  f"'table_parameters.{table}.<field>' keys, got {type(flat).__name__}")
    prefix = f"table_parameters.{table}."
    out: dict = {"table": {}, "accessor": {}, "embed_sgd_param": {}, "embedx_sgd_param": {},
                 "ctr_accessor_param": {}}
    for key, value in flat.items():
        if not isinstance(key, str) or not key.startswith(prefix):
            raise AccessorConfigError(f"sparse_table_configs[{table!r}]: key {key!r} must start with {prefix!r}"
                                      " (Paddle's DistributedStrategy reads only those)")
        parts = key[len(prefix):].split(".")
        _place(table, key, parts, value, out)
    return out


def _place(table: str, key: str, parts: list, value: Any, out: dict) -> None:
    where = f"sparse_table_configs[{table!r}][{key!r}]"
    if len(parts) == 1 and parts[0] in TABLE_FIELDS:
        if parts[0] == "table_class" and value not in TABLE_CLASSES:
            raise AccessorConfigError(f"{where}: table_class must be one of {', '.join(TABLE_CLASSES)}, got {value!r}")
        out["table"][parts[0]] = value
        return
    if parts[0] != "accessor" or len(parts) < 2:
        raise AccessorConfigError(f"{where}: unknown key; known: {', '.join(TABLE_FIELDS)} and accessor.*")
    field = parts[1]
    if len(parts) == 2 and field in ACCESSOR_FIELDS:
        if field != "accessor_class" and (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                                          or value < 0):
            # integer fields of Paddle's TableAccessorParameter (a float is a TypeError there)
            raise AccessorConfigError(f"{where}: {field} must be an int >= 0, got {value!r}")
        out["accessor"][field] = value
    elif field in ("embed_sgd_param", "embedx_sgd_param") and len(parts) == 3 and parts[2] == "name":
        if value not in SGD_RULES:
            raise AccessorConfigError(f"{where}: unknown SGD rule {value!r}; psjob honours {', '.join(SGD_RULES)}")
        out[field]["name"] = value
    elif field in ("embed_sgd_param", "embedx_sgd_param") and len(parts) == 4 and parts[2] in PARAM_FIELDS:
        if parts[3] not in PARAM_FIELDS[parts[2]]:
            raise AccessorConfigError(f"{where}: {parts[2]} has no field {parts[3]!r}; it has "
                                      f"{', '.join(PARAM_FIELDS[parts[2]])}")
        if parts[3] == "weight_bounds":
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
                raise AccessorConfigError(f"{where}: weight_bounds must be [min, max], got {value!r}")
            low, high = (_number(where, v) for v in value)
            if low > high:
                raise AccessorConfigError(f"{where}: weight_bounds [{low}, {high}]: min is above max")
            value = [low, high]
        else:
            _number(where, value)
        out[field].setdefault(parts[2], {})[parts[3]] = value
    elif field == "ctr_accessor_param" and len(parts) == 3 and parts[2] in CTR_FIELDS:
        out[field][parts[2]] = value
    else:
        raise AccessorConfigError(f"{where}: unknown key (accessor fields: {', '.join(ACCESSOR_FIELDS)}, "
                                  "embed_sgd_param/embedx_sgd_param.{name, naive.*, adagrad.*, adam.*}, "
                                  f"ctr_accessor_param.{{{', '.join(CTR_FIELDS)}}})")


def resolve_accessor(table: str, parsed: dict, embedding_dim: int, *, initial_range: float,
                     learning_rate: float | None) -> AccessorConfig:
    """Paddle's defaults filled in (the_one_ps ``Accessor._set``) for an embedding of
    ``embedding_dim`` columns: accessor SparseAccessor, fea_dim = dim + 2 (SparseAccessor)
    else dim, embedx_dim = dim - 1 (SparseAccessor) else dim - 3, rule SparseAdamSGDRule;
    adagrad learning_rate 0.05, initial_g2sum 3, initial_range 1e-4; naive and adam take
    the program's learning rate and the embedding initializer's range; weight_bounds
    [-10, 10]; adam's beta1/beta2/epsilon 0.9/0.999/1e-8 (Paddle's the_one_ps sets these
    three whatever the configuration says, and so does psjob)."""
    acc = parsed.get("accessor", {})
    cls = acc.get("accessor_class", "SparseAccessor")
    if cls not in ACCESSORS:
        raise AccessorConfigError(f"sparse_table_configs[{table!r}]: accessor_class {cls!r} is not one psjob "
                                  f"honours ({', '.join(ACCESSORS)})")
    sparse = cls == "SparseAccessor"
    want_fea = embedding_dim + 2 if sparse else embedding_dim
    want_embedx = embedding_dim - 1 if sparse else embedding_dim - 3
    fea_dim = int(acc.get("fea_dim", want_fea))
    if fea_dim != want_fea:
        raise AccessorConfigError(f"sparse_table_configs[{table!r}]: fea_dim is {fea_dim}, but the embedding "
                                  f"{table!r} has {embedding_dim} columns, so a {cls}'s fea_dim must be "
                                  f"{want_fea} ({'dim + 2' if sparse else 'dim'})")
    embedx_dim = int(acc.get("embedx_dim", want_embedx))
    if embedx_dim != want_embedx:
        raise AccessorConfigError(f"sparse_table_configs[{table!r}]: embedx_dim is {embedx_dim}, but the embedding "
                                  f"{table!r} has {embedding_dim} columns, so a {cls}'s embedx_dim must be "
                                  f"{want_embedx} ({'dim - 1' if sparse else 'dim - 3'})")
    if not sparse:
        raise AccessorConfigError(f"sparse_table_configs[{table!r}]: {cls} pulls show and click with each row "
                                  "(Paddle's cvm layout, dim = embedx_dim + 3); psjob's tables honour "
                                  "SparseAccessor's layout (embed + embedx) only")
    ctr = parsed.get("ctr_accessor_param", {})
    rules = {side: _rule(table, side, parsed.get(f"{side}_sgd_param", {}), initial_range, learning_rate)
             for side in ("embed", "embedx")}
    return AccessorConfig(
        embedx_dim=embedx_dim, accessor_class=cls, embedx_threshold=float(acc.get("embedx_threshold", 0)),
        embed=rules["embed"], embedx=rules["embedx"],
        zero_init=bool(ctr.get("zero_init", True)) and embedx_dim != 0,
        nonclk_coeff=float(ctr.get("nonclk_coeff", 0.1)), click_coeff=float(ctr.get("click_coeff", 1.0)),
        show_click_decay_rate=float(ctr.get("show_click_decay_rate", 1.0)),
        delete_threshold=float(ctr.get("delete_threshold", 0.0)),
        delete_after_unseen_days=float(ctr.get("delete_after_unseen_days", 30.0)))


def _rule(table: str, side: str, given: dict, initial_range: float, learning_rate: float | None) -> SGDRuleConfig:
    name = given.get("name", "SparseAdamSGDRule")
    sub = RULE_PARAMS[name]
    for other in ("naive", "adagrad", "adam"):
        if other != sub and other in given:
            raise AccessorConfigError(f"sparse_table_configs[{table!r}]: {side}_sgd_param is {name}, which reads "
                                      f"{side}_sgd_param.{sub}.*, but {side}_sgd_param.{other}.* is set")
    params = dict(given.get(sub, {}))
    fields: dict[str, Any]
    if sub == "adagrad":
        fields = {"learning_rate": 0.05, "initial_g2sum": 3.0, "initial_range": 1e-4}
    else:
        fields = {"learning_rate": learning_rate, "initial_range": initial_range}
    fields.update(params)
    if fields["learning_rate"] is None:
        raise AccessorConfigError(f"sparse_table_configs[{table!r}] {side}_sgd_param: {name} takes its default "
                                  "learning_rate from the optimizer's constant learning rate, and this program's "
                                  f"is not a constant: set {side}_sgd_param.{sub}.learning_rate")
    if sub == "adam":   # the_one_ps overwrites these three (Accessor._set)
        fields.update(beta1_decay_rate=0.9, beta2_decay_rate=0.999, ada_epsilon=1e-8)
    fields["weight_bounds"] = tuple(fields.get("weight_bounds", (-10.0, 10.0)))
    try:
        return SGDRuleConfig(name=name, **fields)
    except AccessorConfigError as exc:
        raise AccessorConfigError(f"sparse_table_configs[{table!r}] {side}_sgd_param: {exc}") from None


# ------------------------------------------------------------------------ the update

class SGDRule:
    """One rule over ``width`` columns of the value: its state columns and its update."""

    def __init__(self, config: SGDRuleConfig, prefix: str, width: int) -> None:
        self.config, self.prefix, self.width = config, prefix, width
        name = config.name
        if name == "SparseAdaGradSGDRule":
            shapes = {"g2sum": (1,)}
        elif name == "StdAdaGradSGDRule":
            shapes = {"g2sum": (width,)}
        elif name == "SparseAdamSGDRule":
            shapes = {"gsum": (width,), "g2sum": (width,), "beta1_pow": (1,), "beta2_pow": (1,)}
        else:
            shapes = {}
        self.shapes = {f"{prefix}_{k}": v for k, v in shapes.items()}
        self.fills = {n: 0.0 for n in self.shapes}
        if name == "SparseAdamSGDRule":
            self.fills[f"{prefix}_beta1_pow"] = config.beta1_decay_rate
            self.fills[f"{prefix}_beta2_pow"] = config.beta2_decay_rate

    def clip(self, w: np.ndarray) -> np.ndarray:
        low, high = self.config.weight_bounds
        return np.clip(w, low, high)

    def update(self, w: np.ndarray, state: dict, grad: np.ndarray, show: np.ndarray) -> np.ndarray:
        """New weights of ``w`` ([n, width]) for summed gradients ``grad``; updates ``state``
        ({column: [n, ...] float32 arrays}) in place. float64 inside, as Paddle's rules
        accumulate the squared gradients in double."""
        c, p = self.config, self.prefix
        w64, g = w.astype(np.float64), grad.astype(np.float64)
        if c.name == "SparseNaiveSGDRule":
            return self.clip(w64 - c.learning_rate * g)
        if c.name in ("SparseAdaGradSGDRule", "StdAdaGradSGDRule"):
            g = g / show[:, None]
            g2sum = state[f"{p}_g2sum"].astype(np.float64)
            out = w64 - c.learning_rate * g * np.sqrt(c.initial_g2sum / (c.initial_g2sum + g2sum))
            if c.name == "SparseAdaGradSGDRule":
                state[f"{p}_g2sum"] = (g2sum + (g * g).mean(axis=1, keepdims=True)).astype(np.float32)
            else:
                state[f"{p}_g2sum"] = (g2sum + g * g).astype(np.float32)
            return self.clip(out)
        # SparseAdamSGDRule
        b1, b2 = c.beta1_decay_rate, c.beta2_decay_rate
        b1p, b2p = state[f"{p}_beta1_pow"].astype(np.float64), state[f"{p}_beta2_pow"].astype(np.float64)
        lr = c.learning_rate * np.sqrt(1.0 - b2p) / (1.0 - b1p)
        gsum = b1 * state[f"{p}_gsum"] + (1.0 - b1) * g
        g2sum = b2 * state[f"{p}_g2sum"] + (1.0 - b2) * g * g
        out = w64 - lr * (gsum / (np.sqrt(g2sum) + c.ada_epsilon))
        state[f"{p}_gsum"], state[f"{p}_g2sum"] = gsum.astype(np.float32), g2sum.astype(np.float32)
        state[f"{p}_beta1_pow"] = (b1p * b1).astype(np.float32)
        state[f"{p}_beta2_pow"] = (b2p * b2).astype(np.float32)
        return self.clip(out)


class AccessorUpdate:
    """The state columns of an accessor table and its push (the row optimizer of a
    `SparseTable` whose config has an accessor)."""

    READY = "embedx_ready"   # 1 once a row's embedx columns exist
    UNSEEN = "unseen_days"   # shrinks since the row's last push

    def __init__(self, config: AccessorConfig) -> None:
        self.config = config
        self.embed = SGDRule(config.embed, "embed", 1)
        self.embedx = SGDRule(config.embedx, "embedx", config.embedx_dim)
        self._columns = {n: Column(np.dtype(np.float32), s) for rule in (self.embed, self.embedx)
                         for n, s in rule.shapes.items()}
        self._columns[self.READY] = Column(np.dtype(np.float32), (1,))
        self._columns[self.UNSEEN] = Column(np.dtype(np.float32), (1,))
        self._fills = {**self.embed.fills, **self.embedx.fills, self.READY: 0.0, self.UNSEEN: 0.0}

    @property
    def name(self) -> str:
        return self.config.accessor_class

    @property
    def columns(self) -> dict[str, Column]:
        return dict(self._columns)

    @property
    def fills(self) -> dict[str, float]:
        return dict(self._fills)

    def initialize(self, cols: dict[str, np.ndarray], rows: np.ndarray | slice) -> None:
        for name, fill in self._fills.items():
            cols[name][rows] = fill

    def initial_values(self, uniform: np.ndarray) -> np.ndarray:
        """A new row from uniform draws in [-1, 1) ([n, dim]): the embed weight (0 under
        zero_init), embedx zero until the row earns it."""
        out = np.zeros(uniform.shape, np.float32)
        if not self.config.zero_init:
            out[:, :1] = self.embed.clip(uniform[:, :1] * self.config.embed.initial_range)
        return out

    def apply(self, cols: dict[str, np.ndarray], rows: np.ndarray, grads: np.ndarray, shows: np.ndarray,
              clicks: np.ndarray, uniform: Callable[[np.ndarray], np.ndarray]) -> None:
        """Push summed ``grads`` of unique ``rows`` with their ``shows``/``clicks``.
        ``uniform(rows)`` gives [n, dim] draws in [-1, 1) for rows whose embedx is created."""
        value = cols["value"]
        cols[self.UNSEEN][rows] = 0.0
        cols["show"][rows] += shows
        cols["click"][rows] += clicks
        w = value[rows]
        state = {n: cols[n][rows] for n in self.embed.shapes}
        w[:, :1] = self.embed.update(w[:, :1], state, grads[:, :1], shows)
        for n, v in state.items():
            cols[n][rows] = v
        ready = cols[self.READY][rows, 0] > 0
        if self.config.embedx_dim and ready.any():
            r = rows[ready]
            state = {n: cols[n][r] for n in self.embedx.shapes}
            w[ready, 1:] = self.embedx.update(w[ready, 1:], state, grads[ready, 1:], shows[ready])
            for n, v in state.items():
                cols[n][r] = v
        value[rows] = w
        score = self.config.score(cols["show"][rows], cols["click"][rows])
        grow = ~ready & (score >= self.config.embedx_threshold)
        if grow.any():
            r = rows[grow]
            draws = uniform(r)[:, 1:]
            value[r, 1:] = self.embedx.clip(draws * self.config.embedx.initial_range)
            for n, fill in self.embedx.fills.items():
                cols[n][r] = fill
            cols[self.READY][r] = 1.0

    def shrink(self, cols: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        """Decay show/click of ``rows`` and count a day unseen; the mask of those to delete."""
        c = self.config
        cols["show"][rows] *= np.float32(c.show_click_decay_rate)
        cols["click"][rows] *= np.float32(c.show_click_decay_rate)
        score = c.score(cols["show"][rows], cols["click"][rows])
        doomed = (score < c.delete_threshold) | (cols[self.UNSEEN][rows, 0] > c.delete_after_unseen_days)
        cols[self.UNSEEN][rows[~doomed]] += 1.0
        return doomed
