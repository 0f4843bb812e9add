"""Pure status rules: (job, previous status, children, now) → phase and conditions."""
from __future__ import annotations

import datetime as dt

from psjob.foundation.jobspec import parse_job
from psjob_operator.observe import Children, ServerSetView, WorkerJobView, pod_view, worker_job_view
from psjob_operator.status import Observation, Phase, Reason, Verdict, compute_status

T0 = dt.datetime(2025, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
LATER = T0 + dt.timedelta(minutes=5)


def spec(**body):
    doc = {"image": "psjob:1", "pserver": {"replicas": 2}, "worker": {"replicas": 2}}
    doc.update(body)
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr"}, "spec": doc}).spec


def pod(name, role, phase="Running", ready=True, index=None, **status):
    body = {"metadata": {"name": name, "labels": {"psjob.dev/role": role}},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}], **status}}
    if index is not None:
        body["metadata"]["annotations"] = {"batch.kubernetes.io/job-completion-index": str(index)}
    return pod_view(body)


def healthy_pods(workers=2):
    return (pod("ctr-pserver-0", "pserver"), pod("ctr-pserver-1", "pserver"),
            *(pod(f"ctr-worker-{i}-abcde", "worker", index=i) for i in range(workers)))


def observe(previous=None, pods=(), now=T0, job_spec=None, workers=None, **kw):
    kids = Children(pods=tuple(pods), pserver=ServerSetView(True, 2, 2),
                    workers=workers or WorkerJobView(exists=True), **kw)
    return compute_status(Observation("ctr", 1, now, job_spec or spec(), previous or {}, kids))


def test_a_new_job_is_created_and_waits_for_its_pods():
    update = observe()
    assert update.phase is Phase.CREATED
    assert update.status == {
        "phase": "Created",
        "conditions": [
            {"type": "Created", "status": "True", "reason": "ChildrenCreated",
             "message": "created the children of job ctr",
             "lastTransitionTime": "2025-01-01T12:00:00Z"},
            {"type": "Running", "status": "False", "reason": "WaitingForPods",
             "message": "waiting for pods: 0/2 pservers ready, 0/2 workers running",
             "lastTransitionTime": "2025-01-01T12:00:00Z"}],
        "observedGeneration": 1,
        "replicaStatuses": {"pserver": {"replicas": 2, "ready": 0, "restarts": 0},
                            "worker": {"replicas": 2, "active": 0, "succeeded": 0, "failed": 0}},
        "pserversReady": "0/2", "workersReady": "0/2",
        "startTime": "2025-01-01T12:00:00Z"}
    assert [t.type.value for t in update.transitions] == ["Created", "Running"]


def test_all_pods_running_makes_the_job_running_once():
    created = observe().status
    update = observe(created, healthy_pods(), now=LATER)
    assert update.phase is Phase.RUNNING and update.became_running
    running = update.status["conditions"][1]
    assert running == {"type": "Running", "status": "True", "reason": "AllPodsRunning",
                       "message": "2/2 pservers ready, 2/2 workers running",
                       "lastTransitionTime": "2025-01-01T12:05:00Z"}
    assert update.status["startTime"] == "2025-01-01T12:00:00Z"
    again = observe(update.status, healthy_pods(), now=LATER + dt.timedelta(minutes=1))
    assert again.status == update.status and again.transitions == ()
    assert not again.became_running


