"""A stream of time-partitioned folders that training follows as they appear.

Layout (PaddleRec's online trainer, tools/static_ps_online_trainer.py): a root
directory (local or s3://) holds one folder per interval, named by its time —
`ROOT/20261128/2300/` with the default layout `%Y%m%d/%H%M` (PaddleRec's day
folder and `get_online_pass_interval`'s HHMM split), `%Y%m%d/%H` (its
`is_data_hourly_placed`), or flat folders such as `%Y%m%d%H`. A folder is
complete once its done marker exists (`_SUCCESS` by default, Hadoop's output
marker; PaddleRec calls it `runner.data_donefile`). Its data files are every
other file in it, in name order, except names starting with `.` or `_`.

Folders are read strictly in time order: the reader waits (polling every
`poll_seconds`, PaddleRec's `data_sleep_second`) for the next folder's marker
and never passes a folder that is not done yet.

Order of training: within a folder the files are read as one run of lines. Each
folder is dealt on its own: its valid examples (counted by a first parse) are cut into
R rounds of T batches (T trainers), as equal in size as can be and at most `batch`
each; in every round trainer t takes the t-th batch. So every trainer takes R steps in
a folder and all of them finish it together: sync rounds never wait for the next
folder, and the newest folder is published while the stream is idle. Every trainer
reads every line (it parses the others' batches to skip them), so all of them agree on
the rounds without talking to each other. A folder with fewer valid examples than
trainers gives one to each of the first trainers and none to the others, who take no
step in it (in sync mode the rounds then stop lining up with the folders: a warning
says so).

Position (`StreamPosition`, a JSON-ready dict in every checkpoint): the point of the
stream where the next round starts — folder, file, byte offset and line — and `done`,
the newest folder wholly trained (with its done marker's time). A job resumed from it
(with any trainer count) deals the rest of that folder anew and trains every example
after it once and none before it.
"""
from __future__ import annotations

import calendar
import dataclasses
import logging
import os
import posixpath
import re
import threading
import time

from psjob.dataset import sources
from psjob.dataset.ctr import _reader
from psjob.dataset.ctr._parse import Columns

log = logging.getLogger("psjob.dataset.stream")

DEFAULT_LAYOUT = "%Y%m%d/%H%M"
DEFAULT_DONE_FILE = "_SUCCESS"
DEFAULT_POLL_SECONDS = 10.0    # PaddleRec's runner.data_sleep_second
READ_BYTES = 1 << 20
_FIELDS = {"%Y": r"\d{4}", "%m": r"\d{2}", "%d": r"\d{2}", "%H": r"\d{2}", "%M": r"\d{2}"}


class StreamError(ValueError):
    """A bad stream setting or position; the message names the field and the fix."""


@dataclasses.dataclass(frozen=True)
class StreamConfig:
    root: str
    layout: str = DEFAULT_LAYOUT
    done_file: str = DEFAULT_DONE_FILE
    poll_seconds: float = DEFAULT_POLL_SECONDS
    start: str = ""          # first folder to train ("" : the oldest present)

    def __post_init__(self):
        check_layout(self.layout)
        if not self.root:
            raise StreamError("stream root is empty: set it to a directory or s3://BUCKET/PREFIX")
        if not self.done_file or "/" in self.done_file:
            raise StreamError(f"doneFile {self.done_file!r} must be a plain file name, e.g. _SUCCESS")
        if not 0 < self.poll_seconds <= 3600:
            raise StreamError(f"pollSeconds must be in (0, 3600], got {self.poll_seconds}")
        if self.start and not folder_time(self.layout, self.start):
            raise StreamError(f"start {self.start!r} does not match the layout {self.layout!r} "
                              f"(e.g. {time.strftime(self.layout, time.gmtime(0))})")

    @classmethod
    def from_dict(cls, doc: dict) -> StreamConfig:
        known = {"root", "layout", "doneFile", "pollSeconds", "start"}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise StreamError(f"unknown stream field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(root=str(doc.get("root") or ""), layout=str(doc.get("layout") or DEFAULT_LAYOUT),
                   done_file=str(doc.get("doneFile") or DEFAULT_DONE_FILE),
                   poll_seconds=float(doc.get("pollSeconds") or DEFAULT_POLL_SECONDS),
                   start=str(doc.get("start") or ""))


