"""`paddle.static.nn.sequence_lod`: layers over LoD (variable-length) inputs.

Present: sequence_pool, sequence_first_step / sequence_last_step (Paddle's sequence_pool with
pool_type "first" / "last"), and Fluid's sequence_conv, sequence_unpad, sequence_expand_as and
sequence_reshape, which Paddle 2.x keeps here with Fluid's signatures. Paddle's other sequence
layers (sequence_pad, sequence_softmax, ...) are not in psjob.
"""
from __future__ import annotations

from psjob.fluid.layers.sequence_lod import (
    sequence_conv,
    sequence_expand_as,
    sequence_pool,
    sequence_reshape,
    sequence_unpad,
)

__all__ = ["sequence_pool", "sequence_first_step", "sequence_last_step", "sequence_conv", "sequence_unpad",
           "sequence_expand_as", "sequence_reshape"]


def sequence_first_step(input):
    """The first row of every sequence: [num_seqs, dim]."""
    return sequence_pool(input, "first")


def sequence_last_step(input):
    """The last row of every sequence: [num_seqs, dim]."""
    return sequence_pool(input, "last")
