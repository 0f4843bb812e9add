"""Layers: shapes inferred at build time, Fluid semantics of each layer
checked against plain numpy (loops written for clarity, not speed), and the
errors a misuse gets. Gradients are covered by test_op_gradients.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid import layers
from psjob.fluid.backward import append_backward
from psjob.fluid.core import SelectedRows
from psjob.fluid.executor import ExecutionError
from psjob.fluid.framework import GraphError, VarType


@pytest.fixture
def prog():
    """Fresh main/startup programs and names; yields (main, startup, run)."""
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 11
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())

    def run(feed=None, fetch=(), program=None, **kw):
        return exe.run(program or main, feed=feed or {}, fetch_list=list(fetch), scope=scope, **kw)

    run.scope = scope
    run.startup = lambda: exe.run(startup, scope=scope)
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        yield main, startup, run


def lod_of(lengths):
    return [[0] + np.cumsum(lengths).tolist()]


def ids_feed(values, lengths):
    return (np.asarray(values, dtype=np.int64).reshape(-1, 1), lod_of(lengths))


# -- embedding ---------------------------------------------------------------------------

def test_embedding_infers_shape_and_keeps_the_ids_lod(prog):
    main, _, run = prog
    ids = layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    emb = layers.embedding(ids, size=[10, 4], padding_idx=-1)
    assert emb.shape == (-1, 4) and emb.lod_level == 1
    op = main.global_block().ops[-1]
    assert op.type == "lookup_table" and op.attr("padding_idx") == 9  # -1 counts from the end
    run.startup()
    w = np.array(run.scope.find_var(op.input("W")[0]).get_tensor())
    out, = run({"ids": ids_feed([3, 9, 3, 0], [1, 3])}, [emb], return_numpy=False)
    np.testing.assert_array_equal(np.array(out), np.stack([w[3], np.zeros(4), w[3], w[0]]))
    assert out.lod() == [[0, 1, 4]]


def test_embedding_without_padding_idx_sets_the_no_padding_marker(prog):
    ids = layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    layers.embedding(ids, size=[10, 4])
    assert prog[0].global_block().ops[-1].attr("padding_idx") == -1


def test_sparse_embedding_gradient_is_selected_rows_of_the_looked_up_ids(prog):
    main, _, run = prog
    ids = layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    emb = layers.embedding(ids, size=[50, 3], is_sparse=True, param_attr="table")
    loss = layers.mean(layers.sequence_pool(emb, "sum"))
    (param, grad), = append_backward(loss)
    assert grad.type == VarType.SELECTED_ROWS
    lookup = next(op for op in main.global_block().ops if op.type == "lookup_table")
    assert lookup.attr("is_sparse") and lookup.attr("remote_prefetch") and not lookup.attr("is_distributed")
    run.startup()
    sr, = run({"ids": ids_feed([7, 7, 42], [2, 1])}, [grad])
    assert isinstance(sr, SelectedRows) and sr.height == 50
    assert sr.rows.tolist() == [7, 7, 42]
    np.testing.assert_allclose(sr.values, np.full((3, 3), 1 / 6))


def test_embedding_with_an_out_of_range_id_names_the_id_and_the_table_size(prog):
    _, _, run = prog
    ids = layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    emb = layers.embedding(ids, size=[10, 4])
    run.startup()
    with pytest.raises(ExecutionError, match=r"id 12 is out of range for a table of 10 rows"):
        run({"ids": ids_feed([1, 12], [2])}, [emb])


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(size=[10]), TypeError, "'size'"),
    (dict(size=[10, 0]), ValueError, r"'size\[1\]'"),
    (dict(size=[10, 4], padding_idx=10), ValueError, "'padding_idx'"),
    (dict(size=[10, 4], dtype="int32"), ValueError, "'dtype'"),
])
def test_embedding_rejects_bad_arguments_by_name(prog, kwargs, error, pattern):
    ids = layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    with pytest.raises(error, match=pattern):
        layers.embedding(ids, **kwargs)


def test_embedding_accepts_a_numpy_dtype(prog):
    ids = layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    assert layers.embedding(ids, size=[10, 4], dtype=np.float64).dtype == "float64"


def test_embedding_rejects_float_ids(prog):
    x = layers.data(name="x", shape=[1])
    with pytest.raises(TypeError, match="'input'.*int64"):
        layers.embedding(x, size=[10, 4])


# -- sequence_pool -----------------------------------------------------------------------

def naive_pool(x, lengths, pool, pad):
    out, start = [], 0
    for n in lengths:
        seq = x[start:start + n]
        start += n
        if n == 0:
            out.append(np.full(x.shape[1], pad))
        elif pool == "sum":
            out.append(seq.sum(0))
        elif pool == "average":
            out.append(seq.mean(0))
        elif pool == "sqrt":
            out.append(seq.sum(0) / np.sqrt(n))
        elif pool == "max":
            out.append(seq.max(0))
        elif pool == "first":
            out.append(seq[0])
        else:
            out.append(seq[-1])
    return np.array(out)


@pytest.mark.parametrize("pool", ["sum", "average", "sqrt", "max", "first", "last"])
@pytest.mark.parametrize("lengths", [[1, 1, 1, 1], [3, 3], [2, 0, 4, 1, 0], [1, 1, 1, 40], [0, 0]],
                         ids=["one-each", "uniform", "ragged-with-empty", "skewed", "all-empty"])
def test_sequence_pool_matches_a_per_sequence_loop(prog, pool, lengths):
    _, _, run = prog
    x = layers.data(name="x", shape=[3], dtype="float64", lod_level=1)
    out = layers.sequence_pool(x, pool, pad_value=-7.0)
    assert out.shape == (-1, 3) and out.lod_level == 0
    data = np.random.default_rng(1).normal(size=(sum(lengths), 3))
    got, = run({"x": (data, lod_of(lengths))}, [out], return_numpy=False)
    np.testing.assert_allclose(np.array(got), naive_pool(data, lengths, pool, -7.0), rtol=1e-12)
    assert got.lod() == []


def test_sequence_pool_sees_a_lod_list_refilled_in_place_between_runs(prog):
    _, _, run = prog
    x = layers.data(name="x", shape=[1], dtype="float64", lod_level=1)
    out = layers.sequence_pool(x, "sum")
    data = np.array([[1.0], [2.0], [4.0]])
    lod = [[0, 1, 3]]
    first, = run({"x": (data, lod)}, [out])
    lod[0][:] = [0, 2, 3]
    second, = run({"x": (data, lod)}, [out])
    assert first[:, 0].tolist() == [1.0, 6.0] and second[:, 0].tolist() == [3.0, 4.0]


def test_sequence_pool_rejects_an_unknown_pool_type(prog):
    x = layers.data(name="x", shape=[3], lod_level=1)
    with pytest.raises(ValueError, match="'pool_type'"):
        layers.sequence_pool(x, "median")


def test_sequence_pool_without_lod_says_it_needs_sequences(prog):
    _, _, run = prog
    x = layers.data(name="x", shape=[3])
    out = layers.sequence_pool(x, "sum")
    with pytest.raises(ExecutionError, match="needs a LoD"):
        run({"x": np.ones((2, 3), "float32")}, [out])


# -- shape layers -------------------------------------------------------------------------

def test_concat_infers_the_joined_dimension_and_rejects_mismatches(prog):
    a = layers.data(name="a", shape=[3])
    b = layers.data(name="b", shape=[5])
    assert layers.concat([a, b], axis=1).shape == (-1, 8)
    assert layers.concat([a, a], axis=0).shape == (-1, 3)
    with pytest.raises(GraphError, match="differ in dimension 1"):
        layers.concat([a, b], axis=0)
    with pytest.raises(TypeError, match="'input'"):
        layers.concat(a)


def test_split_piece_that_does_not_reach_the_loss_gets_a_zero_gradient(prog):
    main, _, run = prog
    x = layers.data(name="x", shape=[6], dtype="float64", stop_gradient=False)
    w = layers.create_parameter([6], "float64", name="w")
    first, second = layers.split(layers.elementwise_mul(x, w), [2, 4], dim=1)
    assert first.shape == (-1, 2) and second.shape == (-1, 4)
    loss = layers.mean(first)
    (_, grad), = append_backward(loss)
    assert any(op.type == "fill_zeros_like" for op in main.global_block().ops)
    run.startup()
    data = np.arange(12, dtype=np.float64).reshape(2, 6)
    g, = run({"x": data}, [grad])
    np.testing.assert_allclose(g, np.concatenate([data[:, :2].sum(0) / 4, np.zeros(4)]))


def test_reshape_transpose_squeeze_unsqueeze_infer_shapes(prog):
    x = layers.data(name="x", shape=[2, 3, 4], append_batch_size=False)
    assert layers.reshape(x, [0, -1]).shape == (2, 12)
    assert layers.reshape(x, [4, 6]).shape == (4, 6)
    assert layers.transpose(x, [2, 0, 1]).shape == (4, 2, 3)
    assert layers.unsqueeze(x, [0, 4]).shape == (1, 2, 3, 4, 1)
    y = layers.data(name="y", shape=[3, 1, 4], append_batch_size=False)
    assert layers.squeeze(y, [1]).shape == (3, 4)
    batch = layers.data(name="b", shape=[3, 4])
    assert layers.reshape(batch, [-1, 12]).shape == (-1, 12)
    with pytest.raises(GraphError, match="cannot reshape"):
        layers.reshape(x, [5, -1])
    with pytest.raises(GraphError, match="at most one -1"):
        layers.reshape(x, [-1, -1])
    with pytest.raises(ValueError, match="'perm'"):
        layers.transpose(x, [0, 1])
    with pytest.raises(GraphError, match="cannot squeeze dimension 0"):
        layers.squeeze(y, [0])


def test_reduce_layers_follow_fluid_dims_and_keep_dim(prog):
    _, _, run = prog
    x = layers.data(name="x", shape=[2, 3, 4], dtype="float64", append_batch_size=False)
    outs = [layers.reduce_sum(x), layers.reduce_sum(x, dim=1), layers.reduce_mean(x, dim=[0, -1], keep_dim=True),
            layers.reduce_mean(x, dim=-1)]
    assert [o.shape for o in outs] == [(1,), (2, 4), (1, 3, 1), (2, 3)]
    data = np.random.default_rng(0).normal(size=(2, 3, 4))
    got = run({"x": data}, outs)
    want = [data.sum().reshape(1), data.sum(1), data.mean(axis=(0, 2), keepdims=True), data.mean(-1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    with pytest.raises(GraphError, match="dim 3 is out of range"):
        layers.reduce_sum(x, dim=3)


# -- losses -------------------------------------------------------------------------------

def test_cross_entropy_is_minus_log_of_the_label_probability_and_ignores_ignore_index(prog):
    _, _, run = prog
    p = layers.data(name="p", shape=[4], dtype="float64")
    y = layers.data(name="y", shape=[1], dtype="int64")
    ce = layers.cross_entropy(p, y, ignore_index=3)
    assert ce.shape == (-1, 1)
    probs = np.random.default_rng(0).dirichlet(np.ones(4), size=3)
    label = np.array([[0], [3], [2]])
    got, = run({"p": probs, "y": label}, [ce])
    np.testing.assert_allclose(got[:, 0], [-np.log(probs[0, 0]), 0.0, -np.log(probs[2, 2])])
    with pytest.raises(ExecutionError, match="label 7 is out of range for 4 classes"):
        run({"p": probs, "y": np.array([[0], [7], [1]])}, [ce])


def test_cross_entropy_rejects_labels_of_the_wrong_kind(prog):
    p = layers.data(name="p", shape=[4])
    soft = layers.data(name="s", shape=[4])
    with pytest.raises(ValueError, match="hard 'label' s.* must end in a dimension of 1"):
        layers.cross_entropy(p, soft)
    with pytest.raises(TypeError, match="'label'.*int32 or int64 or float"):
        layers.cross_entropy(p, layers.data(name="b", shape=[1], dtype="bool"))
    hard = layers.data(name="h", shape=[1], dtype="int64")
    with pytest.raises(TypeError, match="'label'.*float"):
        layers.cross_entropy(p, hard, soft_label=True)


def test_softmax_with_cross_entropy_equals_cross_entropy_of_softmax(prog):
    _, _, run = prog
    logits = layers.data(name="z", shape=[5], dtype="float64")
    y = layers.data(name="y", shape=[1], dtype="int64")
    fused, sm = layers.softmax_with_cross_entropy(logits, y, return_softmax=True)
    two_step = layers.cross_entropy(layers.softmax(logits), y)
    z = np.random.default_rng(0).normal(size=(4, 5)) * 3
    a, b, s = run({"z": z, "y": np.array([[1], [4], [0], [2]])}, [fused, two_step, sm])
    np.testing.assert_allclose(a, b, rtol=1e-10)
    np.testing.assert_allclose(s.sum(1), 1.0)


def test_sigmoid_cross_entropy_with_logits_is_finite_for_huge_logits(prog):
    _, _, run = prog
    x = layers.data(name="x", shape=[1], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    out = layers.sigmoid_cross_entropy_with_logits(x, y)
    norm = layers.sigmoid_cross_entropy_with_logits(x, y, ignore_index=-1, normalize=True)
    logits = np.array([[-200.0], [0.5], [200.0], [3.0]], "float32")
    label = np.array([[1.0], [0.0], [0.0], [-1.0]], "float32")
    got, got_norm = run({"x": logits, "y": label}, [out, norm])
    z, t = logits.astype(np.float64), label.astype(np.float64)
    ref = np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    np.testing.assert_allclose(got_norm[:3], ref[:3] / 3, rtol=1e-6)
    assert got_norm[3, 0] == 0.0
    with pytest.raises(TypeError, match="'label'.*cast"):
        layers.sigmoid_cross_entropy_with_logits(x, layers.data(name="l", shape=[1], dtype="int64"))


def test_log_loss_matches_its_formula(prog):
    _, _, run = prog
    p = layers.data(name="p", shape=[1], dtype="float64")
    y = layers.data(name="y", shape=[1], dtype="float64")
    out = layers.log_loss(p, y, epsilon=1e-4)
    pv, yv = np.array([[0.2], [0.9]]), np.array([[1.0], [0.0]])
    got, = run({"p": pv, "y": yv}, [out])
    np.testing.assert_allclose(got, -yv * np.log(pv + 1e-4) - (1 - yv) * np.log(1 - pv + 1e-4))


# -- accuracy and auc ---------------------------------------------------------------------

def test_accuracy_counts_labels_among_the_top_k(prog):
    _, _, run = prog
    scores = layers.data(name="s", shape=[4], dtype="float32")
    label = layers.data(name="y", shape=[1], dtype="int64")
    correct = layers.create_global_var([1], 0, "int32", name="correct")
    total = layers.create_global_var([1], 0, "int32", name="total")
    top1 = layers.accuracy(scores, label)
    top2 = layers.accuracy(scores, label, k=2, correct=correct, total=total)
    assert top1.shape == (1,) and top1.dtype == "float32"
    s = np.array([[0.1, 0.6, 0.2, 0.1], [0.5, 0.1, 0.3, 0.1], [0.2, 0.25, 0.5, 0.05]], "float32")
    y = np.array([[1], [2], [0]])
    a1, a2, c, t = run({"s": s, "y": y}, [top1, top2, correct, total])
    assert a1[0] == pytest.approx(1 / 3) and a2[0] == pytest.approx(2 / 3)
    assert (c[0], t[0]) == (2, 3)
    with pytest.raises(TypeError, match="'label'"):
        layers.accuracy(scores, scores)


def exact_roc_auc(scores, labels):
    """Mann-Whitney U: the fraction of (positive, negative) pairs ranked right, ties 1/2."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return (greater + 0.5 * ties) / (pos.size * neg.size)


