"""The role environment every psjob process receives (operator and launcher alike)."""
from __future__ import annotations

import pytest

from psjob.foundation import roles
from psjob.foundation.jobspec import parse_job


def job(**spec):
    body = {"image": "psjob:test", "pserver": {"replicas": 2}, "worker": {"replicas": 3}}
    body.update(spec)
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr", "namespace": "ml"}, "spec": body})


COMMON_K8S = {
    "PADDLE_PSERVER_IPS": "ctr-pserver-0.ctr-pserver.ml.svc,ctr-pserver-1.ctr-pserver.ml.svc",
    "PADDLE_PSERVER_PORT": "6174",
    "PADDLE_PSERVER_ENDPOINTS": ("ctr-pserver-0.ctr-pserver.ml.svc:6174,"
                                 "ctr-pserver-1.ctr-pserver.ml.svc:6174"),
    "PADDLE_TRAINERS": "3",
    # Paddle 2.x's names for the same facts.
    "PADDLE_PSERVERS_IP_PORT_LIST": ("ctr-pserver-0.ctr-pserver.ml.svc:6174,"
                                     "ctr-pserver-1.ctr-pserver.ml.svc:6174"),
    "PADDLE_TRAINERS_NUM": "3",
    "PSJOB_JOB_NAME": "ctr",
    "PSJOB_NAMESPACE": "ml",
    "PSJOB_PSERVERS": "2",
    "PSJOB_HETER_TRAINERS": "0",
    "PSJOB_MODE": "sync",
    "PSJOB_K_STEPS": "0",
    "PSJOB_CHECKPOINT_DIR": "/var/lib/psjob/checkpoints",
    "PSJOB_CHECKPOINT_INTERVAL_STEPS": "0",
    "PSJOB_CHECKPOINT_INTERVAL_SECONDS": "600",
    "PSJOB_CHECKPOINT_KEEP": "3",
    "PSJOB_CHECKPOINT_INCREMENTAL": "0",
    "PSJOB_CHECKPOINT_BASE_EVERY": "10",
    "PSJOB_METRICS_PORT": "9100",
    "PSJOB_AUTH_TOKEN_FILE": "/var/run/psjob/auth/token",
    "PSJOB_DEVICE": "cpu",
}


def test_a_kubernetes_pserver_with_a_known_index_gets_its_own_host_and_port():
    env = roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.PSERVER, 1)
    assert env == {**COMMON_K8S, "PADDLE_TRAINING_ROLE": "PSERVER", "TRAINING_ROLE": "PSERVER",
                   "PADDLE_PORT": "6174", "PADDLE_CURRENT_IP": "ctr-pserver-1.ctr-pserver.ml.svc",
                   "PSJOB_CURRENT_ENDPOINT": "ctr-pserver-1.ctr-pserver.ml.svc:6174",
                   "PSJOB_PSERVER_INDEX": "1"}


def test_a_pserver_of_a_statefulset_learns_its_index_from_its_hostname():
    env = roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.PSERVER, None)
    assert env["PSJOB_PSERVER_INDEX"] == "auto" and "PADDLE_CURRENT_IP" not in env
    resolved = roles.resolve_identity(env, "ctr-pserver-1.ctr-pserver.ml.svc.cluster.local")
    # ... and, its pod restarting a container that exits, to stay up once the job is done.
    assert resolved == {**roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.PSERVER, 1),
                        roles.STAY_UNTIL_STOPPED_ENV: "1"}
    assert env["PSJOB_PSERVER_INDEX"] == "auto"  # the input is left alone
    # A pserver given its index (psjob launch, psjob run) exits with the job; a value set wins.
    given = roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.PSERVER, 1)
    assert roles.STAY_UNTIL_STOPPED_ENV not in roles.resolve_identity(given, "ctr-pserver-1")
    assert roles.resolve_identity({**env, roles.STAY_UNTIL_STOPPED_ENV: "0"},
                                  "ctr-pserver-1")[roles.STAY_UNTIL_STOPPED_ENV] == "0"


def test_a_trainer_with_unknown_id_is_marked_auto_without_a_paddle_trainer_id():
    env = roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.TRAINER, None)
    assert env == {**COMMON_K8S, "PADDLE_TRAINING_ROLE": "TRAINER", "TRAINING_ROLE": "TRAINER",
                   "PSJOB_TRAINER_ID": "auto"}


def test_an_indexed_job_pod_takes_its_completion_index_as_trainer_id():
    env = roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.TRAINER, None)
    resolved = roles.resolve_identity({**env, "JOB_COMPLETION_INDEX": "2", "POD_IP": "10.1.2.3"},
                                      "ctr-worker-2-x7k2q")
    assert resolved["PADDLE_TRAINER_ID"] == resolved["PSJOB_TRAINER_ID"] == "2"
    assert resolved["PADDLE_CURRENT_IP"] == "10.1.2.3"


