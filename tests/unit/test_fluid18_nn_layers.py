"""Fluid 1.8's layers of psjob.fluid.layers.fluid18_nn (maxout, shuffle_channel, space_to_depth,
pixel_shuffle, lrn, unfold, multiplex, smooth_l1, kldiv_loss, sigmoid_focal_loss, npair_loss,
mish, addcmul, meshgrid, allclose, elementwise_equal, full, full_like, scatter_nd, is_empty,
lstm_unit, autoincreased_step_counter, tensor_array_to_tensor, get_tensor_from_selected_rows,
merge_selected_rows, reorder_lod_tensor_by_rank) and their gradients. Paddle 1.8.5 (paddle.fluid,
CPU) ran the same programs on the same feeds; each output is pinned by two numbers of what it
printed (the sum, and the sum weighted by sin(1..n) over the flattened values, which catches a
value in the wrong place), with its shape and output name. The random layers (randint, randn,
randperm) are checked for shapes, dtypes, ranges and seeding, not values."""
import numpy as np
import pytest

import psjob.fluid as fluid

L = fluid.layers

PADDLE_185 = {
    "addcmul": [0.144745, -0.164893],
    "allclose": [1.0, 0.841471],
    "allclose2": [0.0, 0.0],
    "eq": [2.0, 0.084668],
    "focal": [0.464628, 0.01257],
    "full": [9.0, -0.154881],
    "full_like": [24.0, -0.25075],
    "is_empty": [0.0, 0.0],
    "kl_bm": [-0.543001, -0.456919],
    "kl_mean": [-0.181, -0.152306],
    "kl_none": [-2.172003, 0.06567],
    "kl_sum": [-2.172003, -1.827678],
    "lrn": [0.061429, -2.769655],
    "lstm_c": [1.468712, -0.888829],
    "lstm_h": [0.791345, -0.477816],
    "maxout": [21.13966, -1.21488],
    "mesh_x": [12.0, -3.195616],
    "mesh_y": [27.0, -0.539936],
    "mish": [0.452247, -0.115765],
    "multiplex": [0.490118, 0.175687],
    "npair": [1.43955, 1.211339],
    "pixsh": [-0.173348, -2.164035],
    "s2d": [-0.173348, -2.93235],
    "scatter_nd": [21.0, 0.720693],
    "shuffle": [-0.173348, -2.228533],
    "smooth_l1": [3.978033, 0.850385],
    "smooth_l1w": [0.259455, -0.017999],
    "unfold": [-6.273872, -24.700125],
    "g_img": [-2.157358, -19.731181],
    "g_a": [3.737332, -1.691435],
    "g_b": [0.847939, 1.128046],
    "g_c": [-1.076029, 0.615643],
    "g_xt": [2.877787, 0.110823],
    "g_h0": [1.726672, -0.870585],
    "g_c0": [5.022682, -2.997203],
    "g_v1": [-4.93229, 3.000719],
    "g_v2": [-16.598344, -13.789421],
}

NAMES_185 = {"allclose": "allclose_0.tmp_0", "allclose2": "allclose_1.tmp_0", "eq": "elementwise_equal_0.tmp_0",
             "focal": "sigmoid_focal_loss_0.tmp_0", "full": "full_0.tmp_0", "full_like": "full_like_0.tmp_0",
             "is_empty": "is_empty_0.tmp_0", "kl_bm": "kldiv_loss_1.tmp_0", "kl_mean": "kldiv_loss_0.tmp_0",
             "kl_none": "kldiv_loss_2.tmp_0", "kl_sum": "kldiv_loss_3.tmp_0", "lrn": "lrn_0.tmp_1",
             "lstm_c": "lstm_unit_0.tmp_0", "lstm_h": "lstm_unit_0.tmp_1", "maxout": "maxout_0.tmp_0",
             "mesh_x": "meshgrid_0.tmp_0", "mesh_y": "meshgrid_0.tmp_1", "mish": "mish_0.tmp_0",
             "multiplex": "multiplex_0.tmp_0", "pixsh": "pixel_shuffle_0.tmp_0", "s2d": "space_to_depth_0.tmp_0",
             "scatter_nd": "scatter_nd_add_0.tmp_0", "shuffle": "shuffle_channel_0.tmp_0",
             "smooth_l1": "smooth_l1_loss_0.tmp_1", "smooth_l1w": "smooth_l1_loss_1.tmp_1",
             "unfold": "unfold_0.tmp_0"}
