"""Trainer progress lines: written by each trainer, read back by `psjob run`.

A trainer prints one line every few seconds (`--log_every`) and one when it
finishes, on stdout — what `kubectl logs` shows in a pod and what `psjob run`
tails from the trainer's log file to draw its terminal view:

    [psjob] trainer=0 epoch=1/1 step=120/391 examples=61440 examples/s=2310 loss=0.5123 auc=0.6712 checkpoint=none
    [psjob] trainer=0 finished steps=391 examples=200000 examples/s=2290 loss=0.4981 auc=0.7020 checkpoint=step-500 seconds=87.3

A Fleet script's trainer (psjob.cluster.trainer.monitor) prints the same lines
without `epoch=` (Fleet does not know the script's epochs) and without a
step total:

    [psjob] trainer=1 step=40 examples=640 examples/s=310 loss=0.2210 auc=nan checkpoint=none

The words are `key=value` pairs so the same line reads well and parses
without ambiguity (`parse_line`). `auc` is the running AUC of the trainer's
metric op over everything it trained on so far.
"""
from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import dataclass, field

PREFIX = "[psjob] trainer="
_PAIR = re.compile(r"([A-Za-z_/]+)=(\S+)")


def parse_line(line: str) -> dict | None:
    """A progress or final line → {"trainer": int, "finished": bool, key: value...}; else None."""
    start = line.find(PREFIX)
    if start < 0:
        return None
    text = line[start + len("[psjob] "):].strip()
    head, _, rest = text.partition(" ")
    try:
        trainer = int(head.split("=", 1)[1])
    except (IndexError, ValueError):
        return None
    finished = rest.startswith("finished")
    out: dict = {"trainer": trainer, "finished": finished}
    for key, value in _PAIR.findall(rest):
        out[key] = _number(value)
    return out


def _number(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _fmt(value: float, digits: int = 4) -> str:
    return "nan" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


@dataclass
class ProgressState:
    trainer: int
    epochs: int | None  # None: unknown (a Fleet script's loop), the lines leave the epoch out
    steps_per_epoch: int | None
    epoch: int = 1
    steps: int = 0
    examples: int = 0
    loss: float = float("nan")
    auc: float = float("nan")
    checkpoint: str = "none"
    started: float = field(default_factory=time.monotonic)


class ProgressReporter:
    """Counts steps and prints a progress line every `every_s` seconds.

    `checkpoint` is a callable returning the label of the newest checkpoint
    (or "none"); it is called once per line, not per step. `on_window`
    receives the examples/s of each printed window (the metrics gauge).
    """

    def __init__(self, state: ProgressState, every_s: float, checkpoint=lambda: "none",
                 on_window=lambda eps: None, out=None):
        self.state = state
        self.every_s = every_s
        self._checkpoint = checkpoint
        self._on_window = on_window
        self._out = out or sys.stdout
        self._window_start = time.monotonic()
        self._window_examples = 0

    def step(self, epoch: int, examples: int, loss: float, auc: float) -> None:
        s = self.state
        s.epoch, s.steps, s.examples = epoch, s.steps + 1, s.examples + examples
        s.loss, s.auc = loss, auc
        self._window_examples += examples
        if time.monotonic() - self._window_start >= self.every_s:
            self._emit()

    def _window_rate(self) -> float:
        now = time.monotonic()
        rate = self._window_examples / max(now - self._window_start, 1e-9)
        self._window_start, self._window_examples = now, 0
        self._on_window(rate)
        return rate

    def _emit(self) -> None:
        s = self.state
        rate = self._window_rate()
        s.checkpoint = self._checkpoint()
        total = f"/{s.steps_per_epoch * s.epochs}" if s.steps_per_epoch and s.epochs else ""
        epoch = f"epoch={s.epoch}/{s.epochs} " if s.epochs else ""
        self._print(f"{PREFIX}{s.trainer} {epoch}step={s.steps}{total} "
                    f"examples={s.examples} examples/s={rate:.0f} loss={_fmt(s.loss)} "
                    f"auc={_fmt(s.auc)} checkpoint={s.checkpoint}")

    def finish(self) -> dict:
        """Print the final line; return the trainer's summary."""
        s = self.state
        seconds = time.monotonic() - s.started
        rate = s.examples / max(seconds, 1e-9)
        self._on_window(rate)
        s.checkpoint = self._checkpoint()
        self._print(f"{PREFIX}{s.trainer} finished steps={s.steps} examples={s.examples} "
                    f"examples/s={rate:.0f} loss={_fmt(s.loss)} auc={_fmt(s.auc)} "
                    f"checkpoint={s.checkpoint} seconds={seconds:.1f}")
        return {"trainer": s.trainer, "steps": s.steps, "examples": s.examples,
                "loss": s.loss, "auc": s.auc, "seconds": seconds}

    def _print(self, line: str) -> None:
        print(line, file=self._out, flush=True)
