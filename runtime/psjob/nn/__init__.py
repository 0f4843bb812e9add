"""paddle.nn in static mode: Layers whose forward appends ops to the current Program.

Call `paddle.enable_static()` before building a Layer: psjob has no dygraph mode.
"""
from . import functional, initializer
from .activation import LeakyReLU
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .common import BatchNorm1D, Dropout, Embedding, Flatten, Linear, ReLU, Sigmoid, Softmax, Tanh
from .conv import Conv2D
from .layer import Layer, LayerList, Sequential
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from .norm import LayerNorm
