"""`paddle.distributed.ps.the_one_ps`: `TheOnePSRuntime`, refused when constructed. In
Paddle it is the runtime of its brpc parameter servers and builds their C++ descriptors
(`ps_desc_builder.build_worker_desc()` / `build_server_desc()`, text protobufs of Paddle's
`the_one_ps.proto`); psjob's servers are set up by `fleet.init_server()` / `fleet.run_server()`
and `fleet.init_worker()` after `fleet.distributed_optimizer(...).minimize(loss)`, and have
no such descriptor."""
from __future__ import annotations

from typing import Any


class TheOnePSRuntime:
    """Refused: Paddle's internal brpc parameter-server runtime."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "paddle.distributed.ps.the_one_ps.TheOnePSRuntime is Paddle's internal runtime for its brpc "
            "parameter servers (its C++ table descriptors); psjob does not have it: start the servers "
            "and workers with fleet.init_server()/run_server() and fleet.init_worker() after "
            "fleet.distributed_optimizer(optimizer, strategy).minimize(loss)")
