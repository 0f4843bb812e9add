"""REQUIRED_RBAC covers every Kubernetes API call written in the operator's code.

The static half of the RBAC check (the dynamic half records the running
operator's requests in test_operator_process.py): every `api.<verb>(RESOURCE,
...)` call is found in the source; a call whose resource is a variable must
say on its line (or the line above) which resources can reach it, as
`# rbac: NAME - NAME ...` over module-level constants.
"""
from __future__ import annotations

import ast
import importlib
import pathlib
import re

import psjob_operator
from psjob_operator import handlers, kube, rbac
from psjob_operator.kube import Resource

PACKAGE = pathlib.Path(psjob_operator.__file__).parent
VERBS = {"get": "get", "get_metadata": "get", "list": "list", "create": "create",
         "patch": "patch", "delete": "delete"}


def resolve(module, expression: str) -> set[Resource]:
    names = [n.strip() for n in expression.split(" - ")]
    sets = []
    for name in names:
        value = getattr(module, name, None) or getattr(kube, name)
        sets.append({value} if isinstance(value, Resource) else set(value))
    result = sets[0]
    for other in sets[1:]:
        result -= other
    return result


def api_calls(method: bool = False):
    """(module, line, verb, resources, subresource) for every KubeApi call site; with
    `method`, the KubeApi method called comes last."""
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name == "kube.py":
            continue
        module = importlib.import_module(f"psjob_operator.{path.stem}")
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in VERBS):
                continue
            target = node.func.value
            if not (isinstance(target, ast.Attribute) and target.attr == "api"):
                continue
            sub = next((k.value.value for k in node.keywords if k.arg == "subresource"), None)
            first = node.args[0]
            if isinstance(first, ast.Name) and isinstance(getattr(module, first.id, None),
                                                          Resource):
                resources = {getattr(module, first.id)}
            else:
                around = " ".join(lines[node.lineno - 2:node.lineno])
                match = re.search(r"# rbac: ([A-Z_ -]+)", around)
                assert match, (f"{path.name}:{node.lineno}: annotate the call with "
                               f"'# rbac: <resource constants>'")
                resources = resolve(module, match.group(1))
            found = (path.name, node.lineno, VERBS[node.func.attr], resources, sub)
            yield found + (node.func.attr,) if method else found


def test_the_source_scan_finds_the_operators_api_calls():
    calls = list(api_calls())
    assert {verb for _, _, verb, _, _ in calls} == {"get", "create", "patch", "delete"}
    assert len(calls) >= 10


def test_the_reconciler_lists_nothing_itself_every_list_is_a_labelled_watch():
    # Lists and watches are kopf's streams, each child kind with a server-side selector
    # (checked on the wire in test_operator_scale.py); the code never calls api.list.
    assert [call for call in api_calls() if call[2] == "list"] == []


def test_every_api_call_in_the_code_is_covered_by_required_rbac():
    missing = []
    for name, line, verb, resources, sub in api_calls():
        for resource in resources:
            plural = resource.plural + (f"/{sub}" if sub else "")
            if not rbac.allows(resource.group, plural, verb):
                missing.append(f"{name}:{line} {verb} {resource.group}/{plural}")
    assert missing == []


def test_every_watched_resource_can_be_listed_and_watched():
    watched = [("psjob.dev", "parameterserverjobs")] + \
        [(group, plural) for group, _, plural in handlers.WATCHED_CHILDREN]
    for group, plural in watched:
        assert rbac.allows(group, plural, "list") and rbac.allows(group, plural, "watch"), plural


def test_owner_references_with_block_owner_deletion_are_allowed():
    assert rbac.allows("psjob.dev", "parameterserverjobs/finalizers", "update")


def test_the_operator_never_lists_secrets_and_reads_their_metadata_only():
    # `get` (after a 409: whose Secret holds the job's name), but no list or watch, and
    # every read of a Secret in the code asks for metadata only (PartialObjectMetadata).
    assert not rbac.allows("", "secrets", "list") and not rbac.allows("", "secrets", "watch")
    assert rbac.allows("", "secrets", "get")
    reads = [(name, line, method) for name, line, verb, resources, _, method in api_calls(True)
             if verb == "get" and kube.SECRETS in resources]
    assert reads and all(method == "get_metadata" for _, _, method in reads), reads


def test_the_rules_render_as_kubernetes_policy_rules():
    rules = rbac.as_rules()
    assert {"apiGroups": ["batch"], "resources": ["jobs"],
            "verbs": ["get", "list", "watch", "create", "patch", "delete"]} in rules
    assert len(rules) == len(rbac.REQUIRED_RBAC)
