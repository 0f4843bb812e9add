"""Names PaddleRec's rank models (AutoInt, DIN, BST, DIEN) need from Paddle 2.x in static mode:
paddle.einsum, nn.Conv1D / functional.conv1d, nn.Embedding over ids whose sequence length is
only known at run time, Paddle's feed rule for a fed array with fewer dimensions than declared,
and paddle.framework.ParamAttr, and reading a paddle.static.save made by Paddle itself (PaddleRec's
runner.model_init_path). Expected numbers were printed by real Paddle 3.0.0 (CPU) running
the same program (the build functions below, with `import paddle`), as the comments say."""
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid.executor import FeedError
from psjob.fluid.framework import GraphError
from psjob.foundation.checkpoint.format import CheckpointError

paddle.enable_static()


def _run(build, feed, fetch_names=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feeds = feed if isinstance(feed, list) else [feed]
    return [exe.run(main, feed=f, fetch_list=fetch, scope=scope) for f in feeds], fetch, scope


def test_einsum_values_and_gradients_match_paddle():
    def build():
        x = paddle.static.data("x", [None, 3, 4], "float32")
        x.stop_gradient = False
        w = paddle.create_parameter([4, 5], "float32", default_initializer=paddle.nn.initializer.Assign(
            np.arange(20, dtype="float32").reshape(4, 5) / 10 - 1))
        v = paddle.create_parameter([3, 2], "float32", default_initializer=paddle.nn.initializer.Assign(
            np.arange(6, dtype="float32").reshape(3, 2) / 5 - 0.5))
        q = paddle.einsum("bnk,kj->bnj", x, w)
        r = paddle.einsum("bik,bjk->bij", q, q)
        s = paddle.einsum("bnk,nm", x, v)  # implicit output: the letters used once, sorted (bkm)
        assert [list(t.shape) for t in (q, r, s)] == [[-1, 3, 5], [-1, 3, 3], [-1, 4, 2]]
        loss = paddle.mean(r) + paddle.mean(s * s)
        return [loss] + paddle.static.gradients([loss], [x, w, v])

    xv = (np.arange(24, dtype="float32").reshape(2, 3, 4) % 7) / 3 - 1
    [(loss, gx, gw, gv)], _, _ = _run(build, {"x": xv})
    # Paddle 3.0.0, same program and feed:
    np.testing.assert_allclose(loss, [0.994352], rtol=1e-5)
    np.testing.assert_allclose(gx.ravel()[:5], [-0.405556, -0.171574, 0.062407, 0.290556, -0.392222], atol=2e-6)
    np.testing.assert_allclose(gw.ravel()[:5], [-0.395062, -0.375309, -0.355556, -0.335802, -0.316049], atol=2e-6)
    np.testing.assert_allclose(gv.ravel(), [-0.197222, -0.102778, 0.033333, 0.022222, 0.05, 0.127778], atol=2e-6)


@pytest.mark.parametrize("equation, message", [
    ("bn...k,kj->bnj", "ellipsis"),
    ("bnk,kj,j->bnj", "3 operand terms but 2 operands"),
    ("bn,kj->bnj", "must be 3 letters"),
    ("bnn,kj->bnj", "repeats a letter"),
    ("bnk,kj->bz", "must be distinct letters that the operand terms use"),
])
def test_einsum_refuses_what_it_cannot_do_by_name(equation, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = paddle.static.data("x", [None, 3, 4], "float32")
        w = paddle.static.data("w", [4, 5], "float32")
        with pytest.raises(GraphError, match=message):
            paddle.einsum(equation, x, w)


def test_einsum_refuses_a_letter_of_two_sizes():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = paddle.static.data("x", [None, 3, 4], "float32")
        w = paddle.static.data("w", [5, 5], "float32")
        with pytest.raises(GraphError, match="letter 'k' is 4 in one operand and 5"):
            paddle.einsum("bnk,kj->bnj", x, w)


def test_conv1d_matches_paddle_in_both_layouts():
    def build():
        x = paddle.static.data("x", [None, 3, 7], "float32")
        c = paddle.nn.Conv1D(3, 4, 3, stride=2, padding=1, weight_attr=paddle.ParamAttr(
            initializer=paddle.nn.initializer.Assign(np.arange(36, dtype="float32").reshape(4, 3, 3) / 50 - 0.3)),
            bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.1)))
        y = c(x)
        c2 = paddle.nn.Conv1D(3, 2, 2, padding=[1, 0], data_format="NLC")
        z = c2(paddle.transpose(x, [0, 2, 1]))
        assert (c.weight.name, c2.weight.name, list(c2.weight.shape)) == ("conv1d_0.w_0", "conv1d_1.w_0", [2, 3, 2])
        assert (list(y.shape), list(z.shape)) == ([-1, 4, 4], [-1, 7, 2])
        return [y, z]

    xv = (np.arange(42, dtype="float32").reshape(2, 3, 7) % 5) / 4
    [(y, z)], _, _ = _run(build, {"x": xv})
    assert y.shape == (2, 4, 4) and z.shape == (2, 7, 2)
    # Paddle 3.0.0, same program and feed:
    np.testing.assert_allclose(y.ravel()[:12], [-0.385, -0.82, -0.91, -0.435, 0.065, -0.1, -0.055, 0.015, 0.515,
                                                0.62, 0.8, 0.465], atol=1e-6)


