"""`helm install` of charts/psjob-operator into the kmock API, for the main value combinations.

Real Helm installs the chart (once per set of values, shared by the tests
that only read the result); the tests read back what the API server received
and check it against the Kubernetes schemas and against what the values asked
for. Upgrade, uninstall and refusals get an emulator of their own.
"""
from __future__ import annotations

import json
import pathlib
import re
import textwrap

import jsonschema
import kubernetes_validate
import pytest
import yaml

HERE = pathlib.Path(__file__).resolve().parent
CHART = HERE.parents[1] / "charts" / "psjob-operator"
K8S_VERSION = kubernetes_validate.latest_version()
RELEASE, NAMESPACE = "ps", "psjob-system"

SCENARIOS = {
    "cluster-wide defaults": {},
    "namespace-scoped in the release namespace": {"rbac": {"scope": "namespace"}},
    "namespace-scoped over two namespaces with full monitoring": {
        "rbac": {"scope": "namespace", "watchNamespaces": ["team-a", "team-b"]},
        "monitoring": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                       "podMonitor": {"enabled": True},
                       "grafanaDashboard": {"enabled": True, "namespace": "grafana"}},
    },
    "cluster-wide with monitoring and no dashboard": {
        "rbac": {"scope": "cluster"},
        "monitoring": {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}},
    },
    "cluster-wide without crd, metrics service or monitoring": {
        "rbac": {"scope": "cluster"},
        "crds": {"install": False},
        "metrics": {"service": {"enabled": False}},
    },
    "namespace-scoped with volcano gangs and kueue queues": {
        "scheduling": {"gangScheduler": "volcano", "queueSystem": "kueue"},
    },
    "cluster-wide with scheduler-plugins gangs": {
        "rbac": {"scope": "cluster"},
        "scheduling": {"gangScheduler": "scheduler-plugins", "schedulerName": "coscheduler"},
    },
}
MONITORING_KINDS = {"ServiceMonitor", "PodMonitor"}

