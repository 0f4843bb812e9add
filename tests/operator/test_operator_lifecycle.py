"""A job's life through the real operator: children, phases, conditions, events."""
from __future__ import annotations

from opkit_cluster import wait_for
from opkit_jobs import child, children, condition, env_of, event_reasons, job_manifest, phase, status, submit
from opkit_rbac import uncovered


def expected_children(name: str) -> set[tuple[str, str]]:
    return {("Secret", f"{name}-auth"), ("ConfigMap", f"{name}-config"),
            ("PersistentVolumeClaim", f"{name}-checkpoint"),
            ("NetworkPolicy", f"{name}-network"), ("Service", f"{name}-pserver"),
            ("StatefulSet", f"{name}-pserver"), ("Job", f"{name}-worker")}


def test_creating_a_job_creates_exactly_the_expected_children(operator, plane):
    created = submit(plane, job_manifest("create", pservers=2, workers=3))
    uid = created["metadata"]["uid"]

    found = wait_for(lambda: children(plane, "create") == expected_children("create"),
                     what="the seven children")
    assert found
    for kind, name in expected_children("create"):
        path_kind = {"Secret": "secrets", "ConfigMap": "configmaps",
                     "PersistentVolumeClaim": "persistentvolumeclaims",
                     "NetworkPolicy": "networkpolicies", "Service": "services",
                     "StatefulSet": "statefulsets", "Job": "jobs"}[kind]
        owners = child(plane, path_kind, name)["metadata"]["ownerReferences"]
        assert owners == [{"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                           "name": "create", "uid": uid, "controller": True,
                           "blockOwnerDeletion": True}]
    sts = child(plane, "statefulsets", "create-pserver")
    assert sts["spec"]["replicas"] == 2
    assert child(plane, "jobs", "create-worker")["spec"]["completions"] == 3
    wait_for(lambda: phase(plane, "create") == "Created", what="phase Created")
    running = condition(plane, "create", "Running")
    assert running["status"] == "False" and running["reason"] == "WaitingForPods"
    assert running["message"] == "waiting for pods: 0/2 pservers ready, 0/3 workers running"
    assert status(plane, "create")["observedGeneration"] == 1
    assert "ChildrenCreated" in event_reasons(plane, "create")


def test_pod_states_drive_the_job_through_running_restarting_and_succeeded(operator, plane):
    submit(plane, job_manifest("life", pservers=2, workers=2))
    wait_for(lambda: phase(plane, "life") == "Created", what="phase Created")
    plane.sync("life")
    plane.run("life")
    wait_for(lambda: phase(plane, "life") == "Running", what="phase Running")
    st = status(plane, "life")
    assert st["pserversReady"] == "2/2" and st["workersReady"] == "2/2"
    assert condition(plane, "life", "Running")["message"] == \
        "2/2 pservers ready, 2/2 workers running"

    plane.crash_loop("life-pserver-1", restarts=3, exit_code=137)
    wait_for(lambda: phase(plane, "life") == "Restarting", what="phase Restarting")
    restarting = condition(plane, "life", "Restarting")
    assert restarting["reason"] == "PserverRestarting"
    assert restarting["message"].startswith(
        "pserver pod life-pserver-1 is in CrashLoopBackOff (3 restarts, last exit code 137")
    assert condition(plane, "life", "Running")["status"] == "False"

    plane.run("life")  # the pserver came back and restored the newest checkpoint
    wait_for(lambda: phase(plane, "life") == "Running", what="Running again")
    assert condition(plane, "life", "Restarting")["status"] == "False"

    plane.evict("life-pserver-0")
    wait_for(lambda: phase(plane, "life") == "Restarting", what="Restarting after eviction")
    assert "life-pserver-0 failed (Evicted" in condition(plane, "life", "Restarting")["message"]
    plane.sync("life")  # the StatefulSet recreates pserver 0 under the same name
    plane.run("life")
    wait_for(lambda: phase(plane, "life") == "Running", what="Running after recreation")

    for name in plane.pods("life"):
        if name.startswith("life-worker-"):
            plane.succeed(name)
    plane.sync("life")
    wait_for(lambda: phase(plane, "life") == "Succeeded", what="phase Succeeded")
    st = status(plane, "life")
    assert condition(plane, "life", "Succeeded")["message"] == "2/2 workers completed"
    assert st["completionTime"] >= st["startTime"]
    assert st["workersReady"] == "2/2 done"
    # cleanPodPolicy Running: the pservers are shut down once the workers are done.
    wait_for(lambda: child(plane, "statefulsets", "life-pserver")["spec"]["replicas"] == 0,
             what="pservers scaled to zero")
    reasons = event_reasons(plane, "life")
    for reason in ("ChildrenCreated", "AllPodsRunning", "PserverRestarting",
                   "AllWorkersCompleted"):
        assert reason in reasons