def test_embedding_of_ids_with_a_runtime_length_trains_as_paddles():
    def build():
        ids = paddle.static.data("ids", [None, -1], "int64")
        emb = paddle.nn.Embedding(10, 3, sparse=True, weight_attr=paddle.ParamAttr(
            initializer=paddle.nn.initializer.Assign(np.arange(30, dtype="float32").reshape(10, 3))))
        y = emb(ids)
        assert list(y.shape) == [-1, -1, 3]
        loss = paddle.mean(paddle.sum(y * y, axis=1))
        paddle.optimizer.SGD(0.1).minimize(loss)
        return [y, loss]

    feeds = [{"ids": (np.arange(3 * n).reshape(3, n) * 7 % 10).astype("int64")} for n in (2, 4)]
    (first, second), _, scope = _run(build, feeds)
    assert first[0].shape == (3, 2, 3) and second[0].shape == (3, 4, 3)
    # Paddle 3.0.0, same program and feeds:
    np.testing.assert_allclose([first[1].item(), second[1].item()], [518.3333129882812, 1082.7606201171875],
                               rtol=1e-6)
    np.testing.assert_allclose(second[0][1, 0], [23.466667, 24.444445, 25.422222], rtol=1e-6)
    w = np.asarray(scope.find_var("embedding_0.w_0").get_tensor())
    np.testing.assert_allclose(w[:3].ravel(), [0.0, 0.934321, 1.868642, 2.868148, 3.824198, 4.780247, 5.866667,
                                               6.844444, 7.822222], rtol=1e-6)


@pytest.mark.parametrize("declared, fed", [([-1, 1], (4,)), ([-1, 3], (4,)), ([-1, -1, 1], (4, 3)), ([3, 1], (3,))])
def test_a_feed_with_fewer_dimensions_is_taken_and_keeps_its_shape_as_in_paddle(declared, fed):
    # Paddle 1.8.5 and 3.0.0 (static_trainer's old IR) accept these and run on the fed shape.
    def build():
        return [paddle.static.data("v", declared, "float32") * 2]

    [(out,)], _, _ = _run(build, {"v": np.ones(fed, "float32")})
    assert out.shape == fed


@pytest.mark.parametrize("declared, fed, message", [
    ([-1], (4, 1), r"expected 1-D data shaped \[-1\], got shape \[4, 1\]"),
    ([-1, 1, 2], (4, 2), r"dimension 1 must be 1"),
    ([3, 1], (4,), r"dimension 0 must be 3"),
])
def test_a_feed_paddle_refuses_is_refused(declared, fed, message):
    with pytest.raises(FeedError, match=message):
        _run(lambda: [paddle.static.data("v", declared, "float32") * 2], {"v": np.ones(fed, "float32")})


def test_paddle_framework_param_attr_is_paddles():
    assert paddle.framework.ParamAttr is paddle.ParamAttr
    assert paddle.framework.get_default_dtype() == "float32"


DATA = Path(__file__).resolve().parents[1] / "data" / "zoo-rank-a"


def _fc_adam():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data("x", [None, 3], "float32")
        y = paddle.nn.Linear(3, 2)(x)
        loss = paddle.mean(y * y)
        paddle.optimizer.Adam(0.01).minimize(loss)
    return main, startup, loss


