"""`paddle.distributed.InMemoryDataset` and `QueueDataset`: files → pipe_command → MultiSlot → batches.

    dataset = paddle.distributed.InMemoryDataset()
    dataset.init(batch_size=32, thread_num=2, use_var=[label, dense, c1, ...],
                 pipe_command="python reader.py")
    dataset.set_filelist(files)
    dataset.load_into_memory(); dataset.local_shuffle()
    exe.train_from_dataset(main_program, dataset, thread=2)

Each file goes on the stdin of `pipe_command` (a shell command, as in Paddle:
`cat file | pipe_command`), thread_num files at a time; what it prints is parsed,
block by block as it prints it, as MultiSlot lines
(psjob.distributed.fleet.data_generator): per example, for each variable of
`use_var` in order, a value count and the values. An int64 variable with
lod_level >= 1 takes any number of ids per example (fed with its LoD); any
other variable takes prod(shape[1:]) values per example, or, where its batch dimension is
-1, any multiple of that: Paddle's dense slot infers that dimension from the batch's values
(shape [-1, 1] fed lines of 2 and 3 ids is one [5, 1] tensor, without a LoD, in Paddle 3.0.0).
A malformed line stops the load with a MultiSlotError naming the file, the
line and the problem (Paddle aborts too).

InMemoryDataset keeps the parsed examples as one array per slot (values +
offsets), so shuffling permutes an index. QueueDataset streams: each file is
parsed when a trainer thread reaches it, and nothing is kept.
The last batch of a pass may be smaller than batch_size, as in Paddle.
"""
from __future__ import annotations

import concurrent.futures
import logging
import math
import subprocess
import tempfile
import threading

import numpy as np

from psjob.dataset._text import count_lines, numbers, read_fields
from psjob.dataset.sources import exists, is_uri, open_binary
from psjob.fluid.dataset_trainer import INS_CONTENT_KEY, INS_ID_KEY

log = logging.getLogger("psjob.distributed")


class MultiSlotError(ValueError):
    """A line a pipe_command printed does not fit the MultiSlot layout of use_var."""


class _Slot:
    def __init__(self, var):
        self.name = var.name
        self.dtype = np.dtype(var.dtype)
        if self.dtype.kind not in "iuf":
            raise TypeError(f"use_var {var.name!r}: dtype {self.dtype} is not int64 or float32")
        self.ragged = var.lod_level > 0
        tail = [int(d) for d in (var.shape or [])[1:]]
        if not self.ragged and any(d < 0 for d in tail):
            raise ValueError(f"use_var {var.name!r}: shape {list(var.shape)} has an unknown dimension "
                             "after the batch one; give it lod_level=1 for a variable-length slot")
        self.tail = tail
        self.width = None if self.ragged else math.prod(tail)
        # Paddle's dense slot: a -1 batch dimension is inferred from the batch's values, so an
        # example may hold any multiple of width (a [-1, 1] id slot: several ids per example).
        shape = list(var.shape or [])
        self.inductive = not self.ragged and bool(shape) and int(shape[0]) < 0 and bool(self.width)

    def fits(self, n: int) -> bool:
        """Whether an example may hold n values (n >= 1)."""
        if self.width is None:
            return True
        return n % self.width == 0 if self.inductive else n == self.width

    def to_feed(self, values, offsets, rows):
        if self.ragged:
            return values.reshape(-1, 1), [offsets]
        return values.reshape([-1 if self.inductive else rows] + self.tail)


