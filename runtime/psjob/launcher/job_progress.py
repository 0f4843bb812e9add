"""The terminal view of `psjob run` and `psjob launch`: trainer progress read back from their logs.

Trainers print progress lines (psjob.foundation.progress) to stdout, which the
supervisor sends to one log file per process. A `LogWatcher` thread reads
what each trainer log gained since the last look, keeps the newest progress
of each trainer, and every `interval_s` prints one line per trainer whose
progress changed. Reading logs (not a side channel) keeps the processes'
environment exactly what the operator gives pods, and shows the same numbers
`kubectl logs` would.

When the run ends, `summarize` adds up the trainers' final progress into the
summary both commands print (`summary_line`) and write as JSON (`--summary`).
"""
from __future__ import annotations

import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TextIO

from psjob.foundation import roles
from psjob.foundation.progress import parse_line

if TYPE_CHECKING:
    from psjob.launcher.supervisor import ProcessSpec


def _num(value: object, spec: str, default: str = "-") -> str:
    if isinstance(value, (int, float)) and math.isfinite(value):
        return format(value, spec)
    return default


# A save's outcome as trainers print it (psjob.cluster.trainer.checkpointer.Checkpointer.save).
CKPT_FAILED = re.compile(r"\[psjob\] checkpoint at step (\d+) failed: (.*)")
CKPT_SAVED = re.compile(r"\[psjob\] checkpoint step (\d+) saved to ")
ERROR_CHARS = 90  # of a failed save's error on the terminal; the summary keeps it whole
OS_ERROR = re.compile(r"\[Errno \d+\][^:'\"]*")


def describe(progress: dict, saves: dict | None = None) -> str:
    """One trainer's progress as the terminal shows it; `saves` (LogWatcher.saves) adds the
    checkpoint saves that failed since its last good one."""
    p = progress
    if p.get("finished"):
        head = f"done in {_num(p.get('seconds'), '.0f')}s, {_num(p.get('steps'), 'd')} steps"
    else:
        epoch = f"epoch {p['epoch']}  " if "epoch" in p else ""  # Fleet scripts' lines have none
        head = f"{epoch}step {p.get('step')}"
    text = (f"{head}  {_num(p.get('examples'), ',d')} ex  {_num(p.get('examples/s'), ',.0f')} ex/s  "
            f"loss {_num(p.get('loss'), '.4f')}  auc {_num(p.get('auc'), '.4f')}  "
            f"ckpt {p.get('checkpoint', 'none')}")
    if saves and saves.get("failed_since_saved"):
        text += (f" ({saves['failed_since_saved']} checkpoint save(s) failed since, the last at step "
                 f"{saves['last_step']}: {short_error(saves['last_error'])})")
    return text


def short_error(error: str) -> str:
    """A failed save's error for the terminal: the OS error when there is one ("[Errno 28] No
    space left on device", wherever the RPC layers put it), else its first ERROR_CHARS."""
    os_error = OS_ERROR.search(error)
    if os_error:
        return os_error.group(0).strip()
    return error if len(error) <= ERROR_CHARS else error[:ERROR_CHARS - 1] + "…"


