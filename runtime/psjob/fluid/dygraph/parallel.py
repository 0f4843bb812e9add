"""`paddle.fluid.dygraph.parallel`: importable (see psjob.fluid.dygraph.base); data-parallel
dygraph training is not psjob's (it trains with parameter servers: use fleet or
DistributeTranspiler), so every name raises DygraphNotSupported when used."""
from __future__ import annotations

from psjob.fluid.dygraph._refuse import refuse

DataParallel = refuse("DataParallel")
ParallelStrategy = refuse("ParallelStrategy")
prepare_context = refuse("prepare_context")
Env = refuse("Env")

__all__ = ["DataParallel", "ParallelStrategy", "prepare_context", "Env"]
