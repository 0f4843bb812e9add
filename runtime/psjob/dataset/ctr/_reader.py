"""Readers over CTR text files: per-example (Paddle style) and stacked batches.

Lifecycle of one pass: files are read in blocks of whole lines
(BLOCK_BYTES), each block is parsed by `_parse` (vectorised when clean,
line by line around bad lines), malformed lines are skipped and counted in a
ReaderStats or raised as DataError, and the parsed Columns are either cut
into fixed-size CtrBatch objects (`batches`) or split into single examples
(`reader`). Nothing is read until the pass starts; each call starts a new
pass over all files in the order given.
"""
from __future__ import annotations

import dataclasses
import logging
import operator
import os

import numpy as np

from psjob.dataset._text import count_lines
from psjob.dataset.ctr import _formats
from psjob.dataset.ctr._errors import BadLine, DataError, LineProblem, Problem, ReaderStats, check_on_error
from psjob.dataset.ctr._parse import SLOW_LINES, Columns, columns_from_rows, id_ranges, parse_block_fast, parse_line
from psjob.dataset.sources import exists, list_parts, open_binary

log = logging.getLogger("psjob.dataset.ctr")

BLOCK_BYTES = 4 << 20      # large enough to amortise per-block Python work
MAX_LINE_BYTES = 1 << 20   # a "line" longer than this is garbage, not an example


@dataclasses.dataclass(frozen=True)
class CtrBatch:
    """A stacked batch: dense [B, 13] float32, label [B, 1] int64 and, per slot,
    flat int64 ids with LoD offsets [B+1] (example i owns ids[lod[i]:lod[i+1]])."""

    dense: np.ndarray
    ids: tuple
    lod: tuple
    label: np.ndarray

    def __len__(self):
        return len(self.label)

    @staticmethod
    def from_columns(cols: Columns):
        return CtrBatch(cols.dense, cols.ids, cols.lod, cols.label.reshape(-1, 1))


def list_files(files):
    """Expand `files` (a path, a directory of part-* files, or a list) to paths."""
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    paths = []
    for f in files:
        f = os.fspath(f)
        parts = list_parts(f)  # local or s3:// (psjob.dataset.sources)
        if parts is None:
            paths.append(f)
        elif not parts:
            raise FileNotFoundError(f"{f}: directory holds no part-* files")
        else:
            paths += parts
    missing = [p for p in paths if not exists(p)]
    if missing:
        raise FileNotFoundError(f"CTR data files not found: {', '.join(missing)}")
    return paths


# format → (vectorised block parser, reference line parser); docs/user/data.md describes each.
LINE_FORMATS = {
    "ctr": (parse_block_fast, parse_line),
    "criteo": (_formats.criteo_block, _formats.criteo_line),
    "tsv40": (_formats.tsv40_block, _formats.tsv40_line),
}
FORMATS = tuple(LINE_FORMATS) + ("parquet",)


class _Pass:
    """State of one pass: format, policy, id ranges, and the stats it reports into."""

    def __init__(self, id_mode, on_error, stats, fmt="ctr"):
        if fmt not in LINE_FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
        self.parse_block, self.parse_line = LINE_FORMATS[fmt]
        # id_mode ranges check psjob's own format; the others carry their own ids.
        self.ranges = id_ranges(id_mode) if fmt == "ctr" else None
        self.on_error = check_on_error(on_error)
        self.stats = stats if stats is not None else ReaderStats()
        self.skipped_before = self.stats.skipped_total

    def bad(self, path, line, problem, detail):
        bad = BadLine(path, line, problem, detail)
        if self.on_error == "raise":
            raise DataError(bad)
        self.stats.record(bad)

    def columns(self, paths):
        for path in paths:
            for data, first_line, lines in _blocks(path, self):
                for cols in self._parse(path, data, first_line, lines):
                    self.stats.examples += len(cols)
                    yield cols
        skipped = self.stats.skipped_total - self.skipped_before
        if skipped:
            log.warning("CTR reader skipped %d malformed lines in this pass: %s",
                        skipped, self.stats.summary())

    def _parse(self, path, data, first_line, lines):
        """Columns of a block: one vectorised parse when clean; otherwise the block is cut in
        two at the line end nearest its middle, and each half parsed the same way, so a few
        bad lines cost a few slow runs, not a slow block. A stack, not recursion: the pieces
        come out in file order, and a long bad line (its half is cut at its own ends) never
        makes the cuts peel one line at a time."""
        out = []
        todo = [(data, first_line, lines)]  # the next piece in file order is on top
        while todo:
            data, first_line, lines = todo.pop()
            cols = self.parse_block(data, self.ranges, lines)
            if cols is not None:
                self.stats.lines += len(cols)
                out.append(cols)
                continue
            if lines <= SLOW_LINES:
                out.append(self._slow(path, data, first_line))
                continue
            mid = _middle_line_end(data)
            left, right = data[:mid], data[mid:]
            left_lines = count_lines(left)
            todo.append((right, first_line + left_lines, lines - left_lines))
            todo.append((left, first_line, left_lines))
        return out

    def _slow(self, path, data, first_line):
        rows = []
        for offset, line in enumerate(data.split(b"\n")[:-1]):
            if not line.strip():
                self.stats.blank_lines += 1
                continue
            self.stats.lines += 1
            try:
                rows.append(self.parse_line(line, self.ranges))
            except LineProblem as problem:
                self.bad(path, first_line + offset, problem.problem, problem.detail)
        return columns_from_rows(rows)


