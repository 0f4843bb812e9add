"""`paddle.fluid.dygraph.base`: importable, so that scripts which also hold dygraph code
(Paddle 1.8's own distributed test harness imports `to_variable` at the top) run their
static-graph parts; using any of these names raises DygraphNotSupported."""
from __future__ import annotations

from psjob.fluid.dygraph._refuse import refuse

guard = refuse("guard")
to_variable = refuse("to_variable")
no_grad = refuse("no_grad")


def enabled() -> bool:
    """Fluid's `dygraph.enabled()`: psjob is never in dygraph mode."""
    return False


__all__ = ["guard", "to_variable", "no_grad", "enabled"]
