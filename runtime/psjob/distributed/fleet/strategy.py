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
  logged once as ignored. As in Paddle, assigning fs_client_param a dict sets the fields it
  names (uri, user, passwd, hadoop_bin; another key is an error) and keeps the others, and
  the getter answers them as attributes.
- `save_to_prototxt` / `load_from_prototxt` write and read the strategy in protobuf's text
  format, as Paddle's do (the end of this module).
- `auto` (strict auto): on, with no other field of any strategy set in the process (Paddle's
  process-wide rule, `_is_strict_auto`), a parameter-server minimize picks the mode as Paddle
  3.0.0's does (fleet_api._apply_strict_auto: geo with k_steps 800 or async).
"""
from __future__ import annotations

import ast
import logging
import re

from psjob.fleet.strategy import DEFAULT_A_SYNC_CONFIGS
from psjob.fleet.strategy import DistributedStrategy as _FleetStrategy
from psjob.foundation.tables.accessor import parse_table_config

log = logging.getLogger("psjob.distributed")

# a_sync_configs keys Paddle 2.x accepts that have no meaning in psjob's runtime.
IGNORED_A_SYNC_KEYS = ("independent_recv_thread", "min_send_grad_num_before_recv", "thread_pool_size",
                       "send_wait_times", "runtime_split_send_recv", "lr_decay_steps", "use_ps_gpu",
                       "use_gpu_graph")
# Strategy fields PaddleRec's helpers set; psjob stores them and ignores them.
IGNORED_FIELDS = {"adam_d2sum": bool}
# Paddle's FsClientParameter (distributed_strategy.proto) with its defaults.
FS_CLIENT_FIELDS = ("uri", "user", "passwd", "hadoop_bin")


class FsClientParam:
    """DistributedStrategy.fs_client_param, as Paddle's getter returns it (its FsClientParameter
    message): the fields as attributes (`strategy.fs_client_param.uri`), printed as the proto
    prints the fields set; psjob also takes `param["uri"]` and dict(param)."""

    def __init__(self) -> None:
        for name in FS_CLIENT_FIELDS:
            setattr(self, name, "")

    def __getitem__(self, name: str) -> str:
        if name not in FS_CLIENT_FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def keys(self):
        return [name for name in FS_CLIENT_FIELDS if getattr(self, name)]

    def __bool__(self) -> bool:
        return bool(self.keys())

    def __eq__(self, other) -> bool:
        if isinstance(other, FsClientParam):
            other = dict(other)
        return dict(self) == other

    def __repr__(self) -> str:
        return "".join(f"{name}: \"{getattr(self, name)}\"\n" for name in self.keys())
# Paddle's TrainerDescConfig (distributed_strategy.proto) with its defaults.
TRAINER_DESC_DEFAULTS = {"dump_fields_path": "", "dump_fields": [], "dump_param": [], "stat_var_names": [],
                         "trainer": "", "device_worker": "", "local_sparse": [], "remote_sparse": []}

_warned: set[str] = set()

# Paddle's strict auto (`strategy.auto = True`): it applies only while no other field of any
# DistributedStrategy has been set in this process (Paddle keeps that in a module-level flag,
# non_auto_func_called, which every setter but auto's clears and nothing sets again).
_other_field_set = [False]
AUTO_GEO_K_STEPS = 800  # the k_steps Paddle's ParameterServerOptimizer picks when auto trains geo


def _ignored(what: str) -> None:
    if what not in _warned:
        _warned.add(what)
        log.warning("DistributedStrategy.%s is accepted but ignored by psjob (docs/user/paddle2.md)", what)


class DistributedStrategy(_FleetStrategy):
    auto = False  # Paddle's default; an instance sets its own

    def __init__(self):
        super().__init__()
        self.a_sync = True  # Paddle 2.x's default
        self._ignored_fields = {name: kind() for name, kind in IGNORED_FIELDS.items()}
        self._sparse_table_configs: dict = {}
        self.sparse_table_accessors: dict = {}   # table -> parsed entry (psjob.fleet.strategy reads it)
        self._trainer_desc = {k: list(v) if isinstance(v, list) else v for k, v in TRAINER_DESC_DEFAULTS.items()}
        self._fs_client_param = FsClientParam()
        self._constructed = True

    def __setattr__(self, name: str, value) -> None:
        if name == "auto":
            if not isinstance(value, bool):
                log.warning("auto should have value of bool type")  # and it stays, as in Paddle
                return
        elif not name.startswith("_") and self.__dict__.get("_constructed"):
            _other_field_set[0] = True
        super().__setattr__(name, value)

    def _is_strict_auto(self) -> bool:
        """Paddle's: auto is on and no other strategy field has been set in this process."""
        return bool(self.auto) and not _other_field_set[0]

    @property
    def fs_client_param(self) -> FsClientParam:
        return self._fs_client_param

    @fs_client_param.setter
    def fs_client_param(self, configs: dict):
        if not isinstance(configs, dict):
            raise TypeError(f"fs_client_param must be a dict of {', '.join(FS_CLIENT_FIELDS)}, "
                            f"got {type(configs).__name__}")
        unknown = sorted(set(configs) - set(FS_CLIENT_FIELDS))
        if unknown:
            raise ValueError(f"unknown fs_client_param key(s) {unknown}; known: {list(FS_CLIENT_FIELDS)}")
        bad = {k: v for k, v in configs.items() if not isinstance(v, str)}
        if bad:
            raise TypeError(f"fs_client_param values are strings, got {bad}")
        _ignored("fs_client_param")
        for key, value in configs.items():
            setattr(self._fs_client_param, key, value)

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


