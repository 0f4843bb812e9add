"""The chart's inputs: lint, values schema, documentation, and the copies it keeps of other sources."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import tomllib

import jsonschema
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "psjob-operator"
SYNC = ROOT / "charts" / "sync-from-sources.py"
CRD_SOURCE = ROOT / "crds" / "parameterserverjobs.psjob.dev.yaml"
CRD_COPY = CHART / "files" / "crds" / "parameterserverjobs.psjob.dev.yaml"
# Helm's lint severities (helm.sh/helm/v3/pkg/lint/support): 1 info, 2 warning, 3 error.
LINT_WARNING = 2


def triples(rules: list[dict]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in rules for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_real_helm_lints_the_chart_without_warnings_or_errors(run_helm, kube_api):
    [outcome] = run_helm(kube_api, [{"action": "lint"}])
    assert outcome["ok"], outcome
    result = outcome["result"]
    assert result["TotalChartsLinted"] == 1 and not result["Errors"]
    assert [m for m in result["Messages"] if m["Severity"] >= LINT_WARNING] == []


BAD_VALUES = {
    "an unknown rbac scope": ({"rbac": {"scope": "galaxy"}}, "/rbac/scope"),
    "a port given as a string": ({"operator": {"metricsPort": "8080"}}, "/operator/metricsPort"),
    "a port out of range": ({"metrics": {"service": {"port": 70000}}}, "/metrics/service/port"),
    "a misspelt top-level key": ({"rbacc": {"scope": "cluster"}}, "rbacc"),
    "a misspelt nested key": ({"monitoring": {"serviceMonitor": {"enable": True}}}, "enable"),
    "an invalid pull policy": ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    "a watched namespace that is not a DNS label": (
        {"rbac": {"watchNamespaces": ["Team_A"]}}, "/rbac/watchNamespaces/0"),
    "a scrape interval without a unit": (
        {"monitoring": {"podMonitor": {"interval": "15"}}}, "/monitoring/podMonitor/interval"),
}


@pytest.mark.parametrize(("values", "field"), BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_a_bad_value_is_rejected_at_install_time_and_nothing_is_applied(run_helm, kube_api, values, field):
    [outcome] = run_helm(kube_api, [{"action": "install", "release": "ps", "namespace": "ns", "values": values}])
    assert not outcome["ok"]
    assert "values don't meet the specifications of the schema" in outcome["error"]
    assert field in outcome["error"], outcome["error"]  # Helm names the field by JSON pointer
    assert kube_api.objects() == []


def test_a_service_monitor_without_the_metrics_service_is_refused_with_the_fix(run_helm, kube_api):
    values = {"metrics": {"service": {"enabled": False}}, "monitoring": {"serviceMonitor": {"enabled": True}}}
    [outcome] = run_helm(kube_api, [{"action": "install", "release": "ps", "namespace": "ns", "values": values}])
    assert not outcome["ok"]
    assert "needs metrics.service.enabled=true" in outcome["error"]
    assert kube_api.objects() == []


def test_the_same_port_for_metrics_and_liveness_is_refused_with_the_fix(run_helm, kube_api):
    values = {"operator": {"metricsPort": 8080, "livenessPort": 8080}}
    [outcome] = run_helm(kube_api, [{"action": "install", "release": "ps", "namespace": "ns", "values": values}])
    assert not outcome["ok"]
    assert "operator.metricsPort and operator.livenessPort are both 8080" in outcome["error"]
    assert kube_api.objects() == []


def test_the_extra_args_the_values_suggest_are_flags_the_operator_accepts():
    from psjob_operator.__main__ import parse_args  # noqa: PLC0415

    text = (CHART / "values.yaml").read_text()
    suggested = re.search(r"Extra command-line arguments.*?\(e\.g\. (\[.*?\])", text, re.S).group(1)
    # The chart's own arguments first, then the suggestion; argparse exits on an unknown flag.
    parse_args(["--all-namespaces", *yaml.safe_load(suggested)])


def test_monitoring_without_the_prometheus_operator_crds_fails_naming_the_kind(
        run_helm, kube_api_without_monitoring_crds):
    values = {"monitoring": {"serviceMonitor": {"enabled": True}}}
    [outcome] = run_helm(kube_api_without_monitoring_crds,
                         [{"action": "install", "release": "ps", "namespace": "ns", "values": values}])
    assert not outcome["ok"]
    assert 'no matches for kind "ServiceMonitor"' in outcome["error"]


def test_the_default_values_satisfy_the_schema_which_allows_no_unknown_keys():
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    jsonschema.validate(values, schema)
    with pytest.raises(jsonschema.ValidationError, match="Additional properties"):
        jsonschema.validate({**values, "replicas": 2}, schema)


def _schema_fields(schema: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of the values a user sets: leaves of the schema's nested properties."""
    fields = []
    for name, sub in schema.get("properties", {}).items():
        path = prefix + (name,)
        fields.extend(_schema_fields(sub, path) if "properties" in sub else [path])
    return fields


