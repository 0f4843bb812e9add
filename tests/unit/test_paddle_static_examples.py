"""paddle.static APIs that Paddle's own API examples use, pinned to Paddle 3.0.0's values:
static Variable's descriptive attributes and text, paddle.static.gradients of non-scalar and
several targets, the in-memory save family (normalize_program, serialize_* / deserialize_*,
save_to_file / load_from_file), ExponentialMovingAverage, and ParamAttr's need_clip on a
static.nn layer. (scripts/paddle-doc-examples.py runs Paddle's examples themselves; these are
our own small programs.)

How the expected values were made: `run` below was run, unchanged but for `import paddle`, by
Paddle 3.0.0 in its legacy static graph (FLAGS_enable_pir_api=0, CPU), and its output (floats
rounded to 5 decimals) pasted into PADDLE300.
"""
import hashlib

import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()

XV = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], np.float32)


def _r(a):
    return np.asarray(a, np.float64).round(5).tolist()


def _programs(paddle):
    return paddle.static.Program(), paddle.static.Program()


def case_variable_text(paddle):
    """str() of variables and parameters, to_string, and the descriptive attributes."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32")
        paddle.static.nn.fc(x, 2)
        block = main.global_block()
        w = block.var("fc_0.w_0")
        frozen = paddle.static.create_parameter([2], "float32", name="frozen",
                                                attr=paddle.ParamAttr(name="frozen", trainable=False))
        g = paddle.static.create_global_var([1], 0.5, "float32", persistable=True, name="gv")
        ids = paddle.static.data("ids", [4], "int64")
        arr = paddle.tensor.create_array("float32")
    return {
        "str": [str(x), repr(x), str(w), str(frozen), str(g), str(ids)],
        "array": str(arr).split(" : ")[1],
        "to_string": [x.to_string(True), w.to_string(True, True)],
        "attrs": [x.grad_name, x.dim(), x.ndim, x.ndimension(), w.is_parameter, x.is_parameter,
                  [paddle.static.data(f"e{d}", [1], d).element_size()
                   for d in ("bool", "int8", "int16", "int32", "int64", "float16", "float32", "float64")]],
    }


def case_variable_methods(paddle):
    """x.T, x.detach(), x.cpu(), x.cuda(), x.size(): what they compute."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [2, 3], "float32")
        x.stop_gradient = False
        t, d, c, n = x.T, x.detach(), x.cpu(), x.size()
        loss = paddle.sum(x * d) + paddle.sum(t * 2.0)
        (gx,) = paddle.static.gradients([loss], [x])
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    outs = exe.run(main, feed={"x": XV}, fetch_list=[t, d, c, n, gx])
    outs[3] = np.asarray(outs[3]).reshape(-1)  # Paddle's size() is 0-D, psjob's [1]
    return {"shapes": [list(t.shape), list(d.shape), d.stop_gradient], "values": [_r(o) for o in outs]}


def case_gradients(paddle):
    """gradients of a non-scalar target, and of two targets with a target_gradient and None."""
    res = {}
    for which in ("one", "two", "again"):
        main, startup = _programs(paddle)
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", [None, 3], "float32")
            u = paddle.static.data("u", [None, 3], "float32")
            g = paddle.static.data("g", [None, 3], "float32")
            x.stop_gradient = u.stop_gradient = False
            y = x * x * u
            z = paddle.sum(paddle.exp(x * 0.5) * u, axis=1)
            if which == "one":
                grads = paddle.static.gradients([y], [x, u])
            elif which == "again":  # a second pass over the same program writes its own gradients
                first = paddle.static.gradients([y], [x])
                grads = first + paddle.static.gradients([y, z], [x, u], target_gradients=[g, None])
            else:
                grads = paddle.static.gradients([y, z], [x, u], target_gradients=[g, None])
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        feed = {"x": XV, "u": XV[::-1] * 2, "g": np.arange(6, dtype=np.float32).reshape(2, 3)}
        res[which] = [_r(o) for o in exe.run(main, feed=feed, fetch_list=grads)]
    return res


def _inference_net(paddle):
    x = paddle.static.data("x", [None, 4], "float32")
    lab = paddle.static.data("lab", [None, 1], "int64")
    w0 = paddle.nn.initializer.Assign(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    h = paddle.static.nn.fc(x, 3, activation="relu", weight_attr=paddle.ParamAttr(initializer=w0))
    out = paddle.static.nn.fc(h, 2, weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.3)),
                              bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(-0.2)))
    loss = paddle.nn.functional.cross_entropy(out, lab)
    return x, out, loss


