"""`paddle.dataset.common`: the download cache Paddle's dataset readers share.

Mirrors Paddle's module (Fluid 1.x and 2.x alike): `download(url, module_name, md5sum,
save_name=None)` keeps one file per URL at `DATA_HOME/module_name/<last part of the URL>`
(or `save_name`), returns it at once when it exists with that MD5, and otherwise fetches
it, up to three times, raising RuntimeError("Cannot download URL within retry limit 3")
when the MD5 still differs. Programs that ship their own data readers (Paddle's own test
programs among them) call it directly.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import urllib.request

__all__ = ["DATA_HOME", "download", "md5file"]

DATA_HOME = os.path.expanduser("~/.cache/paddle/dataset")
RETRY_LIMIT = 3


def md5file(fname: str) -> str:
    """Hex MD5 of the file `fname`."""
    digest = hashlib.md5()
    with open(fname, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _cached(filename: str, md5sum: str) -> bool:
    return os.path.exists(filename) and md5file(filename) == md5sum


def download(url: str, module_name: str, md5sum: str, save_name: str | None = None) -> str:
    """Path of `url`'s file in the cache, fetched first when absent or its MD5 differs."""
    dirname = os.path.join(DATA_HOME, module_name)
    os.makedirs(dirname, exist_ok=True)
    filename = os.path.join(dirname, url.split("/")[-1] if save_name is None else save_name)
    retry = 0
    while not _cached(filename, md5sum):
        if retry == RETRY_LIMIT:
            raise RuntimeError(f"Cannot download {url} within retry limit {RETRY_LIMIT}")
        retry += 1
        sys.stderr.write(f"Cache file {filename} not found, downloading {url}\n")
        try:
            with urllib.request.urlopen(url) as response, open(filename, "wb") as f:
                shutil.copyfileobj(response, f)
        except OSError as exc:  # unreachable host, HTTP error: counts as a failed try
            sys.stderr.write(f"download of {url} failed: {exc}\n")
    return filename
