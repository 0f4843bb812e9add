"""A Paddle 2.x fleet CTR script in the style of PaddleRec's rank/dnn, run by psjob.

    psjob launch --server_num 2 --worker_num 2 examples/paddle2/train.py --data DIR --mode async
    psjob launch --server_num 2 --worker_num 2 examples/paddle2/train.py --data DIR --mode geo

It changes only imports against the Paddle original (`import psjob as paddle`,
`import psjob.distributed.fleet as fleet`): fleet.init from the launcher's
environment, a DistributedStrategy (async, or geo with k_steps), an
InMemoryDataset whose pipe_command runs reader.py (MultiSlot lines),
train_from_dataset with 2 Hogwild threads, and save_inference_model by worker 0.

NOTE — model code: PaddleRec builds this model from paddle.nn Layers in static
mode. psjob's paddle.nn front is being written on another branch; until it is on
main, `build_model()` below builds the same network with psjob.fluid layers.
It is the one function to replace by the nn.Layer version.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

import psjob as paddle                          # Paddle: import paddle
import psjob.distributed.fleet as fleet         # Paddle: import paddle.distributed.fleet as fleet

NUM_SLOTS, NUM_DENSE = 26, 13


def build_model(sparse_feature_dim, embedding_dim, distributed_table):
    """The DNN of PaddleRec's rank/dnn: summed slot embeddings + dense → 400-400-400 → sigmoid.

    NOTE: written with psjob.fluid layers (see the module docstring); PaddleRec's version is a
    paddle.nn.Layer (Embedding(sparse=True), Linear, ReLU) called in static mode."""
    fluid = paddle.fluid
    dense = fluid.layers.data(name="dense_input", shape=[NUM_DENSE], dtype="float32")
    slots = [fluid.layers.data(name=f"C{i + 1}", shape=[1], dtype="int64", lod_level=1) for i in range(NUM_SLOTS)]
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    init = fluid.initializer.Uniform(-0.01, 0.01)
    pooled = [fluid.layers.sequence_pool(fluid.layers.embedding(
        s, size=[sparse_feature_dim, embedding_dim], is_sparse=True, is_distributed=distributed_table,
        param_attr=fluid.ParamAttr(name="SparseFeatFactors", initializer=init)), "sum") for s in slots]
    h = fluid.layers.concat(pooled + [dense], axis=1)
    for width in (64, 32):
        h = fluid.layers.fc(h, width, act="relu")
    logit = fluid.layers.fc(h, 1)
    predict = fluid.layers.sigmoid(logit)
    loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(logit, fluid.layers.cast(label, "float32")))
    auc, _, states = fluid.layers.auc(fluid.layers.concat([fluid.layers.scale(predict, -1.0, 1.0), predict], axis=1),
                                      label, num_thresholds=2 ** 12 - 1)
    return [label, dense] + slots, loss, auc, predict, states[2:]


def auc_from_stats(stat_pos, stat_neg):
    """The AUC of the accumulated positive/negative histograms (the auc op's persistable state,
    shared by the trainer threads), as PaddleRec reads it."""
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
    fleet.init()
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = args.mode != "sync"
    if args.mode == "geo":
        strategy.a_sync_configs = {"k_steps": args.k_steps}
    # Geo trains local copies of every parameter: the table stays a (sparse) local table there.
    feeds, loss, auc, predict, auc_states = build_model(ctr.SPARSE_FEATURE_DIM, 8, distributed_table=args.mode != "geo")
    fleet.distributed_optimizer(paddle.fluid.optimizer.Adam(args.lr), strategy).minimize(loss)

    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return
    exe = paddle.fluid.Executor(paddle.fluid.CPUPlace())
    exe.run(paddle.fluid.default_startup_program())
    fleet.init_worker()
    dataset = paddle.distributed.InMemoryDataset()
    reader = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reader.py")
    dataset.init(batch_size=args.batch_size, thread_num=args.threads, use_var=feeds,
                 pipe_command=f"{sys.executable} {reader}")
    dataset.set_filelist(fleet.util.get_file_shard(sorted(glob.glob(os.path.join(args.data, "part-*")))))
    dataset.load_into_memory()
    aucs = []
    for epoch in range(args.epochs):
        dataset.local_shuffle()
        exe.train_from_dataset(paddle.fluid.default_main_program(), dataset, thread=args.threads,
                               fetch_list=[loss, auc], fetch_info=["loss", "auc"], print_period=20)
        scope = paddle.fluid.global_scope()
        aucs.append(auc_from_stats(*(np.array(scope.find_var(v.name).get_tensor()) for v in auc_states)))
        print(json.dumps({"worker": fleet.worker_index(), "epoch": epoch, "auc": aucs[-1]}), flush=True)
    if fleet.is_first_worker() and args.save:
        fleet.save_inference_model(exe, args.save, [v.name for v in feeds[1:]], [predict])
    fleet.stop_worker()


if __name__ == "__main__":
    main()
