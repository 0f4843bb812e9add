"""Gang scheduling manifests and the gang's status message (pure, no API)."""
from __future__ import annotations

import datetime as dt

import kubernetes_validate

from psjob.foundation.jobspec import parse_job
from psjob_operator import builders, gang, kube, rbac
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
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    update = compute_status(Observation("ctr", 1, now, job().spec, {}, kids))
    running = next(c for c in update.status["conditions"] if c["type"] == "Running")
    assert (running["reason"], running["message"]) == (
        Reason.WAITING_FOR_GANG.value,
        "waiting for the gang: 1 of 6 pods schedulable (PodGroup ctr Inqueue)")


def test_rbac_gains_podgroups_only_for_the_chosen_scheduler():
    assert rbac.required_rbac("none") == rbac.REQUIRED_RBAC
    for group, scheduler in (("scheduling.volcano.sh", "volcano"),
                             ("scheduling.x-k8s.io", "scheduler-plugins")):
        # Any operator may find and delete a job's PodGroup left by another scheduler ...
        assert rbac.allows(group, "podgroups", "get", "none")
        assert rbac.allows(group, "podgroups", "delete", "none")
        # ... but creates, patches and watches only its own scheduler's.
        for verb in ("create", "patch", "watch"):
            assert rbac.allows(group, "podgroups", verb, scheduler)
            assert not rbac.allows(group, "podgroups", verb, "none")
    assert not rbac.allows("scheduling.x-k8s.io", "podgroups", "create", "volcano")
    assert not rbac.allows("", "pods", "patch", queue_system="none")
    assert rbac.allows("", "pods", "patch", queue_system="kueue")


def test_the_podgroup_kinds_of_the_other_schedulers_are_the_stale_ones():
    assert gang.stale_podgroup_resources(SchedulingSettings()) == kube.PODGROUP_KINDS
    assert gang.stale_podgroup_resources(VOLCANO) == (kube.PLUGINS_PODGROUPS,)
    assert gang.stale_podgroup_resources(PLUGINS) == (kube.VOLCANO_PODGROUPS,)


def elastic(workers: int):
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr", "namespace": "ml"},
                      "spec": {"image": "i", "pserver": {"replicas": 2},
                               "worker": {"replicas": workers, "maxReplicas": 8},
                               "runPolicy": {"schedulingPolicy": {"queue": "team"}}}})


def test_an_elastic_resize_under_kueue_keeps_the_templates_and_names_the_pods_to_update():
    before = scheduled(elastic(3), KUEUE)
    live = {(c["kind"], c["metadata"]["name"]): c for c in before}
    frozen = gang.live_totals(elastic(5), live)
    assert frozen == {("StatefulSet", "ctr-pserver"): "5", ("Job", "ctr-worker"): "5"}
    after = gang.schedule(builders.build_children(elastic(5), OWNER, "t"), elastic(5), OWNER,
                          KUEUE, frozen)
    assert pod_templates(after) == pod_templates(before)  # nothing rolls, nothing recreated
    assert gang.live_totals(job({"queue": "team"}), live) == {}  # not elastic: recreated

    def pod(name, total, deleting=False):
        meta = {"name": name, "labels": {"kueue.x-k8s.io/pod-group-name": "ctr"},
                "annotations": {"kueue.x-k8s.io/pod-group-total-count": total}}
        if deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": meta}
    # 2 pservers + 5 trainers: 7; trainer 0 started when there were 3.
    pods = (pod("ctr-pserver-0", "7"), pod("ctr-worker-4-x", "7"),
            pod("ctr-worker-0-y", "5"), pod("ctr-worker-1-z", "5", deleting=True))
    assert gang.pods_with_stale_total(elastic(5), KUEUE, pods) == ["ctr-worker-0-y"]
    assert gang.pods_with_stale_total(elastic(6), KUEUE, pods) == [
        "ctr-pserver-0", "ctr-worker-4-x", "ctr-worker-0-y"]
    assert gang.pods_with_stale_total(elastic(6), SchedulingSettings(), pods) == []
