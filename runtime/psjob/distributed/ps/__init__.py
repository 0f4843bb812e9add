"""`paddle.distributed.ps`: the helpers Paddle's own parameter-server test programs import
(`paddle.distributed.ps.utils.ps_program_builder`: `debug_program`, `logger`, `ps_log_root_dir`).

Paddle's brpc runtime behind this package (its C++ table descriptors, the pass-based program
builders) is Paddle-internal and has no counterpart here; `the_one_ps.TheOnePSRuntime` is
there to refuse by name:
psjob's parameter servers are set up by `fleet.distributed_optimizer(...).minimize` and
`fleet.init_server` / `fleet.init_worker` (docs/user/paddle2.md)."""
from __future__ import annotations