def case_serialize(paddle):
    """normalize_program's ops; serialize_persistables' bytes (Paddle's combined format);
    serialize_program -> deserialize_program and the persistables -> deserialize_persistables
    into a fresh scope compute what the trained program does."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x, out, loss = _inference_net(paddle)
        paddle.optimizer.SGD(0.1).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = np.linspace(-1, 1, 8).reshape(2, 4).astype(np.float32)
    exe.run(main, feed={"x": xv, "lab": np.array([[0], [1]], np.int64)})
    (want,) = exe.run(main.clone(for_test=True), feed={"x": xv, "lab": np.zeros((2, 1), np.int64)},
                      fetch_list=[out])
    normalized = paddle.static.normalize_program(main, [x], [out])
    ops = sorted(op.type for op in normalized.global_block().ops if op.type not in ("feed", "fetch"))
    model = paddle.static.serialize_program([x], [out], program=main)
    params = paddle.static.serialize_persistables([x], [out], exe, program=main)
    paddle.static.save_to_file("model.bin", model)
    paddle.static.save_to_file("params.bin", params)
    program = paddle.static.deserialize_program(paddle.static.load_from_file("model.bin"))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        paddle.static.deserialize_persistables(program, paddle.static.load_from_file("params.bin"), exe)
        (got,) = exe.run(program, feed={"x": xv}, fetch_list=[out.name])
    return {"ops": ops, "params_sha256": hashlib.sha256(params).hexdigest(), "params_len": len(params),
            "want": _r(want), "got": _r(got)}


def case_ema(paddle):
    """ExponentialMovingAverage(0.9) over SGD steps: the parameters under apply() (bias-
    corrected averages; fc's bias has do_model_average=False), restore(), need_restore=False."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32")
        h = paddle.static.nn.fc(x, 2, weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.5)),
                                bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.1),
                                                           do_model_average=False))
        loss = paddle.mean(h * h)
        test = main.clone(for_test=True)
        paddle.optimizer.SGD(0.05).minimize(loss)
        ema = paddle.static.ExponentialMovingAverage(0.9)
        ema.update()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    names = ["fc_0.w_0", "fc_0.b_0"]
    scope = paddle.static.global_scope()

    def values():
        return [_r(np.asarray(scope.find_var(n).get_tensor())) for n in names]

    log = []
    with ema.apply(exe):
        log.append(["before", values()])
    for step in range(3):
        exe.run(main, feed={"x": XV * (step + 1)})
        with ema.apply(exe):
            log.append(["applied", values(), _r(exe.run(test, feed={"x": XV}, fetch_list=[h])[0])])
        log.append(["restored", values()])
    with ema.apply(exe, need_restore=False):
        pass
    log.append(["kept", values()])
    ema.restore(exe)
    log.append(["restored", values()])
    made = sorted(v for v in main.global_block().vars if "ema" in v.lower())
    return {"log": log, "vars": made}


def case_need_clip(paddle):
    """ParamAttr(need_clip=False) on a static.nn.fc weight exempts it from ClipGradByValue."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32")
        h = paddle.static.nn.fc(x, 2, weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(1.0),
                                                                   need_clip=False),
                                bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(1.0)))
        loss = paddle.sum(h * h)
        paddle.optimizer.SGD(0.01, grad_clip=paddle.nn.ClipGradByValue(0.5)).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    exe.run(main, feed={"x": XV})
    scope = paddle.static.global_scope()
    return [_r(np.asarray(scope.find_var(n).get_tensor())) for n in ("fc_0.w_0", "fc_0.b_0")]


def case_weight_norm(paddle):
    """WeightNormParamAttr on a static.nn.fc weight: parameters <name>_g and <name>_v, w = v * g /
    ||v||; two SGD steps with dim=None (Paddle 3.0.0's legacy graph fails to train with a dim),
    the forward with dim 0 and 1 after g is doubled."""
    res = {}
    w0 = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], np.float32)
    for dim in (None, 0, 1):
        main, startup = _programs(paddle)
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", [None, 3], "float32")
            attr = paddle.static.WeightNormParamAttr(dim=dim, name="wn", initializer=paddle.nn.initializer.Assign(w0))
            h = paddle.static.nn.fc(x, 2, weight_attr=attr, bias_attr=False)
            loss = paddle.mean(h * h)
            if dim is None:
                paddle.optimizer.SGD(0.1).minimize(loss)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        names = [p.name for p in main.all_parameters()]
        shapes = [list(p.shape) for p in main.all_parameters()]
        scope = paddle.static.global_scope()
        if dim is not None:
            g = scope.find_var("wn_g").get_tensor()
            g.set(np.asarray(g) * 2, paddle.CPUPlace())
        steps = []
        for _ in range(2 if dim is None else 1):
            outs = exe.run(main, feed={"x": XV}, fetch_list=[h] + names)
            steps.append([_r(o) for o in outs])
        res[str(dim)] = [names, shapes, steps]
    return res


def case_norm_and_prelu_layers(paddle):
    """static.nn.group_norm (with and without its parameters: Paddle 3.0 creates them only when
    param_attr / bias_attr are given), instance_norm (also 2-D) and prelu in its three modes:
    one SGD step of sum(y * cos(y)); y, x@GRAD and the parameters after the step. Paddle 3.0.0's
    x@GRAD of group_norm without a scale is not the derivative (its kernel drops a term), so
    there only y is compared."""
    xv = np.random.RandomState(5).uniform(-2, 2, (2, 4, 3, 2)).astype(np.float32)
    res = {}
    for what in ("group_norm", "group_norm_affine", "instance_norm", "instance_norm_2d", "prelu_all",
                 "prelu_channel", "prelu_element", "prelu_nhwc"):
        main, startup = _programs(paddle)
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", [None, 4, 3, 2], "float32")
            x.stop_gradient = False
            if what.startswith("group_norm"):
                attr = True if what.endswith("affine") else None
                y = paddle.static.nn.group_norm(x, groups=2, epsilon=1e-3, param_attr=attr, bias_attr=attr)
            elif what == "instance_norm":
                y = paddle.static.nn.instance_norm(x)
            elif what == "instance_norm_2d":
                y = paddle.static.nn.instance_norm(paddle.reshape(x, [-1, 24]) * 1.0)
            elif what == "prelu_nhwc":
                y = paddle.static.nn.prelu(x, "channel", data_format="NHWC")
            else:
                y = paddle.static.nn.prelu(x, what.split("_")[1])
            loss = paddle.sum(y * paddle.cos(y))
            paddle.optimizer.SGD(0.5).minimize(loss)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        names = [p.name for p in main.all_parameters()]
        outs = exe.run(main, feed={"x": xv}, fetch_list=[y, "x@GRAD"] + names)
        if what == "group_norm":
            outs = outs[:1]
        res[what] = [names, [list(p.shape) for p in main.all_parameters()], [_r(o) for o in outs]]
    return res


def case_to_tensor_and_name_scope(paddle):
    """Static-mode to_tensor: a constant of the graph, its dtype as Paddle picks it (values
    flattened: Paddle's scalars are 0-D, psjob's [1]); and name_scope's op_namescope."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        data = (3, 2.5, [1, 2], [[1.5, 2.0]], np.array([1, 2], np.int32), True, np.float64(3.0))
        consts = [paddle.to_tensor(d) for d in data] + [paddle.to_tensor([1, 2], dtype="float32",
                                                                           stop_gradient=False)]
        x = paddle.static.data("x", [None, 1], "float32")
        with paddle.static.name_scope("s1"):
            a = x + 1.0
            with paddle.static.name_scope("s2"):
                b = a * 2.0
        with paddle.static.name_scope("s1"):
            c = paddle.exp(b)
        d = paddle.sqrt(c)
    exe = paddle.static.Executor(paddle.CPUPlace())
    values = exe.run(main, feed={"x": np.ones((2, 1), np.float32)}, fetch_list=consts + [d])
    scopes = {op.type: op.attr("op_namescope") for op in main.global_block().ops if op.type != "assign_value"}
    return {"dtypes": [str(t.dtype).replace("paddle.", "") for t in consts],
            "stop_gradient": [t.stop_gradient for t in consts],
            "values": [np.asarray(v, np.float64).reshape(-1).round(5).tolist() for v in values],
            "scopes": {k: v for k, v in scopes.items() if v not in (None, "/")}}


def case_bilinear_tensor_product(paddle):
    """static.nn.bilinear_tensor_product with tanh: one SGD step; out, both inputs' gradients
    and the parameters after the step."""
    rng = np.random.RandomState(2)
    xv, yv = rng.uniform(-1, 1, (3, 4)).astype(np.float32), rng.uniform(-1, 1, (3, 2)).astype(np.float32)
    w0 = rng.uniform(-1, 1, (5, 4, 2)).astype(np.float32)
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 4], "float32")
        y = paddle.static.data("y", [None, 2], "float32")
        x.stop_gradient = y.stop_gradient = False
        out = paddle.static.nn.bilinear_tensor_product(
            x, y, 5, act="tanh", param_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Assign(w0)),
            bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.1)))
        paddle.optimizer.SGD(0.1).minimize(paddle.sum(out * out))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    names = [p.name for p in main.all_parameters()]
    outs = exe.run(main, feed={"x": xv, "y": yv}, fetch_list=[out, "x@GRAD", "y@GRAD"] + names)
    return [names, [list(p.shape) for p in main.all_parameters()], [_r(o) for o in outs]]


