"""The layering of docs/dev/layers.md, checked on the source (as kopf's .importlinter does).

The folders of runtime/psjob/ are the layers. Bottom to top; a module imports only its own
layer and the ones below:

    foundation/  base: hooks, progress, metrics, roles, role_env (and Paddle's reader, dataset)
                 jobspec: the ParameterServerJob model (uses roles' defaults)
                 kernels: kernels, cuda — optimizer math on an array module
                 tables: sparse tables keyed by id
                 checkpoint: the on-disk format (format, tables, store, cli): numpy only
    fluid/       the Fluid IR: framework, ops, executor, io, the transpiler as pure planning
                 (and base: its alias); paddle2: Paddle 2.x's fronts over it (static, nn, ...)
    cluster/     seam: protocol.py, checkpoint_protocol.py (trainer <-> pserver): the
                 contract, typing and stdlib only, below every transport that implements it
                 rpc: frames, codec, TLS, the job's secret, gRPC and the data plane
                 sides: pserver/ and trainer/, which never import each other
                 heter/, inmemory.py (a cluster in one process), collective/
    fleet/       the Fleet facade, role makers, strategies, saves; distributed: paddle.distributed
                 (fleet 2.x front, datasets) and paddle.fluid.incubate's paths to it
    training/    the built-in job and models
    launcher/    psjob launch / run, the container entrypoints, aspaddle (the `paddle` alias)
    cli/         the `psjob` command, compat, examples; the package root (registers the hooks)

The operator sits beside them and shares only jobspec, roles and metrics. A lower
layer that must call a higher one looks up a hook the higher one registered
(psjob.foundation.hooks), so every import is written out: import-by-string of our own
modules (importlib.import_module, __import__) is forbidden, and so is any import cycle
between modules. Lazy imports inside functions count too: a violation is a violation
wherever it is written. One module is exempt from the by-string rule:
psjob.launcher.aspaddle, the `paddle` alias of --as-paddle, whose job is to import
psjob.<name> for whatever paddle.<name> a user's script imports.
"""
import ast
import functools
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = os.path.join(ROOT, "runtime", "psjob")
OPERATOR = os.path.join(ROOT, "operator", "psjob_operator")

F, C = "psjob.foundation", "psjob.cluster"
# Lowest first: (layer, module prefixes).
LAYERS = [
    ("base", (F, f"{F}.hooks", f"{F}.roles", f"{F}.role_env", f"{F}.settings", f"{F}.progress", f"{F}.metrics",
              "psjob.reader", "psjob.dataset", "psjob._batch", "psjob.compat")),
    ("jobspec", (f"{F}.jobspec",)),
    ("kernels", (f"{F}.kernels", f"{F}.cuda")),
    ("tables", (f"{F}.tables",)),
    ("checkpoint", (f"{F}.checkpoint",)),
    ("fluid", ("psjob.fluid", "psjob.base")),  # psjob.base: Paddle >= 2.5's name for fluid
    ("paddle2", ("psjob.static", "psjob.nn", "psjob.optimizer", "psjob.tensor", "psjob.regularizer",
                 "psjob.device", "psjob.param_attr", "psjob._paddle2", "psjob.io", "psjob.utils",
                 "psjob.metric", "psjob.framework", "psjob.common_ops_import", "psjob.linalg",
                 "psjob.incubate", "psjob.inference")),
    # The seam sits below rpc: the gRPC client and server implement its Protocols.
    ("seam", (C, f"{C}.protocol", f"{C}.checkpoint_protocol")),
    ("rpc", (f"{C}.rpc",)),
    ("sides", (f"{C}.pserver", f"{C}.trainer")),
    ("heter", (f"{C}.heter", f"{C}.inmemory")),
    ("collective", (f"{C}.collective",)),
    ("fleet", ("psjob.fleet",)),
    ("distributed", ("psjob.distributed",  # paddle.distributed: fleet 2.x front, datasets
                     "psjob.fluid.incubate")),  # paddle.fluid.incubate: Fluid 1.x's paths to them
    ("training", ("psjob.training",)),
    ("launcher", ("psjob.launcher",)),
    ("cli", ("psjob.cli", "psjob")),
]
# Parts of one layer that must not import each other: the pserver and the trainer meet at the seam.
INDEPENDENT = [(f"{C}.pserver", f"{C}.trainer")]
OPERATOR_SHARES = (f"{F}.jobspec", f"{F}.roles", f"{F}.metrics")

