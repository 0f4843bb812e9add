"""Paddle 2.x's `paddle.distributed.fleet.DistributedStrategy`, parameter-server subset.

It is psjob.fleet's strategy (the same mode rule: a_sync/k_steps → sync, async,
geo) with Paddle 2.x's defaults and the fields PaddleRec's helpers set:

- `a_sync` defaults to True, as in Paddle 2.x (Fluid's incubate strategy
  defaulted to False): a script that wants synchronous training sets
  `strategy.a_sync = False`, as Paddle's documentation says.
- `a_sync_configs` takes every key Paddle knows. psjob honours `k_steps`,
  `launch_barrier`, `max_merge_var_num`, `send_queue_size` and
  `heter_worker_device_guard`; the others are accepted and logged once as
  ignored. It adds its own `max_stale_steps` (default 1): how many steps of a
  trainer's own gradients its async reads may miss (None: unbounded), and
  `predict_pulls`: async reads extrapolated that many pull intervals ahead
  (psjob.cluster.trainer.communicator); default None: 2 for parameters an Adam-family or
  momentum optimizer updates, 0 (read as pulled) for plain SGD and the others
  (psjob.fleet.strategy.predict_pulls_by_name); a number applies to all. Values
  are checked when set. A key neither Paddle nor psjob knows is an error.
  max_merge_var_num/send_queue_size default to psjob's 20/20, not the 1/16 of
  Paddle's AsyncConfig, which Paddle's runtime never reads (docs/user/paddle2.md).
- `trainer_desc_configs` has Paddle's keys and defaults; minimize() copies it
  into the main program's `_fleet_opt` (psjob.distributed.fleet), where
  train_from_dataset honours `stat_var_names` (fluid/dataset_trainer.py). As in
  Paddle, a key it does not know is an error and setting a list field extends it.
- `sparse_table_configs` ({table name: {"table_parameters.<table>.<field>": value}},
  the keys PaddleRec's program_helper builds) is checked when set (an unknown key, SGD
  rule or accessor, or bad bounds, is an error naming it) and makes the named tables
  train as Paddle's accessor and SGD rules do on the pservers
  (psjob.foundation.tables.accessor; docs/user/paddle2.md lists what is honoured).
- `adam_d2sum`, `fs_client_param` (PSLib/PS-GPU settings) are stored, readable, and
  logged once as ignored.
"""
from __future__ import annotations

import logging

from psjob.fleet.strategy import DEFAULT_A_SYNC_CONFIGS
from psjob.fleet.strategy import DistributedStrategy as _FleetStrategy
from psjob.foundation.tables.accessor import parse_table_config

log = logging.getLogger("psjob.distributed")

# a_sync_configs keys Paddle 2.x accepts that have no meaning in psjob's runtime.
IGNORED_A_SYNC_KEYS = ("independent_recv_thread", "min_send_grad_num_before_recv", "thread_pool_size",
                       "send_wait_times", "runtime_split_send_recv", "lr_decay_steps", "use_ps_gpu",
                       "use_gpu_graph")
# Strategy fields PaddleRec's helpers set; psjob stores them and ignores them.
IGNORED_FIELDS = {"adam_d2sum": bool, "fs_client_param": dict}
# Paddle's TrainerDescConfig (distributed_strategy.proto) with its defaults.
TRAINER_DESC_DEFAULTS = {"dump_fields_path": "", "dump_fields": [], "dump_param": [], "stat_var_names": [],
                         "trainer": "", "device_worker": "", "local_sparse": [], "remote_sparse": []}

_warned: set[str] = set()


def _ignored(what: str) -> None:
    if what not in _warned:
        _warned.add(what)
        log.warning("DistributedStrategy.%s is accepted but ignored by psjob (docs/user/paddle2.md)", what)


class DistributedStrategy(_FleetStrategy):
    def __init__(self):
        super().__init__()
        self.a_sync = True  # Paddle 2.x's default
        self._ignored_fields = {name: kind() for name, kind in IGNORED_FIELDS.items()}
        self._sparse_table_configs: dict = {}
        self.sparse_table_accessors: dict = {}   # table -> parsed entry (psjob.fleet.strategy reads it)
        self._trainer_desc = {k: list(v) if isinstance(v, list) else v for k, v in TRAINER_DESC_DEFAULTS.items()}

    @property
    def trainer_desc_configs(self) -> dict:
        """A copy (as Paddle's getter returns one): change it by assigning."""
        return {k: list(v) if isinstance(v, list) else v for k, v in self._trainer_desc.items()}

    @trainer_desc_configs.setter
    def trainer_desc_configs(self, configs: dict):
        if not isinstance(configs, dict):
            raise TypeError(f"trainer_desc_configs must be a dict, got {type(configs).__name__}")
        unknown = sorted(set(configs) - set(TRAINER_DESC_DEFAULTS))
        if unknown:
            raise ValueError(f"unknown trainer_desc_configs key(s) {unknown}; known: {sorted(TRAINER_DESC_DEFAULTS)}")
        for key, value in configs.items():
            if isinstance(TRAINER_DESC_DEFAULTS[key], list):
                if value is None:
                    continue
                if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                    raise TypeError(f"trainer_desc_configs[{key!r}] must be a list of names, got {value!r}")
                self._trainer_desc[key].extend(value)  # a repeated proto field: Paddle appends
            else:
                if not isinstance(value, str):
                    raise TypeError(f"trainer_desc_configs[{key!r}] must be a string, got {value!r}")
                self._trainer_desc[key] = value

    @property
    def sparse_table_configs(self) -> dict:
        return {table: dict(entry) for table, entry in self._sparse_table_configs.items()}

    @sparse_table_configs.setter
    def sparse_table_configs(self, configs: dict):
        if not isinstance(configs, dict):
            raise TypeError(f"sparse_table_configs must be a dict {{table name: {{key: value}}}}, "
                            f"got {type(configs).__name__}")
        parsed = {str(table): parse_table_config(str(table), entry) for table, entry in configs.items()}
        # As Paddle's setter, each assignment adds its tables (a later entry for a table wins).
        self._sparse_table_configs.update({str(t): dict(e) for t, e in configs.items()})
        self.sparse_table_accessors.update(parsed)

    @property
    def a_sync_configs(self) -> dict:
        return self._a_sync_configs

    @a_sync_configs.setter
    def a_sync_configs(self, configs: dict):
        if not isinstance(configs, dict):
            raise TypeError(f"a_sync_configs must be a dict, got {type(configs).__name__}")
        unknown = set(configs) - set(DEFAULT_A_SYNC_CONFIGS) - set(IGNORED_A_SYNC_KEYS)
        if unknown:
            raise ValueError(f"unknown a_sync_configs key(s) {sorted(unknown)}; known: "
                             f"{sorted(DEFAULT_A_SYNC_CONFIGS) + sorted(IGNORED_A_SYNC_KEYS)}")
        for key in sorted(set(configs) & set(IGNORED_A_SYNC_KEYS)):
            _ignored(f"a_sync_configs[{key!r}]")
        self._set_a_sync_configs({k: v for k, v in configs.items() if k in DEFAULT_A_SYNC_CONFIGS})


def _ignored_field(name: str, kind: type) -> property:
    def get(self):
        return self._ignored_fields[name]

    def set_(self, value):
        if not isinstance(value, kind):
            raise TypeError(f"DistributedStrategy.{name} must be a {kind.__name__}, got {type(value).__name__}")
        _ignored(name)
        self._ignored_fields[name] = value
    return property(get, set_)


for _name, _kind in IGNORED_FIELDS.items():
    setattr(DistributedStrategy, _name, _ignored_field(_name, _kind))
