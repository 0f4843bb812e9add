"""Parse blocks of CTR text lines into columns, fast when the input is clean.

A block is a run of whole lines (bytes ending in a newline). `parse_block`
first tries the vectorised path, which splits the whole block with bytes
methods, checks its structure with numpy and converts all numbers with a few
bulk calls; it accepts a block only if every line is well formed, so it never
has to know *which* line is bad. When it declines, the block is bisected and
the halves retried, down to runs of SLOW_LINES lines that go through
`parse_line`, the reference parser, one line at a time; it names the problem
of each bad line. The fast path accepts a subset of what `parse_line`
accepts and produces identical values for it (tests compare the two).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from psjob.dataset.ctr._errors import LineProblem, Problem
from psjob.dataset.ctr._layout import NUM_DENSE, NUM_SLOTS, SLOT_OFFSETS, SLOT_VOCAB, check_id_mode

SLOW_LINES = 32
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_FIXED_DENSE_LEN = NUM_DENSE * 7 - 1   # 13 values written as D.DDDD, comma-separated
_DENSE_CHARS = b"0123456789.eE+-,"
# Ids text for np.fromstring: separators to spaces, digits and '-' kept, any
# other byte to 'x', which no number contains.
_ID_TEXT = bytes(c if chr(c) in "0123456789-" else 32 if chr(c) in " ,\n" else ord("x")
                 for c in range(256))


@dataclasses.dataclass(frozen=True)
class Columns:
    """Parsed examples: dense [n, 13] float32, label [n] int64, per-slot ids + LoD offsets."""

    dense: np.ndarray
    label: np.ndarray
    ids: tuple      # 26 flat int64 arrays
    lod: tuple      # 26 int64 arrays of length n+1, lod[s][i]..lod[s][i+1] are example i's ids

    def __post_init__(self):
        object.__setattr__(self, "lod", _shared(self.lod))

    def __len__(self):
        return len(self.label)

    def slice(self, start, stop):
        cut = {}  # slots sharing one LoD object keep sharing one
        for lod in self.lod:
            if id(lod) not in cut:
                cut[id(lod)] = lod[start:stop + 1] - lod[start]
        return Columns(
            self.dense[start:stop], self.label[start:stop],
            tuple(ids[lod[start]:lod[stop]] for ids, lod in zip(self.ids, self.lod)),
            tuple(cut[id(lod)] for lod in self.lod))

    @staticmethod
    def concat(parts):
        parts = [p for p in parts if len(p)] or parts[:1]
        if len(parts) == 1:
            return parts[0]
        lods = []
        for s in range(NUM_SLOTS):
            shifts = np.cumsum([0] + [p.lod[s][-1] for p in parts[:-1]])
            lods.append(np.concatenate([parts[0].lod[s][:1]] +
                                       [p.lod[s][1:] + shift for p, shift in zip(parts, shifts)]))
        return Columns(np.concatenate([p.dense for p in parts]),
                       np.concatenate([p.label for p in parts]),
                       tuple(np.concatenate([p.ids[s] for p in parts]) for s in range(NUM_SLOTS)),
                       tuple(lods))


def _shared(lods):
    """The slots' LoD offsets, each equal to an earlier slot's replaced by that object:
    slots of one layout (every one-id slot) then feed one LoD, which the executor
    checks once and the fused pooling ops (ops/embedding_pool_ops.py) segment once."""
    distinct, out = [], []
    for lod in lods:
        same = next((o for o in distinct if o is lod or (o.shape == lod.shape and np.array_equal(o, lod))), None)
        if same is None:
            distinct.append(lod)
        out.append(lod if same is None else same)
    return tuple(out)


def empty_columns():
    return Columns(np.zeros((0, NUM_DENSE), np.float32), np.zeros(0, np.int64),
                   tuple(np.zeros(0, np.int64) for _ in range(NUM_SLOTS)),
                   tuple(np.zeros(1, np.int64) for _ in range(NUM_SLOTS)))


def id_ranges(id_mode):
    """(low, high) per slot that dense-mode ids must fall in; None in hash mode."""
    if check_id_mode(id_mode) == "hash":
        return None
    low = np.array(SLOT_OFFSETS, dtype=np.int64)
    return low, low + np.array(SLOT_VOCAB, dtype=np.int64)


# ---- reference parser: one line ----------------------------------------------

def parse_line(line, ranges):
    """(label, dense float32[13], [26 int64 arrays]) or LineProblem. `line` has no newline."""
    line = line.rstrip(b"\r")
    fields = line.split(b"\t")
    if len(fields) != 3:
        raise LineProblem(Problem.FIELD_COUNT, "expected 3 tab-separated fields "
                          f"(label, dense, slots), found {len(fields)}")
    label_text, dense_text, slots_text = fields
    try:
        label = int(label_text)
    except ValueError:
        raise LineProblem(Problem.BAD_LABEL, f"label {_show(label_text)} is not 0 or 1") from None
    if label not in (0, 1):
        raise LineProblem(Problem.BAD_LABEL, f"label {label} is not 0 or 1")
    dense_parts = dense_text.split(b",")
    if len(dense_parts) != NUM_DENSE:
        raise LineProblem(Problem.DENSE_COUNT, f"expected {NUM_DENSE} comma-separated "
                          f"dense values, found {len(dense_parts)}")
    dense = np.empty(NUM_DENSE, dtype=np.float64)
    for j, text in enumerate(dense_parts):
        try:
            dense[j] = float(text)
        except ValueError:
            raise LineProblem(Problem.NON_NUMERIC,
                              f"dense value {j} is {_show(text)}, not a number") from None
    if not np.all(np.isfinite(dense)):
        bad = int(np.flatnonzero(~np.isfinite(dense))[0])
        raise LineProblem(Problem.NON_FINITE, f"dense value {bad} is {dense[bad]}")
    check_float32(dense, "dense value {}")
    slot_parts = slots_text.split(b",")
    if len(slot_parts) != NUM_SLOTS:
        raise LineProblem(Problem.SLOT_COUNT,
                          f"expected {NUM_SLOTS} comma-separated slots, found {len(slot_parts)}")
    slots = []
    for s, text in enumerate(slot_parts):
        tokens = text.split()
        if not tokens:
            raise LineProblem(Problem.EMPTY_SLOT, f"slot {s} has no ids")
        values = []
        for token in tokens:
            try:
                value = int(token)
            except ValueError:
                raise LineProblem(Problem.NON_NUMERIC,
                                  f"slot {s} id {_show(token)} is not an integer") from None
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise LineProblem(Problem.NON_NUMERIC, f"slot {s} id {value} does not fit int64")
            if ranges is not None and not ranges[0][s] <= value < ranges[1][s]:
                raise LineProblem(Problem.ID_OUT_OF_RANGE,
                                  f"slot {s} id {value} outside [{ranges[0][s]}, {ranges[1][s]})")
            values.append(value)
        slots.append(np.array(values, dtype=np.int64))
    return label, dense.astype(np.float32), slots


def float32_overflow(values: np.ndarray) -> np.ndarray:
    """Where finite float64 `values` become inf as float32, the type the model is fed (1e39 is
    a number to float(), and inf — then NaN predictions — to the network)."""
    with np.errstate(over="ignore"):
        return ~np.isfinite(np.asarray(values, dtype=np.float64).astype(np.float32))


def check_float32(values: np.ndarray, what: str, first: int = 0) -> None:
    """LineProblem NON_FINITE naming the first of `values` beyond float32's range; `what`
    names it with {} for its number (counted from `first`)."""
    over = np.flatnonzero(float32_overflow(values))
    if over.size:
        j = int(over[0])
        raise LineProblem(Problem.NON_FINITE, f"{what.format(j + first)} is {float(values[j]):g}, beyond float32's "
                          f"range (±{float(np.finfo(np.float32).max):.4g})")


def _show(text, limit=40):
    shown = text[:limit].decode("utf-8", "backslashreplace")
    return repr(shown + ("…" if len(text) > limit else ""))


def columns_from_rows(rows):
    """Columns from parse_line results."""
    if not rows:
        return empty_columns()
    labels, denses, slot_lists = zip(*rows)
    ids, lods = [], []
    for s in range(NUM_SLOTS):
        per_example = [slots[s] for slots in slot_lists]
        ids.append(np.concatenate(per_example))
        counts = np.array([len(x) for x in per_example], dtype=np.int64)
        lods.append(np.concatenate([np.zeros(1, np.int64), np.cumsum(counts)]))
    return Columns(np.stack(denses), np.array(labels, dtype=np.int64), tuple(ids), tuple(lods))


# ---- vectorised parser: a whole block ------------------------------------------

def parse_block_fast(data, ranges, lines=None):
    """Columns for a block of clean lines, or None if anything is irregular.

    `lines` is data.count(b"\n") when the caller already knows it.
    """
    n = data.count(b"\n") if lines is None else lines
    if n == 0 or not data.endswith(b"\n"):
        return None
    fields = data.replace(b"\n", b"\t").split(b"\t")
    if len(fields) != 3 * n + 1:
        return None  # also catches blank lines: each adds a line but only one field
    # Equal totals could still hide one line with 1 tab and the next with 3.
    # The fields imply where each line ends; if all n of those bytes are
    # newlines, and the block holds n newlines, every line has exactly 2 tabs.
    field_len = np.fromiter(map(len, fields), dtype=np.int64, count=len(fields))[:-1]
    line_end = np.cumsum(field_len.reshape(n, 3).sum(axis=1) + 3) - 1
    if not np.all(np.frombuffer(data, dtype=np.uint8)[line_end] == 10):
        return None
    labels = b"".join(fields[0:-1:3])
    if len(labels) != n or labels.translate(None, b"01"):
        return None
    label = np.frombuffer(labels, dtype=np.uint8).astype(np.int64) - 48
    dense = _fast_dense(fields[1::3], field_len[1::3], n)
    if dense is None:
        return None
    slots = _fast_slots(fields[2::3], n, ranges)
    if slots is None:
        return None
    return Columns(dense, label, *slots)


def _fast_dense(texts, lengths, n):
    if np.all(lengths == _FIXED_DENSE_LEN):
        # The generator's own layout, D.DDDD: decode the digits directly.
        cells = np.frombuffer(b",".join(texts) + b",", dtype=np.uint8).reshape(n, NUM_DENSE, 7)
        digits = cells[:, :, [0, 2, 3, 4, 5]] - 48
        if (np.all(cells[:, :, 1] == 46) and np.all(cells[:, :, 6] == 44)
                and np.all(digits <= 9)):
            scaled = digits.astype(np.int64) @ np.array([10000, 1000, 100, 10, 1], dtype=np.int64)
            # int / 10^4 is the correctly rounded double of the decimal, as float() gives.
            return (scaled / 10000.0).astype(np.float32)
    joined = b",".join(texts)
    if joined.translate(None, _DENSE_CHARS) or b",," in joined or joined.startswith(b","):
        return None
    commas = np.fromiter((t.count(b",") for t in texts), dtype=np.int64, count=n)
    if np.any(commas != NUM_DENSE - 1) or joined.endswith(b","):
        return None
    try:
        values = np.fromstring(joined, dtype=np.float64, sep=",")
    except ValueError:
        return None
    if values.size != n * NUM_DENSE or not np.all(np.isfinite(values)) or float32_overflow(values).any():
        return None  # the line parser names the line
    return values.reshape(n, NUM_DENSE).astype(np.float32)


def _fast_slots(texts, n, ranges):
    joined = b"\n".join(texts) + b"\n"
    raw = np.frombuffer(joined, dtype=np.uint8)
    # Separators are space, comma and newline; digits and '-' are >= 45. Any
    # other byte is either taken for a separator here or for part of a token,
    # and becomes 'x' below, which makes np.fromstring fail: fall back.
    sep_at = np.flatnonzero(raw < 45)
    if sep_at.size == 0 or sep_at[0] == 0 or np.any(np.diff(sep_at) == 1):
        return None  # an empty token: leading or doubled separator
    kinds = raw[sep_at]
    boundary = np.flatnonzero(kinds != 32)  # end of a slot: comma or newline
    if boundary.size != n * NUM_SLOTS or np.any(kinds[boundary[NUM_SLOTS - 1::NUM_SLOTS]] != 10):
        return None
    try:
        ids = np.fromstring(joined.translate(_ID_TEXT), dtype=np.int64, sep=" ")
    except ValueError:
        return None
    if ids.size != sep_at.size or np.any(ids == _INT64_MAX) or np.any(ids == _INT64_MIN):
        return None  # saturation hides overflow: let the exact parser decide
    counts = np.diff(boundary, prepend=-1)
    slot_of = np.repeat(np.tile(np.arange(NUM_SLOTS, dtype=np.int8), n), counts)
    if ranges is not None:
        if np.any(ids < ranges[0][slot_of]) or np.any(ids >= ranges[1][slot_of]):
            return None
    per_example = counts.reshape(n, NUM_SLOTS)
    by_slot = ids[np.argsort(slot_of, kind="stable")]
    ends = np.cumsum(per_example.sum(axis=0))
    ids_per_slot = tuple(np.split(by_slot, ends[:-1]))
    lod = tuple(np.concatenate([[0], np.cumsum(per_example[:, s])]) for s in range(NUM_SLOTS))
    return ids_per_slot, lod
