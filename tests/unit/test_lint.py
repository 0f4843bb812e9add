"""The written rules, checked: ruff (pyflakes, pycodestyle, bugbear, pyupgrade and import
order) over the whole tree and mypy over runtime/ and operator/, as pyproject.toml configures
them. A new violation fails here with the tools' own report; `ruff check --fix` fixes the
import order and most pyupgrade findings."""
import ast
import os
import subprocess
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# mypy's list of modules not yet checked may shrink, never grow (pyproject.toml).
UNCHECKED_MODULES_AT_MOST = 40
# Packages (under runtime/) whose public functions are annotated in full, parameters and
# return, and which mypy checks under its strict rules (pyproject.toml).
ANNOTATED_PACKAGES = ("psjob/foundation/tables", "psjob/foundation/checkpoint", "psjob/foundation/kernels",
                      "psjob/foundation/cuda", "psjob/cluster/rpc", "psjob/launcher", "psjob/cli")
# Modules of those packages not annotated in full yet: may shrink, never grow.
NOT_YET_ANNOTATED: frozenset[str] = frozenset()


def _tool(module: str, *args: str) -> subprocess.CompletedProcess:
    probe = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"{module} is not installed in {sys.executable}: scripts/setup-venv.sh installs "
                    f"the test extras (pip install -e '.[operator,test]')\n{probe.stderr}")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=240)


def test_ruff_finds_nothing():
    result = _tool("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 0, f"ruff check:\n{result.stdout}{result.stderr}"


def test_mypy_finds_nothing():
    result = _tool("mypy")
    assert result.returncode == 0, f"mypy:\n{result.stdout}{result.stderr}"


def _unchecked_modules() -> list[str]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        overrides = tomllib.load(f)["tool"]["mypy"]["overrides"]
    return [m for o in overrides if o.get("ignore_errors") for m in o["module"]]


def test_the_list_of_unchecked_modules_only_shrinks_and_names_real_modules():
    modules = _unchecked_modules()
    assert len(modules) <= UNCHECKED_MODULES_AT_MOST, (
        "a module was added to mypy's ignore_errors list in pyproject.toml: make it pass instead")
    missing = []
    for name in modules:
        rel = os.path.join("runtime", *name.split("."))
        if not (os.path.isfile(os.path.join(ROOT, rel + ".py"))
                or os.path.isfile(os.path.join(ROOT, rel, "__init__.py"))):
            missing.append(name)
    assert not missing, f"mypy's ignore_errors list names modules that no longer exist: {missing}"


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _unannotated(fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> list[str]:
    """The parameters of `fn` without an annotation, and "return" when it has none (a
    method's self or cls needs none)."""
    args = fn.args
    positional = args.posonlyargs + args.args
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    if is_method and not static:
        positional = positional[1:]
    params = positional + args.kwonlyargs + [p for p in (args.vararg, args.kwarg) if p is not None]
    missing = [p.arg for p in params if p.annotation is None]
    return missing + (["return"] if fn.returns is None else [])


def public_functions(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(qualified name, what it lacks) of each public function of a module: module-level
    functions and the methods of public classes (nested ones too), including those defined
    under `if` or `try`; functions nested in functions are not public."""
    found = []

    def walk(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_public(node.name):
                found.append((prefix + node.name, _unannotated(node, in_class)))
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                walk(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, ast.If):
                walk(node.body + node.orelse, prefix, in_class)
            elif isinstance(node, ast.Try):
                walk(node.body + [s for h in node.handlers for s in h.body] + node.orelse + node.finalbody,
                     prefix, in_class)

    walk(tree.body, "", False)
    return found


def _annotated_package_modules() -> list[str]:
    modules = []
    for package in ANNOTATED_PACKAGES:
        for dirpath, _, files in os.walk(os.path.join(ROOT, "runtime", package)):
            modules += [os.path.relpath(os.path.join(dirpath, f), os.path.join(ROOT, "runtime"))
                        for f in files if f.endswith(".py") and not f.endswith("_pb2.py")]
    return sorted(modules)


def test_the_annotation_check_sees_what_is_missing():
    tree = ast.parse("def f(a, b: int): ...\n"
                     "def g(a: int) -> int: ...\n"
                     "def _private(a): ...\n"
                     "class C:\n"
                     "    def __init__(self, x) -> None: ...\n"
                     "    @staticmethod\n"
                     "    def s(x: int): ...\n"
                     "    def _own(self, y): ...\n"
                     "class _Hidden:\n"
                     "    def m(self, z): ...\n"
                     "if True:\n"
                     "    def h(*args, **kw) -> None: ...\n")
    assert public_functions(tree) == [("f", ["a", "return"]), ("g", []), ("C.__init__", ["x"]),
                                      ("C.s", ["return"]), ("h", ["args", "kw"])]


def test_public_functions_of_the_typed_packages_are_annotated():
    """Every public function of ANNOTATED_PACKAGES says the types of its parameters and what it
    returns (mypy's strict rules there check the bodies against them)."""
    total, offenders = 0, []
    for module in _annotated_package_modules():
        if module in NOT_YET_ANNOTATED:
            continue
        with open(os.path.join(ROOT, "runtime", module)) as f:
            tree = ast.parse(f.read(), module)
        for name, missing in public_functions(tree):
            total += 1
            if missing:
                offenders.append(f"{module}: {name} lacks annotations for {', '.join(missing)}")
    assert total > 300, f"only {total} public functions found under {ANNOTATED_PACKAGES}: is ROOT right?"
    assert not offenders, "public functions without full annotations:\n" + "\n".join(offenders)


def test_the_typed_packages_are_held_to_mypy_strict_rules():
    """Each annotated package is named in a mypy override that requires annotations; the list of
    modules not annotated yet names real modules of those packages only."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        overrides = tomllib.load(f)["tool"]["mypy"]["overrides"]
    strict = {m for o in overrides if o.get("disallow_untyped_defs") and o.get("disallow_incomplete_defs")
              and o.get("check_untyped_defs") for m in o["module"]}
    for package in ANNOTATED_PACKAGES:
        dotted = package.replace("/", ".")
        assert {dotted, dotted + ".*"} <= strict, f"pyproject.toml: {dotted} is not under mypy's strict override"
    assert NOT_YET_ANNOTATED <= set(_annotated_package_modules()), (
        f"NOT_YET_ANNOTATED names modules that are not in the typed packages: "
        f"{sorted(NOT_YET_ANNOTATED - set(_annotated_package_modules()))}")
