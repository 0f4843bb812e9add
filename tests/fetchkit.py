"""Fetching every variable a user's program declares, with the embedding fusion on and off.

Shared by tests/unit/test_fetch_every_variable.py (single process, and transpiled programs
over the in-memory pservers) and tests/component/scripts/fetch_every_variable.py (a Fleet
script under `psjob launch`). The models are the ones users run: the built-in Fluid 1.x
CTR-DNN (psjob.training.models.ctr, with its wide&deep variant), examples/paddle2's Paddle 2.x DNN
and wide&deep (PaddleRec's rank models), that DNN with PaddleRec's distributed table
(`paddle.static.nn.sparse_embedding`), and one whose single `Embedding` looks every slot up
at once (the [-1, slots] concat of the ids, reshaped to [-1, slots x dim]).

`fetch_everything` runs a few steps fetching only the loss (the default, fused, path),
then one step fetching every variable at once, then one step per variable fetching it
with the loss, and returns everything it fetched by step and name, so two runs (fusion
on and off) compare value by value.
"""
import os
import sys

import numpy as np

import psjob.fluid as fluid
from psjob.fluid.core import SelectedRows
from psjob.training.models import ctr as ctr_model

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "paddle2")
VOCAB, SLOTS, DENSE = 200, 4, 3
# The Fluid 1.x models (psjob.training.models.ctr) and examples/paddle2's StaticModel ones.
FLUID_MODELS = {"ctr": False, "ctr_wide_deep": True}
PADDLE2_MODELS = ("dnn", "wide_deep", "sparse_embedding_dnn", "one_lookup_dnn")
MODELS = tuple(FLUID_MODELS) + PADDLE2_MODELS
# A model with a distributed table: the Fluid models built with is_distributed, and
# PaddleRec's sparse_embedding DNN (its table is distributed whatever the flag).
DISTRIBUTED = ("ctr", "ctr_wide_deep", "sparse_embedding_dnn", "one_lookup_dnn")
FUSED_OPS = {"embedding_pool", "merge_ids_pool"}
WARMUP = 2


def build_net(name: str, distributed: bool = False):
    """Append model `name`'s forward network to the default programs; returns
    (loss, minimize) where minimize(strategy) adds the optimizer the model uses (SGD for
    the Fluid models, examples/paddle2's lazy Adam for the Paddle 2.x ones), through
    Fleet's distributed optimizer when given a strategy."""
    if name in FLUID_MODELS:
        cfg = ctr_model.CTRConfig(num_slots=SLOTS, dense_dim=DENSE, embedding_dim=4, sparse_feature_dim=VOCAB,
                                  hidden=(8, 4), is_distributed=distributed, wide=FLUID_MODELS[name])
        loss, opt = ctr_model.build_network(cfg).loss, fluid.optimizer.SGD(0.1)
    elif name == "sparse_embedding_dnn":
        loss, opt = _sparse_embedding_dnn(), fluid.optimizer.Adam(0.05, lazy_mode=True)
    elif name == "one_lookup_dnn":
        loss, opt = _one_lookup_dnn(distributed), fluid.optimizer.Adam(0.05, lazy_mode=True)
    else:
        model = _static_model(name)
        model.net(model.create_feeds())
        return model._cost, model.create_optimizer

    def minimize(strategy=None):
        if strategy is None:
            return opt.minimize(loss)
        from psjob import fleet
        return fleet.distributed_optimizer(opt, strategy).minimize(loss)
    return loss, minimize


def _static_model(name):
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    from static_model import StaticModel

    import psjob as paddle
    paddle.enable_static()
    return StaticModel({"sparse_feature_number": VOCAB, "sparse_feature_dim": 4, "dense_input_dim": DENSE,
                        "sparse_inputs_slots": SLOTS + 1, "fc_sizes": [8], "learning_rate": 0.05, "model": name})


def _sparse_embedding_dnn():
    """PaddleRec's DNN over a distributed table: each slot looked up with
    paddle.static.nn.sparse_embedding (one table), reshaped to [-1, dim] and concatenated
    with the dense features, then Linear + ReLU, Linear to 2 logits, cross entropy."""
    import psjob as paddle
    paddle.enable_static()
    dense = paddle.static.data(name="dense_input", shape=[None, DENSE], dtype="float32")
    slots = [paddle.static.data(name=f"C{s + 1}", shape=[None, 1], lod_level=1, dtype="int64")
             for s in range(SLOTS)]
    label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")
    attr = paddle.ParamAttr(name="SparseFeatFactors", initializer=paddle.nn.initializer.Uniform(-0.01, 0.01))
    embs = [paddle.reshape(paddle.static.nn.sparse_embedding(s, size=[VOCAB, 4], param_attr=attr), shape=[-1, 4])
            for s in slots]
    hidden = paddle.nn.ReLU()(paddle.nn.Linear(4 * SLOTS + DENSE, 8)(paddle.concat(x=embs + [dense], axis=1)))
    logits = paddle.nn.Linear(8, 2)(hidden)
    return paddle.mean(x=paddle.nn.functional.cross_entropy(input=logits, label=label))


