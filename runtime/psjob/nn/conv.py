"""paddle.nn.Conv2D in static mode: weight [out_channels, in_channels/groups, kh, kw]
(`conv2d_N.w_0`) initialised as Paddle's (Normal(0, sqrt(2 / (kh * kw * in_channels))))
unless weight_attr says otherwise, bias [out_channels] (`conv2d_N.b_0`, zeros;
bias_attr=False for none). Arguments and defaults as Paddle's; padding_mode other
than 'zeros' is refused.

paddle.nn.Conv1D likewise: weight [out_channels, in_channels/groups, k] (`conv1d_N.w_0`),
Normal(0, sqrt(2 / (k * in_channels))) by default, bias [out_channels] (`conv1d_N.b_0`);
data_format 'NCL' or 'NLC'.

paddle.nn.Conv3D: weight [out_channels, in_channels/groups, kd, kh, kw] (`conv3d_N.w_0`),
Normal(0, sqrt(2 / (kd * kh * kw * in_channels))) by default, bias [out_channels]
(`conv3d_N.b_0`); data_format 'NCDHW' or 'NDHWC'."""
from __future__ import annotations

import numbers

import numpy as np

from psjob.fluid.initializer import NormalInitializer
from psjob.fluid.layers._checks import check_int
from psjob.nn import functional as F
from psjob.nn.functional.conv import _triple, conv3d_padding, conv_padding
from psjob.nn.layer import Layer

__all__ = ["Conv2D", "Conv1D", "Conv2DTranspose", "Conv3D"]


def _pair(value, what):
    values = [value, value] if isinstance(value, numbers.Integral) else list(value)
    if len(values) != 2:
        raise ValueError(f"Conv2D: {what} must be an int or a pair, got {value!r}")
    return [check_int(v, what, "Conv2D", minimum=1) for v in values]


def _channels(layer, in_channels, out_channels, groups, padding_mode, data_format, formats):
    """A convolution layer's checked (in_channels, out_channels, groups), its padding mode and
    data format checked too."""
    cin = check_int(in_channels, "in_channels", layer, minimum=1)
    cout = check_int(out_channels, "out_channels", layer, minimum=1)
    g = check_int(groups, "groups", layer, minimum=1)
    if cin % g or cout % g:
        raise ValueError(f"{layer}: groups {groups} must divide in_channels {in_channels} and "
                         f"out_channels {out_channels}")
    if padding_mode != "zeros":
        raise ValueError(f"{layer}(padding_mode={padding_mode!r}) is not supported by psjob: only 'zeros' "
                         "(pad the input yourself for reflect/replicate/circular)")
    if data_format not in formats:
        raise ValueError(f"{layer}: data_format must be {' or '.join(repr(f) for f in formats)}, "
                         f"got {data_format!r}")
    return cin, cout, g


def _create_parameters(layer, weight_shape, weight_attr, bias_attr):
    """A conv layer's weight, Normal(0, sqrt(2 / fan_in)) with fan_in = in_channels x the
    kernel's size (Paddle's default for its conv layers), then its bias."""
    std = (2.0 / (np.prod(layer._kernel) * layer._in)) ** 0.5
    layer.weight = layer.create_parameter(weight_shape, weight_attr,
                                          default_initializer=NormalInitializer(0.0, float(std)))
    layer.bias = layer.create_parameter([layer._out], bias_attr, is_bias=True)


