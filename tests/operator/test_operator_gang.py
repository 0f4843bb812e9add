"""Gang scheduling against the emulator with the schedulers' PodGroup CRDs installed.

The CRDs (minimal copies of Volcano's and scheduler-plugins' PodGroup, in
tests/operator/crds/) are installed with the real kubectl; the operator runs
with --gang-scheduler volcano, and in the last test with scheduler-plugins and
--queue-system kueue. The tests play the scheduler: they write the PodGroup's
status and mark pods scheduled, as Volcano would.
"""
from __future__ import annotations

import json
import pathlib
import subprocess

import pytest
from opkit_cluster import NAMESPACE, wait_for
from opkit_jobs import condition, job, job_manifest, patch_spec, phase, submit
from opkit_operator import OperatorProcess
from opkit_rbac import TEST_CLIENT_AGENT, rbac_triple

from psjob_operator import rbac

CRDS = pathlib.Path(__file__).parent / "crds"
VOLCANO = "/apis/scheduling.volcano.sh/v1beta1/namespaces/" + NAMESPACE + "/podgroups"
PLUGINS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/" + NAMESPACE + "/podgroups"
POLICY = {"queue": "research", "priorityClass": "high-priority"}


def kubectl(kubeconfig: pathlib.Path, *args: str) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def kubeconfig(cluster, tmp_path_factory) -> pathlib.Path:
    return cluster.write_kubeconfig(tmp_path_factory.mktemp("kubectl") / "kubeconfig")


@pytest.fixture(scope="module")
def operator_flags(kubeconfig):
    # The CRDs first: the operator watches PodGroups from its start.
    for crd in ("volcano-podgroups.yaml", "scheduler-plugins-podgroups.yaml"):
        kubectl(kubeconfig, "apply", "--validate=false", "-f", str(CRDS / crd))
    return ("--resync-seconds", "5", "--checkpoint-poll-seconds", "0",
            "--gang-scheduler", "volcano")


def podgroup(kubeconfig: pathlib.Path, plural: str, name: str) -> dict | None:
    out = kubectl(kubeconfig, "get", plural, "-n", NAMESPACE, "-o", "json")
    return next((pg for pg in json.loads(out)["items"] if pg["metadata"]["name"] == name), None)


def templates(plane, name: str) -> list[dict]:
    sts = plane.kube.get(plane.path("statefulsets", f"{name}-pserver"))
    workers = plane.kube.get(plane.path("jobs", f"{name}-worker"))
    return [sts["spec"]["template"], workers["spec"]["template"]]


def running_message(plane, name: str) -> str:
    return condition(plane, name, "Running").get("message", "")


def test_a_volcano_job_gets_an_owned_podgroup_and_marked_pods(operator, plane, kubeconfig):
    submit(plane, job_manifest("gang", pservers=1, workers=2,
                               runPolicy={"schedulingPolicy": POLICY}))
    group = wait_for(lambda: podgroup(kubeconfig, "podgroups.scheduling.volcano.sh", "gang"),
                     what="the PodGroup")
    assert group["spec"] == {"minMember": 3, "queue": "research",
                             "priorityClassName": "high-priority"}
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == \
        ("ParameterServerJob", job(plane, "gang")["metadata"]["uid"], True)
    wait_for(lambda: phase(plane, "gang") == "Created", what="Created")
    for template in templates(plane, "gang"):
        assert template["spec"]["schedulerName"] == "volcano"
        assert template["spec"]["priorityClassName"] == "high-priority"
        assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "gang"


def test_the_gang_phase_shows_in_the_conditions_until_every_pod_is_placed(operator, plane):
    plane.sync("gang")
    plane.kube.patch(f"{VOLCANO}/gang/status", {"status": {
        "phase": "Pending", "conditions": [{
            "type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
            "message": "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, "
                       "3 minAvailable"}]}})
    wait_for(lambda: running_message(plane, "gang").startswith(
        "waiting for the gang: 0 of 3 pods schedulable (PodGroup gang Pending: 3/3 tasks"),
        what="the gang condition")
    assert condition(plane, "gang", "Running")["reason"] == "WaitingForGang"
    first = sorted(plane.pods("gang"))[0]
    plane.set_status(first, {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "True"}]})
    wait_for(lambda: running_message(plane, "gang").startswith(
        "waiting for the gang: 1 of 3 pods schedulable"), what="one pod placed")
    plane.kube.patch(f"{VOLCANO}/gang/status", {"status": {"phase": "Running", "conditions": []}})
    plane.run("gang")
    plane.sync("gang")
    wait_for(lambda: phase(plane, "gang") == "Running", what="Running")