def bucket_error_bound(scores, labels, thresholds):
    """Pairs sharing a bucket count 1/2 in the bucketed AUC; they bound its error."""
    b = (np.clip(scores, 0, 1) * thresholds).astype(np.int64)
    pos = np.bincount(b[labels == 1], minlength=thresholds + 1)
    neg = np.bincount(b[labels == 0], minlength=thresholds + 1)
    return 0.5 * float((pos * neg).sum()) / ((labels == 1).sum() * (labels == 0).sum())


def test_auc_matches_exact_roc_within_the_bucket_error_and_accumulates_across_batches(prog):
    main, startup, run = prog
    p = layers.data(name="p", shape=[1], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="int64")
    auc_out, batch_auc, stats = layers.auc(p, y, num_thresholds=200)
    assert all(v.persistable for v in stats)
    assert [v.shape for v in stats] == [(1, 201)] * 4
    assert {v.name for v in stats} <= set(startup.global_block().vars)
    run.startup()
    rng = np.random.default_rng(5)
    batches = []
    for _ in range(3):
        labels = (rng.random(400) < 0.4).astype(np.int64)
        scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1).astype(np.float32)
        batches.append((scores, labels))
        g, b = run({"p": scores.reshape(-1, 1), "y": labels.reshape(-1, 1)}, [auc_out, batch_auc])
        assert b[0] == pytest.approx(exact_roc_auc(scores, labels),
                                     abs=bucket_error_bound(scores, labels, 200) + 1e-12)
    all_s = np.concatenate([s for s, _ in batches])
    all_l = np.concatenate([lb for _, lb in batches])
    assert g[0] == pytest.approx(exact_roc_auc(all_s, all_l), abs=bucket_error_bound(all_s, all_l, 200) + 1e-12)
    assert g[0] != b[0]
    host = fluid.metrics.Auc(num_thresholds=200)
    for s, lb in batches:
        host.update(s.reshape(-1, 1), lb)
    assert host.eval() == pytest.approx(g[0], rel=1e-12)


