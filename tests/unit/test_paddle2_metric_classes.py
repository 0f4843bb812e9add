"""paddle.metric's classes (Auc, Precision, Recall, Accuracy with its compute ops) over fetched
values, against Paddle 3.0.0 (the same script under /tmp/probe/vpaddle300, FLAGS_enable_pir_api=0,
printed and pasted); and the paddle.static / paddle.utils names PaddleRec's static PS helpers use."""
import numpy as np
import pytest

import psjob as paddle

paddle.enable_static()


def test_metric_classes_accumulate_as_paddles():
    rs = np.random.RandomState(3)
    p = rs.rand(50).astype("float32")
    y = (rs.rand(50) < p).astype("int64").reshape(-1, 1)
    auc = paddle.metric.Auc()
    auc.update(np.stack([1 - p, p], 1), y)
    auc.update(np.stack([1 - p[:7], p[:7]], 1), y[:7])
    precision, recall = paddle.metric.Precision(), paddle.metric.Recall()
    precision.update(p, y.reshape(-1))
    recall.update(p, y.reshape(-1))
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        x = paddle.static.data("x", [-1, 4], "float32")
        label = paddle.static.data("l", [-1, 1], "int64")
        acc = paddle.metric.Accuracy(topk=(1, 2))
        correct = acc.compute(x, label)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    xv, lv = rs.rand(6, 4).astype("float32"), rs.randint(0, 4, (6, 1)).astype("int64")
    cv, = exe.run(main, feed={"x": xv, "l": lv}, fetch_list=[correct])
    assert cv.shape == (6, 2) and acc.name() == ["acc_top1", "acc_top2"]
    assert acc.update(cv) == pytest.approx([1 / 3, 1 / 3])
    # Paddle 3.0.0: 0.8647642679900744 0.7619047619047619 0.7619047619047619
    assert auc.accumulate() == pytest.approx(0.8647642679900744, abs=1e-15)
    assert precision.accumulate() == pytest.approx(0.7619047619047619)
    assert recall.accumulate() == pytest.approx(0.7619047619047619)
    auc.reset()
    assert auc.accumulate() == 0.0
    with pytest.raises(ValueError, match="numpy ndarray"):
        paddle.metric.Precision().update("0.3", "1")


def test_static_io_and_utils_names():
    import psjob.fluid as fluid
    assert paddle.static.io.save_vars is fluid.io.save_vars and paddle.static.load_vars is fluid.io.load_vars
    assert paddle.static.io.is_persistable is fluid.io.is_persistable
    assert paddle.static.Scope is fluid.core.Scope
    paddle.utils.require_version("1.6.0")


def test_module_paths_paddles_static_ps_helpers_import():
    # PaddleRec's tools/utils: place.py sizes itself with paddle.device.cuda.device_count(),
    # static_ps/infer.py loads through paddle.distributed.io, model_util.py builds ops with
    # paddle.common_ops_import's helpers; models name layers as paddle.nn.layer.X.
    import psjob.common_ops_import as coi
    import psjob.distributed.io as dio
    import psjob.fluid as fluid
    assert paddle.device.cuda.device_count() == (paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda()
                                                 else 0)
    assert dio.load_inference_model_distributed is fluid.io.load_inference_model_distributed
    assert paddle.nn.layer.Sigmoid is paddle.nn.Sigmoid and paddle.nn.layer.AdaptiveMaxPool1D is paddle.nn.AdaptiveMaxPool1D
    with pytest.raises(AttributeError, match="no attribute 'NoSuchLayer'"):
        paddle.nn.layer.NoSuchLayer
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        x = paddle.static.data("x", [-1, 2], "float32")
        coi.check_variable_and_dtype(x, "x", ["float32", "float64"], "lod_reset")
        with pytest.raises(TypeError, match=r"The data type of 'x' in lod_reset must be \['int64'\], but received float32"):
            coi.check_variable_and_dtype(x, "x", ["int64"], "lod_reset")
        with pytest.raises(TypeError, match="The type of 'y' in lod_reset must be"):
            coi.check_type(3, "y", coi.Variable, "lod_reset")
