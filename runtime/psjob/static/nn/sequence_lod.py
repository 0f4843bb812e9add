"""`paddle.static.nn.sequence_lod`: layers over LoD (variable-length) inputs.

Paddle 3.0's: sequence_pool, sequence_first_step / sequence_last_step (Paddle's sequence_pool
with pool_type "first" / "last"), sequence_conv, sequence_softmax, sequence_expand and
sequence_mask; and Fluid's sequence_unpad, sequence_expand_as and sequence_reshape, which Paddle
2.x kept here with Fluid's signatures. All are Fluid's layers (fluid/layers/sequence_lod.py).
"""
from __future__ import annotations

from psjob.fluid.layers.sequence_lod import (
    sequence_conv,
    sequence_expand,
    sequence_expand_as,
    sequence_mask,
    sequence_pool,
    sequence_reshape,
    sequence_softmax,
    sequence_unpad,
)

__all__ = ["sequence_pool", "sequence_first_step", "sequence_last_step", "sequence_conv", "sequence_softmax",
           "sequence_expand", "sequence_mask", "sequence_unpad", "sequence_expand_as", "sequence_reshape"]


def sequence_first_step(input):
    """The first row of every sequence: [num_seqs, dim]."""
    return sequence_pool(input, "first")


def sequence_last_step(input):
    """The last row of every sequence: [num_seqs, dim]."""
    return sequence_pool(input, "last")