def _documented_paths(text: str) -> set[tuple[str, ...]]:
    """Key paths in values.yaml whose line is directly preceded by a comment."""
    documented, stack, previous = set(), [], ""
    for line in text.splitlines():
        match = re.match(r"^( *)([A-Za-z][\w.-]*):", line)
        if match:
            depth = len(match.group(1)) // 2
            stack = stack[:depth] + [match.group(2)]
            if previous.lstrip().startswith("#"):
                documented.add(tuple(stack))
        if line.strip():
            previous = line
    return documented


def test_values_yaml_documents_every_field_the_schema_defines():
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    documented = _documented_paths((CHART / "values.yaml").read_text())
    undocumented = [".".join(path) for path in _schema_fields(schema) if path not in documented]
    assert undocumented == []


def test_the_chart_app_version_is_the_package_version():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"]


def test_the_chart_crd_is_a_byte_identical_copy_of_the_repository_crd():
    assert CRD_SOURCE.exists(), f"{CRD_SOURCE} is missing"
    assert CRD_COPY.read_bytes() == CRD_SOURCE.read_bytes(), "run: python charts/sync-from-sources.py"


def _required_rbac() -> set[tuple[str, str, str]]:
    from psjob_operator.rbac import REQUIRED_RBAC  # noqa: PLC0415
    triples = set()
    for entry in REQUIRED_RBAC:  # Permission(api_group, resource, verbs) or a 3-tuple
        group, resource, verbs = ((entry.api_group, entry.resource, entry.verbs)
                                  if hasattr(entry, "api_group") else entry)
        triples |= {(group, resource, verb) for verb in ([verbs] if isinstance(verbs, str) else verbs)}
    return triples


def test_the_chart_rbac_grants_exactly_the_operators_required_rbac():
    required = _required_rbac()
    rules = yaml.safe_load((CHART / "files" / "rbac-rules.yaml").read_text())
    granted = triples(rules["cluster"]) | triples(rules["namespaced"])
    assert granted == required, "run: python charts/sync-from-sources.py"


def test_the_sync_script_finds_no_stale_copy():
    proc = subprocess.run([sys.executable, str(SYNC), "--check"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "stale:" not in proc.stdout


def test_an_existing_service_account_must_be_named(run_helm, kube_api):
    values = {"serviceAccount": {"create": False}}
    [outcome] = run_helm(kube_api, [{"action": "install", "release": "ps", "namespace": "ns", "values": values}])
    assert not outcome["ok"]
    assert "serviceAccount.name is required when serviceAccount.create is false" in outcome["error"]
    assert kube_api.objects() == []


def test_the_chart_description_names_the_kinds_the_operator_creates_for_servers_and_workers():
    from psjob.foundation.jobspec import load_job_file  # noqa: PLC0415
    from psjob_operator import builders  # noqa: PLC0415

    job = load_job_file(str(ROOT / "examples" / "ctr-cpu.yaml"))
    kinds = {c["kind"] for c in builders.build_children(job, builders.Owner("j", "u"), "t")}
    description = " ".join(yaml.safe_load((CHART / "Chart.yaml").read_text())["description"].split())
    assert "StatefulSet" in kinds and "StatefulSets" in description
    assert "Deployment" not in kinds and "Deployment" not in description
    assert "Job" in kinds and "worker Jobs" in description