SHAPES_185 = {"addcmul": (4, 3), "allclose": (1,), "allclose2": (1,), "eq": (4, 1), "focal": (4, 3),
              "full": (2, 3), "full_like": (4, 3), "is_empty": (1,), "kl_bm": (1,), "kl_mean": (1,),
              "kl_none": (4, 3), "kl_sum": (1,), "lrn": (2, 8, 4, 4), "lstm_c": (4, 3), "lstm_h": (4, 3),
              "maxout": (2, 4, 4, 4), "mesh_x": (3, 2), "mesh_y": (3, 2), "mish": (4, 3), "multiplex": (4, 3),
              "npair": (1,), "pixsh": (2, 2, 8, 8), "s2d": (2, 32, 2, 2), "scatter_nd": (4, 2),
              "shuffle": (2, 8, 4, 4), "smooth_l1": (4, 1), "smooth_l1w": (4, 1), "unfold": (2, 48, 20)}


def _feed():
    rng = np.random.RandomState(7)
    return {
        "img": (rng.rand(2, 8, 4, 4).astype("float32") - 0.5),
        "a": (rng.rand(4, 3).astype("float32") - 0.5),
        "b": (rng.rand(4, 3).astype("float32") - 0.5),
        "c": (rng.rand(4, 3).astype("float32") - 0.5),
        "idx": np.array([[1], [0], [2], [1]], "int32"),
        "lab": np.array([[1], [0], [3], [2]], "int32"),
        "plab": np.array([[0], [1], [0], [2]], "int64"),
        "t": rng.rand(4, 3).astype("float32"),
        "xt": rng.rand(4, 5).astype("float32") - 0.5,
        "h0": rng.rand(4, 3).astype("float32") - 0.5,
        "c0": rng.rand(4, 3).astype("float32") - 0.5,
        "v1": np.array([1., 2., 3.], "float32"), "v2": np.array([4., 5.], "float32"),
    }


def _fingerprint(v):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    return [float(v.sum()), float((v * np.sin(np.arange(v.size) + 1.0)).sum())]


def _build(d):
    o = {"maxout": L.maxout(d["img"], groups=2), "shuffle": L.shuffle_channel(d["img"], group=2),
         "s2d": L.space_to_depth(d["img"], 2), "pixsh": L.pixel_shuffle(d["img"], 2),
         "lrn": L.lrn(d["img"], n=3, k=1.0, alpha=0.5, beta=0.75),
         "unfold": L.unfold(d["img"], kernel_sizes=[2, 3], strides=1, paddings=1, dilations=1),
         "multiplex": L.multiplex([d["a"], d["b"], d["c"]], d["idx"]),
         "smooth_l1": L.smooth_l1(d["a"], d["b"], sigma=2.0),
         "smooth_l1w": L.smooth_l1(d["a"], d["b"], inside_weight=d["t"], outside_weight=d["t"])}
    for r in ("mean", "batchmean", "none", "sum"):
        o["kl_" + {"batchmean": "bm"}.get(r, r)] = L.kldiv_loss(d["a"], d["t"], reduction=r)
    o["focal"] = L.sigmoid_focal_loss(d["a"], d["lab"], L.fill_constant([1], "int32", 3), gamma=2.0, alpha=0.25)
    o["npair"] = L.npair_loss(d["a"], d["b"], d["plab"], l2_reg=0.002)
    o["mish"] = L.mish(d["a"])
    o["addcmul"] = L.addcmul(d["a"], d["b"], d["c"], value=0.5)
    o["mesh_x"], o["mesh_y"] = L.meshgrid([d["v1"], d["v2"]])
    o["allclose"] = L.allclose(d["a"], d["a"] + 1e-7)
    o["allclose2"] = L.allclose(d["a"], d["b"])
    o["eq"] = L.elementwise_equal(d["idx"], L.fill_constant([4, 1], "int32", 1))
    o["full"] = L.full(shape=[2, 3], fill_value=1.5)
    o["full_like"] = L.full_like(d["a"], 2.0)
    o["scatter_nd"] = L.scatter_nd(L.assign(np.array([[1], [3], [1]], "int64")),
                                   L.assign(np.array([[1., 2.], [3., 4.], [5., 6.]], "float32")), [4, 2])
    o["is_empty"] = L.is_empty(d["a"])
    o["lstm_h"], o["lstm_c"] = L.lstm_unit(
        d["xt"], d["h0"], d["c0"], forget_bias=0.5,
        param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)),
        bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)))
    return o


