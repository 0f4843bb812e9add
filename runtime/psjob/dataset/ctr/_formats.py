"""Line formats the CTR readers parse besides psjob's own: Criteo TSV and the 40-column TSV.

Both have one example per line and 40 TAB-separated columns: a 0/1 label, 13
dense columns, 26 categorical columns. They become the same Columns as
psjob's format (dense float32 [n, 13], one int64 id per slot per example):

- "criteo" (the Criteo Kaggle/Terabyte logs): dense columns are integers,
  possibly empty (→ 0); categorical columns are hexadecimal strings of up to
  8 digits, possibly empty. Each is hashed with its slot into an int64 id
  (`hash_ids(slot, value)`, as the generator's hash mode); an empty one is
  the slot's own "missing" id (value 2**32, beyond any 8-digit hex).
- "tsv40" (the CTR generator of the Paddle peer benchmark, bench/peer_paddle.py): dense columns are
  decimals, categorical columns int64 ids (already unique across slots),
  used as they are; none may be empty.

Each format has a vectorised block parser (pyarrow's CSV reader, through
psjob.dataset._text), which declines a block with any irregular line (the
reader then bisects it), and a reference line parser that names the problem
of a bad line; the fast path produces identical values for what it accepts
(tests compare the two).
"""
from __future__ import annotations

import re

import numpy as np

from psjob.dataset._text import binary_parts, count_lines, numbers, read_fields
from psjob.dataset.ctr._errors import LineProblem, Problem
from psjob.dataset.ctr._layout import NUM_DENSE, NUM_SLOTS, hash_ids
from psjob.dataset.ctr._parse import Columns, check_float32, float32_overflow

FIELDS = 1 + NUM_DENSE + NUM_SLOTS
MAX_HEX_DIGITS = 8
MISSING = 1 << 32  # the value of an empty Criteo categorical, before hashing

_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")
_INTEGER = re.compile(rb"^[-+]?[0-9]+$")
_FLOAT32_MAX = float(np.finfo(np.float32).max)  # dense values are fed as float32
# Bytes a block may hold for the fast paths: on these pyarrow accepts no spelling the reference
# parsers refuse. Elsewhere it does ("0x1" and " 1" are 1 to its int64 parser), so a block with
# any other byte ("nan", blanks, CR, "x") goes to the reference parsers.
_CRITEO_BYTES = b"0123456789abcdefABCDEF+-\t\n"
_TSV40_BYTES = b"0123456789.eE+-\t\n"
_DENSE_COLUMNS = frozenset(range(1, 1 + NUM_DENSE))
# Label and categorical columns as bytes, integer columns as int64 (empty → null → 0).
_CRITEO_TYPES = ["binary"] + ["int64"] * NUM_DENSE + ["binary"] * NUM_SLOTS
# The same with the categorical columns as 8-byte fixed-width binary (empty → null).
_CRITEO_HEX8_TYPES = ["binary"] + ["int64"] * NUM_DENSE + [("binary", MAX_HEX_DIGITS)] * NUM_SLOTS
_CATEGORICAL_COLUMNS = frozenset(range(1 + NUM_DENSE, FIELDS))
_TSV40_TYPES = ["binary"] + ["float64"] * NUM_DENSE + ["int64"] * NUM_SLOTS


def _fast_label(column):
    """int64 labels of a binary column whose every value is exactly b"0" or b"1"; else None."""
    chars, offsets = binary_parts(column)
    if len(chars) != len(offsets) - 1 or chars[(chars != 48) & (chars != 49)].size:
        return None
    return (chars == 49).astype(np.int64)