# Libraries a layer must not reach, whatever its rank says.
FORBIDDEN_LIBRARIES = {
    "base": ("grpc", "kopf", "kubernetes"),
    "jobspec": ("numpy", "grpc", "kopf", "kubernetes"),
    "kernels": ("grpc", "kopf", "kubernetes"),
    "tables": ("grpc", "kopf", "kubernetes"),
    "checkpoint": ("grpc", "kopf", "kubernetes"),
    "fluid": ("grpc", "kopf", "kubernetes", "socket"),
    "paddle2": ("grpc", "kopf", "kubernetes", "socket"),
    "rpc": ("kopf", "kubernetes"),
}
ROLES_IMPORT_ONLY_STDLIB = ("numpy", "grpc", "kopf", "kubernetes", "yaml", "prometheus_client")


def _modules(directory, package):
    for dirpath, _, files in os.walk(directory):
        for f in files:
            if f.endswith(".py") and not f.endswith("_pb2.py") and not f.endswith("_pb2_grpc.py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, directory)[:-3].replace(os.sep, ".")
                yield path, f"{package}.{rel}".removesuffix(".__init__")


@functools.cache
def _parse(path):
    with open(path) as f:
        return ast.parse(f.read(), path)


def _imports(path, module):
    tree = _parse(path)
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


def _all_modules():
    out = {}
    for directory, package in ((RUNTIME, "psjob"), (OPERATOR, "psjob_operator")):
        for path, module in _modules(directory, package):
            out[module] = path
    return out


def _starts(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def _layer_of(module):
    """Index in LAYERS of the most specific prefix naming `module`, or None."""
    best, best_len = None, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _starts(module, prefix) and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    return best


def _targets(path, module, known):
    """The modules of this tree that `module` imports: `from X import a` names X.a when that
    is a module, else X; `import X.a` names X.a."""
    found = set()
    for name, names in _import_statements(path, module):
        submodules = [f"{name}.{n}" for n in names if f"{name}.{n}" in known]
        found.update(submodules)
        if len(submodules) < len(names) and name in known:
            found.add(name)
    found.discard(module)
    return found


def _import_statements(path, module):
    """(module named, [names taken from it]) per import; `import X` takes nothing from X."""
    tree = _parse(path)
    pkg = module.rsplit(".", 1)[0] if not path.endswith("__init__.py") else module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [None]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            yield name, [alias.name for alias in node.names]


@functools.cache
def _graph():
    known = _all_modules()
    return {m: _targets(p, m, known) for m, p in known.items()}


def _layer_violations(graph):
    found = []
    for module, targets in graph.items():
        if module.startswith("psjob_operator"):
            for t in targets:
                if t.startswith("psjob.") and not any(_starts(t, s) for s in OPERATOR_SHARES):
                    found.append(f"{module} imports {t}: the operator shares only {OPERATOR_SHARES}")
                elif t == "psjob":
                    found.append(f"{module} imports the psjob package root")
            continue
        rank = _layer_of(module)
        if rank is None:
            found.append(f"{module} belongs to no layer: add it to LAYERS in {__file__}")
            continue
        for t in targets:
            if t.startswith("psjob_operator"):
                found.append(f"{module} imports the operator ({t})")
                continue
            t_rank = _layer_of(t)
            if t_rank is not None and t_rank > rank and not t == "psjob":
                found.append(f"{module} ({LAYERS[rank][0]}) imports {t} ({LAYERS[t_rank][0]}), a higher layer")
    return found


def _independence_violations(graph):
    found = []
    for a, b in INDEPENDENT:
        for module, targets in graph.items():
            for mine, theirs in ((a, b), (b, a)):
                if _starts(module, mine):
                    found += [f"{module} imports {t}: {mine} and {theirs} do not import each other"
                              for t in sorted(targets) if _starts(t, theirs)]
    return found


def _library_violations():
    found = []
    for module, path in _all_modules().items():
        if module.startswith("psjob_operator"):
            banned = ("psjob.fluid", f"{F}.kernels", f"{F}.tables", C, "numpy")
        else:
            rank = _layer_of(module)
            banned = FORBIDDEN_LIBRARIES.get(LAYERS[rank][0], ()) if rank is not None else ()
            if _starts(module, f"{F}.roles") or _starts(module, f"{F}.role_env"):
                banned = banned + ROLES_IMPORT_ONLY_STDLIB
        for name in _imports(path, module):
            for bad in banned:
                if _starts(name, bad):
                    found.append(f"{module} imports {name} (forbidden in its layer)")
    return sorted(set(found))


_IMPORTERS = {("importlib", "import_module"), (None, "__import__"), (None, "import_module")}
# The `paddle` alias maps paddle.<name> to psjob.<name> for any name a script imports; a lazy
# package imports package.<name> for the `from package import <name>` its importer wrote.
IMPORTS_BY_STRING = ("psjob.launcher.aspaddle", "psjob.foundation.lazy")


def _imports_by_string(path, module):
    """Calls that import a module named by a string (or by any expression) of our own:
    import_module("psjob..."), __import__(name), import_module(f"{__name__}.x")."""
    tree = _parse(path)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        key = ((func.value.id if isinstance(func.value, ast.Name) else None), func.attr) \
            if isinstance(func, ast.Attribute) else (None, getattr(func, "id", None))
        if key not in _IMPORTERS or not node.args:
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                and not arg.value.startswith((".", "psjob")):
            continue  # a third-party module by name (cupy, loaded only on a GPU)
        yield f"{module}:{node.lineno} imports by string ({ast.unparse(arg)})"


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_every_module_imports_only_its_own_layer_and_lower_ones():
    assert _layer_violations(_graph()) == []


def test_the_pserver_and_trainer_sides_do_not_import_each_other():
    assert _independence_violations(_graph()) == []


def test_no_layer_reaches_a_library_it_must_not_use():
    assert _library_violations() == []


def test_no_module_imports_one_of_ours_by_string():
    found = [v for module, path in _all_modules().items() for v in _imports_by_string(path, module)
             if module not in IMPORTS_BY_STRING]
    assert found == []


def test_no_modules_import_each_other_in_a_circle():
    assert _cycles(_graph()) == []


def test_the_checker_sees_a_violation_when_there_is_one(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import grpc\nfrom ..rpc import client\nimport importlib\n"
                   "importlib.import_module('psjob.cluster.pserver.pserver')\n__import__(name)\n"
                   "importlib.import_module('cupy')\n")
    names = list(_imports(str(bad), "psjob.fluid.ops.bad"))
    assert "grpc" in names and "psjob.fluid.rpc.client" in names
    assert len(list(_imports_by_string(str(bad), "psjob.fluid.ops.bad"))) == 2
    graph = {"psjob.fluid.io": {"psjob.cluster.trainer.checkpoint_save"},
             "psjob.cluster.trainer.checkpoint_save": {"psjob.fluid.io"}}
    assert _cycles(graph) == [["psjob.cluster.trainer.checkpoint_save", "psjob.fluid.io"]]
    assert _layer_violations(graph) == [
        "psjob.fluid.io (fluid) imports psjob.cluster.trainer.checkpoint_save (sides), a higher layer"]
    sides = {"psjob.cluster.trainer.communicator": {"psjob.cluster.pserver.pserver_state"}}
    assert _independence_violations(sides) == [
        "psjob.cluster.trainer.communicator imports psjob.cluster.pserver.pserver_state: "
        "psjob.cluster.trainer and psjob.cluster.pserver do not import each other"]


def test_every_runtime_module_has_a_named_layer():
    # The bare "psjob" prefix places the package root alone; a new module or package
    # gets its own line in LAYERS rather than landing on the top layer unnoticed.
    named = [p for _, prefixes in LAYERS for p in prefixes if p != "psjob"]
    unplaced = sorted(m for m in _all_modules() if m.startswith("psjob.") and not any(_starts(m, p) for p in named))
    assert unplaced == []


@pytest.mark.parametrize("name", ["operator", "psjob/operator"])
def test_no_top_level_package_shadows_the_standard_operator_module(name):
    assert not os.path.exists(os.path.join(ROOT, name, "__init__.py"))