# -- save_to_prototxt / load_from_prototxt -------------------------------------------------
# Paddle writes its DistributedStrategy proto in protobuf's text format, the fields set, one
# `name: value` a line and a message as `name { ... }` (a repeated field once per value). psjob
# writes the fields it keeps in that format (the ones that differ from its defaults) and reads
# such a file back, so a strategy saved by either is read by psjob.
_PROTO_SKIPPED = ("a_sync", "table_optimizer", "sparse_table_accessors")


def _proto_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    raise TypeError(f"a value of type {type(value).__name__} ({value!r}) has no prototxt form")


def _proto_lines(name: str, value, indent: str) -> list:
    if value is None:
        return []
    if isinstance(value, dict):
        inner = [line for key, v in value.items() for line in _proto_lines(key, v, indent + "  ")]
        return [f"{indent}{name} {{", *inner, f"{indent}}}"]
    if isinstance(value, (list, tuple)):
        return [line for v in value for line in _proto_lines(name, v, indent)]
    return [f"{indent}{name}: {_proto_value(value)}"]


_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|([{}:])|([^\s{}:"\']+))')


def _parse_prototxt(text: str, source: str) -> dict:
    """{name: value} of a text-format message: a repeated name's values become a list."""
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"{source}: cannot read the prototxt at line {text.count(chr(10), 0, pos) + 1}")
        pos = m.end()
        if m.group(1) is None and m.group(0).strip():
            tokens.append((m.group(0).strip(), text.count("\n", 0, m.start()) + 1))

    def scalar(tok: str):
        if tok[0] in "\"'":
            return ast.literal_eval(tok)
        if tok in ("true", "True"):
            return True
        if tok in ("false", "False"):
            return False
        try:
            return int(tok)
        except ValueError:
            try:
                return float(tok)
            except ValueError:
                return tok  # an enum's name

    def message(i: int, closing: bool):
        fields: dict = {}
        while i < len(tokens):
            tok, line = tokens[i]
            if tok == "}":
                if not closing:
                    raise ValueError(f"{source}: line {line}: '}}' closes no message")
                return fields, i + 1
            if not re.fullmatch(r"[A-Za-z_]\w*", tok):
                raise ValueError(f"{source}: line {line}: expected a field name, got {tok!r}")
            nxt = tokens[i + 1][0] if i + 1 < len(tokens) else None
            if nxt == ":" and i + 2 < len(tokens) and tokens[i + 2][0] == "{":
                i += 1
                nxt = "{"
            if nxt == "{":
                value, i = message(i + 2, True)
            elif nxt == ":" and i + 2 < len(tokens) and tokens[i + 2][0] not in "{}:":
                value, i = scalar(tokens[i + 2][0]), i + 3
            else:
                raise ValueError(f"{source}: line {line}: field {tok!r} has no value")
            if tok in fields:
                fields[tok] = (fields[tok] if isinstance(fields[tok], list) else [fields[tok]]) + [value]
            else:
                fields[tok] = value
        if closing:
            raise ValueError(f"{source}: a message is not closed ('}}' missing)")
        return fields, i

    return message(0, False)[0]


def _save_to_prototxt(self, output) -> None:
    """Paddle's DistributedStrategy.save_to_prototxt(output): the strategy in protobuf's text
    format (https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/distributed/fleet/
    DistributedStrategy_en.html). psjob writes a_sync (when False: Paddle's default is True),
    the a_sync_configs and trainer_desc_configs that differ from the defaults, adam_d2sum,
    fs_client_param, and any other field set on the strategy (amp, recompute_configs, ...).
    psjob's own a_sync_configs keys (max_stale_steps, predict_pulls) are written too when set:
    Paddle's reader does not know them. sparse_table_configs has no form here (Paddle writes
    its tables as downpour_table_param messages): saving a strategy that has them is an error."""
    if self._sparse_table_configs:
        raise ValueError("save_to_prototxt: psjob does not write sparse_table_configs to a prototxt (Paddle "
                         "writes them as downpour_table_param messages); set them in the script instead")
    lines = [] if self.a_sync else ["a_sync: false"]
    for name, value in vars(self).items():
        if not name.startswith("_") and name not in _PROTO_SKIPPED:
            lines += _proto_lines(name, value, "")
    if self.adam_d2sum:
        lines += _proto_lines("adam_d2sum", True, "")
    changed = {k: v for k, v in self.a_sync_configs.items() if DEFAULT_A_SYNC_CONFIGS.get(k, object()) != v}
    if changed:
        lines += _proto_lines("a_sync_configs", changed, "")
    desc = {k: v for k, v in self._trainer_desc.items() if v != TRAINER_DESC_DEFAULTS[k]}
    if desc:
        lines += _proto_lines("trainer_desc_configs", desc, "")
    if self.fs_client_param:
        lines += _proto_lines("fs_client_param", dict(self.fs_client_param), "")
    with open(output, "w") as f:
        f.write("\n".join(lines) + ("\n" if lines else ""))


_LIST_CONFIG_KEYS = {k for k, v in TRAINER_DESC_DEFAULTS.items() if isinstance(v, list)}


def _load_from_prototxt(self, pb_file) -> None:
    """Paddle's DistributedStrategy.load_from_prototxt(pb_file): merge the fields of a prototxt
    (save_to_prototxt's, Paddle's or psjob's) into this strategy, as Paddle merges them: the
    fields the file names change, the rest keep their values, and a repeated field's values
    are appended. An unreadable file is an error naming the file and line."""
    with open(pb_file) as f:
        fields = _parse_prototxt(f.read(), str(pb_file))
    # Paddle merges the file into its proto without its setters: strict auto is kept.
    other_field_set = _other_field_set[0]
    try:
        _merge_fields(self, fields, pb_file)
    finally:
        _other_field_set[0] = other_field_set


def _merge_fields(self, fields: dict, pb_file) -> None:
    for name, value in fields.items():
        if name == "a_sync_configs":
            self.a_sync_configs = value if isinstance(value, dict) else {}
        elif name == "trainer_desc_configs":
            self.trainer_desc_configs = {k: (v if isinstance(v, list) else [v]) if k in _LIST_CONFIG_KEYS else v
                                         for k, v in value.items()}
        elif name == "sparse_table_configs" or name == "downpour_table_param":
            raise ValueError(f"load_from_prototxt({pb_file!r}): psjob does not read {name} from a prototxt; "
                             "set sparse_table_configs in the script")
        else:
            setattr(self, name, value)


DistributedStrategy.save_to_prototxt = _save_to_prototxt  # type: ignore[attr-defined]
DistributedStrategy.load_from_prototxt = _load_from_prototxt  # type: ignore[attr-defined]
