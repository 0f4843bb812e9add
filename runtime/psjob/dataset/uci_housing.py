"""UCI housing (Boston) regression data, shipped inside the package.

Mirrors `paddle.dataset.uci_housing`: the whole file (506 rows × 14 columns)
is read once, on the first `train()`/`test()` call; each of the 13 features is
normalised to (x − mean) / (max − min) with statistics over all 506 rows
(train and test together, exactly as Paddle does), and the first 80 % of rows
(404) are the training set, the remaining 102 the test set. Readers yield
`(features float32[13], price float32[1])`; the price (MEDV, in $1000s) is not
normalised. The data file and its provenance note live in `dataset/data/`.
"""
from __future__ import annotations

import importlib.resources
import threading

import numpy as np

feature_names = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS",
                 "RAD", "TAX", "PTRATIO", "B", "LSTAT"]
label_name = "MEDV"
FEATURE_NUM = 14  # 13 features + the price
TRAIN_RATIO = 0.8

_lock = threading.Lock()
_cache: dict[str, np.ndarray] = {}


def data_path():
    """Path of the shipped `housing.data` (whitespace-separated, 14 columns)."""
    return importlib.resources.files("psjob.dataset") / "data" / "housing.data"


def load_data():
    """(train, test) float32 arrays of shape [404, 14] and [102, 14], normalised."""
    with _lock:
        if not _cache:
            raw = np.array(data_path().read_text().split(), dtype=np.float64)
            if raw.size % FEATURE_NUM:
                raise ValueError(f"{data_path()}: {raw.size} values is not a "
                                 f"multiple of {FEATURE_NUM} columns")
            data = raw.reshape(-1, FEATURE_NUM)
            maximums, minimums = data.max(axis=0), data.min(axis=0)
            averages = data.sum(axis=0) / data.shape[0]
            features = slice(0, FEATURE_NUM - 1)
            data[:, features] = ((data[:, features] - averages[features])
                                 / (maximums[features] - minimums[features]))
            offset = int(data.shape[0] * TRAIN_RATIO)
            _cache["train"] = data[:offset].astype(np.float32)
            _cache["test"] = data[offset:].astype(np.float32)
        return _cache["train"], _cache["test"]


def _reader(split):
    def reader():
        rows = load_data()[0 if split == "train" else 1]
        for row in rows:
            yield row[:-1].copy(), row[-1:].copy()
    return reader


def train():
    """Reader over the 404 training rows: (features float32[13], price float32[1])."""
    return _reader("train")


def test():
    """Reader over the 102 test rows, same layout as train()."""
    return _reader("test")


def __getattr__(name):
    # Paddle scripts sometimes read these module globals after loading.
    if name == "UCI_TRAIN_DATA":
        return load_data()[0]
    if name == "UCI_TEST_DATA":
        return load_data()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