def test_auc_with_slide_steps_covers_the_last_batches_only(prog):
    _, _, run = prog
    p = layers.data(name="p", shape=[2], dtype="float64")
    y = layers.data(name="y", shape=[1], dtype="int64")
    _, batch_auc, stats = layers.auc(p, y, num_thresholds=100, slide_steps=2)
    assert stats[0].shape == (2, 101)
    run.startup()
    rng = np.random.default_rng(2)
    seen = []
    for _ in range(4):
        labels = rng.integers(0, 2, 64)
        pos = rng.random(64)
        seen.append((pos, labels))
        b, = run({"p": np.stack([1 - pos, pos], 1), "y": labels.reshape(-1, 1)}, [batch_auc])
    window = fluid.metrics.Auc(num_thresholds=100)
    for pos, labels in seen[-2:]:
        window.update(np.stack([1 - pos, pos], 1), labels)
    assert b[0] == pytest.approx(window.eval(), rel=1e-12)


def _trapezoids_over_every_bucket(pos, neg):
    """The ROC AUC walk over all buckets, top down, empty ones included."""
    tp = fp = area = 0.0
    for p_b, n_b in zip(pos[::-1].astype(np.float64), neg[::-1].astype(np.float64)):
        area += n_b * (2 * tp + p_b) / 2
        tp, fp = tp + p_b, fp + n_b
    return area / tp / fp


