"""paddle.nn.Layer in static mode, and the containers Sequential, LayerList, LayerDict and
ParameterList.

As in Paddle's static mode, a Layer creates its parameters when it is constructed — in
the default main program, initialized by the default startup program — and each call
of `forward` appends ops to the current main program. Calling a layer twice builds its
ops twice over the same parameters.
"""
from __future__ import annotations

import collections
import re

import numpy as np

from psjob import device
from psjob.fluid import unique_name
from psjob.fluid.core import global_scope
from psjob.fluid.framework import Parameter
from psjob.fluid.layer_helper import LayerHelper
from psjob.param_attr import ParamAttr

__all__ = ["Layer", "Sequential", "LayerList", "LayerDict", "ParameterList"]


def _snake(name: str) -> str:
    """Paddle's _convert_camel_to_snake: Linear → linear, BatchNorm1D → batch_norm1d, Conv2D → conv2d
    (a capital after a digit starts no new word), so parameter names match Paddle's."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


class Layer:
    def __init__(self, name_scope=None, dtype="float32"):
        device.require_static(f"paddle.nn.{type(self).__name__}()")
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        self.training = True
        self._dtype = dtype
        self._full_name = unique_name.generate(name_scope or _snake(type(self).__name__))

    # -- building ---------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *inputs, **kwargs):
        return self.forward(*inputs, **kwargs)

    def full_name(self) -> str:
        return self._full_name

    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None):
        """A parameter of this layer, named `<layer>.w_N` / `<layer>.b_N` unless attr names it."""
        attr = ParamAttr._to_attr(attr)
        param = LayerHelper(self._full_name, self._full_name).create_parameter(attr, list(shape), dtype or self._dtype,
                                                              is_bias, default_initializer)
        if param is not None:
            param.need_clip = getattr(attr, "need_clip", True)
        return param

    # -- registration -----------------------------------------------------------------
    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Layer):
            self._sub_layers[name] = value
        else:
            self._parameters.pop(name, None)
            self._sub_layers.pop(name, None)
        object.__setattr__(self, name, value)

    def add_sublayer(self, name, sublayer):
        if not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer({name!r}): expected a paddle.nn.Layer, got {type(sublayer).__name__}")
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def add_parameter(self, name, parameter):
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter({name!r}): expected a Parameter, got {type(parameter).__name__}")
        self._parameters[str(name)] = parameter
        return parameter

    # -- traversal --------------------------------------------------------------------
    def named_sublayers(self, prefix="", include_self=False, layers_set=None):
        layers_set = set() if layers_set is None else layers_set
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None or id(layer) in layers_set:
                continue
            sub_prefix = f"{prefix}.{key}" if prefix else key
            layers_set.add(id(layer))
            yield sub_prefix, layer
            yield from layer.named_sublayers(sub_prefix, False, layers_set)

    def sublayers(self, include_self=False):
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        seen = set()
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield name, layer

    def children(self):
        return [layer for _, layer in self.named_children()]

    def named_parameters(self, prefix="", include_sublayers=True):
        seen = set()
        owners = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in owners:
            for key, param in layer._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{layer_prefix}.{key}" if layer_prefix else key), param

    def parameters(self, include_sublayers=True):
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    # -- modes ------------------------------------------------------------------------
    def train(self):
        """Build training ops from now on (dropout active, batch norm on batch statistics)."""
        for layer in self.sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self):
        """Build inference ops from now on; programs already built keep the ops they have."""
        for layer in self.sublayers(include_self=True):
            layer.training = False
        return self

    # -- state ------------------------------------------------------------------------
    def state_dict(self, include_sublayers=True):
        """{structured name: Parameter} (static mode: the Variables; their values are in the scope)."""
        return collections.OrderedDict(self.named_parameters(include_sublayers=include_sublayers))

    def set_state_dict(self, state_dict, use_structured_name=True):
        """Write arrays into the global scope for this layer's parameters."""
        params = self.state_dict()
        by_name = {p.name: p for p in params.values()}
        for key, value in state_dict.items():
            param = params.get(key) if use_structured_name else by_name.get(key)
            if param is None:
                raise KeyError(f"set_state_dict: {type(self).__name__} has no parameter {key!r}")
            arr = np.array(value, dtype=param.dtype)
            if tuple(arr.shape) != tuple(param.shape):
                raise ValueError(f"set_state_dict: {key!r} is {list(param.shape)}, got {list(arr.shape)}")
            global_scope().var(param.name).get_tensor().set(arr)

    set_dict = set_state_dict
    load_dict = set_state_dict

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"({name}): {layer!r}".replace("\n", "\n  ") for name, layer in self._sub_layers.items()]
        body = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({body})"
        return f"{type(self).__name__}({body}\n  " + "\n  ".join(lines) + "\n)"


class Sequential(Layer):
    """Layers called in order; built from layers or from (name, layer) pairs."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (list, tuple)) and layers[0] \
                and isinstance(layers[0][0], (list, tuple)):
            layers = layers[0]
        for i, item in enumerate(layers):
            if isinstance(item, (list, tuple)):
                self.add_sublayer(item[0], item[1])
            else:
                self.add_sublayer(str(i), item)

    def __getitem__(self, index):
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        return layers[index]

    def __len__(self):
        return len(self._sub_layers)

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x


class LayerList(Layer):
    """A list of sublayers, registered so that their parameters belong to the owner."""

    def __init__(self, sublayers=None):
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def append(self, sublayer):
        self.add_sublayer(str(len(self._sub_layers)), sublayer)
        return self

    def extend(self, sublayers):
        for layer in sublayers:
            self.append(layer)
        return self

    def insert(self, index, sublayer):
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._sub_layers.clear()
        for layer in layers:
            self.append(layer)

    def __getitem__(self, index):
        layers = list(self._sub_layers.values())
        return LayerList(layers[index]) if isinstance(index, slice) else layers[index]

    def __setitem__(self, index, sublayer):
        key = list(self._sub_layers)[index]
        self._sub_layers[key] = sublayer

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


class LayerDict(Layer):
    """Sublayers by name, in insertion order (paddle.nn.LayerDict), registered with the owner."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, sublayer):
        self.add_sublayer(key, sublayer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key):
        return key in self._sub_layers

    def clear(self):
        self._sub_layers.clear()

    def pop(self, key):
        return self._sub_layers.pop(key)

    def keys(self):
        return self._sub_layers.keys()

    def items(self):
        return self._sub_layers.items()

    def values(self):
        return self._sub_layers.values()

    def update(self, sublayers):
        """From a dict / LayerDict, or from an iterable of (name, layer) pairs."""
        items = sublayers.items() if isinstance(sublayers, (dict, LayerDict)) else sublayers
        for i, item in enumerate(items):
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise ValueError(f"LayerDict.update: element {i} must be a (name, layer) pair, got {item!r}")
            self.add_sublayer(item[0], item[1])


class ParameterList(Layer):
    """Parameters in a list (paddle.nn.ParameterList), registered as "0", "1", ... with the owner."""

    def __init__(self, parameters=None):
        super().__init__()
        for param in parameters or ():
            self.append(param)

    def append(self, parameter):
        self.add_parameter(str(len(self._parameters)), parameter)
        return self

    def __getitem__(self, index):
        return list(self._parameters.values())[index]

    def __setitem__(self, index, parameter):
        key = list(self._parameters)[index]
        self.add_parameter(key, parameter)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

