"""`paddle.fluid.incubate.fleet.parameter_server` (see psjob.fluid.incubate)."""
