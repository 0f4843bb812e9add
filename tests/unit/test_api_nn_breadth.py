"""Breadth of the layer API: Fluid 1.x's fluid.layers activations, layer_norm, pool2d, pad, crop
and the ranking losses; Paddle 2.x's paddle.nn.functional activations and losses and paddle.nn
layers.

Expected values: FLUID_185 was printed by Paddle 1.8.5 (Python 3.7, CPU) running
`fluid_program` below with `import paddle.fluid as fluid` on the same feeds (rounded to 6
places); PADDLE_300 by Paddle 3.0.0 (CPU, dygraph) calling the same paddle.nn.functional and
paddle.nn APIs on the same inputs (rounded to 8 places). Gradients are checked by
tests/unit/test_op_gradients.py."""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid

FLUID_185 = {
    'leaky_relu':
        [[-0.06, -0.02, -0.005, 0.0], [0.5, 1.0, 2.5, 7.0]],
    'elu-0.5':
        [[-0.475106, -0.31606, -0.1106, 0.0], [0.5, 1.0, 2.5, 7.0]],
    'gelu':
        [[-0.00405, -0.158655, -0.100323, 0.0], [0.345731, 0.841345, 2.484476, 7.0]],
    'swish-1.5':
        [[-0.142278, -0.268941, -0.109456, 0.0], [0.31123, 0.731059, 2.310354, 6.993623]],
    'hard_sigmoid':
        [[0.0, 0.3, 0.45, 0.5], [0.6, 0.7, 1.0, 1.0]],
    'softplus':
        [[0.048587, 0.313262, 0.575939, 0.693147], [0.974077, 1.313262, 2.57889, 7.000911]],
    'relu6':
        [[0.0, 0.0, 0.0, 0.0], [0.5, 1.0, 2.5, 6.0]],
    'hard_swish':
        [[-0.0, -0.333333, -0.114583, 0.0], [0.291667, 0.666667, 2.291667, 7.0]],
    'selu':
        [[-1.670569, -1.111331, -0.38889, 0.0], [0.52535, 1.050701, 2.626752, 7.354907]],
    'logsigmoid':
        [[-3.048587, -1.313262, -0.825939, -0.693147], [-0.474077, -0.313262, -0.07889, -0.000911]],
    'tanh_shrink':
        [[-2.004945, -0.238406, -0.005081, 0.0], [0.037883, 0.238406, 1.513386, 6.000002]],
    'pad':
        [[9.0, 9.0, 9.0, 9.0, 9.0, 9.0], [-3.0, -1.0, -0.25, 0.0, 9.0, 9.0], [0.5, 1.0, 2.5, 7.0, 9.0, 9.0]],
    'crop':
        [[1.0, 2.5]],
    'pad_constant_like':
        [[-3.0, -1.0, -0.25, 0.0, -1.0], [0.5, 1.0, 2.5, 7.0, -1.0], [-1.0, -1.0, -1.0, -1.0, -1.0]],
    'label_smooth':
        [[0.068134, 0.18399, 0.333656, 0.414221], [0.051185, 0.051954, 0.058755, 0.838107]],
    'rank_loss':
        [[0.513015], [0.598139], [1.541008]],
    'margin_rank_loss':
        [[0.0], [0.3], [1.6]],
    'pool2d-max':
        [[[[2.5, 3.0], [3.0, 2.0]], [[3.0, 2.5], [2.0, 3.0]]]],
    'pool2d-avg-pad':
        [[[[1.25, 1.5, 1.416667, 1.375], [1.083333, 1.333333, 1.444444, 1.5],
           [1.916667, 1.777778, 1.5, 1.166667], [1.75, 1.416667, 1.333333, 1.0]],
          [[1.375, 1.333333, 1.25, 1.5], [1.5, 1.555556, 1.666667, 1.916667],
           [1.166667, 1.222222, 1.333333, 1.583333], [1.0, 1.25, 1.75, 2.0]]]],
    'pool2d-global':
        [[[[1.34375]], [[1.46875]]]],
    'layer_norm-axis2':
        [[[[-1.309048, -0.82196, -0.334873, 0.152215], [0.639303, 1.12639, 1.613478, -1.309048],
           [-0.82196, -0.334873, 0.152215, 0.639303], [1.12639, 1.613478, -1.309048, -0.82196]],
          [[-0.496969, 0.033131, 0.563232, 1.093333], [1.623433, -1.557171, -1.02707, -0.496969],
           [0.033131, 0.563232, 1.093333, 1.623433], [-1.557171, -1.02707, -0.496969, 0.033131]]]],
}


def fluid_program():
    x = fluid.data("x", [2, 4], "float32")
    L = fluid.layers
    outs = [L.leaky_relu(x), L.elu(x, 0.5), L.gelu(x), L.swish(x, 1.5), L.hard_sigmoid(x), L.softplus(x),
            L.relu6(x), L.hard_swish(x), L.selu(x), L.logsigmoid(x), L.tanh_shrink(x),
            L.pad(x, [1, 0, 0, 2], pad_value=9.0), L.crop(x, shape=[1, 2], offsets=[1, 1]),
            L.pad_constant_like(fluid.data("big", [3, 5], "float32"), x, pad_value=-1.0),
            L.label_smooth(L.softmax(x), epsilon=0.2)]
    lab, le, ri = (fluid.data(n, [3, 1], "float32") for n in ("lab", "le", "ri"))
    outs += [L.rank_loss(lab, le, ri), L.margin_rank_loss(lab, le, ri, margin=0.3)]
    img = fluid.data("img", [1, 2, 4, 4], "float32")
    outs += [L.pool2d(img, 2, "max", 2), L.pool2d(img, 3, "avg", 1, 1),
             L.pool2d(img, global_pooling=True, pool_type="avg")]
    outs += [L.layer_norm(img, begin_norm_axis=2)]
    return outs


FLUID_FEED = {"x": np.array([[-3.0, -1.0, -0.25, 0.0], [0.5, 1.0, 2.5, 7.0]], "float32"),
              "big": np.zeros((3, 5), "float32"), "lab": np.array([[1], [0], [1]], "float32"),
              "le": np.array([[0.5], [0.2], [-1.0]], "float32"), "ri": np.array([[0.1], [0.4], [0.3]], "float32"),
              "img": (np.arange(32, dtype="float32").reshape(1, 2, 4, 4) % 7) * 0.5}


def test_fluid_layers_match_paddle_185():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        outs = fluid_program()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    got = exe.run(main, feed=FLUID_FEED, fetch_list=outs)
    assert len(got) == len(FLUID_185)
    for (name, want), value in zip(FLUID_185.items(), got):
        np.testing.assert_allclose(value, np.array(want), atol=2e-6, err_msg=name)


