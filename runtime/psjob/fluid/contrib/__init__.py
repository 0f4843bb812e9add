"""fluid.contrib (Fluid 1.x): the contrib layers recommendation code reaches for
(`fluid.contrib.layers`), and HDFSClient (the Fleet file-system client, as
paddle.distributed.fleet.utils.fs's)."""
from psjob.fluid.contrib import layers
from psjob.fluid.contrib.layers import (
    ctr_metric_bundle,
    fused_embedding_seq_pool,
    partial_concat,
    partial_sum,
    tdm_child,
)

__all__ = ["layers", "ctr_metric_bundle", "fused_embedding_seq_pool", "partial_concat", "partial_sum", "tdm_child"]
