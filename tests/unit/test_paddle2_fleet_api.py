"""paddle.distributed.fleet (2.x) over psjob.fleet: role makers and the Paddle 2.x environment,
DistributedStrategy's 2.x defaults and fields, fleet.util, and Fleet's default sync mode."""
import logging

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.distributed.fleet import DistributedStrategy, UtilBase
from psjob.distributed.fleet.base.role_maker import PaddleCloudRoleMaker, Role, RoleMakerError, UserDefinedRoleMaker
from psjob.fleet import Fleet
from psjob.fleet import strategy as strategies
from psjob.foundation import roles
from psjob.launcher.launch import build_parser, plan

EPS = ("127.0.0.1:6170", "127.0.0.2:6170")


def topology(**kw):
    return roles.JobTopology(job_name="j", namespace="local", pserver_endpoints=EPS, trainers=3,
                             trainer_host="127.0.0.1", metrics_port=9200, metrics_port_per_process=True, **kw)


def test_role_environment_sets_the_paddle2_names_alongside_the_fluid_ones():
    server = roles.role_environment(topology(), roles.PSERVER, 1)
    assert server["TRAINING_ROLE"] == server["PADDLE_TRAINING_ROLE"] == "PSERVER"
    assert server["PADDLE_PSERVERS_IP_PORT_LIST"] == server["PADDLE_PSERVER_ENDPOINTS"] == ",".join(EPS)
    assert (server["POD_IP"], server["PADDLE_PORT"]) == ("127.0.0.2", "6170")
    trainer = roles.role_environment(topology(), roles.TRAINER, 2)
    assert trainer["PADDLE_TRAINERS_NUM"] == trainer["PADDLE_TRAINERS"] == "3"
    assert trainer["PADDLE_TRAINER_ID"] == "2" and trainer["POD_IP"] == "127.0.0.1"
    # Trainer t is named by its /metrics port: 9200 + 2 pservers + t.
    assert trainer["PADDLE_TRAINER_ENDPOINTS"] == "127.0.0.1:9202,127.0.0.1:9203,127.0.0.1:9204"
    # A pod template (index unknown): the shared pserver port, no POD_IP (the downward API's).
    pod = roles.role_environment(topology(), roles.PSERVER, None)
    assert pod["PADDLE_PORT"] == "6170" and "POD_IP" not in pod


@pytest.mark.parametrize("flavour", ["fluid", "paddle2", "both"])
def test_the_cloud_role_maker_reads_each_environment_flavour(flavour):
    def env(role, index):
        full = roles.role_environment(topology(), role, index)
        paddle2 = {"TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ID",
                   "POD_IP", "PADDLE_PORT", "PADDLE_TRAINER_ENDPOINTS"}
        if flavour == "paddle2":
            return {k: v for k, v in full.items() if k in paddle2}
        if flavour == "fluid":
            return {k: v for k, v in full.items() if k not in paddle2 - {"PADDLE_TRAINER_ID"}}
        return full
    server = PaddleCloudRoleMaker(environ=env(roles.PSERVER, 1))
    assert server.is_server() and server.server_index() == 1 and server.get_pserver_endpoints() == list(EPS)
    trainer = PaddleCloudRoleMaker(environ=env(roles.TRAINER, 2))
    assert trainer.is_worker() and trainer.worker_index() == 2 and trainer.worker_num() == 3
    assert not trainer.is_first_worker() and PaddleCloudRoleMaker(environ=env(roles.TRAINER, 0)).is_first_worker()


def test_a_paddle2_pserver_whose_pod_ip_and_port_are_not_listed_is_named():
    env = {"TRAINING_ROLE": "PSERVER", "PADDLE_PSERVERS_IP_PORT_LIST": ",".join(EPS), "POD_IP": "10.0.0.9",
           "PADDLE_PORT": "6170", "PADDLE_TRAINERS_NUM": "2"}
    with pytest.raises(RoleMakerError, match="POD_IP:PADDLE_PORT 10.0.0.9:6170 is not in PADDLE_PSERVERS_IP_PORT_LIST"):
        PaddleCloudRoleMaker(environ=env)._generate_role()  # read when the role is generated, as Paddle's