def test_fluid_layers_refuse_bad_arguments_by_name():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [2, 4], "float32")
        with pytest.raises(ValueError, match="pad: argument 'paddings'"):
            fluid.layers.pad(x, [1, 1])
        with pytest.raises(ValueError, match="layer_norm: argument 'begin_norm_axis'"):
            fluid.layers.layer_norm(x, begin_norm_axis=2)
        with pytest.raises(ValueError, match="pool2d: argument 'input'"):
            fluid.layers.pool2d(x, 2)
        with pytest.raises(ValueError, match="crop: give shape"):
            fluid.layers.crop(x)
        with pytest.raises(TypeError, match="elu: argument 'x'"):
            fluid.layers.elu(fluid.data("i", [2], "int64"))


# -- paddle.nn.functional against Paddle 3.0.0 ------------------------------------------------

RS = np.random.RandomState(3)
F_INPUTS = {
    "x": np.array([[-3.0, -1.0, -0.25, 0.0], [0.5, 1.0, 2.5, 7.0]], "float64"),
    "a": RS.uniform(-1, 1, (3, 4)), "b": RS.uniform(-1, 1, (3, 4)), "c": RS.uniform(-1, 1, (3, 4)),
    "p": RS.uniform(0.05, 1, (3, 4)), "sign": np.array([[1.0], [-1.0], [1.0]]),
    "img": RS.uniform(-1, 1, (2, 3, 5, 6)), "seq": RS.uniform(-1, 1, (2, 3, 7)),
    "lab": np.array([2, 0, 3], "int64"), "w": np.array([0.5, 1.0, 2.0, 1.5]),
    "bin": np.array([[1.0, 0, 1, 0], [0, 0, 1, 1], [1, 1, 0, 0]]),
    "hinge": np.array([[1.0, -1, 1, -1], [-1, -1, 1, 1], [1, 1, -1, -1]]),
    "bw": RS.uniform(-1, 1, (5, 4, 3)), "bb": RS.uniform(-1, 1, (1, 5)), "x2": RS.uniform(-1, 1, (3, 3)),
}


def f_calls(F, t):
    """The calls, written for both Paddle 3.0.0 (dygraph tensors) and psjob (static Variables)."""
    x, a, b, c, p = t["x"], t["a"], t["b"], t["c"], t["p"]
    return {
        "relu6": F.relu6(x), "elu": F.elu(x, 0.7), "selu": F.selu(x), "gelu": F.gelu(x),
        "gelu_tanh": F.gelu(x, approximate=True), "silu": F.silu(x), "swish": F.swish(x),
        "hardswish": F.hardswish(x), "hardsigmoid": F.hardsigmoid(x), "softplus": F.softplus(x, 2, 5),
        "softsign": F.softsign(x), "tanhshrink": F.tanhshrink(x), "mish": F.mish(x),
        "log_sigmoid": F.log_sigmoid(x), "log_softmax0": F.log_softmax(x, axis=0), "glu": F.glu(x),
        "celu": F.celu(x, 0.5),
        "l1": F.l1_loss(a, b), "l1_none": F.l1_loss(a, b, "none"), "smooth_l1": F.smooth_l1_loss(a, b, delta=0.5),
        "smooth_l1_sum": F.smooth_l1_loss(a * 3, b, "sum"),
        "kl": F.kl_div(F.log_softmax(a), F.softmax(b)), "kl_batchmean": F.kl_div(a, p, "batchmean"),
        "kl_sum_logt": F.kl_div(a, b, "sum", log_target=True),
        "mrl": F.margin_ranking_loss(a, b, t["hinge"], 0.2),
        "nll": F.nll_loss(F.log_softmax(a), t["lab"]),
        "nll_w_sum": F.nll_loss(F.log_softmax(a), t["lab"], t["w"], reduction="sum"),
        "nll_w_mean": F.nll_loss(F.log_softmax(a), t["lab"], t["w"]),
        "nll_ignore": F.nll_loss(F.log_softmax(a), t["lab"], ignore_index=0),
        "focal": F.sigmoid_focal_loss(a, t["bin"]),
        "focal_mean": F.sigmoid_focal_loss(a * 2, t["bin"], alpha=0.4, gamma=1.5, reduction="mean"),
        "hinge": F.hinge_embedding_loss(a, t["hinge"], 0.5),
        "pdist": F.pairwise_distance(a, b), "pdist_p1": F.pairwise_distance(a, b, 1.0, keepdim=True),
        "triplet": F.triplet_margin_loss(a, b, c),
        "triplet_swap": F.triplet_margin_loss(a, b, c, margin=0.5, swap=True, reduction="none"),
        "label_smooth": F.label_smooth(t["bin"], epsilon=0.2),
        "pad_all": F.pad(a, [1, 0, 0, 2], value=9.0), "pad_img": F.pad(t["img"], [1, 2, 0, 1], value=-1.0),
        "pad_seq": F.pad(t["seq"], [2, 1], data_format="NCL"),
        "avg_pool1d": F.avg_pool1d(t["seq"], 3, 2, 1),
        "avg_pool1d_incl": F.avg_pool1d(t["seq"], 3, 2, 1, exclusive=False),
        "aap1d": F.adaptive_avg_pool1d(t["seq"], 3), "amp1d": F.adaptive_max_pool1d(t["seq"], 4),
        "aap2d": F.adaptive_avg_pool2d(t["img"], [2, 4]), "aap2d_1": F.adaptive_avg_pool2d(t["img"], 1),
        "amp2d": F.adaptive_max_pool2d(t["img"], [3, 4]),
        "bilinear": F.bilinear(a[:, :4], t["x2"], t["bw"], t["bb"]),
        "unfold": F.unfold(t["img"], [2, 3]), "unfold_sp": F.unfold(t["img"], 2, strides=2, paddings=1, dilations=1),
        "cos": F.cosine_similarity(a, b, axis=1),
    }


