"""Vectorised splitting of delimited text blocks (shared by the CTR formats and MultiSlot)."""
from __future__ import annotations

import numpy as np


def token_table(data: bytes, lines: int, per_line: int, sep: bytes, allow_empty=False):
    """The [lines, per_line] matrix of fixed-width byte strings of a block whose every line
    holds exactly `per_line` `sep`-separated tokens (non-empty unless allow_empty) and ends in
    a newline; else None.

    Works on the block as one uint8 array: the separator positions give every token's start
    and length, and one gather copies the tokens into a NUL-padded matrix viewed as byte
    strings — no Python object per token."""
    if lines == 0 or per_line == 0 or not data.endswith(b"\n"):
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    seps = np.flatnonzero((raw == sep[0]) | (raw == 10))
    if seps.size != per_line * lines:
        return None
    kinds = raw[seps].reshape(lines, per_line)
    if (kinds[:, -1] != 10).any() or (kinds[:, :-1] != sep[0]).any():
        return None  # every line: per_line - 1 separators, then its newline
    starts = np.empty(seps.size, dtype=np.int64)
    starts[0] = 0
    starts[1:] = seps[:-1] + 1
    lengths = seps - starts
    if not allow_empty and (lengths == 0).any():
        return None
    width = max(int(lengths.max()), 1)
    offsets = np.arange(width)
    chars = raw[np.minimum(starts[:, None] + offsets, raw.size - 1)]
    chars[offsets >= lengths[:, None]] = 0
    return chars.view(f"S{width}").reshape(lines, per_line)