def test_worker_failures_beyond_backoff_limit_fail_the_job(operator, plane):
    submit(plane, job_manifest("backoff", pservers=1, workers=2,
                               runPolicy={"backoffLimit": 1}))
    wait_for(lambda: phase(plane, "backoff") == "Created", what="Created")
    plane.sync("backoff")
    plane.run("backoff")
    wait_for(lambda: phase(plane, "backoff") == "Running", what="Running")

    first = sorted(n for n in plane.pods("backoff") if n.startswith("backoff-worker-0-"))[0]
    plane.fail(first, exit_code=2)
    plane.sync("backoff")  # the Job controller counts the failure and starts a new pod
    wait_for(lambda: phase(plane, "backoff") == "Restarting", what="Restarting")
    message = condition(plane, "backoff", "Restarting")["message"]
    assert message == (f"worker pod {first} failed (exit code 2 (Error)); retrying: 1 of "
                       f"runPolicy.backoffLimit=1 failures used")
    plane.run("backoff")
    wait_for(lambda: phase(plane, "backoff") == "Running", what="Running after the retry")

    second = [n for n in plane.pods("backoff")
              if n.startswith("backoff-worker-0-") and n != first][0]
    plane.fail(second, exit_code=3)
    plane.sync("backoff")
    wait_for(lambda: phase(plane, "backoff") == "Failed", what="Failed")
    failed = condition(plane, "backoff", "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"].startswith("2 worker failure(s) exceed runPolicy.backoffLimit=1")
    assert "fix the cause in the worker logs, or raise runPolicy.backoffLimit" in \
        failed["message"]
    wait_for(lambda: child(plane, "statefulsets", "backoff-pserver")["spec"]["replicas"] == 0,
             what="pservers stopped after the failure")


def test_an_active_deadline_fails_the_job_and_stops_its_pods(operator, plane):
    submit(plane, job_manifest("deadline", pservers=1, workers=1,
                               runPolicy={"activeDeadlineSeconds": 1}))
    # Created, or already Failed: a loaded machine may not poll within the 1 s deadline.
    wait_for(lambda: phase(plane, "deadline") in ("Created", "Failed"), what="Created")
    plane.sync("deadline")
    plane.run("deadline")
    wait_for(lambda: phase(plane, "deadline") == "Failed", what="Failed")
    failed = condition(plane, "deadline", "Failed")
    assert failed["reason"] == "DeadlineExceeded"
    assert "runPolicy.activeDeadlineSeconds=1" in failed["message"]
    wait_for(lambda: child(plane, "jobs", "deadline-worker")["spec"]["suspend"] is True,
             what="running workers stopped")
    assert child(plane, "statefulsets", "deadline-pserver")["spec"]["replicas"] == 0


