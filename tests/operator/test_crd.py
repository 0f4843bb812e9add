"""The CRD: generated from the spec model, valid, and in agreement with the examples."""
from __future__ import annotations

import pathlib

import jsonschema
import kubernetes_validate
import pytest
import yaml

from psjob.foundation import jobspec
from psjob_operator import crd

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def schema():
    return crd.build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def validator():
    return jsonschema.Draft7Validator(schema())


def test_the_checked_in_crd_is_exactly_what_the_model_generates():
    checked_in = (ROOT / crd.CRD_FILE).read_text()
    assert checked_in == crd.render(), (
        "crds/ is stale: run python -m psjob_operator.crd --output " + crd.CRD_FILE)


def test_the_crd_is_a_valid_kubernetes_object():
    kubernetes_validate.validate(yaml.safe_load((ROOT / crd.CRD_FILE).read_text()),
                                 kubernetes_validate.latest_version(), strict=True)


def test_the_crd_names_status_subresource_and_printer_columns():
    spec = crd.build_crd()["spec"]
    assert spec["names"]["shortNames"] == ["psjob", "psj"]
    version = spec["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == \
        ["Phase", "Pservers", "Workers", "Checkpoint", "Lag", "Stream", "Mode", "Age"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_validates_against_the_crd_schema(example):
    document = yaml.safe_load(example.read_text())
    errors = sorted(validator().iter_errors(document), key=str)
    assert errors == []


@pytest.mark.parametrize("spec_patch, path", [
    ({"mode": "fast"}, ["spec", "mode"]),
    ({"pserver": {"replicas": 0}}, ["spec", "pserver", "replicas"]),
    ({"worker": {"resources": {"limits": {"memory": "lots"}}}},
     ["spec", "worker", "resources", "limits", "memory"]),
    ({"runPolicy": {"cleanPodPolicy": "Sometimes"}}, ["spec", "runPolicy", "cleanPodPolicy"]),
    ({"pserver": {"port": 80}}, ["spec", "pserver", "port"]),
])
def test_the_schema_rejects_what_the_parser_rejects(spec_patch, path):
    document = {"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                "metadata": {"name": "j"}, "spec": {"image": "x", **spec_patch}}
    errors = list(validator().iter_errors(document))
    assert [list(e.absolute_path) for e in errors] == [path]
    with pytest.raises(jobspec.JobSpecError) as info:
        jobspec.parse_job(document)
    assert info.value.field == ".".join(path)


def test_defaults_in_the_schema_are_the_models_defaults():
    props = schema()["properties"]["spec"]["properties"]
    assert props["mode"]["default"] == "sync"
    assert props["pserver"]["properties"]["port"]["default"] == 6174
    assert props["runPolicy"]["properties"]["cleanPodPolicy"]["default"] == "Running"
    assert props["checkpoint"]["default"] == {}
    assert schema()["properties"]["spec"]["required"] == ["image"]


def test_every_cel_rule_carries_the_same_message_the_parser_reports():
    rules = []

    def walk(node):
        if isinstance(node, dict):
            rules.extend(node.get("x-kubernetes-validations", []))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema())
    model_rules = [*jobspec.NAME_RULES, *jobspec.JobSpec.RULES, *jobspec.CheckpointSpec.RULES,
                   *jobspec.EnvVar.RULES, *jobspec.Toleration.RULES]
    messages = {r["message"] for r in rules}
    for rule in model_rules:
        assert rule.message in messages
    assert all(r["rule"] and r["message"] for r in rules)


def test_the_operator_docs_describe_every_spec_field():
    docs = (ROOT / "docs" / "user" / "operator.md").read_text()
    missing = []

    def walk(cls, prefix):
        for info in jobspec.fields_of(cls):
            path = f"{prefix}.{info.schema.key}"
            generic = path
            for role in ("pserver", "worker", "heterWorker"):
                generic = generic.replace(f"spec.{role}.", "spec.<role>.")
            if f"`{path}`" not in docs and generic not in docs:
                missing.append(path)
            if info.type.kind == "object" and info.type.inner is not jobspec.Resources:
                walk(info.type.inner, path)
    walk(jobspec.JobSpec, "spec")
    assert missing == []