# name -> (shape, sum, weighted sum with weights linspace(-1, 1.3, size)) of Paddle 3.0.0's output
PADDLE_300 = {
    'relu6': ([2, 4], 10.0, 11.02857142857143),
    'elu': ([2, 4], 9.737527126327283, 13.343904938135182),
    'selu': ([2, 4], 8.386921569660071, 15.503724330031337),
    'gelu': ([2, 4], 10.408523446776535, 12.30798564440321),
    'gelu_tanh': ([2, 4], 10.409051683571608, 12.30800004528143),
    'silu': ([2, 4], 9.825590520135773, 12.264215423335571),
    'swish': ([2, 4], 9.825590520135773, 12.264215423335571),
    'hardswish': ([2, 4], 9.802083333333334, 12.10952380952381),
    'hardsigmoid': ([2, 4], 4.458333428949118, 2.414285852866514),
    'softplus': ([2, 4], 11.871766453985533, 12.291787514571796),
    'softsign': ([2, 4], 0.9726190476190475, 3.4118537414965986),
    'tanhshrink': ([2, 4], 5.541243623735054, 11.602075122862757),
    'mish': ([2, 4], 10.132748397610952, 12.568741135650503),
    'log_sigmoid': ([2, 4], -6.748075511975407, 3.7952313173100203),
    'log_softmax0': ([2, 4], -15.68911496954513, 5.86961814574559),
    'glu': ([2, 2], -0.35231063854762823, 2.9753906161175534),
    'celu': ([2, 4], 9.872172347562955, 13.185064237160068),
    'l1': ([], 0.6227084223949193, -0.6227084223949193),
    'l1_none': ([3, 4], 7.4725010687390325, 1.0556245867944274),
    'smooth_l1': ([], 0.19760722735849764, -0.19760722735849764),
    'smooth_l1_sum': ([], 13.553361523658726, -13.553361523658726),
    'kl': ([], 0.04696205220666886, -0.04696205220666886),
    'kl_batchmean': ([], -1.0706077806693246, 1.0706077806693246),
    'kl_sum_logt': ([], 1.5582556586377387, -1.5582556586377387),
    'mrl': ([], 0.7109337671899946, -0.7109337671899946),
    'nll': ([], 1.2758638492566112, -1.2758638492566112),
    'nll_w_sum': ([], 5.7735490407474845, -5.7735490407474845),
    'nll_w_mean': ([], 1.4433872601868711, -1.4433872601868711),
    'nll_ignore': ([], 1.4604777521603953, -1.4604777521603953),
    'focal': ([], 1.90928202046528, -1.90928202046528),
    'focal_mean': ([], 0.3569182755584081, -0.3569182755584081),
    'hinge': ([], -0.006479497674672781, 0.006479497674672781),
    'pdist': ([3], 4.337095208422224, 0.7019300744978993),
    'pdist_p1': ([3, 1], 7.472497068739032, 1.5844093970725872),
    'triplet': ([], 0.8050424189541934, -0.8050424189541934),
    'triplet_swap': ([3], 2.1031441673019065, -0.4287925425593533),
    'label_smooth': ([3, 4], 5.4000000804662704, 0.642727282304655),
    'pad_all': ([4, 6], 106.3234655668223, -7.540797911348886),
    'pad_img': ([2, 3, 6, 9], -149.62963478169053, -32.23480267872481),
    'pad_seq': ([2, 3, 10], -0.026555560781678755, 3.4968538859989815),
    'avg_pool1d': ([2, 3, 4], 1.1472357711801942, 2.5162394680399824),
    'avg_pool1d_incl': ([2, 3, 4], 0.8073154817201988, 2.2469852301962483),
    'aap1d': ([2, 3, 3], -0.4554430225098673, 1.3167066699587235),
    'amp1d': ([2, 3, 4], 11.775801499099622, 3.9641365410289167),
    'aap2d': ([2, 3, 2, 4], -0.07820663661570121, -0.911619393997047),
    'aap2d_1': ([2, 3, 1, 1], -0.18765449272301724, -0.18872579754905466),
    'amp2d': ([2, 3, 3, 4], 39.704291235874734, 4.331416434875587),
    'bilinear': ([3, 5], -3.673475272249757, 0.20024419583429798),
    'unfold': ([2, 18, 16], -16.444194917355148, -18.11046282007683),
    'unfold_sp': ([2, 12, 12], -5.629634781690517, -3.9955354168893735),
    'cos': ([3], -0.43557251079577175, 1.29182625878068),
}


def _digest(v):
    v = np.asarray(v, dtype=np.float64)
    return float(v.sum()), float((v.ravel() * np.linspace(-1, 1.3, v.size)).sum())


def test_functional_matches_paddle_300():
    paddle.enable_static()
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        t = {k: paddle.static.data(k, list(v.shape), v.dtype.name) for k, v in F_INPUTS.items()}
        outs = f_calls(paddle.nn.functional, t)
    assert list(outs) == list(PADDLE_300)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    for (name, (shape, total, weighted)), value in zip(PADDLE_300.items(),
                                                        exe.run(main, feed=F_INPUTS, fetch_list=list(outs.values()))):
        # Paddle 3.0 reduces a loss to a 0-D tensor; psjob's reductions give [1], as Fluid's mean.
        assert list(value.shape) == (shape or [1]), name
        np.testing.assert_allclose(_digest(value), (total, weighted), rtol=1e-6, atol=1e-9, err_msg=name)


# -- paddle.nn layers ----------------------------------------------------------------------------

def _static():
    paddle.enable_static()
    return paddle.static.Program(), paddle.static.Program()


def test_new_layers_name_their_parameters_as_paddle_300():
    # Paddle 3.0.0 static mode printed these names and shapes for the same constructors.
    main, start = _static()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        layers = [paddle.nn.Bilinear(3, 4, 5), paddle.nn.GroupNorm(2, 4), paddle.nn.InstanceNorm1D(4),
                  paddle.nn.InstanceNorm2D(4), paddle.nn.SyncBatchNorm(4)]
        got = [[(p.name, list(p.shape)) for p in layer.parameters()] for layer in layers]
    assert got == [
        [("bilinear_0.w_0", [5, 3, 4]), ("bilinear_0.b_0", [1, 5])],
        [("group_norm_0.w_0", [4]), ("group_norm_0.b_0", [4])],
        [("instance_norm1d_0.w_0", [4]), ("instance_norm1d_0.b_0", [4])],
        [("instance_norm2d_0.w_0", [4]), ("instance_norm2d_0.b_0", [4])],
        [("sync_batch_norm_0.w_0", [4]), ("sync_batch_norm_0.b_0", [4]), ("sync_batch_norm_0.w_1", [4]),
         ("sync_batch_norm_0.w_2", [4])]]


def test_group_and_instance_norm_match_paddle_300():
    # Paddle 3.0.0 (static, float32) on the same feeds: (sum, weighted sum) of each output.
    main, start = _static()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        x = paddle.static.data("x", [2, 4, 3, 5], "float32")
        s = paddle.static.data("s", [2, 4, 6], "float32")
        outs = [paddle.nn.GroupNorm(2, 4)(x), paddle.nn.InstanceNorm1D(4)(s), paddle.nn.InstanceNorm2D(4)(x)]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    rs = np.random.RandomState(5)
    feed = {"x": rs.uniform(-1, 1, (2, 4, 3, 5)).astype("float32"), "s": rs.uniform(-1, 1, (2, 4, 6)).astype("float32")}
    want = [0.3141262864083547, 0.11055909211331194, -0.3857628811714271]
    for value, weighted in zip(exe.run(main, feed=feed, fetch_list=outs), want):
        total, got = _digest(value)
        assert abs(total) < 1e-4
        np.testing.assert_allclose(got, weighted, rtol=2e-5)


