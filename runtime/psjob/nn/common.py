"""The layers of paddle.nn that CTR models use: Linear, Embedding, activations, Dropout,
BatchNorm1D, Flatten (each creates its parameters on construction, builds ops on call)."""
from __future__ import annotations

from psjob import tensor as _t
from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layers._checks import check_int
from psjob.nn import functional as F
from psjob.nn.layer import Layer
from psjob.param_attr import ParamAttr

__all__ = ["Linear", "Embedding", "ReLU", "Sigmoid", "Tanh", "Softmax", "Dropout", "BatchNorm1D", "BatchNorm", "BatchNorm2D", "MaxPool2D",
           "Flatten",
           "Identity", "Pad1D", "Pad2D", "Dropout2D", "Bilinear", "Unfold", "CosineSimilarity", "PairwiseDistance", "Pad3D",
           "Upsample", "UpsamplingNearest2D", "UpsamplingBilinear2D", "AlphaDropout"]


class Linear(Layer):
    """y = x @ weight + bias; weight is [in_features, out_features] (Paddle's layout)."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self._in = check_int(in_features, "in_features", "Linear", minimum=1)
        self._out = check_int(out_features, "out_features", "Linear", minimum=1)
        self.weight = self.create_parameter([self._in, self._out], weight_attr)
        self.bias = self.create_parameter([self._out], bias_attr, is_bias=True)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self._in}, out_features={self._out}"


class Embedding(Layer):
    """Rows of a [num_embeddings, embedding_dim] table; out is ids.shape + [embedding_dim].
    sparse=True: the gradient is a SelectedRows of the looked-up rows (a sparse table under
    Fleet and the transpiler, as Fluid's embedding(is_sparse=True))."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False,
                 weight_attr=None, name=None):
        super().__init__()
        # Paddle's attribute names, which models read (PaddleRec's TiSAS: item_emb._embedding_dim).
        self._num_embeddings = check_int(num_embeddings, "num_embeddings", "Embedding", minimum=1)
        self._embedding_dim = check_int(embedding_dim, "embedding_dim", "Embedding", minimum=1)
        self._padding_idx = padding_idx
        self._sparse = bool(sparse)
        self.weight = self.create_parameter([self._num_embeddings, self._embedding_dim], weight_attr)

    def forward(self, x):
        return F.embedding_lookup(x, self.weight, self._padding_idx, self._sparse)

    def extra_repr(self):
        return f"{self._num_embeddings}, {self._embedding_dim}, sparse={self._sparse}"


def _activation(name, fn):
    class Activation(Layer):
        def __init__(self, name=None):
            super().__init__()

        def forward(self, x):
            return fn(x)
    Activation.__name__ = Activation.__qualname__ = name
    return Activation


ReLU = _activation("ReLU", F.relu)
Sigmoid = _activation("Sigmoid", F.sigmoid)
Tanh = _activation("Tanh", F.tanh)


class Softmax(Layer):
    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis

    def forward(self, x):
        return F.softmax(x, self._axis)


class Dropout(Layer):
    """Zero each element with probability p while training (mode upscale_in_train by default)."""

    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__()
        self._p, self._axis, self._mode = p, axis, mode

    def forward(self, x):
        return F.dropout(x, self._p, self._axis, self.training, self._mode)


