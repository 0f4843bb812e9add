"""`fluid.get_flags` / `fluid.set_flags` and Fluid 1.8's dygraph mode switches.

psjob keeps the public flags Paddle 1.8 lets these functions read and write, with Paddle
1.8.5's defaults; they tune Paddle's C++ allocator and executor, which psjob does not have, so
setting one records its value and changes nothing else. A flag outside the table is refused as
Paddle refuses it. psjob runs static graphs only: `enable_dygraph` raises, `disable_dygraph`
is a no-op and `in_dygraph_mode()` is False.
"""
from __future__ import annotations

from typing import Any

from psjob.fluid.dygraph._refuse import DygraphNotSupported

# Paddle 1.8.5's public flags (those its get_flags reads) and their defaults on a CPU build.
_DEFAULTS: dict[str, Any] = {
    "FLAGS_eager_delete_tensor_gb": 0.0,
    "FLAGS_check_nan_inf": False,
    "FLAGS_memory_fraction_of_eager_deletion": 1.0,
    "FLAGS_cpu_deterministic": False,
    "FLAGS_paddle_num_threads": 1,
    "FLAGS_benchmark": False,
    "FLAGS_enable_parallel_graph": False,
    "FLAGS_allocator_strategy": "auto_growth",
    "FLAGS_use_pinned_memory": True,
    "FLAGS_init_allocated_mem": False,
    "FLAGS_inner_op_parallelism": 0,
}
_values: dict[str, Any] = dict(_DEFAULTS)


def get_flags(flags: str | list[str] | tuple[str, ...]) -> dict[str, Any]:
    """{flag: value} for a flag name or a list/tuple of them."""
    if isinstance(flags, str):
        flags = [flags]
    elif not isinstance(flags, (list, tuple)):
        raise TypeError("Flags in get_flags should be a list, tuple or string.")
    out = {}
    for name in flags:
        if name not in _values:
            raise ValueError(f"Flag {name} cannot get its value through this function "
                             f"(psjob knows: {', '.join(sorted(_values))}).")
        out[name] = _values[name]
    return out


def set_flags(flags: dict[str, Any]) -> None:
    """Record {flag: value}, each value converted to the flag's type."""
    if not isinstance(flags, dict):
        raise TypeError("flags in set_flags should be a dict")
    for name in flags:
        if name not in _values:
            raise ValueError(f"Flag {name} cannot set its value through this function "
                             f"(psjob knows: {', '.join(sorted(_values))}).")
    for name, value in flags.items():
        kind = type(_DEFAULTS[name])
        try:
            _values[name] = kind(value)
        except (TypeError, ValueError) as e:
            raise ValueError(f"set_flags: {name} takes a {kind.__name__}, got {value!r}") from e


def in_dygraph_mode() -> bool:
    """psjob is never in dygraph mode."""
    return False


def enable_dygraph(place: Any = None) -> None:
    raise DygraphNotSupported("fluid.enable_dygraph is not supported by psjob: it runs static graphs "
                              "only (build a Program with fluid.layers and run it with fluid.Executor)")


def disable_dygraph() -> None:
    """Static mode, which psjob is always in: nothing to do."""


enable_imperative = enable_dygraph
disable_imperative = disable_dygraph
