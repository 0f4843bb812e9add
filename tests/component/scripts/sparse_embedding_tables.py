"""Paddle 2.x's sparse embeddings under Fleet (only the imports name psjob): two
`nn.Embedding(sparse=True)` tables, an evaluation program cloned before minimize, async or
sync training fed through exe.run. Each trainer prints one RESULT json line."""
import argparse
import json

import numpy as np

import psjob as paddle
import psjob.distributed.fleet as fleet

p = argparse.ArgumentParser()
p.add_argument("--sync", action="store_true")
p.add_argument("--steps", type=int, default=60)
args = p.parse_args()

paddle.enable_static()
fleet.init()
main, startup = paddle.static.Program(), paddle.static.Program()
main.random_seed = startup.random_seed = 3
with paddle.static.program_guard(main, startup):
    ids = paddle.static.data("ids", [None, 2], "int64")
    y = paddle.static.data("y", [None, 1], "float32")
    big = paddle.nn.Embedding(1000, 4, sparse=True, weight_attr=paddle.ParamAttr(name="BIG"))
    small = paddle.nn.Embedding(50, 2, sparse=True, weight_attr=paddle.ParamAttr(name="SMALL"))
    looked_up = big(ids)
    e = paddle.concat([paddle.reshape(looked_up, [-1, 8]), paddle.reshape(small(ids % 50), [-1, 4])], axis=1)
    pred = paddle.static.nn.fc(e, 1)
    loss = paddle.mean(paddle.square(pred - y))
    evaluate = main.clone(for_test=True)
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = not args.sync
    fleet.distributed_optimizer(paddle.optimizer.Adam(0.05), strategy).minimize(loss)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    fleet.init_worker()
    rng = np.random.default_rng(fleet.worker_index())
    target = np.random.default_rng(0).normal(size=1000).astype("float32")
    losses = []
    for _ in range(args.steps):
        batch = rng.integers(0, 200, size=(32, 2))  # ids 200.. are never trained
        feed = {"ids": batch, "y": target[batch].sum(axis=1, keepdims=True)}
        losses.append(float(np.asarray(exe.run(main, feed=feed, fetch_list=[loss])[0]).reshape(-1)[0]))
    fleet.barrier_worker()
    from psjob.fleet import fleet as facade  # the Fleet behind paddle.distributed.fleet
    program = facade.main_program
    prefetched = sorted({t for op in program.global_block().ops if op.type == "prefetch"
                         for t in op.attr("table_names")})
    received = sorted({n for op in program.global_block().ops if op.type == "recv" for n in op.output("Out")})
    scope = paddle.static.global_scope()
    local_big = np.array(scope.find_var("BIG").get_tensor())
    probe = np.array([[0, 1], [5, 150], [300, 999]], dtype="int64")  # trained and untrained ids
    (seen,) = exe.run(evaluate, feed={"ids": probe, "y": np.zeros((3, 1), "float32")}, fetch_list=[looked_up])
    result = {"worker": fleet.worker_index(), "prefetched": prefetched, "received": received,
              "local_big_shape": list(local_big.shape), "loss_first": float(np.mean(losses[:5])),
              "loss_last": float(np.mean(losses[-5:])), "eval_rows": np.asarray(seen).reshape(-1, 4).tolist()}
    if prefetched:
        from psjob.tables import shard_of
        plan = facade.transpiler.plan
        flat = probe.reshape(-1)
        shards = shard_of(flat, len(plan.endpoints))
        rows = np.zeros((flat.size, 4), "float32")
        for k, ep in enumerate(plan.endpoints):
            if (shards == k).any():
                rows[shards == k] = facade.rpc_service.prefetch(ep, "BIG", flat[shards == k]).wait()
        result["pserver_rows"] = rows.tolist()
        trained = np.arange(200)
        shards = shard_of(trained, len(plan.endpoints))
        server = np.zeros((200, 4), "float32")
        for k, ep in enumerate(plan.endpoints):
            server[shards == k] = facade.rpc_service.prefetch(ep, "BIG", trained[shards == k]).wait()
        result["local_equals_pserver_after_barrier"] = bool(np.array_equal(local_big[:200], server))
    print("RESULT " + json.dumps(result), flush=True)
    fleet.stop_worker()
