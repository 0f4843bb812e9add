"""Packages whose API is loaded on first use (PEP 562), for processes that need a light part only.

A dataset's `pipe_command` runs a reader script per data file, per epoch, per trainer, and
the script imports `paddle.distributed.fleet` or `paddle.fluid.incubate.data_generator`
only for MultiSlotDataGenerator. Such a package keeps its light names in its `__init__`
and its API in a module of its own, and calls `make_lazy` with a function that imports
that module. The package then behaves as it did when the API was its body:

- reading a name that is a submodule, before the API is loaded, imports that submodule
  without loading the API (`from package import submodule`: the framework's own modules
  import one another that way);
- reading a name it lacks loads the API module once and copies its public names into
  the package, so later reads are plain attribute reads; a private name (module state
  such as the strategy `init()` keeps) is read from the API module each time;
- assigning or deleting a name loads the API first and does it in the API module too
  when that module has the name, so a monkeypatch of the package reaches the API's own
  functions;
- a submodule named like one of the API's values (psjob/fluid/data.py under the function
  `fluid.data`) is never bound on the package by the import system: the name keeps
  reaching the API's value whichever is imported first (`shadowed`);
- dir() and `from package import *` load the API and list it.

Stdlib only.
"""
from __future__ import annotations

import importlib
import os
import threading
import types
from collections.abc import Callable, Iterable

_loading = threading.local()  # .names: the packages whose API this thread is importing now


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _submodule(package: types.ModuleType, name: str) -> types.ModuleType | None:
    """package.name imported, when the package has a submodule of that name: what
    `from package import name` means for a submodule the API has no value of its own for
    (the framework's own modules import one another that way), without loading the API."""
    for entry in getattr(package, "__path__", ()):
        base = os.path.join(entry, name)
        if os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py")):
            return importlib.import_module(f"{package.__name__}.{name}")
    return None


class _ApiState:
    """A private name of the API module read, assigned and deleted there: module state the
    API's functions rebind (a copy in the package would go stale)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, package, owner=None):
        if package is None:
            return self
        try:
            return vars(type(package)._lazy_module)[self.name]
        except KeyError:
            raise AttributeError(f"module {package.__name__!r} has no attribute {self.name!r}") from None

    def __set__(self, package, value) -> None:
        setattr(type(package)._lazy_module, self.name, value)

    def __delete__(self, package) -> None:
        delattr(type(package)._lazy_module, self.name)


class LazyPackage(types.ModuleType):
    """The class of a package made lazy by `make_lazy` (one subclass per package holds its
    loader, its shadowed names and, once loaded, its API module)."""

    _lazy_load: Callable[[], types.ModuleType]
    _lazy_shadowed: frozenset = frozenset()
    _lazy_module: types.ModuleType | None = None

    def _lazy_api(self) -> types.ModuleType | None:
        """The API module, loaded and published on first need; None while this thread is
        importing it (a read during that import fails as on a partly initialised module, and
        `from package import submodule` then imports the submodule)."""
        cls = type(self)
        if cls._lazy_module is not None:
            return cls._lazy_module
        names = _loading.__dict__.setdefault("names", set())
        if self.__name__ in names:
            return None
        names.add(self.__name__)
        try:
            api = cls._lazy_load()  # another thread waits here for the import in progress
        finally:
            names.discard(self.__name__)
        own = self.__dict__
        for name, value in vars(api).items():
            if not name.startswith("_"):
                own[name] = value  # over a submodule the import system bound (fleet.util)
            elif not _dunder(name) and name not in own:
                setattr(cls, name, _ApiState(name))
        cls._lazy_module = api
        return api

    def __getattr__(self, name: str):
        if _dunder(name) and name != "__all__":
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        if name not in type(self)._lazy_shadowed and type(self)._lazy_module is None:
            module = _submodule(self, name)
            if module is not None:
                return module
        api = self._lazy_api()
        if api is not None and name != "__all__":  # import * lists the loaded namespace
            if name in self.__dict__:
                return self.__dict__[name]
            if name.startswith("_") and name in vars(api):
                return vars(api)[name]
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value) -> None:
        if _dunder(name):
            super().__setattr__(name, value)
            return
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            # The import system binding a submodule: no reason to load the API.
            if name not in type(self)._lazy_shadowed:
                super().__setattr__(name, value)
            return
        api = self._lazy_api()
        if api is not None and name in vars(api):
            setattr(api, name, value)
            if name.startswith("_"):
                return  # read from the API module
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        api = None if _dunder(name) else self._lazy_api()
        found = False
        if api is not None and name in vars(api):
            delattr(api, name)
            found = True
        if name in self.__dict__ or not found:
            super().__delattr__(name)

    def __dir__(self) -> list[str]:
        self._lazy_api()
        return sorted(self.__dict__)


def make_lazy(package: types.ModuleType, load: Callable[[], types.ModuleType],
              shadowed: Iterable[str] = ()) -> None:
    """Make `package` (a package's own module, sys.modules[__name__]) load its API on first
    use: `load()` imports the API module and returns it; `shadowed` names the submodules
    whose name is an API value of another kind (they are not bound on the package)."""
    package.__class__ = type("LazyPackage", (LazyPackage,), {
        "_lazy_load": staticmethod(load), "_lazy_shadowed": frozenset(shadowed),
        "__module__": __name__, "__qualname__": "LazyPackage"})
