"""fluid.layers: functions that append ops (and parameters) to the default programs.

Each sub-module's public names are re-exported here, as in Fluid.
"""
from .io import *
from .nn import *
from .tensor import *
from .manip import *
from .loss import *
from .sequence_lod import *
from .metric_op import *
from .learning_rate_scheduler import *
from .ops import *
from .control_flow import *
from . import io, nn, tensor
from . import learning_rate_scheduler
from . import loss, manip, metric_op, sequence_lod
from . import control_flow, ops
from . import math_sugar
from . import indexing
