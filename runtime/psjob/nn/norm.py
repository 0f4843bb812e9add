"""paddle.nn.LayerNorm (Paddle's nn/layer/norm.py): layer normalization over the trailing
`normalized_shape` dimensions, with a scale (initialized to 1) and a shift (to 0) of
prod(normalized_shape) elements each; weight_attr / bias_attr False leaves one out.

GroupNorm and InstanceNorm1D/2D normalize each sample's channel groups (each channel) over
their elements, then a per-channel scale (1) and shift (0), built from tensor ops with
registered gradients; SyncBatchNorm is BatchNorm2D on psjob's one device per trainer."""
from __future__ import annotations

import numpy as np

from psjob.fluid.initializer import ConstantInitializer
from psjob.fluid.layers._checks import check_int, check_int_list
from psjob.nn import functional as F
from psjob.nn.common import BatchNorm2D
from psjob.nn.layer import Layer

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1D", "InstanceNorm2D", "SyncBatchNorm"]


class LayerNorm(Layer):
    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self._shape = check_int_list(shape, "normalized_shape", "LayerNorm")
        if not self._shape or any(d < 1 for d in self._shape):
            raise ValueError(f"LayerNorm: normalized_shape {normalized_shape!r} must be positive sizes")
        self._epsilon = float(epsilon)
        size = [int(np.prod(self._shape))]
        self.weight = None if weight_attr is False else self.create_parameter(
            size, weight_attr, default_initializer=ConstantInitializer(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(size, bias_attr, is_bias=True)

    def forward(self, x):
        return F.layer_norm(x, self._shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self):
        return f"normalized_shape={self._shape}, epsilon={self._epsilon}"


class GroupNorm(Layer):
    """paddle.nn.GroupNorm: the C channels of [N, C, ...] in num_groups groups, each normalized
    over its channels and elements per sample, then a per-channel scale and shift."""

    def __init__(self, num_groups, num_channels, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__()
        self._groups = check_int(num_groups, "num_groups", "GroupNorm", minimum=1)
        self._channels = check_int(num_channels, "num_channels", "GroupNorm", minimum=1)
        if self._channels % self._groups:
            raise ValueError(f"GroupNorm: num_channels {num_channels} must be a multiple of num_groups {num_groups}")
        if data_format not in ("NCHW", "NCL", "NC", "NCDHW"):
            raise ValueError(f"GroupNorm: only channel-first data_format is supported, got {data_format!r}")
        self._epsilon = float(epsilon)
        c = [self._channels]
        self.weight = None if weight_attr is False else self.create_parameter(
            c, weight_attr, default_initializer=ConstantInitializer(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(c, bias_attr, is_bias=True)

    def forward(self, x):
        if x.shape[1] not in (self._channels, -1):
            raise ValueError(f"GroupNorm: {x.name}{list(x.shape)} must have {self._channels} channels on axis 1")
        return F.group_norm(x, self._groups, self._epsilon, self.weight, self.bias)


class InstanceNorm1D(Layer):
    """paddle.nn.InstanceNorm1D: each channel of each sample of [N, C, L] normalized over L, then
    a per-channel scale and shift (weight_attr / bias_attr False: none)."""

    _DIMS = 3

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format=None, name=None):
        super().__init__()
        layer = type(self).__name__
        self._c = check_int(num_features, "num_features", layer, minimum=1)
        self._epsilon = float(epsilon)
        self.scale = None if weight_attr is False else self.create_parameter(
            [self._c], weight_attr, default_initializer=ConstantInitializer(1.0))
        self.bias = None if bias_attr is False else self.create_parameter([self._c], bias_attr, is_bias=True)

    def forward(self, x):
        layer = type(self).__name__
        if len(x.shape) != self._DIMS or x.shape[1] not in (self._c, -1):
            raise ValueError(f"{layer}: {x.name}{list(x.shape)} must be {self._DIMS}-D with {self._c} channels")
        return F.instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon)


class InstanceNorm2D(InstanceNorm1D):
    """paddle.nn.InstanceNorm2D: as InstanceNorm1D over the H * W elements of [N, C, H, W]."""

    _DIMS = 4


class SyncBatchNorm(BatchNorm2D):
    """paddle.nn.SyncBatchNorm: batch statistics synchronized across the devices of one trainer;
    a psjob trainer has one device, so this is BatchNorm2D's computation (any rank >= 2)."""

    _FORMATS: tuple[str, ...] = ("NCHW", "NCL", "NC", "NCDHW")

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        return layer
