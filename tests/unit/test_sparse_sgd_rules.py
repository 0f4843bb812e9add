"""Paddle's sparse-table accessor and SGD rules (psjob.foundation.tables.accessor), checked
against Paddle 3.0.0's own parameter server.

The reference numbers come from Paddle 3.0.0 (the paddlepaddle 3.0.0 CPU wheel: one
pserver, one trainer, `train_from_dataset` one batch at a time with a client flush between,
then `fleet.save_persistables`; bench/paddle_accessor_reference.py): a sparse_embedding "embedding" [1000, 4], the loss
mean(sum(emb * w)) with w fed, and the `strategy.sparse_table_configs` of each case. Paddle's
trainer pushes the gradient times the batch size, so the pushed gradient of an occurrence
is its row of w; each case below pushes exactly that. A saved row is
``key unseen_days delta_score... show click embed_w [embed state] [embedx_w] [embedx state]``;
the expected values below are those columns.
"""
import numpy as np
import pytest

from psjob.foundation.tables import SparseTable, TableConfig
from psjob.foundation.tables.accessor import (
    AccessorConfigError,
    parse_table_config,
    resolve_accessor,
)

# The batches: rows of [id, w0, w1, w2, w3].
BATCHES = [
    [[1, 0.1, -0.2, 0.3, 0.4], [2, 0.5, 0.6, -0.7, 0.8], [1, 0.9, 1.0, 1.1, -1.2], [3, 1.3, 1.4, 1.5, 1.6]],
    [[2, -0.3, 0.2, 0.1, 0.4], [2, 0.5, -0.6, 0.7, 0.2], [5, 0.1, 0.1, 0.1, 0.1], [1, 1.0, -1.0, 0.5, 0.25]],
    [[1, 0.2, 0.3, -0.4, 0.5], [2, -0.1, 0.9, 0.3, -0.2], [3, 0.7, -0.5, 0.2, 0.1]],
]
A = "accessor."


def rules(name, sub, embed=None, embedx=None):
    out = {A + "embed_sgd_param.name": name, A + "embedx_sgd_param.name": name}
    for side, fields in (("embed", embed or {}), ("embedx", embedx or {})):
        for key, value in fields.items():
            out[f"{A}{side}_sgd_param.{sub}.{key}"] = value
    return out


