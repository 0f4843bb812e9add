"""A Paddle 2.x fleet CTR script in the style of PaddleRec's rank/dnn, run by psjob.

    psjob launch --server_num 2 --worker_num 2 examples/paddle2/train.py --data DIR --mode async
    psjob launch --server_num 2 --worker_num 2 examples/paddle2/train.py --data DIR --mode geo

Against the Paddle original only the imports change (`import psjob as paddle`,
`import psjob.distributed.fleet as fleet`): the model is static_model.py's
StaticModel (PaddleRec's, over net.py's nn.Layer DNN), fleet.init from the
launcher's environment, a DistributedStrategy (async, or geo with k_steps), an
InMemoryDataset whose pipe_command runs reader.py (MultiSlot lines),
train_from_dataset with 2 Hogwild threads, and save_inference_model by worker 0.
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
from static_model import StaticModel  # noqa: E402


def auc_state(program, auc):
    """The persistable histograms behind the cumulative AUC (shared by the trainer threads)."""
    (op,) = [op for op in program.global_block().ops if op.type == "auc" and op.output("AUC") == [auc.name]]
    return op.input("StatPos")[0], op.input("StatNeg")[0]


def auc_from_stats(stat_pos, stat_neg):
    pos, neg = stat_pos.ravel()[::-1].astype(np.float64), stat_neg.ravel()[::-1].astype(np.float64)
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    area = np.sum((fp[1:] - fp[:-1]) * (tp[1:] + tp[:-1]) / 2) + fp[0] * tp[0] / 2
    return float(area / (tp[-1] * fp[-1])) if tp[-1] and fp[-1] else 0.5


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True, help="directory of psjob.dataset.ctr part-* files")
    p.add_argument("--mode", default="async", choices=["async", "geo", "sync"])
    p.add_argument("--k_steps", type=int, default=20, help="geo: local steps between exchanges")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.001)
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
    dataset.set_filelist(fleet.util.get_file_shard(sorted(glob.glob(os.path.join(args.data, "part-*")))))
    dataset.load_into_memory()
    main_program = paddle.static.default_main_program()
    stat_names = auc_state(main_program, metrics["auc"])
    for epoch in range(args.epochs):
        dataset.local_shuffle()
        exe.train_from_dataset(main_program, dataset, thread=args.threads, fetch_list=[metrics["cost"], metrics["auc"]],
                               fetch_info=["loss", "auc"], print_period=50)
        scope = paddle.static.global_scope()
        auc = auc_from_stats(*(np.array(scope.find_var(n).get_tensor()) for n in stat_names))
        print(json.dumps({"worker": fleet.worker_index(), "epoch": epoch, "auc": auc}), flush=True)
    if fleet.is_first_worker() and args.save:
        fleet.save_inference_model(exe, args.save, [v.name for v in feeds[1:]], [model.predict])
    fleet.stop_worker()


if __name__ == "__main__":
    main()
