"""`paddle.utils` (Paddle 2.x), the part static-graph scripts use: `unique_name`, `require_version`."""
from psjob.fluid.version import require_version
from psjob.utils import unique_name

__all__ = ["unique_name", "require_version"]
