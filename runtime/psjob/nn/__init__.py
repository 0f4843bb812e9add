"""paddle.nn in static mode: Layers whose forward appends ops to the current Program.

Call `paddle.enable_static()` before building a Layer: psjob has no dygraph mode.
"""
from psjob.nn import functional, initializer
from psjob.nn.activation import LeakyReLU, PReLU
from psjob.nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from psjob.nn.common import (
                             BatchNorm,
                             BatchNorm1D,
                             BatchNorm2D,
                             Dropout,
                             Embedding,
                             Flatten,
                             Linear,
                             MaxPool2D,
                             ReLU,
                             Sigmoid,
                             Softmax,
                             Tanh,
)
from psjob.nn.conv import Conv1D, Conv2D
from psjob.nn.layer import Layer, LayerList, Sequential
from psjob.nn.loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from psjob.nn.norm import LayerNorm
from psjob.nn.rnn import GRU, LSTM, RNN, BiRNN, GRUCell, LSTMCell, RNNCellBase, SimpleRNN, SimpleRNNCell
from psjob.nn.transformer import MultiHeadAttention, TransformerEncoder, TransformerEncoderLayer
