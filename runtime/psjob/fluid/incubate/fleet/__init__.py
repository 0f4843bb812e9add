"""`paddle.fluid.incubate.fleet` (see psjob.fluid.incubate)."""