def test_a_save_made_by_paddle_itself_loads_and_training_goes_on_as_in_paddle():
    # tests/data/zoo-rank-a/make_paddle_save.py wrote the files with Paddle 3.0.0 and printed
    # these numbers (learning_rate_0 is saved 0-D there; the program holds it as [1]).
    main, startup, loss = _fc_adam()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        state = paddle.static.load_program_state(str(DATA / "paddle_fc_adam"))
        assert state["learning_rate_0"].shape == () and len(state) == 11
        paddle.static.set_program_state(main, state)
        scope = fluid.global_scope()
        np.testing.assert_allclose(np.asarray(scope.find_var("linear_0.w_0_moment1_0").get_tensor()).ravel(),
                                   [0.007733, 0.032557, 0.013098, 0.047001, 0.018462, 0.061446], atol=1e-6)
        out, = exe.run(main, feed={"x": np.arange(6, dtype="float32").reshape(2, 3) / 5}, fetch_list=[loss])
        np.testing.assert_allclose(out.ravel(), [0.3354843854904175], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(scope.find_var("linear_0.w_0").get_tensor()).ravel(),
                                   [-1.082756, 0.325914, 0.642881, -0.087797, 0.345257, 0.911941], atol=1e-6)


def test_a_pickle_that_is_not_arrays_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    with open(tmp_path / "m.pdparams", "wb") as f:
        pickle.dump({"w": Evil()}, f, protocol=4)
    with pytest.raises(CheckpointError, match="posix.system is not part of a saved array|system is not part"):
        paddle.static.load_program_state(str(tmp_path / "m"))


@pytest.mark.parametrize("lazy, want", [
    (True, [0.0, 0.093612, 0.184758, 0.284755, 0.384753, 0.484753, 0.593612, 0.693612, 0.784751, 0.884751, 1.0, 1.1]),
    (False, [0.0, 0.088379, 0.179396, 0.279384, 0.379379, 0.479376, 0.588379, 0.688379, 0.779372, 0.879371, 1.0, 1.1]),
])
def test_adam_on_a_sparse_embedding_steps_as_paddles_kernel(lazy, want):
    # PaddleRec's AutoInt: nn.Embedding(sparse=True) with Adam(lazy_mode=True). Paddle 3.0.0 (and
    # 1.8.5's fluid.optimizer.Adam) printed these weights after the three steps below.
    def build():
        ids = paddle.static.data("ids", [None, 3], "int64")
        emb = paddle.nn.Embedding(6, 2, sparse=True, weight_attr=paddle.ParamAttr(
            initializer=paddle.nn.initializer.Assign(np.arange(12, dtype="float32").reshape(6, 2) / 10)))
        y = emb(ids)
        loss = paddle.mean(paddle.sum(y * y, axis=1))
        paddle.optimizer.Adam(0.01, lazy_mode=lazy).minimize(loss)
        return [loss]

    a, b = np.array([[1, 1, 2], [2, 4, 1]], "int64"), np.array([[0, 3, 3], [3, 3, 0]], "int64")
    _, _, scope = _run(build, [{"ids": a}, {"ids": b}, {"ids": a}])
    np.testing.assert_allclose(np.asarray(scope.find_var("embedding_0.w_0").get_tensor()).ravel(), want, atol=2e-6)
    np.testing.assert_allclose(np.asarray(scope.find_var("embedding_0.w_0_beta1_pow_acc_0").get_tensor()), [0.6561],
                               rtol=1e-6)


def test_paddle_seed_after_the_model_is_built_still_makes_its_start_reproducible(monkeypatch):
    # PaddleRec's static_trainer builds the model, then calls paddle.seed, then runs the startup
    # program; in Paddle the parameters come out the same every run.
    from psjob.fluid import framework
    monkeypatch.setattr(framework, "_global_seed", framework._global_seed)

    def init_values(seed):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            main.random_seed = startup.random_seed = 0
            w = paddle.create_parameter([3, 3], "float32")
            e = paddle.nn.Embedding(4, 2)
        paddle.seed(seed)
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        return np.array(scope.vars[w.name]), np.array(scope.vars[e.weight.name])

    (a, ea), (b, eb), (c, _) = init_values(3), init_values(3), init_values(4)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ea, eb)
    assert not np.array_equal(a, c) and not np.array_equal(a.ravel()[:2], ea.ravel()[:2])
