"""Render examples to the CTR text format, fast.

One line per example (the format is described in docs/user/data.md):

    label TAB d0,d1,...,d12 TAB ids of slot 0,ids of slot 1,...,ids of slot 25 NEWLINE

with ids inside a slot separated by single spaces. Python-level formatting
costs ~10 µs per line, too slow for millions of lines, so:

- the label and dense part has a fixed width (dense values lie in [0, 1] and
  are written as `D.DDDD`), so it is built as one [n, 93] byte matrix;
- every possible id is rendered once per id mode, with its separator, into a
  table of bytes objects (the vocabulary is only ~440k ids); a line's ids are
  then a table lookup, and the whole output is one `bytes.join`.
"""
from __future__ import annotations

import functools

import numpy as np

from psjob.dataset.ctr._layout import (
    DENSE_DECIMALS,
    ID_MODES,
    MULTI_ID_SLOTS,
    NUM_DENSE,
    NUM_SLOTS,
    SLOT_OFFSETS,
    SLOT_VOCAB,
    SPARSE_FEATURE_DIM,
    check_id_mode,
    global_ids,
)

_TAB, _NL, _COMMA, _SPACE, _MINUS, _POINT, _ZERO = (ord(c) for c in "\t\n, -.0")
DENSE_WIDTH = DENSE_DECIMALS + 3          # "D.DDDD" plus its separator
PREFIX_WIDTH = 2 + NUM_DENSE * DENSE_WIDTH  # label, tab, dense values


# "0000".."9999" as 4 ASCII bytes each: one division by 10^4 yields 4 digits.
_QUADS = np.frombuffer("".join(f"{i:04d}" for i in range(10000)).encode(),
                       dtype=np.uint8).reshape(10000, 4)
_QUADS32 = _QUADS.copy().view(np.uint32).ravel()


def _prefix(label, dense):
    """[n, PREFIX_WIDTH] bytes: label, tab, 13 fixed-width dense values."""
    n = len(label)
    if np.any((label < 0) | (label > 1)):
        raise ValueError("labels must be 0 or 1")
    scaled = np.round(dense * 10 ** DENSE_DECIMALS).astype(np.int64)
    if np.any((scaled < 0) | (scaled >= 10 ** (DENSE_DECIMALS + 1))):
        raise ValueError("dense values must lie in [0, 9.9999] for the fixed-width format")
    units, frac = np.divmod(scaled, 10 ** DENSE_DECIMALS)
    cells = np.empty((n, NUM_DENSE, DENSE_WIDTH), dtype=np.uint8)
    cells[:, :, 0] = _ZERO + units
    cells[:, :, 1] = _POINT
    cells[:, :, 2:2 + DENSE_DECIMALS] = _QUADS[frac]
    cells[:, :, -1] = _COMMA
    cells[:, -1, -1] = _TAB
    out = np.empty((n, PREFIX_WIDTH), dtype=np.uint8)
    out[:, 0] = _ZERO + label
    out[:, 1] = _TAB
    out[:, 2:] = cells.reshape(n, -1)
    return out


def _int_texts(values):
    """Decimal text of int64 values as [n, width] bytes right-aligned, and lengths."""
    values = np.asarray(values, dtype=np.int64)
    neg = values < 0
    mag = values.view(np.uint64).copy()
    mag[neg] = ~mag[neg] + np.uint64(1)  # two's complement magnitude, exact for INT64_MIN
    max_digits = len(str(int(mag.max()))) if mag.size else 1
    quads = (max_digits + 3) // 4
    rows = np.zeros((len(values), quads + 1), dtype=np.uint32)  # one spare cell for the sign
    remaining = mag
    for q in range(quads):
        remaining, quad = np.divmod(remaining, np.uint64(10000))
        rows[:, quads - q] = _QUADS32[quad]
    ndig = np.ones(len(values), dtype=np.int64)
    for k in range(1, max_digits):
        ndig += mag >= np.uint64(10 ** k)
    as_bytes = rows.view(np.uint8).reshape(len(values), -1)
    width = as_bytes.shape[1]
    first = width - ndig - neg
    signed = np.flatnonzero(neg)
    as_bytes[signed, first[signed]] = _MINUS
    return as_bytes, width - first


@functools.lru_cache(maxsize=len(ID_MODES))
def _token_table(id_mode):
    """Object array of bytes: [gid] -> id text + its slot-closing separator
    (',' or, for the last slot, newline); [gid + D] -> id text + ' ', filled
    for the multi-id slots only. Built once per id mode (~0.5 s)."""
    values = np.concatenate([global_ids(s, np.arange(v), id_mode)
                             for s, v in enumerate(SLOT_VOCAB)])
    text, length = _int_texts(values)
    rows, width = text.shape
    # Left-align each text (numpy's "S" strings drop trailing NULs, so the
    # padding vanishes when they become bytes objects), then append the separator.
    cols = np.arange(width + 1)
    src = np.minimum((width - length)[:, None] + cols, width)
    left = np.take_along_axis(np.pad(text, ((0, 0), (0, 1))), src, axis=1)
    closing = np.full(rows, _COMMA, dtype=np.uint8)
    closing[SLOT_OFFSETS[-1]:] = _NL
    multi = np.concatenate([np.arange(SLOT_OFFSETS[s], SLOT_OFFSETS[s] + SLOT_VOCAB[s])
                            for s in MULTI_ID_SLOTS])
    table = np.empty(2 * SPARSE_FEATURE_DIM, dtype=object)
    left[np.arange(rows), length] = closing
    table[:rows] = left.view(f"S{width + 1}").ravel().astype(object)
    left[multi, length[multi]] = _SPACE
    table[rows + multi] = left[multi].view(f"S{width + 1}").ravel().astype(object)
    return table


def render(examples, id_mode):
    """The text of `examples`, all lines, as bytes."""
    n = len(examples)
    if n == 0:
        return b""
    table = _token_table(check_id_mode(id_mode))
    lengths = examples.lengths
    tokens_per_line = 1 + lengths.sum(axis=1)          # the prefix, then the ids
    line_start = np.cumsum(tokens_per_line) - tokens_per_line
    # Table codes of every token in file order (prefix slots are filled after).
    codes = np.zeros(int(tokens_per_line.sum()), dtype=np.int64)
    slot_base = line_start + 1
    for s in range(NUM_SLOTS):
        count = lengths[:, s]
        code = examples.ids[s] + SLOT_OFFSETS[s]
        if s in MULTI_ID_SLOTS:
            within = np.arange(len(code)) - np.repeat(np.cumsum(count) - count, count)
            code = code + SPARSE_FEATURE_DIM * (within < np.repeat(count - 1, count))
            codes[np.repeat(slot_base, count) + within] = code
        else:
            codes[slot_base] = code
        slot_base = slot_base + count
    out = table[codes]
    prefix = _prefix(examples.label, examples.dense)
    out[line_start] = np.frombuffer(prefix.tobytes(), dtype=f"S{PREFIX_WIDTH}")
    return b"".join(out.tolist())
