"""Vectorised parsing of delimited text blocks (shared by the CTR formats and MultiSlot).

A block is run through pyarrow's CSV reader: C++, multi-threaded over the
block's chunks and free of the GIL; the 40-column TSV reads ~4.5x more rows
per CPU-second than it did split with numpy (bench/reader_speed.py). It is a
fast path only: it refuses (returns None) any block with an irregular line,
and callers then find and name the bad line with their reference parser.
Callers restrict the bytes a block may hold before calling, so that pyarrow
never accepts a spelling their reference parser refuses (pyarrow's numbers
are a subset of Python's int()/float() on those bytes, parsed to the same
values; tests compare the two paths).
"""
from __future__ import annotations

import numpy as np

# 1 MiB chunks: a 4 MiB block is parsed by up to four threads.
_CHUNK_BYTES = 1 << 20


def read_fields(data: bytes, lines: int, column_types: list, sep: bytes, nullable=frozenset(), threads=True):
    """The block as a pyarrow Table with one column per entry of `column_types` ("int64",
    "float64", "binary", or ("binary", width) for fixed-width binary), or None when a line
    does not hold exactly that many `sep`-separated fields, a value does not convert to its
    column's type, or the block does not hold `lines` lines each ending in a newline.

    Floating-point columns are float64: a float32 wanted by the caller is cast from it, as
    numpy and Python parse (directly parsing float32 would round differently in rare cases).
    An empty field is an error, except in the columns whose index is in `nullable` (null
    there) and in the other variable-width binary columns (b"" there). A fixed-width binary
    field of another width is an error.

    `threads=False` parses on the calling thread only: for callers that already run one parse
    per thread (pyarrow's pool on top of theirs costs ~25% more CPU a row on a busy machine)."""
    if lines == 0 or not data.endswith(b"\n"):
        return None
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    names = [str(i) for i in range(len(column_types))]
    types = {name: getattr(pa, kind[0])(*kind[1:]) if isinstance(kind, tuple) else getattr(pa, kind)()
             for name, kind in zip(names, column_types)}
    # Binary columns may be null only where `nullable` says so (checked below).
    binary_nullable = any(column_types[i] != "int64" and column_types[i] != "float64" for i in nullable)
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(data),
            read_options=pa_csv.ReadOptions(column_names=names, block_size=_CHUNK_BYTES, use_threads=threads),
            parse_options=pa_csv.ParseOptions(delimiter=chr(sep[0]), quote_char=False, escape_char=False,
                                              double_quote=False, newlines_in_values=False,
                                              ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types=types,
                                                  null_values=[""] if nullable else [],
                                                  strings_can_be_null=binary_nullable,
                                                  quoted_strings_can_be_null=False))
    except pa.ArrowInvalid:
        return None
    if table.num_rows != lines:
        return None
    if any(table.column(i).null_count for i in range(len(column_types)) if i not in nullable):
        return None
    return table


def count_lines(data: bytes) -> int:
    """How many newlines `data` holds (numpy counts ~5x faster than bytes.count)."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10))


def numbers(column, dtype, fill=None) -> np.ndarray:
    """A numeric column of `read_fields` as a numpy array of `dtype` (nulls → `fill`)."""
    if fill is not None and column.null_count:
        column = column.fill_null(fill)
    return column.to_numpy().astype(dtype, copy=False)


def binary_parts(column):
    """(uint8 bytes, int64 offsets of length n + 1) of a binary or string column: value i is
    bytes[offsets[i]:offsets[i + 1]] (a null is empty)."""
    import pyarrow as pa
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if column.null_count:
        column = column.fill_null(b"" if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)
                                  else "")
    large = pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type)
    _, offsets_buffer, data_buffer = column.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if large else np.int32)
    offsets = offsets[column.offset:column.offset + len(column) + 1].astype(np.int64)
    chars = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return chars[offsets[0]:offsets[-1]], offsets - offsets[0]