def test_activation_and_loss_layers_call_their_functionals():
    main, start = _static()
    nn, F = paddle.nn, paddle.nn.functional
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        x = paddle.static.data("x", [2, 4], "float64")
        y = paddle.static.data("y", [2, 4], "float64")
        pairs = [(nn.GELU(approximate=True)(x), F.gelu(x, True)), (nn.ELU(0.3)(x), F.elu(x, 0.3)),
                 (nn.Softplus(2.0, 5.0)(x), F.softplus(x, 2.0, 5.0)), (nn.LogSoftmax(0)(x), F.log_softmax(x, 0)),
                 (nn.Hardswish()(x), F.hardswish(x)), (nn.ReLU6()(x), F.relu6(x)), (nn.Mish()(x), F.mish(x)),
                 (nn.SELU()(x), F.selu(x)), (nn.GLU()(x), F.glu(x)), (nn.Identity(3, foo=1)(x), x),
                 (nn.L1Loss("sum")(x, y), F.l1_loss(x, y, "sum")),
                 (nn.SmoothL1Loss(delta=0.3)(x, y), F.smooth_l1_loss(x, y, delta=0.3)),
                 (nn.KLDivLoss("sum")(x, y), F.kl_div(x, y, "sum")),
                 (nn.CosineSimilarity(axis=1)(x, y), F.cosine_similarity(x, y, axis=1)),
                 (nn.Pad1D([1, 2], value=3.0)(paddle.unsqueeze(x, [1])),
                  F.pad(paddle.unsqueeze(x, [1]), [1, 2], value=3.0, data_format="NCL"))]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    feed = {"x": np.linspace(-2, 2, 8).reshape(2, 4), "y": np.linspace(0.1, 0.9, 8).reshape(2, 4)}
    vals = exe.run(main, feed=feed, fetch_list=[v for pair in pairs for v in pair])
    for i in range(0, len(vals), 2):
        np.testing.assert_allclose(vals[i], vals[i + 1], err_msg=str(i // 2))
    with pytest.raises(TypeError, match="ELU"):
        nn.ELU(beta=2)


def test_layer_dict_and_parameter_list_register_with_their_owner():
    main, start = _static()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        class Net(paddle.nn.Layer):
            def __init__(self):
                super().__init__()
                self.heads = paddle.nn.LayerDict({"ctr": paddle.nn.Linear(4, 1), "cvr": paddle.nn.Linear(4, 1)})
                self.gates = paddle.nn.ParameterList(
                    [self.create_parameter([4], default_initializer=fluid.initializer.Constant(1.0))
                     for _ in range(2)])

        net = Net()
        assert list(net.heads.keys()) == ["ctr", "cvr"] and "ctr" in net.heads and len(net.gates) == 2
        names = [n for n, _ in net.named_parameters()]
        assert names == ["heads.ctr.weight", "heads.ctr.bias", "heads.cvr.weight", "heads.cvr.bias",
                         "gates.0", "gates.1"]
        net.heads["extra"] = paddle.nn.Linear(4, 2)
        assert len(net.parameters()) == 8
        assert net.heads.pop("extra") is not None and len(net.heads) == 2
        with pytest.raises(ValueError, match="LayerDict.update"):
            net.heads.update([paddle.nn.Linear(1, 1)])


def test_a_model_with_the_new_layers_trains():
    main, start = _static()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        img = paddle.static.data("img", [None, 3, 6, 6], "float32")
        label = paddle.static.data("label", [None, 1], "int64")
        h = paddle.nn.GroupNorm(1, 3)(img)
        h = paddle.nn.Hardswish()(paddle.nn.AdaptiveAvgPool2D(2)(h))
        h = paddle.nn.Dropout2D(0.0)(h)
        logits = paddle.nn.Linear(12, 4)(paddle.flatten(h, 1))
        loss = paddle.nn.NLLLoss()(paddle.nn.LogSoftmax()(paddle.nn.GELU()(logits)), label)
        paddle.optimizer.SGD(0.5).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    rs = np.random.RandomState(0)
    feed = {"img": rs.uniform(-1, 1, (8, 3, 6, 6)).astype("float32"), "label": rs.randint(0, 4, (8, 1)).astype("int64")}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0].reshape(-1)[0]) for _ in range(15)]
    assert losses[-1] < losses[0]


def test_functional_refuses_bad_arguments_by_name():
    main, start = _static()
    F = paddle.nn.functional
    with paddle.static.program_guard(main, start):
        x = paddle.static.data("x", [2, 3], "float32")
        with pytest.raises(ValueError, match="glu: the size of axis"):
            F.glu(x)
        with pytest.raises(ValueError, match="l1_loss: reduction"):
            F.l1_loss(x, x, "avg")
        with pytest.raises(ValueError, match="2 per spatial dimension of a 3-, 4- or 5-D x"):
            F.pad(x, [1, 1, 1, 1], mode="reflect")
        with pytest.raises(ValueError, match="nll_loss: label .* must be .N, d1"):
            F.nll_loss(paddle.unsqueeze(x, [0]), paddle.static.data("l", [2], "int64"))
        with pytest.raises(ValueError, match="selu: scale"):
            F.selu(x, scale=0.5)
        with pytest.raises(ValueError, match="GroupNorm: num_channels"):
            paddle.nn.GroupNorm(2, 3)


def test_conv2d_transpose_matches_paddle_300():
    # Paddle 3.0.0 (static, float64) on the same inputs: (shape, sum, weighted sum) of each output,
    # and its Conv2DTranspose parameter names.
    main, start = _static()
    F = paddle.nn.functional
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        layer = paddle.nn.Conv2DTranspose(4, 2, 3)
        x = paddle.static.data("x", [2, 4, 3, 5], "float64")
        w = paddle.static.data("w", [4, 3, 3, 2], "float64")
        b = paddle.static.data("b", [3], "float64")
        g = paddle.static.data("g", [4, 1, 2, 2], "float64")
        outs = [F.conv2d_transpose(x, w), F.conv2d_transpose(x, w, b, stride=2, padding=1, output_padding=1),
                F.conv2d_transpose(x, w, stride=[2, 3], padding=[1, 0], dilation=2),
                F.conv2d_transpose(x, g, groups=2, stride=2), F.conv2d_transpose(x, w, stride=2, output_size=[8, 10])]
        with pytest.raises(ValueError, match="output_size"):
            F.conv2d_transpose(x, w, stride=2, output_size=[6, 10])
    assert [(p.name, list(p.shape)) for p in layer.parameters()] == [
        ("conv2d_transpose_0.w_0", [4, 2, 3, 3]), ("conv2d_transpose_0.b_0", [2])]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    rs = np.random.RandomState(7)
    feed = {"x": rs.uniform(-1, 1, (2, 4, 3, 5)), "w": rs.uniform(-1, 1, (4, 3, 3, 2)), "b": rs.uniform(-1, 1, (3,)),
            "g": rs.uniform(-1, 1, (4, 1, 2, 2))}
    want = [([2, 3, 5, 6], -6.57403766818676, 6.43429161323313),
            ([2, 3, 6, 9], -122.68278620170909, -13.900490787885396),
            ([2, 3, 7, 15], -2.3032989184816763, 7.740408532418999),
            ([2, 2, 6, 10], 1.086380038633458, 0.9267961417866988),
            ([2, 3, 8, 10], -6.574037668186759, 6.619515852007457)]
    for value, (shape, total, weighted) in zip(exe.run(main, feed=feed, fetch_list=outs), want):
        assert list(value.shape) == shape
        np.testing.assert_allclose(_digest(value), (total, weighted), rtol=1e-9)


