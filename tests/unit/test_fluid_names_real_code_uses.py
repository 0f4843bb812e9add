"""Names Fluid and Paddle 2.x programs reach for outside the layers: core.VarDesc.VarType as
a dtype and in dtype comparisons, and set_global_initializer's precedence. Expected values
come from the same programs run under Paddle 3.0.0 (FLAGS_enable_pir_api=0) and 1.8.5."""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid import core
from psjob.nn.initializer import Constant, set_global_initializer


def test_vardesc_vartype_is_a_dtype_and_equals_variables_dtypes():
    vt = core.VarDesc.VarType
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32")
        y = fluid.layers.cast(x, vt.INT64)
        z = fluid.layers.fill_constant([2], vt.INT32, 3)
    assert x.dtype == vt.FP32 and y.dtype == vt.INT64 and z.dtype == vt.INT32
    assert y.dtype == "int64" and type(y.dtype) is str  # the variable keeps the plain name
    assert str(vt.INT64) == "VarType.INT64"  # as Paddle 1.8 prints it
    out = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.full((2, 3), 2.7, "float32")},
                                               fetch_list=[y, z])
    assert out[0].dtype == np.int64 and out[0].tolist() == [[2, 2, 2]] * 2
    assert out[1].dtype == np.int32 and out[1].tolist() == [3, 3]


def test_set_global_initializer_outranks_layer_defaults_but_not_param_attrs():
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    try:
        with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
            x = paddle.static.data("x", [None, 3], "float32")
            set_global_initializer(Constant(0.5), Constant(0.1))
            a = paddle.static.nn.fc(x, 2)
            b = paddle.static.nn.fc(x, 2, weight_attr=paddle.ParamAttr(initializer=Constant(2.0)))
            c = paddle.nn.Linear(3, 2)(x)
    finally:
        set_global_initializer(None)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    out = exe.run(main, feed={"x": np.ones((1, 3), "float32")}, fetch_list=[a, b, c])
    # Paddle 3.0.0: [[1.6, 1.6]], [[6.1, 6.1]], [[1.6, 1.6]]
    np.testing.assert_allclose(np.concatenate(out), [[1.6, 1.6], [6.1, 6.1], [1.6, 1.6]], rtol=1e-6)
    with pytest.raises(TypeError, match="weight_init must be an Initializer or None, got str"):
        set_global_initializer("x")


def test_sum_of_bool_or_int32_is_int64_as_paddle():
    """paddle.sum of a bool or int32 tensor is int64 (Paddle 3.0.0: int64 for both, with or
    without axis); PaddleRec's graph helpers count a mask with it."""
    paddle.enable_static()
    main = paddle.static.Program()
    with paddle.static.program_guard(main):
        x = paddle.static.data("x", [3], "int32")
        m = paddle.static.data("m", [3], "bool")
        f = paddle.static.data("f", [3], "float32")
        sums = [paddle.sum(x), paddle.sum(m, axis=0, keepdim=True), paddle.sum(f), paddle.sum(x, dtype="int32")]
    assert [s.dtype for s in sums] == ["int64", "int64", "float32", "int32"]
    out = paddle.static.Executor(paddle.CPUPlace()).run(
        main, feed={"x": np.array([1, 2, 3], "int32"), "m": np.array([True, False, True]),
                    "f": np.ones(3, "float32")}, fetch_list=sums[:2])
    assert [o.dtype for o in out] == [np.int64, np.int64] and [o.tolist() for o in out] == [[6], [2]]


def test_fluid_one_hot_appends_a_depth_axis_as_fluid_18():
    """fluid.one_hot (Fluid 1.8's fluid.input.one_hot, the one_hot_v2 op): [N, 2] ids give
    [N, 2, depth]; out-of-range ids give zero rows with allow_out_of_range (Paddle 1.8.5's
    values for these feeds)."""
    main = fluid.Program()
    with fluid.program_guard(main), fluid.unique_name.guard():
        y = fluid.one_hot(fluid.data("x", [None, 2], "int64"), 4)
        z = fluid.one_hot(fluid.data("w", [None, 2], "int64"), 3, allow_out_of_range=True)
        bad = fluid.one_hot(fluid.data("v", [None, 2], "int64"), 3)
    assert tuple(y.shape) == (-1, 2, 4) and y.dtype == "float32"
    exe = fluid.Executor(fluid.CPUPlace())
    yv, zv = exe.run(main, feed={"x": np.array([[1, 3], [0, 2]]), "w": np.array([[5, 1], [0, 2]]),
                                 "v": np.array([[0, 1], [2, 0]])}, fetch_list=[y, z])
    assert yv.tolist() == [[[0, 1, 0, 0], [0, 0, 0, 1]], [[1, 0, 0, 0], [0, 0, 1, 0]]]
    assert zv.tolist() == [[[0, 0, 0], [0, 1, 0]], [[1, 0, 0], [0, 0, 1]]]
    with pytest.raises(Exception, match="exceed depth 3"):
        exe.run(main, feed={"x": np.array([[1, 3]]), "w": np.array([[0, 1]]), "v": np.array([[0, 4]])},
                fetch_list=[bad])


def test_a_lod_tensor_fetched_with_return_numpy_false_is_its_own():
    """exe.run(..., return_numpy=False) hands back LoDTensors of their own, as Paddle's fetch
    list holds them: a script that keeps them across runs (an infer loop collecting LoD
    outputs) still reads each run's values and LoD afterwards."""
    main = fluid.Program()
    with fluid.program_guard(main), fluid.unique_name.guard():
        x = fluid.data("x", [None, 1], "float32", lod_level=1)
        y = fluid.layers.scale(x, 2.0)
    exe = fluid.Executor(fluid.CPUPlace())
    kept = []
    for values, lengths in (([1.0, 2.0, 3.0], [2, 1]), ([5.0], [1])):
        t = fluid.create_lod_tensor(np.array(values, "float32").reshape(-1, 1), [lengths], fluid.CPUPlace())
        kept.append(exe.run(main, feed={"x": t}, fetch_list=[y], return_numpy=False)[0])
    assert np.array(kept[0]).reshape(-1).tolist() == [2, 4, 6] and kept[0].lod() == [[0, 2, 3]]
    assert np.array(kept[1]).reshape(-1).tolist() == [10] and kept[1].lod() == [[0, 1]]
