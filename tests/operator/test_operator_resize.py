"""Changing spec.pserver.replicas of a running job, through the real operator and the emulator.

The resize publishes the new layout in the ConfigMap (trainer 0 checkpoints and holds when
it reads it), then replaces every pod of the old layout in order — trainers (the worker Job
is deleted), then the pservers (the StatefulSet scaled to 0, not rolled), then the children
of the new spec — and says so in the job's phase, conditions, status.pserverResize and
Events. The fake controllers (`plane.sync`) play the StatefulSet and Job controllers, so each
stage is seen before the test lets the next one happen.
"""
from __future__ import annotations

import json

from opkit_cluster import wait_for
from opkit_fakes import INDEX
from opkit_jobs import child, condition, env_of, event_reasons, job_manifest, patch_spec, phase, status, submit
from test_operator_changes import running

from psjob.foundation import roles


def endpoints(obj) -> list[str]:
    return env_of(obj)["PADDLE_PSERVER_ENDPOINTS"].split(",")


def test_changing_pserver_replicas_replaces_the_layout_in_order_and_reports_it(operator, plane):
    running(plane, "grow", pservers=2, workers=2)
    assert len(endpoints(child(plane, "statefulsets", "grow-pserver"))) == 2

    workers_before = child(plane, "jobs", "grow-worker")
    patch_spec(plane, "grow", {"pserver": {"replicas": 3}})
    # 1. The new layout is published in the ConfigMap, which trainer 0 watches; every pod
    #    stays as it is until trainer 0 has checkpointed and held.
    wait_for(lambda: phase(plane, "grow") == "Resizing", what="phase Resizing")
    resizing = condition(plane, "grow", "Resizing")
    assert resizing["status"] == "True" and resizing["reason"] == "PserverResize"
    assert resizing["message"] == ("resharding 2→3 pservers from the checkpoint trainer 0 takes "
                                   "now: waiting for trainer 0's checkpoint")

    def topology():
        return json.loads(next(iter(child(plane, "configmaps", "grow-config")["data"].values())))
    wait_for(lambda: len(topology()["pserver_endpoints"]) == 3, what="the ConfigMap's 3 endpoints")
    assert len(endpoints(child(plane, "statefulsets", "grow-pserver"))) == 2
    assert child(plane, "statefulsets", "grow-pserver")["spec"]["replicas"] == 2
    assert child(plane, "jobs", "grow-worker")["metadata"]["uid"] == workers_before["metadata"]["uid"]
    trainer0 = next(n for n, p in plane.pods("grow").items()
                    if p["metadata"].get("annotations", {}).get(INDEX) == "0")
    plane.fail(trainer0, exit_code=roles.RESIZE_HOLD_EXIT)  # it checkpointed and held
    # 2. The trainers go; the pservers are not touched while any trainer runs.
    wait_for(lambda: child(plane, "jobs", "grow-worker") is None, what="the worker Job deleted")
    # 3. Then the pservers stop, all of them (scaled to 0 with their template unchanged).
    sts = wait_for(lambda: (lambda s: s if s["spec"]["replicas"] == 0 else None)(
        child(plane, "statefulsets", "grow-pserver")), what="the pservers scaled to 0")
    assert len(endpoints(sts)) == 2
    assert "stopping the pservers" in condition(plane, "grow", "Resizing")["message"]
    assert len(plane.pods("grow")) == 2  # the two pserver pods, until their controller acts
    plane.sync("grow")  # the StatefulSet controller deletes them
    # 4. No pod of the old layout is left: the new spec is applied, every process told of 3.
    sts = wait_for(lambda: (lambda s: s if s["spec"]["replicas"] == 3 else None)(
        child(plane, "statefulsets", "grow-pserver")), what="3 pservers")
    assert [e.split(".")[0] for e in endpoints(sts)] == [f"grow-pserver-{i}" for i in range(3)]
    workers = wait_for(lambda: child(plane, "jobs", "grow-worker"), what="a new worker Job")
    assert endpoints(workers) == endpoints(sts)
    assert topology()["pserver_endpoints"] == endpoints(sts)
    assert status(plane, "grow")["pserverResize"]["from"] == 2
    assert "completionTime" not in status(plane, "grow")["pserverResize"]

    def back():
        plane.sync("grow")
        plane.run("grow")
        return phase(plane, "grow") == "Running"
    wait_for(back, what="Running with 3 pservers")
    record = status(plane, "grow")["pserverResize"]
    assert record["to"] == 3 and record["completionTime"] >= record["startTime"], record
    assert status(plane, "grow")["pserversReady"] == "3/3"
    assert condition(plane, "grow", "Resizing")["status"] == "False"
    reasons = event_reasons(plane, "grow")
    assert "PserverResize" in reasons and reasons.index("PserverResize") < len(reasons) - 1
    assert reasons[-1] == "AllPodsRunning", reasons


def test_a_resize_without_checkpoints_is_refused_and_the_job_keeps_running(operator, plane):
    running(plane, "nockpt", pservers=2, workers=2, checkpoint={"enabled": False})
    pods = {n: p["metadata"]["uid"] for n, p in plane.pods("nockpt").items()}

    patch_spec(plane, "nockpt", {"pserver": {"replicas": 3}})
    wait_for(lambda: condition(plane, "nockpt", "Running").get("reason") == "PserverResizeRefused",
             what="the resize refused")
    message = condition(plane, "nockpt", "Running")["message"]
    assert "spec.pserver.replicas 2→3 cannot apply" in message
    assert "spec.checkpoint.enabled is false" in message and "still running 2 pserver(s)" in message
    assert phase(plane, "nockpt") == "Running"
    plane.sync("nockpt")
    assert {n: p["metadata"]["uid"] for n, p in plane.pods("nockpt").items()} == pods  # nothing stopped
    assert child(plane, "statefulsets", "nockpt-pserver")["spec"]["replicas"] == 2
    warnings = [e for e in plane.kube.list(plane.path("events"))
                if e["involvedObject"]["name"] == "nockpt" and e["reason"] == "PserverResizeRefused"]
    assert warnings and warnings[0]["type"] == "Warning"

    patch_spec(plane, "nockpt", {"pserver": {"replicas": 2}})  # set back: the refusal clears
    wait_for(lambda: condition(plane, "nockpt", "Running").get("reason") == "AllPodsRunning",
             what="AllPodsRunning again")


def test_zero_pservers_is_an_invalid_spec_naming_the_field(operator, plane):
    manifest = job_manifest("nopserver", pservers=2, workers=1)
    submit(plane, manifest)
    wait_for(lambda: phase(plane, "nopserver") == "Created", what="Created")
    patch_spec(plane, "nopserver", {"pserver": {"replicas": 0}})
    wait_for(lambda: condition(plane, "nopserver", "Failed").get("reason") == "InvalidSpec",
             what="InvalidSpec")
    assert "spec.pserver.replicas" in condition(plane, "nopserver", "Failed")["message"]
