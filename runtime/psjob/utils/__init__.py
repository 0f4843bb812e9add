"""`paddle.utils` (Paddle 2.x), the part static-graph scripts use: `unique_name`."""
from psjob.utils import unique_name