class _Examples:
    """Parsed examples: per slot a flat value array and offsets (length n + 1); with
    parse_ins_id / parse_content, each example's instance id / content (object arrays)."""

    def __init__(self, values, offsets, ids=None, contents=None):
        self.values, self.offsets = values, offsets
        self.ids, self.contents = ids, contents

    def __len__(self):
        return len(self.offsets[0]) - 1 if self.offsets else 0

    @staticmethod
    def concat(parts, slots):
        parts = [p for p in parts if len(p)]
        if not parts:
            return _Examples([np.zeros(0, s.dtype) for s in slots], [np.zeros(1, np.int64) for _ in slots])
        if len(parts) == 1:
            return parts[0]
        ids = np.concatenate([p.ids for p in parts]) if parts[0].ids is not None else None
        contents = np.concatenate([p.contents for p in parts]) if parts[0].contents is not None else None
        values, offsets, shared = [], [], {}
        for s in range(len(slots)):
            values.append(np.concatenate([p.values[s] for p in parts]))
            key = tuple(id(p.offsets[s]) for p in parts)  # slots sharing offsets in every part still do
            if key not in shared:
                shifts = np.cumsum([0] + [p.offsets[s][-1] for p in parts[:-1]])
                shared[key] = np.concatenate([np.zeros(1, np.int64)] +
                                             [p.offsets[s][1:] + k for p, k in zip(parts, shifts)])
            offsets.append(shared[key])
        return _Examples(values, offsets, ids, contents)

    def _tag(self, feed, index):
        """Add the chosen examples' instance ids / contents to a batch's feed."""
        if self.ids is not None:
            feed[INS_ID_KEY] = self.ids[index]
        if self.contents is not None:
            feed[INS_CONTENT_KEY] = self.contents[index]
        return feed

    def gather(self, index, slots):
        """{name: feed value} of the examples at `index`, in that order."""
        feed = {}
        for s, slot in enumerate(slots):
            off, vals = self.offsets[s], self.values[s]
            lengths = off[index + 1] - off[index]
            new_off = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])
            # Positions of the chosen examples' values: start of each, plus 0..length-1.
            pos = np.repeat(off[index] - new_off[:-1], lengths) + np.arange(new_off[-1])
            feed[slot.name] = slot.to_feed(vals[pos], new_off, len(index))
        return self._tag(feed, index)

    def with_slots_from(self, source, replaced):
        """These examples with the slots at positions `replaced` taken from others: example i
        gets example source[i]'s values of each (all of them, so its length moves too); every
        other slot, the ids and contents stay (their arrays shared)."""
        values, offsets = list(self.values), list(self.offsets)
        for s in replaced:
            off, vals = self.offsets[s], self.values[s]
            lengths = off[source + 1] - off[source]
            new_off = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])
            pos = np.repeat(off[source] - new_off[:-1], lengths) + np.arange(new_off[-1])
            values[s], offsets[s] = vals[pos], new_off
        return _Examples(values, offsets, self.ids, self.contents)

    def slice(self, start: int, stop: int, slots):
        """gather(np.arange(start, stop)) without the index arithmetic: a run of consecutive
        examples is a slice of every slot's values. The values are views (the executor copies
        what it is fed)."""
        feed, lods = {}, {}
        for s, slot in enumerate(slots):
            off = self.offsets[s]
            first = off[start]
            values = self.values[s][first:off[stop]]
            if not slot.ragged:
                feed[slot.name] = slot.to_feed(values, None, stop - start)
                continue
            # Slots sharing one offsets array (one id per example, say) share one LoD: the
            # executor then checks it once per batch, not once per slot.
            lod = lods.get(id(off))
            if lod is None:
                lod = lods[id(off)] = [off[start:stop + 1] - first]
            feed[slot.name] = (values.reshape(-1, 1), lod)
        return self._tag(feed, slice(start, stop))


def parse_multislot(data: bytes, slots, source: str, first_line: int = 1) -> _Examples:
    """MultiSlot lines → _Examples; a line that does not fit names its problem (lines are
    numbered from `first_line`: where `data` sits in a longer output)."""
    parts = [_parse_uniform(block, slots) for block in _blocks(data)]
    if all(part is not None for part in parts):
        return _Examples.concat(parts, slots)
    rows = [(number, line.split()) for number, line in enumerate(data.decode().split("\n"), first_line)
            if line.strip()]
    columns = [[] for _ in slots]
    counts = [[] for _ in slots]
    for number, tokens in rows:
        pos = 0
        for s, slot in enumerate(slots):
            where = f"{source}: line {number}: slot {s} ({slot.name!r})"
            if pos >= len(tokens):
                raise MultiSlotError(f"{where}: missing (the line has {len(tokens)} values for "
                                     f"{len(slots)} slots)")
            try:
                n = int(tokens[pos])
            except ValueError:
                raise MultiSlotError(f"{where}: count {tokens[pos]!r} is not an integer") from None
            if n < 1 or pos + 1 + n > len(tokens):
                raise MultiSlotError(f"{where}: count {n} but {len(tokens) - pos - 1} values follow")
            if not slot.fits(n):
                more = " or a multiple of it" if slot.inductive else ""
                raise MultiSlotError(f"{where}: {n} values, the variable takes {slot.width}{more} "
                                     f"(shape {[-1] + slot.tail})")
            columns[s].extend(tokens[pos + 1:pos + 1 + n])
            counts[s].append(n)
            pos += 1 + n
        if pos != len(tokens):
            raise MultiSlotError(f"{source}: line {number}: {len(tokens) - pos} values left after the "
                                 f"{len(slots)} slots of use_var")
    offsets = [np.concatenate([np.zeros(1, np.int64), np.cumsum(np.asarray(c, np.int64))]) for c in counts]
    numbers_of_rows = [number for number, _ in rows]
    values = [_numbers(col, slot, off, source, numbers_of_rows) for col, slot, off in zip(columns, slots, offsets)]
    return _Examples(values, offsets)


def split_prefix(data: bytes, fields: int, source: str, first_line: int = 1):
    """Lines led by `fields` string fields, each `1 <token>` (Paddle's MultiSlot lines with
    parse_ins_id, then parse_content): (the lines without them, one object array of the
    tokens per field). A blank line stays blank; a line lacking a field is named."""
    lines = data.split(b"\n")
    kept, columns = [], [[] for _ in range(fields)]
    for number, line in enumerate(lines, first_line):
        if not line.strip():
            kept.append(line)
            continue
        parts = line.split(None, 2 * fields)
        for f in range(fields):
            what = ("instance id", "content")[f] if f < 2 else f"field {f}"
            if len(parts) < 2 * f + 2 or parts[2 * f] != b"1":
                raise MultiSlotError(f"{source}: line {number}: the {what} (set_parse_ins_id / set_parse_content) "
                                     "must come first as `1 <token>`")
            columns[f].append(parts[2 * f + 1].decode(errors="replace"))
        kept.append(parts[2 * fields] if len(parts) > 2 * fields else b"")
    return b"\n".join(kept), [np.array(c, dtype=object) for c in columns]


