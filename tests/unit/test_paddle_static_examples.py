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
    for which in ("one", "two"):
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


CASES = {name[5:]: fn for name, fn in dict(globals()).items() if name.startswith("case_")}


def run(paddle, case):
    return CASES[case](paddle)


# Paddle 3.0.0's run(paddle, case) for each case.
PADDLE300 = {'ema': {'log': [['before', [[[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]], [0.1, 0.1]]],
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
 'gradients': {'one': [[[2.0, -8.0, 24.0], [2.0, -8.0, 24.0]], [[1.0, 4.0, 9.0], [0.25, 1.0, 4.0]]],
               'two': [[[0.82436, -10.71828, 56.96338], [7.28403, -30.78694, 128.15485]],
                       [[1.64872, 6.71828, 22.48169], [2.03403, 4.60653, 22.71828]]]},
 'need_clip': [[[0.835, 0.835], [0.77, 0.77], [0.48, 0.48]], [0.995, 0.995]],
 'serialize': {'got': [[-0.2, -0.2], [1.10141, 1.53288]],
               'ops': ['elementwise_add', 'elementwise_add', 'mul', 'mul', 'relu'],
               'params_len': 192,
               'params_sha256': 'd8204771e269e078faaade29608e192aeabbacf57247014098c19277c398095f',
               'want': [[-0.2, -0.2], [1.10141, 1.53288]]},
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
