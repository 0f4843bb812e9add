"""Parsing a ParameterServerJob document (a mapping, or a YAML file) into the model;
every problem is a JobSpecError naming the field path and the fix."""
from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Mapping
from dataclasses import MISSING
from typing import Any

from .schema import API_VERSION_FULL, JobSpecError, KIND, QUANTITY, Schema, TypeInfo, fields_of
from .model import JobSpec, NAME_RULES, ParameterServerJob


def parse_job(manifest: Mapping[str, Any]) -> ParameterServerJob:
    """Parse a ParameterServerJob document; raises JobSpecError naming field and fix."""
    if not isinstance(manifest, Mapping):
        raise JobSpecError("(document)", f"must be a mapping, got {type(manifest).__name__}")
    if manifest.get("apiVersion") != API_VERSION_FULL:
        raise JobSpecError("apiVersion", f"is {manifest.get('apiVersion')!r}: set apiVersion: "
                           f"{API_VERSION_FULL}")
    if manifest.get("kind") != KIND:
        raise JobSpecError("kind", f"is {manifest.get('kind')!r}: set kind: {KIND}")
    metadata = manifest.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        raise JobSpecError("metadata.name", "is required: name the job")
    name = metadata["name"]
    for rule in NAME_RULES:
        problem = rule.check(name)
        if problem:
            raise JobSpecError("metadata.name", f"{name!r} {problem}")
    namespace = metadata.get("namespace") or "default"
    if "spec" not in manifest:
        raise JobSpecError("spec", "is required: add spec with at least spec.image")
    spec = _parse_object(JobSpec, manifest["spec"], "spec")
    return ParameterServerJob(name=name, namespace=namespace, spec=spec)


