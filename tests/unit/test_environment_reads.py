"""Only psjob.foundation.role_env reads the process environment (RoleEnv, process_environment); every
other runtime module gets its PSJOB_*/PADDLE_* settings from a RoleEnv's `settings` or a
mapping passed down; none writes it either (the container entrypoints put what they complete
into the RoleEnv they pass down). Checked on the source, like tests/unit/test_layering.py."""
import ast
import os

RUNTIME = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "runtime", "psjob")
READER = os.path.join("foundation", "role_env.py")


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


def test_only_role_env_reads_the_process_environment():
    offenders = []
    for dirpath, _, files in os.walk(RUNTIME):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, RUNTIME)
            if rel == READER:
                continue
            with open(path) as f:
                uses = environment_uses(f.read())
            offenders += [f"{rel}:{line} ({how})" for line, how in uses]
    assert not offenders, ("read the environment through psjob.foundation.role_env (a RoleEnv's settings, or "
                           "process_environment() at a process's entry point): " + ", ".join(offenders))


def test_the_check_sees_each_way_of_reading():
    source = ("import os\nfrom os import getenv\n"
              "a = os.environ.get('PSJOB_X')\nb = os.getenv('PADDLE_Y')\nenv = os.environ\n"
              "os.environ['PSJOB_Z'] = '1'\n")
    assert sorted(environment_uses(source)) == [(2, "read"), (3, "read"), (4, "read"), (5, "read"), (6, "write")]
