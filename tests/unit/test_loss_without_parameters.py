"""A loss that no trainable parameter reaches (a square error between two fed variables), and
a list of losses given to the parameter-server fleet's minimize.

Paddle's own fleet test programs minimize such a loss (test_dist_fleet_a_sync_optimizer_*,
test_dist_fleet_trainer_desc_config). Paddle 1.8.5 and Paddle 3.0.0 (CPU build, legacy static
graph: FLAGS_enable_pir_api=0) produced every pinned value and behaviour here, on the same
programs:

- `minimize` returns `([], [])`: backward writes the loss's gradient (a fill_constant) and no
  update is added; the program still runs forward (both versions).
- Fluid's DistributeTranspiler transpiles the program (Paddle 1.8.5): a sync trainer gets
  `send_barrier`, `fetch_barrier` after backward and a `fetch_barrier` in its startup, an
  async one no RPC op; each pserver a `listen_and_serv` with no optimize block.
- paddle.distributed.fleet's minimize in parameter-server mode takes a list of losses (Paddle
  3.0.0: a list of one loss, its startup programs left out, builds as that loss; a list
  elsewhere is refused with "loss can be list only in PS mode"). psjob builds one program per
  process, so it refuses a list of several losses by name.
- a second fleet minimize of the same loss, on the program the first rewrote, returns no
  optimizer op (Paddle 3.0.0 appends a backward pass it sends nothing from); psjob keeps the
  job it built.
"""
import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.cluster.trainer import client_service
from psjob.distributed.fleet import fleet_api
from psjob.distributed.fleet.base.role_maker import PaddleCloudRoleMaker, Role, UserDefinedRoleMaker
from psjob.fleet import Fleet, FleetError

EPS = "127.0.0.1:6170,127.0.0.1:6171"


@pytest.fixture
def static():
    paddle.enable_static()  # psjob runs static graphs only: there is no mode to go back to


def _square_error():
    x = paddle.static.data("x", [None, 1], "float32")
    y = paddle.static.data("y", [None, 1], "float32")
    return paddle.mean(paddle.nn.functional.square_error_cost(input=x, label=y))


def _programs():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        loss = _square_error()
    return main, startup, loss


def test_minimize_of_a_loss_without_parameters_adds_no_update_and_the_program_runs(static, caplog):
    main, startup, loss = _programs()
    with paddle.static.program_guard(main, startup), caplog.at_level("WARNING", logger="psjob.fluid.optimizer"):
        assert paddle.optimizer.SGD(0.01).minimize(loss) == ([], [])
    # Paddle is silent here; psjob says that nothing will be trained
    assert "no trainable parameter reaches this loss" in caplog.text
    types = [op.type for op in main.global_block().ops]
    assert types[-1] == "fill_constant" and main.global_block().ops[-1].output("Out") == [loss.name + "@GRAD"]
    assert not {"sgd", "send"} & set(types)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    out, = exe.run(main, feed={"x": np.ones((2, 1), "float32"), "y": np.zeros((2, 1), "float32")},
                   fetch_list=[loss])
    assert float(np.asarray(out).reshape(-1)[0]) == 1.0


@pytest.mark.parametrize("sync", [True, False])
def test_fluid_transpiles_a_program_whose_loss_has_no_parameters_as_paddle_1_8(static, sync):
    main, startup, loss = _programs()
    with paddle.static.program_guard(main, startup):
        assert fluid.optimizer.SGD(0.01).minimize(loss) == ([], [])
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, sync_mode=sync, startup_program=startup)
    tail = [op.type for op in t.get_trainer_program(wait_port=False).global_block().ops][4:]
    assert tail == (["send_barrier", "fetch_barrier"] if sync else [])
    assert [op.type for op in t.get_trainer_startup_program().global_block().ops] == ["fetch_barrier"]
    pserver, _ = t.get_pserver_programs("127.0.0.1:6170")
    assert [op.type for op in pserver.global_block().ops] == ["listen_and_serv"]
    assert pserver.num_blocks == 2  # the global block and an empty optimize block


def test_a_forgotten_minimize_is_still_refused_when_the_program_has_parameters(static):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data("x", [None, 2], "float32")
        paddle.mean(paddle.static.nn.fc(x, 1))
    with pytest.raises(fluid.framework.GraphError, match="no optimizer ops"):
        fluid.DistributeTranspiler().transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)


@pytest.fixture
def worker(monkeypatch):
    """A fresh 2.x fleet, worker 0 of 2 (restored afterwards)."""
    monkeypatch.setattr(fleet_api, "_fleet", Fleet())
    monkeypatch.setattr(fleet_api, "_init_strategy", None)
    monkeypatch.setattr(client_service, "_installed", client_service.installed())
    fleet_api.init(UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_num=2,
                                        server_endpoints=EPS.split(",")))
    return fleet_api


