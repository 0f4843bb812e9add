"""fluid.compiler: CompiledProgram lives with the Executor."""
from .executor import CompiledProgram  # noqa: F401


class BuildStrategy:
    """Accepted for compatibility; psjob's executor has no graph passes to tune."""


class ExecutionStrategy:
    """Accepted for compatibility (thread counts etc. have no effect)."""
