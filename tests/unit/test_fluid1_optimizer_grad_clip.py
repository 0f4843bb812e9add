"""Fluid 1.8's optimizer grad_clip argument (fluid.optimizer.SGD(..., grad_clip=...)), as
PaddlePaddle/models' dcn and din use it: the clip applies to every gradient and overrides
set_gradient_clip (Fluid 1.8 API docs, fluid.optimizer and fluid.clip.GradientClipByGlobalNorm).
Expected values by numpy (w -= lr * g * min(1, clip_norm / ||g||)) and, pinned below, what Paddle
1.8.5 gives for the same two programs (fluid.Executor on CPU)."""
import numpy as np
import pytest

import psjob.fluid as fluid

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32")


def _step(make_optimizer, value_clip=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.layers.fc(x, size=1, bias_attr=False,
                            param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.5)))
        loss = fluid.layers.reduce_sum(y)
        if value_clip is not None:
            fluid.clip.set_gradient_clip(value_clip)
        make_optimizer().minimize(loss)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        exe.run(main, feed={"x": X})
        return np.array(scope.find_var("w").get_tensor()).reshape(-1)


def test_global_norm_clip_given_to_the_optimizer():
    g = X.sum(0)  # d(sum(x @ w)) / dw
    scale = min(1.0, 2.0 / np.linalg.norm(g))
    got = _step(lambda: fluid.optimizer.SGD(
        learning_rate=0.1, grad_clip=fluid.clip.GradientClipByGlobalNorm(clip_norm=2.0)))
    np.testing.assert_allclose(got, 0.5 - 0.1 * g * scale, rtol=1e-6)
    np.testing.assert_allclose(got, [0.41967806, 0.38754928, 0.35542053], rtol=1e-6)  # Paddle 1.8.5


def test_optimizer_clip_overrides_set_gradient_clip():
    g = X.sum(0)
    got = _step(lambda: fluid.optimizer.Adam(learning_rate=0.1, grad_clip=fluid.clip.GradientClipByNorm(1.0)),
                value_clip=fluid.clip.GradientClipByValue(0.01))
    # Adam's first step moves each weight by about lr * sign(g): clipped by norm, not to 0.01.
    gc = g / np.linalg.norm(g)
    m, v = 0.1 * gc, 0.001 * gc * gc
    lr_t = 0.1 * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(got, 0.5 - lr_t * m / (np.sqrt(v) + 1e-8), rtol=1e-5)
    # Paddle 1.8.5 (it forms 1 - beta2 in float32: rounding of a few 1e-6 of the step)
    np.testing.assert_allclose(got, [0.40000007, 0.40000004, 0.40000004], rtol=1e-5)


def test_grad_clip_must_be_a_clip():
    with pytest.raises(TypeError, match="grad_clip must be a fluid.clip.GradientClipBy"):
        fluid.optimizer.SGD(learning_rate=0.1, grad_clip=5.0)


def test_an_empty_filelist_is_a_pass_over_nothing(tmp_path):
    """Paddle trains nothing on set_filelist([]) (dcn's last, partial epoch can sample no
    file); never calling set_filelist stays an error."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 1], dtype="int64", lod_level=1)
        loss = fluid.layers.mean(fluid.layers.cast(x, "float32"))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    dataset = fluid.DatasetFactory().create_dataset()
    dataset.set_use_var([x])
    with pytest.raises(ValueError, match="set_filelist"):
        exe.train_from_dataset(program=main, dataset=dataset, fetch_list=[loss])
    dataset.set_filelist([])
    exe.train_from_dataset(program=main, dataset=dataset, fetch_list=[loss])