class LogWatcher:
    """Tails trainer logs on a thread; `latest` maps trainer id → newest progress dict."""

    def __init__(self, logs: dict[int, str], interval_s: float, started: float, out: TextIO | None = None,
                 name: str = "worker") -> None:
        self.logs = logs
        self.interval_s = interval_s
        self.started = started
        self.out = out or sys.stdout
        self.name = name
        self.latest: dict[int, dict] = {}
        self.finals: dict[int, dict] = {}
        # Per trainer, its failed checkpoint saves: failed (in all), failed_since_saved,
        # last_step, last_error — a failing save is otherwise only in the trainer's log.
        self.saves: dict[int, dict] = {}
        self._offsets = {i: 0 for i in logs}
        self._partial = {i: "" for i in logs}
        self._shown: dict[int, str] = {}
        self._drawn = 0  # lines of the progress block on a terminal, redrawn in place
        self._tty = bool(getattr(self.out, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="psjob-run-progress", daemon=True)
        self._lock = threading.RLock()

    def watch(self, index: int, path: str) -> None:
        """Tail one more trainer's log (a trainer `psjob scale` added)."""
        with self._lock:
            self._offsets.setdefault(index, 0)
            self._partial.setdefault(index, "")
            self.logs[index] = path

    def start(self) -> LogWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread, read the logs one last time, print what changed."""
        self._stop.set()
        self._thread.join(timeout=5)
        self.poll()
        self.show()

    def _loop(self) -> None:
        next_show = time.monotonic() + self.interval_s
        while not self._stop.wait(0.5):
            self.poll()
            if time.monotonic() >= next_show:
                self.show()
                next_show = time.monotonic() + self.interval_s

    def poll(self) -> None:
        for index, path in list(self.logs.items()):  # psjob scale may add trainers meanwhile
            for line in self._new_lines(index, path):
                progress = parse_line(line)
                if progress is None:
                    self._note_save(index, line)
                    continue
                with self._lock:
                    self.latest[index] = progress
                    if progress["finished"]:
                        self.finals[index] = progress

    def _note_save(self, index: int, line: str) -> None:
        failed = CKPT_FAILED.search(line)
        if failed:
            with self._lock:
                saves = self.saves.setdefault(index, {"failed": 0, "failed_since_saved": 0})
                saves["failed"] += 1
                saves["failed_since_saved"] += 1
                saves["last_step"], saves["last_error"] = int(failed.group(1)), failed.group(2).strip()
        elif CKPT_SAVED.search(line) and index in self.saves:
            with self._lock:
                self.saves[index]["failed_since_saved"] = 0

    def _new_lines(self, index: int, path: str) -> list[str]:
        try:
            size = os.path.getsize(path)
            if size < self._offsets[index]:  # truncated or replaced: start over
                self._offsets[index], self._partial[index] = 0, ""
            if size == self._offsets[index]:
                return []
            with open(path, "rb") as f:
                f.seek(self._offsets[index])
                chunk = f.read(size - self._offsets[index])
        except OSError:
            return []
        self._offsets[index] += len(chunk)
        text = self._partial[index] + chunk.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self._partial[index] = lines.pop()
        return lines

    def show(self) -> None:
        """Print the trainers whose progress changed; on a terminal, redraw the block in place."""
        with self._lock:
            items = [(i, describe(p, self.saves.get(i))) for i, p in sorted(self.latest.items())]
            changed = [(i, text) for i, text in items if self._shown.get(i) != text]
            if not changed:
                return
            self._shown.update(changed)
            if self._tty:
                self._erase()
                self._draw()
            else:
                self.out.write("".join(self._line(i, text) for i, text in changed))
            self.out.flush()

    def _line(self, index: int, text: str) -> str:
        return f"[psjob {time.monotonic() - self.started:5.0f}s] {self.name} {index}: {text}\n"

    def _draw(self) -> None:
        self.out.write("".join(self._line(i, t) for i, t in sorted(self._shown.items())))
        self._drawn = len(self._shown)

    def note(self, message: str, out: TextIO | None = None) -> None:
        """Print an event line (a restart, a failure) without breaking the progress block;
        `out` is another stream for it (`psjob launch` keeps its events on stderr)."""
        with self._lock:
            if self._tty:
                self._erase()
                self.out.flush()
            stream = out or self.out
            stream.write(message + "\n")
            stream.flush()
            if self._tty and self._shown:
                self._draw()
            self.out.flush()

    def _erase(self) -> None:
        if self._drawn:
            # Cursor up to the block's first line, clear from there to the end of the screen.
            self.out.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0


# -- the summary ---------------------------------------------------------------------------

def summarize(*, job: str, mode: str, outcome: tuple[int, str], seconds: float, watcher: LogWatcher, trainers: int,
              checkpoint_dir: str, specs: Iterable[ProcessSpec], name_of: Callable[[ProcessSpec], str]) -> dict:
    """The run's summary: the trainers' final progress added up, the newest checkpoint, and
    per process (`specs`: supervisor ProcessSpecs; `name_of(spec)` names one) its exits."""
    finals: list[Any] = [watcher.finals.get(i) or watcher.latest.get(i) for i in range(trainers)]
    finals = [f for f in finals if f]
    ckpt = None
    if checkpoint_dir:
        from psjob.foundation.checkpoint import store  # only now: the framework is not needed before
        ckpt = store.newest_good(checkpoint_dir)
    return {
        "job": job,
        "status": "Succeeded" if outcome[0] == 0 else "Failed",
        "exit_code": outcome[0],
        "reason": outcome[1],
        "mode": mode,
        "seconds": round(seconds, 2),
        "steps": sum(_int_step(f) for f in finals),
        "examples": sum(int(f.get("examples") or 0) for f in finals),
        "loss": _clean(_weighted(finals, "loss")),
        "auc": _clean(_weighted(finals, "auc")),
        "trainers": [{k: _clean(v) for k, v in f.items()} for f in finals],
        "newest_checkpoint": ({"path": ckpt.path, "step": ckpt.step} if ckpt else None),
        "checkpoint_failures": _save_failures(watcher.saves),
        "processes": [{"name": name_of(sp), "role": sp.role, "index": sp.index,
                       "exit_code": None if sp.exit_code is None else exit_status(sp.exit_code),
                       # a pserver resize starts every process again: not a restart
                       "restarts": max(sp.starts - 1 - sp.history.count(roles.RESIZE_HOLD_EXIT), 0),
                       "exit_history": [exit_status(c) for c in sp.history], "log": sp.log_path}
                      for sp in specs],
    }


def _save_failures(saves: dict) -> dict | None:
    """The run's failed checkpoint saves (every trainer's): count, failed since the last good
    save, the last one's step and error; None when none failed."""
    failing = [v for v in saves.values() if v["failed"]]
    if not failing:
        return None
    last = max(failing, key=lambda v: v["last_step"])
    return {"count": sum(v["failed"] for v in failing),
            "since_last_saved": sum(v["failed_since_saved"] for v in failing),
            "last_step": last["last_step"], "last_error": last["last_error"]}


