"""Paddle 2.x's sparse_table_configs under Fleet (only the imports name psjob): one
sparse_embedding "embedding" [1000, 4] trained by the accessor the configuration names, a
loss linear in the rows (sum(emb * w), so the gradients do not depend on when a push lands),
fixed batches. The trainer prints one RESULT json line: the rows the pserver holds after
training (and --shrink calls of fleet.shrink()), for ids 1, 2, 3, 5 and the never-pushed 7."""
import argparse
import json

import numpy as np

import psjob as paddle
import psjob.distributed.fleet as fleet

p = argparse.ArgumentParser()
p.add_argument("--config", required=True, help="json {key below table_parameters.embedding.: value}")
p.add_argument("--batches", required=True, help="json [[[id, w0, w1, w2, w3], ...], ...]")
p.add_argument("--shrink", type=int, default=0, help="call fleet.shrink() this many times after training")
args = p.parse_args()

paddle.enable_static()
fleet.init()
main, startup = paddle.static.Program(), paddle.static.Program()
with paddle.static.program_guard(main, startup):
    ids = paddle.static.data("ids", [None, 1], "int64")
    w = paddle.static.data("w", [None, 4], "float32")
    emb = paddle.static.nn.sparse_embedding(
        ids, size=[1000, 4], param_attr=paddle.ParamAttr(name="embedding",
                                                         initializer=paddle.nn.initializer.Uniform(-0.01, 0.01)))
    loss = paddle.mean(paddle.sum(paddle.reshape(emb, [-1, 4]) * w, axis=1))
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = True
    strategy.a_sync_configs = {"max_merge_var_num": 1}   # one push per batch, as Paddle's probe made them
    strategy.sparse_table_configs = {"embedding": {"table_parameters.embedding." + k: v
                                                   for k, v in json.loads(args.config).items()}}
    fleet.distributed_optimizer(paddle.optimizer.SGD(0.1), strategy).minimize(loss)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    fleet.init_worker()
    for batch in json.loads(args.batches):
        b = np.array(batch, dtype="float64")
        exe.run(main, feed={"ids": b[:, :1].astype("int64"), "w": b[:, 1:].astype("float32")}, fetch_list=[loss])
    fleet.barrier_worker()   # every push is applied once the workers meet
    for _ in range(args.shrink):
        fleet.shrink()
    from psjob.fleet import fleet as facade  # the Fleet behind paddle.distributed.fleet
    (endpoint,) = facade.transpiler.plan.endpoints
    probe = np.array([1, 2, 3, 5, 7], dtype="int64")
    rows = facade.rpc_service.prefetch(endpoint, "embedding", probe).wait()
    print("RESULT " + json.dumps({"ids": probe.tolist(), "rows": np.asarray(rows).tolist()}), flush=True)
    fleet.stop_worker()