def test_a_trainer_without_any_index_source_stays_auto_for_the_rendezvous():
    env = roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.TRAINER, None)
    resolved = roles.resolve_identity(env, "some-pod")
    assert resolved["PSJOB_TRAINER_ID"] == "auto" and "PADDLE_TRAINER_ID" not in resolved


def test_local_topology_puts_each_pserver_on_its_own_loopback_address_and_uses_the_workdir(tmp_path):
    topo = roles.local_topology(job(mode="geo"), [7001, 7002], tmp_path, metrics_port=9200)
    env = roles.role_environment(topo, roles.TRAINER, 2)
    assert env["PADDLE_PSERVER_ENDPOINTS"] == "127.0.0.1:7001,127.0.0.2:7002"
    assert env["PADDLE_PSERVER_IPS"] == "127.0.0.1,127.0.0.2"
    assert env["PADDLE_TRAINER_ID"] == env["PSJOB_TRAINER_ID"] == "2"
    assert env["PADDLE_CURRENT_IP"] == "127.0.0.1"
    assert env["PSJOB_CHECKPOINT_DIR"] == str(tmp_path / "checkpoints")
    assert env["PSJOB_AUTH_TOKEN_FILE"] == str(tmp_path / "auth-token")
    assert env["PSJOB_MODE"] == "geo" and env["PSJOB_K_STEPS"] == "100"
    assert env["PSJOB_METRICS_PORT"] == "9204"  # pservers 9200, 9201; trainers from 9202
    pserver = roles.role_environment(topo, roles.PSERVER, 1)
    assert (pserver["PADDLE_CURRENT_IP"], pserver["PADDLE_PSERVER_PORT"]) == ("127.0.0.2", "7002")
    assert pserver["PSJOB_METRICS_PORT"] == "9201"


def test_heterogeneous_trainers_get_their_endpoints_and_port():
    spec = job(heterWorker={"replicas": 2})
    topo = roles.kubernetes_topology(spec, "ml")
    env = roles.role_environment(topo, roles.HETER_TRAINER, None)
    assert env["PADDLE_HETER_TRAINER_IP_PORT_LIST"] == (
        "ctr-heter-0.ctr-heter.ml.svc:6175,ctr-heter-1.ctr-heter.ml.svc:6175")
    assert env["PSJOB_HETER_TRAINERS"] == "2" and env["PSJOB_DEVICE"] == "gpu"
    resolved = roles.resolve_identity(env, "ctr-heter-1")
    assert resolved["PSJOB_HETER_TRAINER_ID"] == "1"
    assert resolved["PADDLE_PORT"] == "6175"
    assert resolved["PADDLE_CURRENT_IP"] == "ctr-heter-1.ctr-heter.ml.svc"
    assert resolved["PADDLE_PSERVER_PORT"] == "6174"
    assert resolved[roles.STAY_UNTIL_STOPPED_ENV] == "1"   # a StatefulSet pod, like a pserver's
    trainer = roles.role_environment(topo, roles.TRAINER, 0)
    assert trainer["PADDLE_HETER_TRAINER_IP_PORT_LIST"] == env["PADDLE_HETER_TRAINER_IP_PORT_LIST"]


def test_local_pservers_sharing_one_port_keep_the_fluid_ips_times_port_contract(tmp_path):
    topo = roles.local_topology(job(), [7001, 7001], tmp_path)
    env = roles.role_environment(topo, roles.TRAINER, 0)
    joined = [f"{ip}:{env['PADDLE_PSERVER_PORT']}" for ip in env["PADDLE_PSERVER_IPS"].split(",")]
    assert ",".join(joined) == env["PADDLE_PSERVER_ENDPOINTS"] == "127.0.0.1:7001,127.0.0.2:7001"


def test_local_topology_wants_one_port_per_server(tmp_path):
    with pytest.raises(ValueError, match="needs 2 pserver port"):
        roles.local_topology(job(), [7001], tmp_path)


def test_a_hostname_that_is_not_a_statefulset_pod_is_refused_with_the_expected_name():
    env = roles.role_environment(roles.kubernetes_topology(job(), "ml"), roles.PSERVER, None)
    with pytest.raises(ValueError, match="is not 'ctr-pserver-<index>'"):
        roles.resolve_identity(env, "laptop")
    with pytest.raises(ValueError, match="has index 5 but the job has 2"):
        roles.resolve_identity(env, "ctr-pserver-5")


def test_an_index_out_of_range_is_refused():
    topo = roles.kubernetes_topology(job(), "ml")
    with pytest.raises(ValueError, match="TRAINER index 3 out of range: the job has 3"):
        roles.role_environment(topo, roles.TRAINER, 3)
    with pytest.raises(ValueError, match="role must be one of"):
        roles.role_environment(topo, "WORKER", 0)


