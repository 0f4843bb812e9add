"""Pure rules of a pserver resize (psjob_operator.resize): the stage read from the cluster,
what each stage applies, and status.pserverResize."""
from __future__ import annotations

import datetime as dt

import pytest

from psjob.foundation import roles
from psjob.foundation.jobspec import parse_job
from psjob_operator import builders, resize
from psjob_operator.observe import Children, ServerSetView, WorkerJobView, pod_view


def job(pservers=3, **body):
    doc = {"image": "psjob:1", "pserver": {"replicas": pservers}, "worker": {"replicas": 2}}
    doc.update(body)
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr", "namespace": "ns"}, "spec": doc})


def statefulset(pservers):
    """The live pserver StatefulSet as the operator built it for `pservers`."""
    j = job(pservers)
    topology = roles.kubernetes_topology(j, "ns")
    return builders.build_server_statefulset(j, builders.Owner("ctr", "uid"), topology, "pserver")


def pod(name, role, ready=True, index=None, exit_code=None):
    body = {"metadata": {"name": name, "labels": {"psjob.dev/role": role}},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}
    if index is not None:
        body["metadata"]["annotations"] = {"batch.kubernetes.io/job-completion-index": str(index)}
    if exit_code is not None:
        body["status"].update(phase="Failed", containerStatuses=[{
            "name": "psjob", "restartCount": 0, "state": {"terminated": {"exitCode": exit_code}}}])
    return pod_view(body)


def kids(pserver_pods=2, worker_pods=2, worker_job=True, replicas=2, held=False):
    pods = [pod(f"ctr-pserver-{i}", "pserver") for i in range(pserver_pods)]
    pods += [pod(f"ctr-worker-{i}-x", "worker", index=i,
                 exit_code=roles.RESIZE_HOLD_EXIT if held and i == 0 else None)
             for i in range(worker_pods)]
    return Children(pods=tuple(pods), pserver=ServerSetView(True, replicas, pserver_pods),
                    workers=WorkerJobView(exists=worker_job))


def test_the_layout_is_read_from_the_statefulsets_pod_template():
    assert resize.layout_of(statefulset(2)) == 2 and resize.layout_of(statefulset(5)) == 5
    assert resize.layout_of(None) == 0


@pytest.mark.parametrize("children,stage", [
    (kids(), resize.HOLDING),  # trainer 0 has not checkpointed yet
    (kids(held=True), resize.STOPPING_TRAINERS),
    (kids(worker_pods=1, worker_job=False), resize.STOPPING_TRAINERS),  # its pods still go
    (kids(worker_pods=0, worker_job=False), resize.STOPPING_PSERVERS),
    (kids(pserver_pods=0, worker_pods=0, worker_job=False, replicas=2), resize.STOPPING_PSERVERS),
    (kids(pserver_pods=0, worker_pods=0, worker_job=False, replicas=0), resize.STARTING),
])
def test_each_stage_is_read_from_the_cluster(children, stage):
    found = resize.observe(job(3), statefulset(2), children, {}, checkpoint_step=1200)
    assert (found.old, found.new, found.stage) == (2, 3, stage)
    source = ("the checkpoint trainer 0 takes now" if stage == resize.HOLDING
              else "checkpoint step-1200")
    assert found.message == f"resharding 2→3 pservers from {source}: {stage}"


def test_trainer_0_is_waited_for_at_most_the_hold_timeout():
    record = {"pserverResize": {"from": 2, "to": 3, "startTime": "2025-01-01T12:00:00Z"}}
    soon = dt.datetime(2025, 1, 1, 12, 1, tzinfo=dt.UTC)
    late = soon + dt.timedelta(seconds=resize.HOLD_TIMEOUT_S)
    assert resize.observe(job(3), statefulset(2), kids(), record, None, soon).stage == resize.HOLDING
    assert resize.observe(job(3), statefulset(2), kids(), record, None, late).stage == \
        resize.STOPPING_TRAINERS  # the newest periodic checkpoint will do


def test_the_stopping_stages_apply_the_old_layout_without_the_pods_they_stop():
    holding = resize.observe(job(3), statefulset(2), kids(), {}, None)
    assert resize.applied_job(job(3), holding).spec.pserver.replicas == 2
    assert resize.activity(holding) is None  # every pod kept while trainer 0 checkpoints
    assert resize.config_job(job(3), holding).spec.pserver.replicas == 3  # the ConfigMap: new
    found = resize.observe(job(3), statefulset(2), kids(held=True), {}, None)
    applied = resize.applied_job(job(3), found)
    assert applied.spec.pserver.replicas == 2
    assert resize.activity(found) == builders.Activity(worker_job=False)
    stopping = resize.observe(job(3), statefulset(2), kids(worker_pods=0, worker_job=False), {}, None)
    assert resize.activity(stopping) == builders.Activity(servers=False, worker_job=False)
    starting = resize.observe(job(3), statefulset(2), kids(0, 0, False, 0), {}, None)
    assert resize.applied_job(job(3), starting).spec.pserver.replicas == 3
    assert resize.activity(starting) is None and resize.config_job(job(3), starting) is None


T1, T2, T3, T4 = (f"2025-01-01T12:0{i}:00Z" for i in range(1, 5))


def test_the_record_starts_once_and_completes_when_the_new_layout_runs():
    found = resize.observe(job(3), statefulset(2), kids(), {}, checkpoint_step=7)
    record = resize.record(found, {}, T1)
    assert record == {"from": 2, "to": 3, "startTime": T1, "checkpointStep": 7}
    # Trainer 0's hold checkpoint probed (status.lastCheckpoint) while the old pservers run.
    held = resize.observe(job(3), statefulset(2), kids(held=True), {"pserverResize": record}, 8)
    record = resize.record(held, {"pserverResize": record}, T2)
    assert record == {"from": 2, "to": 3, "startTime": T1, "checkpointStep": 8}
    assert held.message == "resharding 2→3 pservers from checkpoint step-8: stopping the trainers"
    previous = {"pserverResize": record}
    # The new layout applied, its pods not ready yet: still resizing, the record kept.
    starting = resize.observe(job(3), statefulset(3), kids(pserver_pods=0, worker_pods=0), previous, 9)
    assert starting.stage == resize.STARTING and not starting.done
    assert resize.record(starting, previous, T3) == record
    done = resize.observe(job(3), statefulset(3), kids(pserver_pods=3, worker_pods=2), previous, 9)
    assert done.done and resize.record(done, previous, T4)["completionTime"] == T4
    finished = {"pserverResize": {**record, "completionTime": T4}}
    assert resize.observe(job(3), statefulset(3), kids(3, 2), finished, 9) is None


def test_a_job_without_checkpoints_or_with_heter_workers_is_refused_and_keeps_its_pservers():
    no_ckpt = job(3, checkpoint={"enabled": False})
    found = resize.observe(no_ckpt, statefulset(2), kids(), {}, None)
    assert "spec.checkpoint.enabled is false" in found.refused and not found.stage
    assert resize.applied_job(no_ckpt, found).spec.pserver.replicas == 2
    assert resize.activity(found) is None and resize.record(found, {}, T1) is None
    heter = job(3, heterWorker={"replicas": 1})
    assert "heterWorker is not supported" in resize.observe(heter, statefulset(2), kids(), {}, None).refused


def test_a_suspended_job_or_a_first_start_needs_no_resize():
    assert resize.observe(job(3, runPolicy={"suspend": True}), statefulset(2), kids(), {}, None) is None
    assert resize.observe(job(3), None, Children(), {}, None) is None
    assert resize.observe(job(2), statefulset(2), kids(), {}, None) is None
