"""CTR readers: values read back equal the generator's, batches are the
examples stacked with LoD offsets, and malformed lines are skipped and
counted or raised with file and line, per policy. Real files in tmp_path."""
import numpy as np
import pytest

from psjob.dataset import ctr
from psjob.dataset.ctr import _parse, _reader


@pytest.fixture(scope="module")
def dense_set(tmp_path_factory):
    return ctr.generate(tmp_path_factory.mktemp("dense"), 5000, num_files=3, seed=8)


@pytest.fixture(scope="module")
def truth():
    return ctr.sample(8, 5000)


def test_reader_yields_what_the_generator_drew(dense_set, truth):
    examples = list(ctr.reader(dense_set.files)())
    assert len(examples) == 5000
    offsets = [truth.offsets(s) for s in range(26)]
    for i in (0, 1, 2499, 4999):
        dense, slots, label = examples[i]
        assert dense.dtype == np.float32 and dense.shape == (13,)
        np.testing.assert_allclose(dense, truth.dense[i], atol=1e-6)
        assert label.dtype == np.int64 and label.tolist() == [truth.label[i]]
        assert len(slots) == 26
        for s, ids in enumerate(slots):
            local = truth.ids[s][offsets[s][i]:offsets[s][i + 1]]
            assert ids.dtype == np.int64
            assert ids.tolist() == ctr.global_ids(s, local, "dense").tolist()


def test_batches_stack_the_same_examples_with_lod_offsets(dense_set):
    examples = list(ctr.reader(dense_set.files)())
    got = list(ctr.batches(dense_set.files, 512))
    assert [len(b) for b in got] == [512] * 9 + [392]
    row = 0
    for b in got:
        assert b.dense.shape == (len(b), 13) and b.label.shape == (len(b), 1)
        for i in range(len(b)):
            dense, slots, label = examples[row + i]
            assert np.array_equal(b.dense[i], dense) and b.label[i, 0] == label[0]
            for s in (0, 2, 25):
                lod = b.lod[s]
                assert np.array_equal(b.ids[s][lod[i]:lod[i + 1]], slots[s])
        for s in range(26):
            assert b.lod[s][0] == 0 and b.lod[s][-1] == len(b.ids[s])
            assert len(b.lod[s]) == len(b) + 1
        row += len(b)


@pytest.mark.parametrize("block_bytes", [None, 4096])
def test_slots_with_equal_offsets_share_one_lod_object(dense_set, monkeypatch, block_bytes):
    """Equal offsets come as one object (the executor checks it once, the fused pooling
    ops segment it once per batch); slots with other offsets keep their own. Small
    blocks: batches made by concatenating pieces of blocks share theirs too."""
    if block_bytes:
        monkeypatch.setattr(_reader, "BLOCK_BYTES", block_bytes)
    for b in ctr.batches(dense_set.files, 300):
        for s in range(26):
            for t in range(s):
                assert (b.lod[s] is b.lod[t]) == np.array_equal(b.lod[s], b.lod[t]), (s, t)
        assert len({id(lod) for lod in b.lod}) < 26


def test_batches_can_drop_the_short_last_batch(dense_set):
    got = list(ctr.batches(dense_set.files, 512, drop_last=True))
    assert [len(b) for b in got] == [512] * 9


def test_small_blocks_give_the_same_batches(dense_set, monkeypatch):
    expected = list(ctr.batches(dense_set.files, 300))
    monkeypatch.setattr(_reader, "BLOCK_BYTES", 4096)
    got = list(ctr.batches(dense_set.files, 300))
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert np.array_equal(a.dense, b.dense) and np.array_equal(a.label, b.label)
        assert all(np.array_equal(x, y) for x, y in zip(a.ids, b.ids))
        assert all(np.array_equal(x, y) for x, y in zip(a.lod, b.lod))


def test_hash_mode_files_read_back_with_the_same_labels(tmp_path, dense_set):
    hashed = ctr.generate(tmp_path, 5000, num_files=2, seed=8, id_mode="hash")
    labels = np.concatenate([b.label for b in ctr.batches(hashed.files, 1000, id_mode="hash")])
    dense_labels = np.concatenate([b.label for b in ctr.batches(dense_set.files, 1000)])
    assert np.array_equal(labels, dense_labels)


def test_a_directory_expands_to_its_part_files(dense_set):
    directory = dense_set.files[0].rsplit("/", 1)[0]
    assert ctr.list_files(directory) == list(dense_set.files)


