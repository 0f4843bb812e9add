"""The layering of STYLE.md, checked on the source (as kopf's .importlinter does).

    operator handlers → builders/status → (roles, jobspec)
    runtime: ps / rpc / fleet / launcher → fluid (framework, ops, transpiler) → kernels → numpy

Kernels and the framework never import the transport (grpc, psjob.rpc,
psjob.ps) or Kubernetes libraries; tables import no transport; the operator
never imports the framework, kernels or tables. Lazy imports inside functions
count too: a layer violation is a violation wherever it is written.
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = os.path.join(ROOT, "runtime", "psjob")
OPERATOR = os.path.join(ROOT, "operator", "psjob_operator")


def _modules(directory, package):
    for dirpath, _, files in os.walk(directory):
        for f in files:
            if f.endswith(".py") and not f.endswith("_pb2.py") and not f.endswith("_pb2_grpc.py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, directory)[:-3].replace(os.sep, ".")
                yield path, f"{package}.{rel}".removesuffix(".__init__")


def _imports(path, module):
    tree = ast.parse(open(path).read(), path)
    pkg = module.rsplit(".", 1)[0] if not path.endswith("__init__.py") else module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            yield name
            for alias in node.names:
                yield f"{name}.{alias.name}"


PADDLE2_FRONTS = ("psjob.static", "psjob.nn", "psjob.optimizer", "psjob.tensor", "psjob.regularizer",
                  "psjob.device", "psjob.param_attr", "psjob._paddle2")
RULES = [
    # (modules whose name starts with, forbidden import prefixes)
    ("psjob.kernels", ("grpc", "kopf", "kubernetes", "psjob.rpc", "psjob.ps", "psjob.fluid", "psjob_operator")),
    ("psjob.fluid", ("grpc", "kopf", "kubernetes", "psjob.rpc", "psjob.ps", "psjob.fleet", "psjob.launcher",
                     "psjob_operator", *PADDLE2_FRONTS)),
    # The Paddle 2.x fronts sit on the framework: no transport, nothing above them.
    *[(front, ("grpc", "kopf", "kubernetes", "psjob.rpc", "psjob.ps", "psjob.fleet", "psjob.launcher",
               "psjob_operator")) for front in PADDLE2_FRONTS],
    ("psjob.tables", ("grpc", "kopf", "kubernetes", "psjob.rpc", "psjob.ps", "psjob.fluid", "psjob_operator")),
    ("psjob.rpc", ("kopf", "kubernetes", "psjob_operator")),
    ("psjob.roles", ("numpy", "grpc", "kopf", "kubernetes", "psjob.fluid")),
    ("psjob.jobspec", ("numpy", "grpc", "kopf", "kubernetes", "psjob.fluid")),
    ("psjob_operator", ("psjob.fluid", "psjob.kernels", "psjob.tables", "psjob.rpc", "psjob.ps", "numpy")),
]


def _violations():
    found = []
    for directory, package in ((RUNTIME, "psjob"), (OPERATOR, "psjob_operator")):
        for path, module in _modules(directory, package):
            for prefix, forbidden in RULES:
                if module != prefix and not module.startswith(prefix + "."):
                    continue
                for name in _imports(path, module):
                    for bad in forbidden:
                        if name == bad or name.startswith(bad + "."):
                            found.append(f"{module} imports {name} (forbidden in {prefix})")
    return found


def test_no_module_imports_across_its_layer():
    assert _violations() == []


def test_the_checker_sees_a_violation_when_there_is_one(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import grpc\nfrom ..rpc import client\n")
    names = list(_imports(str(bad), "psjob.fluid.ops.bad"))
    assert "grpc" in names and "psjob.fluid.rpc.client" in names


@pytest.mark.parametrize("name", ["operator", "psjob/operator"])
def test_no_top_level_package_shadows_the_standard_operator_module(name):
    assert not os.path.exists(os.path.join(ROOT, name, "__init__.py"))
