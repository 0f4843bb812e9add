"""Reference rows for psjob's sparse-table accessor, from Paddle's own parameter server.

Runs under PaddlePaddle 3.0.0 (its CPU wheel ships the PS core), not psjob:

    PY=/path/to/paddle300/bin/python
    BATCHES='[[[1,0.1,-0.2,0.3,0.4],[2,0.5,0.6,-0.7,0.8]], ...]' \
    CFG='{"accessor.embed_sgd_param.name": "SparseAdaGradSGDRule", ...}' OUT=/tmp/save_ada \
    $PY -m paddle.distributed.launch --servers 127.0.0.1:P1 --trainers 127.0.0.1:P2 \
        bench/paddle_accessor_reference.py
    zcat /tmp/save_ada/000/*.gz | sort -n

One sparse_embedding "embedding" [1000, 4], the loss mean(sum(emb * w)) with w fed (so a
gradient never depends on the rows), `strategy.sparse_table_configs` from CFG (keys below
`table_parameters.embedding.`), one batch per `train_from_dataset` with a client flush after
each, so each batch is one push; then `fleet.save_persistables` writes the table as text:
`key unseen_days delta_score... show click embed_w [embed state] [embedx_w] [embedx state]`.
(Paddle 3.0.0's exe.run feed path never reached the pserver table here; the dataset path
does.) tests/unit/test_sparse_sgd_rules.py holds the rows this printed.
"""
import json
import os
import socket
import sys
import time

os.environ["FLAGS_enable_pir_api"] = "0"   # the PS runtime needs the legacy ProgramDesc

import paddle  # noqa: E402
import paddle.distributed.fleet as fleet  # noqa: E402

DIM = 4


def wait_for_servers():
    for ep in os.environ["PADDLE_PSERVERS_IP_PORT_LIST"].split(","):
        host, port = ep.split(":")
        for _ in range(600):
            try:
                socket.create_connection((host, int(port)), 1).close()
                break
            except OSError:
                time.sleep(0.2)
    time.sleep(1)


def main():
    paddle.enable_static()
    fleet.init()
    ids = paddle.static.data("ids", [-1, 1], "int64")
    w = paddle.static.data("w", [-1, DIM], "float32")
    emb = paddle.static.nn.sparse_embedding(
        input=ids, size=[1000, DIM],
        param_attr=paddle.ParamAttr(name="embedding", initializer=paddle.nn.initializer.Uniform(-0.01, 0.01)))
    loss = paddle.mean(paddle.sum(paddle.reshape(emb, [-1, DIM]) * w, axis=1))
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = True
    cfg = {"table_parameters.embedding." + k: v for k, v in json.loads(os.environ.get("CFG", "{}")).items()}
    if cfg:
        strategy.sparse_table_configs = {"embedding": cfg}
    fleet.distributed_optimizer(paddle.optimizer.SGD(0.1), strategy).minimize(loss)
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        sys.exit(0)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    wait_for_servers()
    fleet.init_worker()
    runtime = fleet.fleet._runtime_handle
    out = os.environ["OUT"]
    for k, batch in enumerate(json.loads(os.environ["BATCHES"])):
        path = f"{out}.batch{k}.txt"
        with open(path, "w") as f:
            for row in batch:
                f.write("1 %d %d %s\n" % (row[0], DIM, " ".join(repr(float(x)) for x in row[1:])))
        dataset = paddle.distributed.QueueDataset()
        dataset.init(batch_size=len(batch), thread_num=1, use_var=[ids, w], pipe_command="cat")
        dataset.set_filelist([path])
        exe.train_from_dataset(program=paddle.static.default_main_program(), dataset=dataset, thread=1)
        runtime._worker.client_flush()
        time.sleep(0.5)
    runtime._worker.client_flush()
    fleet.save_persistables(exe, out)
    runtime._worker.client_flush()
    runtime._worker.stop_server()   # Paddle 3.0's stop_worker leaves the servers running
    fleet.stop_worker()


if __name__ == "__main__":
    main()
