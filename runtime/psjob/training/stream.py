"""The built-in job on a stream (online learning): train as folders arrive, publish, repeat.

A job whose role environment carries PSJOB_DATA_STREAM (the job's `spec.data.stream`, as
JSON) trains on psjob.dataset.stream instead of `--data`: every trainer follows the
stream's folders for ever (until the job is suspended or deleted, or `--max_steps`),
taking its round-robin share of each folder's batches.

Publication: trainer 0 checkpoints on the job's schedule (`spec.checkpoint.intervalSeconds`
/ `intervalSteps`, psjob.cluster.trainer.checkpointer) with the stream position of the round it
just finished in the manifest (`position.stream`), also while the stream is idle (the
last folder's tail is published without waiting for the next folder). `publish` is the
one place a checkpoint is written. After each publication it exports the freshness of
every folder the checkpoint newly holds (done marker → publication, seconds), the lag,
and tells the pservers (the COMMIT's parameters), whose pserver 0 the operator reads
into `status.stream`.

Exactly once: in sync mode the rounds are lock-step, so when trainer 0 has finished
round N every trainer has, and the position trainer 0 records is everyone's; a job
restarted from the checkpoint trains every example after that position once and none
before it. In async modes each trainer records its own position (a hint written every
step, as for files) and resumes from it with the same trainer count.

`--audit_ids DIR` appends, per step, the trainer's step and the AUDIT_SLOT ids of the
examples it trained to DIR/trainer-<i>.jsonl (a record of what was trained, for tests
and for checking a pipeline end to end).
"""
from __future__ import annotations

import json
import os
import threading
import time

from psjob.cluster.trainer.checkpointer import Checkpointer
from psjob.cluster.trainer.telemetry import TrainerTelemetry
from psjob.dataset import stream as data_stream
from psjob.foundation.settings import DATA_STREAM, Settings
from psjob.training.options import UsageError

STREAM_SETTING = DATA_STREAM  # the job's spec.data.stream as JSON
AUDIT_SLOT = 11  # one id per example, 100,000 values (psjob.dataset.ctr.SLOT_VOCAB)


def config_from(settings: Settings) -> data_stream.StreamConfig | None:
    """The stream of this job, from its process's settings (None: not a stream job); a
    UsageError (exit status 2, not retried) names a bad field."""
    raw = settings.process.data_stream
    if not raw.strip():
        return None
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{STREAM_SETTING} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{STREAM_SETTING} must be a JSON object (spec.data.stream), got {raw!r}")
    try:
        return data_stream.StreamConfig.from_dict(doc)
    except data_stream.StreamError as exc:
        raise UsageError(f"{STREAM_SETTING} (spec.data.stream): {exc}") from None


class Publisher:
    """Trainer 0's publications of a stream job's progress (the others only record positions)."""

    def __init__(self, ckpt: Checkpointer, stream: data_stream.Stream, telemetry: TrainerTelemetry):
        self.ckpt, self.stream, self.telemetry = ckpt, stream, telemetry
        self.step = 0
        self.position: data_stream.StreamPosition | None = None
        self.published_step = -1
        self.published_done = ""

    def resumed(self, step: int, position: data_stream.StreamPosition) -> None:
        self.step, self.position = step, position
        self.published_step, self.published_done = step, position.done

    def after_step(self, step: int, position: data_stream.StreamPosition) -> str | None:
        self.step, self.position = step, position
        ckpt = self.ckpt
        if not ckpt.config.enabled:
            return None
        if ckpt.is_chief and ckpt.due(step) and not ckpt.holding:
            return self.publish()
        return ckpt.after_step(step, **self._fields())  # positions; a pserver resize's hold

    def idle(self) -> None:
        """The reader waits for a folder: publish what was trained since the last checkpoint."""
        ckpt = self.ckpt
        if ckpt.config.enabled and ckpt.is_chief and self.position is not None \
                and self.step > self.published_step and ckpt.due(self.step):
            self.publish()
        elif ckpt.is_chief:
            self._export_lag(time.time())

    def _fields(self) -> dict:
        assert self.position is not None  # set by the first step
        return {"epoch": 1, "batch": self.step, "stream": self.position.to_dict()}

    def publish(self) -> str | None:
        """Checkpoint now (the one place a stream job writes one); then its freshness and lag."""
        pending = self.stream.pending(self.published_done)
        assert self.position is not None  # set by the first step
        done = self.position.done
        included = [(f, t) for f, t in pending if self.stream._key(f) <= self.stream._key(done)] if done else []
        waiting = [t for f, t in pending if (f, t) not in included]
        self.ckpt.commit_params = {"stream_folder": done or "-", "stream_until": f"{self.position.done_time:.3f}",
                                   "stream_behind_since": f"{min(waiting):.3f}" if waiting else "0"}
        path = self.ckpt.save(self.step, **self._fields())
        if path is None:
            return None
        now = time.time()
        m = self.telemetry.m
        for _folder, stamp in included:
            m.stream_freshness.observe(max(now - stamp, 0.0))
            m.stream_folders.inc()
        self.published_step, self.published_done = self.step, done or self.published_done
        for folder in [f for f in self.stream.marker_times if self.stream._key(f) < self.stream._key(done)] \
                if done else []:
            del self.stream.marker_times[folder]  # bounded: folders before the published one are not asked again
        self._export_lag(now, waiting)
        return path

    def _export_lag(self, now: float, waiting=None) -> None:
        if waiting is None:
            waiting = [t for f, t in self.stream.pending(self.published_done)]
        self.telemetry.m.stream_lag.set(max(now - min(waiting), 0.0) if waiting else 0.0)


class Audit:
    """--audit_ids: one JSON line per step, flushed (a killed trainer loses at most its last line)."""

    def __init__(self, directory: str, trainer: int):
        self.file = None
        if directory:
            os.makedirs(directory, exist_ok=True)
            self.file = open(os.path.join(directory, f"trainer-{trainer}.jsonl"), "a", encoding="utf-8")

    def record(self, step: int, batch) -> None:
        if self.file is not None:
            ids = batch.ids[AUDIT_SLOT]
            self.file.write(json.dumps({"step": step, "ids": [int(i) for i in ids]}) + "\n")
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def reader_for(config: data_stream.StreamConfig, tid: int, trainers: int, batch: int, id_mode: str,
               position: dict, publisher: Publisher, stop: threading.Event) -> data_stream.StreamReader:
    start = data_stream.StreamPosition.from_dict(position["stream"]) if position.get("stream") else None
    return data_stream.StreamReader(config, tid, trainers, batch, id_mode=id_mode, start=start, stop=stop,
                                    on_idle=publisher.idle)
