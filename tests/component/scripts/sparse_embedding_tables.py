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
p.add_argument("--save", default="", help="fleet.save_inference_model here, with the eval predictions")
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
    looked_up, small_looked_up = big(ids), small(ids % 50)
    e = paddle.concat([paddle.reshape(looked_up, [-1, 8]), paddle.reshape(small_looked_up, [-1, 4])], axis=1)
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
    local_small = np.array(scope.find_var("SMALL").get_tensor())
    probe = np.array([[0, 1], [5, 150], [300, 999]], dtype="int64")  # trained and untrained ids
    seen, seen_small = exe.run(evaluate, feed={"ids": probe, "y": np.zeros((3, 1), "float32")},
                               fetch_list=[looked_up, small_looked_up])
    result = {"worker": fleet.worker_index(), "prefetched": prefetched, "received": received,
              "local_big_shape": list(local_big.shape), "local_small_shape": list(local_small.shape),
              "loss_first": float(np.mean(losses[:5])), "loss_last": float(np.mean(losses[-5:])),
              "eval_rows": np.asarray(seen).reshape(-1, 4).tolist(),
              "eval_small_rows": np.asarray(seen_small).reshape(-1, 2).tolist()}
    if prefetched:
        from psjob.foundation.tables import shard_of
        plan = facade.transpiler.plan

        def pserver_rows(table, ids, width):
            shards = shard_of(ids, len(plan.endpoints))
            rows = np.zeros((ids.size, width), "float32")
            for k, ep in enumerate(plan.endpoints):
                if (shards == k).any():
                    rows[shards == k] = facade.rpc_service.prefetch(ep, table, ids[shards == k]).wait()
            return rows
        result["pserver_rows"] = pserver_rows("BIG", probe.reshape(-1), 4).tolist()
        result["pserver_small_rows"] = pserver_rows("SMALL", probe.reshape(-1) % 50, 2).tolist()
        result["local_equals_pserver_after_barrier"] = bool(
            np.array_equal(local_big[:200], pserver_rows("BIG", np.arange(200), 4))
            and np.array_equal(local_small, pserver_rows("SMALL", np.arange(50), 2)))
    if args.save:  # every worker calls it; worker 0 writes the model, the tables pulled from the pservers
        fleet.save_inference_model(exe, args.save, ["ids"], [pred])
        (want,) = exe.run(evaluate, feed={"ids": probe, "y": np.zeros((3, 1), "float32")}, fetch_list=[pred])
        result["predictions"] = np.asarray(want).reshape(-1).tolist()
        result["probe"] = probe.tolist()
    print("RESULT " + json.dumps(result), flush=True)
    fleet.stop_worker()
