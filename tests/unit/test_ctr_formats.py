"""The CTR readers' other formats — Criteo TSV, the anchor's 40-column TSV, Parquet — against
slow line-by-line references, with bad lines skipped or raised by name."""
import numpy as np
import pytest

from psjob.dataset import ctr
from psjob.dataset.ctr import _formats
from psjob.dataset.ctr._errors import LineProblem
from psjob.dataset.ctr._parse import columns_from_rows

RNG_SEED = 11


def criteo_rows(rng, n, hex_format="08x"):
    """(label, 13 int-or-None, 26 hex-or-None) rows, about a tenth of the values missing."""
    rows = []
    for _ in range(n):
        ints = [None if rng.random() < 0.1 else int(rng.integers(-3, 10000)) for _ in range(13)]
        cats = [None if rng.random() < 0.1 else format(int(rng.integers(0, 2 ** 32)), hex_format) for _ in range(26)]
        rows.append((int(rng.integers(0, 2)), ints, cats))
    return rows


def criteo_text(rows):
    return "".join("\t".join([str(label)] + ["" if v is None else str(v) for v in ints] +
                             ["" if c is None else c for c in cats]) + "\n" for label, ints, cats in rows)


def reference(path, line_parser):
    """Columns of every line through the reference parser (no bad lines expected)."""
    with open(path, "rb") as f:
        return columns_from_rows([line_parser(line.rstrip(b"\n"), None) for line in f])


def stacked(path, fmt, **kw):
    (batch,) = list(ctr.batches(path, 10 ** 6, format=fmt, **kw))
    return batch


def assert_same(batch, cols):
    np.testing.assert_array_equal(batch.dense, cols.dense)
    np.testing.assert_array_equal(batch.label.ravel(), cols.label)
    for s in range(ctr.NUM_SLOTS):
        np.testing.assert_array_equal(batch.ids[s], cols.ids[s])
        np.testing.assert_array_equal(batch.lod[s], cols.lod[s])


def test_criteo_tsv_parses_as_the_reference_and_hashes_each_slot(tmp_path):
    rows = criteo_rows(np.random.default_rng(RNG_SEED), 3000)
    path = tmp_path / "day_0"
    path.write_text(criteo_text(rows))
    batch = stacked(str(path), "criteo")
    assert_same(batch, reference(path, _formats.criteo_line))
    label, ints, cats = rows[7]
    assert batch.label[7, 0] == label
    assert batch.dense[7].tolist() == [0.0 if v is None else float(v) for v in ints]
    for s in (0, 25):
        value = _formats.MISSING if cats[s] is None else int(cats[s], 16)
        assert batch.ids[s][7] == ctr.hash_ids(s, np.array([value], np.uint64))[0]
    # An empty categorical is the slot's own id, not another slot's.
    assert len({int(ctr.hash_ids(s, np.array([_formats.MISSING], np.uint64))[0]) for s in range(26)}) == 26


def test_criteo_hex_of_any_width_parses_as_the_reference(tmp_path):
    # Unpadded hex ("1a2b") and upper case: the variable-width path, not the 8-digit one.
    rows = criteo_rows(np.random.default_rng(RNG_SEED), 2000, hex_format="X")
    path = tmp_path / "day_1"
    path.write_text(criteo_text(rows))
    assert_same(stacked(str(path), "criteo"), reference(path, _formats.criteo_line))


def test_hex8_values_decode_every_digit_and_case_and_nulls_across_chunks():
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(RNG_SEED)
    alphabet = list("0123456789abcdefABCDEF")
    texts = [None if rng.random() < 0.1 else "".join(rng.choice(alphabet, size=8)) for _ in range(3000)]
    texts += ["00000000", "ffffffff", "FFFFFFFF", "deadBEEF", "0000000a", "a0000000"]
    fixed = pa.binary(8)
    columns = [pa.chunked_array([pa.array([t and t.encode() for t in texts[:101]], fixed),
                                 pa.array([t and t.encode() for t in texts[101:]], fixed)]),
               pa.chunked_array([pa.array([t and t.encode() for t in reversed(texts)], fixed)])]
    values = _formats.hex8_values(columns, len(texts))
    for row, column_texts in zip(values, (texts, texts[::-1])):
        assert [int(v) for v in row] == [_formats.MISSING if t is None else int(t, 16) for t in column_texts]
    for bad in ("+1234567", "1234567-", "0000-000"):  # the only non-hex bytes a Criteo block's fields can hold
        column = pa.chunked_array([pa.array([b"00000001", bad.encode()], fixed)])
        assert _formats.hex8_values([column], 2) is None, bad


