"""psjob.cluster.trainer.monitor: what a Fleet trainer reports of the runs of its main program."""
import io

import numpy as np

import psjob.fluid as fluid
from psjob.cluster.trainer import telemetry
from psjob.cluster.trainer.monitor import TrainerMonitor, batch_size, running_auc_name
from psjob.foundation.progress import parse_line
from psjob.foundation.settings import Settings


def _classifier():
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.sequence_pool(fluid.layers.embedding(ids, size=[20, 4]), "sum")
        predict = fluid.layers.fc(fluid.layers.concat([x, emb], axis=1), 2, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(predict, label))
        auc, batch_auc, _ = fluid.layers.auc(predict, label)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss, auc, batch_auc


def _batch(rng, rows):
    lens = rng.integers(1, 4, size=rows)
    return {"x": rng.normal(size=(rows, 4)).astype("float32"),
            "ids": (rng.integers(0, 20, size=(int(lens.sum()), 1)), [np.concatenate([[0], np.cumsum(lens)])]),
            "label": rng.integers(0, 2, size=(rows, 1))}


def _sample(tel, name, labels=None):
    return tel.registry.get_sample_value(name, labels or {})


def test_the_monitor_counts_each_run_with_its_batch_loss_and_running_auc_and_prints_the_final_line():
    main, startup, loss, auc, batch_auc = _classifier()
    assert running_auc_name(main) == auc.name  # the running AUC, not the batch one
    exe, scope, out = fluid.Executor(), fluid.Scope(), io.StringIO()
    exe.run(startup, scope=scope)
    monitor = TrainerMonitor(main, 3, loss.name, Settings({}), every_s=3600, out=out)
    try:
        assert telemetry.current() is monitor.telemetry and monitor.telemetry.server is None
        rng = np.random.default_rng(0)
        exe.run(startup, scope=scope)  # other programs are not steps
        for rows in (8, 8, 5):
            got_loss, got_auc = exe.run(main, feed=_batch(rng, rows), fetch_list=[loss, auc], scope=scope)
        tel = monitor.telemetry
        assert _sample(tel, "psjob_trainer_steps_total") == 3
        assert _sample(tel, "psjob_trainer_examples_total") == 21  # the LoD input counts sequences
        assert _sample(tel, "psjob_trainer_loss") == float(got_loss[0])
        assert _sample(tel, "psjob_trainer_auc") == float(got_auc[0])
        assert exe.collect_timing  # from the first observed run on: the push/pull split
        assert _sample(tel, "psjob_trainer_batch_seconds_count", {"phase": "compute"}) == 3
        assert _sample(tel, "psjob_trainer_batch_seconds_count", {"phase": "push"}) == 2
    finally:
        monitor.close()
    assert telemetry.current() is None
    final = parse_line(out.getvalue().strip().splitlines()[-1])
    assert final["finished"] and final["trainer"] == 3 and final["steps"] == 3 and final["examples"] == 21
    assert "epoch" not in final and final["loss"] == round(float(got_loss[0]), 4)
    exe.run(main, feed=_batch(rng, 4), scope=scope)  # closed: no longer observed
    assert _sample(monitor.telemetry, "psjob_trainer_steps_total") == 3


def test_the_batch_is_the_most_common_first_dimension_of_the_feed():
    scope = fluid.Scope()
    scope.vars.update(a=np.zeros((16, 3)), b=np.zeros((16, 1)), lr=np.zeros((1,)), flat=np.zeros((40,)))
    assert batch_size({"a": 0, "b": 0, "lr": 0, "flat": 0}, scope) == 16
    scope.lods["s"] = [np.array([0, 2, 5, 6])]
    assert batch_size({"s": 0, "lr": 0}, scope) == 3  # a tie: the first fed tensor decides
    assert batch_size({"s": 0, "s2": 0}, scope) == 3
    assert batch_size({}, scope) == 0


def test_a_failing_observation_stops_the_telemetry_not_the_training(capsys):
    main, startup, loss, auc, _ = _classifier()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    monitor = TrainerMonitor(main, 0, loss.name, Settings({}), every_s=3600, out=io.StringIO())
    try:
        monitor.reporter = None  # broken: its step() raises
        rng = np.random.default_rng(1)
        exe.run(main, feed=_batch(rng, 4), scope=scope)
        exe.run(main, feed=_batch(rng, 4), scope=scope)
    finally:
        monitor.telemetry.close()
        monitor._remove()
    assert capsys.readouterr().err.count("trainer telemetry stopped: AttributeError") == 1


def test_progress_lines_without_epochs_read_back_into_the_launchers_view():
    from psjob.launcher.job_progress import describe
    main, startup, loss, auc, _ = _classifier()
    exe, scope, out = fluid.Executor(), fluid.Scope(), io.StringIO()
    exe.run(startup, scope=scope)
    monitor = TrainerMonitor(main, 1, loss.name, Settings({}), every_s=0, out=out)  # a line per step
    try:
        rng = np.random.default_rng(2)
        for _ in range(2):
            exe.run(main, feed=_batch(rng, 6), scope=scope)
    finally:
        monitor.close(finished=False)
    lines = [parse_line(line) for line in out.getvalue().splitlines()]
    assert [(p["step"], p["examples"], p["finished"]) for p in lines] == [(1, 6, False), (2, 12, False)]
    assert "epoch" not in lines[-1]
    assert describe(lines[-1]).startswith("step 2  12 ex  ")