def case_creation_names(paddle):
    """The names of paddle.full / ones / zeros / full_like / ones_like outputs in a fresh Program."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        a = paddle.full([2], 3, "int64")
        b = paddle.full([2], 1.0)
        c = paddle.ones([2])
        d = paddle.zeros([1])
        e = paddle.full_like(a, 2)
        f = paddle.ones_like(b)
        g = paddle.full([2], 3, "int64")
    return [v.name for v in (a, b, c, d, e, f, g)]


CASES = {name[5:]: fn for name, fn in dict(globals()).items() if name.startswith("case_")}


def run(paddle, case):
    return CASES[case](paddle)


# Paddle 3.0.0's run(paddle, case) for each case.
PADDLE300 = {'bilinear_tensor_product': [['bilinear_tensor_product_0.w_0', 'bilinear_tensor_product_0.b_0'],
                             [[5, 4, 2], [1, 5]],
                             [[[0.1337, -0.29011, 0.56663, 0.27752, -0.12517],
                               [0.64908, 0.18283, -0.301, 0.14214, 0.19629],
                               [-0.16054, 0.41124, -0.17388, -0.18628, 0.11281]],
                              [[-0.62568, -0.65314, 0.42123, -0.3677], [-1.03948, 0.0076, -0.79139, 0.75374],
                               [-0.60239, -0.49207, 0.17264, -0.01176]],
                              [[-1.07295, 0.17002], [-0.24663, 1.14707], [0.71994, -0.19964]],
                              [[[0.67424, -0.83365], [-0.03412, -0.85404], [-0.16449, -0.78177],
                                [-0.73556, 0.18334]],
                               [[-0.52717, -0.7834], [-0.50757, -0.29524], [-0.09318, -0.58427],
                                [0.28834, -0.03881]],
                               [[-0.00079, -0.23077], [0.53455, 0.15157], [-0.64362, 0.38275],
                                [0.91498, 0.00772]],
                               [[0.76125, -0.3139], [0.08095, -0.138], [-0.127, 0.56227], [0.07204, 0.90385]],
                               [[0.09325, -0.83257], [-0.25097, 0.70826], [-0.20713, -0.93274],
                                [-0.49855, -0.87092]]],
                              [[0.02989, 0.04946, 0.11153, 0.05688, 0.06462]]]],
 'creation_names': ['fill_constant_1.tmp_0', 'fill_constant_3.tmp_0', 'fill_constant_5.tmp_0',
                    'fill_constant_7.tmp_0', 'full_like_0.tmp_0', 'full_like_1.tmp_0',
                    'fill_constant_9.tmp_0'],
 'ema': {'log': [['before', [[[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]], [0.1, 0.1]]],
                 ['applied', [[[0.41188, 0.41188], [0.36625, 0.36625], [0.225, 0.225]], [0.00125, 0.00125]],
                  [[1.82063, 1.82063], [0.29094, 0.29094]]],
                 ['restored', [[[0.41188, 0.41188], [0.36625, 0.36625], [0.225, 0.225]], [0.00125, 0.00125]]],
                 ['applied',
                  [[[0.30845, 0.30845], [0.18995, 0.18995], [-0.09293, -0.09293]], [-0.10427, -0.10427]],
                  [[0.3053, 0.3053], [-0.32585, -0.32585]]],
                 ['restored',
                  [[[0.21536, 0.21536], [0.03128, 0.03128], [-0.37906, -0.37906]], [-0.10427, -0.10427]]],
                 ['applied',
                  [[[0.37807, 0.37807], [0.22037, 0.22037], [0.14314, 0.14314]], [0.01652, 0.01652]],
                  [[1.26475, 1.26475], [0.27147, 0.27147]]],
                 ['restored',
                  [[[0.49712, 0.49712], [0.27238, 0.27238], [0.54682, 0.54682]], [0.01652, 0.01652]]],
                 ['kept', [[[0.37807, 0.37807], [0.22037, 0.22037], [0.14314, 0.14314]], [0.01652, 0.01652]]],
                 ['restored',
                  [[[0.49712, 0.49712], [0.27238, 0.27238], [0.54682, 0.54682]], [0.01652, 0.01652]]]],
         'vars': ['@EMA_STEP_COUNTER@', 'fc_0.w_0.ema_tmp_0', 'fc_0.w_0_ema_0', 'scheduled_ema_decay_rate']},
 'gradients': {'again': [[[2.0, -8.0, 24.0], [2.0, -8.0, 24.0]],
                         [[0.82436, -10.71828, 56.96338], [7.28403, -30.78694, 128.15485]],
                         [[1.64872, 6.71828, 22.48169], [2.03403, 4.60653, 22.71828]]],
               'one': [[[2.0, -8.0, 24.0], [2.0, -8.0, 24.0]], [[1.0, 4.0, 9.0], [0.25, 1.0, 4.0]]],
               'two': [[[0.82436, -10.71828, 56.96338], [7.28403, -30.78694, 128.15485]],
                       [[1.64872, 6.71828, 22.48169], [2.03403, 4.60653, 22.71828]]]},
 'need_clip': [[[0.835, 0.835], [0.77, 0.77], [0.48, 0.48]], [0.995, 0.995]],
 'norm_and_prelu_layers': {'group_norm': [[], [],
                                          [[[[[-0.96999, 1.35897], [-1.02482, 1.53085], [-0.01355, 0.42921]],
                                             [[0.98265, 0.09417], [-0.70143, -1.09302], [-1.47708, 0.88404]],
                                             [[0.09044, -1.31135], [2.26311, -0.73787], [-0.04367, -0.62893]],
                                             [[1.01909, 0.77662], [0.87614, -0.77882], [-0.68537, -0.8394]]],
                                            [[[-0.27673, -0.81668], [-0.75353, 1.59678], [1.58587, -0.6864]],
                                             [[-1.16954, -0.63888], [0.81928, 1.05384], [-1.17359, 0.45958]],
                                             [[-1.66579, -0.1619], [0.20197, 1.21414], [-0.91226, 0.67816]],
                                             [[0.87715, 1.03012], [-1.66411, -0.29649],
                                              [1.20198, -0.50296]]]]]],
                           'group_norm_affine': [['group_norm_0.w_0', 'group_norm_0.b_0'], [[4], [4]],
                                                 [[[[[-0.96999, 1.35897], [-1.02482, 1.53085],
                                                     [-0.01355, 0.42921]],
                                                    [[0.98265, 0.09417], [-0.70143, -1.09302],
                                                     [-1.47708, 0.88404]],
                                                    [[0.09044, -1.31135], [2.26311, -0.73787],
                                                     [-0.04367, -0.62893]],
                                                    [[1.01909, 0.77662], [0.87614, -0.77882],
                                                     [-0.68537, -0.8394]]],
                                                   [[[-0.27673, -0.81668], [-0.75353, 1.59678],
                                                     [1.58587, -0.6864]],
                                                    [[-1.16954, -0.63888], [0.81928, 1.05384],
                                                     [-1.17359, 0.45958]],
                                                    [[-1.66579, -0.1619], [0.20197, 1.21414],
                                                     [-0.91226, 0.67816]],
                                                    [[0.87715, 1.03012], [-1.66411, -0.29649],
                                                     [1.20198, -0.50296]]]],
                                                  [[[[-0.08724, -0.75093], [-0.19957, -1.07467],
                                                     [1.07384, 0.85695]],
                                                    [[-0.0039, 1.06814], [0.41778, -0.34179],
                                                     [-1.14051, 0.18189]],
                                                    [[1.31052, -1.90471], [-1.7131, -0.04846],
                                                     [1.25134, 0.25072]],
                                                    [[0.15206, 0.65894], [0.46139, -0.16774],
                                                     [0.0992, -0.35017]]],
                                                   [[[0.71623, -0.021], [0.08811, -0.60738],
                                                     [-0.59463, 0.19872]],
                                                    [[-0.69022, 0.27327], [0.43159, 0.12459],
                                                     [-0.69819, 0.77891]],
                                                    [[-0.83246, 0.84638], [0.75626, -0.71455],
                                                     [0.21635, 0.23036]],
                                                    [[-0.09443, -0.36958], [-0.83055, 0.80721],
                                                     [-0.69162, 0.67665]]]],
                                                  [5.37382, -0.72819, 2.06737, 0.81736],
                                                  [1.58203, 0.75361, 0.56112, 0.53517]]],
                           'instance_norm': [[], [],
                                             [[[[[-1.18063, 1.13304], [-1.2351, 1.30379],
                                                 [-0.23047, 0.20938]],
                                                [[1.27337, 0.33143], [-0.51205, -0.92721],
                                                 [-1.33437, 1.16883]],
                                                [[0.13342, -1.09849], [2.04279, -0.59451],
                                                 [0.01556, -0.49877]],
                                                [[1.14911, 0.85819], [0.9776, -1.00811],
                                                 [-0.89598, -1.08081]]],
                                               [[[-0.36221, -0.87026], [-0.81085, 1.40063],
                                                 [1.39037, -0.74768]],
                                                [[-1.15388, -0.57694], [1.00838, 1.2634],
                                                 [-1.15827, 0.61731]],
                                                [[-1.62177, -0.0565], [0.32221, 1.3757], [-0.83749, 0.81785]],
                                                [[0.75004, 0.89913], [-1.72684, -0.39387],
                                                 [1.06664, -0.5951]]]],
                                              [[[[-0.46415, -0.3251], [-0.57674, -0.67106],
                                                 [1.00845, 1.0286]],
                                                [[-0.57029, 1.03655], [0.76764, 0.01134],
                                                 [-0.89554, -0.34971]],
                                                [[1.11277, -1.53014], [-0.84947, -0.0066],
                                                 [1.04434, 0.22909]],
                                                [[-0.49432, 0.45724], [0.07878, -0.05403],
                                                 [0.31089, -0.29857]]],
                                               [[[0.54539, -0.25477], [-0.14384, -0.06401],
                                                 [-0.05287, -0.0299]],
                                                [[-0.30823, 0.62822], [-0.05377, -0.52045],
                                                 [-0.31629, 0.57052]],
                                                [[-0.8828, 0.87568], [0.69669, -1.01103], [0.2892, 0.03226]],
                                                [[0.06641, -0.18838], [-0.76259, 0.76276],
                                                 [-0.4961, 0.6179]]]]]],
                           'instance_norm_2d': [[], [],
                                                [[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                                                   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                                                   0.0],
                                                  [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                                                   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                                                   0.0]],
                                                 [[[[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                                                   [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                                                   [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                                                   [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]],
                                                  [[[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                                                   [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                                                   [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                                                   [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]]]]],
                           'prelu_all': [['prelu_0.w_0'], [[1]],
                                         [[[[[-0.27801, 1.48293], [-0.29328, 1.67444], [-0.01159, 0.44698]],
                                            [[1.06363, 0.07367], [-0.2032, -0.31228], [-0.41926, 0.95376]],
                                            [[-0.05869, -0.34169], [1.51975, -0.22591], [-0.08576, -0.20392]],
                                            [[0.51515, 0.31935], [0.39972, -0.23418], [-0.21531, -0.24641]]],
                                           [[[-0.17244, -0.35584], [-0.33439, 1.85572], [1.84091, -0.31159]],
                                            [[-0.47569, -0.29544], [0.79937, 1.11806], [-0.47707, 0.31065]],
                                            [[-0.49836, 0.06189], [0.55918, 1.9425], [-0.2409, 1.20999]],
                                            [[1.48193, 1.691], [-0.49779, -0.03051], [1.92587, -0.10106]]]],
                                          [[[[0.22133, -1.38945], [0.21813, -1.76892], [0.24995, 0.70856]],
                                            [[-0.44405, 0.99186], [0.2346, 0.21392], [0.18568, -0.19927]],
                                            [[0.24871, 0.20692], [-1.46674, 0.231], [0.24724, 0.2345]],
                                            [[0.61642, 0.84918], [0.76562, 0.22959], [0.23273, 0.22742]]],
                                           [[[0.2389, 0.20335], [0.20872, -2.06199], [-2.041, 0.21408]],
                                            [[0.16778, 0.21766], [0.12407, -0.56799], [0.16732, 0.85718]],
                                            [[0.16004, 0.99426], [0.55105, -2.17305], [0.22841, -0.77905]],
                                            [[-1.38734, -1.79871], [0.16024, 0.24965], [-2.1534, 0.24618]]]],
                                          [11.51546]]],
                           'prelu_channel': [['prelu_0.w_0'], [[1, 4, 1, 1]],
                                             [[[[[-0.27801, 1.48293], [-0.29328, 1.67444],
                                                 [-0.01159, 0.44698]],
                                                [[1.06363, 0.07367], [-0.2032, -0.31228],
                                                 [-0.41926, 0.95376]],
                                                [[-0.05869, -0.34169], [1.51975, -0.22591],
                                                 [-0.08576, -0.20392]],
                                                [[0.51515, 0.31935], [0.39972, -0.23418],
                                                 [-0.21531, -0.24641]]],
                                               [[[-0.17244, -0.35584], [-0.33439, 1.85572],
                                                 [1.84091, -0.31159]],
                                                [[-0.47569, -0.29544], [0.79937, 1.11806],
                                                 [-0.47707, 0.31065]],
                                                [[-0.49836, 0.06189], [0.55918, 1.9425], [-0.2409, 1.20999]],
                                                [[1.48193, 1.691], [-0.49779, -0.03051],
                                                 [1.92587, -0.10106]]]],
                                              [[[[0.22133, -1.38945], [0.21813, -1.76892],
                                                 [0.24995, 0.70856]],
                                                [[-0.44405, 0.99186], [0.2346, 0.21392], [0.18568, -0.19927]],
                                                [[0.24871, 0.20692], [-1.46674, 0.231], [0.24724, 0.2345]],
                                                [[0.61642, 0.84918], [0.76562, 0.22959], [0.23273, 0.22742]]],
                                               [[[0.2389, 0.20335], [0.20872, -2.06199], [-2.041, 0.21408]],
                                                [[0.16778, 0.21766], [0.12407, -0.56799], [0.16732, 0.85718]],
                                                [[0.16004, 0.99426], [0.55105, -2.17305],
                                                 [0.22841, -0.77905]],
                                                [[-1.38734, -1.79871], [0.16024, 0.24965],
                                                 [-2.1534, 0.24618]]]],
                                              [[[[3.2776]], [[3.58014]], [[2.98034]], [[2.42739]]]]]],
                           'prelu_element': [['prelu_0.w_0'], [[1, 4, 3, 2]],
                                             [[[[[-0.27801, 1.48293], [-0.29328, 1.67444],
                                                 [-0.01159, 0.44698]],
                                                [[1.06363, 0.07367], [-0.2032, -0.31228],
                                                 [-0.41926, 0.95376]],
                                                [[-0.05869, -0.34169], [1.51975, -0.22591],
                                                 [-0.08576, -0.20392]],
                                                [[0.51515, 0.31935], [0.39972, -0.23418],
                                                 [-0.21531, -0.24641]]],
                                               [[[-0.17244, -0.35584], [-0.33439, 1.85572],
                                                 [1.84091, -0.31159]],
                                                [[-0.47569, -0.29544], [0.79937, 1.11806],
                                                 [-0.47707, 0.31065]],
                                                [[-0.49836, 0.06189], [0.55918, 1.9425], [-0.2409, 1.20999]],
                                                [[1.48193, 1.691], [-0.49779, -0.03051],
                                                 [1.92587, -0.10106]]]],
                                              [[[[0.22133, -1.38945], [0.21813, -1.76892],
                                                 [0.24995, 0.70856]],
                                                [[-0.44405, 0.99186], [0.2346, 0.21392], [0.18568, -0.19927]],
                                                [[0.24871, 0.20692], [-1.46674, 0.231], [0.24724, 0.2345]],
                                                [[0.61642, 0.84918], [0.76562, 0.22959], [0.23273, 0.22742]]],
                                               [[[0.2389, 0.20335], [0.20872, -2.06199], [-2.041, 0.21408]],
                                                [[0.16778, 0.21766], [0.12407, -0.56799], [0.16732, 0.85718]],
                                                [[0.16004, 0.99426], [0.55105, -2.17305],
                                                 [0.22841, -0.77905]],
                                                [[-1.38734, -1.79871], [0.16024, 0.24965],
                                                 [-2.1534, 0.24618]]]],
                                              [[[[1.0718, 0.82887], [1.32012, 0.25], [0.27317, 0.78364]],
                                                [[0.8885, 0.76446], [0.63137, 0.78443], [1.51137, 0.25]],
                                                [[1.00483, 0.81563], [0.25, 0.66748], [0.85984, 0.63255]],
                                                [[0.25, 0.25], [0.88812, 0.74106], [0.65087, 0.89733]]]]]],
                           'prelu_nhwc': [['prelu_0.w_0'], [[1, 1, 1, 2]],
                                          [[[[[-0.27801, 1.48293], [-0.29328, 1.67444], [-0.01159, 0.44698]],
                                             [[1.06363, 0.07367], [-0.2032, -0.31228], [-0.41926, 0.95376]],
                                             [[-0.05869, -0.34169], [1.51975, -0.22591],
                                              [-0.08576, -0.20392]],
                                             [[0.51515, 0.31935], [0.39972, -0.23418], [-0.21531, -0.24641]]],
                                            [[[-0.17244, -0.35584], [-0.33439, 1.85572], [1.84091, -0.31159]],
                                             [[-0.47569, -0.29544], [0.79937, 1.11806], [-0.47707, 0.31065]],
                                             [[-0.49836, 0.06189], [0.55918, 1.9425], [-0.2409, 1.20999]],
                                             [[1.48193, 1.691], [-0.49779, -0.03051], [1.92587, -0.10106]]]],
                                           [[[[0.22133, -1.38945], [0.21813, -1.76892], [0.24995, 0.70856]],
                                             [[-0.44405, 0.99186], [0.2346, 0.21392], [0.18568, -0.19927]],
                                             [[0.24871, 0.20692], [-1.46674, 0.231], [0.24724, 0.2345]],
                                             [[0.61642, 0.84918], [0.76562, 0.22959], [0.23273, 0.22742]]],
                                            [[[0.2389, 0.20335], [0.20872, -2.06199], [-2.041, 0.21408]],
                                             [[0.16778, 0.21766], [0.12407, -0.56799], [0.16732, 0.85718]],
                                             [[0.16004, 0.99426], [0.55105, -2.17305], [0.22841, -0.77905]],
                                             [[-1.38734, -1.79871], [0.16024, 0.24965], [-2.1534, 0.24618]]]],
                                           [[[[6.85001, 4.91545]]]]]]},
 'serialize': {'got': [[-0.2, -0.2], [1.10141, 1.53288]],
               'ops': ['elementwise_add', 'elementwise_add', 'mul', 'mul', 'relu'],
               'params_len': 192,
               'params_sha256': 'd8204771e269e078faaade29608e192aeabbacf57247014098c19277c398095f',
               'want': [[-0.2, -0.2], [1.10141, 1.53288]]},
 'to_tensor_and_name_scope': {'dtypes': ['int64', 'float32', 'int64', 'float32', 'int32', 'bool', 'float64',
                                         'float32'],
                              'scopes': {'exp': '/s1_1/', 'scale': '/s1/s2/'},
                              'stop_gradient': [True, True, True, True, True, True, True, False],
                              'values': [[3.0], [2.5], [1.0, 2.0], [1.5, 2.0], [1.0, 2.0], [1.0], [3.0],
                                         [1.0, 2.0], [7.38906, 7.38906]]},
 'variable_methods': {'shapes': [[3, 2], [2, 3], True],
                      'values': [[[1.0, 0.5], [2.0, -1.0], [3.0, 2.0]], [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]],
                                 [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], [6.0],
                                 [[3.0, 4.0, 5.0], [2.5, 1.0, 4.0]]]},
 'variable_text': {'array': 'DENSE_TENSOR_ARRAY)',
                   'attrs': ['x@GRAD', 2, 2, 2, True, False, [1, 1, 2, 4, 8, 2, 4, 8]],
                   'str': ['var x : DENSE_TENSOR.shape(-1, 3).dtype(float32).stop_gradient(True)',
                           'var x : DENSE_TENSOR.shape(-1, 3).dtype(float32).stop_gradient(True)',
                           'persist trainable param fc_0.w_0 : DENSE_TENSOR.shape(3, '
                           '2).dtype(float32).stop_gradient(False)',
                           'persist param frozen : DENSE_TENSOR.shape(2,).dtype(float32).stop_gradient(True)',
                           'persist var gv : DENSE_TENSOR.shape(1,).dtype(float32).stop_gradient(True)',
                           'var ids : DENSE_TENSOR.shape(4,).dtype(int64).stop_gradient(True)'],
                   'to_string': ['name: "x"\n'
                                 'type {\n'
                                 '  type: DENSE_TENSOR\n'
                                 '  dense_tensor {\n'
                                 '    tensor {\n'
                                 '      data_type: FP32\n'
                                 '      dims: -1\n'
                                 '      dims: 3\n'
                                 '    }\n'
                                 '    legacy_lod_level: 0\n'
                                 '  }\n'
                                 '}\n'
                                 'persistable: false\n'
                                 'need_check_feed: true\n'
                                 'stop_gradient: true\n',
                                 'name: "fc_0.w_0"\n'
                                 'type {\n'
                                 '  type: DENSE_TENSOR\n'
                                 '  dense_tensor {\n'
                                 '    tensor {\n'
                                 '      data_type: FP32\n'
                                 '      dims: 3\n'
                                 '      dims: 2\n'
                                 '    }\n'
                                 '  }\n'
                                 '}\n'
                                 'persistable: true\n'
                                 'is_parameter: true\n'
                                 'stop_gradient: false\n'
                                 'error_clip: None\n'
                                 'trainable: True\n'
                                 "optimize_attr: {'learning_rate': 1.0}\n"
                                 'regularizer: None\n'
                                 'do_model_average: True\n'
                                 'need_clip: True\n']},
 'weight_norm': {'0': [['wn_g', 'wn_v'], [[3, 1], [3, 2]],
                       [[[[16.0, 14.0], [8.0, -4.0]], [[4.47214], [6.08276], [4.47214]],
                         [[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]]]]],
                 '1': [['wn_g', 'wn_v'], [[1, 2], [3, 2]],
                       [[[[16.0, 14.0], [8.0, -4.0]], [[4.58258, 7.48331]],
                         [[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]]]]],
                 'None': [['wn_g', 'wn_v'], [[1, 1], [3, 2]],
                          [[[[8.0, 7.0], [4.0, -2.0]], [[2.87181]],
                            [[0.84545, -2.99091], [0.07273, 3.23636], [1.09091, 0.49545]]],
                           [[[2.63607, 3.07167], [1.56534, -2.31289]], [[2.45075]],
                            [[0.78715, -3.21774], [-0.03779, 3.15634], [0.8108, 0.38135]]]]]}}


def _close(got, want, path="run"):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), path
        for k in want:
            _close(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), f"{path}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"{path}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=2e-5, abs=2e-5), path
    else:
        assert got == want, path


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_paddle(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _close(run(paddle, case), PADDLE300[case])


def test_gradients_refuses_mismatched_target_gradients():
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32")
        x.stop_gradient = False
        y = x * 2.0
        g = paddle.static.data("g", [None, 4], "float32")
        with pytest.raises(ValueError, match="1 target_gradients for 2 targets"):
            paddle.static.gradients([y, y], [x], target_gradients=[g])
        with pytest.raises(ValueError, match="shape"):
            paddle.static.gradients([y], [x], target_gradients=[g])
        with pytest.raises(TypeError, match="inputs must be"):
            paddle.static.gradients([y], ["x"])


def test_serialize_family_refuses_bad_input(tmp_path):
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x, out, _ = _inference_net(paddle)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    with pytest.raises(ValueError, match="not a serialized Paddle program"):
        paddle.static.deserialize_program(b"{not a program}")
    with pytest.raises(TypeError, match="must be bytes"):
        paddle.static.deserialize_program("text")
    with pytest.raises(TypeError, match="feed_vars must be Variables"):
        paddle.static.serialize_program(["x"], [out], program=main)
    params = paddle.static.serialize_persistables([x], [out], exe, program=main)
    with pytest.raises(ValueError, match="the file ends"):
        paddle.static.deserialize_persistables(main, params[:-40], exe)
    with pytest.raises(ValueError, match="content must be bytes"):
        paddle.static.save_to_file(str(tmp_path / "f"), "text")
    with pytest.raises(TypeError, match="unexpected keyword"):
        paddle.static.normalize_program(main, [x], [out], prune=False)


def test_ema_refuses_bad_arguments():
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        with pytest.raises(ValueError, match="no parameters"):
            paddle.static.ExponentialMovingAverage(0.9)
        x = paddle.static.data("x", [None, 3], "float32")
        paddle.static.nn.fc(x, 2)
        with pytest.raises(ValueError, match="decay must be"):
            paddle.static.ExponentialMovingAverage(1.5)
        with pytest.raises(TypeError, match="thres_steps must be"):
            paddle.static.ExponentialMovingAverage(0.9, thres_steps=100)


def test_ema_thres_steps_caps_the_decay():
    """Paddle 3.0.0's own thres_steps path fails (its cond returns an ndarray); the documented
    rule min(decay, (t + 1) / (t + 10)) is checked here on its own."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32")
        paddle.static.nn.fc(x, 2)
        step = paddle.static.create_global_var([1], 0, "int64", persistable=True, name="mystep")
        paddle.increment(step)
        ema = paddle.static.ExponentialMovingAverage(0.9, thres_steps=step)
        ema.update()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    seen = []
    for _ in range(3):
        (d,) = exe.run(main, feed={"x": XV}, fetch_list=["scheduled_ema_decay_rate"])
        seen.append(float(np.asarray(d).reshape(-1)[0]))
    assert seen == pytest.approx([2 / 11, 3 / 12, 4 / 13])


