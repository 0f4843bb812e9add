"""paddle.static.auc keeps its statistics in Paddle 2.x's layout, so its saves load in Paddle and
Paddle's in psjob, and its values are Paddle's; fluid.layers.auc keeps Fluid 1.x's.

Paddle 3.0.0 (legacy IR, FLAGS_enable_pir_api=0) produced tests/data/paddle_auc (its
make_reference.py): the statistics' names and shapes, the global and batch AUC of eight fixed
batches for four (num_thresholds, slide_steps) settings, the sliding statistic after six
batches, and a `paddle.static.save` after four batches. By hand, Paddle 3.0.0 loaded psjob's save
after six batches (`paddle.static.load`) and continued with the values of its own batches 6 and
7, which the last test asks of psjob's reload too."""
import json
import os

import numpy as np
import pytest

import psjob as paddle

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "paddle_auc")
with open(os.path.join(DATA, "expected.json")) as f:
    EXPECTED = json.load(f)
SETTINGS = ((100, 3), (4096, 20), (100, 0), (100, 1))


@pytest.fixture(autouse=True)
def static_mode():
    paddle.enable_static()
    with paddle.utils.unique_name.guard():
        yield


def build(num_thresholds, slide_steps, layer=None):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 2], "float32")
        y = paddle.static.data("y", [None, 1], "int64")
        auc = layer or paddle.static.auc
        auc_out, batch_auc, stats = auc(input=x, label=y, num_thresholds=num_thresholds, slide_steps=slide_steps)
    return main, startup, auc_out, batch_auc, stats


def batches(n):
    rng = np.random.default_rng(7)
    out = []
    for _ in range(n):
        p = rng.random((50, 1)).astype("float32")
        out.append({"x": np.hstack([1 - p, p]), "y": (rng.random((50, 1)) < p).astype("int64")})
    return out


def run(exe, main, auc, batch_auc, feeds):
    return [[float(np.asarray(v).reshape(-1)[0]) for v in exe.run(main, feed=f, fetch_list=[auc, batch_auc])]
            for f in feeds]


@pytest.mark.parametrize("num_thresholds,slide_steps", SETTINGS)
def test_statistics_and_values_are_paddles(num_thresholds, slide_steps):
    expected = EXPECTED[f"{num_thresholds}/{slide_steps}"]
    main, startup, auc, batch_auc, stats = build(num_thresholds, slide_steps)
    assert [v.name for v in stats] == expected["names"]
    assert [list(v.shape) for v in stats] == expected["shapes"]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    assert run(exe, main, auc, batch_auc, batches(8)) == expected["auc_batch_auc"]  # to the bit


def test_the_sliding_statistic_holds_what_paddles_holds():
    main, startup, auc, batch_auc, stats = build(100, 3)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    run(exe, main, auc, batch_auc, batches(6))
    held = np.array(paddle.static.global_scope().find_var(stats[0].name).get_tensor())
    assert held.tolist() == EXPECTED["100/3"]["batch_stat_pos_after_six"]
    assert held[-1] == 6  # the batches run, in the last element


def test_a_paddle_save_of_the_statistics_loads_and_continues_as_in_paddle():
    main, startup, auc, batch_auc, _ = build(100, 3)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    paddle.static.load(main, os.path.join(DATA, "auc"))  # Paddle's, after four batches
    assert run(exe, main, auc, batch_auc, batches(8)[4:]) == EXPECTED["100/3"]["auc_batch_auc"][4:]


def test_psjobs_save_holds_paddles_layout_and_continues(tmp_path):
    main, startup, auc, batch_auc, stats = build(100, 3)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    run(exe, main, auc, batch_auc, batches(6))
    paddle.static.save(main, str(tmp_path / "m"))
    saved = paddle.load(str(tmp_path / "m.pdopt"))
    assert [list(np.array(saved[v.name]).shape) for v in stats] == EXPECTED["100/3"]["shapes"]
    with paddle.utils.unique_name.guard():
        main2, startup2, auc2, batch_auc2, _ = build(100, 3)
    exe.run(startup2)
    paddle.static.load(main2, str(tmp_path / "m"))
    assert run(exe, main2, auc2, batch_auc2, batches(8)[6:]) == EXPECTED["100/3"]["auc_batch_auc"][6:]


def test_fluid_layers_auc_keeps_fluid_1x_rows():
    import psjob.fluid as fluid
    _, _, _, _, stats = build(100, 3, layer=fluid.layers.auc)
    assert [list(v.shape) for v in stats] == [[3, 101], [3, 101], [1, 101], [1, 101]]


def test_a_stat_of_neither_layout_is_refused_naming_it():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 2], "float32")
        y = paddle.static.data("y", [None, 1], "int64")
        bad = paddle.static.create_global_var([404], 0, "int64", persistable=True, name="bad_stat")
        with pytest.raises(Exception, match=r"bad_stat\[404\] must have shape \[405\]"):
            main.global_block().append_op(
                type="auc", inputs={"Predict": [x], "Label": [y], "StatPos": [bad], "StatNeg": [bad]},
                outputs={"AUC": [main.global_block().create_var(name="a", dtype="float64")],
                         "StatPosOut": [bad], "StatNegOut": [bad]},
                attrs={"curve": "ROC", "num_thresholds": 100, "slide_steps": 3})


@pytest.mark.parametrize("saved_by,loaded_by", [("fluid", "static"), ("static", "fluid")])
@pytest.mark.parametrize("save", ["paddle.static.save", "fluid.io.save_persistables"])
def test_a_save_in_the_other_layout_loads_and_continues_the_same_window(tmp_path, saved_by, loaded_by, save):
    """A save of fluid.layers.auc's rows (an earlier psjob's paddle.static.auc, Paddle 2.0-2.3)
    loads into paddle.static.auc's flat statistics, and the other way, and both continue as
    one program run without a break does (after 5 batches the window of 3 has wrapped)."""
    import psjob.fluid as fluid
    layers = {"fluid": fluid.layers.auc, "static": paddle.static.auc}
    exe = paddle.static.Executor(paddle.CPUPlace())
    main, startup, auc, batch_auc, _ = build(100, 3, layer=layers[saved_by])
    exe.run(startup)
    run(exe, main, auc, batch_auc, batches(5))
    if save == "paddle.static.save":
        paddle.static.save(main, str(tmp_path / "m"))
    else:
        fluid.io.save_persistables(exe, str(tmp_path / "m"), main)
    with paddle.utils.unique_name.guard():
        main2, startup2, auc2, batch_auc2, _ = build(100, 3, layer=layers[loaded_by])
    exe.run(startup2)
    if save == "paddle.static.save":
        paddle.static.load(main2, str(tmp_path / "m"))
    else:
        fluid.io.load_persistables(exe, str(tmp_path / "m"), main2)
    assert run(exe, main2, auc2, batch_auc2, batches(8)[5:]) == EXPECTED["100/3"]["auc_batch_auc"][5:]
