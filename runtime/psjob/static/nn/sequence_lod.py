"""`paddle.static.nn.sequence_lod`: layers over LoD (variable-length) inputs.

Present: sequence_pool, and sequence_first_step / sequence_last_step (Paddle's
sequence_pool with pool_type "first" / "last"). Paddle's other sequence layers
(sequence_conv, sequence_pad, ...) are not in psjob.
"""
from __future__ import annotations

from psjob.fluid.layers.sequence_lod import sequence_pool

__all__ = ["sequence_pool", "sequence_first_step", "sequence_last_step"]


def sequence_first_step(input):
    """The first row of every sequence: [num_seqs, dim]."""
    return sequence_pool(input, "first")


def sequence_last_step(input):
    """The last row of every sequence: [num_seqs, dim]."""
    return sequence_pool(input, "last")