class Conv2D(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__()
        self._in, self._out, self._groups = _channels("Conv2D", in_channels, out_channels, groups, padding_mode,
                                                      data_format, ("NCHW", "NHWC"))
        self._kernel = _pair(kernel_size, "kernel_size")
        self._stride, self._dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
        conv_padding(padding, data_format == "NHWC")  # a bad padding fails here, not at the first call
        self._padding, self._data_format = padding, data_format
        _create_parameters(self, [self._out, self._in // self._groups] + self._kernel, weight_attr, bias_attr)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                        self._data_format)

    def extra_repr(self):
        return (f"{self._in}, {self._out}, kernel_size={self._kernel}, stride={self._stride}, "
                f"padding={self._padding}, dilation={self._dilation}, groups={self._groups}, "
                f"data_format={self._data_format}")


class Conv1D(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCL"):
        super().__init__()
        self._in = check_int(in_channels, "in_channels", "Conv1D", minimum=1)
        self._out = check_int(out_channels, "out_channels", "Conv1D", minimum=1)
        self._groups = check_int(groups, "groups", "Conv1D", minimum=1)
        if self._in % self._groups or self._out % self._groups:
            raise ValueError(f"Conv1D: groups {groups} must divide in_channels {in_channels} and "
                             f"out_channels {out_channels}")
        if padding_mode != "zeros":
            raise ValueError(f"Conv1D(padding_mode={padding_mode!r}) is not supported by psjob: only 'zeros' "
                             "(pad the input yourself for reflect/replicate/circular)")
        if data_format not in ("NCL", "NLC"):
            raise ValueError(f"Conv1D: data_format must be 'NCL' or 'NLC', got {data_format!r}")
        kernel = kernel_size if isinstance(kernel_size, numbers.Integral) else list(kernel_size)
        self._kernel = [check_int(k, "kernel_size", "Conv1D", minimum=1)
                        for k in ([kernel] if isinstance(kernel, numbers.Integral) else kernel)]
        if len(self._kernel) != 1:
            raise ValueError(f"Conv1D: kernel_size must be an int or a list of one, got {kernel_size!r}")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._data_format = data_format
        _create_parameters(self, [self._out, self._in // self._groups] + self._kernel, weight_attr, bias_attr)

    def forward(self, x):
        return F.conv1d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                        self._data_format)

    def extra_repr(self):
        return (f"{self._in}, {self._out}, kernel_size={self._kernel}, stride={self._stride}, "
                f"padding={self._padding}, dilation={self._dilation}, groups={self._groups}, "
                f"data_format={self._data_format}")


class Conv2DTranspose(Layer):
    """paddle.nn.Conv2DTranspose: weight [in_channels, out_channels / groups, KH, KW]
    (`conv2d_transpose_N.w_0`, Paddle's default Normal(0, sqrt(2 / (KH * KW * in_channels)))),
    bias [out_channels]; functional.conv2d_transpose on call."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__()
        self._in = check_int(in_channels, "in_channels", "Conv2DTranspose", minimum=1)
        self._out = check_int(out_channels, "out_channels", "Conv2DTranspose", minimum=1)
        self._groups = check_int(groups, "groups", "Conv2DTranspose", minimum=1)
        if self._in % self._groups or self._out % self._groups:
            raise ValueError(f"Conv2DTranspose: groups {groups} must divide in_channels {in_channels} and "
                             f"out_channels {out_channels}")
        self._kernel = _pair(kernel_size, "kernel_size")
        self._args = dict(stride=stride, padding=padding, output_padding=output_padding, groups=self._groups,
                          dilation=dilation, data_format=data_format)
        _create_parameters(self, [self._in, self._out // self._groups] + self._kernel, weight_attr, bias_attr)

    def forward(self, x, output_size=None):
        return F.conv2d_transpose(x, self.weight, self.bias, output_size=output_size, **self._args)


class Conv3D(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCDHW"):
        super().__init__()
        self._in, self._out, self._groups = _channels("Conv3D", in_channels, out_channels, groups, padding_mode,
                                                      data_format, ("NCDHW", "NDHWC"))
        self._kernel = _triple(kernel_size, "kernel_size", "Conv3D")
        self._stride, self._dilation = _triple(stride, "stride", "Conv3D"), _triple(dilation, "dilation", "Conv3D")
        conv3d_padding(padding, data_format == "NDHWC", "Conv3D")  # a bad padding fails here
        self._padding, self._data_format = padding, data_format
        _create_parameters(self, [self._out, self._in // self._groups] + self._kernel, weight_attr, bias_attr)

    def forward(self, x):
        return F.conv3d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                        self._data_format)
