"""Weight-decay ops that fluid/regularizer.py appends before an optimizer op.

`l2_decay`: Out = Grad + coeff * Param; `l1_decay`: Out = Grad + coeff * sign(Param).

For a SelectedRows Grad the decay is added to the rows present only, once
per row: duplicate ids are summed first (`merge_duplicate_rows`), so the
result equals the decayed dense gradient restricted to the looked-up rows and
the embedding stays sparse (rows never looked up are not decayed — that is
what lazy sparse training means). Out is then a SelectedRows with unique rows.
"""
from __future__ import annotations

from psjob.fluid.core import SelectedRows
from psjob.fluid.framework import GraphError, VarType
from psjob.fluid.ops.registry import in_var, register_op, set_out
from psjob.foundation.kernels.optimizers import merge_duplicate_rows


def _infer(op):
    grad = in_var(op, "Grad")
    param = in_var(op, "Param")
    if grad.type != VarType.SELECTED_ROWS and grad.shape and tuple(grad.shape) != tuple(param.shape):
        raise GraphError(f"op {op.type!r}: Grad {grad.name!r}{list(grad.shape)} does not match "
                         f"Param {param.name!r}{list(param.shape)}")
    set_out(op, "Out", param.shape, grad.dtype)
    out = op.block._find_var_recursive(op.output("Out")[0])
    if out is not None:
        out.type = grad.type


def _decay(op_type, term):
    def kernel(ctx):
        xp = ctx.xp
        param, grad = ctx.input("Param"), ctx.input("Grad")
        coeff = float(ctx.attr("coeff", 0.0))
        if isinstance(grad, SelectedRows):
            rows, values = ((grad.rows, grad.values) if grad.unique
                            else merge_duplicate_rows(xp, grad.rows, grad.values))
            decayed = values + (coeff * term(xp, param[rows])).astype(values.dtype)
            ctx.set_output("Out", SelectedRows(rows, decayed, grad.height, unique=True))
            return
        ctx.set_output("Out", grad + (coeff * term(xp, param)).astype(grad.dtype))

    kernel.__name__ = f"{op_type}_kernel"
    return kernel


register_op("l2_decay", infer_shape=_infer)(_decay("l2_decay", lambda xp, p: p))
register_op("l1_decay", infer_shape=_infer)(_decay("l1_decay", lambda xp, p: xp.sign(p)))
