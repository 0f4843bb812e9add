"""`paddle.utils` (Paddle 2.x), the part static-graph scripts use: `unique_name`."""
from . import unique_name