def test_a_resize_updates_the_podgroup(operator, plane, kubeconfig):
    patch_spec(plane, "gang", {"worker": {"replicas": 4}})
    wait_for(lambda: (podgroup(kubeconfig, "podgroups.scheduling.volcano.sh", "gang")
                      or {}).get("spec", {}).get("minMember") == 5, what="minMember 5")
    patch_spec(plane, "gang", {"runPolicy": {"schedulingPolicy": {**POLICY, "minAvailable": 2}}})
    wait_for(lambda: podgroup(kubeconfig, "podgroups.scheduling.volcano.sh", "gang")["spec"]
             ["minMember"] == 2, what="minAvailable 2")


def test_a_collective_jobs_gang_is_all_of_its_trainers(operator, plane, kubeconfig):
    """No pservers: the PodGroup's minMember is every trainer, and the worker Job's pods carry
    the scheduler's marks (a partial ring never takes a step)."""
    manifest = job_manifest("ringgang", workers=4, mode="collective", command=["python", "t.py"],
                            args=[], runPolicy={"schedulingPolicy": {"queue": "research"}})
    del manifest["spec"]["pserver"]
    submit(plane, manifest)
    group = wait_for(lambda: podgroup(kubeconfig, "podgroups.scheduling.volcano.sh", "ringgang"),
                     what="the collective job's PodGroup")
    assert group["spec"] == {"minMember": 4, "queue": "research"}
    wait_for(lambda: phase(plane, "ringgang") == "Created", what="Created")
    template = plane.kube.get(plane.path("jobs", "ringgang-worker"))["spec"]["template"]
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ringgang"
    assert plane.kube.get(plane.path("statefulsets", "ringgang-pserver")) is None


def test_the_podgroup_watch_is_labelled_and_every_request_is_in_the_volcano_rbac(cluster,
                                                                                operator):
    sent = [(m, p, q) for m, p, q, agent in cluster.requests()
            if not agent.startswith(TEST_CLIENT_AGENT) and agent != "kubectl"
            and not agent.startswith("kubectl/")]
    watches = [q for m, p, q in sent if p == VOLCANO and q.get("watch") == "true"]
    assert watches and all(q.get("labelSelector") == "psjob.dev/job-name" for q in watches)
    # The other scheduler's PodGroups: only looked up by name, once per job (stale ones).
    assert {m for m, p, _ in sent if p.startswith(PLUGINS)} <= {"GET"}
    triples = {t for t in (rbac_triple(*r) for r in sent) if t}
    assert ("scheduling.volcano.sh", "podgroups", "create") in triples
    assert [t for t in triples if not rbac.allows(*t, gang_scheduler="volcano")] == []
    assert not rbac.allows("scheduling.volcano.sh", "podgroups", "create", gang_scheduler="none")


@pytest.fixture(scope="module")
def plugins_operator(operator, kubeconfig, tmp_path_factory):
    """The operator restarted with --gang-scheduler scheduler-plugins --queue-system kueue
    (one operator at a time in this namespace): the jobs made above keep their Volcano
    PodGroups until it sees them."""
    operator.stop()
    other = OperatorProcess(kubeconfig, tmp_path_factory.mktemp("plugins") / "operator.log")
    other.start("--resync-seconds", "5", "--checkpoint-poll-seconds", "0",
                "--gang-scheduler", "scheduler-plugins", "--queue-system", "kueue")
    yield other
    other.stop()