def test_a_crash_looping_pserver_makes_the_job_restarting_and_names_the_pod():
    running = observe(observe().status, healthy_pods()).status
    crashing = pod("ctr-pserver-1", "pserver", ready=False, containerStatuses=[{
        "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}])
    pods = (healthy_pods()[0], crashing, *healthy_pods()[2:])
    update = observe(running, pods, now=LATER)
    assert update.phase is Phase.RESTARTING
    cond = {c["type"]: c for c in update.status["conditions"]}
    assert cond["Restarting"]["message"] == (
        "pserver pod ctr-pserver-1 is in CrashLoopBackOff (4 restarts, last exit code 137 "
        "(OOMKilled)); it is recreated with the same index and resumes from the newest checkpoint")
    assert cond["Running"]["status"] == "False"
    assert update.status["replicaStatuses"]["pserver"] == {"replicas": 2, "ready": 1,
                                                           "restarts": 4}


def test_a_missing_pserver_after_running_is_a_restart_not_a_new_start():
    running = observe(observe().status, healthy_pods()).status
    update = observe(running, healthy_pods()[1:], now=LATER)
    assert update.phase is Phase.RESTARTING
    assert update.status["conditions"][2]["message"].startswith(
        "pserver pod ctr-pserver-0 is missing")


def test_all_workers_completed_is_success_and_sticky():
    running = observe(observe().status, healthy_pods()).status
    done = WorkerJobView(exists=True, succeeded=2, complete=True)
    update = observe(running, healthy_pods()[:2], now=LATER, workers=done)
    assert update.phase is Phase.SUCCEEDED
    assert update.status["completionTime"] == "2025-01-01T12:05:00Z"
    assert update.status["workersReady"] == "2/2 done"
    later = observe(update.status, (), now=LATER + dt.timedelta(hours=1))
    assert later.phase is Phase.SUCCEEDED and later.transitions == ()
    assert later.status["completionTime"] == "2025-01-01T12:05:00Z"


def test_failures_beyond_the_backoff_limit_fail_the_job_with_the_last_failure():
    failed = pod("ctr-worker-0-zzzzz", "worker", phase="Failed", ready=False, index=0,
                 containerStatuses=[{"state": {"terminated": {"exitCode": 1, "reason": "Error"}}}])
    job_view = worker_job_view({"status": {"failed": 2, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}})
    update = observe(pods=(*healthy_pods()[:2], failed), workers=job_view,
                     job_spec=spec(runPolicy={"backoffLimit": 1}))
    assert update.phase is Phase.FAILED
    assert update.status["conditions"][-1]["message"] == (
        "2 worker failure(s) exceed runPolicy.backoffLimit=1; last: worker pod ctr-worker-0-zzzzz "
        "failed (exit code 1 (Error)); fix the cause in the worker logs, or raise "
        "runPolicy.backoffLimit")


def test_an_evicted_worker_is_restarting_without_using_the_backoff_budget():
    evicted = pod("ctr-worker-1-aaaaa", "worker", phase="Failed", ready=False, index=1,
                  reason="Evicted", conditions=[{"type": "DisruptionTarget", "status": "True"}])
    running = observe(observe().status, healthy_pods()).status
    update = observe(running, (*healthy_pods(workers=1), evicted), now=LATER,
                     job_spec=spec(runPolicy={"backoffLimit": 0}))
    assert update.phase is Phase.RESTARTING
    assert update.status["conditions"][2]["message"] == (
        "worker pod ctr-worker-1-aaaaa was disrupted (Evicted); it is recreated and does not "
        "count against runPolicy.backoffLimit")


def test_a_worker_whose_pservers_were_unreachable_does_not_use_the_backoff_budget():
    gave_up = pod("ctr-worker-1-aaaaa", "worker", phase="Failed", ready=False, index=1,
                  containerStatuses=[{"name": "psjob", "restartCount": 0, "state": {
                      "terminated": {"exitCode": 75, "reason": "Error"}}}])
    running = observe(observe().status, healthy_pods()).status
    update = observe(running, (*healthy_pods(workers=1), gave_up), now=LATER,
                     job_spec=spec(runPolicy={"backoffLimit": 0}))
    assert update.phase is Phase.RESTARTING
    assert update.status["replicaStatuses"]["worker"]["failed"] == 0
    assert update.status["conditions"][2]["message"] == (
        "worker pod ctr-worker-1-aaaaa exited 75: its pservers were unreachable; it is "
        "recreated and does not count against runPolicy.backoffLimit")


def test_the_active_deadline_counts_from_the_start_time():
    job_spec = spec(runPolicy={"activeDeadlineSeconds": 60})
    started = observe(job_spec=job_spec).status
    fine = observe(started, healthy_pods(), now=T0 + dt.timedelta(seconds=59), job_spec=job_spec)
    assert fine.phase is Phase.RUNNING
    late = observe(fine.status, healthy_pods(), now=T0 + dt.timedelta(seconds=60),
                   job_spec=job_spec)
    assert late.phase is Phase.FAILED
    failed = late.status["conditions"][-1]
    assert failed["reason"] == "DeadlineExceeded"
    assert failed["message"] == ("the job ran longer than runPolicy.activeDeadlineSeconds=60 "
                                 "(started 2025-01-01T12:00:00Z); raise the deadline or shorten "
                                 "the job")


def test_suspension_clears_the_start_time_and_resuming_says_so():
    running = observe(observe().status, healthy_pods()).status
    suspended = observe(running, healthy_pods(), now=LATER,
                        job_spec=spec(runPolicy={"suspend": True}))
    assert suspended.phase is Phase.SUSPENDED and "startTime" not in suspended.status
    assert suspended.status["conditions"][-1]["message"] == \
        "runPolicy.suspend is true: stopping 4 pod(s)"
    stopped = observe(suspended.status, (), now=LATER, job_spec=spec(runPolicy={"suspend": True}))
    assert stopped.status["conditions"][-1]["message"].startswith(
        "runPolicy.suspend is true: all pods stopped")
    resumed = observe(stopped.status, (), now=LATER + dt.timedelta(minutes=1))
    cond = {c["type"]: c for c in resumed.status["conditions"]}
    assert resumed.phase is Phase.CREATED
    assert (cond["Suspended"]["status"], cond["Suspended"]["reason"]) == ("False", "Resumed")
    assert resumed.status["startTime"] == "2025-01-01T12:06:00Z"


def test_waiting_reasons_name_the_pod_and_the_fix():
    pulling = pod("ctr-pserver-0", "pserver", phase="Pending", ready=False, containerStatuses=[
        {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}])
    update = observe(pods=(pulling,))
    assert update.status["conditions"][1]["message"] == (
        "pod ctr-pserver-0 cannot pull image psjob:1 (ImagePullBackOff: not found); check "
        "spec.image and spec.imagePullSecrets (on kind: kind load docker-image psjob:1)")
    claim = observe(pods=(pod("ctr-pserver-0", "pserver", phase="Pending", ready=False),),
                    claim_phase="Pending")
    assert claim.status["conditions"][1]["reason"] == "CheckpointClaimPending"


def test_a_pending_claim_names_its_access_mode_and_every_way_out():
    claim = observe(pods=(pod("ctr-pserver-0", "pserver", phase="Pending", ready=False),),
                    claim_phase="Pending", claim_access_modes=("ReadWriteMany",))
    message = claim.status["conditions"][1]["message"]
    assert message.startswith("checkpoint claim ctr-checkpoint (ReadWriteMany) is Pending")
    for fix in ("spec.checkpoint.storageClassName", "spec.checkpoint.accessMode: ReadWriteOnce",
                "spec.checkpoint.existingClaim", "spec.checkpoint.enabled: false"):
        assert fix in message


def _placed(name, role, node, creating=False):
    status = {"phase": "Pending" if creating else "Running",
              "conditions": [{"type": "Ready", "status": "False" if creating else "True"}]}
    if creating:
        status["containerStatuses"] = [{"state": {"waiting": {"reason": "ContainerCreating"}}}]
    return pod_view({"metadata": {"name": name, "labels": {"psjob.dev/role": role}},
                     "spec": {"nodeName": node}, "status": status})


def test_a_read_write_once_claim_on_pods_of_two_nodes_is_named_as_multi_attach():
    pods = (_placed("ctr-pserver-0", "pserver", "node-a"),
            _placed("ctr-pserver-1", "pserver", "node-b", creating=True))
    update = observe(pods=pods, job_spec=spec(checkpoint={"accessMode": "ReadWriteOnce"}),
                     claim_phase="Bound", claim_access_modes=("ReadWriteOnce",))
    running = update.status["conditions"][1]
    assert (update.phase, running["reason"]) == (Phase.CREATED, "CheckpointClaimMultiAttach")
    assert running["message"].startswith(
        "pod ctr-pserver-1 cannot attach checkpoint claim ctr-checkpoint: it is ReadWriteOnce "
        "and the job's pods run on 2 nodes (node-a, node-b) (Multi-Attach)")
    # One node (kind): the same pod is only waiting, nothing is wrong with the claim.
    same_node = (pods[0], _placed("ctr-pserver-1", "pserver", "node-a", creating=True))
    update = observe(pods=same_node, claim_phase="Bound", claim_access_modes=("ReadWriteOnce",))
    assert update.status["conditions"][1]["reason"] == "WaitingForPods"


def test_an_invalid_spec_fails_and_a_new_generation_gets_another_chance():
    problem = Verdict(Phase.FAILED, Reason.INVALID_SPEC, "spec.mode: is 'x'; use one of ...")
    failed = compute_status(Observation("ctr", 1, T0, None, {}, problem=problem))
    assert failed.phase is Phase.FAILED and "startTime" not in failed.status
    assert [c["type"] for c in failed.status["conditions"]] == ["Failed"]
    same = compute_status(Observation("ctr", 1, LATER, spec(), failed.status, Children()))
    assert same.phase is Phase.FAILED
    fixed = compute_status(Observation("ctr", 2, LATER, spec(), failed.status, Children()))
    assert fixed.phase is Phase.CREATED and "completionTime" not in fixed.status
    assert "Failed" not in [c["type"] for c in fixed.status["conditions"]]


def test_the_last_checkpoint_is_kept_when_the_probe_finds_nothing():
    first = compute_status(Observation("ctr", 1, T0, spec(), {}, Children(),
                                       last_checkpoint={"step": 500, "path": "/c/500"}))
    assert first.status["lastCheckpoint"] == {"step": 500, "path": "/c/500"}
    again = compute_status(Observation("ctr", 1, LATER, spec(), first.status, Children()))
    assert again.status["lastCheckpoint"] == {"step": 500, "path": "/c/500"}
