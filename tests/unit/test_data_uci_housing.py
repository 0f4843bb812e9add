"""UCI housing: the shipped file, Paddle's normalisation and split, checked
against an independent plain-Python computation from the raw file."""
import numpy as np

import psjob
from psjob.dataset import uci_housing


def raw_rows():
    text = uci_housing.data_path().read_text()
    return [[float(v) for v in line.split()] for line in text.splitlines() if line.strip()]


def all_rows():
    train = [(x, y) for x, y in uci_housing.train()()]
    test = [(x, y) for x, y in uci_housing.test()()]
    return train, test


def test_the_shipped_file_has_506_rows_of_14_columns():
    rows = raw_rows()
    assert len(rows) == 506
    assert {len(r) for r in rows} == {14}


def test_the_first_80_percent_of_rows_are_train_and_the_rest_test():
    train, test = all_rows()
    assert (len(train), len(test)) == (404, 102)
    raw = raw_rows()
    # Prices are not normalised, so they identify the rows.
    assert [float(y[0]) for _, y in train] == [np.float32(r[13]) for r in raw[:404]]
    assert [float(y[0]) for _, y in test] == [np.float32(r[13]) for r in raw[404:]]


def test_features_are_normalised_over_the_whole_file_as_paddle_does():
    raw = raw_rows()
    train, test = all_rows()
    got = [x for x, _ in train + test]
    for col in range(13):
        column = [r[col] for r in raw]
        mean = sum(column) / len(column)
        spread = max(column) - min(column)
        for row, features in zip(raw, got):
            expected = (row[col] - mean) / spread
            assert abs(float(features[col]) - expected) < 1e-6, (col, row[col])


def test_first_training_row_matches_hand_computed_values():
    x, y = next(uci_housing.train()())
    # CRIM of row 0 is 0.00632; over the file mean 3.613524, max 88.9762, min 0.00632.
    assert abs(float(x[0]) - (0.00632 - 3.6135235573122535) / (88.9762 - 0.00632)) < 1e-6
    assert float(y[0]) == np.float32(24.0)


def test_readers_yield_float32_features_of_13_and_a_price_of_1():
    for reader in (uci_housing.train(), uci_housing.test()):
        x, y = next(reader())
        assert x.dtype == np.float32 and x.shape == (13,)
        assert y.dtype == np.float32 and y.shape == (1,)


def test_feature_names_and_module_globals_are_available():
    assert len(uci_housing.feature_names) == 13 and uci_housing.feature_names[0] == "CRIM"
    assert uci_housing.UCI_TRAIN_DATA.shape == (404, 14)
    assert uci_housing.UCI_TEST_DATA.shape == (102, 14)


def test_the_fluid_guide_reader_pipeline_runs_unchanged():
    paddle = psjob
    train_reader = paddle.batch(
        paddle.reader.shuffle(paddle.dataset.uci_housing.train(), buf_size=500),
        batch_size=8)
    batches = list(train_reader())
    assert len(batches) == 51 and len(batches[-1]) == 4
    prices = sorted(float(y[0]) for b in batches for _, y in b)
    assert prices == sorted(float(y[0]) for _, y in uci_housing.train()())
