"""Weight decay appended to gradients before the optimizer op.

L2Decay adds coeff * param to the gradient, L1Decay coeff * sign(param). For
a SelectedRows gradient the decay touches only the rows present, so sparse
embeddings stay sparse.
"""
from __future__ import annotations


class WeightDecayRegularizer:
    op_type = ""

    def __init__(self, regularization_coeff=0.0):
        self.coeff = float(regularization_coeff)

    def __call__(self, param, grad, block):
        from psjob.fluid import unique_name
        out = block.create_var(name=unique_name.generate(grad.name + "_decayed"),
                               shape=grad.shape, dtype=grad.dtype, type=grad.type)
        block.append_op(type=self.op_type, inputs={"Param": [param], "Grad": [grad]},
                        outputs={"Out": [out]}, attrs={"coeff": self.coeff})
        return out


class L2DecayRegularizer(WeightDecayRegularizer):
    op_type = "l2_decay"


class L1DecayRegularizer(WeightDecayRegularizer):
    op_type = "l1_decay"


L2Decay = L2DecayRegularizer
L1Decay = L1DecayRegularizer


def append_regularization_ops(params_grads, regularization=None):
    """Replace each grad by its decayed version where a regularizer applies
    (the parameter's own regularizer wins over the optimizer-wide one)."""
    out = []
    for param, grad in params_grads:
        reg = getattr(param, "regularizer", None) or regularization
        if grad is None or reg is None:
            out.append((param, grad))
            continue
        block = param.block.program.global_block()
        with block.program._optimized_guard([param, grad]):
            out.append((param, reg(param, grad, block)))
    return out
