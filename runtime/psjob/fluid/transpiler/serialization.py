"""Transpiled programs to and from bytes, with their distributed attributes.

`psjob.fluid.serialization` stores blocks, vars and ops. A transpiled program
also carries attributes the I/O code reads (`_is_distributed`, `_endpoints`,
`_ps_endpoint`, `_is_chief`, `_distributed_lookup_tables`,
`_parameters_on_pservers`); these travel in an extra top-level "distributed"
section that the plain loader ignores, so every document stays loadable by
`psjob.fluid.serialization` too.
"""
from __future__ import annotations

import json

from psjob.fluid.serialization import ProgramFormatError, program_from_dict, program_to_dict
from psjob.fluid.transpiler.vars_distributed import VarsDistributed

DIST_KEY = "distributed"


def dist_program_to_dict(program) -> dict:
    doc = program_to_dict(program)
    if getattr(program, "_is_distributed", False):
        overview = program._parameters_on_pservers
        doc[DIST_KEY] = {
            "endpoints": list(program._endpoints),
            "ps_endpoint": program._ps_endpoint,
            "is_chief": bool(program._is_chief),
            "distributed_lookup_tables": list(program._distributed_lookup_tables),
            "parameters_on_pservers": overview.to_dict() if overview is not None else None,
        }
    return doc


def dist_program_from_dict(doc: dict):
    program = program_from_dict(doc)
    dist = doc.get(DIST_KEY)
    if dist is not None:
        try:
            program._is_distributed = True
            program._endpoints = list(dist["endpoints"])
            program._ps_endpoint = dist.get("ps_endpoint", "")
            program._is_chief = bool(dist.get("is_chief", False))
            program._distributed_lookup_tables = _lookup_tables(dist)
            pop = dist.get("parameters_on_pservers")
            program._parameters_on_pservers = VarsDistributed.from_dict(pop) if pop is not None else None
        except (KeyError, TypeError, ValueError) as exc:
            raise ProgramFormatError(f"malformed distributed section: {type(exc).__name__}: {exc}") from exc
    return program


def _lookup_tables(dist: dict) -> list[str]:
    """The table names; a program serialized before several tables were supported carries
    one name (or null) under "distributed_lookup_table"."""
    if "distributed_lookup_tables" in dist:
        names = dist["distributed_lookup_tables"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"distributed_lookup_tables must be a list of names, got {names!r}")
        return list(names)
    old = dist.get("distributed_lookup_table")
    if old is not None and not isinstance(old, str):
        raise TypeError(f"distributed_lookup_table must be a name, got {old!r}")
    return [old] if old else []


def serialize_dist_program(program) -> bytes:
    return json.dumps(dist_program_to_dict(program), sort_keys=True, separators=(",", ":")).encode()


def deserialize_dist_program(data):
    try:
        doc = json.loads(data.decode() if isinstance(data, (bytes, bytearray)) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProgramFormatError(f"program bytes are not valid JSON: {exc}") from exc
    return dist_program_from_dict(doc)
