"""The environment contract has one owner. Only psjob.foundation.settings and
psjob.foundation.role_env read the process environment (process_environment, Settings,
RoleEnv); every other runtime module gets typed settings passed down (a RoleEnv's
`settings`, or the Settings its entry point built); none writes it either (the container
entrypoints put what they complete into the RoleEnv they pass down). And no other runtime
module names a PSJOB_*/PADDLE_* variable in a string: psjob.foundation.roles renders and
names them, settings and role_env parse them; the rest import the names. Checked on the
source, like tests/unit/test_layering.py."""
import ast
import os

RUNTIME = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "runtime", "psjob")
READERS = (os.path.join("foundation", "role_env.py"), os.path.join("foundation", "settings.py"))
# The modules that own the variables' names: roles renders them, settings and role_env parse them.
CONTRACT = READERS + tuple(os.path.join("foundation", "roles", name) for name in
                           ("__init__.py", "names.py", "environment.py", "identity.py", "topology.py",
                            "threads.py"))
PREFIXES = ("PSJOB_", "PADDLE_")


def environment_uses(source: str) -> list[tuple[int, str]]:
    """(line, how) of every use of os.environ / os.getenv / os.putenv in `source`; a plain
    assignment `os.environ[...] = ...` is 'write', anything else 'read'."""
    tree = ast.parse(source)
    writes = {id(target.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Subscript)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                a.name in ("environ", "getenv", "putenv", "environb") for a in node.names):
            found.append((node.lineno, "read"))
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
              and node.attr in ("environ", "getenv", "putenv", "environb")):
            found.append((node.lineno, "write" if id(node) in writes else "read"))
    return found


def runtime_sources(exempt):
    """(path under runtime/psjob, source) of every runtime module but those in `exempt`."""
    for dirpath, _, files in os.walk(RUNTIME):
        for name in files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, RUNTIME)
            if name.endswith(".py") and rel not in exempt:
                with open(path) as f:
                    yield rel, f.read()


def test_only_role_env_reads_the_process_environment():
    offenders = [f"{rel}:{line} ({how})" for rel, source in runtime_sources(READERS)
                 for line, how in environment_uses(source)]
    assert not offenders, ("read the environment through psjob.foundation.settings (a RoleEnv's settings, or "
                           "process_settings() at a process's entry point): " + ", ".join(offenders))


def test_the_check_sees_each_way_of_reading():
    source = ("import os\nfrom os import getenv\n"
              "a = os.environ.get('PSJOB_X')\nb = os.getenv('PADDLE_Y')\nenv = os.environ\n"
              "os.environ['PSJOB_Z'] = '1'\n")
    assert sorted(environment_uses(source)) == [(2, "read"), (3, "read"), (4, "read"), (5, "read"), (6, "write")]


def variable_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant in `source` that starts with PSJOB_ or PADDLE_,
    docstrings aside (they document the variables; reading one needs its name in code). An
    f-string's leading text counts: f"PSJOB_X={x}" names the variable as much as "PSJOB_X"."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in docstrings and node.value.startswith(PREFIXES))


def test_only_the_contract_names_the_variables():
    offenders = [f"{rel}:{line} {text[:40]!r}" for rel, source in runtime_sources(CONTRACT)
                 for line, text in variable_literals(source)]
    assert not offenders, ("name PSJOB_*/PADDLE_* variables through psjob.foundation.settings (parsed there, "
                           "passed down as typed settings) or psjob.foundation.roles (rendered there): "
                           + ", ".join(offenders))


def test_the_literal_check_skips_docstrings_only():
    source = ('"""PSJOB_MODULE_DOC"""\n'
              'def f(env):\n    """PSJOB_FUNCTION_DOC"""\n    return env.get("PSJOB_X")\n'
              'y = f"PADDLE_Y={1}"\nz = "see PSJOB_Z"\n')
    assert variable_literals(source) == [(4, "PSJOB_X"), (5, "PADDLE_Y=")]
