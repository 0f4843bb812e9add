"""`paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler`: `fleet` is psjob's
Fleet singleton (psjob.fleet), the transpiler-based Fleet this module held in Fluid 1.x."""
from psjob.fleet import DistributedOptimizer, fleet

__all__ = ["fleet"]
