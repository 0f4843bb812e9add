"""`paddle.distributed.fleet` (Paddle 2.x) for parameter-server training, over psjob.fleet.

    import psjob.distributed.fleet as fleet
    fleet.init()                                  # PaddleCloudRoleMaker from the environment
    strategy = fleet.DistributedStrategy()        # a_sync=True by default, as in Paddle 2.x
    opt = fleet.distributed_optimizer(opt, strategy)
    opt.minimize(loss)                            # rewrites the default main program in place
    if fleet.is_server():
        fleet.init_server(); fleet.run_server()
    else:
        exe.run(paddle.static.default_startup_program())
        fleet.init_worker()
        exe.train_from_dataset(paddle.static.default_main_program(), dataset)
        fleet.stop_worker()

It is the same Fleet singleton as `psjob.fleet` (one job per process). The
difference from the Fluid-style order is that Paddle 2.x scripts run the
startup program before `init_worker()`: after minimize() a worker's RPC
service connects on first use (the startup program's parameter fetches), and
init_worker() then finds it connected.

The package loads cheaply: a dataset's pipe_command imports it for
MultiSlotDataGenerator only, and the rest (fleet_api.py: the Fleet, its
trainer's RPC client, the saves) is loaded on first use (psjob.foundation.lazy).
`fleet.util` is the UtilBase instance, as in Paddle, not the util module.
"""
import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING

from psjob.distributed.fleet.data_generator import MultiSlotDataGenerator, MultiSlotStringDataGenerator
from psjob.foundation.lazy import make_lazy as _make_lazy

if _TYPE_CHECKING:  # what the package holds once loaded, for the type checker
    from psjob.distributed.fleet.fleet_api import *


def _load_api():
    from psjob.distributed.fleet import fleet_api
    return fleet_api


_make_lazy(_sys.modules[__name__], _load_api, shadowed=("util",))