def _one_lookup_dnn(distributed):
    """The DNN with every slot looked up at once: one `paddle.nn.Embedding(sparse=True)` (with
    `distributed`, `fluid.embedding(is_distributed=True)`) over the [-1, SLOTS] concat of the
    slots, reshaped to [-1, SLOTS * dim] (rows of SLOTS ids each) and concatenated after the
    dense features, then Linear + ReLU, Linear to 2 logits."""
    import psjob as paddle
    paddle.enable_static()
    dense = paddle.static.data(name="dense_input", shape=[None, DENSE], dtype="float32")
    slots = [paddle.static.data(name=f"C{s + 1}", shape=[None, 1], dtype="int64") for s in range(SLOTS)]
    label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")
    attr = paddle.ParamAttr(name="SparseFeatFactors", initializer=paddle.nn.initializer.Uniform(-0.01, 0.01))
    ids = paddle.concat(slots, axis=1)
    if distributed:
        emb = fluid.embedding(ids, size=[VOCAB, 4], is_sparse=True, is_distributed=True, param_attr=attr)
    else:
        emb = paddle.nn.Embedding(VOCAB, 4, sparse=True, weight_attr=attr)(ids)
    embs = paddle.reshape(emb, [-1, SLOTS * 4])
    hidden = paddle.nn.ReLU()(paddle.nn.Linear(DENSE + 4 * SLOTS, 8)(paddle.concat([dense, embs], axis=1)))
    logits = paddle.nn.Linear(8, 2)(hidden)
    return paddle.mean(x=paddle.nn.functional.cross_entropy(input=logits, label=label))


def build(name: str, distributed: bool = False, strategy=None):
    """(main, startup, loss) of model `name` with its optimizer (Fleet's, given a strategy)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, minimize = build_net(name, distributed)
        minimize(strategy)
    return main, startup, loss


def user_variables(program) -> list:
    """Every variable of the user's program (as built, optimizer included, before any
    transpiling) that is neither persistable nor fed: what a user may fetch."""
    return sorted(v.name for v in program.global_block().vars.values() if not v.persistable and not v.is_data)


def feeds(name: str, steps: int, seed: int = 0) -> list:
    """Batches for model `name`: LoD id slots C1.. (the Fluid models: 1-3 ids per example,
    repeated ids; the Paddle 2.x ones: one id each, as their reader gives), the dense
    features, a 0/1 label."""
    rng = np.random.default_rng(seed)
    n, out = 8, []
    for _ in range(steps):
        feed = {"dense_input": rng.normal(size=(n, DENSE)).astype("float32"),
                "label": rng.integers(0, 2, (n, 1)).astype("int64")}
        for s in range(SLOTS):
            lengths = rng.integers(1, 4, n) if name in FLUID_MODELS else np.ones(n, np.int64)
            ids = rng.integers(0, 40, (int(lengths.sum()), 1)).astype("int64")
            # one_lookup_dnn's slots are plain [-1, 1] ids (the Paddle anchor's local model)
            feed[f"C{s + 1}"] = ids if name == "one_lookup_dnn" else (ids, [np.concatenate([[0], np.cumsum(lengths)])])
        out.append(feed)
    return out


def fetch_everything(exe, program, loss, names, batches, scope=None):
    """Run `program`: WARMUP steps fetching the loss, one fetching every name in `names`,
    one per name fetching [loss, name]. Returns ({"step/name": array}, kernel types run by
    the warmup steps); a SelectedRows is stored as its rows, values and height."""
    out = {}
    exe.collect_timing = True
    steps = [[loss.name]] * WARMUP + [list(names)] + [[loss.name, n] for n in names]
    warmup_kernels = set()
    for step, fetch in enumerate(steps):
        values = exe.run(program, feed=batches[step % len(batches)], fetch_list=fetch, scope=scope)
        for name, value in zip(fetch, values):
            key = f"{step:03d}/{name}"
            if isinstance(value, SelectedRows):
                out.update({f"{key}.rows": np.asarray(value.rows), f"{key}.values": np.asarray(value.values),
                            f"{key}.height": np.asarray(value.height)})
            else:
                out[key] = np.asarray(value)
        if step == WARMUP - 1:
            warmup_kernels = set(exe.kernel_seconds)
    return out, warmup_kernels


def assert_same(fused: dict, plain: dict, atol=1e-6):
    """Every value fetched with the fusion on equals the op-by-op run's: integers exactly,
    floats to `atol` plus a relative 1e-6 up to the step fetching everything at once,
    1e-5 in the per-variable steps after it. Not bitwise: the fused ops add an id's rows
    in another order (the table gradient in float64, once per distinct id), a few float32
    ulps that the per-variable steps (up to ~90 more training steps, lazy Adam on the
    pservers of the sparse_embedding model) compound to 4e-6 at most."""
    assert sorted(fused) == sorted(plain)
    for key, want in plain.items():
        got = fused[key]
        assert got.shape == want.shape and got.dtype == want.dtype, (key, got.shape, want.shape, got.dtype)
        if want.dtype.kind == "f":
            rtol = 1e-6 if int(key.split("/")[0]) <= WARMUP else 1e-5
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=key)
        else:
            np.testing.assert_array_equal(got, want, err_msg=key)