# Bytes the vectorised path accepts besides space and newline: on these, pyarrow's numbers are
# a subset of what numpy's conversions accept, with the same values ("nan", tabs, CR go the line path).
_UNIFORM_BYTES = b"0123456789.eE+- \n"
_UNIFORM_DTYPES = (np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))  # others: line path


# The vectorised path parses a pipe's output in blocks of whole lines of about this size: ~10% less
# CPU per row than one pyarrow call over a whole file (bench/reader_speed.py's awk output).
_BLOCK_BYTES = 4 << 20


def _blocks(data: bytes):
    """`data` cut after newlines into blocks of about _BLOCK_BYTES (the last may lack its newline)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + _BLOCK_BYTES) + 1 or len(data)
        yield data[start:end]
        start = end


class _Feeder(threading.Thread):
    """Copies an object's body into a command's stdin, _BLOCK_BYTES at a time, then closes it.
    A command that stops reading (`head`) ends the copy quietly; a failed read of the body is
    kept for `check()`, after the command's own exit status."""

    def __init__(self, body, stdin, path):
        super().__init__(name="psjob-dataset-feed", daemon=True)
        self.body, self.stdin, self.path, self.error = body, stdin, path, None
        self.start()

    def run(self):
        try:
            while True:
                try:
                    chunk = self.body.read(_BLOCK_BYTES)
                except Exception as exc:  # the store's errors: reported by check()
                    self.error = exc
                    return
                if not chunk:
                    return
                try:
                    self.stdin.write(chunk)
                except (OSError, ValueError):  # BrokenPipe: the command stopped reading
                    return
        finally:
            try:
                self.stdin.close()
            except OSError:
                pass

    def check(self):
        if self.error is not None:
            raise OSError(f"reading {self.path} for pipe_command failed: "
                          f"{type(self.error).__name__}: {self.error}") from self.error


def _line_blocks(stream):
    """(block of whole lines, number of its first line) as `stream` yields them, about
    _BLOCK_BYTES at a time; a last line without a newline gets one."""
    carry, first_line = b"", 1
    while chunk := stream.read(_BLOCK_BYTES):
        data = carry + chunk
        cut = data.rfind(b"\n") + 1
        block, carry = data[:cut], data[cut:]
        if block:
            yield block, first_line
            first_line += count_lines(block)
    if carry:
        yield carry + b"\n", first_line


def _parse_uniform(data: bytes, slots):
    """The vectorised path: every line has the first line's layout (same counts in the same
    places, single spaces), so the output is a table of fixed columns — one per count and per
    value — parsed at once by pyarrow's CSV reader (psjob.dataset._text). None when any line
    differs (the line-by-line path then names it)."""
    if not data.endswith(b"\n"):
        data += b"\n"
    if data.translate(None, _UNIFORM_BYTES):
        return None
    first = data[:data.find(b"\n")].split(b" ")
    layout, types, pos = [], [], 0
    for slot in slots:
        if slot.dtype not in _UNIFORM_DTYPES or pos >= len(first) or not first[pos].isdigit():
            return None
        n = int(first[pos])
        if n < 1 or not slot.fits(n):
            return None
        layout.append((pos, n))
        types += ["int64"] + ["int64" if slot.dtype.kind == "i" else "float64"] * n
        pos += 1 + n
    if pos != len(first):
        return None
    rows = count_lines(data)
    table = read_fields(data, rows, types, b" ", threads=False)  # load_into_memory runs one file per thread
    if table is None:
        return None
    values = []
    for (pos, n), slot in zip(layout, slots):
        if not (numbers(table.column(pos), np.int64) == n).all():
            return None
        columns = [numbers(table.column(pos + 1 + k), slot.dtype) for k in range(n)]
        values.append(columns[0] if n == 1 else np.stack(columns, axis=1).reshape(-1))
    shared = {}  # slots of one width share one offsets array (and so one LoD per batch: slice)
    for _, n in layout:
        if n not in shared:
            shared[n] = np.arange(0, (rows + 1) * n, n, dtype=np.int64)
    offsets = [shared[n] for _, n in layout]
    return _Examples(values, offsets)


_UINT64_END = 2 ** 64


def _as_dtype(tokens, dtype):
    """Tokens as dtype. An int64 slot holds feature signs, which Paddle's MultiSlot feed reads
    as uint64 (64-bit hashes up to 2**64 - 1) and keeps bit for bit in its int64 tensor: a sign
    from 2**63 up becomes the negative int64 of the same bits, as there."""
    try:
        return np.array(tokens).astype(dtype)
    except OverflowError:
        if dtype != np.int64:
            raise
        values = [int(t) for t in tokens]
        if any(not -2 ** 63 <= v < _UINT64_END for v in values):
            raise
        return np.array([v % _UINT64_END for v in values], dtype=np.uint64).view(np.int64)


