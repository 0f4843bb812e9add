"""Map recorded HTTP requests to RBAC (apiGroup, resource, verb) triples."""
from __future__ import annotations

from psjob_operator import rbac

TEST_CLIENT_AGENT = "Python-urllib"


def rbac_triple(method: str, path: str, params: dict) -> tuple[str, str, str] | None:
    """None for non-resource URLs (discovery, /version), which every user may read."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    elif rest[0] == "namespaces":
        return (group, "namespaces", "get" if len(rest) == 2 else "list")
    resource = rest[0] + (f"/{rest[2]}" if len(rest) >= 3 else "")
    named = len(rest) >= 2
    if method == "GET":
        verb = "watch" if params.get("watch") in ("true", "1") else ("get" if named else "list")
    else:
        verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[method]
    return group, resource, verb


def operator_triples(requests: list[tuple[str, str, dict, str]]) -> set[tuple[str, str, str]]:
    found = set()
    for method, path, params, agent in requests:
        if agent.startswith(TEST_CLIENT_AGENT):
            continue  # the tests' own client (playing kubelet and controllers)
        triple = rbac_triple(method, path, params)
        if triple is not None:
            found.add(triple)
    return found


def uncovered(requests: list[tuple[str, str, dict, str]]) -> list[tuple[str, str, str]]:
    return sorted(t for t in operator_triples(requests) if not rbac.allows(*t))