def test_the_40_column_tsv_parses_as_the_reference(tmp_path):
    rng = np.random.default_rng(RNG_SEED)
    lines = []
    for _ in range(2000):
        dense = [f"{v:.4f}" for v in rng.random(13) * 100 - 5]
        ids = [str(v) for v in rng.integers(0, 3_670_000, 26)]
        lines.append("\t".join([str(int(rng.integers(0, 2)))] + dense + ids) + "\n")
    path = tmp_path / "part-0"
    path.write_text("".join(lines))
    batch = stacked(str(path), "tsv40")
    assert_same(batch, reference(path, _formats.tsv40_line))
    assert batch.ids[3][0] == int(lines[0].split("\t")[17])
    np.testing.assert_array_equal(batch.dense[1], np.array(lines[1].split("\t")[1:14], dtype=np.float32))


BAD = {
    "criteo": [("1\t2\t3\n", "field_count"), ("2" + "\t" * 39 + "\n", "bad_label"),
               ("1\tx" + "\t" * 38 + "\n", "non_numeric"), ("0" + "\t" * 14 + "zz" + "\t" * 25 + "\n", "non_numeric"),
               ("0" + "\t" * 14 + "123456789" + "\t" * 25 + "\n", "non_numeric")],
    "tsv40": [("1\t2\n", "field_count"), ("1" + "\t0.5" * 13 + "\t" + "\t7" * 25 + "\n", "empty_slot"),
              ("1" + "\tnan" + "\t0.5" * 12 + "\t7" * 26 + "\n", "non_finite"),
              ("1" + "\t0.5" * 13 + "\tq" + "\t7" * 25 + "\n", "non_numeric")],
}


@pytest.mark.parametrize("fmt", ["criteo", "tsv40"])
def test_bad_lines_are_skipped_by_name_or_raised_with_their_line(tmp_path, fmt):
    if fmt == "criteo":
        good = criteo_text(criteo_rows(np.random.default_rng(1), 200)).splitlines(keepends=True)
    else:
        good = [("1" + "\t0.25" * 13 + "\t3" * 26 + "\n")] * 200
    text = list(good)
    where = {}
    for k, (line, problem) in enumerate(BAD[fmt]):
        at = 37 * (k + 1)
        text.insert(at, line)
        where[at + 1] = problem
    path = tmp_path / "data"
    path.write_text("".join(text))
    stats = ctr.ReaderStats()
    batch = stacked(str(path), fmt, stats=stats)
    assert len(batch) == len(good)
    assert {b.line: b.problem.value for b in stats.samples} == where
    clean = tmp_path / "clean"
    clean.write_text("".join(good))
    assert_same(batch, reference(clean, getattr(_formats, f"{fmt}_line")))
    with pytest.raises(ctr.DataError) as err:
        stacked(str(path), fmt, on_error="raise")
    first = min(where)
    assert (err.value.line, err.value.problem.value) == (first, where[first])


def test_parquet_with_a_column_mapping_reads_what_the_criteo_tsv_holds(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = criteo_rows(np.random.default_rng(RNG_SEED), 500)
    tsv = tmp_path / "day_0"
    tsv.write_text(criteo_text(rows))
    mapping = ctr.ColumnMap(label="click", dense=[f"i{j}" for j in range(13)], sparse=[f"c{j}" for j in range(26)])
    data = {"click": pa.array([r[0] for r in rows], pa.int8())}
    data.update({f"i{j}": pa.array([r[1][j] for r in rows], pa.int64()) for j in range(13)})
    data.update({f"c{j}": pa.array([r[2][j] for r in rows], pa.string()) for j in range(26)})
    pq.write_table(pa.table(data), tmp_path / "day_0.parquet", row_group_size=128)
    got = stacked(str(tmp_path / "day_0.parquet"), "parquet", columns=mapping)
    assert_same(got, reference(tsv, _formats.criteo_line))
    # Integer id columns are used as they are; a bad row is named by its row number.
    data = {"label": pa.array([1, None, 0]), **{f"I{j}": pa.array([1.5, 2.0, None]) for j in range(1, 14)},
            **{f"C{j}": pa.array([j, j, j], pa.int64()) for j in range(1, 27)}}
    pq.write_table(pa.table(data), tmp_path / "ints.parquet")
    stats = ctr.ReaderStats()
    got = stacked(str(tmp_path / "ints.parquet"), "parquet", stats=stats)
    assert got.label.ravel().tolist() == [1, 0] and got.ids[4].tolist() == [5, 5]
    assert got.dense[1].tolist() == [0.0] * 13
    assert [(b.line, b.problem.value) for b in stats.samples] == [(2, "bad_label")]
    with pytest.raises(ValueError, match=r"no column\(s\) \['label', 'I1'"):
        stacked(str(tmp_path / "day_0.parquet"), "parquet")


def test_unknown_formats_and_uris_are_named(tmp_path):
    (tmp_path / "x").write_text("")
    with pytest.raises(ValueError, match="format must be one of"):
        ctr.batches(str(tmp_path / "x"), 4, format="csv")
    with pytest.raises(OSError, match="unsupported scheme 'gs'"):  # s3:// is served: test_data_s3.py
        list(ctr.batches("gs://bucket/day_0", 4, format="criteo"))


def test_hex_values_decode_every_length_and_case_and_flag_what_is_not_hex():
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(RNG_SEED)
    alphabet = list("0123456789abcdefABCDEFgx -+/:@G`") + ["\xe9", "\x00", "\x7f"]  # é: two bytes >= 0x80
    texts = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 11)))) for _ in range(5000)]
    texts += ["", "0", "ffffffff", "FFFFFFFF", "00000000", "123456789", "deadBEEF", None]

    def expected(text):
        if not text:
            return _formats.MISSING, False
        ok = len(text) <= _formats.MAX_HEX_DIGITS and all(c in "0123456789abcdefABCDEF" for c in text)
        return (int(text, 16) if ok else None), not ok

    for column in (pa.array(texts, pa.string()), pa.chunked_array([pa.array(texts[:77], pa.binary()),
                                                                   pa.array(texts[77:], pa.binary())])):
        values, not_hex = _formats.hex_values(column)
        for text, value, bad in zip(texts, values, not_hex):
            want, want_bad = expected(text)
            assert bool(bad) == want_bad, text
            if not want_bad:
                assert int(value) == want, text


