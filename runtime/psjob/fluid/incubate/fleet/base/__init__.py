"""`paddle.fluid.incubate.fleet.base` (see psjob.fluid.incubate)."""
