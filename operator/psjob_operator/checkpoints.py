"""Checkpoint awareness: read the newest checkpoint from pserver 0's metrics.

The operator cannot read the checkpoint volume, but every psjob process serves
Prometheus metrics on PSJOB_METRICS_PORT (names from `psjob.foundation.metrics`). Pserver
0, which commits checkpoints (writes the manifest, last and atomically),
exports:

    psjob_pserver_last_checkpoint_timestamp_seconds <unix time of the commit>
    psjob_pserver_last_checkpoint_step{path="<checkpoint directory>"} <step>

(the step gauge is optional: without it the status carries the time only), and
the saves trainer 0 reported failed (a full disk, a pserver lost mid-save):

    psjob_pserver_checkpoint_failures_total <count>
    psjob_pserver_last_checkpoint_failure_timestamp_seconds <unix time>
    psjob_pserver_last_checkpoint_failure_step{error="<why>"} <step>

which the status carries as `failedSaves` and `lastFailure` (step, error, time). A stream
job's pserver 0 also exports where the newest checkpoint is in the stream
(docs/user/online-learning.md):

    psjob_pserver_stream_published_until_timestamp_seconds{folder="<folder>"} <done-marker time>
    psjob_pserver_stream_behind_since_timestamp_seconds <oldest complete folder it lacked, or 0>

which the status carries as `lastCheckpoint.stream` (folder, folderTime, and lagSeconds: the
probe's time minus the second, 0 when it lacked none).

While a job runs, the reconciler fetches http://<pserver-0 pod IP>:<metricsPort>
/metrics every `checkpoint_poll_seconds` and copies the values to
`status.lastCheckpoint` (step, path, time). A failed probe keeps the previous
value: status never goes backwards because a pod was briefly unreachable.
"""
from __future__ import annotations

import datetime as dt
import time
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from psjob_operator.observe import format_time

STEP_METRIC = "psjob_pserver_last_checkpoint_step"
TIME_METRIC = "psjob_pserver_last_checkpoint_timestamp_seconds"
FAILURES_METRIC = "psjob_pserver_checkpoint_failures_total"
FAILURE_STEP_METRIC = "psjob_pserver_last_checkpoint_failure_step"
FAILURE_TIME_METRIC = "psjob_pserver_last_checkpoint_failure_timestamp_seconds"
STREAM_UNTIL_METRIC = "psjob_pserver_stream_published_until_timestamp_seconds"
STREAM_BEHIND_METRIC = "psjob_pserver_stream_behind_since_timestamp_seconds"
MAX_BYTES = 4 << 20  # a metrics page is small; refuse to buffer a runaway response


def parse_last_checkpoint(text: str, now: float | None = None) -> dict[str, Any] | None:
    """{step, path, time, failedSaves, lastFailure: {step, error, time}, stream: {folder,
    folderTime, lagSeconds}} (the keys found) from a Prometheus text page, or None; `now`
    (unix seconds, default the clock) is the time the lag is measured at."""
    step = path = stamp = failures = failed_step = error = failed_stamp = None
    folder = until = behind = None
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError):
        return None
    for family in families:
        for sample in family.samples:
            if sample.name == STEP_METRIC and (step is None or sample.value > step):
                step, path = sample.value, sample.labels.get("path", "")
            elif sample.name == TIME_METRIC:
                stamp = sample.value
            elif sample.name == FAILURES_METRIC:
                failures = sample.value
            elif sample.name == FAILURE_STEP_METRIC and (failed_step is None or sample.value > failed_step):
                failed_step, error = sample.value, sample.labels.get("error", "")
            elif sample.name == FAILURE_TIME_METRIC:
                failed_stamp = sample.value
            elif sample.name == STREAM_UNTIL_METRIC:
                folder, until = sample.labels.get("folder", ""), sample.value
            elif sample.name == STREAM_BEHIND_METRIC:
                behind = sample.value
    out: dict[str, Any] = {}
    if folder is not None:
        now = time.time() if now is None else now
        stream: dict[str, Any] = {"folder": folder,
                                  "lagSeconds": int(max(now - behind, 0)) if behind else 0}
        if until:
            stream["folderTime"] = _time(until)
        out["stream"] = stream
    if step is not None and step >= 0:
        out["step"] = int(step)
    if path:
        out["path"] = path
    if stamp:
        out["time"] = _time(stamp)
    if failures:
        out["failedSaves"] = int(failures)
        failure: dict[str, Any] = {}
        if failed_step is not None and failed_step >= 0:
            failure["step"] = int(failed_step)
        if error:
            failure["error"] = error
        if failed_stamp:
            failure["time"] = _time(failed_stamp)
        if failure:
            out["lastFailure"] = failure
    return out or None


def _time(stamp: float) -> str:
    return format_time(dt.datetime.fromtimestamp(stamp, tz=dt.UTC))


def probe(url: str, timeout: float) -> dict[str, Any] | None:
    """Fetch and parse one metrics page; None on any network or format problem."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (http only)
            body = response.read(MAX_BYTES)
    except (OSError, ValueError):
        return None
    return parse_last_checkpoint(body.decode("utf-8", "replace"))
