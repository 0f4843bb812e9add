"""fluid.contrib.layers.rank_attention / paddle.incubate.layers.rank_attention.

Paddle has only a CUDA kernel for this op (on CPU, Paddle 1.8.5 and 3.0.0 raise "Rank Attention
only supports GPU now"), so the expected values here come from `reference`, a plain loop over
the op's definition as Paddle's kernel and its op test (test_rank_attention_op.py) state it:
for instance i and position k with both ranks positive, X's row RankOffset[i, 2k + 2] times the
[D, O] block (rank_i - 1) * max_rank + (rank_k - 1) of RankParam is added to Out[i]. The
parameter name was checked against Paddle 1.8.5's program (`rank_attention_0.w_0`). The
gradient (RankParam's only, as Paddle's) is checked against finite differences in
test_op_gradients.py.
"""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid

MAX_RANK, D, O = 3, 4, 5


def page_views(rng, views, max_rank):
    """RankOffset for `views` page views of 1..max_rank + 1 instances (ranks above max_rank
    count as none), rows in page-view order."""
    rows = []
    start = 0
    for _ in range(views):
        shown = int(rng.integers(1, max_rank + 2))
        ranks = rng.permutation(np.arange(1, shown + 1))
        for j in range(shown):
            row = [-1] * (2 * max_rank + 1)
            own = ranks[j] if ranks[j] <= max_rank else -1
            row[0] = own
            if own > 0:
                for k in range(shown):
                    if ranks[k] <= max_rank:
                        row[2 * (ranks[k] - 1) + 1] = ranks[k]
                        row[2 * (ranks[k] - 1) + 2] = start + k
            rows.append(row)
        start += shown
    return np.array(rows, np.int32)


def reference(x, ro, param, max_rank):
    d = x.shape[1]
    out = np.zeros((x.shape[0], param.shape[1]))
    for i in range(x.shape[0]):
        own = ro[i, 0] - 1
        for k in range(max_rank):
            other = ro[i, 2 * k + 1] - 1
            if own < 0 or other < 0:
                continue
            block = own * max_rank + other
            out[i] += x[ro[i, 2 * k + 2]] @ param[block * d:(block + 1) * d]
    return out


def test_rank_attention_follows_the_op_definition():
    rng = np.random.default_rng(5)
    ro = page_views(rng, 12, MAX_RANK)
    x = rng.uniform(-1, 1, (len(ro), D)).astype(np.float32)
    param = rng.uniform(-1, 1, (D * MAX_RANK * MAX_RANK, O)).astype(np.float32)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        xv = fluid.data("x", [None, D], "float32")
        rov = fluid.data("ro", [None, 2 * MAX_RANK + 1], "int32")
        out = fluid.contrib.layers.rank_attention(
            xv, rov, [D * MAX_RANK * MAX_RANK, O],
            fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(param)), max_rank=MAX_RANK)
        assert [p.name for p in main.global_block().all_parameters()] == ["rank_attention_0.w_0"]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got = exe.run(main, feed={"x": x, "ro": ro}, fetch_list=[out])[0]
    assert (ro[:, 0] <= 0).any() and (ro[:, 0] > 0).any()  # both kinds of instance are present
    np.testing.assert_allclose(got, reference(x, ro, param, MAX_RANK), rtol=1e-5, atol=1e-5)


def test_rank_attention_trains_its_parameter_only():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, D], "float32")
        x.stop_gradient = False
        ro = fluid.data("ro", [None, 2 * MAX_RANK + 1], "int32")
        out = paddle.incubate.layers.rank_attention(x, ro, [D * MAX_RANK * MAX_RANK, O], None, MAX_RANK)
        params_grads = fluid.backward.append_backward(fluid.layers.mean(out))
    assert [p.name for p, _ in params_grads] == [main.global_block().all_parameters()[0].name]
    assert not main.global_block().has_var("x@GRAD")


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(rank_param_shape=[D * 4, O]), ValueError, "D . max_rank"),
    (dict(rank_offset_dtype="int64"), TypeError, "int32"),
])
def test_rank_attention_refuses_bad_arguments(kwargs, error, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, D], "float32")
        ro = fluid.data("ro", [None, 7], kwargs.pop("rank_offset_dtype", "int32"))
        with pytest.raises(error, match=message):
            fluid.contrib.layers.rank_attention(x, ro, kwargs.get("rank_param_shape", [D * 9, O]), None)


def test_rank_offset_rows_out_of_range_are_an_error():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, D], "float32")
        ro = fluid.data("ro", [None, 7], "int32")
        out = fluid.contrib.layers.rank_attention(x, ro, [D * 9, O], None)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    bad = np.array([[1, 1, 5, -1, -1, -1, -1]], np.int32)
    with pytest.raises(Exception, match="outside X's 1 rows"):
        exe.run(main, feed={"x": np.ones((1, D), np.float32), "ro": bad}, fetch_list=[out])
