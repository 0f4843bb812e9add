"""Line formats the CTR readers parse besides psjob's own: Criteo TSV and the 40-column TSV.

Both have one example per line and 40 TAB-separated columns: a 0/1 label, 13
dense columns, 26 categorical columns. They become the same Columns as
psjob's format (dense float32 [n, 13], one int64 id per slot per example):

- "criteo" (the Criteo Kaggle/Terabyte logs): dense columns are integers,
  possibly empty (→ 0); categorical columns are hexadecimal strings of up to
  8 digits, possibly empty. Each is hashed with its slot into an int64 id
  (`hash_ids(slot, value)`, as the generator's hash mode); an empty one is
  the slot's own "missing" id (value 2**32, beyond any 8-digit hex).
- "tsv40" (../shared/anchors/paddle_ps/gen_data.py): dense columns are
  decimals, categorical columns int64 ids (already unique across slots),
  used as they are; none may be empty.

Each format has a vectorised block parser, which declines a block with any
irregular line (the reader then bisects it), and a reference line parser that
names the problem of a bad line; the fast path produces identical values for
what it accepts (tests compare the two).
"""
from __future__ import annotations

import re

import numpy as np

from psjob.dataset.ctr._errors import LineProblem, Problem
from psjob.dataset.ctr._layout import NUM_DENSE, NUM_SLOTS, hash_ids
from psjob.dataset.ctr._parse import Columns
from psjob.dataset._text import token_table

FIELDS = 1 + NUM_DENSE + NUM_SLOTS
MAX_HEX_DIGITS = 8
MISSING = 1 << 32  # the value of an empty Criteo categorical, before hashing

# Hex digit → value; 16 for anything else; the NUL that pads numpy's fixed-width bytes → 17.
_NIBBLE = np.full(256, 16, dtype=np.uint8)
for _c in b"0123456789":
    _NIBBLE[_c] = _c - 48
for _c in b"abcdef":
    _NIBBLE[_c] = _NIBBLE[_c - 32] = _c - 87
_NIBBLE[0] = 17
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")
_INTEGER = re.compile(rb"^[-+]?[0-9]+$")
# Bytes a block may hold for the fast paths (numpy's parsers accept more than the reference's
# rules in places — "nan", "1_0", blanks — so those blocks go to the reference parser).
_CRITEO_BYTES = b"0123456789abcdefABCDEF+-"
_TSV40_BYTES = b"0123456789.eE+-"


def _field_table(data: bytes, n: int, allowed: bytes):
    """The block's [n, 40] byte-string matrix, or None when a line is not 40 fields (empty
    fields allowed) or a byte is outside `allowed` (besides TAB and newline)."""
    if data.translate(None, allowed + b"\t\n"):
        return None
    return token_table(data, n, FIELDS, b"\t", allow_empty=True)


def _fast_label(column):
    if not np.all((column == b"0") | (column == b"1")):
        return None
    return (column == b"1").astype(np.int64)


def hex_values(cells):
    """Byte strings of any shape → (uint64 values, MISSING where empty; mask of the cells that
    are not hexadecimal of at most MAX_HEX_DIGITS digits)."""
    width = max(cells.dtype.itemsize, 1)
    chars = np.ascontiguousarray(cells.astype(f"S{width}")).view(np.uint8).reshape(cells.shape + (width,))
    return _hex_chars(chars)


def _hex_chars(chars):
    """The same on a [..., width] uint8 matrix, NUL-padded. One numpy step per digit position."""
    width = chars.shape[-1]
    nib = _NIBBLE[chars]
    pad = nib == 17
    not_hex = (nib == 16).any(axis=-1) | (pad[..., :-1] & ~pad[..., 1:]).any(axis=-1)  # NUL inside
    if width > MAX_HEX_DIGITS:
        not_hex |= ~pad[..., MAX_HEX_DIGITS:].all(axis=-1)
    value = np.zeros(chars.shape[:-1], dtype=np.uint64)
    for j in range(min(width, MAX_HEX_DIGITS)):
        digit = np.where(nib[..., j] < 16, nib[..., j], 0).astype(np.uint64)
        value = np.where(pad[..., j], value, value * np.uint64(16) + digit)
    value[pad[..., 0]] = MISSING
    return value, not_hex


