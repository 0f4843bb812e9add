"""Writes the reference of tests/unit/test_paddle_auc_layout.py with real Paddle 3.0.0 (legacy IR,
FLAGS_enable_pir_api=0, static mode): paddle.static.auc's statistics (names and shapes) and its
global and batch AUC over eight fixed batches for four (num_thresholds, slide_steps) settings,
the batch statistic after six batches, and `paddle.static.save` of the (100, 3) program after
four batches (auc.pdparams, auc.pdopt). Run it from this directory:

    FLAGS_enable_pir_api=0 /path/to/paddle-3.0.0/bin/python make_reference.py
"""
import json
import os

os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np  # noqa: E402
import paddle  # noqa: E402

SETTINGS = ((100, 3), (4096, 20), (100, 0), (100, 1))


def build(num_thresholds, slide_steps):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 2], "float32")
        y = paddle.static.data("y", [None, 1], "int64")
        auc, batch_auc, stats = paddle.static.auc(input=x, label=y, num_thresholds=num_thresholds,
                                                  slide_steps=slide_steps)
    return main, startup, auc, batch_auc, stats


def batches(n):
    rng = np.random.default_rng(7)
    out = []
    for _ in range(n):
        p = rng.random((50, 1)).astype("float32")
        out.append({"x": np.hstack([1 - p, p]), "y": (rng.random((50, 1)) < p).astype("int64")})
    return out


if __name__ == "__main__":
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    expected = {}
    for t, s in SETTINGS:
        main, startup, auc, batch_auc, stats = build(t, s)
        exe.run(startup)
        values = []
        for i, feed in enumerate(batches(8)):
            a, b = exe.run(main, feed=feed, fetch_list=[auc, batch_auc])
            values.append([float(np.asarray(a).reshape(-1)[0]), float(np.asarray(b).reshape(-1)[0])])
            if (t, s) == (100, 3) and i == 3:
                paddle.static.save(main, "./auc")
            if (t, s) == (100, 3) and i == 5:
                after_six = np.array(paddle.static.global_scope().find_var(stats[0].name).get_tensor())
        entry = {"names": [v.name for v in stats], "shapes": [list(v.shape) for v in stats], "auc_batch_auc": values}
        if (t, s) == (100, 3):
            entry["batch_stat_pos_after_six"] = after_six.tolist()
        expected[f"{t}/{s}"] = entry
    os.remove("auc.pdmodel")  # psjob's paddle.static.load reads the parameter files only
    with open("expected.json", "w") as f:
        json.dump(expected, f)
