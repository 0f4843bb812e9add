"""`paddle.distributed.ps.utils.ps_program_builder`: the names of `public` Paddle's module
re-exports (`debug_program`, `logger`, `new_pass`, `ps_log_root_dir`, `is_distributed_env`).
Paddle's `PsProgramBuilder` classes, which rewrite programs for its brpc runtime, are not
here (psjob builds its programs in `fleet.distributed_optimizer(...).minimize`)."""
from __future__ import annotations

from psjob.distributed.ps.utils.public import (
    debug_program,
    is_distributed_env,
    logger,
    new_pass,
    ps_log_root_dir,
)

__all__ = ["debug_program", "is_distributed_env", "logger", "new_pass", "ps_log_root_dir"]
