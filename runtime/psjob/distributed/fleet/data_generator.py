"""`paddle.distributed.fleet.MultiSlotDataGenerator`: the writer side of the MultiSlot text protocol.

A reader script subclasses it, returns a generator from `generate_sample(line)`
yielding `[(slot_name, [values...]), ...]`, and calls `run_from_stdin()`;
a dataset's `pipe_command` runs the script with a data file on stdin and
parses what it prints. One example per line, each slot as its value count
followed by the values, slots in a fixed order:

    click:[1] dense:[0.1, 0.5] c1:[17]   →   "1 1 2 0.1 0.5 1 17\\n"

As in Paddle, a slot may not be empty (pad it in generate_sample), every
line carries the same slots in the same order, and values are ints or floats
(MultiSlotStringDataGenerator takes strings and checks nothing).
"""
from __future__ import annotations

import sys

_NUMBERS = frozenset((int, float))


class DataGenerator:
    def __init__(self):
        self._proto_info = None
        self.batch_size_ = 32

    def set_batch(self, batch_size):
        self.batch_size_ = int(batch_size)

    def generate_sample(self, line):
        raise NotImplementedError("override generate_sample(line): return a function that yields "
                                  "[(slot_name, [values...]), ...] for the line")

    def generate_batch(self, samples):
        def local_iter():
            yield from samples
        return local_iter

    def _samples(self, lines):
        batch = []
        for line in lines:
            for sample in self.generate_sample(line)():
                if sample is None:
                    continue
                batch.append(sample)
                if len(batch) == self.batch_size_:
                    yield from self.generate_batch(batch)()
                    batch = []
        if batch:
            yield from self.generate_batch(batch)()

    def run_from_stdin(self):
        """Read lines from stdin, write MultiSlot lines to stdout (what a pipe_command does)."""
        write = sys.stdout.write
        for sample in self._samples(sys.stdin):
            write(self._gen_str(sample))
        sys.stdout.flush()

    def run_from_memory(self):
        """Like run_from_stdin, with generate_sample(None) producing the samples."""
        for sample in self._samples([None]):
            sys.stdout.write(self._gen_str(sample))
        sys.stdout.flush()

    def _check_slots(self, line):
        """The sample as a list or tuple of (name, values), checked. A zip of names and values
        is taken too, as Paddle's _gen_str takes it (it lists it first): PaddleRec's
        match/dssm bq_reader_train_insid.py yields zip(feature_name, input_data)."""
        if isinstance(line, zip):
            line = list(line)
        if not isinstance(line, (list, tuple)):
            raise ValueError(f"generate_sample must yield a list or tuple of (name, values), got "
                             f"{type(line).__name__}")
        names = []
        for item in line:
            name, elements = item
            if not isinstance(name, str):
                raise ValueError(f"slot name {name!r} must be a str")
            if not isinstance(elements, list) and not (self._str_values and isinstance(elements, str)):
                raise ValueError(f"slot {name!r}: values must be a list, got {type(elements).__name__}")
            if not elements:
                raise ValueError(f"slot {name!r} is empty: pad it in generate_sample (as Paddle requires)")
            names.append(name)
        if self._proto_info is None:
            self._proto_info = names
        elif names != self._proto_info:
            raise ValueError(f"slots {names} differ from the first example's {self._proto_info}: every "
                             "example must carry the same slots in the same order")
        return line

    _str_values = False  # a slot's values: a list (MultiSlotStringDataGenerator: also a str)

    def _gen_str(self, line):
        raise NotImplementedError


class MultiSlotDataGenerator(DataGenerator):
    def _gen_str(self, line):
        line = self._check_slots(line)
        parts = []
        append = parts.append
        for _, elements in line:
            append(len(elements))
            parts += elements
        if not _NUMBERS.issuperset(map(type, parts)):
            # A value of another type (bool, str, numpy's): the slot by slot path names it,
            # or writes a subclass of int or float as str() does.
            return self._checked_str(line)
        # repr of an int or a float (exact types) is its str, and quicker to call.
        return " ".join(map(repr, parts)) + "\n"

    def _checked_str(self, line):
        parts = []
        for name, elements in line:
            for e in elements:
                if isinstance(e, bool) or not isinstance(e, (int, float)):
                    raise ValueError(f"slot {name!r}: value {e!r} must be an int or a float "
                                     "(MultiSlotStringDataGenerator takes strings)")
            parts.append(str(len(elements)))
            parts.extend(map(str, elements))
        return " ".join(parts) + "\n"


class MultiSlotStringDataGenerator(DataGenerator):
    # Paddle's _gen_str extends the line with the values as given: a str's values are its
    # characters ('1' writes "1 1"), which PaddleRec's multi_task/esmm relies on for its labels.
    _str_values = True

    def _gen_str(self, line):
        line = self._check_slots(line)
        parts = []
        for _, elements in line:
            parts.append(str(len(elements)))
            parts.extend(elements)
        return " ".join(parts) + "\n"
