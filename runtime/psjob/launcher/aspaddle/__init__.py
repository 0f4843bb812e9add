"""`paddle` resolved to psjob, for Paddle scripts run unmodified.

`psjob launch --as-paddle`, `psjob as-paddle COMMAND` and a job's
`spec.asPaddle: true` put SHIM_DIR first on PYTHONPATH of the processes they
start (children inherit it: a QueueDataset's `pipe_command` running
`python reader.py` gets it too). SHIM_DIR holds one package, `paddle`, whose
`__init__` calls `install()`:

- `sys.modules["paddle"]` becomes the psjob package itself, so `import paddle`
  binds psjob and `paddle.static`, `paddle.fluid`, ... are psjob's;
- a meta-path finder (`PaddleAlias`) answers every `paddle.X.Y` import with
  the module object of `psjob.X.Y` — the same object, never a second copy,
  whatever submodules psjob has: the mapping is by name, nothing is listed;
- the process says once, on stderr, which package it got
  (`paddle -> psjob 0.1.0 (--as-paddle)`), and when a real Paddle is also
  importable in that environment it names where and says it was shadowed.

This is the one module that imports psjob modules named by a string (the
alias must map any name; tests/unit/test_layering.py allows it here only).
Stdlib only otherwise: the launchers import it to compute PYTHONPATH.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO, cast

if TYPE_CHECKING:
    import importlib.abc

ALIAS = "paddle"
TARGET = "psjob"
SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim")


def python_path(current: str) -> str:
    """PYTHONPATH with SHIM_DIR first (once), the entries of `current` after it."""
    kept = [p for p in (current or "").split(os.pathsep) if p and os.path.abspath(p) != SHIM_DIR]
    return os.pathsep.join([SHIM_DIR, *kept])


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """The variables to add to `base` (a process's environment) so that it imports psjob as paddle."""
    return {"PYTHONPATH": python_path(base.get("PYTHONPATH", ""))}


class MissingName(LookupError):
    """`paddle.<name>` has no counterpart in psjob; `missing` is the psjob path that stops."""

    def __init__(self, name: str, missing: str, found: object = None) -> None:
        self.name, self.missing, self.found = name, missing, found
        super().__init__(f"psjob has no {missing} (for {name})")


def _split(name: str) -> list[str]:
    head, *rest = name.split(".")
    if head not in (ALIAS, TARGET):
        raise ValueError(f"{name!r} is not a paddle.* or psjob.* name")
    return rest


def _submodule(module: types.ModuleType, part: str) -> types.ModuleType | None:
    """module.part imported as psjob's own submodule, or None when there is none."""
    if not hasattr(module, "__path__"):
        return None
    real = f"{module.__name__}.{part}"
    try:
        return importlib.import_module(real)
    except ModuleNotFoundError as exc:
        if exc.name == real:
            return None
        raise  # a dependency of that module is missing: say so, not "no such name"


def lookup(name: str) -> object:
    """The psjob object `paddle.a.b.c` (or `psjob.a.b.c`) names: attribute by attribute from
    the psjob package, importing a submodule where a package has no such attribute yet.
    MissingName when a part is absent."""
    import psjob
    obj, path = psjob, TARGET
    for part in _split(name):
        path = f"{path}.{part}"
        try:
            obj = getattr(obj, part)
            continue
        except AttributeError:
            pass
        sub = _submodule(obj, part) if isinstance(obj, types.ModuleType) else None
        if sub is None:
            raise MissingName(name, path, obj)
        obj = sub
    return obj


def module_for(name: str) -> types.ModuleType:
    """The psjob module an `import paddle.a.b` should bind: psjob's own submodule `psjob.a.b`
    first (what `import psjob.a.b` gives), else a module psjob exposes as that attribute
    (an alias such as psjob.base). ModuleNotFoundError naming the paddle module otherwise."""
    import psjob
    module, path = psjob, TARGET
    for part in _split(name):
        path = f"{path}.{part}"
        sub = _submodule(module, part)
        if sub is None:
            sub = getattr(module, part, None)
            if not isinstance(sub, types.ModuleType):
                what = "" if sub is None else f" ({path} is a {type(sub).__name__}, not a module)"
                raise ModuleNotFoundError(
                    f"No module named {name!r}: psjob stands in for paddle here (--as-paddle) and has "
                    f"no module {path}{what}; `psjob compat` lists what a script uses that psjob lacks",
                    name=name)
        module = sub
    return module


# The finder and the loader follow importlib's protocols without importlib.abc's base classes:
# importing importlib.abc loads importlib.resources, tempfile, shutil, random, bz2 and lzma,
# ~20 ms in every process `import paddle` starts (a dataset's pipe_command, per file).
class _AliasLoader:
    """Loads `paddle.X` as the existing module object of psjob.X."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.spec = getattr(module, "__spec__", None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        # importlib's module_from_spec set __spec__ to the alias spec; the module keeps its own.
        module.__spec__ = self.spec


class PaddleAlias:
    """Every `paddle.X.Y` import is psjob.X.Y (sys.modules["paddle"] is psjob itself)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(ALIAS + "."):
            return None
        module = module_for(fullname)
        loader = cast("importlib.abc.Loader", _AliasLoader(module))  # its protocol, not its class
        return importlib.util.spec_from_loader(fullname, loader, is_package=hasattr(module, "__path__"))


def real_paddle(search_path: list[str]) -> str:
    """Where a real `paddle` package would be imported from off `search_path` (SHIM_DIR
    left out), or ""."""
    entries = [p for p in search_path if os.path.abspath(p or os.curdir) != SHIM_DIR]
    spec = importlib.machinery.PathFinder.find_spec(ALIAS, entries)
    if spec is None:
        return ""
    locations = list(spec.submodule_search_locations or ())
    return locations[0] if locations else (spec.origin or "")


def notice(version: str, shadowed: str) -> list[str]:
    """The lines a process prints when `import paddle` gives it psjob."""
    lines = [f"paddle -> psjob {version} (--as-paddle)"]
    if shadowed:
        lines.append(f"WARNING: paddle -> psjob shadows the Paddle installed at {shadowed}; "
                     "run without --as-paddle (or spec.asPaddle) to use that Paddle")
    return lines


def install(stream: TextIO | None = None) -> None:
    """Make this process's `paddle` psjob (called by SHIM_DIR/paddle/__init__.py)."""
    import psjob
    if not any(isinstance(f, PaddleAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, PaddleAlias())
    sys.modules[ALIAS] = psjob
    for line in notice(psjob.__version__, real_paddle(sys.path)):
        print(line, file=stream or sys.stderr, flush=True)


def exec_main(argv: Sequence[str]) -> int:
    """`psjob as-paddle [--] COMMAND [ARGS...]`: replace this process by COMMAND with SHIM_DIR
    first on its PYTHONPATH (a job's `spec.asPaddle` container command; also by hand). A
    leading `python`/`python3` is this interpreter, the one psjob is installed in."""
    from psjob.foundation.role_env import process_environment
    argv = list(argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: psjob as-paddle [--] COMMAND [ARGS...]\n\nRuns COMMAND (e.g. python train.py) "
              "with `import paddle` giving psjob in it and in every process it starts.",
              file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the interpreter psjob runs in, as `psjob run` takes `python`
    env = dict(process_environment())
    env.update(environment(env))
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(f"psjob as-paddle: cannot run {argv[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached: execvpe replaced this process
