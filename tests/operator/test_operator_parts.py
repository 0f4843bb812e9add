"""Small pure parts of the operator: work queue, merge patches, probes, ownership, flags."""
from __future__ import annotations

import asyncio

import kubernetes_validate
import pytest

from psjob_operator.__main__ import parse_args
from psjob_operator.apply import ChildRejected, WaitForChild, check_owner
from psjob_operator.checkpoints import parse_last_checkpoint
from psjob_operator.events import build_event, should_post
from psjob_operator.kube import merge_diff
from psjob_operator.status import ConditionStatus, Phase, Transition
from psjob_operator.workqueue import WorkQueue


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_work_queue_coalesces_pokes_and_never_hands_out_a_busy_key():
    async def scenario():
        clock = Clock()
        queue = WorkQueue(clock)
        queue.add("a")
        queue.add("a")
        queue.add("b", delay=5)
        assert len(queue) == 2
        assert await queue.get() == "a"
        queue.add("a")  # poked while being processed: deferred, not handed out twice
        assert len(queue) == 2 and queue.processing == 1
        waiter = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0.01)
        assert not waiter.done()  # "b" is not due and "a" is busy
        queue.done("a")
        assert await asyncio.wait_for(waiter, 1) == "a"
        queue.done("a")
        clock.now += 5
        queue.add("c", delay=10)
        assert await asyncio.wait_for(queue.get(), 1) == "b"
    asyncio.run(scenario())


def test_the_work_queue_keeps_the_earliest_due_time_and_forgets_on_request():
    async def scenario():
        clock = Clock()
        queue = WorkQueue(clock)
        queue.add("job", delay=60)
        queue.add("job", delay=1)
        queue.add("job", delay=30)
        clock.now += 1
        assert await asyncio.wait_for(queue.get(), 1) == "job"
        queue.done("job")
        queue.add("gone")
        queue.forget("gone")
        assert len(queue) == 0
    asyncio.run(scenario())


def test_the_work_queue_wakes_up_when_a_delay_expires():
    async def scenario():
        queue = WorkQueue()
        queue.add("later", delay=0.05)
        assert await asyncio.wait_for(queue.get(), 2) == "later"
    asyncio.run(scenario())


def test_a_merge_patch_nulls_removed_keys_and_keeps_unchanged_ones_out():
    old = {"spec": {"replicas": 2, "nodeSelector": {"a": "1", "b": "2"}, "image": "x"},
           "metadata": {"labels": {"k": "v"}}}
    new = {"spec": {"replicas": 3, "nodeSelector": {"a": "1"}, "image": "x"},
           "metadata": {"labels": {"k": "v"}}}
    assert merge_diff(old, new) == {"spec": {"replicas": 3, "nodeSelector": {"b": None}}}
    assert merge_diff(new, new) == {}


def test_the_checkpoint_metrics_page_gives_step_path_and_time():
    page = ('psjob_pserver_last_checkpoint_step{path="/c/step-10"} 10\n'
            "psjob_pserver_last_checkpoint_timestamp_seconds 1.7e9\n"
            "process_cpu_seconds_total 4.5\n")
    assert parse_last_checkpoint(page) == {"step": 10, "path": "/c/step-10",
                                           "time": "2023-11-14T22:13:20Z"}
    # What today's pserver exports: the commit time only.
    assert parse_last_checkpoint("psjob_pserver_last_checkpoint_timestamp_seconds 1.7e9\n") == \
        {"time": "2023-11-14T22:13:20Z"}
    assert parse_last_checkpoint("process_cpu_seconds_total 4.5\n") is None
    assert parse_last_checkpoint("{{{ not prometheus") is None



def test_failed_checkpoint_saves_on_the_pserver_page_reach_the_status():
    """The page a pserver serves after trainer 0 reported failed saves (psjob.foundation.metrics, set as
    cluster/pserver/checkpoint_service.py sets it): count, the newest failure's step, error and time."""
    from prometheus_client import CollectorRegistry, generate_latest

    from psjob.foundation.metrics import pserver_metrics
    registry = CollectorRegistry()
    m = pserver_metrics(registry=registry)
    m.last_checkpoint_timestamp.set(1.7e9)
    m.last_checkpoint_step.labels("/c/step-00000130").set(130)
    for step in (140, 150):
        m.checkpoint_failures.inc()
        m.last_checkpoint_failure_timestamp.set(1.7e9 + step)
        m.last_checkpoint_failure_step.clear()
        m.last_checkpoint_failure_step.labels("[Errno 28] No space left on device").set(step)
    assert parse_last_checkpoint(generate_latest(registry).decode()) == {
        "step": 130, "path": "/c/step-00000130", "time": "2023-11-14T22:13:20Z", "failedSaves": 2,
        "lastFailure": {"step": 150, "error": "[Errno 28] No space left on device",
                        "time": "2023-11-14T22:15:50Z"}}



