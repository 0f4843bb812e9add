"""Programs to and from a stable, versioned JSON document.

A serialized program is what a pserver or trainer process is started from
(the transpiler's plan) and what `__model__` holds in an inference model, so
the format is explicit and checked on load:

    {"format": "psjob.program", "version": 1, "random_seed": 0,
     "blocks": [{"idx", "parent_idx", "forward_block_idx",
                 "vars": [{"name", "shape", "dtype", "lod_level", "persistable",
                           "stop_gradient", "type", "is_data", "kind", ...}],
                 "ops": [{"type", "inputs", "outputs", "attrs"}]}]}

Block-valued attributes are written as {"__block__": idx} (or
{"__blocks__": [...]}) and ndarray attributes as {"__ndarray__", "dtype"}.
Loading never re-runs shape inference: the shapes on disk are the truth.
"""
from __future__ import annotations

import json

import numpy as np

from .framework import Block, GraphError, Operator, Parameter, Program, Variable

FORMAT = "psjob.program"
VERSION = 1


class ProgramFormatError(GraphError):
    pass


def program_to_dict(program: Program) -> dict:
    return {"format": FORMAT, "version": VERSION, "random_seed": program.random_seed,
            "blocks": [b.to_dict() for b in program.blocks]}


def program_from_dict(doc: dict) -> Program:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ProgramFormatError("not a psjob program document (missing format marker)")
    if doc.get("version") != VERSION:
        raise ProgramFormatError(f"program format version {doc.get('version')!r} is not supported "
                                 f"(this psjob reads version {VERSION})")
    try:
        program = Program()
        program.random_seed = int(doc.get("random_seed", 0))
        program.blocks = []
        for bd in doc["blocks"]:
            block = Block(program, int(bd["idx"]), int(bd["parent_idx"]))
            block.forward_block_idx = int(bd.get("forward_block_idx", -1))
            program.blocks.append(block)
        for bd, block in zip(doc["blocks"], program.blocks):
            for vd in bd["vars"]:
                block.vars[vd["name"]] = _var_from_dict(block, vd)
            for od in bd["ops"]:
                attrs = {k: _attr_from_json(program, v) for k, v in od["attrs"].items()}
                block.ops.append(Operator(block, od["type"], od["inputs"], od["outputs"], attrs))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ProgramFormatError(f"malformed program document: {type(exc).__name__}: {exc}") from exc
    program._bump()
    return program


def _var_from_dict(block, vd) -> Variable:
    common = dict(lod_level=vd.get("lod_level", 0), persistable=vd.get("persistable", False),
                  type=vd.get("type", "LOD_TENSOR"), is_data=vd.get("is_data", False))
    if vd.get("kind") == "param":
        p = Parameter(block, vd["name"], vd["shape"], vd["dtype"], trainable=vd.get("trainable", True),
                      optimize_attr=vd.get("optimize_attr"), **common)
        return p
    v = Variable(block, vd["name"], vd["shape"], vd["dtype"], stop_gradient=vd.get("stop_gradient", False),
                 **common)
    return v


def _attr_from_json(program, v):
    if isinstance(v, dict):
        if "__block__" in v:
            return program.block(v["__block__"])
        if "__blocks__" in v:
            return [program.block(i) for i in v["__blocks__"]]
        if "__ndarray__" in v:
            return np.asarray(v["__ndarray__"], dtype=v["dtype"])
    return v


def serialize_program(program: Program) -> bytes:
    return json.dumps(program_to_dict(program), sort_keys=True, separators=(",", ":")).encode()


def deserialize_program(data: bytes) -> Program:
    try:
        doc = json.loads(data.decode() if isinstance(data, (bytes, bytearray)) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProgramFormatError(f"program bytes are not valid JSON: {exc}") from exc
    return program_from_dict(doc)


def prune_program(program: Program, targets) -> Program:
    """A copy holding only the global-block ops needed to compute `targets`."""
    names = {t.name if isinstance(t, Variable) else t for t in targets}
    p = program.clone()
    block = p.global_block()
    needed = set(names)
    kept = []
    for op in reversed(block.ops):
        if any(n in needed for n in op.output_arg_names):
            kept.append(op)
            needed.update(op.input_arg_names)
    kept.reverse()
    block.ops = kept
    used = needed | {n for op in kept for n in op.output_arg_names}
    block.vars = {k: v for k, v in block.vars.items() if k in used}
    p.blocks = [block]
    p._bump()
    return p
