"""paddle.incubate.layers (Paddle 3.0): shuffle_batch, Fluid 1.8's contrib layer of the same op
(psjob.fluid.contrib.layers.shuffle_batch), and the contrib layers Paddle moved here with it
that psjob has: partial_concat, partial_sum and rank_attention."""
from psjob.fluid.contrib.layers import partial_concat, partial_sum, rank_attention, shuffle_batch

__all__ = ["shuffle_batch", "partial_concat", "partial_sum", "rank_attention"]
