"""`tdm_child`: Fluid 1.8's tree-based deep match child lookup (fluid.contrib.layers.tdm_child,
PaddleRec's TDM models). TreeInfo [node_nums, 3 + child_nums] holds, per node, its item id
(0: not an item), layer, ancestor and child node ids (0: none). For every id in X:

    Child[..., c]    = TreeInfo[id, 3 + c]               when id != 0 and TreeInfo[id, 3] != 0, else 0
    LeafMask[..., c] = TreeInfo[Child[..., c], 0] != 0   (the child is an item), 0 where Child is 0

Both outputs are shaped X.shape + [child_nums], of the op's dtype; no gradient (as Paddle's).
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import in_var, register_op, set_out


def _shape(op):
    x, tree = in_var(op, "X"), in_var(op, "TreeInfo")
    c = int(op.attr("child_nums", 2))
    if len(tree.shape) != 2 or (tree.shape[1] >= 0 and tree.shape[1] != 3 + c):
        raise GraphError(f"tdm_child: TreeInfo {tree.name}{list(tree.shape)} must be [node_nums, 3 + "
                         f"child_nums] = [node_nums, {3 + c}]")
    if x.dtype not in ("int32", "int64"):
        raise GraphError(f"tdm_child: X {x.name} must hold int32 or int64 node ids, got {x.dtype}")
    dtype = op.attr("dtype") or "int32"
    set_out(op, "Child", list(x.shape) + [c], dtype)
    set_out(op, "LeafMask", list(x.shape) + [c], dtype)


def _host(ctx, value):
    return np.asarray(value if ctx.xp is np else ctx.xp.asnumpy(value))


@register_op("tdm_child", infer_shape=_shape, no_grad_inputs=("X", "TreeInfo"))
def tdm_child(ctx):
    x = _host(ctx, ctx.input("X"))
    tree = _host(ctx, ctx.input("TreeInfo")).astype(np.int64)
    c = int(ctx.attr("child_nums", 2))
    ids = x.astype(np.int64).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= tree.shape[0]):
        bad = ids[(ids < 0) | (ids >= tree.shape[0])][0]
        raise ValueError(f"tdm_child: node id {int(bad)} is outside the tree's {tree.shape[0]} nodes")
    has = (ids != 0) & (tree[ids, 3] != 0)
    child = np.where(has[:, None], tree[ids, 3:3 + c], 0)
    if child.size and (child.min() < 0 or child.max() >= tree.shape[0]):
        raise ValueError(f"tdm_child: TreeInfo names a child outside the tree's {tree.shape[0]} nodes")
    leaf = has[:, None] & (tree[child, 0] != 0)
    dtype = np.dtype(ctx.attr("dtype") or "int32")
    shape = tuple(x.shape) + (c,)
    ctx.set_output("Child", ctx.xp.asarray(child.astype(dtype).reshape(shape)))
    ctx.set_output("LeafMask", ctx.xp.asarray(leaf.astype(dtype).reshape(shape)))
