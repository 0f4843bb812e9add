"""Small program-editing helpers the transpiler passes share."""
from __future__ import annotations

from psjob.fluid.framework import Block, GraphError, Operator, VarType
from psjob.foundation.roles import split_endpoint


class UnionFind:
    """Disjoint sets over hashable items (ops are grouped by identity)."""

    def __init__(self, items):
        self._parent = {id(x): id(x) for x in items}

    def find(self, x) -> int:
        k = id(x) if not isinstance(x, int) else x
        root = k
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[k] != root:  # path compression
            self._parent[k], k = root, self._parent[k]
        return root

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._parent[rb] = ra

    def is_connected(self, a, b) -> bool:
        return self.find(a) == self.find(b)


def ops_connected(op1: Operator, op2: Operator) -> bool:
    """One op reads what the other writes (Fluid's notion of connected ops)."""
    out1, in1 = set(op1.output_arg_names), set(op1.input_arg_names)
    out2, in2 = set(op2.output_arg_names), set(op2.input_arg_names)
    return bool(out1 & in2 or in1 & out2)


def delete_ops(block: Block, ops) -> None:
    doomed = {id(op) for op in ops}
    block.ops = [op for op in block.ops if id(op) not in doomed]
    block.program._bump()


def find_op_by_output_arg(block: Block, name: str, reverse: bool = False) -> int:
    """Index of the first (or, with reverse, last) op writing `name`; -1 if none."""
    indices = range(len(block.ops) - 1, -1, -1) if reverse else range(len(block.ops))
    for i in indices:
        if name in block.ops[i].output_arg_names:
            return i
    return -1


def create_control_var(block: Block, name: str):
    """A RAW placeholder that only orders ops (send → barrier → recv)."""
    return block.create_var(name=name, type=VarType.RAW, persistable=False)


def clone_var_decl(block: Block, var, name: str | None = None, shape=None, persistable=None,
                   type=None):
    """Declare in `block` a variable like `var` (optionally renamed/reshaped)."""
    name = name or var.name
    if block.has_var(name):
        return block.var(name)
    return block.create_var(
        name=name, shape=tuple(shape) if shape is not None else var.shape, dtype=var.dtype,
        lod_level=var.lod_level, persistable=var.persistable if persistable is None else persistable,
        type=type or var.type)


def parse_endpoints(pservers) -> list[str]:
    """'host:port,host:port' (or a list) → checked list of endpoints."""
    if isinstance(pservers, (list, tuple)):
        eps = [str(e).strip() for e in pservers]
    elif isinstance(pservers, str):
        eps = [e.strip() for e in pservers.split(",")] if pservers.strip() else []
    else:
        raise TypeError(f"pservers must be a comma-separated 'host:port' string, got {type(pservers).__name__}")
    if not eps:
        raise ValueError("pservers is empty: pass the pserver endpoints as 'host:port,host:port'")
    for ep in eps:
        split_endpoint(ep, what="pserver endpoint")
    dup = sorted({e for e in eps if eps.count(e) > 1})
    if dup:
        raise ValueError(f"pserver endpoints must be distinct; repeated: {', '.join(dup)}")
    return eps


def clone_block_into(src_program, src_block: Block, dst_program, parent_idx: int) -> Block:
    """Copy a (sub-)block with its vars and ops; block-valued attrs are cloned recursively."""
    new = dst_program._create_block(parent_idx)
    for var in src_block.vars.values():
        clone_var_decl(new, var)
    for op in src_block.ops:
        attrs = {k: clone_block_attr(src_program, v, dst_program, new.idx) for k, v in op.attrs.items()}
        new.ops.append(Operator(new, op.type, op.inputs, op.outputs, attrs))
    dst_program._bump()
    return new


def clone_block_attr(src_program, value, dst_program, parent_idx):
    if isinstance(value, Block):
        return clone_block_into(src_program, value, dst_program, parent_idx)
    if isinstance(value, list) and value and all(isinstance(b, Block) for b in value):
        return [clone_block_into(src_program, b, dst_program, parent_idx) for b in value]
    return value


def require(condition: bool, message: str) -> None:
    if not condition:
        raise GraphError(message)
