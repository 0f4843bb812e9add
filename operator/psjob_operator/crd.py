"""Generate the ParameterServerJob CRD from the typed spec model.

The spec half of the openAPIV3Schema is derived field by field from
`psjob.foundation.jobspec` (keys, descriptions, defaults, ranges, patterns, enums, list
semantics, CEL rules); the status half from `status.py`'s enums. The
checked-in `crds/parameterserverjobs.psjob.dev.yaml` is this module's output
and a test fails when they differ, so the cluster's validation and the
parser never drift. Regenerate with:

    python -m psjob_operator.crd --output crds/parameterserverjobs.psjob.dev.yaml
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING
from typing import Any

import yaml

from psjob.foundation import jobspec
from psjob.foundation.jobspec import FieldInfo, Rule, TypeInfo
from psjob_operator.status import ConditionStatus, Phase

CRD_NAME = f"{jobspec.PLURAL}.{jobspec.API_GROUP}"
CRD_FILE = f"crds/{CRD_NAME}.yaml"


def _rules(rules: tuple[Rule, ...]) -> list[dict[str, str]]:
    out = []
    for rule in rules:
        item = {"rule": rule.cel, "message": rule.message}
        if rule.field:
            item["fieldPath"] = rule.field
        out.append(item)
    return out


def _type_schema(t: TypeInfo, info: FieldInfo | None) -> dict[str, Any]:
    schema = info.schema if info is not None else None
    if t.kind == "object":
        return object_schema(t.inner)
    if t.kind == "raw":
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if t.kind == "podtemplate":
        return pod_template_schema()
    if t.kind == "enum":
        return {"type": "string", "enum": [m.value for m in t.inner]}
    if t.kind == "bool":
        return {"type": "boolean"}
    if t.kind == "int":
        out: dict[str, Any] = {"type": "integer", "format": "int32"}
        if schema and schema.minimum is not None:
            out["minimum"] = schema.minimum
        if schema and schema.maximum is not None:
            out["maximum"] = schema.maximum
        return out
    if t.kind == "map":
        value = _quantity() if schema and schema.quantity else {"type": "string"}
        return {"type": "object", "additionalProperties": value}
    if t.kind == "list":
        out = {"type": "array", "items": _type_schema(t.inner, None)}
        if schema and schema.max_items is not None:
            out["maxItems"] = schema.max_items
        if schema and schema.list_map_key:
            out["x-kubernetes-list-type"] = "map"
            out["x-kubernetes-list-map-keys"] = [schema.list_map_key]
        else:
            out["x-kubernetes-list-type"] = "atomic"
        return out
    if schema and schema.quantity:
        return _quantity()
    out = {"type": "string"}
    if schema:
        for attr, key in (("pattern", "pattern"), ("min_length", "minLength"),
                          ("max_length", "maxLength")):
            if getattr(schema, attr) is not None:
                out[key] = getattr(schema, attr)
    return out


def pod_template_schema() -> dict[str, Any]:
    """A PodTemplateSpec: metadata is closed (labels and annotations, the only fields a
    pod template's metadata may carry here); the PodSpec is open (every Kubernetes pod
    field, checked by the API server when the operator creates the StatefulSet or Job)."""
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": string_map,
                                                      "annotations": string_map}},
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}


def _quantity() -> dict[str, Any]:
    # The shape Kubernetes uses for resource.Quantity (int or string).
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": jobspec.QUANTITY,
            "x-kubernetes-int-or-string": True}


def property_schema(info: FieldInfo) -> dict[str, Any]:
    schema = {"description": info.schema.doc, **_type_schema(info.type, info)}
    if info.default is not MISSING and info.default is not None:
        default = info.default
        schema["default"] = default.value if hasattr(default, "value") else default
    elif info.has_factory and info.type.kind == "object":
        schema["default"] = {}  # so the nested defaults apply when the block is omitted
    if info.schema.rules:
        schema["x-kubernetes-validations"] = _rules(info.schema.rules)
    return schema


def object_schema(cls: type) -> dict[str, Any]:
    fields = jobspec.fields_of(cls)
    schema: dict[str, Any] = {"type": "object",
                              "properties": {f.schema.key: property_schema(f) for f in fields}}
    required = [f.schema.key for f in fields if f.default is MISSING and not f.has_factory]
    if required:
        schema["required"] = required
    rules = getattr(cls, "RULES", ())
    if rules:
        schema["x-kubernetes-validations"] = _rules(rules)
    return schema


def _counts(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "integer", "format": "int32"}
                                             for n in names}}


def status_schema() -> dict[str, Any]:
    server = _counts("replicas", "ready", "restarts")
    return {"type": "object", "description": "Observed state, written by the operator.",
            "properties": {
                "phase": {"type": "string", "enum": [p.value for p in Phase]},
                "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["type"], "items": {
                                   "type": "object", "required": ["type", "status"],
                                   "properties": {
                                       "type": {"type": "string",
                                                "enum": [c.value for c in Phase]},
                                       "status": {"type": "string",
                                                  "enum": [s.value for s in ConditionStatus]},
                                       "reason": {"type": "string"},
                                       "message": {"type": "string"},
                                       "lastTransitionTime": {"type": "string",
                                                              "format": "date-time"}}}},
                "replicaStatuses": {"type": "object", "properties": {
                    "pserver": server, "heterWorker": server,
                    "worker": _counts("replicas", "active", "succeeded", "failed")}},
                "pserversReady": {"type": "string"},
                "workersReady": {"type": "string"},
                "startTime": {"type": "string", "format": "date-time"},
                "completionTime": {"type": "string", "format": "date-time"},
                "lastCheckpoint": {"type": "object", "properties": {
                    "step": {"type": "integer", "format": "int64"},
                    "path": {"type": "string"},
                    "time": {"type": "string", "format": "date-time"},
                    "stream": {"type": "object", "description": (
                        "Stream jobs (spec.data.stream): the newest folder this checkpoint holds, "
                        "its done-marker time, and lagSeconds: how long complete folders have "
                        "waited that it does not hold (0: none)."), "properties": {
                        "folder": {"type": "string"},
                        "folderTime": {"type": "string", "format": "date-time"},
                        "lagSeconds": {"type": "integer", "format": "int64"}}},
                    "failedSaves": {"type": "integer", "format": "int64", "description": (
                        "Checkpoint saves that failed (no manifest written) since pserver 0 "
                        "started.")},
                    "lastFailure": {"type": "object", "description": (
                        "The newest failed save: its step, why (e.g. No space left on device) "
                        "and when."), "properties": {
                        "step": {"type": "integer", "format": "int64"},
                        "error": {"type": "string"},
                        "time": {"type": "string", "format": "date-time"}}}}},
                "pserverResize": {"type": "object", "description": (
                    "The newest change of spec.pserver.replicas: from and to (pservers), the "
                    "newest checkpoint step seen while the old pservers ran, when it started and "
                    "when the new pservers and the trainers ran again."), "properties": {
                    "from": {"type": "integer", "format": "int32"},
                    "to": {"type": "integer", "format": "int32"},
                    "checkpointStep": {"type": "integer", "format": "int64"},
                    "startTime": {"type": "string", "format": "date-time"},
                    "completionTime": {"type": "string", "format": "date-time"}}},
                "observedGeneration": {"type": "integer", "format": "int64"},
            }}


PRINTER_COLUMNS = [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Pservers", "type": "string", "jsonPath": ".status.pserversReady",
     "description": "ready/desired pservers"},
    {"name": "Workers", "type": "string", "jsonPath": ".status.workersReady",
     "description": "running/desired workers, or done/desired"},
    {"name": "Checkpoint", "type": "integer", "jsonPath": ".status.lastCheckpoint.step",
     "description": "step of the newest checkpoint"},
    {"name": "Lag", "type": "integer", "jsonPath": ".status.lastCheckpoint.stream.lagSeconds",
     "description": "stream jobs: seconds complete folders have waited for a checkpoint"},
    {"name": "Stream", "type": "string", "jsonPath": ".status.lastCheckpoint.stream.folder",
     "description": "stream jobs: the newest folder the newest checkpoint holds", "priority": 1},
    {"name": "Mode", "type": "string", "jsonPath": ".spec.mode", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def build_crd() -> dict[str, Any]:
    root = {"type": "object", "description": "A parameter-server training job (psjob).",
            "required": ["spec"],
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"description": "Desired job.", **object_schema(jobspec.JobSpec)},
                "status": status_schema()},
            "x-kubernetes-validations": _rules(jobspec.NAME_RULES)}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/part-of": "psjob"}},
        "spec": {
            "group": jobspec.API_GROUP, "scope": "Namespaced",
            "names": {"kind": jobspec.KIND, "listKind": f"{jobspec.KIND}List",
                      "plural": jobspec.PLURAL, "singular": jobspec.SINGULAR,
                      "shortNames": list(jobspec.SHORT_NAMES), "categories": ["psjob"]},
            "versions": [{"name": jobspec.API_VERSION, "served": True, "storage": True,
                          "subresources": {"status": {}},
                          "additionalPrinterColumns": PRINTER_COLUMNS,
                          "schema": {"openAPIV3Schema": root}}]},
    }


HEADER = ("# Generated by `python -m psjob_operator.crd` from psjob.foundation.jobspec; do not edit.\n"
          "# tests/operator/test_crd.py fails when this file and the model differ.\n")


def render() -> str:
    text: str = yaml.safe_dump(build_crd(), sort_keys=False, width=100)
    return HEADER + text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", "-o", help="write here instead of stdout")
    args = parser.parse_args(argv)
    text = render()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