# every differentiable output but shuffle_channel's (see test_shuffle_channel_gradient), weighted
_LOSS_WEIGHTS = {"maxout": 1, "s2d": 3, "pixsh": 4, "lrn": 5, "unfold": 6, "multiplex": 7, "smooth_l1": 8,
                 "smooth_l1w": 9, "kl_mean": 10, "kl_bm": 11, "kl_none": 12, "kl_sum": 13, "focal": 14, "npair": 15,
                 "mish": 16, "addcmul": 17, "mesh_x": 18, "mesh_y": 19, "lstm_h": 20, "lstm_c": 21}
_GRADS = ["img", "a", "b", "c", "xt", "h0", "c0", "v1", "v2"]


def test_fluid18_layers_equal_paddle_185():
    feed = _feed()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        d = {}
        for k, v in feed.items():
            d[k] = fluid.data(name=k, shape=list(v.shape), dtype=str(v.dtype))
            d[k].stop_gradient = v.dtype != np.float32
        o = _build(d)
        terms = [L.reduce_sum(L.elementwise_mul(o[k], L.sin(o[k]))) * (w * 0.1) for k, w in _LOSS_WEIGHTS.items()]
        grads = fluid.gradients([L.sums(terms)], [d[n] for n in _GRADS])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    names = sorted(o)
    values = exe.run(main, feed=feed, fetch_list=[o[n] for n in names] + grads)
    for name, value in zip(names + ["g_" + g for g in _GRADS], values):
        np.testing.assert_allclose(_fingerprint(value), PADDLE_185[name], rtol=2e-5, atol=2e-5, err_msg=name)
        if name in SHAPES_185:
            assert value.shape == SHAPES_185[name], name
    assert {n: o[n].name for n in NAMES_185} == NAMES_185
    assert values[names.index("allclose")].tolist() == [True] and values[names.index("allclose2")].tolist() == [False]


