"""Kernel modules. Each module registers its ops on import (see registry.py);
`load_all` imports every module in this package so adding an op file is enough."""
import importlib
import pkgutil


def load_all():
    for info in pkgutil.iter_modules(__path__):
        if info.name != "registry":
            importlib.import_module(f"{__name__}.{info.name}")
