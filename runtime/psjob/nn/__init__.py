"""paddle.nn in static mode: Layers whose forward appends ops to the current Program.

Call `paddle.enable_static()` before building a Layer: psjob has no dygraph mode.
"""
from psjob.nn import functional, initializer
from psjob.nn import layer as _layer_module
from psjob.nn.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU6,
    Silu,
    Softplus,
    Softshrink,
    Softsign,
    Swish,
    Tanhshrink,
    ThresholdedReLU,
)
from psjob.nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from psjob.nn.common import (
    AlphaDropout,
    BatchNorm,
    BatchNorm1D,
    BatchNorm2D,
    Bilinear,
    CosineSimilarity,
    Dropout,
    Dropout2D,
    Embedding,
    Flatten,
    Identity,
    Linear,
    MaxPool2D,
    Pad1D,
    Pad2D,
    PairwiseDistance,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
    Unfold,
    Upsample,
    UpsamplingBilinear2D,
    UpsamplingNearest2D,
)
from psjob.nn.conv import Conv1D, Conv2D, Conv2DTranspose, Conv3D
from psjob.nn.layer import Layer, LayerDict, LayerList, ParameterList, Sequential
from psjob.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HingeEmbeddingLoss,
    HSigmoidLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
    TripletMarginLoss,
)
from psjob.nn.norm import GroupNorm, InstanceNorm1D, InstanceNorm2D, LayerNorm, SyncBatchNorm
from psjob.nn.pooling import (
    AdaptiveAvgPool1D,
    AdaptiveAvgPool2D,
    AdaptiveMaxPool1D,
    AdaptiveMaxPool2D,
    AvgPool1D,
    AvgPool2D,
    AvgPool3D,
    MaxPool1D,
    MaxPool3D,
)
from psjob.nn.rnn import GRU, LSTM, RNN, BiRNN, GRUCell, LSTMCell, RNNCellBase, SimpleRNN, SimpleRNNCell
from psjob.nn.transformer import MultiHeadAttention, TransformerEncoder, TransformerEncoderLayer


def _layer_class(name):
    # Paddle's paddle.nn.layer is the package of every layer class (paddle.nn.layer.Sigmoid);
    # psjob keeps them in paddle.nn's modules: psjob.nn.layer answers with this package's names.
    if name.startswith("_") or name not in globals() or name in ("functional", "initializer"):
        raise AttributeError(f"module 'psjob.nn.layer' has no attribute {name!r}")
    return globals()[name]


vars(_layer_module)["__getattr__"] = _layer_class  # a module-level __getattr__ (PEP 562)
