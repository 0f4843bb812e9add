"""`paddle.distributed.fleet.meta_optimizers`: Paddle's internal meta optimizers, which
`fleet.distributed_optimizer` chooses from. psjob has one way to build a parameter-server job,
`fleet.distributed_optimizer(optimizer, strategy).minimize(loss)`; the one class here,
`ps_optimizer.ParameterServerOptimizer`, which Paddle's own test programs construct directly,
builds the job that way (its pass machinery refused by name)."""
from __future__ import annotations
