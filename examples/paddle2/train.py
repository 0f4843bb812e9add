"""A Paddle 2.x fleet CTR script in the style of PaddleRec's rank/dnn, run by psjob.

    psjob launch --server_num 2 --worker_num 2 examples/paddle2/train.py --data DIR --mode async
    psjob launch --server_num 2 --worker_num 2 examples/paddle2/train.py --data DIR --mode geo

Against the Paddle original only the imports change (`import psjob as paddle`,
`import psjob.distributed.fleet as fleet`): the model is static_model.py's
StaticModel (PaddleRec's, over net.py's nn.Layer DNN), fleet.init from the
launcher's environment, a DistributedStrategy (async, or geo with k_steps), an
InMemoryDataset whose pipe_command runs reader.py (MultiSlot lines),
train_from_dataset with 2 Hogwild threads, and save_inference_model (collective: worker 0 writes).

Each epoch starts from zeroed AUC statistics (PaddleRec's reset_auc), so the
AUC printed is that epoch's, not a mix with the earlier ones; the workers sum
their statistics with fleet.util.all_reduce into the job's AUC. After training
every worker meets at fleet.barrier_worker(), then worker 0 saves the inference
model and, with --save, the trained program's predictions on the first rows of
the data (`predictions.npz` beside the model), which a fresh process loading
the model must reproduce.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

import psjob as paddle                          # Paddle: import paddle
import psjob.distributed.fleet as fleet         # Paddle: import paddle.distributed.fleet as fleet

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from static_model import StaticModel


def auc_state(program, auc):
    """The persistable histograms behind the cumulative AUC (shared by the trainer threads)."""
    (op,) = [op for op in program.global_block().ops if op.type == "auc" and op.output("AUC") == [auc.name]]
    return op.input("StatPos")[0], op.input("StatNeg")[0]


def auc_from_stats(stat_pos, stat_neg):
    pos, neg = stat_pos.ravel()[::-1].astype(np.float64), stat_neg.ravel()[::-1].astype(np.float64)
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    area = np.sum((fp[1:] - fp[:-1]) * (tp[1:] + tp[:-1]) / 2) + fp[0] * tp[0] / 2
    return float(area / (tp[-1] * fp[-1])) if tp[-1] and fp[-1] else 0.5


def feeds_of(files, batch_size):
    """Batches of `files` as the program's feed: each slot's first id (the reader's rule) as a
    LoD tensor, the dense features, the label."""
    from psjob.dataset import ctr
    for batch in ctr.batches(files, batch_size):
        rows = len(batch.label)
        feed = {"dense_input": batch.dense.astype("float32"), "label": batch.label.reshape(-1, 1)}
        for s in range(ctr.NUM_SLOTS):
            feed[f"C{s + 1}"] = (batch.ids[s][batch.lod[s][:-1]].reshape(-1, 1), [np.arange(rows + 1)])
        yield feed


def reset_auc(scope, stat_names):
    """PaddleRec's reset_auc: zero the AUC statistics, so the next AUC is over what follows."""
    for name in stat_names:
        tensor = scope.find_var(name).get_tensor()
        tensor.set(np.zeros_like(np.array(tensor)), paddle.CPUPlace())


def job_auc(scope, stat_names):
    """(this worker's AUC, the job's AUC: every worker's statistics summed by fleet.util.all_reduce)."""
    stats = np.stack([np.array(scope.find_var(n).get_tensor()) for n in stat_names])
    return auc_from_stats(*stats), auc_from_stats(*fleet.util.all_reduce(stats, "sum"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True, help="directory of psjob.dataset.ctr part-* files")
    p.add_argument("--mode", default="async", choices=["async", "geo", "sync"])
    p.add_argument("--k_steps", type=int, default=20, help="geo: local steps between exchanges")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    # PaddleRec's rank/dnn config (Adam, 1e-3). At 5e-3 every mode overfits this data (held-out
    # AUC 0.63-0.66, docs/user/paddle2.md).
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--reference_rows", type=int, default=64, help="rows of predictions.npz")
    p.add_argument("--holdout_files", type=int, default=0,
                   help="the last N part-* files are not trained on: the workers report the AUC on them")
    p.add_argument("--save", default="", help="worker 0 saves the inference model here")
    args = p.parse_args()

    from psjob.dataset import ctr
    paddle.enable_static()
    fleet.init()
    model = StaticModel({"sparse_feature_number": ctr.SPARSE_FEATURE_DIM, "sparse_feature_dim": 8,
                         "sparse_inputs_slots": 27, "dense_input_dim": 13, "fc_sizes": [64, 32],
                         "learning_rate": args.lr})
    feeds = model.create_feeds()
    metrics = model.net(feeds)
    test_program = paddle.static.default_main_program().clone(for_test=True)  # before minimize, as Paddle wants
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = args.mode != "sync"
    if args.mode == "geo":
        strategy.a_sync_configs = {"k_steps": args.k_steps}
    optimizer = fleet.distributed_optimizer(paddle.optimizer.Adam(args.lr, lazy_mode=True), strategy)
    optimizer.minimize(metrics["cost"])

    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    dataset = paddle.distributed.InMemoryDataset()
    reader = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reader.py")
    dataset.init(batch_size=args.batch_size, thread_num=args.threads, use_var=feeds,
                 pipe_command=f"{sys.executable} {reader}")
    files = sorted(glob.glob(os.path.join(args.data, "part-*")))
    train_files, test_files = files[:len(files) - args.holdout_files], files[len(files) - args.holdout_files:]
    dataset.set_filelist(fleet.util.get_file_shard(train_files))
    dataset.load_into_memory()
    main_program = paddle.static.default_main_program()
    stat_names = auc_state(main_program, metrics["auc"])
    scope = paddle.static.global_scope()
    for epoch in range(args.epochs):
        reset_auc(scope, stat_names)  # this epoch's training AUC, not the run's
        dataset.local_shuffle()
        exe.train_from_dataset(main_program, dataset, thread=args.threads, fetch_list=[metrics["cost"], metrics["auc"]],
                               fetch_info=["loss", "auc"], print_period=50)
        auc, job = job_auc(scope, stat_names)
        print(json.dumps({"worker": fleet.worker_index(), "epoch": epoch, "auc": auc, "job_auc": job}), flush=True)
    fleet.barrier_worker()  # every worker's updates are on the pservers, and this worker reads them
    if test_files:
        reset_auc(scope, stat_names)
        for feed in feeds_of(fleet.util.get_file_shard(test_files), 1000):
            exe.run(test_program, feed=feed, fetch_list=[])
        auc, job = job_auc(scope, stat_names)
        print(json.dumps({"worker": fleet.worker_index(), "test_auc": auc, "job_test_auc": job}), flush=True)
    if args.save:  # collective, as in Paddle: every worker calls it, worker 0 writes
        fleet.save_inference_model(exe, args.save, [v.name for v in feeds[1:]], [model.predict])
    if fleet.is_first_worker() and args.save:
        feed = next(feeds_of(files, args.reference_rows))
        (prob,) = exe.run(test_program, feed=feed, fetch_list=[model.predict])
        np.savez(os.path.join(args.save, "predictions.npz"), prob=prob,
                 **{name: value[0] if isinstance(value, tuple) else value for name, value in feed.items()})
    fleet.stop_worker()


if __name__ == "__main__":
    main()
