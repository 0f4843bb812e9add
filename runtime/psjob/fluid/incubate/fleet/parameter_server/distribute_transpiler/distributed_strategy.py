"""Fluid 1.x's StrategyFactory: the strategy handed to `fleet.distributed_optimizer`.

    strategy = StrategyFactory.create_async_strategy()   # or sync, half_async, geo(k)
    optimizer = fleet.distributed_optimizer(fluid.optimizer.SGD(0.01), strategy)

Each strategy carries a DistributeTranspilerConfig (get_program_config) set as Paddle 1.8
sets it, which psjob's Fleet reads for the mode (psjob.fleet.strategy.resolve). One
difference: Paddle's sync strategy marks its config sync_mode=False plus
completely_not_async=True (sync through its communicator); psjob's says sync_mode=True,
the config's own word for the same mode. The build and execution strategies are kept
for scripts that read or set them; they tune nothing in psjob (fluid.compiler).
Trainer and server runtime configs (Paddle's communicator flags) are not here: psjob's
communicator knobs are DistributedStrategy.a_sync_configs (docs/user/paddle2.md).
"""
from __future__ import annotations

from psjob.fluid.compiler import BuildStrategy, ExecutionStrategy
from psjob.fluid.transpiler import DistributeTranspilerConfig

__all__ = ["DistributedStrategy", "SyncStrategy", "AsyncStrategy", "HalfAsyncStrategy", "GeoStrategy",
           "StrategyFactory"]


def _update(target, config, kind, who):
    """Replace `target` by `config` (an instance of `kind`) or set the keys of a dict on it."""
    if isinstance(config, kind):
        return config
    if not isinstance(config, dict):
        raise TypeError(f"{who} takes a dict or a {kind.__name__}, got {type(config).__name__}")
    for key, value in config.items():
        if not hasattr(target, key):
            raise ValueError(f"{kind.__name__} doesn't have key: {key}")
        setattr(target, key, value)
    return target


class DistributedStrategy:
    """Base of the four strategies; make them with StrategyFactory."""

    def __init__(self):
        self._program_config = DistributeTranspilerConfig()
        self._build_strategy = BuildStrategy()
        self._execute_strategy = ExecutionStrategy()
        self.check_program_config()

    def check_program_config(self):
        raise NotImplementedError("use StrategyFactory to create a DistributedStrategy")

    def get_program_config(self):
        return self._program_config

    def set_program_config(self, config):
        self._program_config = _update(self._program_config, config, DistributeTranspilerConfig,
                                       "set_program_config")
        self.check_program_config()

    def get_build_strategy(self):
        return self._build_strategy

    def set_build_strategy(self, config):
        self._build_strategy = _update(self._build_strategy, config, BuildStrategy, "set_build_strategy")

    def get_execute_strategy(self):
        return self._execute_strategy

    def set_execute_strategy(self, config):
        self._execute_strategy = _update(self._execute_strategy, config, ExecutionStrategy,
                                         "set_execute_strategy")


class SyncStrategy(DistributedStrategy):
    def check_program_config(self):
        self._program_config.sync_mode = True


class AsyncStrategy(DistributedStrategy):
    def check_program_config(self):
        self._program_config.sync_mode = False
        self._program_config.runtime_split_send_recv = True


class HalfAsyncStrategy(DistributedStrategy):
    def check_program_config(self):
        self._program_config.sync_mode = False
        self._program_config.runtime_split_send_recv = True
        self._program_config.half_async = True


class GeoStrategy(DistributedStrategy):
    def __init__(self, update_frequency=100):
        super().__init__()
        self._program_config.geo_sgd_need_push_nums = update_frequency

    def check_program_config(self):
        self._program_config.sync_mode = False
        self._program_config.runtime_split_send_recv = True
        self._program_config.geo_sgd_mode = True


class StrategyFactory:
    @staticmethod
    def create_sync_strategy():
        return SyncStrategy()

    @staticmethod
    def create_half_async_strategy():
        return HalfAsyncStrategy()

    @staticmethod
    def create_async_strategy():
        return AsyncStrategy()

    @staticmethod
    def create_geo_strategy(update_frequency=100):
        return GeoStrategy(update_frequency)
