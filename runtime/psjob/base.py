"""`paddle.base`: Paddle 2.5 renamed `paddle.fluid` to `paddle.base`; here it is psjob.fluid itself.

    import psjob.base as base             # was: import paddle.base as base
    from psjob.base import core           # was: from paddle.base import core
    import psjob.base.framework           # the same module object as psjob.fluid.framework

Importing this module replaces it in sys.modules by psjob.fluid and registers every
psjob.fluid submodule under the psjob.base name too, so `import psjob.base.x` finds the
module already loaded as psjob.fluid.x instead of loading a second copy of it (whose
classes would differ from Fluid's).
"""
import sys

from psjob import fluid

# Every module of the framework is aliased: its API (psjob.fluid loads it on first use) and
# the modules the API does not load itself.
from psjob.fluid import dataset_trainer, fluid_api, log_helper, pipeline, profiler  # noqa: F401
from psjob.fluid.dygraph import base as _dygraph_base  # noqa: F401
from psjob.fluid.dygraph import parallel as _dygraph_parallel  # noqa: F401
from psjob.fluid.transpiler import heter_split  # noqa: F401

_PREFIX = fluid.__name__ + "."

for _name, _module in list(sys.modules.items()):
    if _name.startswith(_PREFIX) and _module is not None:
        sys.modules[__name__ + "." + _name[len(_PREFIX):]] = _module
sys.modules[__name__] = fluid