def _numbers(tokens, slot, offsets, source, line_numbers):
    """The slot's values as its dtype; a bad one is named with its line (its row found via
    offsets, the row's line number in `line_numbers`)."""
    try:
        return _as_dtype(tokens, slot.dtype) if tokens else np.zeros(0, slot.dtype)
    except (ValueError, OverflowError):
        for k, t in enumerate(tokens):
            try:
                _as_dtype([t], slot.dtype)
            except (ValueError, OverflowError) as error:
                line = line_numbers[int(np.searchsorted(offsets, k, side="right")) - 1]
                what = f"does not fit {slot.dtype}" if isinstance(error, OverflowError) else \
                    f"is not {'an integer' if slot.dtype.kind in 'iu' else 'a number'}"
                raise MultiSlotError(f"{source}: line {line}: slot {slot.name!r}: value {t!r} {what}") from None
        raise


def _check_source_setting(key, value):
    """init()/update_settings() settings of where examples come from: only the local defaults
    (fs_name/fs_ugi are set_hdfs_config's). input_type 0 reads one example per line, 1 one
    batch per line (Paddle's DataFeedDesc.input_type); see DatasetBase._batches."""
    if key == "input_type" and (isinstance(value, bool) or value not in (0, 1)):
        raise ValueError(f"input_type={value!r}: it is 0 (one example per line) or 1 (one batch per line)")
    if key == "download_cmd" and value != "cat":
        raise ValueError("download_cmd is for HDFS reads, which psjob does not do; give local paths")


def candidate_sources(count: int, capacity: int, rng) -> np.ndarray:
    """For examples 0..count-1 in turn, the example each takes its shuffled slots from, drawn
    as Paddle's slots shuffle draws it (its RecordCandidateList): each example joins a
    reservoir of `capacity` candidates (the first `capacity` fill it, then example i replaces
    a random one with probability capacity / (i + 1)), and one of the reservoir's candidates is
    drawn for it, itself included. So example i's source is uniform over examples 0..i while
    they fit the reservoir, then over a uniform sample of them. Vectorized: the source of a
    draw from reservoir place k at step i is the last example written there by then."""
    steps = np.arange(count, dtype=np.int64)
    if count == 0:
        return steps
    # Step i < capacity: the reservoir holds examples 0..i and one of them is drawn.
    sources = rng.integers(0, steps[:capacity] + 1)
    if count <= capacity:
        return sources
    later = steps[capacity:]
    place = rng.integers(0, later + 1)          # example i replaces place `place` if < capacity
    drawn = rng.integers(0, capacity, size=later.size)  # the place drawn from at step i
    writes = place < capacity
    if not writes.any():  # no later example entered: every place holds the example that filled it
        return np.concatenate([sources, drawn])
    w_place, w_step = place[writes], later[writes]
    order = np.lexsort((w_step, w_place))       # writes by place, then by step
    w_key = w_place[order] * count + w_step[order]
    at = np.searchsorted(w_key, drawn * count + later, side="right") - 1
    hit = at >= 0
    hit[hit] = w_place[order][at[hit]] == drawn[hit]
    # A place no later example wrote still holds the example that filled it (example k at place k).
    later_sources = np.where(hit, w_step[order][np.maximum(at, 0)], drawn)
    return np.concatenate([sources, later_sources])