def test_fast_and_reference_parsers_agree_on_clean_lines(dense_set, tmp_path):
    hashed = ctr.generate(tmp_path, 800, seed=1, id_mode="hash")
    for path, mode in ((dense_set.files[0], "dense"), (hashed.files[0], "hash")):
        lines = open(path, "rb").read().splitlines()[:800]
        ranges = _parse.id_ranges(mode)
        fast = _parse.parse_block_fast(b"\n".join(lines) + b"\n", ranges)
        slow = _parse.columns_from_rows([_parse.parse_line(line, ranges) for line in lines])
        assert fast is not None
        assert np.array_equal(fast.dense, slow.dense) and np.array_equal(fast.label, slow.label)
        for s in range(26):
            assert np.array_equal(fast.ids[s], slow.ids[s])
            assert np.array_equal(fast.lod[s], slow.lod[s])


# ---- malformed input ---------------------------------------------------------

def good_line(i):
    dense = ",".join(f"{(i * 7 + j) % 10 / 10:.4f}" for j in range(13))
    slots = ",".join(str(ctr.SLOT_OFFSETS[s] + (i + s) % 7) for s in range(26))
    return f"{i % 2}\t{dense}\t{slots}"


def replace_slot(line, slot, text):
    label, dense, slots = line.split("\t")
    parts = slots.split(",")
    parts[slot] = text
    return "\t".join([label, dense, ",".join(parts)])


def replace_dense(line, index, text):
    label, dense, slots = line.split("\t")
    parts = dense.split(",")
    parts[index] = text
    return "\t".join([label, ",".join(parts), slots])


def drop_last_dense(line):
    label, dense, slots = line.split("\t")
    return "\t".join([label, dense.rsplit(",", 1)[0], slots])


BAD = {  # line number (1-based) -> (problem, text)
    3: (ctr.Problem.FIELD_COUNT, "1\t0.5,0.5"),
    10: (ctr.Problem.NON_NUMERIC, replace_dense(good_line(10), 4, "abc")),
    11: (ctr.Problem.DENSE_COUNT, drop_last_dense(good_line(11))),
    20: (ctr.Problem.SLOT_COUNT, good_line(20).rsplit(",", 1)[0]),
    40: (ctr.Problem.EMPTY_SLOT, replace_slot(good_line(40), 5, "")),
    41: (ctr.Problem.ID_OUT_OF_RANGE, replace_slot(good_line(41), 0, "5000")),
    77: (ctr.Problem.BAD_LABEL, "2" + good_line(77)[1:]),
    78: (ctr.Problem.NON_FINITE, replace_dense(good_line(78), 0, "nan")),
    90: (ctr.Problem.NON_NUMERIC, replace_slot(good_line(90), 2, "12x")),
    95: (ctr.Problem.NON_NUMERIC, replace_slot(good_line(95), 3, "99999999999999999999")),
}


@pytest.fixture
def bad_file(tmp_path):
    lines = [BAD[n][1] if n in BAD else good_line(n) for n in range(1, 121)]
    path = tmp_path / "part-00000.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_crafted_lines_are_what_their_names_say():
    assert len(BAD[11][1].split("\t")[1].split(",")) == 12
    assert len(BAD[20][1].split("\t")[2].split(",")) == 25


def test_skip_policy_drops_bad_lines_and_counts_them_by_problem(bad_file):
    stats = ctr.ReaderStats()
    got = list(ctr.reader(bad_file, stats=stats)())
    assert len(got) == 120 - len(BAD)
    expected_labels = [n % 2 for n in range(1, 121) if n not in BAD]
    assert [int(label[0]) for _, _, label in got] == expected_labels
    expected = {}
    for problem, _ in BAD.values():
        expected[problem] = expected.get(problem, 0) + 1
    assert dict(stats.skipped) == expected
    assert (stats.lines, stats.examples, stats.skipped_total) == (120, 110, 10)
    assert [(b.file, b.line) for b in stats.samples] == [(bad_file, n) for n in sorted(BAD)]
    assert [b.problem for b in stats.samples] == [BAD[n][0] for n in sorted(BAD)]
    assert "slot 0 id 5000 outside [0, 1000)" in str(stats.samples[5])
    assert "skipped 10 malformed" in stats.summary()


def test_skip_policy_logs_the_counts_when_no_stats_object_is_given(bad_file, caplog):
    with caplog.at_level("WARNING", logger="psjob.dataset.ctr"):
        assert sum(len(b) for b in ctr.batches(bad_file, 16)) == 110
    assert "skipped 10 malformed lines" in caplog.text


