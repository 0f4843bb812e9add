#!/usr/bin/env python3
"""Copies into the chart what the chart must not redefine, or checks the copies.

The chart ships two things whose source of truth lives elsewhere:
- the ParameterServerJob CRD, crds/parameterserverjobs.psjob.dev.yaml, copied
  byte for byte to charts/psjob-operator/files/crds/ (Helm can only read files
  inside the chart directory);
- the operator's RBAC, psjob_operator.rbac.REQUIRED_RBAC (a list of
  (apiGroup, resource, verbs)), written to files/rbac-rules.yaml split into
  cluster-scoped and namespaced rules, plus psjob_operator.rbac.GANG_RBAC (the
  rules each gang scheduler adds) under "gangScheduler" and QUEUE_RBAC (each
  queue system's) under "queueSystem".

    python charts/sync-from-sources.py          # rewrite the chart copies
    python charts/sync-from-sources.py --check  # exit 1 if a copy is stale

A source that does not exist yet is reported and skipped. Run with the
project's .venv so `psjob_operator` imports.
"""
from __future__ import annotations

import argparse
import importlib
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "psjob-operator"
CRD_NAME = "parameterserverjobs.psjob.dev.yaml"
CRD_SOURCE = ROOT / "crds" / CRD_NAME
CRD_COPY = CHART / "files" / "crds" / CRD_NAME
RBAC_FILE = CHART / "files" / "rbac-rules.yaml"

# Resources that have no namespace: a Role cannot grant them, so they always
# go into the ClusterRole.
CLUSTER_SCOPED = frozenset({
    "customresourcedefinitions", "namespaces", "nodes", "persistentvolumes", "storageclasses",
    "clusterroles", "clusterrolebindings", "priorityclasses", "runtimeclasses",
    "validatingwebhookconfigurations", "mutatingwebhookconfigurations", "apiservices",
    "clusterkopfpeerings", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "certificatesigningrequests", "ingressclasses", "csidrivers", "csinodes",
})

RBAC_HEADER = """\
# The Kubernetes API access the operator needs, and nothing more.
# Source of truth: psjob_operator.rbac.REQUIRED_RBAC; regenerate this file with
# `python charts/sync-from-sources.py` (tests/helm checks the two are equal).
# "cluster": cluster-scoped resources (granted by a ClusterRole whatever the scope).
# "namespaced": granted per watched namespace (rbac.scope=namespace) or cluster-wide.
# "gangScheduler": namespaced rules added for scheduling.gangScheduler (GANG_RBAC).
# "queueSystem": namespaced rules added for scheduling.queueSystem (QUEUE_RBAC).
"""


def permission_fields(entry: object) -> tuple[str, str, object]:
    """(apiGroup, resource, verbs) of a REQUIRED_RBAC entry: a Permission or a 3-tuple."""
    if all(hasattr(entry, name) for name in ("api_group", "resource", "verbs")):
        return entry.api_group, entry.resource, entry.verbs  # type: ignore[attr-defined]
    try:
        group, resource, verbs = entry  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"REQUIRED_RBAC entries must be (apiGroup, resource, verbs), got {entry!r}") from None
    return group, resource, verbs


def rules_from_required(required: object) -> dict[str, list[dict]]:
    """Split REQUIRED_RBAC into the chart's {"cluster": [...], "namespaced": [...]} rules."""
    rules: dict[str, list[dict]] = {"cluster": [], "namespaced": []}
    for entry in required:  # type: ignore[attr-defined]
        group, resource, verbs = permission_fields(entry)
        verbs = [verbs] if isinstance(verbs, str) else list(verbs)
        base = resource.split("/", 1)[0]
        scope = "cluster" if base in CLUSTER_SCOPED else "namespaced"
        rules[scope].append({"apiGroups": [group], "resources": [resource], "verbs": verbs})
    return rules


def rule_triples(rules: list[dict]) -> set[tuple[str, str, str]]:
    """Every (apiGroup, resource, verb) a list of PolicyRules grants."""
    return {(group, resource, verb)
            for rule in rules
            for group in rule.get("apiGroups", [])
            for resource in rule.get("resources", [])
            for verb in rule.get("verbs", [])}


def load_required_rbac() -> object | None:
    sys.path.insert(0, str(ROOT / "operator"))
    try:
        module = importlib.import_module("psjob_operator.rbac")
    except ModuleNotFoundError as error:
        if error.name not in ("psjob_operator", "psjob_operator.rbac"):
            raise  # rbac.py exists but one of its own imports is missing
        return None
    return module.REQUIRED_RBAC, {"gangScheduler": getattr(module, "GANG_RBAC", {}),
                                  "queueSystem": getattr(module, "QUEUE_RBAC", {})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale copies, change nothing")
    args = parser.parse_args(argv)
    stale: list[str] = []

    if CRD_SOURCE.exists():
        source = CRD_SOURCE.read_bytes()
        if not CRD_COPY.exists() or CRD_COPY.read_bytes() != source:
            stale.append(f"{CRD_COPY.relative_to(ROOT)} differs from {CRD_SOURCE.relative_to(ROOT)}")
            if not args.check:
                CRD_COPY.parent.mkdir(parents=True, exist_ok=True)
                CRD_COPY.write_bytes(source)
    else:
        print(f"skipped: {CRD_SOURCE.relative_to(ROOT)} does not exist yet")

    loaded = load_required_rbac()
    if loaded is not None:
        required, optional = loaded
        wanted: dict = rules_from_required(required)
        current = yaml.safe_load(RBAC_FILE.read_text()) if RBAC_FILE.exists() else {}
        current = current or {}
        stale_rbac = any(rule_triples(wanted[scope]) != rule_triples(current.get(scope) or [])
                         for scope in wanted)
        for value, by_choice in optional.items():  # gangScheduler, queueSystem
            wanted[value] = {name: rules_from_required(extra)["namespaced"]
                             for name, extra in by_choice.items()}
            present = current.get(value) or {}
            stale_rbac = stale_rbac or set(wanted[value]) != set(present) or any(
                rule_triples(rules) != rule_triples(present.get(name) or [])
                for name, rules in wanted[value].items())
        if stale_rbac:
            stale.append(f"{RBAC_FILE.relative_to(ROOT)} differs from psjob_operator.rbac.REQUIRED_RBAC")
            if not args.check:
                RBAC_FILE.write_text(RBAC_HEADER + yaml.safe_dump(wanted, sort_keys=False, default_flow_style=None))
    else:
        print("skipped: psjob_operator.rbac does not exist yet")

    for line in stale:
        print(("stale: " if args.check else "updated: ") + line)
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