def test_scheduler_plugins_and_kueue_mark_pods_with_their_own_names(plugins_operator, plane,
                                                                    kubeconfig):
    submit(plane, job_manifest("coschd", pservers=2, workers=3, runPolicy={
        "schedulingPolicy": {"queue": "team-a", "scheduleTimeoutSeconds": 600}}))
    group = wait_for(lambda: podgroup(kubeconfig, "podgroups.scheduling.x-k8s.io", "coschd"),
                     what="the coscheduling PodGroup")
    assert group["spec"] == {"minMember": 5, "scheduleTimeoutSeconds": 600}
    wait_for(lambda: phase(plane, "coschd") == "Created", what="Created")
    for template in templates(plane, "coschd"):
        assert template["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        labels = template["metadata"]["labels"]
        assert labels["scheduling.x-k8s.io/pod-group"] == "coschd"
        assert labels["kueue.x-k8s.io/queue-name"] == "team-a"
        assert labels["kueue.x-k8s.io/pod-group-name"] == "coschd"
        assert template["metadata"]["annotations"] == {
            "kueue.x-k8s.io/pod-group-total-count": "5"}


def test_a_changed_gang_scheduler_deletes_the_podgroups_jobs_own_under_the_old_one(
        plugins_operator, plane, kubeconfig):
    # "gang" was made under --gang-scheduler volcano; its Volcano PodGroup goes, and the
    # job gets a coscheduling one instead.
    wait_for(lambda: podgroup(kubeconfig, "podgroups.scheduling.volcano.sh", "gang") is None,
             what="the stale Volcano PodGroup of job gang deleted")
    wait_for(lambda: podgroup(kubeconfig, "podgroups.scheduling.x-k8s.io", "gang"),
             what="job gang's coscheduling PodGroup")
    # A Volcano PodGroup the job does not own is left alone, even under the job's name.
    plane.kube.create(VOLCANO, {"apiVersion": "scheduling.volcano.sh/v1beta1",
                                "kind": "PodGroup", "spec": {"minMember": 1},
                                "metadata": {"name": "theirs", "namespace": NAMESPACE}})
    submit(plane, job_manifest("theirs", pservers=1, workers=1))
    wait_for(lambda: podgroup(kubeconfig, "podgroups.scheduling.x-k8s.io", "theirs"),
             what="job theirs' coscheduling PodGroup (after its first pass)")
    assert podgroup(kubeconfig, "podgroups.scheduling.volcano.sh", "theirs") is not None


def test_an_elastic_resize_under_kueue_rewrites_the_pods_total_count_and_rolls_nothing(
        plugins_operator, plane):
    submit(plane, job_manifest("elastic", pservers=1, workers=2, worker={
        "replicas": 2, "maxReplicas": 4}, runPolicy={"schedulingPolicy": {"queue": "team-a"}}))
    wait_for(lambda: phase(plane, "elastic") == "Created", what="Created")
    plane.sync("elastic")
    sts_before, workers_before = (plane.kube.get(plane.path(kind, f"elastic-{role}"))
                                  for kind, role in (("statefulsets", "pserver"),
                                                     ("jobs", "worker")))
    totals = lambda: {name: pod["metadata"]["annotations"].get(
        "kueue.x-k8s.io/pod-group-total-count") for name, pod in plane.pods("elastic").items()}
    assert set(totals().values()) == {"3"} and len(totals()) == 3

    patch_spec(plane, "elastic", {"worker": {"replicas": 3}})
    wait_for(lambda: plane.kube.get(plane.path("jobs", "elastic-worker"))["spec"]
             ["completions"] == 3, what="the worker Job scaled to 3")
    plane.sync("elastic")  # the new trainer pod comes from the unchanged template: count 3
    wait_for(lambda: len(totals()) == 4 and set(totals().values()) == {"4"},
             what="every pod's Kueue total count rewritten to 4")
    sts_after = plane.kube.get(plane.path("statefulsets", "elastic-pserver"))
    workers_after = plane.kube.get(plane.path("jobs", "elastic-worker"))
    assert workers_after["metadata"]["uid"] == workers_before["metadata"]["uid"]  # not recreated
    assert workers_after["spec"]["template"] == workers_before["spec"]["template"]
    assert sts_after["spec"]["template"] == sts_before["spec"]["template"]  # pservers do not roll

