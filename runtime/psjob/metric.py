"""paddle.metric's static-graph function: accuracy (Paddle 2.x's name for Fluid's accuracy op).

https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/metric/accuracy_en.html
"""
from __future__ import annotations

from psjob.fluid.layers.metric_op import accuracy as _accuracy

__all__ = ["accuracy"]


def accuracy(input, label, k=1, correct=None, total=None, name=None):  # noqa: A002 (Paddle's names)
    """Fraction of rows whose label is among the k highest-scored classes."""
    return _accuracy(input, label, k, correct, total)
