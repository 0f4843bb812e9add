"""Collective ops of NCCL2-mode programs, run on CPU over psjob's trainer ring.

`gen_nccl_id` (Paddle's NCCL2-mode DistributeTranspiler puts it in the startup
program) and `c_gen_nccl_id` form the ring: every trainer rendezvouses with
the others here. `c_allreduce_sum` sums its input over all trainers: a CUDA
tensor (an executor on CUDAPlace) through NCCL when cupy provides it
(psjob.cluster.collective.nccl, the COLLECTIVE_DEVICE hook), anything else on the host. The ring
lives in a higher layer (psjob.cluster.collective); kernels reach it through the
COLLECTIVE hook, so this module imports no transport.
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import SelectedRows, to_numpy
from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import register_op, same_shape
from psjob.foundation import hooks


def _form_ring(ctx, rank, endpoints):
    hooks.lookup(hooks.COLLECTIVE)(int(rank), list(endpoints))
    for slot in ("NCCLID", "Out"):
        if ctx.op.outputs.get(slot):  # the communicator's handle: the rank, for a fetch to show
            ctx.set_output(slot, np.asarray([int(rank)], dtype=np.int32))


@register_op("gen_nccl_id")
def gen_nccl_id(ctx):
    _form_ring(ctx, ctx.attr("trainer_id", 0), ctx.attr("trainers") or [])


@register_op("c_gen_nccl_id")
def c_gen_nccl_id(ctx):
    endpoint, others = ctx.attr("endpoint"), list(ctx.attr("other_endpoints") or [])
    rank = int(ctx.attr("rank", 0))
    _form_ring(ctx, rank, others[:rank] + [endpoint] + others[rank:])


@register_op("c_comm_init")
def c_comm_init(ctx):
    """The ring formed by c_gen_nccl_id is the communicator: nothing more to set up."""


@register_op("c_allreduce_sum", infer_shape=same_shape())
def c_allreduce_sum(ctx):
    x = ctx.input("X")
    if isinstance(x, SelectedRows):
        raise GraphError(f"c_allreduce_sum of {ctx.op.input('X')[0]!r}: sparse (SelectedRows) gradients "
                         "are not all-reduced on CPU; use is_sparse=False, or parameter servers")
    if ctx.xp is not np:
        device = hooks.lookup(hooks.COLLECTIVE_DEVICE)()
        if device is not None:  # NCCL on the GPU, no host copy
            ctx.set_output("Out", device.allreduce(ctx.xp.array(x, copy=True)))
            return
    arr = to_numpy(x)
    dtype = arr.dtype
    if dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    out = hooks.lookup(hooks.COLLECTIVE)().allreduce(arr).astype(dtype, copy=False)
    ctx.set_output("Out", out if ctx.xp is np else ctx.xp.asarray(out))
