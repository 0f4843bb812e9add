"""paddle.metric: the static-graph function accuracy (Paddle 2.x's name for Fluid's accuracy
op), and the metric classes Metric, Accuracy, Precision, Recall and Auc, which accumulate over
the numpy values a program's fetches return (update / accumulate / reset / name), as Paddle's.

https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/metric/Overview_en.html
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import Variable
from psjob.fluid.layers.metric_op import accuracy as _accuracy

__all__ = ["accuracy", "Metric", "Accuracy", "Precision", "Recall", "Auc"]


def accuracy(input, label, k=1, correct=None, total=None, name=None):  # noqa: A002 (Paddle's names)
    """Fraction of rows whose label is among the k highest-scored classes."""
    return _accuracy(input, label, k, correct, total)


def _array(value, what):
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    raise ValueError(f"The {what!r} must be a numpy ndarray (a fetched value)")


class Metric:
    """The metric interface: reset(), update(*fetched), accumulate(), name(), and compute(*vars)
    that turns a program's outputs into what update() takes (by default, the outputs as they are)."""

    def reset(self):
        raise NotImplementedError(f"{type(self).__name__}.reset")

    def update(self, *args):
        raise NotImplementedError(f"{type(self).__name__}.update")

    def accumulate(self):
        raise NotImplementedError(f"{type(self).__name__}.accumulate")

    def name(self):
        raise NotImplementedError(f"{type(self).__name__}.name")

    def compute(self, *args):
        return args


class Accuracy(Metric):
    """Top-k accuracy: compute(pred, label) appends the ops of a correct mask [batch, maxk]
    (label as class ids, or one-hot); update(correct) takes its fetched value."""

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        self.topk = tuple(topk)
        self.maxk = max(self.topk)
        base = name or "acc"
        self._name = [f"{base}_top{k}" for k in self.topk] if self.maxk != 1 else [base]
        self.reset()

    def compute(self, pred, label, *args):
        from psjob import tensor as _t
        if not isinstance(pred, Variable) or not isinstance(label, Variable):
            raise TypeError("Accuracy.compute: pred and label must be Variables of the program")
        order = _t.slice(_t.argsort(pred, descending=True), axes=[len(pred.shape) - 1], starts=[0],
                         ends=[self.maxk])
        if len(label.shape) == 1 or (len(label.shape) == 2 and label.shape[-1] == 1):
            label = _t.reshape(label, (-1, 1))
        elif label.shape[-1] != 1:
            label = _t.argmax(label, axis=-1, keepdim=True)
        return _t.cast(_t.equal(order, _t.cast(label, order.dtype)), "float32")

    def update(self, correct, *args):
        correct = _array(correct, "correct")
        samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            hits = float(correct[..., :k].sum())
            accs.append(hits / samples)
            self.total[i] += hits
            self.count[i] += samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        self.total, self.count = [0.0] * len(self.topk), [0] * len(self.topk)

    def accumulate(self):
        res = [float(t) / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def name(self):
        return self._name


def _binary(preds, labels):
    preds, labels = _array(preds, "preds"), _array(labels, "labels")
    rows = labels.shape[0]
    return np.floor(preds.reshape(rows, -1)[:, 0] + 0.5).astype(np.int32), labels.reshape(rows, -1)[:, 0]


class Precision(Metric):
    """tp / (tp + fp) of binary predictions (probabilities rounded at 0.5)."""

    def __init__(self, name="precision", *args, **kwargs):
        self._name = name
        self.reset()

    def update(self, preds, labels):
        pred, label = _binary(preds, labels)
        positive = pred == 1
        self.tp += int(np.sum(positive & (pred == label)))
        self.fp += int(np.sum(positive & (pred != label)))

    def reset(self):
        self.tp = self.fp = 0

    def accumulate(self):
        return float(self.tp) / (self.tp + self.fp) if self.tp + self.fp else 0.0

    def name(self):
        return self._name


class Recall(Metric):
    """tp / (tp + fn) of binary predictions (probabilities rounded at 0.5)."""

    def __init__(self, name="recall", *args, **kwargs):
        self._name = name
        self.reset()

    def update(self, preds, labels):
        pred, label = _binary(preds, labels)
        actual = label == 1
        self.tp += int(np.sum(actual & (pred == 1)))
        self.fn += int(np.sum(actual & (pred != 1)))

    def reset(self):
        self.tp = self.fn = 0

    def accumulate(self):
        return float(self.tp) / (self.tp + self.fn) if self.tp + self.fn else 0.0

    def name(self):
        return self._name


class Auc(Metric):
    """ROC AUC over num_thresholds + 1 buckets of the positive class's probability (preds
    [batch, 2], labels [batch, 1] of 0/1), by the trapezoid rule from the highest bucket down."""

    def __init__(self, curve="ROC", num_thresholds=4095, name="auc", *args, **kwargs):
        if curve != "ROC":
            raise ValueError(f"Auc: curve must be 'ROC' (the one Paddle computes), got {curve!r}")
        self._curve, self._num_thresholds, self._name = curve, int(num_thresholds), name
        self.reset()

    def update(self, preds, labels):
        preds, labels = _array(preds, "preds"), _array(labels, "labels")
        buckets = (preds[:, 1] * self._num_thresholds).astype(np.int64)
        if buckets.size and (buckets.max() > self._num_thresholds or buckets.min() < 0):
            raise ValueError("Auc.update: probabilities must lie in [0, 1]")
        positive = labels.reshape(-1).astype(bool)
        self._stat_pos += np.bincount(buckets[positive], minlength=self._num_thresholds + 1)
        self._stat_neg += np.bincount(buckets[~positive], minlength=self._num_thresholds + 1)

    def accumulate(self):
        pos = np.cumsum(self._stat_pos[::-1])
        neg = np.cumsum(self._stat_neg[::-1])
        if pos[-1] <= 0 or neg[-1] <= 0:
            return 0.0
        prev_pos, prev_neg = np.concatenate([[0.0], pos[:-1]]), np.concatenate([[0.0], neg[:-1]])
        area = np.sum(np.abs(neg - prev_neg) * (pos + prev_pos) / 2.0)
        return float(area / pos[-1] / neg[-1])

    def reset(self):
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def name(self):
        return self._name
