"""Synthetic CTR generator: determinism, shard independence, id modes, format.

Files are really written to a temporary directory and read back with plain
Python string handling (not our parser) wherever the format itself is checked.
"""
import json

import numpy as np
import pytest

from psjob.dataset import ctr


def read_lines(files):
    out = []
    for f in files:
        with open(f, "rb") as fh:
            out += fh.read().splitlines()
    return out


def test_generation_is_byte_identical_across_runs(tmp_path):
    a = ctr.generate(tmp_path / "a", 3000, num_files=2, seed=11)
    b = ctr.generate(tmp_path / "b", 3000, num_files=2, seed=11)
    assert [open(f, "rb").read() for f in a.files] == [open(f, "rb").read() for f in b.files]


def test_the_same_examples_come_out_whatever_the_number_of_shards(tmp_path):
    one = ctr.generate(tmp_path / "one", 20000, num_files=1, seed=5)
    seven = ctr.generate(tmp_path / "seven", 20000, num_files=7, seed=5)
    assert len(seven.files) == 7
    assert read_lines(one.files) == read_lines(seven.files)
    sizes = [len(read_lines([f])) for f in seven.files]
    assert sizes == [20000 * (k + 1) // 7 - 20000 * k // 7 for k in range(7)]


def test_a_longer_run_starts_with_the_shorter_one(tmp_path):
    short = ctr.generate(tmp_path / "s", 9000, seed=2)
    long = ctr.generate(tmp_path / "l", 17000, seed=2)
    assert read_lines(long.files)[:9000] == read_lines(short.files)


def test_different_seeds_give_different_data(tmp_path):
    a = ctr.generate(tmp_path / "a", 500, seed=1)
    b = ctr.generate(tmp_path / "b", 500, seed=2)
    assert read_lines(a.files) != read_lines(b.files)


def test_every_line_has_a_label_13_dense_values_and_26_nonempty_slots(tmp_path):
    gen = ctr.generate(tmp_path, 4000, seed=0)
    counts = {s: set() for s in range(26)}
    for line in read_lines(gen.files):
        label, dense, slots = line.decode().split("\t")
        assert label in ("0", "1")
        values = [float(v) for v in dense.split(",")]
        assert len(values) == 13 and all(0.0 <= v <= 1.0 for v in values)
        slot_texts = slots.split(",")
        assert len(slot_texts) == 26
        for s, text in enumerate(slot_texts):
            ids = [int(t) for t in text.split(" ")]
            counts[s].add(len(ids))
            low = ctr.SLOT_OFFSETS[s]
            assert all(low <= i < low + ctr.SLOT_VOCAB[s] for i in ids)
    for s in range(26):
        if s in ctr.MULTI_ID_SLOTS:
            assert counts[s] == set(range(1, ctr.MAX_IDS_PER_SLOT + 1))
        else:
            assert counts[s] == {1}


def test_hash_mode_holds_the_same_examples_with_a_consistent_id_mapping(tmp_path):
    dense = read_lines(ctr.generate(tmp_path / "d", 3000, seed=4).files)
    hashed = read_lines(ctr.generate(tmp_path / "h", 3000, seed=4, id_mode="hash").files)
    mapping = {}
    saw_negative = False
    for d_line, h_line in zip(dense, hashed):
        d_label, d_dense, d_slots = d_line.decode().split("\t")
        h_label, h_dense, h_slots = h_line.decode().split("\t")
        assert (d_label, d_dense) == (h_label, h_dense)
        for d_ids, h_ids in zip(d_slots.split(","), h_slots.split(",")):
            for d_id, h_id in zip(d_ids.split(" "), h_ids.split(" "), strict=True):
                assert mapping.setdefault(int(d_id), int(h_id)) == int(h_id)
                saw_negative |= int(h_id) < 0
    # One-to-one: distinct dense ids never share a hash.
    assert len(set(mapping.values())) == len(mapping)
    assert saw_negative
    assert all(-2 ** 63 <= h < 2 ** 63 for h in mapping.values())


def test_hash_ids_are_a_fixed_function_of_slot_and_id():
    first = ctr.hash_ids(3, np.arange(5))
    assert np.array_equal(first, ctr.hash_ids(3, np.arange(5)))
    assert not np.array_equal(first, ctr.hash_ids(4, np.arange(5)))
    assert first.dtype == np.int64


def test_in_memory_samples_are_windows_of_one_stream():
    whole = ctr.sample(9, 20000)
    window = ctr.sample(9, 5000, start=8000)
    assert np.array_equal(window.label, whole.label[8000:13000])
    assert np.array_equal(window.dense, whole.dense[8000:13000])
    for s in ctr.MULTI_ID_SLOTS:
        off = whole.offsets(s)
        assert np.array_equal(window.ids[s], whole.ids[s][off[8000]:off[13000]])


def test_labels_follow_the_hidden_probabilities_at_a_criteo_like_rate():
    ex = ctr.sample(0, 100000)
    assert 0.23 < ex.label.mean() < 0.27
    assert abs(ex.label.mean() - ex.prob.mean()) < 0.01
    bayes = ctr.expected_auc(ex.prob)
    assert 0.80 < bayes < 0.86
    # The realised labels rank about as well as the expectation says.
    assert abs(ctr.roc_auc(ex.label, ex.prob) - bayes) < 0.01


def test_meta_json_describes_the_data_set(tmp_path):
    gen = ctr.generate(tmp_path, 2000, num_files=2, seed=3, id_mode="hash")
    meta = json.loads(open(gen.meta_path).read())
    assert meta["id_mode"] == "hash" and meta["seed"] == 3 and meta["num_examples"] == 2000
    assert meta["files"] == ["part-00000.txt", "part-00001.txt"]
    assert meta["sparse_feature_dim"] == sum(ctr.SLOT_VOCAB) == ctr.SPARSE_FEATURE_DIM
    assert meta["bayes_auc"] == pytest.approx(gen.bayes_auc)


def test_generate_refuses_a_directory_holding_a_data_set_unless_told_to_overwrite(tmp_path):
    ctr.generate(tmp_path, 100, num_files=3, seed=0)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        ctr.generate(tmp_path, 100, seed=0)
    gen = ctr.generate(tmp_path, 100, num_files=1, seed=0, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.json", "part-00000.txt"]
    assert len(read_lines(gen.files)) == 100


@pytest.mark.parametrize("kwargs, message", [
    ({"num_examples": -1}, "num_examples"),
    ({"num_files": 0}, "num_files"),
    ({"id_mode": "sparse"}, "id_mode"),
])
def test_generate_rejects_bad_options(tmp_path, kwargs, message):
    args = {"num_examples": 10, "num_files": 1, "seed": 0, "id_mode": "dense", **kwargs}
    with pytest.raises(ValueError, match=message):
        ctr.generate(tmp_path, **args)


def test_roc_auc_counts_ties_as_one_half():
    assert ctr.roc_auc([0, 1], [0.5, 0.5]) == 0.5
    assert ctr.roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
