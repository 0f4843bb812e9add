"""Pooling layers beyond MaxPool2D (Paddle's nn/layer/pooling.py): each holds its arguments and
calls the nn.functional pooling of the same name."""
from __future__ import annotations

from psjob.nn import functional as F
from psjob.nn.layer import Layer

__all__ = ["MaxPool1D", "AvgPool1D", "AvgPool2D", "AdaptiveAvgPool1D", "AdaptiveAvgPool2D", "AdaptiveMaxPool1D",
           "AdaptiveMaxPool2D", "MaxPool3D", "AvgPool3D"]


class MaxPool1D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, return_mask, ceil_mode)

    def forward(self, x):
        return F.max_pool1d(x, *self._args)


class AvgPool1D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, exclusive, ceil_mode)

    def forward(self, x):
        return F.avg_pool1d(x, *self._args)


class AvgPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCHW", name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format)

    def forward(self, x):
        return F.avg_pool2d(x, *self._args)


class AdaptiveAvgPool1D(Layer):
    def __init__(self, output_size, name=None):
        super().__init__()
        self._output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self._output_size)


class AdaptiveAvgPool2D(Layer):
    def __init__(self, output_size, data_format="NCHW", name=None):
        super().__init__()
        self._output_size, self._data_format = output_size, data_format

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self._output_size, self._data_format)


class AdaptiveMaxPool1D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size, self._return_mask = output_size, return_mask

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self._output_size, self._return_mask)


class AdaptiveMaxPool2D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size, self._return_mask = output_size, return_mask

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self._output_size, self._return_mask)


class MaxPool3D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
                 name=None):
        super().__init__()
        self._args = dict(kernel_size=kernel_size, stride=stride, padding=padding, return_mask=return_mask,
                          ceil_mode=ceil_mode, data_format=data_format)

    def forward(self, x):
        return F.max_pool3d(x, **self._args)


class AvgPool3D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCDHW", name=None):
        super().__init__()
        self._args = dict(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                          exclusive=exclusive, divisor_override=divisor_override, data_format=data_format)

    def forward(self, x):
        return F.avg_pool3d(x, **self._args)
