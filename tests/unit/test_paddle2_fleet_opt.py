"""program._fleet_opt as Paddle 3.0's fleet minimize fills it, DistributedStrategy's
trainer_desc_configs, and train_from_dataset honouring stat_var_names across Hogwild
threads (each thread but the first counts into a zeroed copy, added in afterwards)."""
import numpy as np
import pytest

import psjob as paddle
import psjob.distributed.fleet as fleet
import psjob.fluid as fluid
from psjob.cluster.trainer import client_service
from psjob.distributed import InMemoryDataset
from psjob.distributed.fleet.base.role_maker import Role, UserDefinedRoleMaker
from psjob.fluid.base import GraphError

EPS = ["127.0.0.1:6170"]
# What Paddle 3.0.0 puts there for an async CPU job (printed from a real minimize): besides
# these, its table-id keys program_configs / dense_table_config, which psjob has no tables for.
PADDLE_ASYNC = {"trainer": "DistMultiTrainer", "device_worker": "DownpourLite", "mpi_rank": 1, "mpi_size": 2,
                "dump_fields_path": "", "dump_fields": [], "dump_param": [], "stat_var_names": [],
                "local_sparse": [], "remote_sparse": []}


@pytest.fixture
def front(monkeypatch):
    """The 2.x front's singleton as a fresh worker 1 of 2; restored afterwards."""
    for name, value in vars(fleet.fleet).items():
        monkeypatch.setattr(fleet.fleet, name, value)
    monkeypatch.setattr(fleet, "_init_strategy", None)
    monkeypatch.setattr(client_service, "_installed", client_service.installed())
    fleet.init(UserDefinedRoleMaker(current_id=1, role=Role.WORKER, worker_num=2, server_endpoints=EPS))
    return fleet


def minimized(strategy, preset=None):
    main, startup = fluid.Program(), fluid.Program()
    main._fleet_opt = preset
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data("x", [None, 4], "float32")
        loss = paddle.mean(paddle.static.nn.fc(x, 1))
        fleet.distributed_optimizer(paddle.optimizer.SGD(0.1), strategy).minimize(loss)
    return main


def test_minimize_fills_fleet_opt_with_paddles_keys_for_the_mode(front):
    async_ = fleet.DistributedStrategy()
    assert minimized(async_)._fleet_opt == PADDLE_ASYNC
    sync = fleet.DistributedStrategy()
    sync.a_sync = False
    opt = minimized(sync)._fleet_opt
    assert (opt["trainer"], opt["device_worker"]) == ("MultiTrainer", "Hogwild")
    geo = fleet.DistributedStrategy()
    geo.a_sync_configs = {"k_steps": 5}
    assert minimized(geo)._fleet_opt["trainer"] == "MultiTrainer"
    assert fluid.Program()._fleet_opt is None and minimized(async_).clone()._fleet_opt is None  # as Paddle


def test_trainer_desc_configs_reach_fleet_opt_and_a_preset_trainer_is_kept(front):
    s = fleet.DistributedStrategy()
    assert s.trainer_desc_configs == {k: v for k, v in PADDLE_ASYNC.items() if "mpi" not in k} | {
        "trainer": "", "device_worker": ""}
    s.trainer_desc_configs = {"stat_var_names": ["pos"], "dump_fields_path": "/d"}
    s.trainer_desc_configs = {"stat_var_names": ["neg"]}  # a repeated field: Paddle appends
    got = s.trainer_desc_configs
    got["stat_var_names"].append("not stored")  # the getter gives a copy
    opt = minimized(s, preset={"trainer": "MyTrainer"})._fleet_opt
    assert opt["stat_var_names"] == ["pos", "neg"] and opt["dump_fields_path"] == "/d"
    assert opt["trainer"] == "MyTrainer" and opt["device_worker"] == "DownpourLite"
    with pytest.raises(ValueError, match=r"unknown trainer_desc_configs key\(s\) \['stat_vars'\]"):
        s.trainer_desc_configs = {"stat_vars": ["x"]}
    with pytest.raises(TypeError, match="must be a list of names"):
        s.trainer_desc_configs = {"stat_var_names": "pos"}


# -- stat_var_names in train_from_dataset -------------------------------------------------

def auc_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data("x", [None, 1], "float32")
        label = paddle.static.data("label", [None, 1], "int64")
        pred = paddle.nn.functional.sigmoid(paddle.static.nn.fc(x, 1))
        _, _, states = paddle.static.auc(paddle.concat([1 - pred, pred], axis=1), label, num_thresholds=63)
    return main, startup, [x, label], [s.name for s in states[2:]]  # stat_pos, stat_neg


@pytest.fixture
def rows(tmp_path):
    rng = np.random.default_rng(0)
    files = []
    for f in range(2):
        path = tmp_path / f"part-{f}"
        path.write_text("".join(f"1 {v:.4f} 1 {int(v > 0)}\n" for v in rng.normal(size=90)))
        files.append(str(path))
    return files


def run_epoch(main, feeds, files, scope, stat_names):
    ds = InMemoryDataset()
    ds.init(batch_size=8, thread_num=2, use_var=feeds, pipe_command="cat")
    ds.set_filelist(files)
    ds.load_into_memory()
    main._fleet_opt = {"stat_var_names": stat_names}
    fluid.Executor(fluid.CPUPlace()).train_from_dataset(main, ds, scope=scope, thread=2)


def test_every_thread_counts_into_its_own_statistics_and_they_are_added_up(rows):
    main, startup, feeds, (pos, neg) = auc_program()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    # Counts already there (an earlier epoch's): thread 0 adds to them, thread 1 starts from 0.
    scope.vars[pos] = scope.vars[pos] + 5
    scope.vars[neg] = scope.vars[neg] + 3
    before = int(scope.vars[pos].sum() + scope.vars[neg].sum())
    run_epoch(main, feeds, rows, scope, [pos, neg])
    after = int(scope.vars[pos].sum() + scope.vars[neg].sum())
    assert after - before == 180  # every example counted once: none lost, none twice
    assert scope.vars[pos].dtype == np.int64


def test_a_stat_var_name_the_scope_lacks_is_named(rows):
    main, startup, feeds, (pos, _) = auc_program()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    with pytest.raises(GraphError, match=r"stat_var_names'\] names 'auc_9.stat_pos'"):
        run_epoch(main, feeds, rows, scope, [pos, "auc_9.stat_pos"])


def test_shrink_with_a_threshold_warns_as_paddle_and_before_init_worker_does_nothing(front, caplog):
    """Paddle 3.0.0's fleet.shrink(threshold) warns "The param threshold is not used in
    MemorySparseTable, ..." and shrinks as the accessor says (TheOnePSRuntime._shrink); its own
    test_dist_fleet_ps3.py calls fleet.shrink(10) on a worker after minimize, without
    init_worker, and passes. psjob warns the same and, with no pserver reached yet, shrinks
    nothing and meets no one."""
    minimized(fleet.DistributedStrategy())
    with pytest.warns(UserWarning, match="The param threshold is not used in MemorySparseTable"):
        assert fleet.shrink(10) is None
    assert "before fleet.init_worker()" in caplog.text
    assert fleet.shrink() is None