class BatchNorm1D(Layer):
    """Batch normalization of [N, C] or [N, C, L] inputs (data_format NCL) per channel C.

    Training builds the batch_norm op on batch statistics, updating the moving mean and
    variance with `momentum`; eval() (or use_global_stats=True) builds it on the moving ones."""

    _FORMATS: tuple[str, ...] = ("NC", "NCL")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCL", use_global_stats=None, name=None):
        super().__init__()
        layer = type(self).__name__
        if data_format not in self._FORMATS:
            raise ValueError(f"{layer}: data_format must be one of {self._FORMATS}, got {data_format!r}")
        c = check_int(num_features, "num_features", layer, minimum=1)
        self._momentum, self._epsilon, self._use_global_stats = float(momentum), float(epsilon), use_global_stats
        self.weight = self.create_parameter([c], weight_attr, default_initializer=ConstantInitializer(1.0))
        self.bias = self.create_parameter([c], bias_attr, is_bias=True)
        # The moving statistics: non-trainable persistable parameters, as Paddle keeps them.
        self._mean = self.create_parameter([c], ParamAttr(initializer=ConstantInitializer(0.0), trainable=False))
        self._variance = self.create_parameter([c], ParamAttr(initializer=ConstantInitializer(1.0),
                                                              trainable=False))

    def forward(self, x):
        global_stats = bool(self._use_global_stats) if self._use_global_stats is not None else not self.training
        return self._batch_norm(x, not self.training, global_stats)

    def _batch_norm(self, x, is_test, global_stats):
        from psjob.fluid.layer_helper import LayerHelper
        helper = LayerHelper("batch_norm", self._full_name)  # tmp names under the layer, as Paddle
        dtype = x.dtype
        saved_mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
        saved_var = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
        out = helper.create_variable_for_type_inference(dtype)
        helper.append_op(
            type="batch_norm",
            inputs={"X": [x], "Scale": [self.weight], "Bias": [self.bias], "Mean": [self._mean],
                    "Variance": [self._variance]},
            outputs={"Y": [out], "MeanOut": [self._mean], "VarianceOut": [self._variance],
                     "SavedMean": [saved_mean], "SavedVariance": [saved_var]},
            attrs={"momentum": self._momentum, "epsilon": self._epsilon, "is_test": is_test,
                   "data_layout": "NCHW", "use_global_stats": global_stats})
        return out


class BatchNorm2D(BatchNorm1D):
    """Batch normalization of [N, C, H, W] inputs per channel C (`batch_norm2d_N`), as
    BatchNorm1D: the batch_norm op normalizes over every axis but the channel's."""

    _FORMATS: tuple[str, ...] = ("NCHW",)

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, use_global_stats,
                         name)


class MaxPool2D(Layer):
    """paddle.nn.MaxPool2D: functional.max_pool2d with the layer's arguments."""

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format="NCHW", name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, return_mask, ceil_mode, data_format)

    def forward(self, x):
        return F.max_pool2d(x, *self._args)


class BatchNorm(BatchNorm1D):
    """paddle.nn.BatchNorm, Fluid's dygraph BatchNorm kept in Paddle 2.x: per-channel (axis 1)
    batch normalization, then `act`. As in Paddle's static mode, `is_test` and
    `use_global_stats` are fixed at construction; the moving statistics may be named."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        Layer.__init__(self)
        if data_layout != "NCHW":
            raise ValueError(f"BatchNorm: only data_layout 'NCHW' is supported, got {data_layout!r}")
        if act is not None and not hasattr(F, act):
            raise ValueError(f"BatchNorm: unknown act {act!r}")
        if trainable_statistics:
            raise ValueError("BatchNorm: trainable_statistics=True is not supported")
        c = check_int(num_channels, "num_channels", "BatchNorm", minimum=1)
        self._act, self._is_test, self._use_global_stats = act, bool(is_test), bool(use_global_stats)
        self._momentum, self._epsilon = float(momentum), float(epsilon)
        self.weight = self.create_parameter([c], param_attr, dtype, default_initializer=ConstantInitializer(1.0))
        self.bias = self.create_parameter([c], bias_attr, dtype, is_bias=True)
        self._mean = self.create_parameter([c], ParamAttr(name=moving_mean_name, trainable=False,
                                                          initializer=ConstantInitializer(0.0)), dtype)
        self._variance = self.create_parameter([c], ParamAttr(name=moving_variance_name, trainable=False,
                                                              initializer=ConstantInitializer(1.0)), dtype)

    def forward(self, x):
        out = self._batch_norm(x, self._is_test, self._use_global_stats)
        return getattr(F, self._act)(out) if self._act else out



class Flatten(Layer):
    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self._start, self._stop = start_axis, stop_axis

    def forward(self, x):
        return _t.flatten(x, self._start, self._stop)


class Identity(Layer):
    """x itself (paddle.nn.Identity); its arguments are accepted and ignored, as Paddle's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class _Pad(Layer):
    _FORMATS: tuple[str, ...] = ()
    _PAIRS = 0

    def __init__(self, padding, mode="constant", value=0.0, data_format=None, name=None):
        super().__init__()
        layer = type(self).__name__
        data_format = data_format or self._FORMATS[0]
        if data_format not in self._FORMATS:
            raise ValueError(f"{layer}: data_format must be one of {list(self._FORMATS)}, got {data_format!r}")
        pads = [padding] * (2 * self._PAIRS) if isinstance(padding, int) else list(padding)
        if len(pads) != 2 * self._PAIRS:
            raise ValueError(f"{layer}: padding must be an int or {2 * self._PAIRS} ints, got {padding!r}")
        self._pad, self._mode, self._value, self._data_format = pads, mode, float(value), data_format

    def forward(self, x):
        return F.pad(x, self._pad, self._mode, self._value, self._data_format)


