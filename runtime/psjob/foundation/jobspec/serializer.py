"""The model back to a document with every default filled in (parse_job round-trips it)."""
from __future__ import annotations

import dataclasses
import enum
from typing import Any

from psjob.foundation.jobspec.model import ParameterServerJob
from psjob.foundation.jobspec.schema import API_VERSION_FULL, KIND, fields_of


def to_manifest(job: ParameterServerJob) -> dict[str, Any]:
    """The job as a document with every default filled in (parse_job round-trips it)."""
    return {"apiVersion": API_VERSION_FULL, "kind": KIND,
            "metadata": {"name": job.name, "namespace": job.namespace},
            "spec": _dump(job.spec)}


def _dump(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        out = {}
        for info in fields_of(type(value)):
            item = getattr(value, info.name)
            if item is None or item == () or item == {}:
                continue
            out[info.schema.key] = _dump(item)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value