def test_auc_of_small_batches_over_4096_buckets_equals_the_walk_over_every_bucket(prog):
    """The auc op walks only the buckets holding predictions (a batch of 32 fills at most 32
    of 4096): the same value to the bit as the walk over every bucket, per batch and overall."""
    _, _, run = prog
    p = layers.data(name="p", shape=[1], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="int64")
    auc_out, batch_auc, _ = layers.auc(p, y, num_thresholds=4095)
    run.startup()
    rng = np.random.default_rng(7)
    total_pos, total_neg = np.zeros(4096, np.int64), np.zeros(4096, np.int64)
    for _ in range(3):
        labels = (rng.random(32) < 0.3).astype(np.int64)
        scores = rng.random(32).astype(np.float32)
        g, b = run({"p": scores.reshape(-1, 1), "y": labels.reshape(-1, 1)}, [auc_out, batch_auc])
        bins = (np.clip(scores, 0, 1) * 4095).astype(np.int64)
        pos = np.bincount(bins[labels == 1], minlength=4096)
        neg = np.bincount(bins[labels == 0], minlength=4096)
        total_pos += pos
        total_neg += neg
        assert b[0] == _trapezoids_over_every_bucket(pos, neg)
        assert g[0] == _trapezoids_over_every_bucket(total_pos, total_neg)