def load_job_file(path: str) -> ParameterServerJob:
    """Read and parse a job YAML file (one document)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            documents = [d for d in yaml.safe_load_all(handle) if d is not None]
    except yaml.YAMLError as exc:
        raise JobSpecError(path, f"is not valid YAML: {exc}") from None
    if len(documents) != 1:
        raise JobSpecError(path, f"must hold exactly one YAML document, found {len(documents)}")
    return parse_job(documents[0])


def _parse_object(cls: type, value: Any, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise JobSpecError(path, f"must be a mapping, got {_kind(value)}")
    infos = fields_of(cls)
    by_key = {info.schema.key: info for info in infos}
    for key in value:
        if key not in by_key:
            close = difflib.get_close_matches(str(key), list(by_key), n=1)
            hint = f": did you mean {close[0]!r}?" if close else \
                f": known fields are {', '.join(sorted(by_key))}"
            raise JobSpecError(f"{path}.{key}", f"unknown field{hint}")
    kwargs = {}
    for info in infos:
        key_path = f"{path}.{info.schema.key}"
        if info.schema.key in value and value[info.schema.key] is not None:
            kwargs[info.name] = _parse_value(info.type, info.schema, value[info.schema.key],
                                             key_path)
        elif info.default is MISSING and not info.has_factory:
            raise JobSpecError(key_path, f"is required{_fix(info.schema)}")
    obj = cls(**kwargs)
    for rule in getattr(cls, "RULES", ()):
        problem = rule.check(obj)
        if problem:
            raise JobSpecError(path + rule.field, problem)
    return obj


def _parse_value(t: TypeInfo, schema: Schema, value: Any, path: str) -> Any:
    if t.kind == "list":
        if not isinstance(value, list):
            raise JobSpecError(path, f"must be a list, got {_kind(value)}")
        if schema.max_items is not None and len(value) > schema.max_items:
            raise JobSpecError(path, f"has {len(value)} items, at most {schema.max_items} allowed")
        items = tuple(_parse_value(t.inner, Schema(key="", doc=""), item, f"{path}[{i}]")
                      for i, item in enumerate(value))
        if schema.list_map_key:
            seen: set = set()
            for i, item in enumerate(items):
                key = getattr(item, schema.list_map_key)
                if key in seen:
                    raise JobSpecError(f"{path}[{i}].{schema.list_map_key}",
                                       f"duplicate {key!r}: each {schema.list_map_key} once")
                seen.add(key)
        for rule in schema.rules:
            problem = rule.check(items)
            if problem:
                raise JobSpecError(path, problem)
        return items
    if t.kind == "map":
        if not isinstance(value, Mapping):
            raise JobSpecError(path, f"must be a mapping, got {_kind(value)}")
        return {str(k): _scalar_string(v, schema, f"{path}.{k}") for k, v in value.items()}
    if t.kind == "object":
        return _parse_object(t.inner, value, path)
    if t.kind == "raw":
        if not isinstance(value, Mapping):
            raise JobSpecError(path, f"must be a mapping, got {_kind(value)}")
        return dict(value)
    if t.kind == "podtemplate":
        return _parse_pod_template(value, path)
    if t.kind == "enum":
        allowed = [m.value for m in t.inner]
        if value not in allowed:
            close = difflib.get_close_matches(str(value), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise JobSpecError(path, f"is {value!r}; use one of {', '.join(allowed)}{hint}")
        return t.inner(value)
    if t.kind == "bool":
        if not isinstance(value, bool):
            raise JobSpecError(path, f"must be true or false, got {value!r}")
        return value
    if t.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise JobSpecError(path, f"must be an integer, got {value!r}{_fix(schema)}")
        if schema.minimum is not None and value < schema.minimum:
            raise JobSpecError(path, f"is {value}, must be >= {schema.minimum}{_fix(schema)}")
        if schema.maximum is not None and value > schema.maximum:
            raise JobSpecError(path, f"is {value}, must be <= {schema.maximum}{_fix(schema)}")
        return value
    return _scalar_string(value, schema, path)


POD_TEMPLATE_KEYS = ("metadata", "spec")
POD_TEMPLATE_METADATA_KEYS = ("labels", "annotations")


def _parse_pod_template(value: Any, path: str) -> dict[str, Any]:
    """The shape of a PodTemplateSpec: {metadata: {labels, annotations}, spec: PodSpec}.
    The pod spec itself is checked by the operator's merge and by the API server."""
    if not isinstance(value, Mapping):
        raise JobSpecError(path, f"must be a mapping (a PodTemplateSpec), got {_kind(value)}")
    for key in value:
        if key not in POD_TEMPLATE_KEYS:
            raise JobSpecError(f"{path}.{key}", "unknown field: a PodTemplateSpec has metadata "
                               "and spec")
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise JobSpecError(f"{path}.metadata", f"must be a mapping, got {_kind(metadata)}")
    for key, items in metadata.items():
        if key not in POD_TEMPLATE_METADATA_KEYS:
            raise JobSpecError(f"{path}.metadata.{key}", "psjob names the pods: only labels and "
                               "annotations may be set")
        if not isinstance(items, Mapping):
            raise JobSpecError(f"{path}.metadata.{key}", f"must be a mapping, got {_kind(items)}")
        for k, v in items.items():
            if not isinstance(v, str):
                raise JobSpecError(f"{path}.metadata.{key}.{k}",
                                   f"must be a string, got {_kind(v)}: quote it")
    spec = value.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise JobSpecError(f"{path}.spec", f"must be a mapping (a PodSpec), got {_kind(spec)}")
    return {"metadata": {k: dict(v) for k, v in metadata.items()}, "spec": dict(spec)}


def _scalar_string(value: Any, schema: Schema, path: str) -> str:
    if schema.quantity and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise JobSpecError(path, f"must be a string, got {_kind(value)}{_fix(schema)}")
    if schema.quantity and not re.match(QUANTITY, value):
        raise JobSpecError(path, f"{value!r} is not a quantity{_fix(schema)}")
    if schema.min_length is not None and len(value) < schema.min_length:
        raise JobSpecError(path, f"must not be empty{_fix(schema)}")
    if schema.max_length is not None and len(value) > schema.max_length:
        raise JobSpecError(path, f"is longer than {schema.max_length} characters")
    if schema.pattern and not re.match(schema.pattern, value):
        raise JobSpecError(path, f"{value!r} does not match {schema.pattern}{_fix(schema)}")
    return value


def _fix(schema: Schema) -> str:
    return f": {schema.fix}" if schema.fix else ""


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value),
                                                                         type(value).__name__)
