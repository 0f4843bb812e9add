"""fleet.load_model under Paddle 2.x Fleet (only the imports name psjob): a distributed
sparse_embedding table and an fc, trained with Adam through exe.run. The worker trains, saves
(fleet.save_persistables), trains on, then loads the save into the running pservers and trains
the same batches again: with one synchronous worker the losses after the load repeat those after
the save exactly (parameters, table rows and Adam's accumulators all restored). A load of a
folder that is not a save, tried right after the save, fails and changes nothing (the losses
after it are the ones the load repeats). Then fleet.save_one_table / load_one_table put the
table's rows back. Last, fleet.save_inference_model, training on, and fleet.load_inference_model:
the parameters and table rows go back to the save's (the first loss of the same batches again
repeats), Adam's dense accumulators keep their trained-on values (the next losses differ), as
Paddle's load_inference_model loads parameters only: from a whole save (which holds them) too. Each worker prints one RESULT json line."""
import argparse
import json

import numpy as np

import psjob as paddle
import psjob.distributed.fleet as fleet

p = argparse.ArgumentParser()
p.add_argument("--save", required=True)
p.add_argument("--not-a-save", required=True)
p.add_argument("--sync", action="store_true")
args = p.parse_args()

paddle.enable_static()
fleet.init()
main, startup = paddle.static.Program(), paddle.static.Program()
main.random_seed = startup.random_seed = 5
with paddle.static.program_guard(main, startup):
    slots = [paddle.static.data(f"s{i}", [None, 1], "int64") for i in range(3)]
    y = paddle.static.data("y", [None, 1], "float32")
    embs = [paddle.static.nn.sparse_embedding(s, size=[100000, 4], param_attr=paddle.ParamAttr(name="TABLE"))
            for s in slots]
    pred = paddle.static.nn.fc(paddle.concat(embs, axis=1), 1)
    loss = paddle.mean(paddle.square(pred - y))
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
    rng = np.random.default_rng(7 + fleet.worker_index())
    batches = [rng.integers(0, 100000, size=(16, 3)) for _ in range(10)]
    target = np.random.default_rng(0).normal(size=100000).astype("float32")

    def train():
        return [float(np.asarray(exe.run(main, feed={"s0": b[:, :1], "s1": b[:, 1:2], "s2": b[:, 2:],
                                                     "y": target[b].sum(axis=1, keepdims=True)},
                                         fetch_list=[loss])[0]).reshape(-1)[0]) for b in batches]

    from psjob.fleet import fleet as facade  # the Fleet behind paddle.distributed.fleet
    from psjob.foundation.tables import shard_of

    def table_rows(ids):
        """TABLE's rows for `ids`, read from the pservers that hold them."""
        ids = ids.reshape(-1)
        endpoints = facade.transpiler.plan.endpoints
        shards, rows = shard_of(ids, len(endpoints)), np.zeros((ids.size, 4), "float32")
        for k, ep in enumerate(endpoints):
            if (shards == k).any():
                rows[shards == k] = facade.rpc_service.prefetch(ep, "TABLE", ids[shards == k]).wait()
        return rows

    first = train()
    fleet.save_persistables(exe, args.save)
    try:
        fleet.load_model(args.not_a_save, 0)
        refused = ""
    except Exception as exc:  # every worker sees worker 0's failure
        refused = f"{type(exc).__name__}: {exc}"
    after_save = train()  # after a refused load: from the saved state still
    fleet.load_model(args.save, 0)
    after_load = train()
    # One table: its rows go back to those of the save.
    fleet.save_one_table(0, args.save + "_table", 0)
    probe = batches[0][:4]
    before = table_rows(probe)
    train()
    moved = not np.array_equal(table_rows(probe), before)
    fleet.load_one_table(0, args.save + "_table", 0)
    try:
        fleet.load_one_table(1, args.save + "_table", 0)
        bad_id = ""
    except ValueError as exc:
        bad_id = str(exc)
    table_restored = moved and bool(np.array_equal(table_rows(probe), before))
    # An inference model: its parameters and rows, not the optimizer's state.
    fleet.save_inference_model(exe, args.save + "_infer", ["s0", "s1", "s2"], pred)
    after_infer_save = train()
    try:
        fleet.load_inference_model(args.save + "_infer", 1)
        infer_mode = ""
    except ValueError as exc:
        infer_mode = str(exc)
    fleet.load_inference_model(args.save + "_infer", 0)
    after_infer_load = train()
    fleet.load_inference_model(args.save, 0)  # a whole save: its accumulators are not loaded
    after_whole_as_infer = train()
    print("RESULT " + json.dumps({"worker": fleet.worker_index(), "first": first, "after_save": after_save,
                                  "after_load": after_load, "refused": refused, "table_restored": table_restored,
                                  "bad_id": bad_id, "after_infer_save": after_infer_save,
                                  "after_infer_load": after_infer_load, "infer_mode": infer_mode,
                                  "after_whole_as_infer": after_whole_as_infer}), flush=True)
    fleet.stop_worker()