def test_shuffle_channel_gradient():
    """psjob's shuffle_channel gradient is the inverse move. Paddle 1.8.5's applies the forward
    move again (its printed gradient equals shuffle_channel(dOut, group)), the same only when
    group * group == channels; psjob keeps the true gradient."""
    x = _feed()["img"]
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        img = fluid.data(name="img", shape=[2, 8, 4, 4], dtype="float32")
        img.stop_gradient = False
        out = L.shuffle_channel(img, group=2)
        (g,) = fluid.gradients([L.reduce_sum(L.elementwise_mul(out, L.sin(out)))], [img])
        value, grad = fluid.Executor(fluid.CPUPlace()).run(feed={"img": x}, fetch_list=[out, g])
    moved = x.reshape(2, 2, 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(x.shape)
    np.testing.assert_array_equal(value, moved)
    dout = np.sin(moved) + moved * np.cos(moved)
    np.testing.assert_allclose(grad, dout.reshape(2, 4, 2, 4, 4).transpose(0, 2, 1, 3, 4).reshape(x.shape), rtol=1e-5)


def test_program_utilities_equal_paddle_185():
    """autoincreased_step_counter over three runs, tensor_array_to_tensor (concat and stack, with
    a gradient), get_tensor_from_selected_rows / merge_selected_rows of a sparse embedding
    gradient, reorder_lod_tensor_by_rank and is_empty: the values Paddle 1.8.5 printed."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        step = L.autoincreased_step_counter(begin=5, step=2)
        step2 = L.autoincreased_step_counter(counter_name="my_counter")
        assert L.autoincreased_step_counter(begin=5, step=2) is step
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        x.stop_gradient = False
        i0 = L.zeros([1], "int64")
        arr = L.array_write(x, i0)
        L.array_write(L.scale(x, 2.0), L.increment(i0, in_place=False), array=arr)
        cat, idx = L.tensor_array_to_tensor(arr, axis=1)
        st, idx2 = L.tensor_array_to_tensor(arr, axis=0, use_stack=True)
        ids = fluid.data(name="ids", shape=[-1, 1], dtype="int64")
        emb = L.embedding(ids, size=[6, 2], is_sparse=True,
                          param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.5)))
        (gx,) = fluid.gradients([L.reduce_sum(cat * cat)], [x])
        fluid.backward.append_backward(L.reduce_sum(emb * 3.0))
        wgrad = main.global_block().var("w@GRAD")
        dense = L.get_tensor_from_selected_rows(wgrad)
        merged = L.merge_selected_rows(wgrad)
        mdense = L.get_tensor_from_selected_rows(merged)
        seq = fluid.data(name="seq", shape=[-1, 1], dtype="float32", lod_level=1)
        short = fluid.data(name="short", shape=[-1, 2], dtype="float32")
        reordered = L.reorder_lod_tensor_by_rank(short, L.control_flow.lod_rank_table(seq))
        empty = L.is_empty(x)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": np.array([[1., 2., 3.], [4., 5., 6.]], "float32"), "ids": np.array([[3], [1], [3], [0]], "int64"),
            "seq": fluid.create_lod_tensor(np.arange(6, dtype="float32").reshape(6, 1), [[1, 3, 2]], fluid.CPUPlace()),
            "short": np.array([[1, 1], [2, 2], [3, 3]], "float32")}
    steps = []
    for _ in range(3):
        res = exe.run(main, feed=feed, fetch_list=[step, step2, cat, idx, st, idx2, gx, dense, mdense, reordered, empty])
        steps.append((res[0].tolist(), res[1].tolist()))
    assert steps == [([6], [1]), ([8], [2]), ([10], [3])]
    assert res[2].tolist() == [[1, 2, 3, 2, 4, 6], [4, 5, 6, 8, 10, 12]] and res[3].tolist() == [3, 3]
    assert res[3].dtype == np.int32 and res[5].tolist() == [2, 2]
    assert res[4].tolist() == [[[1, 2, 3], [4, 5, 6]], [[2, 4, 6], [8, 10, 12]]]
    assert res[6].tolist() == [[10, 20, 30], [40, 50, 60]]
    assert res[7].tolist() == [[3, 3]] * 4 and res[8].tolist() == [[3, 3], [3, 3], [6, 6]]
    assert res[9].tolist() == [[2, 2], [3, 3], [1, 1]] and res[10].tolist() == [False]
    assert [v.name for v in (cat, idx, st, step, dense, merged, reordered, empty)] == [
        "tensor_array_to_tensor_0.tmp_0", "tensor_array_to_tensor_0.tmp_1", "tensor_array_to_tensor_1.tmp_0",
        "@STEP_COUNTER@", "get_tensor_from_selected_rows_0.tmp_0", "merge_selected_rows_0.tmp_0",
        "reorder_lod_tensor_by_rank_0.tmp_0", "is_empty_0.tmp_0"]


def test_random_layers_shapes_dtypes_ranges_and_seeds():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        n = L.fill_constant([1], "int64", 3)
        ri = L.randint(2, 9, shape=[n, 4], seed=5)
        ri0 = L.randint(5, shape=L.assign(np.array([50], "int64")), dtype="int32")
        rn = L.randn([3, 2], dtype="float64")
        rp = L.randperm(7, seed=3)
    assert ri.shape == (-1, 4) and ri.dtype == "int64" and rn.shape == (3, 2) and rp.shape == (7,)
    exe = fluid.Executor(fluid.CPUPlace())
    a = exe.run(main, fetch_list=[ri, ri0, rn, rp])
    b = exe.run(main, fetch_list=[ri, ri0, rn, rp])
    assert a[0].shape == (3, 4) and a[0].dtype == np.int64 and a[0].min() >= 2 and a[0].max() < 9
    assert a[1].shape == (50,) and a[1].dtype == np.int32 and a[1].min() >= 0 and a[1].max() < 5
    assert a[2].shape == (3, 2) and a[2].dtype == np.float64
    assert sorted(a[3].tolist()) == list(range(7)) and a[3].dtype == np.int64
    np.testing.assert_array_equal(a[0], b[0])  # seeded: the same draw each run
    np.testing.assert_array_equal(a[3], b[3])
    assert not np.array_equal(a[2], b[2])  # randn: fresh each run


def test_fluid18_layers_bad_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[2, 6, 4, 4], dtype="float32")
        m = fluid.data(name="m", shape=[4, 3], dtype="float32")
        with pytest.raises(ValueError, match="axis must be 1, -1 or 3"):
            L.maxout(x, groups=2, axis=2)
        with pytest.raises(ValueError, match="at least 2 Variables"):
            L.multiplex([m], L.fill_constant([4, 1], "int32", 0))
        with pytest.raises(ValueError, match="reduction"):
            L.kldiv_loss(m, m, reduction="avg")
        with pytest.raises(ValueError, match="low .* must be below high"):
            L.randint(5, 5)
        with pytest.raises(TypeError, match="value"):
            L.addcmul(m, m, m, value=1)
        with pytest.raises(ValueError, match="must be 1-D"):
            L.meshgrid([m])
        with pytest.raises(TypeError, match="SelectedRows"):
            L.merge_selected_rows(m)
        with pytest.raises(Exception, match="space_to_depth"):
            L.space_to_depth(x, 2)  # 6 channels: not a multiple of 4


# prelu / group_norm / instance_norm: outputs, parameter gradients (all in one program) and each
# layer's input gradient alone, as Paddle 1.8.5 printed them (sum of absolute values, sin-weighted sum)
NORM_185 = {"gn": [57.93571, 3.53663], "gn_p": [53.8747, 7.94389], "in": [61.11987, 4.8008],
            "prelu_all": [35.15215, 3.82008], "prelu_ch": [38.28313, 3.09728], "prelu_el": [35.15215, 3.82008],
            "g_prelu_0.w_0": [50.72428, 42.68301], "g_prelu_1.w_0": [72.72589, -19.3274],
            "g_prelu_2.w_0": [76.08643, 15.92993], "g_group_norm_1.w_0": [53.42351, -13.78588],
            "g_group_norm_1.b_0": [35.77843, -12.65166], "g_instance_norm_0.w_0": [189.19667, 8.58814],
            "g_instance_norm_0.b_0": [43.30147, 1.80226]}
NORM_NAMES_185 = {"gn": "_generated_var_2", "gn_p": "group_norm_1.tmp_0", "in": "instance_norm_0.tmp_2",
                  "prelu_all": "prelu_0.tmp_0", "prelu_ch": "prelu_1.tmp_0", "prelu_el": "prelu_2.tmp_0"}
# d/dx alone; "gn" (no scale) is the finite-difference value: Paddle 1.8.5 printed [44.32425, 1.11468],
# its group_norm gradient without a Scale being wrong
NORM_X_GRADS_185 = {"prelu_all": [33.64325, 2.48966], "prelu_ch": [36.53307, 1.66982], "prelu_el": [33.64325, 2.48966],
                    "gn": [38.5955, 1.53021], "gn_p": [80.7229, -4.34073], "in": [31.9047, -4.76198]}


def _norm_layers(x, which=None):
    build = {"prelu_all": lambda: L.prelu(x, "all"),
             "prelu_ch": lambda: L.prelu(x, "channel", param_attr=fluid.ParamAttr(
                 initializer=fluid.initializer.NumpyArrayInitializer(
                     np.linspace(0.1, 0.6, 6).reshape(1, 6, 1, 1).astype("float32")))),
             "prelu_el": lambda: L.prelu(x, "element"),
             "gn": lambda: L.group_norm(x, groups=3),
             "gn_p": lambda: L.group_norm(x, groups=2, param_attr=fluid.ParamAttr(
                 initializer=fluid.initializer.Constant(1.5)), bias_attr=fluid.ParamAttr(
                 initializer=fluid.initializer.Constant(0.3)), act="relu"),
             "in": lambda: L.instance_norm(x)}
    if which:
        return build[which]()
    return {k: build[k]() for k in ("prelu_all", "prelu_ch", "prelu_el", "gn", "gn_p", "in")}


def _abs_fingerprint(v):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    return [float(np.abs(v).sum()), float((v * np.sin(np.arange(v.size) + 1.0)).sum())]


def test_prelu_group_norm_instance_norm_equal_paddle_185():
    x_v = np.random.RandomState(5).randn(2, 6, 3, 2).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 6, 3, 2], dtype="float32")
        x.stop_gradient = False
        o = _norm_layers(x)
        names = sorted(o)
        loss = L.sums([L.reduce_sum(L.elementwise_mul(o[k], L.sin(o[k]))) * float(i + 1) for i, k in enumerate(names)])
        params = main.global_block().all_parameters()
        grads = fluid.gradients([loss], params)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    values = exe.run(main, feed={"x": x_v}, fetch_list=[o[n] for n in names] + grads)
    for name, value in zip(names + ["g_" + p.name for p in params], values):
        np.testing.assert_allclose(_abs_fingerprint(value), NORM_185[name], rtol=2e-5, atol=2e-5, err_msg=name)
    assert {n: o[n].name for n in names} == NORM_NAMES_185
    assert [tuple(p.shape) for p in params] == [(1,), (1, 6, 1, 1), (1, 6, 3, 2), (6,), (6,), (6,), (6,)]
    for which in names:
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data(name="x", shape=[2, 6, 3, 2], dtype="float32")
            x.stop_gradient = False
            out = _norm_layers(x, which)
            (gx,) = fluid.gradients([L.reduce_sum(L.elementwise_mul(out, L.sin(out)))], [x])
        exe.run(startup)
        (g,) = exe.run(main, feed={"x": x_v}, fetch_list=[gx])
        np.testing.assert_allclose(_abs_fingerprint(g), NORM_X_GRADS_185[which], rtol=2e-5, atol=2e-5, err_msg=which)


# filter_by_instag: (out, its LoD, loss weight, d/dins of sum(out^2) + 0.5 sum(out)) per filter,
# as Paddle 1.8.5 printed them; instances tagged [1, 5], [9, 2], [5], [3]
INSTAG_185 = {
    (True, 0): ([[0.0, 0.25], [0.5, 0.75], [2.5, 2.75], [3.0, 3.25], [3.5, 3.75]], [[2, 1, 2]], [[1.0]] * 3,
                [[0.5, 1.0], [1.5, 2.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [5.5, 6.0], [6.5, 7.0], [7.5, 8.0]]),
    (True, 1): ([[1.0, 1.25], [1.5, 1.75], [2.0, 2.25], [2.5, 2.75]], [[3, 1]], [[1.0]] * 2,
                [[0.0, 0.0], [0.0, 0.0], [2.5, 3.0], [3.5, 4.0], [4.5, 5.0], [5.5, 6.0], [0.0, 0.0], [0.0, 0.0]]),
    (True, 2): ([[7.0, 7.0]], [[1]], [[0.0]], [[0.0, 0.0]] * 8),
    (False, 0): ([[0.0, 0.25], [1.0, 1.25], [1.5, 1.75]], [[1, 1, 1]], [[1.0]] * 3,
                 [[0.5, 1.0], [0.0, 0.0], [2.5, 3.0], [3.5, 4.0]]),
    (False, 1): ([[0.5, 0.75], [1.0, 1.25]], [[1, 1]], [[1.0]] * 2, [[0.0, 0.0], [1.5, 2.0], [2.5, 3.0], [0.0, 0.0]]),
    (False, 2): ([[7.0, 7.0]], [[1]], [[0.0]], [[0.0, 0.0]] * 4),
}


@pytest.mark.parametrize("is_lod", [True, False])
def test_filter_by_instag_equal_paddle_185(is_lod):
    place = fluid.CPUPlace()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ins = fluid.data(name="ins", shape=[-1, 2], dtype="float32", lod_level=1 if is_lod else 0)
        ins.stop_gradient = False
        tag = fluid.data(name="tag", shape=[-1, 1], dtype="int64", lod_level=1)
        flt = fluid.data(name="flt", shape=[-1], dtype="int64")
        out, weight = L.filter_by_instag(ins, tag, flt, is_lod, out_val_if_empty=7)
        (grad,) = fluid.gradients([L.reduce_sum(out * out) + L.reduce_sum(out) * 0.5], [ins])
    assert (out.name, weight.name) == ("filter_by_instag_0.tmp_0", "filter_by_instag_0.tmp_1")
    exe = fluid.Executor(place)
    exe.run(startup)
    rows = 8 if is_lod else 4
    values = np.arange(rows * 2, dtype="float32").reshape(rows, 2) / 4.0
    tags = fluid.create_lod_tensor(np.array([[1], [5], [9], [2], [5], [3]], "int64"), [[2, 1, 2, 1]], place)
    for case, wanted in enumerate(([5, 3], [9, 2], [100])):
        feed = {"ins": fluid.create_lod_tensor(values, [[2, 3, 1, 2]], place) if is_lod else values,
                "tag": tags, "flt": np.array(wanted, "int64")}
        o, w, g = exe.run(main, feed=feed, fetch_list=[out, weight, grad], return_numpy=False)
        want = INSTAG_185[(is_lod, case)]
        assert np.array(o).tolist() == want[0] and o.recursive_sequence_lengths() == want[1]
        assert np.array(w).tolist() == want[2] and np.array(g).tolist() == want[3]


# center_loss over two runs (the centers move between them): loss, d/dx of sum(loss^2), centers
# after the run, as Paddle 1.8.5 printed them
CENTER_LOSS_185 = [[[5.4988, 3.72615, 3.84872, 4.76479, 2.13136],
                    [1.97299, -0.40841, -36.4152, 13.38957, -15.27724, 1.09572, 8.4598, -9.43827, -17.18802, -5.43363, 7.50586,
                     27.92037, 0.84391, -5.85909, 6.51274],
                    [-0.46832, -0.14546, 0.62059, -0.74787, 0.00903, -0.87811, 0.04303, -0.08588, -0.82129, -0.42435, -0.11804,
                     -0.19818]],
                   [[3.80523, 2.73367, 2.48517, 3.44256, 1.45784],
                    [0.39238, 0.6788, -20.98039, 8.73262, -9.33577, -0.11184, 4.82717, -5.46652, -8.3429, -3.33693, 4.60954,
                     17.1466, -0.00436, -3.00911, 3.96634],
                    [-0.36604, -0.24652, 0.17705, -0.74787, 0.00903, -0.87811, 0.20261, -0.35984, -0.6873, -0.49705, -0.01761,
                     0.17538]]]


def test_center_loss_equal_paddle_185():
    rng = np.random.RandomState(2)
    x_v = rng.randn(5, 3).astype("float32")
    centers_v = rng.randn(4, 3).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[-1, 3], dtype="float32")
        x.stop_gradient = False
        lab = fluid.data(name="lab", shape=[-1, 1], dtype="int64")
        init = fluid.initializer.NumpyArrayInitializer(centers_v)
        loss = L.center_loss(x, lab, num_classes=4, alpha=0.3,
                             param_attr=fluid.ParamAttr(name="centers", initializer=init), update_center=True)
        (grad,) = fluid.gradients([L.reduce_sum(loss * loss)], [x])
    assert loss.name == "center_loss_0.tmp_1"
    assert sorted(v.name for v in main.global_block().vars.values() if v.persistable) == ["centerloss_alpha", "centers"]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for want in CENTER_LOSS_185:
        got = exe.run(main, feed={"x": x_v, "lab": np.array([[0], [2], [0], [3], [2]], "int64")},
                      fetch_list=[loss, grad, "centers"])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.reshape(-1), w, rtol=1e-5, atol=1e-5)


# teacher_student_sigmoid_loss, huber_loss, add_position_encoding (padded and LoD), dice_loss,
# their gradients, and edit_distance (normalized; unnormalized with token 0 erased): shape and
# (sum of absolute values, sin-weighted sum) as Paddle 1.8.5 printed them
MORE_185 = {'ape': ((2, 3, 6), [45.19918, -20.55838]),
            'apel': ((5, 4), [20.68009, -2.3626]),
            'd1': ((2, 1), [1.0, 0.86408]),
            'd2': ((2, 1), [2.0, 1.75077]),
            'dice': ((1,), [0.69947, 0.58858]),
            'ga': ((4, 3), [10.35689, -1.38452]),
            'gb': ((4, 3), [10.35689, 1.38452]),
            'ge': ((2, 3, 6), [13.90937, 1.64539]),
            'gel': ((5, 4), [21.85642, 2.24433]),
            'gp': ((3, 4), [1.00709, -0.71393]),
            'gx': ((6, 1), [32.99599, 25.05072]),
            'hub': ((4, 3), [13.53343, 1.13003]),
            'n1': ((1,), [2.0, 1.68294]),
            'n2': ((1,), [2.0, 1.68294]),
            'ts': ((6, 1), [43.92904, -18.0512])}
MORE_NAMES_185 = {'ape': 'add_position_encoding_0.tmp_0',
                  'apel': 'add_position_encoding_1.tmp_0',
                  'dice': 'reduce_mean_0.tmp_0',
                  'hub': 'huber_loss_0.tmp_1',
                  'ts': '_generated_var_0'}


def test_more_fluid18_losses_equal_paddle_185():
    place = fluid.CPUPlace()
    rng = np.random.RandomState(8)
    feed = {"x": (rng.randn(6, 1) * 8).astype("float32"),
            "lab": np.array([[-2.0], [-1.0], [0.3], [1.7], [0.0], [1.0]], "float32"),
            "a": rng.randn(4, 3).astype("float32"), "b": (rng.randn(4, 3) * 2).astype("float32"),
            "e": rng.randn(2, 3, 6).astype("float32")}
    feed["el"] = fluid.create_lod_tensor(rng.randn(5, 4).astype("float32"), [[2, 3]], place)
    feed.update(p=rng.rand(3, 4).astype("float32"), pl=np.array([[1], [3], [0]], "int64"))
    feed["hy"] = fluid.create_lod_tensor(np.array([[1], [2], [0], [3], [4], [4], [0]], "int64"), [[4, 3]], place)
    feed["rf"] = fluid.create_lod_tensor(np.array([[1], [3], [0], [4], [5], [0]], "int64"), [[3, 3]], place)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        d = {}
        for k, shape, dtype, lod in (("x", [-1, 1], "float32", 0), ("lab", [-1, 1], "float32", 0),
                                     ("a", [4, 3], "float32", 0), ("b", [4, 3], "float32", 0),
                                     ("e", [2, 3, 6], "float32", 0), ("el", [-1, 4], "float32", 1),
                                     ("p", [3, 4], "float32", 0), ("pl", [3, 1], "int64", 0),
                                     ("hy", [-1, 1], "int64", 1), ("rf", [-1, 1], "int64", 1)):
            d[k] = fluid.data(name=k, shape=shape, dtype=dtype, lod_level=lod)
            d[k].stop_gradient = k in ("lab", "pl", "hy", "rf")
        o = {"ts": L.teacher_student_sigmoid_loss(d["x"], d["lab"]), "hub": L.huber_loss(d["a"], d["b"], 1.0),
             "ape": L.add_position_encoding(d["e"], 0.5, 2.0), "apel": L.add_position_encoding(d["el"], 1.0, 1.0),
             "dice": L.dice_loss(d["p"], d["pl"])}
        names = sorted(o)
        loss = L.sums([L.reduce_sum(L.elementwise_mul(o[k], L.sin(o[k]))) for k in names])
        grads = fluid.gradients([loss], [d[k] for k in ("x", "a", "b", "e", "el", "p")])
        d1, n1 = L.edit_distance(d["hy"], d["rf"])
        d2, n2 = L.edit_distance(d["hy"], d["rf"], normalized=False, ignored_tokens=[0])
    assert {k: o[k].name for k in names} == MORE_NAMES_185
    exe = fluid.Executor(place)
    exe.run(startup)
    res = exe.run(main, feed=feed, fetch_list=[o[k] for k in names] + grads + [d1, n1, d2, n2])
    for name, value in zip(names + ["gx", "ga", "gb", "ge", "gel", "gp", "d1", "n1", "d2", "n2"], res):
        shape, want = MORE_185[name]
        assert value.shape == shape, name
        np.testing.assert_allclose(_abs_fingerprint(value), want, rtol=2e-5, atol=2e-5, err_msg=name)
    assert res[-4].dtype == np.float32 and res[-3].dtype == np.int64


def test_fluid18_module_layout():
    """Where Paddle 1.8 scripts reach these: fluid.layers.bilinear_tensor_product (the one
    paddle.static.nn.bilinear_tensor_product calls; the probe of Paddle 1.8.5's example gives its
    output) and the control-flow classes under fluid.layers.control_flow."""
    import psjob.static.nn as snn
    assert L.bilinear_tensor_product is not snn.bilinear_tensor_product
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 3], dtype="float32")
        y = fluid.data(name="y", shape=[-1, 4], dtype="float32")
        out = L.bilinear_tensor_product(x, y, 5, act="sigmoid")
        assert out.shape[-1] == 5
    for name in ("Switch", "While", "IfElse", "StaticRNN", "DynamicRNN", "cond", "case", "switch_case",
                 "while_loop", "array_write", "array_read", "array_length", "create_array"):
        assert getattr(L.control_flow, name) is getattr(L, name)