@pytest.mark.parametrize("scale", [1, 1000, 10 ** 8, 10 ** 9])
def test_auc_from_stats_is_the_float64_trapezoid_sum_to_the_bit_at_every_count_scale(scale):
    """Counts whose pair total stays below 2**53 take an int64 sum, larger ones (and negative
    counts a user wrote) the float64 one: the value is the float64 sum's either way."""
    from psjob.fluid.ops.metric_ops import auc_from_stats
    rng = np.random.default_rng(scale)
    for size, sparse in ((4096, False), (4096, True), (40, False), (4096, "batch")):
        pos, neg = (rng.integers(0, scale + 1, size).astype(np.int64) for _ in range(2))
        if sparse:  # "batch": a few dozen buckets used, as one batch of 32 fills
            keep = 0.05 if sparse is True else 0.005
            pos[rng.random(size) > keep] = 0
            neg[rng.random(size) > keep] = 0
        for p_, n_ in ((pos, neg), (pos - (pos == pos.max()) * 2 * scale, neg)):
            fp, fn = p_[::-1].astype(np.float64), n_[::-1].astype(np.float64)
            used = np.flatnonzero((fp != 0) | (fn != 0))
            if 2 * used.size < fp.size:  # the empty buckets left out, as the op does
                fp, fn = fp[used], fn[used]
            tp = np.cumsum(fp)
            want = float((fn * (2 * tp - fp)).sum()) / 2.0 / float(tp[-1]) / float(fn.sum()) \
                if tp[-1] > 0 and fn.sum() > 0 else 0.0
            assert auc_from_stats(np, p_, n_) == want


