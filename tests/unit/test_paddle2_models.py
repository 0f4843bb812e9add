"""The PaddleRec-style rank models of examples/paddle2 (DNN, wide&deep, written in the
Paddle 2.x API as PaddleRec writes them): the DNN's forward equals a Fluid-1.x-built twin
holding the same weights, and both models train single-process on synthetic CTR data to a
held-out AUC above 0.7 (which their untrained start does not reach)."""
import os
import sys

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "paddle2")
sys.path.insert(0, os.path.abspath(EXAMPLES))
from static_model import StaticModel

paddle.enable_static()
SLOTS, VOCAB, DENSE = 5, 1000, 13  # sparse_inputs_slots counts the label too: C1..C4
CONFIG = {"sparse_feature_number": VOCAB, "sparse_feature_dim": 8, "dense_input_dim": DENSE,
          "sparse_inputs_slots": SLOTS, "fc_sizes": [32, 16], "learning_rate": 0.01}


def synthetic(n, seed):
    """Ids per slot and dense features; clicks from a hidden logistic model of both."""
    rng = np.random.default_rng(seed)
    truth = np.random.default_rng(0)
    id_weight, dense_weight = truth.normal(0, 1.5, VOCAB), truth.normal(0, 0.5, DENSE)
    ids = [rng.integers(0, 50, (n, 1)) + 200 * s for s in range(SLOTS - 1)]
    dense = rng.normal(size=(n, DENSE)).astype("float32")
    logit = sum(id_weight[i[:, 0]] for i in ids) + dense @ dense_weight
    label = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype("int64").reshape(n, 1)
    feed = {f"C{s + 1}": ids[s] for s in range(SLOTS - 1)}
    feed.update(dense_input=dense, label=label)
    return feed


def auc(score, label):
    order = np.argsort(score)
    ranks = np.empty(len(score))
    ranks[order] = np.arange(1, len(score) + 1)
    pos = label == 1
    return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())


def build(model_name):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 1
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        model = StaticModel(dict(CONFIG, model=model_name))
        feeds = model.create_feeds()
        metrics = model.net(feeds)
        test_program = main.clone(for_test=True)
        model.create_optimizer()
    return main, startup, test_program, model, metrics


def positive_probability(model, values):
    return values[:, 1] if model.model == "dnn" else values[:, 0]


@pytest.mark.parametrize("model_name", ["dnn", "wide_deep"])
def test_a_paddlerec_rank_model_trains_single_process(model_name):
    main, startup, test_program, model, metrics = build(model_name)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), fluid.Scope()
    held_out = synthetic(2000, seed=99)
    exe.run(startup, scope=scope)

    def held_out_auc():
        pred = exe.run(test_program, feed=held_out, fetch_list=[model.predict], scope=scope)[0]
        return auc(positive_probability(model, pred), held_out["label"][:, 0])

    before = held_out_auc()
    for step in range(150):
        cost, train_auc = exe.run(main, feed=synthetic(128, seed=step), fetch_list=[metrics["cost"], metrics["auc"]],
                                  scope=scope)
    after = held_out_auc()
    assert before < 0.7 < after, (before, after)
    assert train_auc[0] > 0.65  # paddle.static.auc's running AUC over the training batches
    assert np.isfinite(cost).all()


def test_the_dnn_forward_equals_its_fluid_1x_twin_with_the_same_weights():
    main, startup, test_program, model, _ = build("dnn")
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = synthetic(16, seed=5)
    want = exe.run(test_program, feed=feed, fetch_list=[model.predict], scope=scope)[0]
    linears = sorted((p for p in main.global_block().all_parameters() if p.name.startswith("linear_")),
                     key=lambda p: (int(p.name.split("_")[1].split(".")[0]), p.name.endswith(".b_0")))

    twin_main, twin_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(twin_main, twin_startup), fluid.unique_name.guard():
        ids = [fluid.layers.data(f"C{s + 1}", [1], "int64", lod_level=1) for s in range(SLOTS - 1)]
        dense = fluid.layers.data("dense_input", [DENSE])
        embs = [fluid.layers.embedding(i, [VOCAB, 8], is_sparse=True, param_attr="SparseFeatFactors") for i in ids]
        h = fluid.layers.concat(embs + [dense], axis=1)
        for i in range(len(linears) // 2):
            last = i == len(linears) // 2 - 1
            h = fluid.layers.fc(h, linears[2 * i].shape[1], act=None if last else "relu",
                                param_attr=f"w{i}", bias_attr=f"b{i}")
        out = fluid.layers.softmax(h)
    twin_exe, twin_scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    twin_exe.run(twin_startup, scope=twin_scope)
    twin_scope.var("SparseFeatFactors").get_tensor().set(np.array(scope.vars["SparseFeatFactors"]))
    for i in range(len(linears) // 2):
        twin_scope.var(f"w{i}").get_tensor().set(np.array(scope.vars[linears[2 * i].name]))
        twin_scope.var(f"b{i}").get_tensor().set(np.array(scope.vars[linears[2 * i + 1].name]))
    got = twin_exe.run(twin_main, feed={k: v for k, v in feed.items() if k != "label"}, fetch_list=[out],
                       scope=twin_scope)[0]
    np.testing.assert_allclose(want, got, rtol=1e-5, atol=1e-7)
