"""fluid.layers: functions that append ops (and parameters) to the default programs.

Each sub-module's public names are re-exported here, as in Fluid.
"""
from .io import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403
from . import io, nn, tensor  # noqa: F401