# kubernetes-validate knows only built-in kinds. This is the part of the
# monitoring.coreos.com/v1 schema the chart uses (field names and the Duration
# pattern as the Prometheus Operator defines them), closed so a misspelt field fails.
_DURATION = {"type": "string",
             "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
_LABEL_SELECTOR = {"type": "object", "additionalProperties": False, "properties": {
    "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
    "matchExpressions": {"type": "array", "items": {
        "type": "object", "required": ["key", "operator"], "additionalProperties": False,
        "properties": {"key": {"type": "string"}, "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                       "values": {"type": "array", "items": {"type": "string"}}}}}}}
_NAMESPACE_SELECTOR = {"type": "object", "additionalProperties": False, "properties": {
    "any": {"type": "boolean"}, "matchNames": {"type": "array", "items": {"type": "string"}}}}
_RELABELING = {"type": "object", "additionalProperties": False, "properties": {
    "sourceLabels": {"type": "array", "items": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$"}},
    "targetLabel": {"type": "string"}, "action": {"type": "string"}, "regex": {"type": "string"},
    "replacement": {"type": "string"}, "separator": {"type": "string"}}}
_ENDPOINT = {"type": "object", "additionalProperties": False, "required": ["port"], "properties": {
    "port": {"type": "string"}, "path": {"type": "string"}, "interval": _DURATION, "scrapeTimeout": _DURATION,
    "relabelings": {"type": "array", "items": _RELABELING}}}


def _monitor_schema(endpoints_field: str) -> dict:
    return {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"], "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {"type": "object", "additionalProperties": False, "required": ["selector", endpoints_field],
                 "properties": {"selector": _LABEL_SELECTOR, "namespaceSelector": _NAMESPACE_SELECTOR,
                                endpoints_field: {"type": "array", "minItems": 1, "items": _ENDPOINT}}}}}


MONITOR_SCHEMAS = {"ServiceMonitor": _monitor_schema("endpoints"), "PodMonitor": _monitor_schema("podMetricsEndpoints")}


@pytest.fixture()
def install(installed_release):
    """`install(values) -> (objects, notes)` of release RELEASE in NAMESPACE (shared per values)."""
    return lambda values: installed_release(values, RELEASE, NAMESPACE)


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [obj for obj in objects if obj["kind"] == kind]


def the(objects: list[dict], kind: str) -> dict:
    [obj] = by_kind(objects, kind)
    return obj


def triples(rules: list[dict]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in rules for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def chart_rules() -> dict:
    return yaml.safe_load((CHART / "files" / "rbac-rules.yaml").read_text())


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_every_installed_object_passes_the_kubernetes_schema(install, values):
    objects, _ = install(values)
    assert len(objects) >= 4  # at least ServiceAccount, ClusterRole(+Binding), Deployment
    for obj in objects:
        if obj["kind"] in MONITORING_KINDS:
            jsonschema.validate(obj, MONITOR_SCHEMAS[obj["kind"]])
            continue
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {error.message} at {list(error.path)}")


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_every_object_is_labelled_as_part_of_the_release(install, values):
    objects, _ = install(values)
    for obj in objects:
        labels = obj["metadata"].get("labels", {})
        assert labels.get("app.kubernetes.io/instance") == RELEASE, obj["metadata"]["name"]
        assert labels.get("app.kubernetes.io/part-of") == "psjob"
        assert obj["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_the_operator_runs_as_one_unprivileged_replica(install, values):
    objects, _ = install(values)
    deployment = the(objects, "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    [container] = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert not security.get("privileged", False)
    # A read-only root needs a writable /tmp.
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert container["command"] == ["psjob-operator"]
    assert "--metrics-port=8080" in container["args"] and "--liveness-port=8081" in container["args"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert pod["serviceAccountName"] == the(objects, "ServiceAccount")["metadata"]["name"]


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_rbac_grants_exactly_the_chart_rules_where_the_operator_watches(install, values):
    objects, _ = install(values)
    rules = chart_rules()
    scheduling = values.get("scheduling", {})
    gang = scheduling.get("gangScheduler", "none")
    queue = scheduling.get("queueSystem", "none")
    # Only the chosen gang scheduler's podgroups (and queue system's rules) are added.
    rules["namespaced"] = rules["namespaced"] + rules["gangScheduler"].get(gang, []) + \
        rules["queueSystem"].get(queue, [])
    args = the(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--gang-scheduler={gang}" in args
    assert f"--queue-system={scheduling.get('queueSystem', 'none')}" in args
    assert [a for a in args if a.startswith("--scheduler-name")] == (
        [f"--scheduler-name={scheduling['schedulerName']}"] if "schedulerName" in scheduling
        else [])
    account = the(objects, "ServiceAccount")["metadata"]
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    cluster_scope = values.get("rbac", {}).get("scope", "cluster") == "cluster"
    cluster_rules = rules["cluster"] + (rules["namespaced"] if cluster_scope else [])
    if cluster_rules:
        cluster_role, binding = the(objects, "ClusterRole"), the(objects, "ClusterRoleBinding")
        # Least privilege: in namespace scope the ClusterRole holds only what no Role can grant.
        assert triples(cluster_role["rules"]) == triples(cluster_rules)
        assert binding["roleRef"]["name"] == cluster_role["metadata"]["name"] and binding["subjects"] == [subject]
    else:
        assert by_kind(objects, "ClusterRole") == [] and by_kind(objects, "ClusterRoleBinding") == []
    if cluster_scope:
        assert "--all-namespaces" in args and not any(a.startswith("--namespace") for a in args)
        assert by_kind(objects, "Role") == [] and by_kind(objects, "RoleBinding") == []
        return
    watched = values.get("rbac", {}).get("watchNamespaces") or [NAMESPACE]
    assert [a for a in args if a.startswith("--namespace")] == [f"--namespace={ns}" for ns in watched]
    assert "--all-namespaces" not in args
    roles = {role["metadata"]["namespace"]: role for role in by_kind(objects, "Role")}
    assert sorted(roles) == sorted(watched)
    for role in roles.values():
        assert triples(role["rules"]) == triples(rules["namespaced"])
    bindings = by_kind(objects, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == sorted(watched)
    for role_binding in bindings:
        assert role_binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                           "name": roles[role_binding["metadata"]["namespace"]]["metadata"]["name"]}
        assert role_binding["subjects"] == [subject]


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_metrics_objects_follow_the_values_and_select_what_they_scrape(install, values):
    objects, _ = install(values)
    monitoring = values.get("monitoring", {})
    services = by_kind(objects, "Service")
    pod_template = the(objects, "Deployment")["spec"]["template"]
    if values.get("metrics", {}).get("service", {}).get("enabled", True):
        [service] = services
        assert service["spec"]["selector"].items() <= pod_template["metadata"]["labels"].items()
        assert service["spec"]["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "metrics",
                                             "protocol": "TCP"}]
    else:
        assert services == []

    monitors = by_kind(objects, "ServiceMonitor")
    if monitoring.get("serviceMonitor", {}).get("enabled"):
        [monitor] = monitors
        assert monitor["spec"]["selector"]["matchLabels"].items() <= services[0]["metadata"]["labels"].items()
        assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
        assert monitor["metadata"]["labels"].items() >= monitoring["serviceMonitor"].get("labels", {}).items()
    else:
        assert monitors == []

    pod_monitors = by_kind(objects, "PodMonitor")
    if monitoring.get("podMonitor", {}).get("enabled"):
        [pod_monitor] = pod_monitors
        spec = pod_monitor["spec"]
        assert spec["selector"] == {"matchExpressions": [{"key": "psjob.dev/job-name", "operator": "Exists"}]}
        endpoint = spec["podMetricsEndpoints"][0]
        assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
        assert {r["targetLabel"] for r in endpoint["relabelings"]} == {"psjob_job", "psjob_role"}
        if values.get("rbac", {}).get("scope", "cluster") == "cluster":
            assert spec["namespaceSelector"] == {"any": True}
        else:
            assert spec["namespaceSelector"] == {"matchNames": values["rbac"]["watchNamespaces"]}
    else:
        assert pod_monitors == []

    dashboards = [cm for cm in by_kind(objects, "ConfigMap") if cm["metadata"]["name"].endswith("-dashboard")]
    if monitoring.get("grafanaDashboard", {}).get("enabled"):
        [dashboard] = dashboards
        assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert dashboard["metadata"]["namespace"] == monitoring["grafanaDashboard"].get("namespace", NAMESPACE)
        shipped = json.loads((CHART / "files" / "dashboards" / "psjob.json").read_text())
        assert json.loads(dashboard["data"]["psjob.json"]) == shipped
    else:
        assert dashboards == []


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_the_crd_is_installed_and_kept_on_uninstall_unless_disabled(install, values):
    objects, _ = install(values)
    crds = by_kind(objects, "CustomResourceDefinition")
    if values.get("crds", {}).get("install", True) is False:
        assert crds == []
        return
    [crd] = crds
    assert crd["metadata"]["name"] == "parameterserverjobs.psjob.dev"
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    source = yaml.safe_load((CHART / "files" / "crds" / "parameterserverjobs.psjob.dev.yaml").read_text())
    assert crd["spec"] == source["spec"]


def _notes_job(notes: str) -> dict:
    match = re.search(r"<<'JOB' \| kubectl apply -f -\n(.*?)\n\s*JOB\n", notes, re.S)
    assert match, notes
    return yaml.safe_load(textwrap.dedent(match.group(1)))


@pytest.mark.parametrize("values, namespace", [
    ({}, None), ({"rbac": {"scope": "namespace", "watchNamespaces": ["team-a"]}}, "team-a")])
def test_notes_show_a_first_parameter_server_job_that_the_crd_accepts(install, values, namespace):
    objects, notes = install(values)
    assert f"kubectl -n {NAMESPACE} rollout status deployment/{RELEASE}-psjob-operator" in notes
    job = _notes_job(notes)
    crd = the(objects, "CustomResourceDefinition")
    assert job["apiVersion"] == f"{crd['spec']['group']}/v1alpha1"
    assert job["kind"] == crd["spec"]["names"]["kind"]
    # Cluster scope: the job goes wherever kubectl points; namespace scope: a watched one.
    assert job["metadata"].get("namespace") == namespace
    [version] = [v for v in crd["spec"]["versions"] if job["apiVersion"].endswith("/" + v["name"])]
    jsonschema.validate(job, version["schema"]["openAPIV3Schema"])
    # The runtime's own parser (used by the operator and `psjob run`) accepts it too.
    from psjob.foundation.jobspec import parse_job  # noqa: PLC0415
    from psjob.training.options import parse as parse_train_options  # noqa: PLC0415

    parsed = parse_job(job)
    assert parsed.spec.pserver.replicas == 2 and parsed.spec.worker.replicas == 2
    # A real parameter-server job: psjob's own entrypoints (`psjob pserver` / `psjob
    # worker`) with arguments the built-in CTR job accepts, from the chart's CPU image (the
    # operator runs that image's `-operator` variant: the CPU image plus the operator's extra).
    assert not parsed.spec.command
    parse_train_options(list(parsed.spec.args))
    deployment = the(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert f"{parsed.spec.image}-operator" == deployment["image"]


def test_upgrade_to_cluster_scope_replaces_the_roles_with_a_cluster_role(run_helm, kube_api):
    outcomes = run_helm(kube_api, [
        {"action": "install", "release": RELEASE, "namespace": NAMESPACE, "values": {}},
        {"action": "upgrade", "release": RELEASE, "namespace": NAMESPACE, "values": {"rbac": {"scope": "cluster"}}},
    ])
    assert [o["ok"] for o in outcomes] == [True, True], outcomes
    objects = kube_api.objects()
    assert by_kind(objects, "Role") == [] and by_kind(objects, "RoleBinding") == []
    rules = chart_rules()
    assert triples(the(objects, "ClusterRole")["rules"]) == triples(rules["cluster"] + rules["namespaced"])
    assert "--all-namespaces" in the(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]


def test_uninstall_removes_the_operator_but_keeps_the_crd_and_its_jobs(run_helm, kube_api):
    outcomes = run_helm(kube_api, [
        {"action": "install", "release": RELEASE, "namespace": NAMESPACE, "values": {}},
        {"action": "uninstall", "release": RELEASE, "namespace": NAMESPACE},
    ])
    assert [o["ok"] for o in outcomes] == [True, True], outcomes
    assert [obj["kind"] for obj in kube_api.objects()] == ["CustomResourceDefinition"]


def _prometheus_label(name: str) -> str:
    """How Prometheus spells a Kubernetes label in __meta_kubernetes_pod_label_*."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def test_the_pod_monitor_selects_and_labels_pods_the_way_the_operator_builds_them(install):
    from psjob_operator import naming  # noqa: PLC0415 — the operator's names for its children

    objects, _ = install({"monitoring": {"podMonitor": {"enabled": True}}})
    spec = the(objects, "PodMonitor")["spec"]
    assert spec["selector"]["matchExpressions"][0]["key"] == naming.LABEL_JOB
    [endpoint] = spec["podMetricsEndpoints"]
    assert endpoint["port"] == naming.PORT_METRICS
    sources = {r["targetLabel"]: r["sourceLabels"] for r in endpoint["relabelings"]}
    assert sources["psjob_job"] == [f"__meta_kubernetes_pod_label_{_prometheus_label(naming.LABEL_JOB)}"]
    assert sources["psjob_role"] == [f"__meta_kubernetes_pod_label_{_prometheus_label(naming.LABEL_ROLE)}"]


def test_with_your_own_rbac_and_service_account_the_chart_creates_neither(install):
    values = {"rbac": {"create": False}, "serviceAccount": {"create": False, "name": "platform-psjob"}}
    objects, _ = install(values)
    kinds = {obj["kind"] for obj in objects}
    assert kinds.isdisjoint({"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})
    assert the(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "platform-psjob"