def check_layout(layout: str) -> None:
    """StreamError unless `layout` is time fields (%Y %m %d %H %M) and literal characters,
    levels separated by '/', with at least %Y%m%d."""
    rest = re.sub(r"%[YmdHM]", "", layout)
    if "%" in rest or not layout or layout.startswith("/") or layout.endswith("/") or "//" in layout:
        raise StreamError(f"layout {layout!r}: use the fields %Y %m %d %H %M and '/' between folder "
                          f"levels, e.g. {DEFAULT_LAYOUT} or %Y%m%d%H")
    if not all(f in layout for f in ("%Y", "%m", "%d")):
        raise StreamError(f"layout {layout!r} must contain %Y, %m and %d")


def _level_patterns(layout: str) -> list:
    out = []
    for level in layout.split("/"):
        regex = "".join(_FIELDS.get(tok, re.escape(tok)) for tok in re.findall(r"%[YmdHM]|[^%]", level))
        out.append(re.compile(f"^{regex}$"))
    return out


def folder_time(layout: str, folder: str) -> float | None:
    """Unix time (UTC) a folder name stands for, or None when it does not match `layout`."""
    try:
        return float(calendar.timegm(time.strptime(folder, layout)))
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class StreamPosition:
    """Where the next round starts (module docstring). `folder` "" means the start of the
    first folder after `done` (or of the stream, when `done` is "" too)."""
    folder: str = ""
    file: str = ""
    offset: int = 0
    line: int = 0          # lines of `file` before `offset` (for people and logs)
    done: str = ""
    done_time: float = 0.0  # the done marker's time of `done` (unix seconds)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, doc) -> StreamPosition:
        if not isinstance(doc, dict):
            raise StreamError(f"a stream position is a mapping, got {doc!r}")
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in fields})

    def describe(self) -> str:
        if self.folder:
            where = f"{self.folder}/{self.file or '(first file)'} line {self.line}"
        else:
            where = f"the folder after {self.done}" if self.done else "the start of the stream"
        return where


class Stream:
    """The folders of one stream root: listing, done markers and their times."""

    def __init__(self, config: StreamConfig):
        self.config = config
        self.levels = _level_patterns(config.layout)
        self.marker_times: dict = {}  # folder -> its done marker's time (first seen, on URIs)

    def path(self, *parts) -> str:
        root = self.config.root.rstrip("/")
        return posixpath.join(root, *parts) if sources.is_uri(root) else os.path.join(root, *parts)

    def folders(self, after: str = "") -> list:
        """Folders later than `after` (and not before the start), in time order. Levels above
        the last are pruned by name (their fields are fixed-width digits): a stream of many
        days lists only the days from `after`'s on."""
        floor = max(after, self.config.start, key=self._key) if after and self.config.start \
            else (after or self.config.start)
        floor_parts = floor.split("/") if floor else []
        found = [""]
        for i, pattern in enumerate(self.levels):
            nxt = []
            for prefix in found:
                for name in sorted(sources.list_dirs(self.path(prefix) if prefix else self.path())):
                    folder = f"{prefix}/{name}" if prefix else name
                    if pattern.match(name) and (i + 1 == len(self.levels)
                                                or not floor_parts or folder >= "/".join(floor_parts[:i + 1])):
                        nxt.append(folder)
            found = nxt
        found = [f for f in found if folder_time(self.config.layout, f) is not None]
        lower = self._key(after) if after else None
        start = self._key(self.config.start) if self.config.start else None
        return sorted((f for f in found if (lower is None or self._key(f) > lower)
                       and (start is None or self._key(f) >= start)), key=self._key)

    def _key(self, folder: str):
        return (folder_time(self.config.layout, folder) or 0.0, folder)

    def done_time(self, folder: str) -> float | None:
        """The done marker's time of `folder`, or None while it has none."""
        if folder in self.marker_times:
            return self.marker_times[folder]
        marker = self.path(folder, self.config.done_file)
        if sources.is_uri(marker):
            stamp = time.time() if sources.exists(marker) else None  # stores give no cheap mtime
        else:
            try:
                stamp = os.stat(marker).st_mtime
            except OSError:
                stamp = None
        if stamp is not None:
            self.marker_times[folder] = stamp
        return stamp

    def files(self, folder: str) -> list:
        names = sources.list_files(self.path(folder))
        return [n for n in names if n != self.config.done_file and not n.startswith((".", "_"))]

    def pending(self, done: str) -> list:
        """(folder, done time) of the done folders after `done`, in order, up to the first
        one not done yet."""
        out = []
        for folder in self.folders(after=done):
            stamp = self.done_time(folder)
            if stamp is None:
                break
            out.append((folder, stamp))
        return out


