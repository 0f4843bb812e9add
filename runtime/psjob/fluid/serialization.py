"""Programs to and from bytes: the JSON of a Program's document, checked on load.

The document itself (its format, version and what it holds) is written and read
by framework.py (`program_to_dict`, `program_from_dict`), since `Program.clone`
is a round trip through it; this module adds the bytes.
"""
from __future__ import annotations

import json

from psjob.fluid.framework import (  # noqa: F401
    FORMAT,
    VERSION,
    Program,
    ProgramFormatError,
    program_from_dict,
    program_to_dict,
    prune_program,
)


def serialize_program(program: Program) -> bytes:
    return json.dumps(program_to_dict(program), sort_keys=True, separators=(",", ":")).encode()


def deserialize_program(data: bytes) -> Program:
    try:
        doc = json.loads(data.decode() if isinstance(data, (bytes, bytearray)) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProgramFormatError(f"program bytes are not valid JSON: {exc}") from exc
    return program_from_dict(doc)