def _one_id_columns(dense, label, ids):
    n = len(label)
    lod = np.arange(n + 1, dtype=np.int64)
    return Columns(dense, label, tuple(np.ascontiguousarray(ids[:, s]) for s in range(NUM_SLOTS)),
                   tuple(lod for _ in range(NUM_SLOTS)))


def _hash_slots(values):
    return np.stack([hash_ids(s, values[:, s]) for s in range(NUM_SLOTS)], axis=1)


def criteo_block(data, ranges, lines=None):
    table = _field_table(data, data.count(b"\n") if lines is None else lines, _CRITEO_BYTES)
    if table is None:
        return None
    label = _fast_label(table[:, 0])
    if label is None:
        return None
    ints = table[:, 1:1 + NUM_DENSE]
    try:
        dense = np.where(ints == b"", b"0", ints).astype(np.int64)
    except (ValueError, OverflowError):
        return None
    values, not_hex = hex_values(table[:, 1 + NUM_DENSE:])
    if not_hex.any():
        return None
    return _one_id_columns(dense.astype(np.float32), label, _hash_slots(values))


def tsv40_block(data, ranges, lines=None):
    table = _field_table(data, data.count(b"\n") if lines is None else lines, _TSV40_BYTES)
    if table is None:
        return None
    label = _fast_label(table[:, 0])
    if label is None or (table == b"").any():
        return None
    try:
        dense = table[:, 1:1 + NUM_DENSE].astype(np.float64)
        ids = table[:, 1 + NUM_DENSE:].astype(np.int64)
    except (ValueError, OverflowError):
        return None
    if not np.isfinite(dense).all():
        return None
    return _one_id_columns(dense.astype(np.float32), label, ids)


# ---- reference parsers: one line -------------------------------------------------

def _fields(line):
    fields = line.rstrip(b"\r").split(b"\t")
    if len(fields) != FIELDS:
        raise LineProblem(Problem.FIELD_COUNT, f"expected {FIELDS} tab-separated fields (label, "
                          f"{NUM_DENSE} dense, {NUM_SLOTS} categorical), found {len(fields)}")
    if fields[0] not in (b"0", b"1"):
        raise LineProblem(Problem.BAD_LABEL, f"label {fields[0][:20]!r} is not 0 or 1")
    return int(fields[0]), fields[1:1 + NUM_DENSE], fields[1 + NUM_DENSE:]


def criteo_line(line, ranges):
    """(label, dense float32[13], [26 int64 arrays of one id]) or LineProblem."""
    label, dense_text, cat_text = _fields(line)
    dense = np.zeros(NUM_DENSE, dtype=np.float32)
    for j, text in enumerate(dense_text):
        if text:
            if not _INTEGER.match(text):
                raise LineProblem(Problem.NON_NUMERIC, f"integer column {j + 1} is {text[:20]!r}")
            dense[j] = int(text)
    slots = []
    for s, text in enumerate(cat_text):
        if len(text) > MAX_HEX_DIGITS or not set(text) <= _HEX_DIGITS:
            raise LineProblem(Problem.NON_NUMERIC, f"categorical column {s + 1} is {text[:20]!r}, not "
                              f"hexadecimal of at most {MAX_HEX_DIGITS} digits")
        value = int(text, 16) if text else MISSING
        slots.append(hash_ids(s, np.array([value], dtype=np.uint64)))
    return label, dense, slots


def tsv40_line(line, ranges):
    label, dense_text, id_text = _fields(line)
    dense = np.zeros(NUM_DENSE, dtype=np.float64)
    for j, text in enumerate(dense_text):
        try:
            dense[j] = float(text)
        except ValueError:
            raise LineProblem(Problem.NON_NUMERIC, f"dense column {j + 1} is {text[:20]!r}, not a number") from None
        if not np.isfinite(dense[j]):
            raise LineProblem(Problem.NON_FINITE, f"dense column {j + 1} is {dense[j]}")
    slots = []
    for s, text in enumerate(id_text):
        try:
            value = int(text)
        except ValueError:
            problem = Problem.EMPTY_SLOT if not text else Problem.NON_NUMERIC
            raise LineProblem(problem, f"id column {s + 1} is {text[:20]!r}, not an integer") from None
        if not -(1 << 63) <= value < (1 << 63):
            raise LineProblem(Problem.NON_NUMERIC, f"id column {s + 1}: {value} does not fit int64")
        slots.append(np.array([value], dtype=np.int64))
    return label, dense.astype(np.float32), slots
