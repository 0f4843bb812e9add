"""`paddle.distributed.fleet.meta_optimizers.ps_optimizer`: `ParameterServerOptimizer`, the meta
optimizer Paddle's `fleet.distributed_optimizer(...).minimize` picks in parameter-server mode,
which Paddle's own test programs also drive directly:

    ps_optimizer = ParameterServerOptimizer(inner_optimizer)
    ps_optimizer._set_basic_info(loss, role_maker, inner_optimizer, strategy)
    ps_optimizer.minimize_impl(loss)

`minimize_impl` builds psjob's job as `fleet.distributed_optimizer(inner_optimizer,
strategy).minimize(loss)` does (the fleet must be initialized: `fleet.init()`, as in Paddle,
where the role maker passed here is the fleet's). Paddle's pass context (`pass_ctx`, read by
`paddle.distributed.ps.the_one_ps.TheOnePSRuntime`), `_init_ps_pass_context` and
`_set_origin_programs`'s single-pass use rewrite programs with Paddle's passes for its brpc
runtime: refused by name."""
from __future__ import annotations

from typing import Any

__all__ = ["ParameterServerOptimizer"]


def _refuse(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"ParameterServerOptimizer.{what} is Paddle's pass machinery for its brpc parameter servers (their "
        "program passes and C++ table descriptors); psjob does not have it: minimize_impl(loss) builds "
        "psjob's parameter-server programs, as fleet.distributed_optimizer(optimizer, strategy).minimize(loss)")


class ParameterServerOptimizer:
    """Paddle's parameter-server meta optimizer over psjob's fleet (see the module)."""

    def __init__(self, optimizer: Any) -> None:
        self.inner_opt = optimizer
        self.loss: Any = None
        self.role_maker: Any = None
        self.user_defined_optimizer: Any = optimizer
        self.user_defined_strategy: Any = None

    def _set_basic_info(self, loss: Any, role_maker: Any, user_defined_optimizer: Any,
                        user_defined_strategy: Any) -> None:
        self.loss, self.role_maker = loss, role_maker
        self.user_defined_optimizer, self.user_defined_strategy = user_defined_optimizer, user_defined_strategy

    def _set_origin_programs(self, losses: list[Any]) -> None:
        self.origin_main_programs = [loss.block.program for loss in losses]

    def minimize_impl(self, loss: Any, startup_program: Any = None, parameter_list: Any = None,
                      no_grad_set: Any = None) -> Any:
        from psjob.distributed.fleet import fleet_api
        fleet: Any = fleet_api._fleet  # the Fleet singleton (a name the type checker reads as its module)
        if not fleet.initialized:
            fleet_api.init(self.role_maker)
        optimizer = fleet_api.distributed_optimizer(self.inner_opt, self.user_defined_strategy)
        return optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)

    def _init_ps_pass_context(self, loss: Any, startup_program: Any) -> None:
        raise _refuse("_init_ps_pass_context")

    @property
    def pass_ctx(self) -> Any:
        raise _refuse("pass_ctx")
