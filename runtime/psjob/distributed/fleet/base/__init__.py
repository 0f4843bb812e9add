"""`paddle.distributed.fleet.base` (the module path PaddleRec imports role makers from)."""
from psjob.distributed.fleet.base import role_maker
