"""The overlay of the operator's own writes over the watch cache (pure, no API)."""
from __future__ import annotations

from psjob_operator.cache import Overlay, Snapshot
from psjob_operator.kube import BATCH_JOBS, JOBS, STATEFULSETS


def obj(kind_name: str, version: int, job: str = "j", **extra) -> dict:
    return {"metadata": {"name": kind_name, "namespace": "ns", "resourceVersion": str(version),
                         "labels": {"psjob.dev/job-name": job}}, **extra}


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_own_write_wins_until_the_watch_shows_that_version():
    overlay = Overlay()
    overlay.record(STATEFULSETS, obj("j-pserver", 7, spec={"replicas": 0}))
    stale = Snapshot(obj("j", 3), {("StatefulSet", "j-pserver"): obj("j-pserver", 5)})
    assert overlay.merge("ns", "j", stale).child(STATEFULSETS, "j-pserver")["spec"] == \
        {"replicas": 0}
    fresh = Snapshot(obj("j", 3), {("StatefulSet", "j-pserver"): obj("j-pserver", 8)})
    assert overlay.merge("ns", "j", fresh).child(STATEFULSETS, "j-pserver") == \
        obj("j-pserver", 8)
    # caught up: the entry is gone, even the stale view is shown as it is now
    assert overlay.merge("ns", "j", stale).child(STATEFULSETS, "j-pserver") == obj("j-pserver", 5)


def test_a_created_child_shows_before_its_watch_event_and_expires_if_never_seen():
    clock = Clock()
    overlay = Overlay(max_age=30, clock=clock)
    overlay.record(BATCH_JOBS, obj("j-worker", 9))
    assert overlay.merge("ns", "j", Snapshot(obj("j", 3))).child(BATCH_JOBS, "j-worker")
    clock.now = 31
    assert overlay.merge("ns", "j", Snapshot(obj("j", 3))).child(BATCH_JOBS, "j-worker") is None


def test_a_status_write_overlays_the_job_but_never_resurrects_a_deleted_one():
    overlay = Overlay()
    overlay.record(JOBS, {"metadata": {"name": "j", "namespace": "ns", "resourceVersion": "12"},
                          "status": {"phase": "Running"}})
    seen = overlay.merge("ns", "j", Snapshot({"metadata": {"name": "j", "resourceVersion": "10"}}))
    assert seen.job["status"] == {"phase": "Running"}
    assert overlay.merge("ns", "j", Snapshot(None)).job is None


def test_objects_without_a_numeric_version_or_job_label_are_not_overlaid():
    overlay = Overlay()
    overlay.record(STATEFULSETS, {"metadata": {"name": "x", "namespace": "ns",
                                               "resourceVersion": "abc"}})
    overlay.record(STATEFULSETS, {"metadata": {"name": "y", "namespace": "ns",
                                               "resourceVersion": "4"}})
    assert overlay.merge("ns", "x", Snapshot()).children == {}
