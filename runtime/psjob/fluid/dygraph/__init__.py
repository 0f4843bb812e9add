"""`paddle.fluid.dygraph`: Fluid's imperative mode, which psjob does not have.

The modules exist so that a script importing dygraph names next to its static-graph
code (Paddle 1.8's distributed test harness, test_dist_base.py, does) imports and runs
its static parts; calling any dygraph name raises DygraphNotSupported with what to use
instead."""
from __future__ import annotations

from psjob.fluid.dygraph import base, parallel
from psjob.fluid.dygraph._refuse import DygraphNotSupported
from psjob.fluid.dygraph.base import enabled, guard, no_grad, to_variable
from psjob.fluid.dygraph.parallel import DataParallel, ParallelStrategy, prepare_context

__all__ = ["base", "parallel", "DygraphNotSupported", "enabled", "guard", "no_grad", "to_variable",
           "DataParallel", "ParallelStrategy", "prepare_context"]
