"""psjob: parameter-server training for large sparse models.

`import psjob` stays cheap (the operator image imports psjob.roles and
psjob.jobspec only); the data helpers Fluid scripts reach as `paddle.batch`,
`paddle.reader` and `paddle.dataset` are loaded on first use.
"""
import importlib

__version__ = "0.1.0"

_LAZY = {
    "batch": ("psjob._batch", "batch"),
    "reader": ("psjob.reader", None),
    "dataset": ("psjob.dataset", None),
    "fluid": ("psjob.fluid", None),
    # Paddle 2.x: paddle.distributed (fleet, datasets) and paddle.io (DataLoader).
    "distributed": ("psjob.distributed", None),
    "io": ("psjob.io", None),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'psjob' has no attribute {name!r}")
    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value