def _auc_in_integers(pos, neg):
    """The auc op's value before the forward walk: Python integers over the non-empty
    buckets, top down, then float64 (exact below 2**53 pairs, as here)."""
    tp = area = 0
    for p_b, n_b in zip(pos[::-1].tolist(), neg[::-1].tolist()):
        if p_b or n_b:
            tp += p_b
            area += n_b * (2 * tp - p_b)
    tot_neg = int(neg.sum())
    return float(area) / 2.0 / float(tp) / float(tot_neg) if tp > 0 and tot_neg > 0 else 0.0


def test_auc_ops_equal_the_integer_walk_to_the_bit_on_random_streams(prog):
    """The global AUC (4096 buckets walked forward every step), the batch AUC (only the
    batch's own buckets) and a 3-batch window: bit-equal to the top-down walk, over batches
    of 1 to 600 predictions, one-label batches and scores clipped at both ends."""
    _, _, run = prog
    p = layers.data(name="p", shape=[1], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="int64")
    auc_out, batch_auc, _ = layers.auc(p, y, num_thresholds=4095)
    _, window_auc, _ = layers.auc(p, y, num_thresholds=4095, slide_steps=3)
    run.startup()
    rng = np.random.default_rng(11)
    total_pos, total_neg, recent = np.zeros(4096, np.int64), np.zeros(4096, np.int64), []
    for step in range(150):
        n = int(rng.choice([1, 2, 32, 32, 65, 600]))
        labels = (rng.random(n) < rng.choice([0.0, 0.3, 1.0, 0.5])).astype(np.int64)
        scores = (rng.random(n) * 1.2 - 0.1).astype(np.float32)  # some below 0 and above 1
        if step % 7 == 0:
            scores = np.round(scores * 10) / 10  # ties: several predictions per bucket
        g, b, w = run({"p": scores.reshape(-1, 1), "y": labels.reshape(-1, 1)},
                      [auc_out, batch_auc, window_auc])
        bins = (np.clip(scores, 0, 1) * 4095).astype(np.int64)
        pos = np.bincount(bins[labels == 1], minlength=4096)
        neg = np.bincount(bins[labels == 0], minlength=4096)
        total_pos += pos
        total_neg += neg
        recent = (recent + [(pos, neg)])[-3:]
        assert b[0] == _auc_in_integers(pos, neg)
        assert g[0] == _auc_in_integers(total_pos, total_neg)
        assert w[0] == _auc_in_integers(sum(r[0] for r in recent), sum(r[1] for r in recent))


def test_auc_from_stats_with_the_used_buckets_equals_it_without():
    from psjob.fluid.ops.metric_ops import auc_from_stats
    rng = np.random.default_rng(5)
    for k in (0, 1, 3, 32, 64, 65, 300):
        pos, neg = np.zeros(4096, np.int64), np.zeros(4096, np.int64)
        buckets = rng.integers(0, 4096, k).tolist()
        for bucket in buckets:
            (pos if rng.random() < 0.4 else neg)[bucket] += 1
        want = auc_from_stats(np, pos, neg)
        assert want == _auc_in_integers(pos, neg)
        assert auc_from_stats(np, pos, neg, buckets) == want
        assert auc_from_stats(np, pos, neg, buckets + [4095, 0]) == want  # empty buckets named too