def exit_status(code: int) -> int:
    """A Popen return code as a shell shows it (killed by signal N: 128+N)."""
    return 128 - code if code < 0 else code


def log_tail(path: str, lines: int = 6) -> str:
    try:
        with open(path, errors="replace") as f:
            text = f.read()[-8000:]
    except OSError:
        return "    (no log)"
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def _int_step(progress: dict) -> int:
    value = progress.get("steps", progress.get("step", 0))
    if isinstance(value, str):
        value = value.split("/")[0]
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _weighted(finals: list[dict], key: str) -> float:
    """Mean of the trainers' values weighted by their examples (their data shares)."""
    pairs = [(float(f[key]), int(f.get("examples") or 0)) for f in finals
             if isinstance(f.get(key), (int, float)) and math.isfinite(f[key])]
    total = sum(w for _, w in pairs)
    if not pairs:
        return float("nan")
    if not total:
        return sum(v for v, _ in pairs) / len(pairs)
    return sum(v * w for v, w in pairs) / total


def _clean(value: object) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def summary_line(summary: dict) -> str:
    def num(v: object, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    ckpt = summary["newest_checkpoint"]
    ckpt_text = "none" if ckpt is None else (f"step {ckpt['step']}" if ckpt["step"] is not None
                                             else ckpt["path"])
    restarts = sum(p["restarts"] for p in summary["processes"])
    head = (f"[psjob] {summary['job']} {summary['status'].lower()} in {summary['seconds']:.0f}s: "
            f"{summary['steps']:,} steps, {summary['examples']:,} examples, "
            f"loss {num(summary['loss'], '.4f')}, AUC {num(summary['auc'], '.4f')}, "
            f"newest checkpoint {ckpt_text}, {restarts} restart(s)")
    failures = summary.get("checkpoint_failures")
    if failures:
        head += (f"\n[psjob] {failures['count']} checkpoint save(s) failed, {failures['since_last_saved']} "
                 f"since the last good one; the last at step {failures['last_step']}: "
                 f"{failures['last_error']}")
    if summary["status"] != "Succeeded":
        head += f"\n[psjob] {summary['reason']}"
    return head
