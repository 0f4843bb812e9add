"""Writes the PIR inference models the tests load (run under real Paddle 3.0.0, its default PIR mode):

    <paddle python> tests/data/paddle_pir/make_reference.py

- ops.json / ops.pdiparams: a small net made of the ops psjob's PIR reader maps (two embeddings,
  sum, mean, concat, fc, matmul, reshape, scale, full, add, relu, sigmoid, tanh, softmax, ...);
- rank_<model>.json / .pdiparams: PaddleRec's rank models (tests/thirdparty/paddlerec, unmodified)
  built by their StaticModel with small sizes (their hyper-parameters overridden here), saved with
  their prediction (the input of their paddle.static.auc) as the fetch target;
- expected.json: per model the feed and the outputs Paddle's own Executor computed from the saved
  files (loaded back with paddle.static.load_inference_model).
"""
import json
import os
import subprocess
import sys

import numpy as np
import paddle

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "..", "..", "thirdparty", "paddlerec")
RANK = ("dnn", "wide_deep", "deepfm", "logistic_regression")
SMALL = {"sparse_feature_number": 40, "sparse_feature_dim": 4, "fc_sizes": [8, 4], "num_field": 5,
         "sparse_inputs_slots": 6, "dense_input_dim": 3}


def ops_model(prefix):
    paddle.seed(7)
    dense = paddle.static.data("dense", [-1, 4], "float32")
    ids = paddle.static.data("ids", [-1, 3], "int64")
    emb = paddle.nn.Embedding(20, 5, padding_idx=0)(ids)
    emb2 = paddle.nn.functional.embedding(ids, paddle.static.create_parameter([20, 5], "float32"))
    x = paddle.concat([dense, paddle.sum(emb, axis=1), paddle.mean(emb2, axis=1)], axis=1)
    h = paddle.static.nn.fc(x, 8, activation="relu")
    h = paddle.matmul(h, paddle.static.create_parameter([8, 6], "float32"))
    h = paddle.reshape(paddle.reshape(h, [-1, 3, 2]), [-1, 6])
    h = paddle.scale(h, 2.0, 0.5) + paddle.full([1], 0.25, "float32")
    h = paddle.tanh(h) * 1.5 - paddle.nn.functional.sigmoid(h)
    logits = paddle.static.nn.fc(h, 3)
    prob = paddle.nn.functional.softmax(logits)
    total = paddle.sum(prob * logits, axis=1, keepdim=True) + paddle.mean(logits)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    paddle.static.save_inference_model(prefix, [dense, ids], [prob, logits, total], exe)
    rng = np.random.default_rng(3)
    return exe, {"dense": rng.normal(size=(4, 4)).astype("float32"),
                 "ids": np.array([[1, 2, 0], [5, 0, 0], [19, 18, 3], [7, 7, 7]], dtype="int64")}


def rank_model(name, prefix):
    folder = os.path.abspath(os.path.join(ZOO, "models", "rank", name))
    sys.path.insert(0, os.path.abspath(os.path.join(ZOO, "tools")))
    sys.path.insert(0, folder)
    os.chdir(folder)
    from static_model import StaticModel
    from utils.static_ps.common_ps import YamlHelper
    config = YamlHelper().load_yaml("config.yaml")
    config["config_abs_dir"] = folder
    config.update({f"hyper_parameters.{k}": v for k, v in SMALL.items()})
    paddle.seed(11)
    model = StaticModel(config)
    feeds = model.create_feeds()
    seen = []
    # The models' metric (paddle.static.auc: under PIR it returns 3 values, not the 4 the models
    # unpack) is not part of the saved model: stand in for it and keep its input, the prediction.
    paddle.static.auc = lambda input, label, **kw: (seen.append(input), (input, input, [input] * 4))[1]
    model.net(feeds)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    inputs = [f for f in feeds if f.name != "label" and not f.name.startswith("label")]
    paddle.static.save_inference_model(prefix, inputs, [seen[0]], exe)
    rng = np.random.default_rng(5)
    feed = {}
    for f in inputs:
        shape = [4 if d < 0 else d for d in f.shape]
        feed[f.name] = (rng.integers(0, 40, size=shape) if "int" in str(f.dtype) else rng.normal(size=shape)
                        ).astype("int64" if "int" in str(f.dtype) else "float32")
    return exe, feed


def one(name):
    paddle.enable_static()
    prefix = os.path.join(HERE, name)
    exe, feed = ops_model(prefix) if name == "ops" else rank_model(name[len("rank_"):], prefix)
    program, feed_names, fetches = paddle.static.load_inference_model(prefix, exe)
    outs = exe.run(program, feed={k: feed[k] for k in feed_names}, fetch_list=fetches)
    print(json.dumps({"paddle": paddle.__version__, "feed_names": feed_names,
                      "feed": {k: v.tolist() for k, v in feed.items()},
                      "fetch": [np.asarray(o).tolist() for o in outs]}))


def main():
    if len(sys.argv) > 1:
        return one(sys.argv[1])
    expected = {}
    for name in ("ops",) + tuple(f"rank_{m}" for m in RANK):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), name], check=True, capture_output=True,
                             text=True, env={**os.environ, "FLAGS_enable_pir_api": "1"}).stdout
        expected[name] = json.loads(out.strip().splitlines()[-1])
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