def test_auc_refuses_nan_predictions(prog):
    _, _, run = prog
    p = layers.data(name="p", shape=[1], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="int64")
    auc_out, _, _ = layers.auc(p, y)
    run.startup()
    scores = np.array([[0.2], [np.inf], [-np.inf], [0.9]], np.float32)
    run({"p": scores, "y": np.array([[0], [1], [0], [1]])}, [auc_out])  # infinities clip to the ends
    scores[2, 0] = np.nan
    with pytest.raises(Exception, match="Predict contains NaN"):
        run({"p": scores, "y": np.array([[0], [1], [0], [1]])}, [auc_out])


def test_auc_rejects_curves_it_does_not_implement(prog):
    p = layers.data(name="p", shape=[1])
    y = layers.data(name="y", shape=[1], dtype="int64")
    with pytest.raises(ValueError, match="'curve'"):
        layers.auc(p, y, curve="PR")


# -- batch_norm and dropout ---------------------------------------------------------------

def test_batch_norm_trains_on_batch_statistics_and_tests_on_moving_ones(prog):
    main, startup, run = prog
    x = layers.data(name="x", shape=[3], dtype="float64")
    y = layers.batch_norm(x, momentum=0.8, epsilon=1e-5)
    assert y.shape == (-1, 3)
    bn = main.global_block().ops[-1]
    mean_name, var_name = bn.input("Mean")[0], bn.input("Variance")[0]
    assert not main.global_block().var(mean_name).trainable
    test_prog = main.clone(for_test=True)
    assert test_prog.global_block().ops[-1].attr("is_test") is True
    loss = layers.mean(y)
    params = {p.name for p, _ in append_backward(loss)}
    assert mean_name not in params and var_name not in params
    run.startup()
    data = np.random.default_rng(0).normal(2.0, 3.0, size=(8, 3))
    out, mean, var = run({"x": data}, [y, mean_name, var_name])
    np.testing.assert_allclose(out, (data - data.mean(0)) / np.sqrt(data.var(0) + 1e-5), atol=1e-12)
    np.testing.assert_allclose(mean, 0.2 * data.mean(0))
    np.testing.assert_allclose(var, 0.8 + 0.2 * data.var(0))
    test_out, mean_after = run({"x": data}, [y, mean_name], program=test_prog)
    np.testing.assert_allclose(test_out, (data - mean) / np.sqrt(var + 1e-5), atol=1e-12)
    np.testing.assert_allclose(mean_after, mean)  # the test program leaves the statistics alone


def test_batch_norm_rejects_an_unknown_layout_and_a_1d_input(prog):
    x = layers.data(name="x", shape=[3])
    with pytest.raises(ValueError, match="'data_layout'"):
        layers.batch_norm(x, data_layout="NWCH")
    flat = layers.data(name="f", shape=[3], append_batch_size=False)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        layers.batch_norm(flat)


@pytest.mark.parametrize("impl, test_scale, train_scale", [
    ("downgrade_in_infer", 0.75, 1.0), ("upscale_in_train", 1.0, 1 / 0.75)])
def test_dropout_scales_as_its_implementation_says(prog, impl, test_scale, train_scale):
    main, _, run = prog
    x = layers.data(name="x", shape=[1000])
    out = layers.dropout(x, 0.25, dropout_implementation=impl)
    data = np.ones((20, 1000), "float32")
    got, = run({"x": data}, [out])
    kept = got != 0
    assert 0.72 < kept.mean() < 0.78
    np.testing.assert_allclose(got[kept], train_scale, rtol=1e-6)
    test_got, = run({"x": data}, [out], program=main.clone(for_test=True))
    np.testing.assert_allclose(test_got, test_scale, rtol=1e-6)


def test_dropout_with_a_seed_draws_the_same_mask_every_run(prog):
    _, _, run = prog
    x = layers.data(name="x", shape=[50])
    out = layers.dropout(x, 0.5, seed=3)
    data = np.ones((4, 50), "float32")
    a, = run({"x": data}, [out])
    b, = run({"x": data}, [out])
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="'dropout_prob'"):
        layers.dropout(x, 1.5)


# -- whole programs -----------------------------------------------------------------------