def test_a_collective_role_maker_reads_the_trainers_ring():
    ring = "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
    rm = PaddleCloudRoleMaker(is_collective=True, environ={
        "PADDLE_TRAINER_ID": "2", "PADDLE_TRAINERS_NUM": "3", "PADDLE_TRAINER_ENDPOINTS": ring,
        "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:7003"})
    assert (rm.is_worker(), rm.worker_index(), rm.worker_num(), rm.server_num()) == (True, 2, 3, 0)
    assert rm.collective.endpoints == tuple(ring.split(","))
    with pytest.raises(RoleMakerError, match="PADDLE_TRAINERS_NUM=2 but PADDLE_TRAINER_ENDPOINTS lists 3"):
        PaddleCloudRoleMaker(is_collective=True, environ={"PADDLE_TRAINERS_NUM": "2",
                                                          "PADDLE_TRAINER_ENDPOINTS": ring})._generate_role()
    with pytest.raises(RoleMakerError, match="PADDLE_CURRENT_ENDPOINT 127.0.0.1:7001 is not entry 1"):
        PaddleCloudRoleMaker(is_collective=True, environ={"PADDLE_TRAINER_ID": "1", "PADDLE_TRAINER_ENDPOINTS": ring,
                                                          "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:7001"})._generate_role()


def test_the_user_defined_role_maker_takes_paddle2_arguments():
    rm = UserDefinedRoleMaker(current_id=1, role=Role.WORKER, worker_endpoints=["a:1", "b:1", "c:1"],
                              server_endpoints=list(EPS))
    assert (rm.worker_num(), rm.worker_index(), rm.server_num()) == (3, 1, 2)
    with pytest.raises(RoleMakerError, match="worker_num=2 but worker_endpoints lists 3"):
        UserDefinedRoleMaker(worker_endpoints=["a:1", "b:1", "c:1"], worker_num=2, server_endpoints=list(EPS))


def test_the_2x_strategy_defaults_to_async_and_accepts_paddlerec_fields(caplog):
    from psjob.distributed.fleet import strategy as strategy_2x
    strategy_2x._warned.clear()
    s = DistributedStrategy()
    assert strategies.resolve(s).mode == "async"  # Paddle 2.x: a_sync defaults to True
    s.a_sync = False
    assert strategies.resolve(s).mode == "sync"
    s.a_sync = True
    with caplog.at_level(logging.WARNING, logger="psjob.distributed"):
        s.a_sync_configs = {"k_steps": 4, "launch_barrier": False, "send_wait_times": 3}
        s.adam_d2sum = False
        s.sparse_table_configs = {"embedding": {"table_parameters.embedding.table_class": "MemorySparseTable"}}
        s.adam_d2sum = True
    resolved = strategies.resolve(s)
    assert (resolved.mode, resolved.k_steps, resolved.launch_barrier) == ("geo", 4, False)
    assert s.adam_d2sum is True
    assert s.sparse_table_configs == {"embedding": {"table_parameters.embedding.table_class": "MemorySparseTable"}}
    # sparse_table_configs is honoured (tests/unit/test_sparse_sgd_rules.py), and checked when set.
    with pytest.raises(ValueError, match="sparse_table_configs\\['table_class'\\] must be a dict"):
        s.sparse_table_configs = {"table_class": "MemorySparseTable"}
    warned = [r.getMessage() for r in caplog.records]
    assert sum("adam_d2sum is accepted but ignored" in m for m in warned) == 1  # once
    assert any("a_sync_configs['send_wait_times'] is accepted but ignored" in m for m in warned)
    with pytest.raises(ValueError, match="unknown a_sync_configs key"):
        s.a_sync_configs = {"k_step": 1}
    with pytest.raises(TypeError, match="trainer_desc_configs must be a dict"):
        s.trainer_desc_configs = "x"


