"""The Paddle version psjob.fluid answers to, and `fluid.require_version`.

psjob.fluid follows the API of Fluid 1.8.5, the last Fluid 1.x release (fluid.data,
fluid.embedding, DataLoader.from_generator, ...), so a script's version gate is
checked against that: `require_version("1.6.1")` passes, `require_version("2.0")`
and `require_version("1.5", "1.7")` raise, as Paddle 1.8.5 would.
"""
from __future__ import annotations

import re

full_version = "1.8.5"
major, minor, patch = full_version.split(".")
rc = "0"

_FORMAT = re.compile(r"\d+(\.\d+){0,3}")

__all__ = ["require_version"]


def _parts(version: str, arg: str) -> list[int]:
    if not isinstance(version, str):
        raise TypeError(f"require_version: {arg!r} must be a str, got {type(version).__name__}")
    if not _FORMAT.fullmatch(version):
        raise ValueError(f"require_version: {arg!r} must look like '1.5.2.0' (\\d+(\\.\\d+){{0,3}}), "
                         f"got {version!r}")
    parts = [int(p) for p in version.split(".")]
    return parts + [0] * (4 - len(parts))


def require_version(min_version, max_version=None):
    """Raise unless the installed version lies in [min_version, max_version] (Paddle's check
    and messages; versions are compared part by part, missing parts read 0)."""
    low = _parts(min_version, "min_version")
    high = _parts(max_version, "max_version") if max_version is not None else None
    installed = _parts(full_version, "installed")
    if high is not None:
        if not low <= installed <= high:
            raise Exception(f"VersionError: PaddlePaddle version in [{min_version}, {max_version}] required, "
                            f"but {full_version} installed (psjob.fluid follows Fluid {full_version}).")
    elif installed < low:
        raise Exception(f"VersionError: PaddlePaddle version {min_version} or higher is required, but "
                        f"{full_version} installed (psjob.fluid follows Fluid {full_version}).")
