"""`paddle.fluid.dygraph`: Fluid's imperative mode, which psjob does not have.

The modules exist so that a script importing dygraph names next to its static-graph
code (Paddle 1.8's distributed test harness, test_dist_base.py, does) imports and runs
its static parts; calling any dygraph name raises DygraphNotSupported with what to use
instead."""
from __future__ import annotations

from psjob.fluid.dygraph import base, parallel
from psjob.fluid.dygraph._refuse import DygraphNotSupported, refuse_class
from psjob.fluid.dygraph.base import enabled, guard, no_grad, to_variable
from psjob.fluid.dygraph.parallel import DataParallel, ParallelStrategy, prepare_context

__all__ = ["base", "parallel", "DygraphNotSupported", "enabled", "guard", "no_grad", "to_variable",
           "DataParallel", "ParallelStrategy", "prepare_context"]

# Fluid 1.8's dygraph classes (paddle.fluid.dygraph's layers, containers, optimizers' helpers): each
# imports and may be subclassed; making one raises DygraphNotSupported.
_CLASSES = ("Layer", "Linear", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose", "Pool2D", "Embedding",
            "BatchNorm", "LayerNorm", "GroupNorm", "SpectralNorm", "InstanceNorm", "Dropout", "GRUUnit", "NCE",
            "PRelu", "BilinearTensorProduct", "TreeConv", "Sequential", "LayerList", "ParameterList",
            "ProgramTranslator", "TracedLayer", "BackwardStrategy", "NoamDecay", "PiecewiseDecay",
            "NaturalExpDecay", "ExponentialDecay", "InverseTimeDecay", "PolynomialDecay", "CosineDecay",
            "LinearLrWarmup", "ReduceLROnPlateau", "StepDecay", "MultiStepDecay", "LambdaDecay")
_made: dict = {}


def __getattr__(name: str):
    if name in _CLASSES:
        return _made.setdefault(name, refuse_class(name))
    raise AttributeError(f"module 'paddle.fluid.dygraph' has no attribute {name!r}")
