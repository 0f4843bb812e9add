"""Spec edits, suspension, deletion and bad specs through the real operator."""
from __future__ import annotations

from opkit_cluster import wait_for
from opkit_jobs import (
    child,
    children,
    condition,
    env_of,
    event_reasons,
    job,
    job_manifest,
    patch_spec,
    phase,
    status,
    submit,
)
from opkit_rbac import uncovered


def settled(plane, name: str) -> bool:
    """One round of the fake controllers and kubelet; True once the job is Running."""
    plane.sync(name)
    plane.run(name)
    return phase(plane, name) == "Running"


def running(plane, name: str, **spec) -> None:
    submit(plane, job_manifest(name, **spec))
    wait_for(lambda: phase(plane, name) == "Created", what="Created")
    plane.sync(name)
    plane.run(name)
    wait_for(lambda: phase(plane, name) == "Running", what="Running")


def test_scaling_workers_recreates_the_worker_job_and_tells_every_process(operator, plane):
    running(plane, "scale", pservers=1, workers=2)
    old_uid = child(plane, "jobs", "scale-worker")["metadata"]["uid"]

    patch_spec(plane, "scale", {"worker": {"replicas": 4}})

    def rescaled():
        workers = child(plane, "jobs", "scale-worker")
        return workers and workers["metadata"]["uid"] != old_uid and workers
    workers = wait_for(rescaled, what="a new worker Job")
    assert workers["spec"]["completions"] == 4 and workers["spec"]["parallelism"] == 4
    assert env_of(workers)["PADDLE_TRAINERS"] == "4"
    wait_for(lambda: env_of(child(plane, "statefulsets", "scale-pserver"))["PADDLE_TRAINERS"]
             == "4", what="pservers told about 4 trainers")
    wait_for(lambda: status(plane, "scale").get("observedGeneration") == 2,
             what="observedGeneration 2")
    plane.sync("scale")
    plane.run("scale")
    wait_for(lambda: status(plane, "scale").get("workersReady") == "4/4", what="4 workers")
    assert phase(plane, "scale") == "Running"


def test_changing_the_image_rolls_pservers_and_workers(operator, plane):
    running(plane, "image", pservers=1, workers=1)
    patch_spec(plane, "image", {"image": "registry.example/psjob:1.1"})

    def image(kind: str, name: str) -> str:
        obj = child(plane, kind, name)
        return obj and obj["spec"]["template"]["spec"]["containers"][0]["image"]
    wait_for(lambda: image("statefulsets", "image-pserver") == "registry.example/psjob:1.1",
             what="pserver template updated")
    wait_for(lambda: image("jobs", "image-worker") == "registry.example/psjob:1.1",
             what="worker Job recreated")


def test_suspending_stops_every_pod_and_resuming_starts_them_again(operator, plane):
    running(plane, "pause", pservers=2, workers=2)
    first_start = status(plane, "pause")["startTime"]

    patch_spec(plane, "pause", {"runPolicy": {"suspend": True}})
    wait_for(lambda: child(plane, "statefulsets", "pause-pserver")["spec"]["replicas"] == 0,
             what="pservers scaled to zero")
    wait_for(lambda: child(plane, "jobs", "pause-worker")["spec"]["suspend"] is True,
             what="worker Job suspended")
    plane.sync("pause")  # the controllers stop the pods
    wait_for(lambda: condition(plane, "pause", "Suspended").get("message", "").startswith(
        "runPolicy.suspend is true: all pods stopped"), what="all pods stopped")
    assert phase(plane, "pause") == "Suspended"
    assert plane.pods("pause") == {}
    assert ("PersistentVolumeClaim", "pause-checkpoint") in children(plane, "pause")
    assert "startTime" not in status(plane, "pause")

    patch_spec(plane, "pause", {"runPolicy": {"suspend": False}})
    wait_for(lambda: child(plane, "statefulsets", "pause-pserver")["spec"]["replicas"] == 2,
             what="pservers back")
    wait_for(lambda: child(plane, "jobs", "pause-worker")["spec"]["suspend"] is False,
             what="workers resumed")
    suspended = wait_for(lambda: condition(plane, "pause", "Suspended").get("status") == "False"
                         and condition(plane, "pause", "Suspended"), what="Suspended=False")
    assert suspended["reason"] == "Resumed"
    plane.sync("pause")
    plane.run("pause")
    wait_for(lambda: phase(plane, "pause") == "Running", what="Running after resume")
    assert status(plane, "pause")["startTime"] >= first_start


def test_deleting_the_job_deletes_every_child_and_nothing_comes_back(operator, plane):
    running(plane, "bye", pservers=1, workers=1)
    assert children(plane, "bye")
    plane.kube.delete(plane.path("parameterserverjobs", "bye"))
    wait_for(lambda: not children(plane, "bye") and not plane.pods("bye"),
             what="children garbage-collected")
    # Give the operator a few passes: it must not recreate anything for a deleted job.
    submit(plane, job_manifest("witness", pservers=1, workers=1))
    wait_for(lambda: phase(plane, "witness") == "Created", what="another job handled")
    assert job(plane, "bye") is None and not children(plane, "bye")