def _nce_program(sampler, seed=0, fixed_negatives=True):
    rs = np.random.RandomState(11)
    wv = rs.uniform(-1, 1, (7, 3)).astype("float32")
    bv = rs.uniform(-0.5, 0.5, (7, 1)).astype("float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [4, 3], "float32")
        label = fluid.data("l", [4, 1], "int64")
        weight = fluid.data("s", [4, 1], "float32")
        init = fluid.initializer.NumpyArrayInitializer
        cost = fluid.layers.nce(x, label, 7, sample_weight=weight,
                                param_attr=fluid.ParamAttr(name="nw", initializer=init(wv)),
                                bias_attr=fluid.ParamAttr(name="nb", initializer=init(bv)), num_neg_samples=3,
                                sampler=sampler, seed=seed,
                                custom_dist=[0.05, 0.1, 0.2, 0.15, 0.25, 0.1, 0.15] if sampler == "custom_dist" else None)
        nce_op = [op for op in main.global_block().ops if op.type == "nce"][0]
        if fixed_negatives:
            nce_op.attrs["custom_neg_classes"] = [2, 5, 3]
        fluid.optimizer.SGD(0.5).minimize(fluid.layers.mean(cost))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start, scope=scope)
    rs = np.random.RandomState(11)
    rs.uniform(size=(7, 3)), rs.uniform(size=(7, 1))
    feed = {"x": rs.uniform(-1, 1, (4, 3)).astype("float32"), "l": np.array([[1], [4], [6], [0]], "int64"),
            "s": np.array([[1.0], [0.5], [2.0], [1.0]], "float32")}
    return exe, main, scope, feed, cost, nce_op


@pytest.mark.parametrize("sampler, want", [
    # Paddle 1.8.5 ran the same program, its nce op's custom_neg_classes set to [2, 5, 3] (fixed
    # negatives): cost per row, then after one SGD step sum(nw), sum(nw^2), sum(nb).
    ("uniform", ([0.753003, 0.333386, 1.255799, 0.653904], (-2.370881, 8.688683, -0.586124))),
    ("log_uniform", ([0.919568, 0.370978, 1.272881, 0.871083], (-2.400675, 8.718988, -0.605201))),
    ("custom_dist", ([0.711265, 0.372969, 1.227738, 0.587074], (-2.3696, 8.706713, -0.589875)))])
def test_nce_matches_paddle_185(sampler, want):
    exe, main, scope, feed, cost, _ = _nce_program(sampler)
    [value] = exe.run(main, feed=feed, fetch_list=[cost], scope=scope)
    np.testing.assert_allclose(value.reshape(-1), want[0], atol=2e-6)
    w = np.array(scope.find_var("nw").get_tensor())
    b = np.array(scope.find_var("nb").get_tensor())
    np.testing.assert_allclose([w.sum(), (w * w).sum(), b.sum()], want[1], atol=2e-5)


@pytest.mark.parametrize("sampler", ["uniform", "log_uniform", "custom_dist"])
def test_nce_samples_negatives_in_range_and_a_seed_repeats_them(sampler):
    exe, main, scope, feed, cost, op = _nce_program(sampler, seed=5, fixed_negatives=False)
    labels = main.global_block().var(op.outputs["SampleLabels"][0])
    first = exe.run(main, feed=feed, fetch_list=[labels], scope=scope)[0]
    again = exe.run(main, feed=feed, fetch_list=[labels], scope=scope)[0]
    assert first.shape == (4, 4) and first.min() >= 0 and first.max() < 7
    np.testing.assert_array_equal(first[:, 0], [1, 4, 6, 0])
    np.testing.assert_array_equal(first, again)


def test_interpolate_and_upsample_match_paddle_300():
    # Paddle 3.0.0 (static, float64) on the same input: (shape, sum, weighted sum); its bilinear
    # ratios are float32, hence rtol 1e-6.
    main, start = _static()
    F = paddle.nn.functional
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        x = paddle.static.data("x", [2, 3, 4, 5], "float64")
        outs = [F.interpolate(x, size=[7, 3]), F.interpolate(x, scale_factor=2),
                F.interpolate(x, scale_factor=[1.5, 0.6]), F.interpolate(x, size=[7, 9], mode="bilinear"),
                F.interpolate(x, size=[3, 8], mode="bilinear", align_corners=True),
                F.interpolate(x, size=[6, 4], mode="bilinear", align_mode=1),
                F.interpolate(x, scale_factor=1.7, mode="bilinear"),
                paddle.nn.UpsamplingBilinear2D(scale_factor=2)(x), paddle.nn.Upsample(size=[5, 5])(x)]
        with pytest.raises(ValueError, match="mode 'bicubic'"):
            F.interpolate(x, size=[2, 2], mode="bicubic")
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    want = [([2, 3, 7, 3], -7.504272286373197, 1.328452727406258),
            ([2, 3, 8, 10], -13.785051703880482, -8.804861801937502),
            ([2, 3, 6, 3], -4.949058701824134, 2.660497726846853),
            ([2, 3, 7, 9], -11.281655646855038, -7.3700044761101156),
            ([2, 3, 3, 8], 0.21135422417701655, -2.358543518395166),
            ([2, 3, 6, 4], -4.5293125547060145, -2.668616206091464),
            ([2, 3, 6, 8], -11.416609482646246, -5.187575078947258),
            ([2, 3, 8, 10], -15.091522262664917, -9.39956485255874),
            ([2, 3, 5, 5], -2.712424665877225, -1.658916312491627)]
    feed = {"x": np.random.RandomState(9).uniform(-1, 1, (2, 3, 4, 5))}
    for value, (shape, total, weighted) in zip(exe.run(main, feed=feed, fetch_list=outs), want):
        assert list(value.shape) == shape
        np.testing.assert_allclose(_digest(value), (total, weighted), rtol=1e-6)


def test_alpha_dropout_keeps_mean_and_variance_and_is_identity_in_eval():
    main, start = _static()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        x = paddle.static.data("x", [4000, 50], "float64")
        layer = paddle.nn.AlphaDropout(0.3)
        train = layer(x)
        layer.eval()
        held = layer(x)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    xv = np.random.RandomState(2).standard_normal((4000, 50))
    out, same = exe.run(main, feed={"x": xv}, fetch_list=[train, held])
    np.testing.assert_array_equal(same, xv)
    alpha_p, p = -1.6732632423543772 * 1.0507009873554805, 0.3
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    dropped = np.isclose(out, a * alpha_p - a * alpha_p * p)  # a dropped element is a * alpha' + b
    assert 0.27 < dropped.mean() < 0.33
    np.testing.assert_allclose(out[~dropped], a * xv[~dropped] - a * alpha_p * p)
    assert abs(out.mean()) < 0.02 and abs(out.var() - 1.0) < 0.03


