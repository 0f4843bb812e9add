"""What every part of the framework shares, below the IR itself: its error and
the reserved variable names. The op registry (ops/registry.py) needs them and
the IR (framework.py) needs the registry, so they live here, under both."""

GRAD_SUFFIX = "@GRAD"
EMPTY_VAR_NAME = "@EMPTY@"


class GraphError(ValueError):
    """A program is malformed: unknown variable, bad shape, misuse of an API."""