# What Paddle 3.0.0 wrote to stdout for test_print_and_tensor_text's program (one run), and
# print() of the fetched LoDTensor and of a float64 tensor without LoD.
PADDLE300_PRINTED = """\
Variable: x
  - message: hello
  - lod: {{0, 1, 2}}
  - place: Place(cpu)
  - shape: [2, 3]
  - layout: NCHW
  - dtype: float32
  - data: [0.1 2.5 -3 1e-07]
  - place: Place(cpu)
  - shape: [2, 3]
  - layout: NCHW
  - data: [0.2 5 -6 2e-07 246914 14]
Variable: i
  - lod: {}
  - place: Place(cpu)
  - layout: NCHW
  - dtype: int64
  - data: [5 -7]
Variable: x
  - message: once
  - lod: {{0, 1, 2}}
  - place: Place(cpu)
  - shape: [2, 3]
  - layout: NCHW
  - dtype: float32
  - data: [0.1 2.5 -3 1e-07 123457 7]
"""
PADDLE300_TENSORS = (
    '  - lod: {{0, 1, 2}}\n'
    '  - shape: [2, 3]\n'
    '  - layout: NCHW\n'
    '  - place: Place(cpu)\n'
    '  - dtype: float32\n'
    '  - data: [0.1 2.5 -3 1e-07 123457 7]\n'
    '  - shape: [10, 3]\n'
    '  - layout: NCHW\n'
    '  - place: Place(cpu)\n'
    '  - dtype: float64\n'
    '  - data: [0 0.142857 0.285714 0.428571 0.571429 0.714286 0.857143 1 1.14286 '
    '1.28571 1.42857 1.57143 1.71429 1.85714 2 2.14286 2.28571 2.42857 2.57143 '
    '2.71429 2.85714 3 3.14286 3.28571 3.42857 3.57143 3.71429 3.85714 4 4.14286]\n'
)


