"""Pod templates (spec.<role>.template) merged with psjob's pod: kept fields, merged
fields, rejected conflicts, per-role images. Every merged manifest is validated
against the Kubernetes OpenAPI schema, and the job documents against the CRD."""
from __future__ import annotations

import copy

import jsonschema
import kubernetes_validate
import pytest

from psjob.foundation.jobspec import JobSpecError, parse_job
from psjob_operator import builders, crd
from psjob_operator.validation import validate_for_cluster

K8S_VERSIONS = ("1.26.0", "1.33.0", kubernetes_validate.latest_version())
OWNER = builders.Owner("ctr", "uid-1")

# Everything a real job tends to need, in one template.
RICH_TEMPLATE = {
    "metadata": {"labels": {"team": "ranking"},
                 "annotations": {"sidecar.istio.io/inject": "false"}},
    "spec": {
        "serviceAccountName": "trainer",
        "automountServiceAccountToken": True,
        "schedulerName": "volcano",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["train"]}]}]}}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {"team": "ranking"}}}],
        "hostAliases": [{"ip": "10.0.0.9", "hostnames": ["data.internal"]}],
        "nodeSelector": {"pool": "train"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "train",
                         "effect": "NoSchedule"}],
        "securityContext": {"supplementalGroups": [4000]},
        "initContainers": [{"name": "fetch", "image": "busybox:1.36",
                            "command": ["sh", "-c", "echo fetched > /data/ready"],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        "containers": [
            {"name": "psjob",
             "env": [{"name": "DATA_DIR", "value": "/data"}],
             "envFrom": [{"secretRef": {"name": "aws"}}],
             "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
             "resources": {"limits": {"memory": "8Gi"}}},
            {"name": "log-shipper", "image": "fluent/fluent-bit:3.0"},
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "click-logs"}}],
    },
}


def job(**spec):
    body = {"image": "registry.example/psjob:0.1.0", "pserver": {"replicas": 2},
            "worker": {"replicas": 3, "resources": {"requests": {"cpu": "4"}}}}
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}
        else:
            body[key] = value
    return {"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
            "metadata": {"name": "ctr", "namespace": "ml"}, "spec": body}


def children(document):
    parsed = parse_job(document)
    validate_for_cluster(parsed)
    return builders.build_children(parsed, OWNER, "token")


def pod_of(kids, kind):
    return next(c for c in kids if c["kind"] == kind)["spec"]["template"]


def test_a_rich_template_is_merged_and_the_result_is_a_valid_statefulset_and_job():
    kids = children(job(pserver={"template": RICH_TEMPLATE}, worker={"template": RICH_TEMPLATE}))
    for child in kids:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(child, version, strict=True)
    for kind in ("StatefulSet", "Job"):
        pod = pod_of(kids, kind)
        spec = pod["spec"]
        # The template's own fields are kept.
        assert pod["metadata"]["labels"]["team"] == "ranking"
        assert pod["metadata"]["labels"]["psjob.dev/job-name"] == "ctr"
        assert pod["metadata"]["annotations"] == {
            "sidecar.istio.io/inject": "false",
            "kubectl.kubernetes.io/default-container": "psjob"}
        for key in ("serviceAccountName", "schedulerName", "affinity", "hostAliases",
                    "topologySpreadConstraints", "initContainers"):
            assert spec[key] == RICH_TEMPLATE["spec"][key]
        # psjob's defaults the template may change; maps and lists both sides fill.
        assert spec["automountServiceAccountToken"] is True
        assert spec["nodeSelector"] == {"pool": "train"}
        assert spec["securityContext"]["supplementalGroups"] == [4000]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert {v["name"] for v in spec["volumes"]} >= {"data", "tmp", "auth", "config",
                                                        "checkpoints"}
        # psjob's container first (and the default for kubectl logs), the sidecar after it.
        assert [c["name"] for c in spec["containers"]] == ["psjob", "log-shipper"]
        psjob = spec["containers"][0]
        names = [e["name"] for e in psjob["env"]]
        assert "DATA_DIR" in names and "PADDLE_TRAINING_ROLE" in names
        assert psjob["envFrom"] == [{"secretRef": {"name": "aws"}}]
        assert {m["mountPath"] for m in psjob["volumeMounts"]} >= {"/data", "/tmp"}
        assert psjob["resources"]["limits"]["memory"] == "8Gi"
    # The pserver keeps its probes and port; the worker its Never restart policy.
    pserver = pod_of(kids, "StatefulSet")["spec"]["containers"][0]
    assert "startupProbe" in pserver and pserver["ports"][0]["name"] == "pserver"
    assert pod_of(kids, "Job")["spec"]["restartPolicy"] == "Never"