def _middle_line_end(data: bytes) -> int:
    """The end (just past the newline) of the line nearest the middle of a block of more
    than one line: never 0, never the block's end."""
    half = len(data) // 2
    after = data.find(b"\n", half, len(data) - 1) + 1  # a newline before the last byte
    before = data.rfind(b"\n", 0, half) + 1
    if after and (not before or after - half <= half - before):
        return after
    return before


def _blocks(path, ctx):
    """Yield (bytes of whole lines, number of the first, how many) for one file."""
    line_no = 1
    carry = b""
    discarding = False  # inside an over-long line, looking for its end
    with open_binary(path) as f:
        while True:
            chunk = f.read(BLOCK_BYTES)
            if not chunk:
                break
            if discarding:
                end = chunk.find(b"\n")
                if end < 0:
                    continue
                chunk, discarding, line_no = chunk[end + 1:], False, line_no + 1
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                if len(carry) > MAX_LINE_BYTES:
                    ctx.stats.lines += 1
                    ctx.bad(path, line_no, Problem.LINE_TOO_LONG,
                            f"no newline within {MAX_LINE_BYTES} bytes")
                    carry, discarding = b"", True
                continue
            block, carry = data[:cut], data[cut:]
            lines = count_lines(block)
            yield block, line_no, lines
            line_no += lines
    if carry and not discarding:
        yield carry + b"\n", line_no, 1  # last line without a trailing newline


def _positive(value, name):
    number = operator.index(value)
    if number <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return number


def reader(files, *, id_mode="dense", on_error="skip", stats=None, format="ctr", columns=None):
    """A Paddle-style reader over CTR files (`format`: one of FORMATS; `columns`: parquet's mapping).

    Each call returns a generator of examples
    `(dense float32[13], [26 int64 arrays, one per slot, length >= 1], label int64[1])`.
    """
    paths = list_files(files)
    _columns_of(paths, id_mode, on_error, stats, format, columns)  # validate the options now, not at first read

    def data_reader():
        for cols in _columns_of(paths, id_mode, on_error, stats, format, columns):
            per_slot = [_split_examples(ids, lod) for ids, lod in zip(cols.ids, cols.lod)]
            dense, label = cols.dense, cols.label.reshape(-1, 1)
            for i, slots in enumerate(zip(*per_slot)):
                yield dense[i], list(slots), label[i]

    return data_reader


def _split_examples(ids, lod):
    """Per-example views of one slot's flat ids."""
    if len(ids) == len(lod) - 1:  # one id per example: rows of an [n, 1] view
        return list(ids.reshape(-1, 1))
    bounds = lod.tolist()
    return [ids[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def batches(files, batch_size, *, id_mode="dense", on_error="skip", stats=None,
            drop_last=False, format="ctr", columns=None):
    """Iterate CtrBatch objects of `batch_size` examples (the last may be shorter).

    `format`: "ctr" (psjob's), "criteo", "tsv40" or "parquet" (with `columns`,
    a _parquet.ColumnMap or a dict of its fields); docs/user/data.md."""
    paths = list_files(files)
    size = _positive(batch_size, "batch_size")
    return _cut(_columns_of(paths, id_mode, on_error, stats, format, columns), size, drop_last)


def _columns_of(paths, id_mode, on_error, stats, fmt, columns):
    """A lazy iterator of Columns over `paths` in format `fmt` (options checked now)."""
    if fmt == "parquet":
        from psjob.dataset.ctr import _parquet
        return _parquet.columns(paths, columns, on_error, stats)
    if columns is not None:
        raise ValueError(f"columns= maps Parquet columns; format {fmt!r} has a fixed layout")
    return _Pass(id_mode, on_error, stats, fmt).columns(paths)


def _cut(columns, size, drop_last):
    carry = None
    for cols in columns:
        start = 0
        if carry is not None:
            need = size - len(carry)
            if len(cols) < need:
                carry = Columns.concat([carry, cols])
                continue
            yield CtrBatch.from_columns(Columns.concat([carry, cols.slice(0, need)]))
            start, carry = need, None
        while start + size <= len(cols):
            yield CtrBatch.from_columns(cols.slice(start, start + size))
            start += size
        if start < len(cols):
            carry = cols.slice(start, len(cols))
    if carry is not None and len(carry) and not drop_last:
        yield CtrBatch.from_columns(carry)
