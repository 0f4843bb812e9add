"""What Paddle's own parameter-server test program (test/ps/ps_dnn_trainer.py, run whole by
tests/component/test_paddle_test_ps.py) needs beside fleet: paddle.distributed.ps's helpers, the
2.x role makers' underscored names, the non-distributed role of a process no launcher started,
and the Paddle-internal classes refused by name."""
import pytest

import psjob as paddle
from psjob.distributed.fleet import fleet_api
from psjob.distributed.fleet.base.role_maker import PaddleCloudRoleMaker, Role, UserDefinedRoleMaker
from psjob.distributed.fleet.strategy import DistributedStrategy
from psjob.fleet import Fleet
from psjob.foundation import roles
from psjob.foundation.role_env import names_no_job

EPS = ("127.0.0.1:6170",)


def _trainer_env():
    topology = roles.JobTopology(job_name="j", namespace="local", pserver_endpoints=EPS, trainers=2,
                                 trainer_host="127.0.0.1", metrics_port=9200, metrics_port_per_process=True)
    return roles.role_environment(topology, roles.TRAINER, 1)


def test_an_environment_without_role_or_pservers_names_no_job():
    assert names_no_job({}) and names_no_job({"PATH": "/bin", "CPU_NUM": "4"})
    assert not names_no_job({"TRAINING_ROLE": "TRAINER"})
    assert not names_no_job({"PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:6170"})
    assert not names_no_job(_trainer_env())


def test_without_a_launcher_the_cloud_role_maker_is_one_local_worker():
    rm = PaddleCloudRoleMaker(environ={})
    assert rm._is_non_distributed() and rm.is_worker() and not rm.is_server()
    assert (rm.worker_index(), rm.worker_num(), rm.get_pserver_endpoints()) == (0, 1, [])
    launched = PaddleCloudRoleMaker(environ=_trainer_env())
    assert not launched._is_non_distributed() and launched.worker_index() == 1


def test_the_2x_role_makers_answer_paddles_underscored_names():
    rm = PaddleCloudRoleMaker(environ=_trainer_env())
    rm._generate_role()  # read once: a second call changes nothing
    assert rm._is_worker() and not rm._is_server() and not rm._is_heter_worker()
    assert (rm._worker_index(), rm._server_num(), rm._get_pserver_endpoints()) == (1, 1, list(EPS))
    user = UserDefinedRoleMaker(current_id=0, role=Role.SERVER, worker_num=2, server_endpoints=list(EPS))
    assert user._is_server() and user._server_index() == 0 and not user._is_non_distributed()


def test_a_non_distributed_minimize_adds_the_optimizers_own_ops(monkeypatch):
    local = Fleet()
    monkeypatch.setattr(fleet_api, "_fleet", local)
    fleet_api.init(PaddleCloudRoleMaker(environ={}))
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 4], "float32")
        loss = paddle.mean(paddle.nn.Linear(4, 1)(x))
        fleet_api.distributed_optimizer(paddle.optimizer.Adam(0.01), DistributedStrategy()).minimize(loss)
    types = [op.type for op in main.global_block().ops]
    assert types.count("adam") == 2 and "send" not in types  # the weight and the bias, trained here
    # Paddle 3.0.0's non-distributed fleet: the job's calls log that they do nothing, and return None
    assert fleet_api.init_worker() is None and fleet_api.stop_worker() is None


def test_parameter_server_optimizer_builds_the_job_as_the_fleets_minimize(monkeypatch):
    from psjob.distributed.fleet.meta_optimizers.ps_optimizer import ParameterServerOptimizer
    local = Fleet()
    monkeypatch.setattr(fleet_api, "_fleet", local)
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 4], "float32")
        loss = paddle.mean(paddle.nn.Linear(4, 1)(x))
        inner = paddle.optimizer.Adam(0.01)
        ps = ParameterServerOptimizer(inner)
        ps._set_basic_info(loss, PaddleCloudRoleMaker(environ={}), inner, DistributedStrategy())
        ps.minimize_impl(loss)  # fleet.init with the role maker given, as the fleet was not yet
    assert local.initialized and [op.type for op in main.global_block().ops].count("adam") == 2


def test_debug_program_writes_the_program_under_a_new_folder(tmp_path):
    from psjob.distributed.ps.utils.ps_program_builder import debug_program, ps_log_root_dir
    assert ps_log_root_dir == "./ps_log/"
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        paddle.static.data("x", [None, 4], "float32")
    target = tmp_path / "ps_log" / "main.prototxt"
    debug_program(str(target), main)
    assert target.read_text() == str(main) and "x" in target.read_text()


def test_paddles_internal_ps_classes_are_refused_by_name():
    from psjob.distributed.fleet.meta_optimizers.ps_optimizer import ParameterServerOptimizer
    from psjob.distributed.ps.the_one_ps import TheOnePSRuntime
    from psjob.distributed.ps.utils.ps_program_builder import new_pass
    with pytest.raises(NotImplementedError, match="ParameterServerOptimizer.pass_ctx is Paddle's pass machinery"):
        ParameterServerOptimizer(paddle.optimizer.Adam(0.01)).pass_ctx
    with pytest.raises(NotImplementedError, match="TheOnePSRuntime is Paddle's internal"):
        TheOnePSRuntime()
    with pytest.raises(NotImplementedError, match="new_pass\\('append_send_ops_pass'\\)"):
        new_pass("append_send_ops_pass", {})