class _Cursor:
    """Reading position inside one done folder: its files as one run of lines."""

    def __init__(self, stream: Stream, folder: str, file: str = "", offset: int = 0, line: int = 0):
        self.stream, self.folder = stream, folder
        self.files = stream.files(folder)
        if file and file not in self.files:
            raise StreamError(f"stream position names {folder}/{file}, which is not in the folder "
                              f"(files: {', '.join(self.files) or 'none'}): the stream was rewritten")
        self.index = self.files.index(file) if file else 0
        self.offset, self.line = (offset, line) if file else (0, 0)
        self._handle, self._buffer = None, b""

    @property
    def at_end(self) -> bool:
        while self.index < len(self.files):
            if self._buffer or self._fill():
                return False
            self._next_file()
        return True

    def _path(self) -> str:
        return self.stream.path(self.folder, self.files[self.index])

    def _fill(self) -> bool:
        handle = self._handle
        if handle is None:
            handle = self._handle = sources.open_binary(self._path())
            handle.seek(self.offset)
        chunk = handle.read(READ_BYTES)
        if chunk:
            self._buffer += chunk
        return bool(chunk)

    def _next_file(self):
        if self._handle is not None:
            self._handle.close()
        self._handle, self._buffer = None, b""
        self.index += 1
        self.offset = self.line = 0

    def read_lines(self, count: int):
        """(path, first line number, bytes of up to `count` whole lines, lines) from the
        current file; a last line without newline counts as a line (the folder is done)."""
        while True:
            end = pos = 0
            lines = 0
            while lines < count:
                nl = self._buffer.find(b"\n", pos)
                if nl < 0:
                    break
                pos = end = nl + 1
                lines += 1
            if lines == count or not self._fill():
                if lines < count and len(self._buffer) > end:  # unterminated last line at EOF
                    end, lines = len(self._buffer), lines + 1
                data, self._buffer = self._buffer[:end], self._buffer[end:]
                first = self.line + 1
                self.offset += len(data)
                self.line += lines
                if not data.endswith(b"\n") and data:
                    data += b"\n"
                return self._path(), first, data, lines

    def close(self):
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def position(self, done: str, done_time: float) -> StreamPosition:
        return StreamPosition(self.folder, self.files[self.index], self.offset, self.line, done, done_time)