# Spellings on the bytes the fast paths admit (and a few they refuse): each, put alone in a
# column of an otherwise good line, must be refused by the fast block parser or read as the
# reference line parser reads it — never accepted where the reference names a problem.
ODD_NUMBERS = ["1.", ".5", "1e", "e5", "+", "-", ".", "1e+", "--1", "1-2", "+1", "+.5", "1e5", "1E-3", "-0",
               "007", "1e999", "-1e999", "0.5e", "1.2.3", "+-1", "E", "", "9223372036854775807",
               "9223372036854775808", "-9223372036854775809", "00", "01", "1\r", " 1", "nan", "inf", "0x1"]
ODD_HEX = ["", "0", "F", "abcdefAB", "123456789", "-1", "+1", "g", "1e5", " a", "a\r", "00000000",
           "+1234567", "-1234567", "1234567-", "0000+000", "aBcD0123"]


def odd_lines(fmt):
    """(line, column) pairs: every odd spelling in every kind of column of `fmt`."""
    if fmt == "criteo":
        # Categoricals of other widths, and all of 8 digits (the fixed-width fast path).
        goods = [["1"] + ["5"] * 13 + [cat] * 26 for cat in ("0a", "0000000a")]
        columns = {0: ODD_NUMBERS, 1: ODD_NUMBERS, 13: ODD_NUMBERS, 14: ODD_HEX, 39: ODD_HEX}
    else:
        goods = [["1"] + ["0.5"] * 13 + ["7"] * 26]
        columns = {0: ODD_NUMBERS, 1: ODD_NUMBERS, 13: ODD_NUMBERS, 14: ODD_NUMBERS, 39: ODD_NUMBERS}
    for good in goods:
        for column, spellings in columns.items():
            for text in spellings:
                fields = list(good)
                fields[column] = text
                yield "\t".join(fields).encode(), column


@pytest.mark.parametrize("fmt", ["criteo", "tsv40"])
def test_the_fast_path_never_accepts_a_spelling_the_reference_refuses(fmt):
    block_parser, line_parser = getattr(_formats, f"{fmt}_block"), getattr(_formats, f"{fmt}_line")
    accepted = 0
    for line, column in odd_lines(fmt):
        fast = block_parser(line + b"\n", None)
        try:
            want = columns_from_rows([line_parser(line, None)])
        except LineProblem:
            assert fast is None, (line, column)
            continue
        if fast is not None:
            accepted += 1
            assert_same(ctr.CtrBatch.from_columns(fast), want)
    assert accepted > 10  # the fast path does take the valid spellings it can parse



def test_criteo_and_tsv40_values_beyond_float32_are_malformed_naming_the_line(tmp_path):
    """Finite to Python, inf as the float32 the model is fed."""
    from psjob.dataset.ctr import _formats
    from psjob.dataset.ctr._errors import LineProblem
    criteo = b"1\t" + b"\t".join([b"9" * 40] + [b"1"] * 12) + b"\t" + b"\t".join([b"a1b2c3d4"] * 26)
    with pytest.raises(LineProblem, match=r"integer column 1 \(40 digits\) is beyond float32's range"):
        _formats.criteo_line(criteo, None)
    tsv = b"0\t" + b"\t".join([b"1.5"] * 12 + [b"2e39"]) + b"\t" + b"\t".join([b"7"] * 26)
    with pytest.raises(LineProblem, match=r"dense column 13 is 2e\+39, beyond float32's range"):
        _formats.tsv40_line(tsv, None)
    assert _formats.tsv40_block(tsv + b"\n", None) is None  # the block path leaves it to the line parser
