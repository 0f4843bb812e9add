"""Where data files come from: local paths today; the seam for object-store URIs.

Every reader opens its files through `open_binary(path)`. A local path opens
the file; a URI (`s3://bucket/key`) is refused with an error naming it until
the object store of the checkpoints (psjob.checkpoint.store) serves reads —
adding it here makes every reader and dataset accept it.
"""
from __future__ import annotations

import os
import re

_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_uri(path) -> bool:
    return bool(_URI.match(os.fspath(path)))


def open_binary(path):
    path = os.fspath(path)
    if is_uri(path):
        raise ValueError(f"{path!r}: reading data from a URI is not supported yet; copy the files to a "
                         "local path (or a mounted volume)")
    return open(path, "rb")