def test_a_stream_jobs_commit_reaches_the_status_as_folder_and_lag():
    """A stream job's COMMIT (its parameters as trainer 0 sends them, psjob.training.stream) sets
    pserver 0's stream gauges; the operator reads folder, its time and the lag from the page."""
    from prometheus_client import CollectorRegistry, generate_latest

    from psjob.cluster import checkpoint_protocol as protocol
    from psjob.cluster.pserver.checkpoint_service import _stream_gauges
    from psjob.foundation.metrics import pserver_metrics
    registry = CollectorRegistry()
    m = pserver_metrics(registry=registry)
    m.last_checkpoint_step.labels("/c/step-00000007").set(7)
    for folder, until, behind in (("20261128/2300", 1.7e9, 1.7e9 + 300), ("20261128/2305", 1.7e9 + 300, 0)):
        _cmd, params = protocol.parse_tag(protocol.tag(protocol.COMMIT, stream_folder=folder,
                                                       stream_until=until, stream_behind_since=behind))
        _stream_gauges(m, params)
        if behind:
            lagging = parse_last_checkpoint(generate_latest(registry).decode(), now=1.7e9 + 420)
            assert lagging["stream"] == {"folder": folder, "folderTime": "2023-11-14T22:13:20Z", "lagSeconds": 120}
    assert parse_last_checkpoint(generate_latest(registry).decode(), now=1.7e9 + 420)["stream"] == {
        "folder": "20261128/2305", "folderTime": "2023-11-14T22:18:20Z", "lagSeconds": 0}


def test_a_child_owned_by_someone_else_is_never_adopted():
    ours = {"kind": "Service", "metadata": {"name": "j-pserver", "ownerReferences": [
        {"kind": "ParameterServerJob", "name": "j", "uid": "u1", "controller": True}]}}
    check_owner(ours, "u1", "j")
    with pytest.raises(WaitForChild, match="still belongs to a deleted job named j"):
        check_owner(ours, "u2", "j")
    foreign = {"kind": "Service", "metadata": {"name": "j-pserver"}}
    with pytest.raises(ChildRejected, match="a Service named j-pserver already exists and is "
                                            "not controlled by this job"):
        check_owner(foreign, "u1", "j")


def test_events_are_posted_for_true_conditions_and_for_resuming():
    failed = Transition(Phase.FAILED, ConditionStatus.TRUE, "DeadlineExceeded", "late")
    assert should_post(failed)
    assert not should_post(Transition(Phase.RUNNING, ConditionStatus.FALSE, "x", "y"))
    assert should_post(Transition(Phase.SUSPENDED, ConditionStatus.FALSE, "Resumed", ""))
    import datetime as dt
    event = build_event({"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}, failed,
                        dt.datetime(2025, 1, 1, tzinfo=dt.UTC), "op-0")
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "DeadlineExceeded",
                                                                  "late")
    assert event["involvedObject"] == {"apiVersion": "psjob.dev/v1alpha1",
                                       "kind": "ParameterServerJob", "name": "j",
                                       "namespace": "ns", "uid": "u"}
    kubernetes_validate.validate(event, kubernetes_validate.latest_version(), strict=True)


def test_the_command_line_takes_namespaces_or_all_namespaces():
    settings = parse_args(["--namespace", "a", "-n", "b", "--metrics-port", "9000"])
    assert settings.watch.namespaces == ("a", "b") and not settings.watch.all_namespaces
    assert (settings.serve.metrics_port, settings.serve.liveness_port) == (9000, 8081)
    assert parse_args(["--all-namespaces"]).watch.all_namespaces
    with pytest.raises(SystemExit):
        parse_args([])
    with pytest.raises(SystemExit):
        parse_args(["-n", "a", "--all-namespaces"])
