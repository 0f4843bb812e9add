"""Kubernetes Events on condition transitions (what `kubectl describe` shows).

Posting an event is best effort: a failure is logged, never retried, and never
fails a reconcile pass — the status is the source of truth, events are the
history.
"""
from __future__ import annotations

import datetime as dt
import logging
import socket
import uuid
from collections.abc import Mapping
from typing import Any

from psjob.foundation import jobspec
from psjob_operator.kube import EVENTS, ApiError, KubeApi
from psjob_operator.observe import format_time
from psjob_operator.status import ConditionStatus, Phase, Reason, Transition

log = logging.getLogger(__name__)
COMPONENT = "psjob-operator"
WARNING_CONDITIONS = frozenset({Phase.FAILED, Phase.RESTARTING})
WARNING_REASONS = frozenset({Reason.RESIZE_REFUSED.value})


def should_post(transition: Transition) -> bool:
    """True conditions, plus Suspended turning False (the resume)."""
    return (transition.status is ConditionStatus.TRUE
            or transition.type is Phase.SUSPENDED)


def build_event(job: Mapping[str, Any], transition: Transition, now: dt.datetime,
                instance: str) -> dict[str, Any]:
    meta = job["metadata"]
    warning = ((transition.type in WARNING_CONDITIONS or transition.reason in WARNING_REASONS)
               and transition.status is ConditionStatus.TRUE)
    stamp = format_time(now)
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
                     "namespace": meta["namespace"]},
        "involvedObject": {"apiVersion": jobspec.API_VERSION_FULL, "kind": jobspec.KIND,
                           "name": meta["name"], "namespace": meta["namespace"],
                           "uid": meta.get("uid", "")},
        "reason": transition.reason,
        "message": transition.message[:1024],
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": f"{jobspec.API_GROUP}/operator",
        "reportingInstance": instance,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }


class EventRecorder:
    def __init__(self, api: KubeApi, instance: str | None = None):
        self.api = api
        self.instance = instance or socket.gethostname()

    def record(self, job: Mapping[str, Any], transitions: tuple[Transition, ...],
               now: dt.datetime) -> int:
        posted = 0
        for transition in transitions:
            if not should_post(transition):
                continue
            try:
                self.api.create(EVENTS, job["metadata"]["namespace"],
                                build_event(job, transition, now, self.instance))
                posted += 1
            except ApiError as exc:
                log.warning("could not post event %s for %s: %s", transition.reason,
                            job["metadata"]["name"], exc)
        return posted