def test_print_and_tensor_text(capfd):
    """paddle.static.Print's lines and print(LoDTensor), as Paddle 3.0.0 writes them."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32", lod_level=1)
        i = paddle.static.data("i", [2], "int64")
        a = paddle.static.Print(x, message="hello", summarize=4)
        b = paddle.static.Print(x * 2.0, print_tensor_name=False, print_tensor_type=False, print_tensor_lod=False)
        c = paddle.static.Print(i, print_tensor_shape=False, summarize=-1)
        d = paddle.static.Print(x, first_n=1, message="once")
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    t = paddle.fluid.create_lod_tensor(np.array([[0.1, 2.5, -3.0], [1e-7, 123456.789, 7.0]], np.float32), [[1, 1]],
                                       paddle.CPUPlace())
    capfd.readouterr()
    r = exe.run(main, feed={"x": t, "i": np.array([5, -7], np.int64)}, fetch_list=[a, b, c, d], return_numpy=False)
    assert capfd.readouterr().out == PADDLE300_PRINTED
    print(r[0])
    print(paddle.fluid.create_lod_tensor(np.arange(30, dtype=np.float64).reshape(10, 3) / 7, [], paddle.CPUPlace()))
    assert capfd.readouterr().out == PADDLE300_TENSORS


def test_fetched_int64_prints_as_paddles():
    """Paddle 3.0.0's Executor returns int64 as C long long: repr() shows dtype=int64."""
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        i = paddle.full([1], 10, "int64")
        f = paddle.full([2], 1.5, "float32")
    (got_i, got_f) = paddle.static.Executor(paddle.CPUPlace()).run(main, fetch_list=[i, f])
    assert repr(got_i) == "array([10], dtype=int64)" and got_i.dtype == np.int64
    assert repr(got_f) == "array([1.5, 1.5], dtype=float32)"


def test_weight_norm_refuses_a_dim_outside_the_weight():
    main, startup = _programs(paddle)
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32")
        with pytest.raises(ValueError, match="dim must be None or an axis"):
            paddle.static.nn.fc(x, 2, weight_attr=paddle.static.WeightNormParamAttr(dim=2))
