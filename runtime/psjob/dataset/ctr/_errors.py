"""Malformed-input policy for CTR files: problems, DataError, ReaderStats.

Every malformed line is classified as one `Problem`. With on_error="raise"
the first one stops the pass with a DataError naming file, line and problem;
with on_error="skip" (the default) the line is dropped and counted in a
ReaderStats, which keeps the first few offending lines as examples. Stats
accumulate across passes (epochs) when the same object is handed in again.
"""
from __future__ import annotations

import collections
import dataclasses
import enum

ON_ERROR = ("skip", "raise")


class Problem(str, enum.Enum):
    FIELD_COUNT = "field_count"            # not label TAB dense TAB slots
    BAD_LABEL = "bad_label"                # label not 0 or 1
    DENSE_COUNT = "dense_count"            # not 13 dense values
    SLOT_COUNT = "slot_count"              # not 26 slots
    NON_NUMERIC = "non_numeric"            # a value that is not a number / not an int64
    NON_FINITE = "non_finite"              # nan or inf among the dense values
    EMPTY_SLOT = "empty_slot"              # a slot without any id
    ID_OUT_OF_RANGE = "id_out_of_range"    # dense mode: id outside its slot's range
    LINE_TOO_LONG = "line_too_long"        # no newline within MAX_LINE_BYTES


@dataclasses.dataclass(frozen=True)
class BadLine:
    file: str
    line: int          # 1-based
    problem: Problem
    detail: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.problem.value}: {self.detail}"


class DataError(ValueError):
    """A malformed line under on_error="raise"; `.bad` says where and what."""

    def __init__(self, bad: BadLine):
        super().__init__(str(bad))
        self.bad = bad
        self.file, self.line, self.problem = bad.file, bad.line, bad.problem


class LineProblem(Exception):
    """Raised by the line parser; the reader adds file and line number."""

    def __init__(self, problem: Problem, detail: str):
        super().__init__(detail)
        self.problem, self.detail = problem, detail


@dataclasses.dataclass
class ReaderStats:
    """Counts of one or more passes over CTR files.

    `lines` counts non-blank lines seen, `examples` the ones yielded,
    `skipped[problem]` the dropped ones; `samples` keeps the first
    `max_samples` BadLines for the report.
    """

    max_samples: int = 10
    lines: int = 0
    examples: int = 0
    blank_lines: int = 0
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    samples: list = dataclasses.field(default_factory=list)

    @property
    def skipped_total(self):
        return sum(self.skipped.values())

    def record(self, bad: BadLine):
        self.skipped[bad.problem] += 1
        if len(self.samples) < self.max_samples:
            self.samples.append(bad)

    def summary(self):
        counts = ", ".join(f"{p.value}={n}" for p, n in sorted(self.skipped.items()))
        text = (f"{self.examples} examples from {self.lines} lines; "
                f"skipped {self.skipped_total} malformed ({counts or 'none'})")
        if self.samples:
            text += "; first: " + "; ".join(str(b) for b in self.samples[:3])
        return text


def check_on_error(on_error):
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    return on_error
