"""paddle.distributed.fleet's strict auto (`DistributedStrategy.auto = True` alone),
`fleet._final_strategy()` and `paddle.paddle`, which Paddle's own test programs
test_dist_fleet_a_sync_optimizer_auto*.py use.

Paddle 3.0.0 (CPU build, legacy graph: FLAGS_enable_pir_api=0) on the programs below: with
only `auto = True` set, a parameter-server minimize trains a_sync with k_steps 800 (geo) when
the optimizer is SGD and the program's estimated memory fits in free memory, else k_steps 0;
once any other field of any strategy has been set in the process (Paddle's own auto sets
a_sync), auto no longer applies, and `load_from_prototxt` does not count as setting one.
`auto = 1` logs "auto should have value of bool type" and leaves it False. _final_strategy()
before a minimize prints a warning and returns {}. `paddle.paddle is paddle`.
"""
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.cluster.trainer import client_service
from psjob.distributed.fleet import fleet_api
from psjob.distributed.fleet.base.role_maker import Role, UserDefinedRoleMaker
from psjob.fleet import Fleet


@pytest.fixture
def static():
    paddle.enable_static()  # psjob runs static graphs only: there is no mode to go back to


@pytest.fixture
def worker(monkeypatch):
    """A fresh 2.x fleet, worker 0 of 2 (restored afterwards)."""
    monkeypatch.setattr(fleet_api, "_fleet", Fleet())
    monkeypatch.setattr(fleet_api, "_init_strategy", None)
    monkeypatch.setattr(client_service, "_installed", client_service.installed())
    fleet_api.init(UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_num=2,
                                        server_endpoints=["127.0.0.1:6170", "127.0.0.1:6171"]))
    return fleet_api


@pytest.fixture
def strict_auto(monkeypatch):
    """No strategy field set yet in this process (Paddle's non_auto_func_called)."""
    from psjob.distributed.fleet import strategy as strategy_module
    monkeypatch.setattr(strategy_module, "_other_field_set", [False])
    monkeypatch.setattr(fleet_api, "_valid_strategy", None)
    return strategy_module


def _auto_minimize(worker, optimizer, size=(4, 2), embedding=None):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        if embedding:
            ids = paddle.static.data("ids", [None, 1], "int64", lod_level=1)
            x = paddle.static.nn.embedding(ids, size=list(embedding), is_sparse=True)
        else:
            x = paddle.static.data("x", [None, size[0]], "float32")
        loss = paddle.mean(paddle.static.nn.fc(x, size[1]))
        strategy = worker.DistributedStrategy()
        strategy.auto = True
        worker.distributed_optimizer(optimizer, strategy).minimize(loss)
    final = worker._final_strategy()
    return final.a_sync, final.a_sync_configs["k_steps"], main


def test_strict_auto_picks_geo_for_sgd_on_a_program_that_fits_in_memory(static, worker, strict_auto, capsys):
    assert worker._final_strategy() == {}
    assert "You may need to call minimize function before this function is called" in capsys.readouterr().out
    a_sync, k_steps, main = _auto_minimize(worker, paddle.optimizer.SGD(0.01))
    assert (a_sync, k_steps) == (True, 800)
    assert "geo_sgd_step" in [op.type for op in main.global_block().ops]  # it trains geo, as Paddle then does
    # Paddle's auto set a_sync with its setter: a second strategy's auto no longer applies.
    assert _auto_minimize(worker, paddle.optimizer.SGD(0.01))[1] == 0


@pytest.mark.parametrize("case", ["adam", "huge embedding"])
def test_strict_auto_picks_async_otherwise(static, worker, strict_auto, case):
    if case == "adam":
        got = _auto_minimize(worker, paddle.optimizer.Adam(0.01))
    else:  # 1e9 x 1e5 floats: far more than any machine's free memory (nothing is allocated)
        got = _auto_minimize(worker, paddle.optimizer.SGD(0.01), embedding=(1000000000, 100000))
    assert got[:2] == (True, 0)


def test_auto_does_not_apply_once_another_field_was_set(static, worker, strict_auto, caplog, tmp_path):
    s = worker.DistributedStrategy()
    s.auto = 1
    assert s.auto is False and "auto should have value of bool type" in caplog.text
    (tmp_path / "s.prototxt").write_text("auto: true\n")
    s.load_from_prototxt(str(tmp_path / "s.prototxt"))  # Paddle merges a file without its setters
    assert s.auto is True and s._is_strict_auto()
    s.a_sync_configs = {"launch_barrier": False}
    assert not s._is_strict_auto() and not worker.DistributedStrategy()._is_strict_auto()


def test_paddle_has_itself_as_an_attribute():
    assert paddle.paddle is paddle and paddle.paddle.nn is paddle.nn