@pytest.mark.parametrize("with_parameters", [False, True])
def test_fleet_minimize_takes_a_list_of_one_loss_as_that_loss(static, worker, with_parameters):
    def build(as_list):
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
            if with_parameters:
                loss = paddle.mean(paddle.static.nn.fc(paddle.static.data("x", [None, 2], "float32"), 1))
            else:
                loss = _square_error()
            strategy = worker.DistributedStrategy()
            strategy.trainer_desc_configs = {"dump_fields_path": "dump_data", "dump_fields": ["a", "b"]}
            opt = worker.distributed_optimizer(paddle.optimizer.SGD(0.01), strategy)
            result = opt.minimize([loss] if as_list else loss)
        return main, result

    (main_l, (ops_l, pg_l)), (main_1, (ops_1, pg_1)) = build(True), build(False)
    assert [op.type for op in main_l.global_block().ops] == [op.type for op in main_1.global_block().ops]
    assert len(pg_l) == len(pg_1) == (2 if with_parameters else 0) and len(ops_l) == len(ops_1)
    assert main_l._fleet_opt["dump_fields_path"] == "dump_data" and main_l._fleet_opt["mpi_size"] == 2


def test_fleet_minimize_refuses_lists_it_cannot_build(static, worker):
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        a, b = _square_error(), paddle.mean(paddle.static.data("z", [None, 1], "float32"))
        opt = worker.distributed_optimizer(paddle.optimizer.SGD(0.01))
        with pytest.raises(ValueError, match="startup_program can't be None when loss is list"):
            opt.minimize([a, b])
        with pytest.raises(FleetError, match="minimize got 2 losses: psjob's parameter-server fleet builds one"):
            opt.minimize([a, b], startup_program=[paddle.static.Program(), paddle.static.Program()])


def test_a_list_of_losses_outside_parameter_server_mode_is_refused_as_in_paddle(static, monkeypatch):
    monkeypatch.setattr(fleet_api, "_fleet", Fleet())
    fleet_api.init(PaddleCloudRoleMaker(environ={}))  # no launcher: a non-distributed fleet
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        loss = _square_error()
        with pytest.raises(ValueError, match="loss can be list only in PS mode"):
            fleet_api.distributed_optimizer(paddle.optimizer.SGD(0.01)).minimize([loss])


def test_a_second_minimize_of_the_built_loss_keeps_the_job(static, worker, caplog):
    # Paddle 3.0.0 (legacy graph), a trainer of an async job: the second
    # distributed_optimizer(...).minimize(loss) on the program the first rewrote returns no
    # optimizer op and the (param, grad) pairs, appending a backward pass whose gradients are
    # not sent; psjob keeps the built job (same sends), and fills _fleet_opt again.
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        loss = paddle.mean(paddle.static.nn.fc(paddle.static.data("x", [None, 2], "float32"), 1))
        worker.distributed_optimizer(paddle.optimizer.SGD(0.01)).minimize(loss)
        before = [op.type for op in main.global_block().ops]
        strategy = worker.DistributedStrategy()
        strategy.trainer_desc_configs = {"dump_param": ["w"]}
        ops, pairs = worker.distributed_optimizer(paddle.optimizer.SGD(0.01), strategy).minimize([loss])
        assert ops == [] and sorted(p.name for p, _ in pairs) == ["fc_0.b_0", "fc_0.w_0"]
        assert [op.type for op in main.global_block().ops] == before and before.count("send") == 2
        assert main._fleet_opt["dump_param"] == ["w"]
        assert "already built for the fleet" in caplog.text
        other = paddle.mean(paddle.static.nn.fc(paddle.static.data("y", [None, 2], "float32"), 1))
        with pytest.raises(fluid.framework.GraphError, match="already transpiled"):
            worker.distributed_optimizer(paddle.optimizer.SGD(0.01)).minimize(other)


def test_a_second_minimize_on_a_pserver_returns_nothing(static, monkeypatch):
    # Paddle 3.0.0: a pserver's second minimize of the same loss returns ([], []).
    monkeypatch.setattr(fleet_api, "_fleet", Fleet())
    monkeypatch.setattr(fleet_api, "_init_strategy", None)
    fleet_api.init(UserDefinedRoleMaker(current_id=0, role=Role.SERVER, worker_num=2,
                                        server_endpoints=EPS.split(",")))
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()), fluid.unique_name.guard():
        loss = paddle.mean(paddle.static.nn.fc(paddle.static.data("x", [None, 2], "float32"), 1))
        assert len(fleet_api.distributed_optimizer(paddle.optimizer.SGD(0.01)).minimize(loss)[1]) == 2
        assert fleet_api.distributed_optimizer(paddle.optimizer.SGD(0.01)).minimize(loss) == ([], [])