def hex_values(column):
    """(uint64 values, MISSING where empty or null; mask of the values that are not
    hexadecimal of at most MAX_HEX_DIGITS digits) of a binary or string Arrow column.

    All strings at once, eight bytes per string: the 8 bytes that end where a string ends
    are loaded as one uint64 (an unaligned view of the concatenated bytes), the bytes before
    the string's start are replaced by ASCII zeros, and the word is checked and decoded with
    shifts and masks on all 8 bytes at once (no step per character)."""
    chars, offsets = binary_parts(column)
    lengths = np.diff(offsets)
    padded = np.concatenate([np.full(MAX_HEX_DIGITS, 48, np.uint8), chars])
    # words[p] = padded[p:p + 8] as a little-endian uint64, i.e. the 8 bytes that end at chars[p].
    words = np.ndarray(shape=(len(chars) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    keep = _KEEP_LAST[np.minimum(lengths, MAX_HEX_DIGITS)]
    word = (words[offsets[1:]].astype(np.uint64, copy=False) & keep) | (_ASCII_ZEROS & ~keep)
    not_hex = ~_all_hex_digits(word) | (lengths > MAX_HEX_DIGITS)
    # The first digit is the lowest byte: swap, so that digit k of 8 sits in byte 7 - k.
    word = word.byteswap()
    # '0'-'9' are 0x30-0x39, 'A'-'F'/'a'-'f' 0x41-0x46/0x61-0x66: low nibble, plus 9 for letters.
    word = (word & _BYTES_0F) + np.uint64(9) * ((word >> np.uint64(6)) & _BYTES_01)
    for shift, mask in _PACK:  # 8 nibbles in 8 bytes → 4 bytes → 2 half-words → one 32-bit value
        word = (word | (word >> shift)) & mask
    word[lengths == 0] = MISSING
    return word, not_hex


def _bytes(b):
    """The uint64 whose 8 bytes are all `b`."""
    return np.uint64(b * 0x0101010101010101)


def _all_hex_digits(word):
    """Whether each uint64's 8 bytes are all ASCII hex digits, tested per byte lane with
    carry-free arithmetic: for a byte c < 0x80, c + (0x80 - k) has bit 7 set iff c >= k, and
    (0x80 + k) - c iff c <= k. A lane >= 0x80 may carry into its neighbour, but makes the
    word fail its own test anyway."""
    high = _bytes(0x80)
    digit = (word + _bytes(0x80 - 0x30)) & (_bytes(0x80 + 0x39) - word)
    folded = word | _bytes(0x20)  # 'A'-'F' → 'a'-'f'
    letter = (folded + _bytes(0x80 - 0x61)) & (_bytes(0x80 + 0x66) - folded)
    return (((digit | letter) & high) == high) & ((word & high) == 0)


# hex_values' constants: mask keeping the last L bytes of a word (its high bytes), L = 0..8.
_KEEP_LAST = np.array([~((1 << 8 * (MAX_HEX_DIGITS - n)) - 1) & (2 ** 64 - 1) for n in range(MAX_HEX_DIGITS + 1)],
                      dtype=np.uint64)
_ASCII_ZEROS = _bytes(0x30)
_BYTES_0F = _bytes(0x0F)
_BYTES_01 = _bytes(0x01)
_PACK = ((np.uint64(4), np.uint64(0x00FF00FF00FF00FF)), (np.uint64(8), np.uint64(0x0000FFFF0000FFFF)),
         (np.uint64(16), np.uint64(0x00000000FFFFFFFF)))


# hex8_values' joining steps: (multiplier 1 + (base << s), shift s, mask of each lane's low s bits).
_HEX8_JOIN = ((np.uint64(1 + (16 << 8)), np.uint64(8), np.uint64(0x00FF00FF00FF00FF)),
              (np.uint64(1 + (256 << 16)), np.uint64(16), np.uint64(0x0000FFFF0000FFFF)),
              (np.uint64(1 + (65536 << 32)), np.uint64(32), np.uint64(0x00000000FFFFFFFF)))


def _one_id_columns(dense, label, ids):
    n = len(label)
    lod = np.arange(n + 1, dtype=np.int64)
    return Columns(dense, label, tuple(ids), tuple(lod for _ in range(NUM_SLOTS)))


def _table(data, lines, allowed, types, nullable=frozenset()):
    if data.translate(None, allowed):
        return None
    return read_fields(data, data.count(b"\n") if lines is None else lines, types, b"\t", nullable)


def criteo_block(data, ranges, lines=None):
    if data.translate(None, _CRITEO_BYTES):
        return None
    lines = count_lines(data) if lines is None else lines
    # Fixed-width first: the categorical columns of the Criteo logs are 8 hex digits or empty.
    table = read_fields(data, lines, _CRITEO_HEX8_TYPES, b"\t", _DENSE_COLUMNS | _CATEGORICAL_COLUMNS)
    if table is not None:
        values = hex8_values([table.column(c) for c in sorted(_CATEGORICAL_COLUMNS)], lines)
    else:  # some categorical value of another width: offsets per string
        table = read_fields(data, lines, _CRITEO_TYPES, b"\t", _DENSE_COLUMNS)
        values = None if table is None else _hex_rows(table)
    if values is None:
        return None
    label = _fast_label(table.column(0))
    if label is None:
        return None
    dense = np.stack([numbers(table.column(1 + j), np.float32, fill=0) for j in range(NUM_DENSE)], axis=1)
    # All slots hashed at once: row s of `values` with slot s.
    ids = hash_ids(np.arange(NUM_SLOTS)[:, None], values)
    return _one_id_columns(dense, label, ids)


def _hex_rows(table):
    """uint64 [NUM_SLOTS, n] values of the binary categorical columns, or None if one is not hex."""
    rows = []
    for column in sorted(_CATEGORICAL_COLUMNS):
        values, not_hex = hex_values(table.column(column))
        if not_hex.any():
            return None
        rows.append(values)
    return np.stack(rows)


def hex8_values(columns, n):
    """uint64 [len(columns), n] values of fixed-width 8-byte binary Arrow columns (MISSING
    where null), or None if a value holds a byte that is not a hex digit.

    Only for blocks whose bytes are all in _CRITEO_BYTES: within a field that leaves hex
    digits, '+' and '-', and of those only '+' (0x2B) and '-' (0x2D) have neither bit 4 nor
    bit 6 set. Each value is one little-endian word, decoded in place by SWAR arithmetic
    over all columns at once: a byte's nibble, then three multiply-shift-mask steps that
    join neighbouring digits (8 nibbles → 4 bytes → 2 half-words → one 32-bit value)."""
    words = np.empty((len(columns), n), np.uint64)
    nulls = None
    for s, column in enumerate(columns):
        start = 0
        for chunk in column.chunks:
            stop = start + len(chunk)
            data = np.frombuffer(chunk.buffers()[1], "<u8")
            words[s, start:stop] = data[chunk.offset:chunk.offset + len(chunk)]
            if chunk.null_count:
                if nulls is None:
                    nulls = np.zeros(words.shape, bool)
                nulls[s, start:stop] = chunk.is_null().to_numpy(zero_copy_only=False)
            start = stop
    if nulls is not None:
        words[nulls] = _ASCII_ZEROS  # a null's bytes are unspecified: decode "00000000" there
    digit_bits = (words >> np.uint64(4)) | (words >> np.uint64(6))
    digit_bits &= _BYTES_01
    if not (digit_bits == _BYTES_01).all():
        return None
    # '0'-'9' are 0x30-0x39, 'A'-'F'/'a'-'f' 0x41-0x46/0x61-0x66: low nibble, plus 9 for letters.
    letters = words >> np.uint64(6)
    letters &= _BYTES_01
    letters *= np.uint64(9)
    words &= _BYTES_0F
    words += letters
    # The first (most significant) digit is the lowest byte. With (base, s) = (16, 8), (256, 16),
    # (65536, 32): in each lane of 2s bits, multiplying by 1 + (base << s) adds base x the lane's
    # first value to its second, in the second's place; >> s brings that sum to the lane's
    # bottom and the mask clears what lies above. Each sum fits its s bits: no lane carries.
    for multiplier, shift, mask in _HEX8_JOIN:
        words *= multiplier
        words >>= shift
        words &= mask
    if nulls is not None:
        words[nulls] = MISSING
    return words


def tsv40_block(data, ranges, lines=None):
    table = _table(data, lines, _TSV40_BYTES, _TSV40_TYPES)
    if table is None:
        return None
    label = _fast_label(table.column(0))
    if label is None:
        return None
    dense = np.stack([numbers(table.column(1 + j), np.float64) for j in range(NUM_DENSE)], axis=1)
    if not np.isfinite(dense).all() or float32_overflow(dense).any():
        return None  # the line parser names the line
    ids = [numbers(table.column(1 + NUM_DENSE + s), np.int64) for s in range(NUM_SLOTS)]
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
            value = int(text)
            if abs(value) > _FLOAT32_MAX:
                raise LineProblem(Problem.NON_FINITE, f"integer column {j + 1} ({len(text)} digits) is "
                                  f"beyond float32's range (±{_FLOAT32_MAX:.4g})")
            dense[j] = value
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
    check_float32(dense, "dense column {}", first=1)
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
