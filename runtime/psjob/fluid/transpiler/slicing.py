"""Cutting variables into blocks, and the names the blocks go by.

A dense variable is cut along dim 0 into at most `slice_count` blocks of at
least `min_block_size` elements, each a whole number of rows (a row is
product(dim[1:]) elements), so a block is a plain sub-tensor and the
pserver's optimizer runs on it unchanged. Concatenating the blocks along
dim 0 gives the variable back.

Names (Fluid's transpiler conventions, which saved checkpoints and the I/O code rely on):

    <var>.block<i>               block i of a sliced variable
    <var>.trainer_<t>            trainer t's copy of a gradient (sync mode, >1 trainer)
    <var>.block<i>.trainer_<t>   both
    <table>@GRAD.trainer_<t>.pserver_<k>   a distributed table's gradient rows for pserver k

`get_varname_parts` splits such a name back into (origin, "block<i>", "trainer_<t>").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

BLOCK_TAG = ".block"
TRAINER_TAG = ".trainer_"


@dataclass(frozen=True)
class VarBlock:
    """One block of a variable: `size` elements starting at block `offset` (the block id)."""

    varname: str
    offset: int
    size: int

    def __str__(self):
        return f"{self.varname}:{self.offset}:{self.size}"

    @property
    def block_id(self) -> int:
        return self.offset


def _numel(shape) -> int:
    return int(reduce(lambda a, b: a * b, shape, 1))


def _shape_of(var) -> tuple:
    shape = tuple(int(d) for d in var.shape)
    if not shape or any(d <= 0 for d in shape):
        raise ValueError(f"cannot slice {var.name!r}: it needs a fully known positive shape, got {list(shape)}")
    return shape


def slice_variable(var_list, slice_count: int, min_block_size: int) -> list[VarBlock]:
    """Blocks for each variable of `var_list`, in order (Fluid's slice_variable).

    A variable gets min(slice_count, floor(numel / min_block_size)) blocks (at
    least one), sized ceil(numel / count) rounded up to whole rows; rounding
    may leave fewer, and the last block may be short.
    """
    if slice_count < 1:
        raise ValueError(f"slice_count must be at least 1, got {slice_count}")
    if min_block_size < 1:
        raise ValueError(f"min_block_size must be positive, got {min_block_size}")
    blocks = []
    for var in var_list:
        shape = _shape_of(var)
        numel = _numel(shape)
        split_count = min(slice_count, max(1, numel // min_block_size))
        block_size = int(math.ceil(numel / split_count))
        if len(shape) >= 2:
            width = _numel(shape[1:])
            remains = block_size % width
            if remains:
                block_size += width - remains
        split_count = int(math.ceil(numel / block_size))
        for block_id in range(split_count):
            size = min(block_size, numel - block_id * block_size)
            blocks.append(VarBlock(var.name, block_id, size))
    return blocks


def row_width(shape) -> int:
    """Elements per dim-0 row."""
    return _numel(shape[1:]) if len(shape) >= 2 else 1


def block_rows(blocks: list[VarBlock], shape) -> list[int]:
    """dim-0 sizes of the blocks of one variable."""
    width = row_width(shape)
    return [b.size // width for b in blocks]


def block_name(name: str, block_id: int) -> str:
    return f"{name}{BLOCK_TAG}{block_id}"


def trainer_name(name: str, trainer_id: int) -> str:
    return f"{name}{TRAINER_TAG}{trainer_id}"


def get_varname_parts(varname: str) -> tuple[str, str, str]:
    """'w@GRAD.block1.trainer_0' → ('w@GRAD', 'block1', 'trainer_0'); missing parts are ''."""
    trainer_idx = varname.find(TRAINER_TAG)
    trainer_part = ""
    if trainer_idx >= 0:
        trainer_part = varname[trainer_idx + 1:]
    else:
        trainer_idx = len(varname)
    block_idx = varname.find(BLOCK_TAG)
    block_part = ""
    if block_idx >= 0:
        block_part = varname[block_idx + 1:trainer_idx]
    else:
        block_idx = len(varname)
    return varname[:min(block_idx, trainer_idx)], block_part, trainer_part


def orig_varname(varname: str) -> str:
    return get_varname_parts(varname)[0]


def same_or_split_var(p_name: str, var_name: str) -> bool:
    """True when p_name is var_name itself or one of its blocks."""
    return p_name == var_name or p_name.startswith(var_name + BLOCK_TAG)
