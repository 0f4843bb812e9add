"""Loss layers (Paddle's nn/layer/loss.py): each holds its options and calls the
nn.functional loss of the same name on forward(input, label)."""
from __future__ import annotations

from psjob.nn import functional as F
from psjob.nn.layer import Layer

__all__ = ["BCEWithLogitsLoss", "BCELoss", "CrossEntropyLoss", "MSELoss"]


class BCEWithLogitsLoss(Layer):
    def __init__(self, weight=None, reduction="mean", pos_weight=None, name=None):
        super().__init__()
        self._weight, self._reduction, self._pos_weight = weight, reduction, pos_weight

    def forward(self, logit, label):
        return F.binary_cross_entropy_with_logits(logit, label, self._weight, self._reduction, self._pos_weight)


class BCELoss(Layer):
    def __init__(self, weight=None, reduction="mean", name=None):
        super().__init__()
        self._weight, self._reduction = weight, reduction

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.binary_cross_entropy(input, label, self._weight, self._reduction)


class CrossEntropyLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                 use_softmax=True, label_smoothing=0.0, name=None):
        super().__init__()
        if label_smoothing:
            raise ValueError("CrossEntropyLoss: label_smoothing is not supported; smooth the soft labels "
                             "and pass soft_label=True")
        self._args = dict(weight=weight, ignore_index=ignore_index, reduction=reduction,
                          soft_label=soft_label, axis=axis, use_softmax=use_softmax)

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.cross_entropy(input, label, **self._args)


class MSELoss(Layer):
    def __init__(self, reduction="mean"):
        super().__init__()
        self._reduction = reduction

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.mse_loss(input, label, self._reduction)