CASES = {
    # Paddle 3.0.0 saved rows: id -> (show, value[4], {state column: values}).
    "SparseAdaGradSGDRule, 2 batches": (
        rules("SparseAdaGradSGDRule", "adagrad", {"learning_rate": 0.1, "initial_range": 0.0},
              {"learning_rate": 0.1, "initial_range": 0.0}), BATCHES[:2], {
            1: (3, [-0.146077, 0.1, -0.05, -0.025], {"embed_g2sum": [1.25], "embedx_g2sum": [0.4375]}),
            2: (3, [-0.0596077, 0.02, -0.04, -0.03], {"embed_g2sum": [0.26], "embedx_g2sum": [0.0966667]}),
            3: (1, [-0.13, 0, 0, 0], {"embed_g2sum": [1.69], "embedx_g2sum": [0]}),
            5: (1, [-0.01, 0, 0, 0], {"embed_g2sum": [0.01], "embedx_g2sum": [0]}),
        }),
    "SparseNaiveSGDRule with weight_bounds": (
        rules("SparseNaiveSGDRule", "naive",
              {"learning_rate": 0.1, "initial_range": 0.0, "weight_bounds": [-0.12, 10.0]},
              {"learning_rate": 0.05, "initial_range": 0.0, "weight_bounds": [-10.0, 0.06]}), BATCHES, {
            1: (4, [-0.12, 0.035, -0.005, -0.0375], {}),
            2: (4, [-0.06, -0.025, -0.055, -0.02], {}),
            3: (2, [-0.12, 0.025, -0.01, -0.005], {}),
            5: (1, [-0.01, 0, 0, 0], {}),
        }),
    "StdAdaGradSGDRule": (
        rules("StdAdaGradSGDRule", "adagrad", {"learning_rate": 0.1, "initial_range": 0.0, "initial_g2sum": 2.0},
              {"learning_rate": 0.2, "initial_range": 0.0, "initial_g2sum": 1.5}), BATCHES, {
            1: (4, [-0.15997, 0.153524, -0.0259344, -0.14798],
                {"embed_g2sum": [1.29], "embedx_g2sum": [1.09, 0.41, 0.3125]}),
            2: (4, [-0.0500209, -0.137647, -0.137035, -0.0211486],
                {"embed_g2sum": [0.27], "embedx_g2sum": [0.85, 0.25, 0.13]}),
            3: (2, [-0.181535, 0.1, -0.04, -0.02], {"embed_g2sum": [2.18], "embedx_g2sum": [0.25, 0.04, 0.01]}),
            5: (1, [-0.01, 0, 0, 0], {"embed_g2sum": [0.01], "embedx_g2sum": [0, 0, 0]}),
        }),
    # Paddle's the_one_ps sets adam's beta1/beta2/epsilon to 0.9/0.999/1e-8 whatever the
    # configuration says: the embedx beta1_decay_rate of 0.5 here changes nothing.
    "SparseAdamSGDRule": (
        rules("SparseAdamSGDRule", "adam", {"learning_rate": 0.1, "initial_range": 0.0},
              {"learning_rate": 0.05, "initial_range": 0.0, "beta1_decay_rate": 0.5}), BATCHES, {
            1: (4, [-0.285488, 0.0713923, -0.0529062, -0.0982589],
                {"embed_gsum": [0.191], "embed_g2sum": [0.00203697], "embed_beta1_pow": [0.6561],
                 "embed_beta2_pow": [0.996006], "embedx_gsum": [-0.06, 0.005, 0.0725],
                 "embedx_g2sum": [0.00108899, 0.000409745, 0.000312433], "embedx_beta1_pow": [0.729],
                 "embedx_beta2_pow": [0.997003]}),
            2: (4, [-0.246474, 0.0295983, -0.0944376, -0.0700108],
                {"embed_gsum": [0.0485], "embed_g2sum": [0.000299456], "embedx_gsum": [0.054, 0.102, 0.034],
                 "embedx_g2sum": [0.000969828, 0.000729351, 0.000399635]}),
            3: (2, [-0.194283, 0.05, -0.0499999, -0.0499998],
                {"embed_gsum": [0.187], "embed_beta1_pow": [0.729], "embedx_beta1_pow": [0.81],
                 "embedx_beta2_pow": [0.998001]}),
            5: (1, [-0.0999997, 0, 0, 0], {"embed_beta1_pow": [0.81], "embedx_beta1_pow": [0.9],
                                           "embedx_beta2_pow": [0.999]}),
        }),
}


def accessor_table(config, *, initial_range=0.01, learning_rate=0.1, dim=4):
    flat = {"table_parameters.embedding." + k: v for k, v in config.items()}
    acc = resolve_accessor("embedding", parse_table_config("embedding", flat), dim,
                           initial_range=initial_range, learning_rate=learning_rate)
    return SparseTable(TableConfig(name="embedding", dim=dim, accessor=acc))


def train(table, batches):
    for batch in batches:
        b = np.array(batch)
        ids = b[:, 0].astype(np.int64)
        table.lookup(ids)
        table.push(ids, b[:, 1:].astype(np.float32))
        table.end_step()
    return table.export()


@pytest.mark.parametrize("case", sorted(CASES))
def test_rows_match_paddle_3(case):
    config, batches, want = CASES[case]
    shard = train(accessor_table(config), batches)
    assert shard.ids.tolist() == sorted(want)
    for i, key in enumerate(shard.ids.tolist()):
        show, value, state = want[key]
        assert shard.meta["show"][i] == show and shard.meta["click"][i] == 0
        np.testing.assert_allclose(shard.values[i], value, rtol=2e-5, atol=2e-6, err_msg=f"{case} id {key}")
        for name, expected in state.items():
            np.testing.assert_allclose(shard.state[name][i], expected, rtol=2e-5, atol=2e-6,
                                       err_msg=f"{case} id {key} {name}")


def test_sparse_adagrad_keeps_one_g2sum_per_row_std_adagrad_one_per_column():
    sparse = accessor_table(CASES["SparseAdaGradSGDRule, 2 batches"][0])
    std = accessor_table(CASES["StdAdaGradSGDRule"][0])
    sparse_cols = {n: c.shape for n, c in sparse._optimizer.columns.items()}
    std_cols = {n: c.shape for n, c in std._optimizer.columns.items()}
    assert sparse_cols["embedx_g2sum"] == (1,) and std_cols["embedx_g2sum"] == (3,)


