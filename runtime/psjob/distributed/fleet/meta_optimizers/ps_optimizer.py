"""`paddle.distributed.fleet.meta_optimizers.ps_optimizer`: `ParameterServerOptimizer`,
refused when constructed. In Paddle it rewrites programs with its parameter-server passes
for the brpc runtime and the C++ tables `paddle.distributed.ps.the_one_ps` describes; psjob
builds its parameter-server programs in `fleet.distributed_optimizer(...).minimize(loss)`."""
from __future__ import annotations

from typing import Any


class ParameterServerOptimizer:
    """Refused: Paddle's internal pass-based parameter-server meta optimizer."""

    def __init__(self, optimizer: Any = None, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "paddle.distributed.fleet.meta_optimizers.ps_optimizer.ParameterServerOptimizer is Paddle's "
            "internal meta optimizer for its brpc parameter servers (its passes and C++ table "
            "descriptors); psjob does not have it: use fleet.distributed_optimizer(optimizer, strategy)"
            ".minimize(loss), which builds psjob's parameter-server programs")