def test_a_transpiler_config_left_at_its_defaults_trains_synchronously_under_fleet():
    """Paddle's DistributeTranspilerConfig.sync_mode defaults to True (seed 000, 004)."""
    assert strategies.resolve(fluid.DistributeTranspilerConfig()).mode == "sync"
    half = fluid.DistributeTranspilerConfig()
    half.runtime_split_send_recv, half.half_async = True, True
    assert strategies.resolve(half).mode == "half_async"
    off = fluid.DistributeTranspilerConfig()
    off.sync_mode = False
    assert strategies.resolve(off).mode == "half_async"  # Fleet 1.x: no runtime_split_send_recv → half-async
    fleet = Fleet()
    fleet.init(UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_num=2, server_endpoints=list(EPS)))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), fluid.DistributeTranspilerConfig()).minimize(loss)
    assert fleet.mode == "sync"
    assert "send_barrier" in [op.type for op in fleet.main_program.global_block().ops]


class _Fleet:
    def __init__(self, index, num, gather=None):
        self.index, self.num = index, num
        # What a worker's fleet holds between init_worker and stop_worker: a client whose
        # gather meets the other workers on pserver 0 (here the pserver's TrainerGather itself).
        self.rpc_client = None if gather is None else _GatherClient(gather, index)

    def worker_index(self):
        return self.index

    def worker_num(self):
        return self.num

    def worker_members(self):  # a fixed-size job's members (elastic ones: test_elastic_file_shard.py)
        return list(range(self.num))


class _GatherClient:
    def __init__(self, gather, trainer_id):
        self.gather_set, self.trainer_id = gather, trainer_id

    def gather(self, name, round_, value):
        return self.gather_set.gather(self.trainer_id, name, round_, value)


def test_util_shards_files_as_paddle_does_and_reduces_one_worker_locally():
    files = [f"f{i}" for i in range(7)]
    shards = [UtilBase(_Fleet(t, 3)).get_file_shard(files) for t in range(3)]
    assert shards == [["f0", "f1", "f2"], ["f3", "f4"], ["f5", "f6"]]
    one = UtilBase(_Fleet(0, 1))
    np.testing.assert_array_equal(one.all_reduce(np.array([3.0, 4.0]), "sum"), [3.0, 4.0])
    assert one.all_gather(5) == [5]
    one.barrier()
    with pytest.raises(NotImplementedError, match=r"across 2 workers meets them on pserver 0: call it between"):
        UtilBase(_Fleet(0, 2)).all_reduce(np.array([1.0]))
    with pytest.raises(NotImplementedError, match=r"comm_world='server'.*pservers take no part"):
        one.all_reduce([1.0], comm_world="server")
    with pytest.raises(ValueError, match="all_reduce mode must be one of"):
        one.all_reduce([1], "mean")


def test_util_collectives_across_workers_meet_on_the_pservers_gather():
    """Three workers (threads) each reduce, gather and barrier in the same order; every one
    gets the same results, computed from all three inputs."""
    import threading

    from psjob.cluster.pserver.trainer_gather import TrainerGather
    gather = TrainerGather(3, timeout_s=30)
    results, errors = {}, []

    def worker(t):
        try:
            util = UtilBase(_Fleet(t, 3, gather))
            auc_parts = np.array([[10.0 * t, 1.0], [2.0, t]])
            results[t] = (util.all_reduce(auc_parts, "sum"), util.all_reduce(np.array([t, -t]), "max"),
                          util.all_reduce([float(t)], "min"), util.all_gather(t * 2), util.barrier())
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors, errors
    for t in range(3):
        total, largest, smallest, gathered, _ = results[t]
        np.testing.assert_array_equal(total, [[30.0, 3.0], [6.0, 3.0]])
        np.testing.assert_array_equal(largest, [2, 0])
        np.testing.assert_array_equal(smallest, [0.0])
        assert gathered == [0, 2, 4]
    assert gather._sets == {}  # every round was collected by all and forgotten


