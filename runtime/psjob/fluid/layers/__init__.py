"""fluid.layers: functions that append ops (and parameters) to the default programs.

Each sub-module's public names are re-exported here, as in Fluid.
"""
from .io import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403
from .manip import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .sequence_lod import *  # noqa: F401,F403
from .metric_op import *  # noqa: F401,F403
from .learning_rate_scheduler import *  # noqa: F401,F403
from .ops import *  # noqa: F401,F403 - square, sqrt, abs, exp, log, softsign
from .control_flow import *  # noqa: F401,F403 - less_than, equal, ...
from . import io, nn, tensor  # noqa: F401
from . import learning_rate_scheduler  # noqa: F401
from . import loss, manip, metric_op, sequence_lod  # noqa: F401
from . import control_flow, ops  # noqa: F401
from . import math_sugar  # noqa: F401 - installs Variable arithmetic
from . import indexing  # noqa: F401 - installs Variable indexing