@pytest.mark.parametrize("custom", [False, True])
def test_hsigmoid_matches_paddle_185(custom):
    # Paddle 1.8.5 ran the same program: the loss per row, then after one SGD step on its mean
    # sum(w), sum(w^2) (and sum(b) for the custom tree). Padding slots of the default tree's
    # shorter paths add log 2 each, as Paddle's kernel does (row 0: label 0 has a 2-node path).
    rs = np.random.RandomState(4)
    nodes = 6 if custom else 5
    xv = rs.uniform(-1, 1, (4, 3)).astype("float32")
    wv = rs.uniform(-1, 1, (nodes, 3)).astype("float32")
    bv = rs.uniform(-1, 1, (nodes, 1)).astype("float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [4, 3], "float32")
        x.stop_gradient = False
        label = fluid.data("l", [4, 1], "int64")
        init = fluid.initializer.NumpyArrayInitializer
        extra = {}
        if custom:
            extra = dict(path_table=fluid.data("t", [4, 3], "int64"), path_code=fluid.data("c", [4, 3], "int64"),
                         is_custom=True)
        out = fluid.layers.hsigmoid(x, label, 6, param_attr=fluid.ParamAttr(name="hw", initializer=init(wv)),
                                    bias_attr=fluid.ParamAttr(name="hb", initializer=init(bv)), **extra)
        fluid.optimizer.SGD(0.5).minimize(fluid.layers.mean(out))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start, scope=scope)
    feed = {"x": xv, "l": np.array([[0], [5], [2], [3]], "int64")}
    if custom:
        feed.update(t=np.array([[0, 2, -1], [1, 3, 4], [0, -1, -1], [5, 1, 2]], "int64"),
                    c=np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0], [0, 0, 1]], "int64"))
    [value] = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
    w = np.array(scope.find_var("hw").get_tensor())
    b = np.array(scope.find_var("hb").get_tensor())
    if custom:
        np.testing.assert_allclose(value.reshape(-1), [1.654026, 3.76447, 2.019011, 2.327546], atol=2e-6)
        np.testing.assert_allclose([w.sum(), (w * w).sum(), b.sum()], [0.452411, 8.308249, -0.342519], atol=2e-5)
    else:
        np.testing.assert_allclose(value.reshape(-1), [1.981263, 2.1023, 3.02094, 2.289236], atol=2e-6)
        np.testing.assert_allclose([w.sum(), (w * w).sum()], [1.0063491, 7.0307026], atol=2e-5)


@pytest.mark.parametrize("hits, want", [
    # Paddle 1.8.5 ran the same program with the same customized samples (row 1 samples its own
    # label 7 again: an accidental hit): the loss per row, then sum(fw), sum(fw^2) after one SGD step.
    (True, ([1.936724, 0.470869, 1.444958], (-2.615481, 17.770149))),
    (False, ([1.936724, 0.798346, 1.444958], (-2.615481, 17.752134)))])
def test_sampled_softmax_with_customized_samples_matches_paddle_185(hits, want):
    rs = np.random.RandomState(8)
    xv = rs.uniform(-1, 1, (3, 5)).astype("float32")
    wv = rs.uniform(-1, 1, (5, 9)).astype("float32")
    pv = rs.uniform(0.1, 0.9, (3, 5)).astype("float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x, label = fluid.data("x", [3, 5], "float32"), fluid.data("l", [3, 1], "int64")
        samples, probs = fluid.data("s", [3, 5], "int64"), fluid.data("p", [3, 5], "float32")
        logits = fluid.layers.fc(x, 9, bias_attr=False, param_attr=fluid.ParamAttr(
            name="fw", initializer=fluid.initializer.NumpyArrayInitializer(wv)))
        loss = fluid.layers.sampled_softmax_with_cross_entropy(
            logits, label, 4, remove_accidental_hits=hits, use_customized_samples=True, customized_samples=samples,
            customized_probabilities=probs)
        fluid.optimizer.SGD(0.5).minimize(fluid.layers.mean(loss))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start, scope=scope)
    feed = {"x": xv, "l": np.array([[2], [7], [0]], "int64"), "p": pv,
            "s": np.array([[2, 1, 5, 7, 3], [7, 1, 5, 7, 3], [0, 1, 5, 7, 3]], "int64")}
    [value] = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(value.reshape(-1), want[0], atol=2e-6)
    w = np.array(scope.find_var("fw").get_tensor())
    np.testing.assert_allclose([w.sum(), (w * w).sum()], want[1], atol=2e-5)


def test_sampled_softmax_draws_distinct_negatives_shared_by_the_batch():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        logits, label = fluid.data("x", [4, 50], "float32"), fluid.data("l", [4, 1], "int64")
        loss = fluid.layers.sampled_softmax_with_cross_entropy(logits, label, 10, seed=3)
        op = [o for o in main.global_block().ops if o.type == "sample_logits"][0]
        samples = main.global_block().var(op.outputs["Samples"][0])
        probs = main.global_block().var(op.outputs["Probabilities"][0])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    feed = {"x": np.random.RandomState(0).standard_normal((4, 50)).astype("float32"),
            "l": np.array([[3], [0], [49], [7]], "int64")}
    s, p, value = exe.run(main, feed=feed, fetch_list=[samples, probs, loss])
    assert s.shape == (4, 11) and (s[:, 0] == [3, 0, 49, 7]).all()
    assert all(len(set(row[1:])) == 10 for row in s) and (s[:, 1:] == s[0, 1:]).all()
    assert ((p > 0) & (p <= 1)).all() and np.isfinite(value).all()


