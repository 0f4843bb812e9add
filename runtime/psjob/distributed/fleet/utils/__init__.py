"""`paddle.distributed.fleet.utils`: `ps_util.DistributedInfer` (parameter-server inference)."""