def test_the_template_does_not_change_the_selectors_or_the_job_document():
    document = job(worker={"template": RICH_TEMPLATE})
    before = copy.deepcopy(document)
    kids = children(document)
    assert document == before
    sts = next(c for c in kids if c["kind"] == "StatefulSet")
    assert sts["spec"]["selector"]["matchLabels"] == {"psjob.dev/job-name": "ctr",
                                                      "psjob.dev/role": "pserver"}


@pytest.mark.parametrize("template, field, words", [
    ({"spec": {"containers": [{"name": "psjob", "command": ["python", "x.py"]}]}},
     "spec.worker.template.spec.containers[0].command", "set spec.command"),
    ({"spec": {"containers": [{"name": "psjob", "image": "other:1"}]}},
     "spec.worker.template.spec.containers[0].image", "spec.<role>.image"),
    ({"spec": {"containers": [{"name": "psjob", "env": [
        {"name": "HOME", "value": "/home/me"}]}]}},
     "spec.worker.template.spec.containers[0].env[0]", "'HOME' is psjob's"),
    ({"spec": {"containers": [{"name": "psjob", "volumeMounts": [
        {"name": "mine", "mountPath": "/tmp"}]}]}},
     "spec.worker.template.spec.containers[0].volumeMounts[0].mountPath", "/tmp is where psjob"),
    ({"spec": {"containers": [{"name": "psjob", "resources": {
        "requests": {"cpu": "1"}}}]}},
     "spec.worker.template.spec.containers[0].resources.requests.cpu", "spec.<role>.resources"),
    ({"spec": {"restartPolicy": "OnFailure"}},
     "spec.worker.template.spec.restartPolicy", "psjob chooses it per role"),
    ({"spec": {"volumes": [{"name": "config", "emptyDir": {}}]}},
     "spec.worker.template.spec.volumes[0]", "'config' is psjob's"),
    ({"spec": {"securityContext": {"runAsUser": 0}}},
     "spec.worker.template.spec.securityContext.runAsUser", "spec.securityContext.runAsUser"),
    ({"metadata": {"labels": {"psjob.dev/role": "pserver"}}},
     "spec.worker.template.metadata.labels.psjob.dev/role", "psjob sets 'worker'"),
    ({"spec": {"containers": [{"name": "side", "image": "a:1"}, {"name": "side", "image": "b:1"}]}},
     "spec.worker.template.spec.containers[1].name", "used twice"),
    ({"metadata": {"name": "fixed"}}, "spec.worker.template.metadata.name", "psjob names the pods"),
])
def test_a_template_field_that_conflicts_with_psjob_is_rejected_by_name(template, field, words):
    with pytest.raises(JobSpecError) as error:
        children(job(worker={"template": template}))
    assert error.value.field == field
    assert words in error.value.detail


def test_each_role_may_use_its_own_image():
    kids = children(job(image="registry.example/psjob:0.1.0-cuda12.8",
                        pserver={"image": "registry.example/psjob:0.1.0"},
                        worker={"device": "gpu"}))
    assert pod_of(kids, "StatefulSet")["spec"]["containers"][0]["image"] == \
        "registry.example/psjob:0.1.0"
    assert pod_of(kids, "Job")["spec"]["containers"][0]["image"] == \
        "registry.example/psjob:0.1.0-cuda12.8"


def test_the_crd_schema_accepts_a_pod_template_and_keeps_its_metadata_closed():
    schema = crd.build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    jsonschema.validate(job(worker={"template": RICH_TEMPLATE}), schema)
    template = schema["properties"]["spec"]["properties"]["worker"]["properties"]["template"]
    # Unknown fields are preserved only inside the PodSpec.
    assert "x-kubernetes-preserve-unknown-fields" not in template
    assert template["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(job(worker={"template": {"metadata": {"labels": {"a": 1}}}}), schema)
