"""`paddle.distributed.ps.utils`: `public` (the log helpers) and `ps_program_builder`,
which re-exports them as Paddle's does."""
from __future__ import annotations
