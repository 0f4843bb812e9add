"""Writes the Paddle-saved inference model the tests load (run under real Paddle 3.0.0, legacy IR):

    FLAGS_enable_pir_api=0 <paddle python> tests/data/paddle_format/make_reference.py

A small CTR-shaped model (an embedding with a padding row, dense features, fc layers, batch_norm,
softmax) saved with paddle.static.save_inference_model as ctr.pdmodel / ctr.pdiparams, and
expected.json: the inputs and the outputs real Paddle's Executor computes from that model.
"""
import json
import os

import numpy as np
import paddle

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    paddle.enable_static()
    paddle.seed(7)
    dense = paddle.static.data("dense", [-1, 4], "float32")
    ids = paddle.static.data("ids", [-1, 3], "int64")
    emb = paddle.nn.Embedding(20, 5, padding_idx=0)(ids)                       # lookup_table_v2
    pooled = paddle.sum(emb, axis=1)                                            # reduce_sum
    x = paddle.concat([dense, pooled], axis=1)
    h = paddle.static.nn.fc(x, 8, activation="relu")                            # mul, elementwise_add
    h = paddle.static.nn.batch_norm(h, is_test=True)
    h = paddle.matmul(h, paddle.static.create_parameter([8, 6], "float32"))     # matmul_v2
    h = paddle.nn.functional.dropout(h, 0.5, training=False)
    logits = paddle.static.nn.fc(paddle.tanh(h) * 2.0 + 0.5, 3)
    prob = paddle.nn.functional.softmax(logits)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    paddle.static.save_inference_model(os.path.join(HERE, "ctr"), [dense, ids], [prob, logits], exe)
    rng = np.random.default_rng(3)
    feed = {"dense": rng.normal(size=(4, 4)).astype("float32"),
            "ids": np.array([[1, 2, 0], [5, 0, 0], [19, 18, 3], [7, 7, 7]], dtype="int64")}
    prog, _, fetches = paddle.static.load_inference_model(os.path.join(HERE, "ctr"), exe)
    outs = exe.run(prog, feed=feed, fetch_list=fetches)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "feed": {k: v.tolist() for k, v in feed.items()},
                   "fetch": [o.tolist() for o in outs]}, f)


if __name__ == "__main__":
    main()
