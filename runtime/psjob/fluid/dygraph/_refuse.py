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