def test_raise_policy_names_file_line_and_problem_of_the_first_bad_line(bad_file):
    with pytest.raises(ctr.DataError) as info:
        list(ctr.batches(bad_file, 16, on_error="raise"))
    error = info.value
    assert (error.file, error.line, error.problem) == (bad_file, 3, ctr.Problem.FIELD_COUNT)
    assert str(info.value).startswith(f"{bad_file}:3: field_count: expected 3 tab-separated fields")


def test_bad_lines_deep_inside_a_large_block_are_found_by_bisection(tmp_path, dense_set):
    lines = open(dense_set.files[0], "rb").read().splitlines()
    lines[1234] = b"garbage"
    path = tmp_path / "big.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    stats = ctr.ReaderStats()
    assert sum(len(b) for b in ctr.batches(str(path), 1000, stats=stats)) == len(lines) - 1
    assert [(b.line, b.problem) for b in stats.samples] == [(1235, ctr.Problem.FIELD_COUNT)]
    with pytest.raises(ctr.DataError, match=r"big.txt:1235: field_count"):
        list(ctr.batches(str(path), 1000, on_error="raise"))


def test_hash_mode_accepts_any_int64_and_rejects_what_does_not_fit(tmp_path):
    extremes = replace_slot(replace_slot(good_line(1), 0, str(-2 ** 63)), 1, str(2 ** 63 - 1))
    too_big = replace_slot(good_line(2), 4, str(2 ** 63))
    path = tmp_path / "h.txt"
    path.write_text(extremes + "\n" + too_big + "\n")
    stats = ctr.ReaderStats()
    got = list(ctr.reader(str(path), id_mode="hash", stats=stats)())
    assert len(got) == 1
    assert got[0][1][0].tolist() == [-2 ** 63] and got[0][1][1].tolist() == [2 ** 63 - 1]
    assert stats.samples[0].problem == ctr.Problem.NON_NUMERIC and stats.samples[0].line == 2
    # In dense mode the same extreme ids are out of their slots' ranges.
    with pytest.raises(ctr.DataError, match="id_out_of_range"):
        list(ctr.reader(str(path), on_error="raise")())


