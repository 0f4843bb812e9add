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