def test_an_invalid_spec_ends_failed_with_a_message_naming_the_fix(operator, plane):
    submit(plane, job_manifest("bad", pservers=0, workers=1))
    wait_for(lambda: phase(plane, "bad") == "Failed", what="Failed")
    failed = condition(plane, "bad", "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"] == "spec.pserver.replicas: is 0, must be >= 1"
    assert children(plane, "bad") == set()

    patch_spec(plane, "bad", {"pserver": {"replicas": 1}})  # the user fixes the spec
    wait_for(lambda: phase(plane, "bad") == "Created", what="the fixed job starts")
    assert ("StatefulSet", "bad-pserver") in children(plane, "bad")


def test_an_edit_that_breaks_a_running_job_stops_it_until_the_spec_is_fixed(operator, plane):
    running(plane, "edit", pservers=1, workers=1)
    patch_spec(plane, "edit", {"worker": {"resources": {"requests": {"cpu": "4"},
                                                        "limits": {"cpu": "2"}}}})
    wait_for(lambda: phase(plane, "edit") == "Failed", what="Failed")
    assert condition(plane, "edit", "Failed")["message"] == (
        "spec.worker.resources.requests.cpu: 4 exceeds the limit 2: lower the request or raise "
        "spec.worker.resources.limits.cpu")
    wait_for(lambda: child(plane, "statefulsets", "edit-pserver")["spec"]["replicas"] == 0,
             what="pservers stopped")
    assert child(plane, "jobs", "edit-worker")["spec"]["suspend"] is True

    patch_spec(plane, "edit", {"worker": {"resources": {"requests": {"cpu": "2"}}}})
    wait_for(lambda: child(plane, "statefulsets", "edit-pserver")["spec"]["replicas"] == 1,
             what="pservers back after the fix")
    # The worker Job is recreated (its template changed): let the controllers catch up.
    wait_for(lambda: settled(plane, "edit"), what="Running again")


def test_a_misspelt_mode_is_answered_with_the_close_match(operator, plane):
    submit(plane, job_manifest("typo", mode="synch"))
    wait_for(lambda: phase(plane, "typo") == "Failed", what="Failed")
    assert condition(plane, "typo", "Failed")["message"] == (
        "spec.mode: is 'synch'; use one of sync, async, half_async, geo, collective (did you mean 'sync'?)")


def test_a_finished_job_is_deleted_after_its_ttl(operator, plane):
    running(plane, "ttl", pservers=1, workers=1,
            runPolicy={"ttlSecondsAfterFinished": 1, "cleanPodPolicy": "All"})
    for name in plane.pods("ttl"):
        if name.startswith("ttl-worker-"):
            plane.succeed(name)
    plane.sync("ttl")
    # The Succeeded phase lasts only the 1 s TTL, shorter than a busy machine may take
    # between two polls; its event outlives the job.
    wait_for(lambda: "AllWorkersCompleted" in event_reasons(plane, "ttl"), what="Succeeded")
    wait_for(lambda: job(plane, "ttl") is None, what="the job deleted by its TTL")
    wait_for(lambda: not children(plane, "ttl"), what="children gone with it")


def test_every_api_call_made_above_is_covered_by_the_required_rbac(cluster, operator):
    assert uncovered(cluster.requests()) == []


def test_a_job_secret_deleted_by_hand_comes_back_without_an_operator_restart(operator, plane):
    running(plane, "secret", pservers=1, workers=1)
    path = plane.path("secrets", "secret-auth")
    first = plane.kube.get(path)
    assert first is not None
    plane.kube.delete(path)
    assert plane.kube.get(path) is None
    # The operator does not watch Secrets; it POSTs the job's again after
    # --secret-recheck-seconds (5 s in these tests).
    again = wait_for(lambda: plane.kube.get(path), what="the auth Secret recreated")
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    assert again["metadata"]["ownerReferences"] == first["metadata"]["ownerReferences"]


