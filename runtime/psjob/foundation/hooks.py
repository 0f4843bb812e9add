"""Where a lower layer calls a higher one: hooks the higher layer registers.

The framework (psjob.fluid) sits below the runtime that serves it: an
executor running a transpiled program needs a gRPC client (`send`, `recv`),
a pserver (`listen_and_serv`) or a heter trainer's client (`send_and_recv`),
and `fluid.io` saving a distributed program needs trainer 0's checkpoint
protocol. The framework never imports those layers (tests/unit/test_layering.py
checks it); it looks the hook up here by name, and the layer that provides it
registers it at start-up — psjob's package root registers the built-in ones
as soon as any psjob module is imported (psjob/__init__.py), so a Fluid script
needs no set-up.

Stdlib only, and nothing here imports the layers it names.
"""
from __future__ import annotations

from collections.abc import Callable

# Executor services: factory(executor, op) -> service, created on first use.
RPC_SERVICE = "rpc"
PSERVER_SERVICE = "pserver"
HETER_SERVICE = "heter"
# fluid.io of a transpiled program: fn(executor, dirname, program, scope=None).
DISTRIBUTED_SAVE = "distributed_save"
DISTRIBUTED_LOAD = "distributed_load"
# DistributeTranspiler.get_trainer_program(wait_port=True): fn(endpoints), returns once all serve.
WAIT_SERVER_READY = "wait_server_ready"
# Data files at a URI (psjob.dataset.sources): fn(uri) -> the checkpoint store's Storage serving
# it (open_seekable, is_dir, sizes), or raises an OSError naming a scheme it cannot serve.
DATA_STORAGE = "data_storage"
# fluid.DatasetFactory().create_dataset(kind): fn(kind) -> a new dataset of that class
# ("InMemoryDataset", "QueueDataset"), or raises ValueError naming the ones there are.
DATASET = "dataset"

# Collective (NCCL2-mode) training: fn(rank=None, endpoints=None) -> this process's trainer ring
# (psjob.cluster.collective), formed on first use; with no arguments, the ring already formed or the one
# the collective environment names.
COLLECTIVE = "collective"
# A trainer whose pservers hold a table the program reads as a parameter (Fleet 2.x sparse
# embeddings): fn(program, block) -> the block the executor runs in its place (optional).
REMOTE_TABLE_VIEW = "remote_table_view"
# The NCCL communicator over that ring for CUDA arrays, or None without cupy/NCCL/GPU.
COLLECTIVE_DEVICE = "collective_device"
_registered: dict[str, Callable] = {}


def register(name: str, fn: Callable) -> None:
    """Make `fn` the hook `name` (replacing any earlier one)."""
    if not callable(fn):
        raise TypeError(f"hook {name!r} must be callable, got {fn!r}")
    _registered[name] = fn


def registered(name: str) -> Callable | None:
    """The hook registered as `name`, or None (for optional hooks)."""
    return _registered.get(name)


def unregister(name: str) -> None:
    _registered.pop(name, None)


def lookup(name: str) -> Callable:
    """The hook registered as `name`; LookupError naming it when none is."""
    fn = _registered.get(name)
    if fn is None:
        raise LookupError(f"no {name!r} hook is registered (psjob registers its runtime's hooks "
                          f"on import of the psjob package; was psjob.foundation.hooks.register({name!r}, ...) "
                          "undone?)")
    return fn
