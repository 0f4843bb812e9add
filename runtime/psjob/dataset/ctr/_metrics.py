"""AUC helpers: the empirical ROC AUC of scores, and the Bayes-optimal AUC."""
from __future__ import annotations

import numpy as np


def roc_auc(labels, scores):
    """Area under the ROC curve (Mann-Whitney U), ties counted as one half."""
    labels = np.asarray(labels).reshape(-1).astype(bool)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if labels.shape != scores.shape:
        raise ValueError(f"labels and scores differ in length: {labels.size} vs {scores.size}")
    positives = int(labels.sum())
    negatives = labels.size - positives
    if positives == 0 or negatives == 0:
        raise ValueError("AUC needs at least one positive and one negative label")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    # Average rank of each distinct score (1-based), so tied pairs count 1/2.
    ends = np.cumsum(counts)
    average_rank = ends - (counts - 1) / 2.0
    rank_sum = average_rank[inverse][labels].sum()
    return float((rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives))


def expected_auc(prob):
    """AUC of the true probabilities, in expectation over the labels.

    This is the Bayes-optimal AUC: no model ranks better on average than the
    probabilities that generated the labels. A pair (i, j) counts with weight
    p_i * (1 - p_j): i positive, j negative.
    """
    p = np.sort(np.asarray(prob, dtype=np.float64).reshape(-1))
    neg = 1.0 - p
    below = np.cumsum(neg) - neg
    numerator = float(np.dot(p, below))
    denominator = float(p.sum() * neg.sum() - np.dot(p, neg))
    return numerator / denominator