class StreamReader:
    """One trainer's batches of a stream, each with the position after its round.

    Iterating yields (CtrBatch, StreamPosition) for ever, or until `stop` is set (then it
    returns). While it waits for the next folder it calls `on_idle()` (e.g. publish a
    checkpoint) and sleeps on `stop` for the poll interval: no busy loop."""

    def __init__(self, config: StreamConfig, trainer: int, trainers: int, batch: int, *, id_mode="dense",
                 fmt="ctr", start: StreamPosition | None = None, stop: threading.Event | None = None,
                 on_idle=None, stats=None):
        if not 0 <= trainer < trainers:
            raise StreamError(f"trainer {trainer} of {trainers}")
        self.stream = Stream(config)
        self.trainer, self.trainers, self.batch = trainer, trainers, int(batch)
        self.stop = stop if stop is not None else threading.Event()
        self.on_idle = on_idle
        self.stats = stats if stats is not None else _reader.ReaderStats()
        self.id_mode, self.fmt = id_mode, fmt
        self._pass = _reader._Pass(id_mode, "skip", self.stats, fmt)
        start = start or StreamPosition()
        self.done, self.done_stamp = start.done, start.done_time
        self._cursor = _Cursor(self.stream, start.folder, start.file, start.offset, start.line) \
            if start.folder else None
        self._sizes: list = []   # batch sizes of the rest of the current folder, in stream order

    # -- folders ----------------------------------------------------------------------
    def _advance(self) -> bool:
        """Move to the next done folder (waiting for it) and deal it; False once stopped."""
        while not self.stop.is_set():
            if self._cursor is not None:
                if self._sizes:
                    return True
                self._cursor.close()
                self.done = self._cursor.folder
                self.done_stamp = self.stream.done_time(self.done) or 0.0
                self._cursor = None
            following = self.stream.folders(after=self.done)
            if following and self.stream.done_time(following[0]) is not None:
                self._cursor = _Cursor(self.stream, following[0])
                self._deal()
                log.info("stream: reading %s (%d file(s), %d batch(es) over %d trainer(s))", following[0],
                         len(self._cursor.files), len(self._sizes), self.trainers)
                continue
            if self.on_idle is not None:
                self.on_idle()
            self.stop.wait(self.stream.config.poll_seconds)
        return False

    def _deal(self) -> None:
        """Batch sizes of the rest of the current folder: its valid examples (counted by a first
        parse) in R rounds of T batches as equal as can be, at most `batch` each, so every
        trainer takes R steps in the folder and all finish it together (sync rounds never wait
        for the next folder). A folder with fewer examples than trainers gives one to each of
        the first trainers only (module docstring)."""
        c = self._cursor
        assert c is not None  # a folder is open
        counter = _Cursor(self.stream, c.folder, c.files[c.index] if c.index < len(c.files) else "",
                          c.offset, c.line) if c.index < len(c.files) else None
        total = 0
        counting = _reader._Pass(self.id_mode, "skip", _reader.ReaderStats(), self.fmt)
        while counter is not None and not counter.at_end:
            path, first, data, lines = counter.read_lines(1 << 16)
            total += sum(len(part) for part in counting._parse(path, data, first, lines))
        if counter is not None:
            counter.close()
        t = self.trainers
        if total < t:
            if total:
                log.warning("stream: %s holds %d example(s) for %d trainers: trainers %d.. take no step in it "
                            "(sync rounds are not exact across it)", c.folder, total, t, total)
            self._sizes = [1] * total + [0] * (t - total) if total else []
            return
        rounds = max(1, min(-(-total // (t * self.batch)), total // t))
        base, extra = divmod(total, rounds * t)
        self._sizes = [base + (k < extra) for k in range(rounds * t)]

    # -- batches ----------------------------------------------------------------------
    def _read(self, want: int, keep: bool):
        """The next `want` valid examples of the current folder (a CtrBatch when kept)."""
        cols, have = [], 0
        cursor = self._cursor
        assert cursor is not None  # a folder is open
        while have < want and not cursor.at_end:
            path, first, data, lines = cursor.read_lines(want - have)
            for part in self._pass._parse(path, data, first, lines):
                if len(part):
                    cols.append(part)
                    have += len(part)
        if not keep or not have:
            return None
        return _reader.CtrBatch.from_columns(Columns.concat(cols))

    def position(self) -> StreamPosition:
        if self._cursor is None:
            return StreamPosition(done=self.done, done_time=self.done_stamp)
        if not self._sizes:
            return StreamPosition(done=self._cursor.folder, done_time=self.stream.done_time(self._cursor.folder) or 0.0)
        return self._cursor.position(self.done, self.done_stamp)

    def __iter__(self):
        if self._cursor is not None:
            self._deal()  # a resumed position: deal the rest of its folder
        try:
            while True:
                if not self._sizes and not self._advance():
                    return
                mine = None
                for k in range(self.trainers):  # one round: every trainer's batch, mine kept
                    size = self._sizes.pop(0)
                    batch = self._read(size, keep=k == self.trainer)
                    mine = batch if k == self.trainer else mine
                if mine is not None:
                    yield mine, self.position()
        finally:
            if self._cursor is not None:
                self._cursor.close()