class DatasetBase:
    def __init__(self):
        self.batch_size = 1
        self.thread_num = 1
        self._slots: list[_Slot] = []
        self.pipe_command = "cat"
        self.filelist: list[str] = []
        self._filelist_set = False  # set_filelist([]) is a pass over nothing; never calling it, a mistake
        self._parse_ins_id = self._parse_content = False
        self.fs_name = self.fs_ugi = ""
        self.input_type = 0

    def init(self, batch_size=1, thread_num=1, use_var=None, pipe_command="cat", input_type=0,
             fs_name="", fs_ugi="", download_cmd="cat", **kwargs):
        for key, value in (("input_type", input_type), ("download_cmd", download_cmd)):
            _check_source_setting(key, value)
        self.input_type = input_type
        self.set_hdfs_config(fs_name, fs_ugi)
        self.set_batch_size(batch_size)
        self.set_thread(thread_num)
        self.set_use_var(use_var or [])
        self.set_pipe_command(pipe_command)

    def set_hdfs_config(self, fs_name, fs_ugi):
        """Paddle hands these to its `hadoop fs` client, which it uses only for the file list's
        entries that begin with hdfs: or afs:; every other entry it reads as a local file
        whatever they say (Paddle 3.0.0 trains from local files with fs_name="afs://xxx", as
        PaddleRec's configs ship it). psjob keeps them and reads no file through them: it reads
        local files and s3:// objects, and set_filelist refuses an hdfs:// or afs:// entry
        (psjob.dataset.sources: an unsupported scheme)."""
        self.fs_name, self.fs_ugi = fs_name, fs_ugi

    def set_parse_ins_id(self, parse_ins_id):
        """Paddle's parse_ins_id: each line starts with its instance id as `1 <id>` (a
        MultiSlotStringDataGenerator's first slot); the ids lead the lines train_from_dataset
        and infer_from_dataset dump (program._fleet_opt's dump_fields)."""
        self._parse_ins_id = bool(parse_ins_id)

    def set_parse_content(self, parse_content):
        """Paddle's parse_content: after the instance id, a content field `1 <content>`
        (only read with parse_ins_id, as Paddle's feed reads it); dumped after the id."""
        self._parse_content = bool(parse_content)

    def _parse(self, block: bytes, source: str, first_line: int) -> _Examples:
        if not self._parse_ins_id:
            return parse_multislot(block, self._slots, source, first_line)
        fields = 2 if self._parse_content else 1
        rest, columns = split_prefix(block, fields, source, first_line)
        examples = parse_multislot(rest, self._slots, source, first_line)
        examples.ids = columns[0]
        examples.contents = columns[1] if fields == 2 else None
        return examples

    def _set_use_ps_gpu(self, use_ps_gpu):
        """Paddle's flag for its GPU parameter server (heterps builds); a Paddle build without
        it resets the flag to 0 and reads on the CPU, as psjob does (PaddleRec's InMemoryDataset
        helper calls this with runner.use_gpu)."""
        if use_ps_gpu:
            _note_once("InMemoryDataset._set_use_ps_gpu(True): psjob has no GPU parameter server "
                       "(Paddle's heterps); the dataset is read on the CPU, as in a Paddle build without it")
        self.use_ps_gpu = 0

    # Paddle 2.x's underscored setters (paddle/distributed/fleet/dataset/dataset.py), which
    # Paddle's own programs and PaddleRec call.
    def _set_batch_size(self, batch_size):
        self.set_batch_size(batch_size)

    def _set_thread(self, thread_num):
        self.set_thread(thread_num)

    def _set_use_var(self, var_list):
        self.set_use_var(var_list)

    def _set_pipe_command(self, pipe_command):
        self.set_pipe_command(pipe_command)

    def _set_hdfs_config(self, fs_name, fs_ugi):
        self.set_hdfs_config(fs_name, fs_ugi)

    def _set_input_type(self, input_type):
        _check_source_setting("input_type", input_type)
        self.input_type = input_type

    def _set_download_cmd(self, download_cmd):
        _check_source_setting("download_cmd", download_cmd)

    def set_batch_size(self, batch_size):
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)

    def set_thread(self, thread_num):
        if int(thread_num) < 1:
            raise ValueError(f"thread_num must be >= 1, got {thread_num}")
        self.thread_num = int(thread_num)

    def set_use_var(self, var_list):
        self._slots = [_Slot(v) for v in var_list]

    def set_pipe_command(self, pipe_command):
        if not isinstance(pipe_command, str) or not pipe_command.strip():
            raise ValueError("pipe_command must be a shell command (\"cat\" reads MultiSlot files as they are)")
        self.pipe_command = pipe_command

    def set_filelist(self, filelist):
        files = list(filelist)
        missing = [f for f in files if not exists(f)]  # named now, not mid-training
        if missing:
            raise FileNotFoundError(f"dataset files not found: {', '.join(map(str, missing))}")
        self.filelist = files
        self._filelist_set = True

    def _parse_file(self, path) -> _Examples:
        """The examples `pipe_command` prints for the file, parsed block by block as it prints
        them. A local file is the command's stdin; an object's body (no file descriptor to
        hand over) is streamed into it by a thread, so neither is ever held whole."""
        return self._collect(self._start(path))

    def _start(self, path) -> _Pipe:
        """Start `pipe_command` on the file (its output is read by _collect)."""
        if not self._slots:
            raise ValueError("set use_var (init(use_var=[...])) before reading")
        pipe = _Pipe(path)
        try:
            pipe.body = open_binary(path)
            pipe.stderr = tempfile.TemporaryFile()
            streamed = is_uri(path)
            stdin = subprocess.PIPE if streamed else pipe.body
            pipe.proc = subprocess.Popen(self.pipe_command, shell=True, stdin=stdin, stdout=subprocess.PIPE,
                                         stderr=pipe.stderr)
            pipe.feeder = _Feeder(pipe.body, pipe.proc.stdin, path) if streamed else None
        except BaseException:
            pipe.abandon()
            raise
        return pipe

    def _collect(self, pipe: _Pipe) -> _Examples:
        """Parse a started pipe's output to its end, then check its exit."""
        path, proc, feeder, stderr = pipe.path, pipe.proc, pipe.feeder, pipe.stderr
        source = f"{path} (through {self.pipe_command!r})"
        parts, error = [], None
        with pipe.body, stderr:
            try:
                for block, first_line in _line_blocks(proc.stdout):
                    if error is None:  # after a bad line, read on to the end: the exit status comes first
                        try:
                            parts.append(self._parse(block, source, first_line))
                        except MultiSlotError as exc:
                            error = exc
            finally:
                proc.stdout.close()
                returncode = proc.wait()
                if feeder is not None:
                    feeder.join()
            stderr.seek(0)
            self._check_exit(path, returncode, stderr.read())
            if feeder is not None:
                feeder.check()       # the command may exit 0 on a body cut short by a read error
        if error is not None:
            raise error
        return _Examples.concat(parts, self._slots)

    def _check_exit(self, path, returncode, stderr: bytes):
        if returncode != 0:
            tail = stderr.decode(errors="replace").strip().splitlines()[-5:]
            raise MultiSlotError(f"pipe_command {self.pipe_command!r} on {path} exited {returncode}: "
                                 + " | ".join(tail))

    def _batches(self, examples: _Examples, order, starts=None):
        """Feed dicts of the batches beginning at `starts` (default: all, in order); `order`
        None is the examples' own order (each batch a slice).

        With input_type=1 each line is a whole batch, which Paddle's reader takes only with
        batch_size=1 (a line per batch, read as input_type 0 reads it); Paddle 3.0.0 fails a
        pass whose batch would hold two lines ("the sparse tensor lod size must be 2"), and so
        does psjob, naming the setting."""
        count = len(examples) if order is None else len(order)
        for start in (starts if starts is not None else range(0, count, self.batch_size)):
            stop = min(start + self.batch_size, count)
            if self.input_type == 1 and stop - start > 1:
                raise ValueError(f"input_type=1 reads each line as one whole batch, so batch_size must be 1, "
                                 f"got {self.batch_size}: set batch_size=1, or input_type=0 to read one "
                                 "example per line and batch them")
            if order is None:
                yield examples.slice(start, stop, self._slots)
            else:
                yield examples.gather(order[start:stop], self._slots)