def test_embedx_waits_for_the_threshold_and_the_push_that_creates_it_does_not_train_it():
    """Paddle 3.0.0's rows for embedx_threshold 1 with nonclk_coeff 0.5 (score = 0.5 * show):
    id 1 reaches it in batch 0, id 2 in batch 1, id 3 in batch 2, id 5 never."""
    config = rules("SparseAdaGradSGDRule", "adagrad", {"learning_rate": 0.1, "initial_range": 0.0},
                   {"learning_rate": 0.1, "initial_range": 0.0, "weight_bounds": [-0.03, 0.05]})
    config.update({A + "embedx_threshold": 1, A + "ctr_accessor_param.nonclk_coeff": 0.5})
    table = accessor_table(config)
    ready = {}
    for k, batch in enumerate(BATCHES):
        train(table, [batch])
        shard = table.export()
        ready[k] = {int(i): bool(r) for i, r in zip(shard.ids, shard.state["embedx_ready"][:, 0])}
    assert ready[0] == {1: True, 2: False, 3: False}
    assert ready[1] == {1: True, 2: True, 3: False, 5: False}
    assert ready[2] == {1: True, 2: True, 3: True, 5: False}
    shard = table.export()
    want = {1: ([-0.16288, 0.021974, 0.00736795, -0.03], 1.29, 0.604167),
            2: ([-0.0500147, -0.03, -0.03, 0.02], 0.27, 0.313333),
            3: ([-0.185985, 0, 0, 0], 2.18, 0),     # created by the last push, untrained
            5: ([-0.01, 0, 0, 0], 0.01, 0)}         # never created: reads as zeros
    for i, key in enumerate(shard.ids.tolist()):
        value, embed_g2sum, embedx_g2sum = want[key]
        np.testing.assert_allclose(shard.values[i], value, rtol=2e-5, atol=2e-6, err_msg=f"id {key}")
        np.testing.assert_allclose(shard.state["embed_g2sum"][i], [embed_g2sum], rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(shard.state["embedx_g2sum"][i], [embedx_g2sum], rtol=2e-5, atol=2e-6)


def test_new_rows_start_as_paddle_says():
    config = rules("SparseAdaGradSGDRule", "adagrad", {"initial_range": 0.5},
                   {"initial_range": 0.25, "weight_bounds": [-0.1, 0.2]})
    table = accessor_table(config)
    ids = np.arange(1, 200, dtype=np.int64)
    np.testing.assert_array_equal(table.lookup(ids), 0)   # zero_init embed, no embedx yet
    table.push(ids, np.zeros((ids.size, 4), np.float32))  # score 0.1 >= threshold 0: embedx created
    embedx = table.lookup(ids)[:, 1:]
    assert embedx.min() >= -0.1 and embedx.max() <= 0.2 and np.unique(embedx).size > 100
    assert (embedx == -0.1).any() and (embedx == 0.2).any()   # draws in [-0.25, 0.25) clipped
    again = accessor_table(config)
    again.lookup(ids)
    again.push(ids, np.zeros((ids.size, 4), np.float32))
    np.testing.assert_array_equal(again.lookup(ids), table.lookup(ids))   # a function of (seed, id)


def test_paddles_defaults():
    acc = resolve_accessor("embedding", parse_table_config("embedding", {}), 9, initial_range=0.02,
                           learning_rate=0.3)
    assert acc.accessor_class == "SparseAccessor" and acc.embedx_dim == 8 and acc.embedx_threshold == 0
    for rule in (acc.embed, acc.embedx):
        assert rule.name == "SparseAdamSGDRule" and rule.learning_rate == 0.3 and rule.initial_range == 0.02
        assert rule.weight_bounds == (-10.0, 10.0) and rule.beta1_decay_rate == 0.9
    ada = resolve_accessor("embedding", parse_table_config("embedding", {
        "table_parameters.embedding.accessor.embed_sgd_param.name": "SparseAdaGradSGDRule"}), 9,
        initial_range=0.02, learning_rate=0.3)
    assert (ada.embed.learning_rate, ada.embed.initial_g2sum, ada.embed.initial_range) == (0.05, 3.0, 1e-4)
    assert ada.zero_init and acc.nonclk_coeff == 0.1 and acc.click_coeff == 1.0


def test_paddlerecs_online_config_resolves():
    """PaddleRec's models/rank/slot_dnn/config_online.yaml, as program_helper flattens it."""
    t = "table_parameters.embedding."
    flat = {t + "table_class": "MemorySparseTable", t + "shard_num": 10,
            t + "accessor.accessor_class": "SparseAccessor", t + "accessor.fea_dim": 11,
            t + "accessor.embedx_dim": 8, t + "accessor.embedx_threshold": 10}
    for side in ("embed", "embedx"):
        flat[f"{t}accessor.{side}_sgd_param.name"] = "SparseAdaGradSGDRule"
        for key, value in (("learning_rate", 0.05), ("initial_g2sum", 3.0), ("initial_range", 0.0001),
                           ("weight_bounds", [-10.0, 10.0])):
            flat[f"{t}accessor.{side}_sgd_param.adagrad.{key}"] = value
    for key, value in (("nonclk_coeff", 0.1), ("click_coeff", 1.0), ("base_threshold", 1.5),
                       ("delta_threshold", 0.25), ("delta_keep_days", 16.0), ("show_click_decay_rate", 0.98),
                       ("delete_threshold", 0.8), ("delete_after_unseen_days", 30.0),
                       ("ssd_unseenday_threshold", 1)):
        flat[f"{t}accessor.ctr_accessor_param.{key}"] = value
    acc = resolve_accessor("embedding", parse_table_config("embedding", flat), 9, initial_range=0.1,
                           learning_rate=0.1)
    assert acc.embedx_dim == 8 and acc.embedx_threshold == 10 and acc.show_click_decay_rate == 0.98
    assert acc.embedx.name == "SparseAdaGradSGDRule" and acc.embedx.initial_range == 0.0001


@pytest.mark.parametrize("key, value, message", [
    ("accessor.embed_sgd_param.name", "SparseMomentumRule", "unknown SGD rule 'SparseMomentumRule'"),
    ("accessor.embed_sgd_param.adagrad.beta1_decay_rate", 0.9, "adagrad has no field 'beta1_decay_rate'"),
    ("accessor.embedx_sgd_param.naive.weight_bounds", [1.0, -1.0], "min is above max"),
    ("accessor.embedx_sgd_param.naive.weight_bounds", [1.0], "weight_bounds must be [min, max]"),
    ("accessor.no_such_field", 1, "unknown key"),
    ("accesor.fea_dim", 6, "unknown key"),
    ("accessor.embedx_threshold", 0.5, "embedx_threshold must be an int >= 0"),
    ("table_class", "HashTable", "table_class must be one of"),
    ("accessor.embed_sgd_param.adagrad.learning_rate", "fast", "must be a finite number"),
])
def test_bad_keys_and_values_are_named(key, value, message):
    with pytest.raises(AccessorConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_table_config("embedding", {"table_parameters.embedding." + key: value})


def test_keys_of_another_table_are_refused():
    with pytest.raises(AccessorConfigError, match="must start with 'table_parameters.embedding.'"):
        parse_table_config("embedding", {"table_parameters.other.accessor.fea_dim": 6})


@pytest.mark.parametrize("field, value, message", [
    ("fea_dim", 5, "fea_dim is 5, but the embedding 'embedding' has 4 columns, so a SparseAccessor's fea_dim must be 6"),
    ("embedx_dim", 4, "embedx_dim is 4, .* must be 3"),
])
def test_dims_must_add_up(field, value, message):
    parsed = parse_table_config("embedding", {f"table_parameters.embedding.accessor.{field}": value})
    with pytest.raises(AccessorConfigError, match=message):
        resolve_accessor("embedding", parsed, 4, initial_range=0.1, learning_rate=0.1)


def test_ctr_common_accessor_layout_is_refused_by_name():
    parsed = parse_table_config("embedding", {"table_parameters.embedding.accessor.accessor_class": "CtrCommonAccessor",
                                              "table_parameters.embedding.accessor.fea_dim": 4,
                                              "table_parameters.embedding.accessor.embedx_dim": 1})
    with pytest.raises(AccessorConfigError, match="CtrCommonAccessor pulls show and click"):
        resolve_accessor("embedding", parsed, 4, initial_range=0.1, learning_rate=0.1)


def test_a_rule_reading_another_rules_fields_is_refused():
    parsed = parse_table_config("embedding", {
        "table_parameters.embedding.accessor.embed_sgd_param.name": "SparseNaiveSGDRule",
        "table_parameters.embedding.accessor.embed_sgd_param.adagrad.learning_rate": 0.1})
    with pytest.raises(AccessorConfigError, match="embed_sgd_param is SparseNaiveSGDRule, which reads"):
        resolve_accessor("embedding", parsed, 4, initial_range=0.1, learning_rate=0.1)


def test_no_constant_learning_rate_needs_one_in_the_config():
    with pytest.raises(AccessorConfigError, match="set embed_sgd_param.adam.learning_rate"):
        resolve_accessor("embedding", parse_table_config("embedding", {}), 4, initial_range=0.1, learning_rate=None)


def test_table_dim_must_match_the_accessor():
    acc = resolve_accessor("embedding", parse_table_config("embedding", {}), 4, initial_range=0.1, learning_rate=0.1)
    with pytest.raises(ValueError, match="1 \\+ embedx_dim = 4 columns, the table has 5"):
        TableConfig(name="embedding", dim=5, accessor=acc)


def test_strategy_checks_sparse_table_configs_when_set():
    from psjob.distributed.fleet.strategy import DistributedStrategy
    from psjob.fleet.strategy import resolve
    s = DistributedStrategy()
    assert s.sparse_table_configs == {} and resolve(s).table_accessors == ()
    with pytest.raises(AccessorConfigError, match="unknown SGD rule"):
        s.sparse_table_configs = {"embedding": {"table_parameters.embedding.accessor.embed_sgd_param.name": "X"}}
    with pytest.raises(TypeError, match="sparse_table_configs must be a dict"):
        s.sparse_table_configs = [("embedding", {})]
    entry = {"table_parameters.embedding.accessor.embedx_threshold": 3}
    s.sparse_table_configs = {"embedding": entry}
    assert s.sparse_table_configs == {"embedding": entry}
    ((name, parsed),) = resolve(s).table_accessors
    assert name == "embedding" and parsed["accessor"] == {"embedx_threshold": 3}


def test_an_accessor_table_stays_on_the_host():
    table = accessor_table({})
    with pytest.raises(RuntimeError, match="trained by Paddle's accessor"):
        table.to_device(np)


def shrink_table(**ctr):
    config = dict(CASES["SparseAdaGradSGDRule, 2 batches"][0])
    config.update({f"{A}ctr_accessor_param.{k}": v for k, v in ctr.items()})
    table = accessor_table(config)
    train(table, BATCHES[:2])   # shows: id 1: 3, id 2: 3, id 3: 1, id 5: 1
    return table


def test_shrink_decays_shows_then_drops_rows_below_delete_threshold():
    table = shrink_table(show_click_decay_rate=0.5, delete_threshold=0.1)
    assert table.shrink() == 2        # scores 0.1 * show * 0.5: 0.15, 0.15, 0.05, 0.05
    shard = table.export()
    assert shard.ids.tolist() == [1, 2] and shard.meta["show"].tolist() == [1.5, 1.5]
    assert table.stats().evicted == 2
    np.testing.assert_allclose(shard.values[0], CASES["SparseAdaGradSGDRule, 2 batches"][2][1][1], rtol=2e-5)
    assert table.shrink() == 2        # 0.075 each
    assert len(table) == 0
    np.testing.assert_array_equal(table.lookup(np.array([1], np.int64)), 0)   # a new row


def test_shrink_drops_rows_unseen_for_more_than_delete_after_unseen_days():
    table = shrink_table(delete_threshold=0.0, delete_after_unseen_days=1)
    assert table.shrink() == 0 and table.shrink() == 0    # 0, then 1 day unseen
    table.push(np.array([1], np.int64), np.zeros((1, 4), np.float32))   # id 1 seen again
    assert table.shrink() == 3                            # 2 days > 1: ids 2, 3, 5
    assert table.export().ids.tolist() == [1]
    assert table.export().state["unseen_days"].tolist() == [[1.0]]


def test_shrink_needs_an_accessor():
    with pytest.raises(RuntimeError, match="has no accessor to shrink by"):
        SparseTable(TableConfig(name="t", dim=2)).shrink()


def test_an_accessor_tables_rows_move_with_their_state():
    """A checkpoint's export/import: the state (g2sums, embedx_ready, show, unseen days) moves,
    so training continues as if uninterrupted; a table of another rule refuses the shard."""
    config = CASES["SparseAdaGradSGDRule, 2 batches"][0]
    whole = accessor_table(config)
    train(whole, BATCHES)
    first = accessor_table(config)
    train(first, BATCHES[:2])
    assert first.rule == "accessor:SparseAccessor" and SparseTable(TableConfig(name="t", dim=4)).rule == "sgd"
    resumed = accessor_table(config)
    resumed.import_rows(first.export())
    train(resumed, BATCHES[2:])
    a, b = whole.export(), resumed.export()
    np.testing.assert_array_equal(a.values, b.values)
    assert all(np.array_equal(a.state[n], b.state[n]) for n in a.state) and sorted(a.state) == sorted(b.state)
    np.testing.assert_array_equal(a.meta["show"], b.meta["show"])
    with pytest.raises(ValueError, match="does not match this table's 'sgd' state"):
        SparseTable(TableConfig(name="embedding", dim=4)).import_rows(first.export())


def test_an_empty_entry_trains_as_paddles_default_accessor():
    """Paddle 3.0.0 with no sparse_table_configs at all (its SparseAccessor defaults: SparseAdam
    with the optimizer's learning rate, 0.1 here, and the initializer's range, 0.01): the embed
    column and every rule's state as Paddle saved them. Its embedx draws are Paddle's random
    engine's, so only their range is checked."""
    shard = train(accessor_table({}, initial_range=0.01, learning_rate=0.1), BATCHES)
    want = {1: (-0.285488, [0.191], [0.00203697], [-0.06, 0.005, 0.0725], [0.00108899, 0.000409745, 0.000312433]),
            2: (-0.246474, [0.0485], [0.000299456], [0.054, 0.102, 0.034], [0.000969828, 0.000729351, 0.000399635]),
            3: (-0.194283, [0.187], [0.00217828], [-0.05, 0.02, 0.01], [0.000249997, 3.99995e-05, 9.99987e-06])}
    for i, key in enumerate(shard.ids.tolist()):
        if key not in want:
            continue
        embed, gsum, g2sum, x_gsum, x_g2sum = want[key]
        np.testing.assert_allclose(shard.values[i][0], embed, rtol=2e-5)
        for name, expected in (("embed_gsum", gsum), ("embed_g2sum", g2sum), ("embedx_gsum", x_gsum),
                               ("embedx_g2sum", x_g2sum)):
            np.testing.assert_allclose(shard.state[name][i], expected, rtol=2e-5, atol=2e-7, err_msg=name)
        assert np.abs(shard.values[i][1:]).max() < 0.01 + 3 * 0.1   # an initial draw plus 3 Adam steps


def test_a_scaled_learning_rate_gives_the_rules_the_optimizers_base_rate(caplog):
    """A table with ParamAttr(learning_rate=3) learns at a scale op's output, not a constant;
    Paddle 3.0.0's the_one_ps then gives the naive and adam rules the optimizer's base rate (the
    startup value of learning_rate_0) and warns (its test_dist_fleet_ps2.py trains so)."""
    import json

    import psjob.fluid as fluid
    from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[50, 4], is_sparse=True, is_distributed=True,
                                     param_attr=fluid.ParamAttr(name="emb", learning_rate=3.0))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
        fluid.optimizer.SGD(0.01).minimize(loss)
    config = DistributeTranspilerConfig()
    config.sparse_table_accessors = {"emb": parse_table_config("emb", {
        "table_parameters.emb.accessor.embed_sgd_param.name": "SparseNaiveSGDRule",
        "table_parameters.emb.accessor.embedx_sgd_param.name": "SparseAdamSGDRule"})}
    t = DistributeTranspiler(config)
    t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170", trainers=1, sync_mode=False)
    pserver_startup = t.get_startup_program("127.0.0.1:6170", t.get_pserver_program("127.0.0.1:6170"))
    (accessor,) = [json.loads(op.attr("accessor")) for op in pserver_startup.global_block().ops if op.attr("accessor")]
    assert accessor["embed"]["learning_rate"] == pytest.approx(0.01)
    assert accessor["embedx"]["learning_rate"] == pytest.approx(0.01)
    assert "learning_rate_0 = 0.01" in caplog.text
