"""fluid.layers: functions that append ops (and parameters) to the default programs.

Each sub-module's public names are re-exported here, as in Fluid.
"""
from psjob.fluid.layers import (
    control_blocks,
    control_flow,
    crf,
    fluid18_nn,
    indexing,
    io,
    learning_rate_scheduler,
    loss,
    manip,
    math_sugar,
    metric_op,
    nn,
    ops,
    preview,
    sequence_lod,
    tensor,
)
from psjob.fluid.layers.control_blocks import *
from psjob.fluid.layers.control_flow import *
from psjob.fluid.layers.crf import *
from psjob.fluid.layers.fluid18_nn import *
from psjob.fluid.layers.io import *
from psjob.fluid.layers.learning_rate_scheduler import *
from psjob.fluid.layers.loss import *
from psjob.fluid.layers.manip import *
from psjob.fluid.layers.metric_op import *
from psjob.fluid.layers.nn import *
from psjob.fluid.layers.ops import *
from psjob.fluid.layers.preview import *
from psjob.fluid.layers.sequence_lod import *
from psjob.fluid.layers.tensor import *

# Paddle 1.8 defines its control-flow classes and functions (Switch, While, cond, ...) in
# fluid/layers/control_flow.py, and scripts reach them there: fluid.layers.control_flow.Switch.
# psjob keeps them in control_blocks (which itself uses control_flow's comparisons).
for _name in control_blocks.__all__:
    setattr(control_flow, _name, getattr(control_blocks, _name))
del _name
