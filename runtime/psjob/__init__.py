"""psjob: parameter-server training for large sparse models.

The folders are the layers of psjob's engine, bottom to top (docs/dev/layers.md):
foundation/ → fluid/ → cluster/ (rpc/, pserver/, trainer/, ...) → fleet/ → training/
→ launcher/ → cli/. The other entries are Paddle's public names (static, nn, optimizer,
io, distributed, reader, dataset, ...), where `import psjob as paddle` needs them.

`import psjob` stays cheap (the operator image imports psjob.foundation.roles and
psjob.foundation.jobspec only); the data helpers Fluid scripts reach as `paddle.batch`,
`paddle.reader` and `paddle.dataset` are loaded on first use.

This package root is also where the layers are put together: the framework
(psjob.fluid) calls the runtime above it only through the hooks of
psjob.foundation.hooks, and the root registers the built-in ones below as soon as any
psjob module is imported. Each imports its layer when first called, so
registering costs nothing and a process that never runs a distributed
program never loads gRPC.
"""
from psjob.foundation import hooks as _hooks

__version__ = "0.1.0"


def __getattr__(name):
    # `import psjob.x` (not `from . import x`, which would ask this function again)
    # loads the submodule and binds it as this package's attribute.
    if name == "paddle":
        # Paddle 3.0.0's package has itself as an attribute (`paddle.paddle is paddle`), which
        # some of its own test programs reach (`paddle.paddle.nn.initializer.Constant`).
        import psjob
        globals()[name] = psjob
    elif name == "batch":
        from psjob._batch import batch
        globals()[name] = batch
    elif name == "reader":
        import psjob.reader
    elif name == "dataset":
        import psjob.dataset
    elif name == "fluid":
        import psjob.fluid
    elif name == "base":
        # Paddle >= 2.5's name for fluid: the same module (psjob/base.py).
        import psjob.base
    elif name == "core":
        # Paddle 2.x/3.x's `paddle.core` is an attribute (paddle.base.core), not a module:
        # scripts catch `paddle.core.EOFException` after a non-iterable DataLoader's pass.
        from psjob.fluid import core
        globals()[name] = core
    elif name in ("distributed", "io"):
        # Paddle 2.x: paddle.distributed (fleet, datasets) and paddle.io (DataLoader).
        import psjob.distributed
        import psjob.io
    elif name == "inference":
        # paddle.inference: Config and create_predictor over the saved inference models.
        import psjob.inference
    elif name in ("static", "nn", "optimizer", "regularizer", "tensor", "device", "utils", "metric", "framework",
                  "linalg", "incubate"):
        # Paddle 2.x's subpackages (docs/user/paddle2.md), which build on one another.
        import psjob.device
        import psjob.framework
        import psjob.incubate
        import psjob.linalg
        import psjob.metric
        import psjob.nn
        import psjob.optimizer
        import psjob.regularizer
        import psjob.static
        import psjob.tensor
        import psjob.utils
    elif not name.startswith("_"):
        # Paddle 2.x's top-level functions: enable_static, seed, reshape, ParamAttr, ...
        import psjob._paddle2
        if name not in psjob._paddle2.__all__:
            raise AttributeError(f"module 'psjob' has no attribute {name!r}")
        globals()[name] = getattr(psjob._paddle2, name)
    else:
        raise AttributeError(f"module 'psjob' has no attribute {name!r}")
    return globals()[name]


def _rpc_service(executor, op=None):
    from psjob.cluster.trainer.client_service import make_client
    return make_client(executor, op)


def _pserver_service(executor, op=None):
    from psjob.cluster.pserver.pserver import make_service
    return make_service(executor, op)


def _heter_service(executor, op=None):
    from psjob.cluster.heter.heter import make_client
    return make_client(executor, op)


def _wait_server_ready(endpoints):
    from psjob.cluster.trainer.client_service import wait_for_pservers
    return wait_for_pservers(endpoints)


def _distributed_save(executor, dirname, program, scope=None):
    from psjob.cluster.trainer.checkpoint_save import save_persistables
    return save_persistables(executor, dirname, program, scope=scope)


def _distributed_load(executor, dirname, program, scope=None):
    from psjob.cluster.pserver.checkpoint_restore import load_persistables
    return load_persistables(executor, dirname, program, scope=scope)


def _data_storage(uri):
    from psjob.foundation.checkpoint.storage import for_path
    return for_path(uri)


def _dataset(kind):
    from psjob.distributed import dataset
    classes = {"InMemoryDataset": dataset.InMemoryDataset, "QueueDataset": dataset.QueueDataset}
    if kind not in classes:
        raise ValueError(f"datafeed class {kind!r} does not exist in psjob: create_dataset takes "
                         f"{' or '.join(map(repr, classes))}")
    return classes[kind]()


def _collective(rank=None, endpoints=None):
    from psjob.cluster.collective.service import ring
    return ring(rank, endpoints)


def _collective_device():
    from psjob.cluster.collective.service import device_ring
    return device_ring()


_hooks.register(_hooks.COLLECTIVE, _collective)
_hooks.register(_hooks.COLLECTIVE_DEVICE, _collective_device)
_hooks.register(_hooks.RPC_SERVICE, _rpc_service)
_hooks.register(_hooks.PSERVER_SERVICE, _pserver_service)
_hooks.register(_hooks.HETER_SERVICE, _heter_service)
_hooks.register(_hooks.WAIT_SERVER_READY, _wait_server_ready)
_hooks.register(_hooks.DISTRIBUTED_SAVE, _distributed_save)
_hooks.register(_hooks.DISTRIBUTED_LOAD, _distributed_load)
_hooks.register(_hooks.DATA_STORAGE, _data_storage)
_hooks.register(_hooks.DATASET, _dataset)