class InMemoryDataset(DatasetBase):
    def __init__(self):
        super().__init__()
        self._examples: _Examples | None = None
        self._order = np.zeros(0, np.int64)
        self._in_file_order = True  # _order is still arange: batches are slices
        self._preload: threading.Thread | None = None
        self._preload_error: BaseException | None = None
        self._rng = np.random.default_rng()
        # slots_shuffle (feature evaluation): its candidate count once set_fea_eval turned it
        # on, its draws (seeded, so a run repeats: Paddle's draws repeat run to run too), and
        # the examples as loaded, from which every shuffle starts
        self._fea_eval_candidates: int | None = None
        self._slots_rng = np.random.default_rng(0)
        self._unshuffled_slots: _Examples | None = None

    # update_settings keys psjob takes as Paddle does, and those whose Paddle defaults
    # (False / off) are the only values psjob reads with.
    _SETTERS = {"batch_size": "set_batch_size", "thread_num": "set_thread", "use_var": "set_use_var",
                "pipe_command": "set_pipe_command", "parse_ins_id": "set_parse_ins_id",
                "parse_content": "set_parse_content"}
    _OFF_ONLY = ("merge_by_sid", "parse_logkey", "enable_pv_merge")

    def _set_parse_ins_id(self, parse_ins_id):
        self.set_parse_ins_id(parse_ins_id)

    def _set_parse_content(self, parse_content):
        self.set_parse_content(parse_content)

    def _set_merge_by_lineid(self, merge_size=2):
        raise ValueError(f"_set_merge_by_lineid({merge_size!r}): psjob does not merge examples by line id")

    def _set_fleet_send_batch_size(self, fleet_send_batch_size=1024):
        """The batching of Paddle's global-shuffle sends; it changes no example (accepted)."""

    def _set_fleet_send_sleep_seconds(self, fleet_send_sleep_seconds=0):
        """The pause between Paddle's global-shuffle sends; it changes no example (accepted)."""

    # The keys Paddle's _init_distributed_settings reads.
    _DISTRIBUTED_SETTINGS = ("merge_size", "parse_ins_id", "parse_content", "fleet_send_batch_size",
                             "fleet_send_sleep_seconds", "fea_eval", "candidate_size")

    def _init_distributed_settings(self, **kwargs):
        """Paddle 2.x's InMemoryDataset._init_distributed_settings: the distributed-related
        settings, once, before or after init() (Paddle's InMemoryDataset docs, link at
        set_fea_eval). merge_size <= 0 (Paddle's
        default -1) is off; a positive one is refused, as by update_settings. A key Paddle does
        not read here is an error naming it (Paddle ignores it)."""
        unknown = sorted(set(kwargs) - set(self._DISTRIBUTED_SETTINGS))
        if unknown:
            raise TypeError(f"_init_distributed_settings() got unknown setting(s) {unknown}; it takes "
                            f"{', '.join(self._DISTRIBUTED_SETTINGS)}")
        merge_size = kwargs.get("merge_size", -1)
        if merge_size is not None and int(merge_size) > 0:
            self._set_merge_by_lineid(merge_size)
        self.set_parse_ins_id(kwargs.get("parse_ins_id", False))
        self.set_parse_content(kwargs.get("parse_content", False))
        if kwargs.get("fea_eval", False):
            self.set_fea_eval(kwargs.get("candidate_size", 10000), True)

    def set_date(self, date):
        """Paddle's set_date("YYYYMMDD"): the day of the data, which Paddle's GPU parameter
        server (heterps builds) reads; a CPU build, as psjob, only parses it. A date that is not
        eight digits is an error."""
        text = str(date)
        if not (len(text) == 8 and text.isdigit()):
            raise ValueError(f"set_date({date!r}): the date is eight digits, YYYYMMDD (e.g. '20211111')")
        self.date = (int(text[:4]), int(text[4:6]), int(text[6:]))

    def update_settings(self, **kwargs):
        """Paddle's InMemoryDataset.update_settings: change settings given to init()
        (https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/distributed/InMemoryDataset_en.html).
        The send/merge tuning of Paddle's global shuffle (fleet_send_batch_size,
        fleet_send_sleep_seconds) changes no example and is accepted; fea_eval=True turns on
        slots_shuffle with `candidate_size` candidates (10000 when not given), as Paddle's does;
        log keys and merging by line id are not read by psjob, so asking for them is an error
        rather than a silent difference."""
        for key, value in kwargs.items():
            if key == "fea_eval":
                if value:
                    self.set_fea_eval(kwargs.get("candidate_size", 10000), True)
            elif key in self._SETTERS:
                getattr(self, self._SETTERS[key])(value)
            elif key in ("fs_name", "fs_ugi"):
                setattr(self, key, value)
            elif key == "input_type":
                self._set_input_type(value)
            elif key == "download_cmd":
                _check_source_setting(key, value)
            elif key in self._OFF_ONLY:
                if value:
                    raise ValueError(f"update_settings({key}={value!r}): psjob reads MultiSlot lines without "
                                     f"{key}; leave it False")
            elif key == "merge_size":
                if value is not None and int(value) > 0:
                    raise ValueError(f"update_settings(merge_size={value}): psjob does not merge examples by line id")
            elif key not in ("fleet_send_batch_size", "fleet_send_sleep_seconds", "candidate_size"):
                raise TypeError(f"update_settings() got an unknown setting {key!r}")

    def load_into_memory(self, is_shuffle=False):
        """Run pipe_command over every file (thread_num at a time) and keep the examples. An
        empty file list loads nothing, as in Paddle (a worker whose share of a pass's files,
        fleet.util.get_file_shard, is empty)."""
        if not self.filelist and not self._filelist_set:
            raise ValueError("set_filelist([...]) before load_into_memory()")
        with concurrent.futures.ThreadPoolExecutor(self.thread_num) as pool:
            parts = list(pool.map(self._parse_file, self.filelist))
        self._examples = _Examples.concat(parts, self._slots)
        self._unshuffled_slots = None
        self._order = np.arange(len(self._examples), dtype=np.int64)
        self._in_file_order = True
        if is_shuffle:
            self.local_shuffle()

    def preload_into_memory(self, thread_num=None):
        if thread_num:
            self.set_thread(thread_num)

        def load():
            try:
                self.load_into_memory()
            except BaseException as exc:  # reported by wait_preload_done
                self._preload_error = exc
        self._preload = threading.Thread(target=load, name="psjob-dataset-preload", daemon=True)
        self._preload.start()

    def wait_preload_done(self):
        if self._preload is None:
            raise ValueError("wait_preload_done() without preload_into_memory()")
        self._preload.join()
        self._preload = None
        if self._preload_error is not None:
            error, self._preload_error = self._preload_error, None
            raise error

    def _loaded(self) -> _Examples:
        if self._examples is None:
            raise ValueError("load_into_memory() first")
        return self._examples

    def set_shuffle_seed(self, seed):
        """The seed of local_shuffle's permutation and of slots_shuffle's draws."""
        self._rng = np.random.default_rng(seed)
        self._slots_rng = np.random.default_rng(seed)

    def set_fea_eval(self, record_candidate_size, fea_eval=True):
        """Paddle's set_fea_eval (fluid's name; paddle.distributed's is _set_fea_eval): feature
        evaluation mode, which slots_shuffle needs, drawing each example's shuffled slots from
        `record_candidate_size` candidates (https://www.paddlepaddle.org.cn/documentation/docs/
        en/api/paddle/distributed/InMemoryDataset_en.html). fea_eval=False turns it off."""
        if not fea_eval:
            self._fea_eval_candidates = None
            return
        if isinstance(record_candidate_size, bool) or not isinstance(record_candidate_size, (int, np.integer)) \
                or record_candidate_size < 1:
            raise ValueError(f"set_fea_eval(record_candidate_size={record_candidate_size!r}): the candidate count "
                             "must be an int >= 1")
        self._fea_eval_candidates = int(record_candidate_size)

    _set_fea_eval = set_fea_eval

    def slots_shuffle(self, slots):
        """Paddle's slots_shuffle(slots): the named slots' values move between the loaded
        examples, every other slot staying, to measure each feature's importance by how much a
        metric (AUC) drops (Paddle's docs, link at set_fea_eval). Each example takes all the
        values of those slots (their count too) from one candidate example drawn as Paddle
        draws it (candidate_sources); the examples keep their order. Every call shuffles the
        examples as loaded, not the previous shuffle's result, as Paddle's does. Paddle moves
        feature ids only (int64 slots): it leaves a float slot, or a name that is no slot, as it
        is, which reads as an unimportant feature; psjob names either instead. Needs
        set_fea_eval(candidate_size) first (Paddle's raises without it, too)."""
        if self._fea_eval_candidates is None:
            raise ValueError("slots_shuffle() needs feature evaluation on: call set_fea_eval(record_candidate_size, "
                             "True) first")
        names = [slots] if isinstance(slots, str) else list(slots)
        positions = {slot.name: k for k, slot in enumerate(self._slots)}
        unknown = [n for n in names if n not in positions]
        if unknown:
            raise ValueError(f"slots_shuffle: {', '.join(map(repr, unknown))} is not a slot of use_var "
                             f"({', '.join(positions)})")
        floats = [n for n in names if self._slots[positions[n]].dtype.kind == "f"]
        if floats:
            raise ValueError(f"slots_shuffle: {', '.join(map(repr, floats))} is a float slot; Paddle's slots "
                             "shuffle moves feature ids (int64 slots) only and leaves it as it is")
        if self._unshuffled_slots is None:
            self._unshuffled_slots = self._loaded()
        original = self._unshuffled_slots
        order = self._order  # the examples in the order a pass reads them, as Paddle's channel holds them
        drawn = candidate_sources(len(order), self._fea_eval_candidates, self._slots_rng)
        source = np.empty(len(original), dtype=np.int64)
        source[order] = order[drawn]
        replaced = sorted({positions[n] for n in names})
        self._examples = original.with_slots_from(source, replaced)

    def local_shuffle(self):
        self._loaded()
        self._order = self._rng.permutation(self._order)
        self._in_file_order = False

    def global_shuffle(self, fleet=None, thread_num=12):
        """Shuffle the examples. Paddle also exchanges them among trainers; psjob trainers have no
        channel to one another, so with several trainers each shuffles its own (logged once)."""
        if fleet is not None and fleet.worker_num() > 1:
            _note_once("global_shuffle with several trainers shuffles each trainer's own examples "
                       "(psjob trainers exchange no data); give each trainer a shard of shuffled files")
        self.local_shuffle()

    def release_memory(self):
        self._examples, self._order = None, np.zeros(0, np.int64)
        self._unshuffled_slots = None

    def get_memory_data_size(self, fleet=None):
        size = len(self._order)
        if fleet is not None:
            return int(fleet.util.all_reduce(np.array([size]), "sum")[0])
        return size

    def get_shuffle_data_size(self, fleet=None):
        return self.get_memory_data_size(fleet)

    def _thread_feeds(self, threads: int):
        """Batches dealt round-robin to `threads` streams: every example once per pass."""
        examples = self._loaded()
        starts = range(0, len(self._order), self.batch_size)
        order = None if self._in_file_order else self._order
        return [self._batches(examples, order, starts[i::threads]) for i in range(threads)]