class Pad1D(_Pad):
    """Padding of [N, C, L] by [left, right] (paddle.nn.Pad1D; modes as functional.pad)."""
    _FORMATS, _PAIRS = ("NCL", "NLC"), 1


class Pad2D(_Pad):
    """Padding of [N, C, H, W] by [left, right, top, bottom] (paddle.nn.Pad2D; modes as functional.pad)."""
    _FORMATS, _PAIRS = ("NCHW", "NHWC"), 2


class Pad3D(_Pad):
    """Padding of [N, C, D, H, W] by [left, right, top, bottom, front, back] (paddle.nn.Pad3D)."""
    _FORMATS, _PAIRS = ("NCDHW", "NDHWC"), 3


class Dropout2D(Layer):
    """Zero whole channels with probability p while training (paddle.nn.Dropout2D)."""

    def __init__(self, p=0.5, data_format="NCHW", name=None):
        super().__init__()
        self._p, self._data_format = p, data_format

    def forward(self, x):
        return F.dropout2d(x, self._p, self.training, self._data_format)


class Bilinear(Layer):
    """out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]; weight [out, in1, in2], bias [1, out]."""

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self._in1 = check_int(in1_features, "in1_features", "Bilinear", minimum=1)
        self._in2 = check_int(in2_features, "in2_features", "Bilinear", minimum=1)
        self._out = check_int(out_features, "out_features", "Bilinear", minimum=1)
        self.weight = self.create_parameter([self._out, self._in1, self._in2], weight_attr)
        self.bias = self.create_parameter([1, self._out], bias_attr, is_bias=True)

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias)


class Unfold(Layer):
    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self._args = dict(kernel_sizes=kernel_sizes, strides=strides, paddings=paddings, dilations=dilations)

    def forward(self, x):
        return F.unfold(x, **self._args)


class CosineSimilarity(Layer):
    def __init__(self, axis=1, eps=1e-8):
        super().__init__()
        self._axis, self._eps = axis, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self._axis, self._eps)


class PairwiseDistance(Layer):
    def __init__(self, p=2.0, epsilon=1e-6, keepdim=False, name=None):
        super().__init__()
        self._p, self._epsilon, self._keepdim = p, epsilon, keepdim

    def forward(self, x, y):
        return F.pairwise_distance(x, y, self._p, self._epsilon, self._keepdim)


class Upsample(Layer):
    """paddle.nn.Upsample: functional.interpolate with the layer's arguments."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                 data_format="NCHW", name=None):
        super().__init__()
        self._args = dict(size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners,
                          align_mode=align_mode, data_format=data_format)

    def forward(self, x):
        return F.interpolate(x, **self._args)


class UpsamplingNearest2D(Upsample):
    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "nearest", False, 0, data_format)


class UpsamplingBilinear2D(Upsample):
    """Bilinear with align_corners=True, as Paddle's."""

    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "bilinear", True, 0, data_format)


class AlphaDropout(Layer):
    """paddle.nn.AlphaDropout: functional.alpha_dropout while training, x itself in eval()."""

    def __init__(self, p=0.5, name=None):
        super().__init__()
        self._p = p

    def forward(self, x):
        return F.alpha_dropout(x, self._p, self.training)