def test_a_topology_with_bad_endpoints_or_mode_is_refused():
    with pytest.raises(ValueError, match="is not 'host:port'"):
        roles.JobTopology("j", "ns", ("localhost",), trainers=1)
    with pytest.raises(ValueError, match="mode must be one of"):
        roles.JobTopology("j", "ns", ("h:1",), trainers=1, mode="fast")
    with pytest.raises(ValueError, match="k_steps must be >= 1 in geo mode"):
        roles.JobTopology("j", "ns", ("h:1",), trainers=1, mode="geo")


def test_a_topology_survives_a_json_round_trip():
    topo = roles.kubernetes_topology(job(heterWorker={"replicas": 1}), "ml")
    assert roles.topology_from_dict(roles.topology_to_dict(topo)) == topo
    with pytest.raises(ValueError, match="unknown JobTopology field"):
        roles.topology_from_dict({**roles.topology_to_dict(topo), "extra": 1})


def test_every_variable_psjob_sets_is_reserved():
    topo = roles.kubernetes_topology(job(heterWorker={"replicas": 1}), "ml")
    for role in roles.ROLES:
        for index in (None, 0):
            env = roles.role_environment(topo, role, index)
            assert set(env) <= set(roles.RESERVED_ENV), role


def test_the_incremental_checkpoint_policy_reaches_every_role_and_the_pserver_and_trainer_settings():
    from psjob.cluster.trainer.checkpointer import CheckpointConfig
    from psjob.foundation.settings import Settings
    topo = roles.kubernetes_topology(job(checkpoint={"incremental": {"enabled": True, "baseEvery": 4}}), "ml")
    for role in (roles.PSERVER, roles.TRAINER):
        env = roles.role_environment(topo, role, 0)
        assert env["PSJOB_CHECKPOINT_INCREMENTAL"] == "1" and env["PSJOB_CHECKPOINT_BASE_EVERY"] == "4"
    config = CheckpointConfig.of(Settings(roles.role_environment(topo, roles.TRAINER, 0)))
    assert config.incremental and config.base_every == 4
    assert Settings(roles.role_environment(topo, roles.PSERVER, 0)).checkpoint.incremental  # the pserver's ServeOptions
    assert roles.topology_from_dict(roles.topology_to_dict(topo)) == topo
    with pytest.raises(Exception, match="PSJOB_CHECKPOINT_INCREMENTAL is set by psjob"):
        job(worker={"replicas": 1, "env": [{"name": "PSJOB_CHECKPOINT_INCREMENTAL", "value": "1"}]})


def collective_job(**spec):
    body = {"image": "psjob:test", "mode": "collective", "command": ["python", "t.py"],
            "worker": {"replicas": 3}}
    body.update(spec)
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ring", "namespace": "ml"}, "spec": body})


def test_a_collective_job_names_its_trainers_by_the_indexed_job_pods_dns_names():
    topo = roles.kubernetes_topology(collective_job(), "ml")
    ring = [f"ring-worker-{i}.ring-worker.ml.svc:{roles.DEFAULT_TRAINER_PORT}" for i in range(3)]
    assert topo.pserver_endpoints == () and list(topo.trainer_endpoints) == ring
    env = roles.role_environment(topo, roles.TRAINER, None)
    assert env["PADDLE_TRAINER_ENDPOINTS"] == ",".join(ring) and env["PADDLE_TRAINERS_NUM"] == "3"
    assert env["PSJOB_MODE"] == "collective"
    assert not any(name.startswith(("PADDLE_PSERVER", "PADDLE_PSERVERS")) for name in env)
    # The pod learns its id from the completion index, then its own place in the ring.
    resolved = roles.resolve_identity({**env, "JOB_COMPLETION_INDEX": "2"}, "ring-worker-2")
    assert resolved["PADDLE_TRAINER_ID"] == "2" and resolved["PADDLE_CURRENT_ENDPOINT"] == ring[2]
    with pytest.raises(ValueError, match="a collective job has trainers only"):
        roles.role_environment(topo, roles.PSERVER, 0)


def test_a_collective_topology_round_trips_and_refuses_pservers():
    topo = roles.kubernetes_topology(collective_job(worker={"replicas": 2, "port": 7000}), "ml")
    assert roles.topology_from_dict(roles.topology_to_dict(topo)) == topo
    assert topo.trainer_endpoints[1] == "ring-worker-1.ring-worker.ml.svc:7000"
    with pytest.raises(ValueError, match="no pservers"):
        roles.JobTopology(job_name="x", namespace="n", pserver_endpoints=("a:1",), trainers=1,
                          mode="collective", trainer_endpoints=("b:2",))
    # A parameter-server job's topology has no trainer_endpoints key (older readers take it).
    assert "trainer_endpoints" not in roles.topology_to_dict(roles.kubernetes_topology(job(), "ml"))
