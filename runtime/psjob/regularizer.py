"""paddle.regularizer: weight decay with Paddle 2.x's argument name (`coeff`)."""
from __future__ import annotations

from psjob.fluid import regularizer as _fr

__all__ = ["L1Decay", "L2Decay"]


class L2Decay(_fr.L2DecayRegularizer):
    """Adds coeff * param to the gradient (sparse gradients: only the rows present)."""

    def __init__(self, coeff=0.0):
        super().__init__(coeff)


class L1Decay(_fr.L1DecayRegularizer):
    """Adds coeff * sign(param) to the gradient."""

    def __init__(self, coeff=0.0):
        super().__init__(coeff)
