"""psjob.fluid: a Fluid-style static-graph framework (`import psjob.fluid as fluid`).

Build a Program with `layers` and an `optimizer`, run it with an `Executor`
on a Place, save it with `io`, and distribute it with the
`DistributeTranspiler` — the API Fluid 1.x scripts use.

Those names live in psjob.fluid.fluid_api and are loaded on first use
(psjob.foundation.lazy): a dataset's pipe_command importing
`paddle.fluid.incubate.data_generator` passes through this package and must
not pay for the framework. `fluid.data` and `fluid.device_guard` are the
functions, as in Fluid, whichever of their modules was imported first.
"""
import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING

from psjob.foundation.lazy import make_lazy as _make_lazy

if _TYPE_CHECKING:  # what the package holds once loaded, for the type checker
    from psjob.fluid.fluid_api import *


def _load_api():
    from psjob.fluid import fluid_api
    return fluid_api


_make_lazy(_sys.modules[__name__], _load_api, shadowed=("data", "device_guard"))
