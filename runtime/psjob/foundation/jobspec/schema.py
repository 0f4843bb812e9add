"""The ParameterServerJob's vocabulary: its API identity, the field metadata (Schema,
Rule, spec_field) and the type classification (describe, fields_of) that the parser,
the serializer and the operator's CRD generator walk."""
from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from typing import Any, NewType

from psjob.foundation import roles

API_GROUP = "psjob.dev"
API_VERSION = "v1alpha1"
API_VERSION_FULL = f"{API_GROUP}/{API_VERSION}"
KIND = "ParameterServerJob"
PLURAL = "parameterserverjobs"
SINGULAR = "parameterserverjob"
SHORT_NAMES = ("psjob", "psj")
DEFAULT_GEO_K_STEPS = roles.DEFAULT_GEO_K_STEPS
# Child names must stay valid: the pserver StatefulSet `<name>-pserver` stamps
# pods with a controller-revision-hash label `<sts>-<10 chars>` (<= 63), so the
# StatefulSet name is capped at 52 and the job name at 52 - len("-pserver").
MAX_JOB_NAME_LENGTH = 44
DNS_1035 = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS_1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
QUANTITY = r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
S3_URI = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$"

RawObject = NewType("RawObject", dict)
"""A Kubernetes object passed through as is (EnvVarSource, NetworkPolicyPeer)."""
PodTemplate = NewType("PodTemplate", dict)
"""A Kubernetes PodTemplateSpec (metadata + spec); the operator merges psjob's pod into it."""


class JobSpecError(ValueError):
    """A job spec problem: `field` is the path, the message says the fix."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class Rule:
    """A cross-field rule: a CEL expression for the API server and a Python predicate for
    `psjob run` and the operator, with one error `message` both report.

    `broken(obj)` is True when the object breaks the rule; `field` is the sub-path the
    error is reported at (CEL `fieldPath`). A rule whose Python side can say more than the
    CEL message (the value at fault, an example of a good one) gives `problem` instead:
    it returns None when the object is fine, else its own error text.
    """
    cel: str
    message: str
    broken: Callable[[Any], bool] | None = None
    field: str = ""
    problem: Callable[[Any], str | None] | None = None

    def __post_init__(self) -> None:
        if (self.broken is None) == (self.problem is None):
            raise TypeError(f"Rule {self.cel!r}: give exactly one of broken and problem")

    def check(self, obj: Any) -> str | None:
        """None when `obj` keeps the rule, else the error text."""
        if self.problem is not None:
            return self.problem(obj)
        assert self.broken is not None
        return self.message if self.broken(obj) else None


@dataclass(frozen=True)
class Schema:
    key: str
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    max_items: int | None = None
    quantity: bool = False
    list_map_key: str | None = None
    rules: tuple[Rule, ...] = ()
    fix: str = ""


def spec_field(key: str, doc: str, default: Any = MISSING, *, factory: Any = MISSING,
               **schema: Any) -> Any:
    return dataclasses.field(default=default, default_factory=factory,
                             metadata={"schema": Schema(key=key, doc=doc, **schema)})


# --- type classification shared with the CRD generator -----------------------------

@dataclass(frozen=True)
class TypeInfo:
    kind: str  # "str" "int" "bool" "enum" "object" "list" "map" "raw" "podtemplate"
    optional: bool = False
    inner: Any = None  # enum class, dataclass, or the list item TypeInfo


def describe(tp: Any) -> TypeInfo:
    optional = False
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        optional, tp = True, non_none[0]
        args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if tp is RawObject:
        return TypeInfo("raw", optional)
    if tp is PodTemplate:
        return TypeInfo("podtemplate", optional)
    if origin is tuple:
        return TypeInfo("list", optional, describe(args[0]))
    if origin is dict:
        return TypeInfo("map", optional)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return TypeInfo("enum", optional, tp)
    if dataclasses.is_dataclass(tp):
        return TypeInfo("object", optional, tp)
    if tp in (str, int, bool):
        return TypeInfo(tp.__name__, optional)
    raise TypeError(f"unsupported spec field type {tp!r}")


@dataclass(frozen=True)
class FieldInfo:
    name: str
    schema: Schema
    type: TypeInfo
    default: Any  # MISSING when required
    has_factory: bool


def fields_of(cls: type) -> list[FieldInfo]:
    hints = typing.get_type_hints(cls)
    result = []
    for f in dataclasses.fields(cls):
        result.append(FieldInfo(f.name, f.metadata["schema"], describe(hints[f.name]),
                                f.default, f.default_factory is not MISSING))
    return result
