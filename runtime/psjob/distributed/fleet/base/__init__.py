"""`paddle.distributed.fleet.base` (the module path PaddleRec imports role makers from)."""
from . import role_maker
