"""paddle.nn in static mode: Layers whose forward appends ops to the current Program.

Call `paddle.enable_static()` before building a Layer: psjob has no dygraph mode.
"""
from . import functional, initializer  # noqa: F401
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue  # noqa: F401
from .common import (BatchNorm1D, Dropout, Embedding, Flatten, Linear, ReLU, Sigmoid,  # noqa: F401
                     Softmax, Tanh)
from .conv import Conv2D  # noqa: F401
from .layer import Layer, LayerList, Sequential  # noqa: F401
from .activation import LeakyReLU  # noqa: F401
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss  # noqa: F401
from .norm import LayerNorm  # noqa: F401
