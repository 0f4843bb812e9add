"""Gang scheduling manifests and the gang's status message (pure, no API)."""
from __future__ import annotations

import datetime as dt

import kubernetes_validate

from psjob.jobspec import parse_job
from psjob_operator import builders, gang, rbac
from psjob_operator.observe import Children, pod_view
from psjob_operator.settings import GangScheduler, QueueSystem, SchedulingSettings
from psjob_operator.status import Observation, Reason, compute_status

OWNER = builders.Owner("ctr", "uid-1")
VOLCANO = SchedulingSettings(gang_scheduler=GangScheduler.VOLCANO)
PLUGINS = SchedulingSettings(gang_scheduler=GangScheduler.SCHEDULER_PLUGINS,
                             scheduler_name="coscheduler")
KUEUE = SchedulingSettings(queue_system=QueueSystem.KUEUE)


def job(policy=None, heter=False):
    body = {"image": "psjob:1", "pserver": {"replicas": 2}, "worker": {"replicas": 3},
            "runPolicy": {"schedulingPolicy": policy or {}}}
    if heter:
        body["heterWorker"] = {"replicas": 1}
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr", "namespace": "ml"}, "spec": body})


def scheduled(parsed, settings):
    return gang.schedule(builders.build_children(parsed, OWNER, "t"), parsed, OWNER, settings)


def pod_templates(children):
    return [c["spec"]["template"] for c in children if c["kind"] in ("StatefulSet", "Job")]


def test_without_a_scheduler_or_queue_system_nothing_changes():
    parsed = job({"queue": "q", "minAvailable": 2})
    assert scheduled(parsed, SchedulingSettings()) == builders.build_children(parsed, OWNER, "t")


def test_min_member_defaults_to_every_pod_of_the_job():
    assert gang.build_pod_group(job(heter=True), OWNER, VOLCANO)["spec"] == {"minMember": 6}
    assert gang.build_pod_group(job({"minAvailable": 3}), OWNER, VOLCANO)["spec"] == \
        {"minMember": 3}


def test_volcano_podgroup_carries_queue_and_priority_and_pods_name_it():
    children = scheduled(job({"queue": "q1", "priorityClass": "hi",
                              "scheduleTimeoutSeconds": 60}), VOLCANO)
    group = children[-1]
    assert group == {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "ctr", "namespace": "ml",
                     "labels": {"psjob.dev/job-name": "ctr",
                                "app.kubernetes.io/managed-by": "psjob-operator"},
                     "ownerReferences": [builders.owner_reference(OWNER)]},
        "spec": {"minMember": 5, "queue": "q1", "priorityClassName": "hi"}}
    for template in pod_templates(children):
        assert template["spec"]["schedulerName"] == "volcano"
        assert template["spec"]["priorityClassName"] == "hi"
        assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ctr"


def test_scheduler_plugins_podgroup_has_the_timeout_and_pods_the_label():
    children = scheduled(job({"queue": "q1", "scheduleTimeoutSeconds": 60}), PLUGINS)
    assert children[-1]["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert children[-1]["spec"] == {"minMember": 5, "scheduleTimeoutSeconds": 60}
    for template in pod_templates(children):
        assert template["spec"]["schedulerName"] == "coscheduler"
        assert template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "ctr"
        assert "kueue.x-k8s.io/queue-name" not in template["metadata"]["labels"]


def test_kueue_labels_only_jobs_that_name_a_queue():
    assert scheduled(job(), KUEUE) == builders.build_children(job(), OWNER, "t")
    children = scheduled(job({"queue": "team"}), KUEUE)
    assert all(c["kind"] != "PodGroup" for c in children)
    for template in pod_templates(children):
        assert template["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team"
        assert template["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == "ctr"
        assert template["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "5"
        assert "schedulerName" not in template["spec"]


def test_marked_workloads_stay_valid_kubernetes_objects():
    version = kubernetes_validate.latest_version()
    for manifest in scheduled(job({"queue": "team", "priorityClass": "hi"}),
                              SchedulingSettings(GangScheduler.VOLCANO, "",
                                                 QueueSystem.KUEUE)):
        if manifest["kind"] != "PodGroup":
            kubernetes_validate.validate(manifest, version, strict=True)


def test_a_role_priority_class_wins_over_the_gang_one():
    parsed = parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                        "metadata": {"name": "ctr", "namespace": "ml"},
                        "spec": {"image": "i", "pserver": {"priorityClassName": "ps-only"},
                                 "runPolicy": {"schedulingPolicy": {"priorityClass": "hi"}}}})
    sts, workers = pod_templates(scheduled(parsed, VOLCANO))
    assert (sts["spec"]["priorityClassName"], workers["spec"]["priorityClassName"]) == \
        ("ps-only", "hi")


def test_a_waiting_gang_says_how_many_pods_are_placed():
    pending = {"metadata": {"name": "ctr-pserver-0", "labels": {"psjob.dev/role": "pserver"}},
               "status": {"phase": "Pending"}}
    placed = {"metadata": {"name": "ctr-pserver-1", "labels": {"psjob.dev/role": "pserver"}},
              "spec": {"nodeName": "n1"}, "status": {"phase": "Pending"}}
    view = gang.gang_view({"metadata": {"name": "ctr"}, "spec": {"minMember": 6},
                           "status": {"phase": "Inqueue"}})
    kids = Children(pods=(pod_view(pending), pod_view(placed)), gang=view)
    now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    update = compute_status(Observation("ctr", 1, now, job().spec, {}, kids))
    running = next(c for c in update.status["conditions"] if c["type"] == "Running")
    assert (running["reason"], running["message"]) == (
        Reason.WAITING_FOR_GANG.value,
        "waiting for the gang: 1 of 6 pods schedulable (PodGroup ctr Inqueue)")


def test_rbac_gains_podgroups_only_for_the_chosen_scheduler():
    assert rbac.required_rbac("none") == rbac.REQUIRED_RBAC
    volcano = {(p.api_group, p.resource) for p in rbac.required_rbac("volcano")}
    assert ("scheduling.volcano.sh", "podgroups") in volcano
    assert ("scheduling.x-k8s.io", "podgroups") not in volcano
    assert not any("delete" in p.verbs for extra in rbac.GANG_RBAC.values() for p in extra)
