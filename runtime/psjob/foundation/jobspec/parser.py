"""Parsing a ParameterServerJob document (a mapping, or a YAML file) into the model;
every problem is a JobSpecError naming the field path and the fix."""
from __future__ import annotations

import difflib
import io
import re
from collections.abc import Mapping
from dataclasses import MISSING
from typing import Any

from psjob.foundation.jobspec.model import NAME_RULES, JobSpec, Mode, ParameterServerJob
from psjob.foundation.jobspec.schema import API_VERSION_FULL, KIND, QUANTITY, JobSpecError, Schema, TypeInfo, fields_of


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
            raise JobSpecError("metadata.name", f"{name!r}: {problem}")
    namespace = metadata.get("namespace") or "default"
    if "spec" not in manifest:
        raise JobSpecError("spec", "is required: add spec with at least spec.image")
    raw = manifest["spec"]
    if isinstance(raw, Mapping) and raw.get("mode") == Mode.COLLECTIVE and raw.get("pserver") is not None:
        # The model's rule sees only a pserver section that differs from the default.
        raise JobSpecError("spec.pserver", "a collective job has no pservers (its trainers all-reduce "
                           "among themselves): remove spec.pserver, or use a parameter-server mode")
    spec = _parse_object(JobSpec, raw, "spec")
    check_process_strings(spec)
    return ParameterServerJob(name=name, namespace=namespace, spec=spec)


def load_job_file(path: str) -> ParameterServerJob:
    """Read and parse a job YAML file (one document). What cannot be read as a job — not
    UTF-8, too large, nested too deep, a number too long for Python's int conversion — is
    a JobSpecError naming the file and the problem."""
    import yaml

    with open(path, "rb") as handle:
        raw = handle.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise JobSpecError(path, f"is larger than {MAX_FILE_BYTES // 1024} KiB (Kubernetes stores an "
                           "object of at most 1.5 MiB): is it the job's YAML?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise JobSpecError(path, f"is not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} "
                           "(save the file as UTF-8)") from None
    # libyaml's parser when PyYAML has it: it bounds nesting (1000 levels) and is linear in
    # it, where the pure-Python scanner takes seconds for a thousand nested brackets.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stream = io.StringIO(text)
    stream.name = path  # YAML's error marks name the file
    try:
        documents = [d for d in yaml.load_all(stream, Loader=loader) if d is not None]
    except yaml.YAMLError as exc:
        raise JobSpecError(path, f"is not valid YAML: {exc}") from None
    except RecursionError:
        raise JobSpecError(path, "nests too deeply to read as YAML") from None
    except ValueError as exc:  # int("9" * 5000): Python caps integer strings at 4300 digits
        long_number = re.search(r"\d{1000,}", text)
        where = f" on line {text[:long_number.start()].count(chr(10)) + 1}" if long_number else ""
        raise JobSpecError(path, f"holds a value YAML cannot read{where}: {exc}") from None
    if len(documents) != 1:
        raise JobSpecError(path, f"must hold exactly one YAML document, found {len(documents)}")
    _check_depth(documents[0], path)
    return parse_job(documents[0])


MAX_FILE_BYTES = 1536 * 1024  # etcd's object size limit: no job is larger
MAX_DEPTH = 64                # a job nests a dozen levels; pod templates a few more


def _check_depth(doc: Any, path: str) -> None:
    """Refuse a document nested deeper than MAX_DEPTH (pass-through objects such as pod
    templates are walked recursively later). Iterative, so any depth is safe to check."""
    todo = [(doc, 1)]
    while todo:
        value, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise JobSpecError(path, f"nests mappings and lists more than {MAX_DEPTH} levels deep: "
                               "a job is a few levels deep; is it the job's YAML?")
        items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
        todo.extend((item, depth + 1) for item in items)


# Linux refuses to start a process with a NUL in an argument or environment entry, with an
# entry (NAME=value, an argument) of MAX_ARG_STRLEN = 128 KiB or more, or with arguments and
# environment larger than ARG_MAX together (2 MiB by default; the runtime adds its own
# variables, hence 1 MiB for the job's). The pod's container would fail to start alike.
MAX_ARG_BYTES = 128 * 1024
MAX_EXEC_BYTES = 1024 * 1024


def check_process_strings(spec: JobSpec) -> None:
    """Every command, argument and environment entry a role's processes start with can be
    passed to exec; JobSpecError naming the field otherwise."""
    roles_ = (("pserver", spec.pserver), ("worker", spec.worker), ("heterWorker", spec.heter_worker))
    for where, command in [("spec.command", spec.command)] + [
            (f"spec.{key}.command", role.command) for key, role in roles_ if role is not None]:
        if command and not command[0].strip():
            raise JobSpecError(f"{where}[0]", "is empty: name the program to run (or leave "
                               f"{where} out for psjob's own)")
    for key, role in roles_:
        if role is None:
            continue
        entries = [(f"spec.{key}.env[{i}].value", f"{var.name}={var.value or ''}")
                   for i, var in enumerate(role.env)]
        command = role.command or spec.command
        args = role.args or spec.args
        base = f"spec.{key}" if role.command else "spec"
        entries += [(f"{base}.command[{i}]", a) for i, a in enumerate(command)]
        entries += [(f"spec.{key}.args[{i}]" if role.args else f"spec.args[{i}]", a) for i, a in enumerate(args)]
        total = 0
        for field, text in entries:
            size = len(text.encode("utf-8", "surrogatepass"))
            total += size + 1
            if "\0" in text:
                raise JobSpecError(field, "contains a NUL character, which no process argument or "
                                   "environment variable can hold: remove it")
            if size >= MAX_ARG_BYTES:
                raise JobSpecError(field, f"is {size:,} bytes; Linux starts no process with an "
                                   f"argument or NAME=value entry of {MAX_ARG_BYTES // 1024} KiB or "
                                   "more: pass large data in a file")
        if total > MAX_EXEC_BYTES:
            raise JobSpecError(f"spec.{key}", f"the command, arguments and environment of its "
                               f"processes add up to {total:,} bytes, more than the "
                               f"{MAX_EXEC_BYTES // 1024} KiB a process may start with here: "
                               "pass large data in a file")


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
