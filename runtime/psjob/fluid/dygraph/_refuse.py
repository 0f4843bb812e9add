"""The refusal every dygraph entry point gives: psjob runs static graphs only."""
from __future__ import annotations


class DygraphNotSupported(RuntimeError):
    """Fluid's imperative (dygraph) mode, which psjob does not have."""


def refuse(name: str):
    """A stand-in for `paddle.fluid.dygraph.<name>` that raises DygraphNotSupported when used."""
    def refused(*args, **kwargs):
        raise DygraphNotSupported(
            f"paddle.fluid.dygraph.{name} is not supported by psjob: it runs static graphs only "
            "(build a Program with fluid.layers and run it with fluid.Executor)")
    refused.__name__ = refused.__qualname__ = name
    return refused


def refuse_class(name: str) -> type:
    """A stand-in class for `paddle.fluid.dygraph.<name>`: scripts may subclass it (class Net(
    fluid.dygraph.Layer)) and import it; making an instance raises DygraphNotSupported."""
    def __init__(self, *args, **kwargs):
        raise DygraphNotSupported(
            f"paddle.fluid.dygraph.{name} is not supported by psjob: it runs static graphs only "
            "(build a Program with fluid.layers and run it with fluid.Executor)")
    return type(name, (), {"__init__": __init__, "__module__": "paddle.fluid.dygraph"})