def test_blank_lines_crlf_endings_and_a_missing_final_newline_are_tolerated(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(f"{good_line(1)}\r\n\n{good_line(2)}\n  \n{good_line(3)}".encode())
    stats = ctr.ReaderStats()
    got = list(ctr.reader(str(path), stats=stats)())
    assert [int(label[0]) for _, _, label in got] == [1, 0, 1]
    assert stats.skipped_total == 0 and stats.blank_lines == 2


def test_multiple_ids_per_slot_are_read_as_sequences(tmp_path):
    line = replace_slot(good_line(4), 2, " ".join(str(ctr.SLOT_OFFSETS[2] + k) for k in (5, 9, 5)))
    path = tmp_path / "m.txt"
    path.write_text(line + "\n" + good_line(5) + "\n")
    (batch,) = ctr.batches(str(path), 8)
    assert batch.lod[2].tolist() == [0, 3, 4]
    assert (batch.ids[2][:3] - ctr.SLOT_OFFSETS[2]).tolist() == [5, 9, 5]


def test_an_overlong_line_is_skipped_without_reading_it_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(_reader, "BLOCK_BYTES", 1024)
    monkeypatch.setattr(_reader, "MAX_LINE_BYTES", 4096)
    path = tmp_path / "long.txt"
    long_line = b"7" * 20000
    path.write_bytes(f"{good_line(1)}\n{long_line.decode()}\n{good_line(3)}\n".encode())
    stats = ctr.ReaderStats()
    got = list(ctr.reader(str(path), stats=stats)())
    assert len(got) == 2
    assert [(b.line, b.problem) for b in stats.samples] == [(2, ctr.Problem.LINE_TOO_LONG)]


def test_options_are_checked_when_the_reader_is_made(dense_set, tmp_path):
    with pytest.raises(ValueError, match="on_error"):
        ctr.reader(dense_set.files, on_error="ignore")
    with pytest.raises(ValueError, match="id_mode"):
        ctr.batches(dense_set.files, 8, id_mode="sparse")
    with pytest.raises(ValueError, match="batch_size"):
        ctr.batches(dense_set.files, 0)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        ctr.reader([str(tmp_path / "nope.txt")])


def test_a_tab_and_a_newline_swapped_between_two_lines_is_caught_not_realigned(tmp_path):
    # Line 1 gets an extra field, line 2 loses one: the totals still match, so
    # only a per-line check notices.
    first, second = good_line(1), good_line(2)
    label2, rest2 = second.split("\t", 1)
    text = f"{first}\t{label2}\n{rest2}\n{good_line(3)}\n"
    assert _parse.parse_block_fast(text.encode(), _parse.id_ranges("dense")) is None
    path = tmp_path / "swap.txt"
    path.write_text(text)
    stats = ctr.ReaderStats()
    assert len(list(ctr.reader(str(path), stats=stats)())) == 1
    assert [(b.line, b.problem) for b in stats.samples] == [
        (1, ctr.Problem.FIELD_COUNT), (2, ctr.Problem.FIELD_COUNT)]


def test_unusual_but_valid_spellings_are_read_as_the_reference_parser_reads_them(tmp_path):
    line = replace_dense(replace_dense(replace_dense(good_line(6), 0, "-0.5"), 1, "1e-1"), 2, ".5")
    line = replace_slot(replace_slot(replace_slot(line, 0, "+5"), 1, "0001007"), 2, "1500  1501")
    path = tmp_path / "odd.txt"
    path.write_text(line + "\n" + good_line(7) + "\n")
    stats = ctr.ReaderStats()
    (dense, slots, _), _ = list(ctr.reader(str(path), stats=stats)())
    assert stats.skipped_total == 0
    assert dense[:3].tolist() == [-0.5, np.float32(0.1), 0.5]
    assert [slots[0].tolist(), slots[1].tolist(), slots[2].tolist()] == [[5], [1007], [1500, 1501]]


@pytest.mark.parametrize("token", ["1\r", "x1", "1+2", "1.0", "--1", "-", "0x10"])
def test_odd_id_tokens_never_slip_through_the_fast_path(token):
    line = replace_slot(good_line(1), 3, token)
    assert _parse.parse_block_fast((line + "\n").encode(), None) is None


def test_a_bad_line_of_almost_a_block_is_skipped_without_recursing_line_by_line(tmp_path):
    """A malformed line of ~0.9 MiB among short good ones: splitting the block where the
    middle falls (inside that line) used to peel one good line per recursion level, and
    thousands of them raised RecursionError even under on_error="skip"."""
    before = [good_line(i) for i in range(1, 3001)]
    after = [good_line(i) for i in range(3002, 3101)]
    huge = "1\t" + "9," * (470 << 10)  # ~0.92 MiB, under MAX_LINE_BYTES, no slots field
    path = tmp_path / "huge.txt"
    path.write_text("\n".join(before + [huge] + after) + "\n")
    stats = ctr.ReaderStats()
    got = sum(len(b) for b in ctr.batches(str(path), 512, stats=stats))
    assert got == 3099 and stats.lines == 3100
    assert [(b.line, b.problem) for b in stats.samples] == [(3001, ctr.Problem.FIELD_COUNT)]
    with pytest.raises(ctr.DataError, match=r"huge.txt:3001: field_count"):
        list(ctr.batches(str(path), 512, on_error="raise"))


@pytest.mark.parametrize("value, detail", [("1e39", "is 1e+39, beyond float32's range (±3.403e+38)"),
                                           ("-3.5e38", "is -3.5e+38, beyond float32's range (±3.403e+38)"),
                                           ("1e400", "is inf")])
def test_a_dense_value_beyond_float32_is_malformed_naming_file_and_line(tmp_path, value, detail):
    """1e39 is finite in float64 but inf in float32, the dtype the model is fed: training
    would die on "auc: Predict contains NaN" naming no file or line."""
    lines = [good_line(i) for i in range(1, 41)]
    lines[16] = replace_dense(lines[16], 3, value)
    path = tmp_path / "f32.txt"
    path.write_text("\n".join(lines) + "\n")
    stats = ctr.ReaderStats()
    batches = list(ctr.batches(str(path), 16, stats=stats))
    assert sum(len(b) for b in batches) == 39
    assert all(np.isfinite(b.dense).all() for b in batches)
    (bad,) = stats.samples
    assert (bad.file, bad.line, bad.problem) == (str(path), 17, ctr.Problem.NON_FINITE)
    assert bad.detail == f"dense value 3 {detail}", bad.detail
    with pytest.raises(ctr.DataError, match=r"f32.txt:17: non_finite: dense value 3 is"):
        list(ctr.batches(str(path), 16, on_error="raise"))


def test_the_largest_float32_values_are_still_read():
    line = replace_dense(replace_dense(good_line(1), 0, "3.4028234e38"), 1, "-3.4e38").encode()
    fast = _parse.parse_block_fast(line + b"\n", _parse.id_ranges("dense"))
    assert fast is not None and np.isfinite(fast.dense).all()
    _, dense, _ = _parse.parse_line(line, _parse.id_ranges("dense"))
    assert np.isfinite(dense).all() and dense[1] == np.float32(-3.4e38)