def test_a_gather_missing_a_worker_times_out_naming_it():
    from psjob.cluster.pserver.trainer_gather import TrainerGather
    gather = TrainerGather(2, timeout_s=0.05)
    with pytest.raises(TimeoutError, match=r"gather 'fleet.util.barrier' round 0: trainers \[1\] did not"):
        UtilBase(_Fleet(0, 2, gather)).barrier()
    with pytest.raises(ValueError, match="trainer id 5 outside 0..1"):
        gather.gather(5, "x", 0, np.zeros(1))


def test_launch_takes_fleetrun_worker_lists(tmp_path):
    args = build_parser().parse_args(["--server_num=1", "--workers", "127.0.0.1:1,127.0.0.1:2",
                                      "--log_dir", str(tmp_path), "--no_auth", "x.py"])
    specs = plan(args).specs
    assert [s.role for s in specs].count(roles.TRAINER) == 2
    args = build_parser().parse_args(["--worker_num", "3", "--workers", "a:1,b:1", "--log_dir", str(tmp_path), "x.py"])
    with pytest.raises(SystemExit, match="--worker_num 3 but --workers lists 2"):
        plan(args)


def test_worker_endpoints_are_the_jobs_trainer_endpoints():
    cloud = Fleet()
    cloud.init(PaddleCloudRoleMaker(environ=roles.role_environment(topology(), roles.TRAINER, 1)))
    assert cloud.worker_endpoints() == ["127.0.0.1:9202", "127.0.0.1:9203", "127.0.0.1:9204"]
    assert cloud.worker_endpoints(to_string=True) == "127.0.0.1:9202,127.0.0.1:9203,127.0.0.1:9204"
    user = Fleet()
    user.init(UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_endpoints=["a:1", "b:1"],
                                   server_endpoints=list(EPS)))
    assert user.worker_endpoints() == ["a:1", "b:1"]
    unnamed = Fleet()
    unnamed.init(UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_num=2, server_endpoints=list(EPS)))
    assert unnamed.worker_endpoints() == [] and unnamed.worker_endpoints(to_string=True) == ""


def test_a_sync_configs_communicator_knobs_are_checked_when_set_and_reach_the_resolved_strategy():
    s = DistributedStrategy()
    resolved = strategies.resolve(s)
    # psjob's measured communicator defaults, not the 1/16 of Paddle's AsyncConfig proto, which
    # Paddle's runtime never reads (docs/user/paddle2.md, "a_sync_configs").
    assert (resolved.max_merge_var_num, resolved.send_queue_size, resolved.max_stale_steps) == (20, 20, 1)
    s.a_sync_configs = {"max_stale_steps": 0, "max_merge_var_num": 1, "send_queue_size": 16}
    resolved = strategies.resolve(s)
    assert (resolved.max_merge_var_num, resolved.send_queue_size, resolved.max_stale_steps) == (1, 16, 0)
    s.a_sync_configs = {"max_stale_steps": None}  # no bound but the queue's
    assert strategies.resolve(s).max_stale_steps is None
    for key, bad in (("max_stale_steps", -1), ("max_stale_steps", 1.5), ("max_stale_steps", True),
                     ("max_merge_var_num", 0), ("send_queue_size", "16"), ("k_steps", -2)):
        with pytest.raises(ValueError, match=rf"a_sync_configs\['{key}'\] must be an integer"):
            s.a_sync_configs = {key: bad, "launch_barrier": False}
        assert s.a_sync_configs["launch_barrier"] is True  # a refused update changes nothing


def test_the_runtime_handle_flushes_before_init_worker_and_names_what_it_lacks():
    # Scripts written for Paddle's the_one_ps call fleet.fleet._runtime_handle._worker.client_flush() before
    # they stop; with no RPC service yet there is nothing queued to send.
    handle = Fleet()._runtime_handle
    assert handle._worker.client_flush() is None
    with pytest.raises(AttributeError, match=r"_worker\.stop_server: psjob has only client_flush\(\)"):
        handle._worker.stop_server()
    with pytest.raises(AttributeError, match=r"_runtime_handle\.context: .*client_flush"):
        handle.context
    assert not hasattr(handle._worker, "pull_dense_params")
