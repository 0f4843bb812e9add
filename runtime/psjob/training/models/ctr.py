"""The CTR-DNN model: 26 sparse slots + 13 dense features → MLP → click probability.

    ids of slot s ──embedding (one shared table "SparseFeatFactors")──sequence_pool(sum)─┐
    dense features ──────────────────────────────────────────────────────────────────────┼─concat─fc 256 relu─fc 128 relu─fc 1
                                                                                         ┘
    loss = mean(sigmoid_cross_entropy_with_logits(logit, label)); auc over sigmoid(logit)

`wide=True` makes it a wide & deep model: a linear part — one weight per feature id
(parameter "WideFactors", summed per slot; this model keeps it an ordinary
parameter even with `is_distributed`, as its Fluid original did) and per dense feature — adds
its logit to the MLP's, as Paddle's wide&deep CTR example does.

With `is_distributed` the table lives on the pservers, keyed by arbitrary
int64 feature ids (the DistributeTranspiler turns the lookups into prefetches);
otherwise it is an ordinary [sparse_feature_dim, dim] parameter with sparse
(SelectedRows) gradients.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import psjob.fluid as fluid

TABLE_NAME = "SparseFeatFactors"
WIDE_TABLE_NAME = "WideFactors"


@dataclass(frozen=True)
class CTRConfig:
    num_slots: int = 26
    dense_dim: int = 13
    embedding_dim: int = 16
    sparse_feature_dim: int = 460_000
    hidden: tuple = (256, 128)
    is_distributed: bool = False
    is_sparse: bool = True
    optimizer: str = "adam"
    learning_rate: float = 1e-3
    seed: int = 2024
    # fluid.device_guard device of the MLP ("gpu": heter trainers run it in a heter job).
    mlp_device: str = ""
    wide: bool = False  # add the linear (wide) part: a wide & deep model


@dataclass
class CTRModel:
    config: CTRConfig
    dense: fluid.Variable
    slots: list
    label: fluid.Variable
    loss: fluid.Variable
    predict: fluid.Variable
    auc: fluid.Variable
    batch_auc: fluid.Variable
    feed_names: list = field(default_factory=list)


def make_optimizer(name: str, learning_rate: float):
    # Adam in lazy mode: a sparse embedding gradient touches only its rows
    # (Fluid's default, lazy_mode=False, would sweep the whole table each step).
    table = {"sgd": fluid.optimizer.SGD, "adagrad": fluid.optimizer.Adagrad,
             "adam": lambda learning_rate: fluid.optimizer.Adam(learning_rate, lazy_mode=True),
             "momentum": lambda learning_rate: fluid.optimizer.Momentum(learning_rate, momentum=0.9)}
    if name not in table:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(table)}")
    return table[name](learning_rate=learning_rate)


def build_network(config: CTRConfig) -> CTRModel:
    """Append the forward network to the default programs (no optimizer)."""
    dense = fluid.layers.data(name="dense_input", shape=[config.dense_dim], dtype="float32")
    slots = [fluid.layers.data(name=f"C{i + 1}", shape=[1], dtype="int64", lod_level=1)
             for i in range(config.num_slots)]
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    init = fluid.initializer.Uniform(-0.01, 0.01)
    pooled = []
    for ids in slots:
        emb = fluid.layers.embedding(
            input=ids, size=[config.sparse_feature_dim, config.embedding_dim],
            is_sparse=config.is_sparse, is_distributed=config.is_distributed,
            param_attr=fluid.ParamAttr(name=TABLE_NAME, initializer=init))
        pooled.append(fluid.layers.sequence_pool(input=emb, pool_type="sum"))
    h = fluid.layers.concat(pooled + [dense], axis=1)
    with fluid.device_guard(config.mlp_device or None):
        for size in config.hidden:
            h = fluid.layers.fc(input=h, size=size, act="relu")
        logit = fluid.layers.fc(input=h, size=1)
    if config.wide:
        logit = fluid.layers.elementwise_add(logit, _wide_logit(config, slots, dense))
    label_f = fluid.layers.cast(label, "float32")
    loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(x=logit, label=label_f))
    predict = fluid.layers.sigmoid(logit)
    # fluid.layers.auc wants two-column class probabilities.
    two_col = fluid.layers.concat([fluid.layers.scale(predict, -1.0, 1.0), predict], axis=1)
    auc, batch_auc, _ = fluid.layers.auc(input=two_col, label=label, num_thresholds=2 ** 12 - 1)
    names = [dense.name] + [s.name for s in slots] + [label.name]
    return CTRModel(config, dense, slots, label, loss, predict, auc, batch_auc, names)


def _wide_logit(config: CTRConfig, slots, dense) -> fluid.Variable:
    """The wide part: sum of one weight per feature id of every slot, plus a linear map of
    the dense features. The weights are an ordinary parameter (split over the pservers
    like any other), never a distributed table, as in the Fluid original."""
    weights = [fluid.layers.sequence_pool(input=fluid.layers.embedding(
        input=ids, size=[config.sparse_feature_dim, 1], is_sparse=config.is_sparse,
        param_attr=fluid.ParamAttr(name=WIDE_TABLE_NAME, initializer=fluid.initializer.Constant(0.0))),
        pool_type="sum") for ids in slots]
    return fluid.layers.fc(input=fluid.layers.concat(weights + [dense], axis=1), size=1)


def build(config: CTRConfig, main: fluid.Program, startup: fluid.Program, with_optimizer=True,
          optimizer=None) -> CTRModel:
    """Build network (and optimizer) into the given programs."""
    main.random_seed = startup.random_seed = config.seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = build_network(config)
        if with_optimizer:
            (optimizer or make_optimizer(config.optimizer, config.learning_rate)).minimize(model.loss)
    return model


def feed_dict(model: CTRModel, batch) -> dict:
    """A psjob.dataset.ctr.CtrBatch (dense, per-slot ids + LoD offsets, label) → feed."""
    feed = {model.dense.name: batch.dense, model.label.name: batch.label}
    for var, ids, offsets in zip(model.slots, batch.ids, batch.lod):
        feed[var.name] = (ids.reshape(-1, 1), [offsets])
    return feed