def test_a_pod_template_reaches_the_pods_and_a_conflicting_one_fails_naming_the_field(
        operator, plane):
    template = {"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {"serviceAccountName": "trainer",
                         "containers": [{"name": "psjob", "command": ["python", "x.py"]}]}}
    submit(plane, job_manifest("tmpl", pservers=1, workers=1, worker={"replicas": 1,
                                                                       "template": template}))
    wait_for(lambda: phase(plane, "tmpl") == "Failed", what="Failed")
    failed = condition(plane, "tmpl", "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"].startswith(
        "spec.worker.template.spec.containers[0].command: psjob manages this field")
    assert children(plane, "tmpl") == set()

    # The user drops the conflicting field (null removes it in a merge patch).
    patch_spec(plane, "tmpl", {"worker": {"template": {"spec": {"containers": None}}}})
    wait_for(lambda: child(plane, "jobs", "tmpl-worker"), what="the worker Job")
    pod = child(plane, "jobs", "tmpl-worker")["spec"]["template"]
    assert pod["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
    assert pod["spec"]["serviceAccountName"] == "trainer"


def test_an_elastic_job_scales_its_trainers_in_place_restarting_nothing(operator, plane):
    """worker.maxReplicas set: changing worker.replicas patches the Indexed Job's completions and
    parallelism together; no pod template changes, so no trainer restarts and no pserver rolls."""
    running(plane, "elastic", pservers=2, workers=2, worker={"replicas": 2, "maxReplicas": 4})
    workers = child(plane, "jobs", "elastic-worker")
    sts = child(plane, "statefulsets", "elastic-pserver")
    assert env_of(workers)["PSJOB_MAX_TRAINERS"] == env_of(sts)["PSJOB_MAX_TRAINERS"] == "4"
    pods_before = {n: p["metadata"]["uid"] for n, p in plane.pods("elastic").items()}

    patch_spec(plane, "elastic", {"worker": {"replicas": 3}})
    wait_for(lambda: child(plane, "jobs", "elastic-worker")["spec"]["completions"] == 3,
             what="the worker Job scaled to 3")
    scaled = child(plane, "jobs", "elastic-worker")
    assert scaled["metadata"]["uid"] == workers["metadata"]["uid"]  # patched, not recreated
    assert scaled["spec"]["parallelism"] == 3
    assert scaled["spec"]["template"] == workers["spec"]["template"]
    wait_for(lambda: status(plane, "elastic").get("observedGeneration") == 2,
             what="observedGeneration 2")
    assert child(plane, "statefulsets", "elastic-pserver")["spec"]["template"] == sts["spec"]["template"]
    plane.sync("elastic")
    plane.run("elastic")
    wait_for(lambda: status(plane, "elastic").get("workersReady") == "3/3", what="3 workers")
    pods_after = {n: p["metadata"]["uid"] for n, p in plane.pods("elastic").items()}
    assert {n: u for n, u in pods_after.items() if n in pods_before} == pods_before  # nobody restarted
    assert len(pods_after) == len(pods_before) + 1

    patch_spec(plane, "elastic", {"worker": {"replicas": 1}})
    wait_for(lambda: child(plane, "jobs", "elastic-worker")["spec"]["parallelism"] == 1,
             what="the worker Job scaled to 1")
    assert child(plane, "jobs", "elastic-worker")["metadata"]["uid"] == workers["metadata"]["uid"]
    plane.sync("elastic")
    plane.run("elastic")
    wait_for(lambda: status(plane, "elastic").get("workersReady") == "1/1", what="1 worker")
    left = {n: p["metadata"]["uid"] for n, p in plane.pods("elastic").items()}
    assert len(left) == 2 + 1  # two pservers and trainer 0: indexes 1 and 2 were removed
    assert all(pods_before.get(n, u) == u for n, u in left.items())  # and nobody restarted
    assert phase(plane, "elastic") == "Running"


def test_children_rendered_by_another_operator_version_keep_their_pods_until_the_spec_changes(
        operator, plane):
    # An operator upgrade whose templates differ must not restart every running job: the
    # children of an unchanged job (same inputs) keep their templates; the job's next spec
    # edit brings the new rendering.
    import json
    running(plane, "upg", pservers=1, workers=2)
    worker_uid = child(plane, "jobs", "upg-worker")["metadata"]["uid"]
    sts = child(plane, "statefulsets", "upg-pserver")
    # What an older operator would have left: another template, recorded as last applied.
    older = json.loads(sts["metadata"]["annotations"]["psjob.dev/last-applied"])
    container = older["spec"]["template"]["spec"]["containers"][0]
    container["env"] = container["env"] + [{"name": "RENDERED_BY", "value": "an older operator"}]
    plane.kube.patch(plane.path("statefulsets", "upg-pserver"), {
        "metadata": {"annotations": {"psjob.dev/template-hash": "older",
                                     "psjob.dev/last-applied": json.dumps(older)}},
        "spec": {"template": older["spec"]["template"]}})
    plane.kube.patch(plane.path("jobs", "upg-worker"),
                     {"metadata": {"annotations": {"psjob.dev/template-hash": "older"}}})
    # Someone scales the pservers by hand: the operator's next pass puts the count back ...
    plane.kube.patch(plane.path("statefulsets", "upg-pserver"), {"spec": {"replicas": 3}})
    wait_for(lambda: child(plane, "statefulsets", "upg-pserver")["spec"]["replicas"] == 1,
             what="the pserver count put back")
    # ... and leaves the older rendering of both children in place.
    assert env_of(child(plane, "statefulsets", "upg-pserver"))["RENDERED_BY"] == "an older operator"
    assert child(plane, "jobs", "upg-worker")["metadata"]["uid"] == worker_uid

    patch_spec(plane, "upg", {"image": "registry.example/psjob:1.1"})
    wait_for(lambda: "RENDERED_BY" not in env_of(child(plane, "statefulsets", "upg-pserver")),
             what="the edit applying the new rendering to the pservers")
    wait_for(lambda: (child(plane, "jobs", "upg-worker") or {}).get("metadata", {}).get("uid")
             not in (None, worker_uid), what="the worker Job recreated for the edit")