def test_a_ctr_style_program_serializes_and_trains(prog):
    main, startup, run = prog
    slots = [layers.data(name=f"s{i}", shape=[1], dtype="int64", lod_level=1) for i in range(3)]
    dense = layers.data(name="d", shape=[2])
    label = layers.data(name="y", shape=[1])
    pooled = [layers.sequence_pool(layers.embedding(s, [20, 4], is_sparse=True), "average") for s in slots]
    h = layers.fc(layers.concat(pooled + [dense], axis=1), 8, act="relu")
    logit = layers.fc(h, 1)
    loss = layers.mean(layers.sigmoid_cross_entropy_with_logits(logit, label))
    auc_out, _, _ = layers.auc(layers.sigmoid(logit), label)
    doc = json.dumps(main.to_dict())  # every attribute is plain JSON
    fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    run.startup()
    rng = np.random.default_rng(0)
    lengths = [1, 2, 1, 3] * 16
    feed = {f"s{i}": ids_feed(rng.integers(0, 20, sum(lengths)), lengths) for i in range(3)}
    feed["d"] = rng.normal(size=(64, 2)).astype("float32")
    # The label is linear in slot 0's average-pooled id scores: learnable through the pool.
    score = rng.normal(size=20)
    pooled_score = np.add.reduceat(score[feed["s0"][0][:, 0]], np.asarray(feed["s0"][1][0][:-1]))
    feed["y"] = (pooled_score / np.asarray(lengths) > 0).astype("float32").reshape(-1, 1)
    first = run(feed, [loss])[0][0]
    for _ in range(60):
        last = run(feed, [loss])[0][0]
    assert last < 0.6 * first
    assert '"lookup_table"' in doc and '"sequence_pool"' in doc


# -- fluid.metrics (host side) -----------------------------------------------------------

def test_accuracy_metric_is_the_batch_size_weighted_average_and_resets():
    acc = fluid.metrics.Accuracy()
    acc.update(value=np.array([0.5], "float32"), weight=10)
    acc.update(value=1.0, weight=30)
    assert acc.eval() == pytest.approx(0.875)
    acc.reset()
    with pytest.raises(ValueError, match="no batch"):
        acc.eval()


def test_precision_recall_and_composite_metric_count_rounded_predictions():
    composite = fluid.metrics.CompositeMetric()
    composite.add_metric(fluid.metrics.Precision())
    composite.add_metric(fluid.metrics.Recall())
    preds = np.array([[0.9], [0.8], [0.2], [0.6], [0.1]])
    labels = np.array([[1], [0], [1], [1], [0]])
    composite.update(preds, labels)
    precision, recall = composite.eval()
    assert precision == pytest.approx(2 / 3) and recall == pytest.approx(2 / 3)
    with pytest.raises(TypeError, match="MetricBase"):
        composite.add_metric("precision")


def test_chunk_evaluator_and_edit_distance_accumulate_counts():
    chunk = fluid.metrics.ChunkEvaluator()
    chunk.update(np.array([4]), np.array([5]), np.array([3]))
    chunk.update(6, 5, 5)
    p, r, f1 = chunk.eval()
    assert (p, r) == (pytest.approx(0.8), pytest.approx(0.8)) and f1 == pytest.approx(0.8)
    dist = fluid.metrics.EditDistance()
    dist.update(np.array([[0.0], [2.0], [1.0]]), 3)
    assert dist.eval() == (pytest.approx(1.0), pytest.approx(2 / 3))


def test_auc_metric_matches_exact_roc_within_the_bucket_error_and_resets():
    rng = np.random.default_rng(9)
    labels = (rng.random(2000) < 0.3).astype(np.int64)
    scores = np.clip(rng.normal(0.35 + 0.25 * labels, 0.2), 0, 1)
    auc = fluid.metrics.Auc(num_thresholds=4095)
    auc.update(np.stack([1 - scores, scores], 1), labels.reshape(-1, 1))
    assert auc.eval() == pytest.approx(exact_roc_auc(scores, labels),
                                       abs=bucket_error_bound(scores, labels, 4095) + 1e-12)
    auc.reset()
    assert auc.eval() == 0.0
    with pytest.raises(ValueError, match="'curve'"):
        fluid.metrics.Auc(curve="PR")