class QueueDataset(DatasetBase):
    """Streams the files: thread t reads files t, t + threads, ... and batches each as it comes."""

    def load_into_memory(self, *args, **kwargs):
        raise NotImplementedError("QueueDataset streams its files; use InMemoryDataset to load them into memory")

    def local_shuffle(self):
        raise NotImplementedError("QueueDataset does not shuffle; use InMemoryDataset")

    global_shuffle = local_shuffle

    def _thread_feeds(self, threads: int):
        if not self.filelist and not self._filelist_set:
            raise ValueError("set_filelist([...]) before training")
        # An empty list trains nothing, as in Paddle (PaddleRec/ctr/dcn's last, partial
        # epoch samples int(len(files) * fraction) files, which can be none).
        return [self._stream(self.filelist[i::threads]) for i in range(threads)]

    def _stream(self, files):
        """Each file's batches in order. The next file's pipe_command starts before this file's
        batches are handed out: its start (often an interpreter importing a framework, seconds on
        a busy machine) overlaps training instead of stalling it once per file."""
        ahead = None
        try:
            for i, path in enumerate(files):
                pipe, ahead = ahead or self._start(path), None
                examples = self._collect(pipe)
                if i + 1 < len(files):
                    try:
                        ahead = self._start(files[i + 1])
                    except Exception:  # raised again when that file is due, after this one's batches
                        ahead = None
                yield from self._batches(examples, None)
        finally:
            if ahead is not None:  # the consumer stopped early
                ahead.abandon()


class _Pipe:
    """A started pipe_command: the file it reads, its process, stderr file and feeder thread."""

    def __init__(self, path):
        self.path, self.body, self.stderr, self.proc, self.feeder = path, None, None, None, None

    def abandon(self):
        """Stop the command unread and release what it holds."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.stdout.close()
            self.proc.wait()
        if self.feeder is not None:
            self.feeder.join()
        for f in (self.body, self.stderr):
            if f is not None:
                f.close()


_noted: set[str] = set()


def _note_once(message):
    if message not in _noted:
        _noted.add(message)
        log.warning(message)
