"""Loss layers (Paddle's nn/layer/loss.py): each holds its options and calls the
nn.functional loss of the same name on forward(input, label)."""
from __future__ import annotations

from psjob.nn import functional as F
from psjob.nn.layer import Layer

__all__ = ["BCEWithLogitsLoss", "BCELoss", "CrossEntropyLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "NLLLoss",
           "MarginRankingLoss", "KLDivLoss", "HingeEmbeddingLoss", "TripletMarginLoss", "HSigmoidLoss"]


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


class L1Loss(Layer):
    def __init__(self, reduction="mean", name=None):
        super().__init__()
        self._reduction = reduction

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.l1_loss(input, label, self._reduction)


class SmoothL1Loss(Layer):
    def __init__(self, reduction="mean", delta=1.0, name=None):
        super().__init__()
        self._reduction, self._delta = reduction, delta

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.smooth_l1_loss(input, label, self._reduction, self._delta)


class NLLLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", name=None):
        super().__init__()
        self._weight, self._ignore_index, self._reduction = weight, ignore_index, reduction

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.nll_loss(input, label, self._weight, self._ignore_index, self._reduction)


class MarginRankingLoss(Layer):
    def __init__(self, margin=0.0, reduction="mean", name=None):
        super().__init__()
        self._margin, self._reduction = margin, reduction

    def forward(self, input, other, label):  # noqa: A002 (Paddle's name)
        return F.margin_ranking_loss(input, other, label, self._margin, self._reduction)


class KLDivLoss(Layer):
    def __init__(self, reduction="mean", log_target=False):
        super().__init__()
        self._reduction, self._log_target = reduction, log_target

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.kl_div(input, label, self._reduction, self._log_target)


class HingeEmbeddingLoss(Layer):
    def __init__(self, margin=1.0, reduction="mean", name=None):
        super().__init__()
        self._margin, self._reduction = margin, reduction

    def forward(self, input, label):  # noqa: A002 (Paddle's name)
        return F.hinge_embedding_loss(input, label, self._margin, self._reduction)


class TripletMarginLoss(Layer):
    def __init__(self, margin=1.0, p=2.0, epsilon=1e-6, swap=False, reduction="mean", name=None):
        super().__init__()
        self._args = dict(margin=margin, p=p, epsilon=epsilon, swap=swap, reduction=reduction)

    def forward(self, input, positive, negative):  # noqa: A002 (Paddle's name)
        return F.triplet_margin_loss(input, positive, negative, **self._args)


class HSigmoidLoss(Layer):
    """paddle.nn.HSigmoidLoss: weight [num_classes - 1, feature_size] ([num_classes, ...] with
    is_custom), bias [num_classes - 1, 1]; functional.hsigmoid_loss on call."""

    def __init__(self, feature_size, num_classes, weight_attr=None, bias_attr=None, is_custom=False, is_sparse=False,
                 name=None):
        super().__init__()
        if num_classes < 2 and not is_custom:
            raise ValueError(f"HSigmoidLoss: num_classes must be at least 2, got {num_classes}")
        self._num_classes, self._is_sparse = int(num_classes), bool(is_sparse)
        rows = int(num_classes) if is_custom else int(num_classes) - 1
        self.weight = self.create_parameter([rows, int(feature_size)], weight_attr)
        self.bias = self.create_parameter([rows, 1], bias_attr, is_bias=True)

    def forward(self, input, label, path_table=None, path_code=None):  # noqa: A002 (Paddle's name)
        return F.hsigmoid_loss(input, label, self._num_classes, self.weight, self.bias, path_table, path_code,
                               self._is_sparse)