def test_fluid_act_strings_reach_the_new_activations():
    """fc(act=...) appends the op of that name with its default attributes, as Fluid does."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [2, 4], "float32")
        init = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.25))
        outs = {act: fluid.layers.fc(x, 3, act=act, param_attr=init, bias_attr=False)
                for act in ("gelu", "elu", "relu6", "softplus", "leaky_relu", "hard_sigmoid", "swish")}
        refs = {"gelu": fluid.layers.gelu, "elu": fluid.layers.elu, "relu6": fluid.layers.relu6,
                "softplus": fluid.layers.softplus, "leaky_relu": fluid.layers.leaky_relu,
                "hard_sigmoid": fluid.layers.hard_sigmoid, "swish": fluid.layers.swish}
        pre = fluid.layers.fc(x, 3, param_attr=init, bias_attr=False)
        want = {act: refs[act](pre) for act in outs}
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    feed = {"x": np.array([[-3.0, -1.0, 0.5, 2.0], [4.0, 1.0, -6.0, 0.25]], "float32")}
    got = exe.run(main, feed=feed, fetch_list=list(outs.values()) + list(want.values()))
    for i, act in enumerate(outs):
        np.testing.assert_allclose(got[i], got[i + len(outs)], err_msg=act)


# Paddle 1.8.5 printed these for SHRINK_PROGRAM's outputs on SHRINK_X (rounded to 6 places); Paddle
# 3.0.0's F.hardshrink / softshrink / thresholded_relu with the same arguments print the first six.
SHRINK_X = np.array([[-3.0, -1.0, -0.25, 0.0, 0.6], [0.5, 1.0, 2.5, 7.0, 45.0]], "float32")
SHRINK_185 = [
    [[-3.0, -1.0, -0.0, 0.0, 0.6], [0.0, 1.0, 2.5, 7.0, 45.0]],
    [[-3.0, -1.0, -0.0, 0.0, 0.0], [0.0, 1.0, 2.5, 7.0, 45.0]],
    [[-2.5, -0.5, 0.0, 0.0, 0.1], [0.0, 0.5, 2.0, 6.5, 44.5]],
    [[-2.2, -0.2, 0.0, 0.0, 0.0], [0.0, 0.2, 1.7, 6.2, 44.200001]],
    [[-0.0, -0.0, -0.0, 0.0, 0.0], [0.0, 0.0, 2.5, 7.0, 45.0]],
    [[-0.0, -0.0, -0.0, 0.0, 0.6], [0.5, 1.0, 2.5, 7.0, 45.0]],
    [[0.2, 0.2, 0.2, 0.2, 0.6], [0.5, 1.0, 2.0, 2.0, 2.0]],
    [[0.048587, 0.313262, 0.575939, 0.693147, 1.037488], [0.974077, 1.313262, 2.57889, 7.000912, 40.0]],
    [[0.126928, 0.313262, 0.575939, 0.693147, 1.037488], [0.974077, 1.313262, 2.126928, 2.126928, 2.126928]],
    [[-1.655376, -1.003767, -0.284755, 0.0, 0.654889], [0.554246, 1.003767, 1.599578, 1.71561, 1.7159]],
    [[-1.810296, -0.924234, -0.248706, 0.0, 0.582625], [0.489837, 0.924234, 1.696567, 1.996356, 2.0]],
]


def test_shrink_and_clipped_activations_match_paddle():
    main, start = _static()
    F = paddle.nn.functional
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [2, 5], "float32")
        L = fluid.layers
        fluid_outs = [L.hard_shrink(x), L.hard_shrink(x, 0.9), L.softshrink(x), L.softshrink(x, 0.8),
                      L.thresholded_relu(x), L.thresholded_relu(x, 0.4), L.brelu(x, 0.2, 2.0), L.soft_relu(x),
                      L.soft_relu(x, 2.0), L.stanh(x), L.stanh(x, 0.5, 2.0)]
        f_outs = [F.hardshrink(x), paddle.nn.Hardshrink(0.9)(x), F.softshrink(x), paddle.nn.Softshrink(0.8)(x),
                  F.thresholded_relu(x), paddle.nn.ThresholdedReLU(0.4)(x)]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    got = exe.run(main, feed={"x": SHRINK_X}, fetch_list=fluid_outs + f_outs)
    for i, want in enumerate(SHRINK_185 + SHRINK_185[:6]):
        np.testing.assert_allclose(got[i], want, rtol=2e-6, atol=1e-6, err_msg=str(i))


def test_pad_modes_match_paddle():
    # Paddle 3.0.0 (F.pad, nn.Pad2D; float64) and Paddle 1.8.5 (fluid.layers.pad2d; float32) on the
    # same inputs: (shape, sum, weighted sum) of each output.
    main, start = _static()
    F = paddle.nn.functional
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        a = paddle.static.data("a", [2, 3, 5], "float64")
        b = paddle.static.data("b", [2, 3, 4, 5], "float64")
        c = paddle.static.data("c", [1, 2, 3, 4, 3], "float64")
        x = fluid.data("x", [2, 3, 4, 5], "float32")
        outs = [F.pad(a, [2, 1], mode="reflect"), F.pad(a, [1, 3], mode="replicate", data_format="NLC"),
                F.pad(a, [2, 2], mode="circular"), F.pad(b, [1, 2, 3, 0], mode="reflect"),
                F.pad(b, [1, 2, 2, 1], mode="replicate", data_format="NHWC"), F.pad(b, [0, 1, 1, 0], value=4.0),
                F.pad(c, [1, 1, 2, 0, 1, 2], mode="circular"), paddle.nn.Pad2D([1, 0, 0, 2], mode="reflect")(b),
                fluid.layers.pad2d(x, [1, 2, 0, 3], mode="reflect"), fluid.layers.pad2d(x, [2, 0, 1, 1], mode="edge"),
                fluid.layers.pad2d(x, [1, 1, 2, 2], pad_value=-2.0),
                fluid.layers.pad2d(x, [1, 0, 2, 1], mode="reflect", data_format="NHWC")]
        with pytest.raises(ValueError, match="pad: mode"):
            F.pad(b, [1, 1, 1, 1], mode="mirror")
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    rs = np.random.RandomState(2)
    feed = {"a": rs.uniform(-1, 1, (2, 3, 5)), "b": rs.uniform(-1, 1, (2, 3, 4, 5)),
            "c": rs.uniform(-1, 1, (1, 2, 3, 4, 3)),
            "x": np.random.RandomState(3).uniform(-1, 1, (2, 3, 4, 5)).astype("float32")}
    want = [([2, 3, 8], -11.994835272097214, -4.001722202858956), ([2, 7, 5], -16.544048691523955, -5.32159128548212),
            ([2, 3, 9], -13.254358191058317, -2.7736717184234805),
            ([2, 3, 7, 8], -9.256523919808604, -13.773039990012943),
            ([2, 6, 7, 5], -6.357870308990804, -21.989707099672714),
            ([2, 3, 5, 6], 236.61085120183594, 15.63976719012473),
            ([1, 2, 6, 6, 5], 9.677408011809666, 11.108009333507647),
            ([2, 3, 6, 6], -6.5863706745773705, -3.987493489157446),
            ([2, 3, 7, 8], -15.13991, 15.9322), ([2, 3, 6, 7], -4.40013, 2.95757), ([2, 3, 6, 9], -412.3074, -58.5862),
            ([2, 4, 7, 5], 12.26038, 0.53513)]
    for i, (value, (shape, total, weighted)) in enumerate(zip(exe.run(main, feed=feed, fetch_list=outs), want)):
        assert list(value.shape) == shape
        np.testing.assert_allclose(_digest(value), (total, weighted), rtol=1e-9 if i < 8 else 2e-5, atol=1e-4,
                                   err_msg=str(i))


def test_continuous_value_model_matches_paddle_185():
    # Paddle 1.8.5 printed Y and the gradient of sum(Y * Y) for X (whose show/click columns are CVM's)
    # for use_cvm True and False on the same feeds.
    rs = np.random.RandomState(6)
    xv = np.concatenate([rs.randint(0, 9, (4, 2)).astype("float32"), rs.uniform(-1, 1, (4, 3)).astype("float32")], axis=1)
    xv[:, 1] = np.minimum(xv[:, 1], xv[:, 0])
    cv = rs.uniform(0, 3, (4, 2)).astype("float32")
    want = {True: ([[1.38629, -0.0, -0.22005, -0.52037, -0.68877], [0.0, 0.0, 0.44866, 0.82839, -0.05395],
                    [0.69315, -0.0, 0.35701, 0.60344, -0.08363], [0.69315, -0.0, 0.34767, -0.70431, -0.28581]],
                   [[1.84943, 1.32753, -0.4401, -1.04074, -1.37754], [1.72786, 0.25452, 0.89731, 1.65678, -0.1079],
                    [0.66985, 0.65367, 0.71402, 1.20688, -0.16726], [2.47678, 1.38072, 0.69534, -1.40862, -0.57162]]),
            False: ([[-0.22005, -0.52037, -0.68877], [0.44866, 0.82839, -0.05395], [0.35701, 0.60344, -0.08363], [0.34767, -0.70431, -0.28581]],
                    [[1.84943, 1.32753, -0.4401, -1.04074, -1.37754], [1.72786, 0.25452, 0.89731, 1.65678, -0.1079],
                     [0.66985, 0.65367, 0.71402, 1.20688, -0.16726], [2.47678, 1.38072, 0.69534, -1.40862, -0.57162]])}
    for use in (True, False):
        main, start = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, start), fluid.unique_name.guard():
            x = fluid.data("x", [4, 5], "float32")
            x.stop_gradient = False
            y = fluid.layers.continuous_value_model(x, fluid.data("c", [4, 2], "float32"), use)
            g = fluid.gradients([fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y, y))], [x])[0]
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(start)
        yv, gv = exe.run(main, feed={"x": xv, "c": cv}, fetch_list=[y, g])
        np.testing.assert_allclose(yv, want[use][0], atol=2e-5)
        np.testing.assert_allclose(gv, want[use][1], atol=2e-5)


def test_fluid_resize_layers_match_paddle_185():
    # Paddle 1.8.5 ran the same program (float32): (shape, sum, weighted sum) of each output.
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [2, 3, 4, 5], "float32")
        L = fluid.layers
        outs = [L.resize_bilinear(x, [7, 9]), L.resize_bilinear(x, scale=1.5),
                L.resize_bilinear(x, [3, 8], align_corners=False),
                L.resize_bilinear(x, [6, 4], align_corners=False, align_mode=0), L.resize_nearest(x, [7, 3]),
                L.resize_nearest(x, scale=2.0), L.resize_nearest(x, [6, 8], align_corners=False),
                L.image_resize(x, [5, 5], resample="NEAREST")]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    want = [([2, 3, 7, 9], 5.45593, 15.33439), ([2, 3, 6, 7], 3.05912, 12.16184), ([2, 3, 3, 8], 3.97012, 6.69639),
            ([2, 3, 6, 4], 2.37451, 8.23885), ([2, 3, 7, 3], -6.16777, 9.00376), ([2, 3, 8, 10], 10.06784, 25.42335),
            ([2, 3, 6, 8], 2.36246, 12.77529), ([2, 3, 5, 5], -3.04849, 6.66524)]
    feed = {"x": np.random.RandomState(5).uniform(-1, 1, (2, 3, 4, 5)).astype("float32")}
    for value, (shape, total, weighted) in zip(exe.run(main, feed=feed, fetch_list=outs), want):
        assert list(value.shape) == shape
        np.testing.assert_allclose(_digest(value), (total, weighted), atol=2e-5)


def test_hsigmoid_loss_matches_paddle_300():
    # Paddle 3.0.0 (static, float32) printed the parameter names and both losses for the same feeds.
    main, start = _static()
    with paddle.static.program_guard(main, start), fluid.unique_name.guard():
        x = paddle.static.data("x", [4, 3], "float32")
        label = paddle.static.data("l", [4, 1], "int64")
        layer = paddle.nn.HSigmoidLoss(3, 6, weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.3)),
                                       bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(-0.1)))
        out = layer(x, label)
        out2 = paddle.nn.functional.hsigmoid_loss(x, label, 6, paddle.static.data("w", [5, 3], "float32"))
    assert [(p.name, list(p.shape)) for p in layer.parameters()] == [("h_sigmoid_loss_0.w_0", [5, 3]),
                                                                     ("h_sigmoid_loss_0.b_0", [5, 1])]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    rs = np.random.RandomState(4)
    feed = {"x": rs.uniform(-1, 1, (4, 3)).astype("float32"), "l": np.array([[0], [5], [2], [3]], "int64")}
    feed["w"] = rs.uniform(-1, 1, (5, 3)).astype("float32")
    a, b = exe.run(main, feed=feed, fetch_list=[out, out2])
    np.testing.assert_allclose(a.reshape(-1), [2.139397144, 2.091046333, 1.716408968, 2.011755705], rtol=1e-6)
    np.testing.assert_allclose(b.reshape(-1), [1.666819334, 3.278629541, 2.901377201, 2.526025057], rtol=1e-6)


def test_fluid_conv2d_transpose_matches_paddle_185():
    # Paddle 1.8.5 ran the same program: parameter names and shapes, the first output's
    # (shape, sum, weighted sum) and the second's shape (filter_size derived from output_size).
    rs = np.random.RandomState(7)
    xv = rs.uniform(-1, 1, (2, 4, 3, 5)).astype("float32")
    wv = rs.uniform(-1, 1, (4, 3, 3, 2)).astype("float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [2, 4, 3, 5], "float32")
        a = fluid.layers.conv2d_transpose(x, 3, filter_size=[3, 2], stride=2, padding=1, bias_attr=False, act="relu",
                                          param_attr=fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(wv)))
        b = fluid.layers.conv2d_transpose(x, 6, output_size=[7, 11], stride=2, groups=2)
    assert [(p.name, list(p.shape)) for p in main.global_block().all_parameters()] == [
        ("conv2d_transpose_0.w_0", [4, 3, 3, 2]), ("conv2d_transpose_1.w_0", [4, 3, 3, 3]),
        ("conv2d_transpose_1.b_0", [6])]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    av, bv = exe.run(main, feed={"x": xv}, fetch_list=[a, b])
    assert list(av.shape) == [2, 3, 5, 8] and list(bv.shape) == [2, 6, 7, 11]
    np.testing.assert_allclose(_digest(av), (76.14841, 16.34538), atol=2e-5)