def test_an_unschedulable_pod_is_named_in_the_running_condition(operator, plane):
    submit(plane, job_manifest("nogpu", pservers=1, workers=1))
    wait_for(lambda: phase(plane, "nogpu") == "Created", what="Created")
    plane.sync("nogpu")
    worker = [n for n in plane.pods("nogpu") if n.startswith("nogpu-worker-")][0]
    plane.unschedulable(worker, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    wait_for(lambda: condition(plane, "nogpu", "Running").get("reason") == "Unschedulable",
             what="reason Unschedulable")
    assert condition(plane, "nogpu", "Running")["message"] == (
        f"pod {worker} is unschedulable: 0/3 nodes are available: 3 Insufficient "
        f"nvidia.com/gpu.; check spec.worker.resources, nodeSelector and tolerations")


def test_a_pserver_that_restarts_after_the_workers_completed_does_not_undo_success(operator, plane):
    # cleanPodPolicy None keeps the pservers, so they can crash and restart after the end.
    submit(plane, job_manifest("after", pservers=2, workers=2, runPolicy={"cleanPodPolicy": "None"}))
    wait_for(lambda: phase(plane, "after") == "Created", what="Created")
    plane.sync("after")
    plane.run("after")
    wait_for(lambda: phase(plane, "after") == "Running", what="Running")
    # The workers complete and, in the same moment, a pserver crashes (it cannot learn
    # that the trainers completed after a restart): the operator sees both at once.
    for name in plane.pods("after"):
        if name.startswith("after-worker-"):
            plane.succeed(name)
    plane.crash_loop("after-pserver-1", restarts=1, exit_code=137)
    wait_for(lambda: phase(plane, "after") == "Succeeded", what="Succeeded despite the crash")
    assert condition(plane, "after", "Restarting") == {}
    assert condition(plane, "after", "Succeeded")["message"] == "2/2 workers completed"
    # Later restarts of either pserver are seen (the restart count moves) but change nothing.
    plane.sync("after")
    plane.crash_loop("after-pserver-0", restarts=4, exit_code=1)
    wait_for(lambda: status(plane, "after")["replicaStatuses"]["pserver"]["restarts"] == 5,
             what="the restarts counted")
    assert phase(plane, "after") == "Succeeded"
    assert condition(plane, "after", "Restarting") == {}
    assert "PserverRestarting" not in event_reasons(plane, "after")


def test_a_tls_job_gets_its_secret_mounted_and_the_tls_environment(operator, plane):
    submit(plane, job_manifest("tls", pservers=2, workers=1, tls={"secretName": "tls-certs"}))
    sts = wait_for(lambda: child(plane, "statefulsets", "tls-pserver"), what="the pserver StatefulSet")
    workers = wait_for(lambda: child(plane, "jobs", "tls-worker"), what="the worker Job")
    server_pod, worker_pod = sts["spec"]["template"]["spec"], workers["spec"]["template"]["spec"]
    tls_volume = {v["name"]: v for v in server_pod["volumes"]}["tls"]["secret"]
    assert tls_volume["secretName"] == "tls-certs"
    assert [i["key"] for i in tls_volume["items"]] == ["tls.crt", "tls.key", "ca.crt"]
    assert [i["key"] for i in {v["name"]: v for v in worker_pod["volumes"]}["tls"]["secret"]["items"]] \
        == ["ca.crt"]
    server_env, worker_env = env_of(sts), env_of(workers)
    assert server_env["PSJOB_TLS_CERT_FILE"] == "/var/run/psjob/tls/tls.crt"
    assert server_env["PSJOB_TLS_KEY_FILE"] == "/var/run/psjob/tls/tls.key"
    assert server_env["PSJOB_TLS_CA_FILE"] == worker_env["PSJOB_TLS_CA_FILE"] == "/var/run/psjob/tls/ca.crt"
    assert "PSJOB_TLS_KEY_FILE" not in worker_env
    assert server_pod["containers"][0]["readinessProbe"]["tcpSocket"] == {"port": 6174}
    plane.sync("tls")
    plane.run("tls")
    wait_for(lambda: phase(plane, "tls") == "Running", what="Running")


def test_a_job_checkpointing_to_a_bucket_gets_no_claim_and_runs(operator, plane):
    submit(plane, job_manifest("bucket", pservers=2, workers=1,
                               checkpoint={"uri": "s3://team-ckpt/bucket", "credentialsSecret": "ckpt-s3"}))
    want = expected_children("bucket") - {("PersistentVolumeClaim", "bucket-checkpoint")}
    wait_for(lambda: children(plane, "bucket") == want, what="the children, without a claim")
    for kind, name in (("statefulsets", "bucket-pserver"), ("jobs", "bucket-worker")):
        owner = child(plane, kind, name)
        assert env_of(owner)["PSJOB_CHECKPOINT_DIR"] == "s3://team-ckpt/bucket"
        assert owner["spec"]["template"]["spec"]["containers"][0]["envFrom"] == [
            {"secretRef": {"name": "ckpt-s3"}}]
    plane.sync("bucket")
    plane.run("bucket")
    wait_for(lambda: phase(plane, "bucket") == "Running", what="Running")
    assert children(plane, "bucket") == want  # still no claim once running


def test_every_api_call_made_above_is_covered_by_the_required_rbac(cluster, operator):
    assert uncovered(cluster.requests()) == []
