"""fluid.metrics: Python-side accumulators of evaluation results across batches.

Each metric keeps plain Python / numpy state; `update` folds in one batch's
results (usually fetched from the program: an accuracy value, predictions
and labels), `eval` reports the metric over everything seen since the last
`reset`. Nothing here touches a Program or a Scope — these run on the host,
after Executor.run, as in Fluid.

`Auc` buckets predictions exactly as the `auc` op does (same bucket
function, same trapezoid integration), so a host-side Auc fed the same
batches reports the op's global AUC.
"""
from __future__ import annotations

import copy

import numpy as np

from psjob.fluid.ops.metric_ops import auc_from_stats, bucket_counts

__all__ = ["MetricBase", "CompositeMetric", "Precision", "Recall", "Accuracy", "ChunkEvaluator",
           "EditDistance", "Auc"]


def _host(x) -> np.ndarray:
    get = getattr(x, "get", None)  # cupy arrays
    return np.asarray(get() if callable(get) else x)


def _scalar(x) -> float:
    """A number, or the single element of a fetched [1] array."""
    return float(_host(x).reshape(-1)[0])


class MetricBase:
    """Base class: public attributes are the state `reset` zeroes; the
    underscored ones (name, settings) survive a reset."""

    def __init__(self, name=None):
        self._name = str(name) if name is not None else self.__class__.__name__

    def __str__(self):
        return self._name

    def reset(self):
        for attr, value in list(self.__dict__.items()):
            if attr.startswith("_"):
                continue
            if isinstance(value, bool):
                setattr(self, attr, False)
            elif isinstance(value, int):
                setattr(self, attr, 0)
            elif isinstance(value, float):
                setattr(self, attr, 0.0)
            elif isinstance(value, (np.ndarray, np.generic)):
                setattr(self, attr, np.zeros_like(value))
            else:
                setattr(self, attr, None)

    def get_config(self) -> dict:
        states = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if not k.startswith("_")}
        return {"name": self._name, "states": states}

    def update(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.update")

    def eval(self):
        raise NotImplementedError(f"{type(self).__name__}.eval")


class CompositeMetric(MetricBase):
    """Several metrics updated with the same (preds, labels)."""

    def __init__(self, name=None):
        super().__init__(name)
        self._metrics = []

    def add_metric(self, metric):
        if not isinstance(metric, MetricBase):
            raise TypeError(f"add_metric needs a MetricBase, got {type(metric).__name__}")
        self._metrics.append(metric)

    def reset(self):
        for m in self._metrics:
            m.reset()

    def update(self, preds, labels):
        for m in self._metrics:
            m.update(preds, labels)

    def eval(self):
        return [m.eval() for m in self._metrics]


def _binary(preds, labels, what):
    p = _host(preds).reshape(-1)
    y = _host(labels).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"{what}: {p.size} predictions but {y.size} labels")
    return np.rint(p).astype(np.int64) == 1, y.astype(np.int64) == 1


class Precision(MetricBase):
    """tp / (tp + fp) of binary predictions (probabilities rounded at 0.5)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        pred, pos = _binary(preds, labels, "Precision.update")
        self.tp += int((pred & pos).sum())
        self.fp += int((pred & ~pos).sum())

    def eval(self):
        predicted = self.tp + self.fp
        return float(self.tp) / predicted if predicted else 0.0


class Recall(MetricBase):
    """tp / (tp + fn) of binary predictions (probabilities rounded at 0.5)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        pred, pos = _binary(preds, labels, "Recall.update")
        self.tp += int((pred & pos).sum())
        self.fn += int((~pred & pos).sum())

    def eval(self):
        actual = self.tp + self.fn
        return float(self.tp) / actual if actual else 0.0


class Accuracy(MetricBase):
    """Weighted average of per-batch accuracies: update(value, weight=batch size)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        value, weight = _scalar(value), _scalar(weight)
        if weight < 0:
            raise ValueError(f"Accuracy.update: weight must not be negative, got {weight}")
        self.value += value * weight
        self.weight += weight

    def eval(self):
        if self.weight == 0:
            raise ValueError("Accuracy.eval: no batch was added (total weight is 0); call update first")
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Precision, recall and F1 of chunks from per-batch chunk counts."""

    def __init__(self, name=None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        self.num_infer_chunks += int(_scalar(num_infer_chunks))
        self.num_label_chunks += int(_scalar(num_label_chunks))
        self.num_correct_chunks += int(_scalar(num_correct_chunks))

    def eval(self):
        precision = self.num_correct_chunks / self.num_infer_chunks if self.num_infer_chunks else 0.0
        recall = self.num_correct_chunks / self.num_label_chunks if self.num_label_chunks else 0.0
        f1 = 2 * precision * recall / (precision + recall) if self.num_correct_chunks else 0.0
        return precision, recall, f1


class EditDistance(MetricBase):
    """Average edit distance and the fraction of sequences with any error."""

    def __init__(self, name=None):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        d = _host(distances).astype(np.float64).reshape(-1)
        self.total_distance += float(d.sum())
        self.seq_num += int(_scalar(seq_num))
        self.instance_error += int((d != 0).sum())

    def eval(self):
        if self.seq_num == 0:
            raise ValueError("EditDistance.eval: no sequence was added; call update first")
        return self.total_distance / self.seq_num, self.instance_error / self.seq_num


class Auc(MetricBase):
    """ROC AUC over all updates, bucketed like the `auc` op.

    preds: [N, 1] or [N, C] probabilities (the last column is the positive
    class, so Fluid's [N, 2] softmax output works); labels: [N] or [N, 1], nonzero = positive.
    """

    def __init__(self, name=None, curve="ROC", num_thresholds=4095):
        super().__init__(name)
        if curve != "ROC":
            raise ValueError(f"Auc: argument 'curve' must be 'ROC' (the only curve implemented), got {curve!r}")
        if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, int) or num_thresholds < 1:
            raise ValueError(f"Auc: argument 'num_thresholds' must be a positive int, got {num_thresholds!r}")
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._stat_pos = np.zeros(num_thresholds + 1, dtype=np.int64)
        self._stat_neg = np.zeros(num_thresholds + 1, dtype=np.int64)

    def reset(self):
        # The stats are underscored (as in Fluid) but are state: clear them too.
        self._stat_pos[:] = 0
        self._stat_neg[:] = 0

    def update(self, preds, labels):
        preds, labels = _host(preds), _host(labels)
        if preds.ndim == 0 or labels.ndim == 0:
            raise ValueError("Auc.update: preds and labels must be arrays with one row per example")
        pos, neg = bucket_counts(np, preds.astype(np.float64, copy=False), labels, self._num_thresholds)
        self._stat_pos += pos
        self._stat_neg += neg

    def eval(self):
        return auc_from_stats(np, self._stat_pos, self._stat_neg)
