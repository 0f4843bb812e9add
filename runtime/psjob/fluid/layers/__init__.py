"""fluid.layers: functions that append ops (and parameters) to the default programs.

Each sub-module's public names are re-exported here, as in Fluid.
"""
from . import (
    control_flow,
    indexing,
    io,
    learning_rate_scheduler,
    loss,
    manip,
    math_sugar,
    metric_op,
    nn,
    ops,
    sequence_lod,
    tensor,
)
from .control_flow import *
from .io import *
from .learning_rate_scheduler import *
from .loss import *
from .manip import *
from .metric_op import *
from .nn import *
from .ops import *
from .sequence_lod import *
from .tensor import *
