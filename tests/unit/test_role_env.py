"""RoleEnv: the role environment read once, typed and checked, as every process starts."""
from __future__ import annotations

import pytest

from psjob.foundation import roles
from psjob.foundation.jobspec import parse_job
from psjob.foundation.role_env import RoleEnv, RoleEnvError


def job(**spec):
    body = {"image": "psjob:test", "pserver": {"replicas": 2}, "worker": {"replicas": 3}}
    body.update(spec)
    return parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr", "namespace": "ml"}, "spec": body})


def rendered(role, index, spec=None, **extra):
    env = roles.role_environment(roles.kubernetes_topology(spec or job(), "ml"), role, index)
    env.update(extra)
    return env


def test_a_pserver_of_the_statefulset_learns_its_index_and_endpoint_from_its_hostname():
    env = RoleEnv.from_environ(rendered(roles.PSERVER, None), hostname="ctr-pserver-1")
    assert env.is_pserver and env.index == 1
    assert env.current_endpoint == "ctr-pserver-1.ctr-pserver.ml.svc:6174"
    assert env.pserver_endpoints == ("ctr-pserver-0.ctr-pserver.ml.svc:6174", "ctr-pserver-1.ctr-pserver.ml.svc:6174")
    assert (env.trainers, env.mode, env.device) == (3, "sync", "cpu")
    assert env.checkpoint_dir == roles.KUBERNETES_CHECKPOINT_DIR
    assert env.auth_token_file == roles.KUBERNETES_AUTH_TOKEN_FILE


def test_a_trainer_id_comes_from_the_indexed_job_or_stays_auto_for_the_rendezvous():
    assert RoleEnv.from_environ(rendered(roles.TRAINER, None, JOB_COMPLETION_INDEX="2"), hostname="x").index == 2
    assert RoleEnv.from_environ(rendered(roles.TRAINER, None), hostname="x").index is None


def test_geo_mode_carries_its_k_steps_and_a_heter_trainer_defaults_to_the_gpu():
    geo = RoleEnv.from_environ(rendered(roles.TRAINER, 0, job(mode="geo", kSteps=7)), hostname="x")
    assert (geo.mode, geo.k_steps, geo.index) == ("geo", 7, 0)
    env = rendered(roles.HETER_TRAINER, 0, job(heterWorker={"replicas": 1}))
    env.pop("PSJOB_DEVICE", None)
    heter = RoleEnv.from_environ(env, hostname="x")
    assert heter.is_heter_trainer and heter.device == "gpu" and heter.heter_trainers == 1
    assert heter.current_endpoint == heter.heter_endpoints[0]


def test_a_fluid_script_environment_of_ips_and_one_port_names_every_pserver():
    env = RoleEnv.from_environ({"PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_PSERVER_IPS": "10.0.0.1,10.0.0.2",
                                "PADDLE_PSERVER_PORT": "6000", "PADDLE_TRAINERS": "2", "PADDLE_TRAINER_ID": "1"},
                               hostname="x")
    assert env.pserver_endpoints == ("10.0.0.1:6000", "10.0.0.2:6000") and env.index == 1


@pytest.mark.parametrize("change, message", [
    ({"PADDLE_TRAINERS": "three"}, "PADDLE_TRAINERS must be an integer, got 'three'"),
    ({"PADDLE_TRAINER_ID": "3"}, r"PADDLE_TRAINER_ID 3 out of range \(PADDLE_TRAINERS=3\)"),
    ({"PSJOB_MODE": "fast"}, "PSJOB_MODE must be one of"),
    ({"PADDLE_PSERVER_ENDPOINTS": "a:1,b"}, "PADDLE_PSERVER_ENDPOINTS entry 'b' is not 'host:port'"),
    ({"PADDLE_TRAINING_ROLE": "CHIEF"}, "PADDLE_TRAINING_ROLE must be one of"),
    ({"PSJOB_K_STEPS": "-1"}, "PSJOB_K_STEPS must be at least 0"),
])
def test_a_wrong_variable_is_refused_by_name(change, message):
    with pytest.raises(RoleEnvError, match=message):
        RoleEnv.from_environ(rendered(roles.TRAINER, 0, **change), hostname="x")


def test_a_pserver_whose_endpoint_is_not_listed_is_refused():
    env = rendered(roles.PSERVER, 0, PSJOB_CURRENT_ENDPOINT="elsewhere:1")
    with pytest.raises(RoleEnvError, match="this pserver's endpoint elsewhere:1 is not in PADDLE_PSERVER_ENDPOINTS"):
        RoleEnv.from_environ(env, hostname="x")


def test_the_topology_file_supplies_what_the_environment_does_not_set_and_the_environment_wins(tmp_path):
    import json
    topology = roles.kubernetes_topology(job(mode="geo", kSteps=9), "ml")
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(roles.topology_to_dict(topology)))
    bare = {"PADDLE_TRAINING_ROLE": roles.TRAINER, "PADDLE_TRAINER_ID": "1", "PSJOB_TOPOLOGY_FILE": str(path)}
    env = RoleEnv.from_environ(bare, hostname="x")
    assert env.pserver_endpoints == topology.pserver_endpoints and (env.trainers, env.index) == (3, 1)
    assert (env.mode, env.k_steps, env.job_name) == ("geo", 9, "ctr")
    assert env.environ["PSJOB_AUTH_TOKEN_FILE"] == roles.KUBERNETES_AUTH_TOKEN_FILE
    assert env.settings.rpc.auth_token_file == roles.KUBERNETES_AUTH_TOKEN_FILE
    assert RoleEnv.from_environ({**bare, "PSJOB_K_STEPS": "4"}, hostname="x").k_steps == 4


def test_an_unreadable_topology_file_is_named(tmp_path):
    bare = {"PADDLE_TRAINING_ROLE": roles.TRAINER, "PADDLE_TRAINER_ID": "0"}
    with pytest.raises(RoleEnvError, match="PSJOB_TOPOLOGY_FILE .*missing.json: cannot read it"):
        RoleEnv.from_environ({**bare, "PSJOB_TOPOLOGY_FILE": str(tmp_path / "missing.json")}, hostname="x")
    (tmp_path / "bad.json").write_text('{"pservers": 2}')
    with pytest.raises(RoleEnvError, match="bad.json: not a job topology .*unknown JobTopology field"):
        RoleEnv.from_environ({**bare, "PSJOB_TOPOLOGY_FILE": str(tmp_path / "bad.json")}, hostname="x")


def test_the_settings_are_parsed_once_from_the_completed_environment_and_typed():
    from psjob.foundation.settings import Settings, SettingsError
    # A pserver container started in a pod: the command completes PSJOB_BIND_ALL, and the
    # RoleEnv's settings are parsed from that completed environment.
    env, from_hostname = RoleEnv.for_command(roles.PSERVER, "psjob pserver", rendered(roles.PSERVER, None),
                                             hostname="ctr-pserver-1")
    assert from_hostname and env.index == 1
    assert env.environ["PSJOB_BIND_ALL"] == "1" and env.settings.serve.bind_all_interfaces
    assert env.settings.checkpoint.root == roles.KUBERNETES_CHECKPOINT_DIR
    assert env.settings.process.mode is roles.Mode.SYNC and env.mode is roles.Mode.SYNC
    # One frozen object per concern, parsed on first use and kept.
    settings = Settings({"PSJOB_RPC_DEADLINE_S": "2"})
    assert settings.rpc is settings.rpc and settings.rpc.retry.deadline_s == 2.0
    with pytest.raises(Exception, match="frozen|cannot assign"):
        settings.rpc.wait_server_timeout_s = 1.0
    # A bad value fails where its concern is asked for, naming the variable.
    bad = Settings({"PSJOB_MODE": "fast", "PSJOB_METRICS_PORT": "9200"})
    assert bad.metrics.port == 9200
    with pytest.raises(SettingsError, match="PSJOB_MODE must be one of sync, async, half_async, geo, collective"):
        bad.process


def test_a_command_that_contradicts_the_role_environment_is_refused_by_name():
    with pytest.raises(RoleEnvError, match="started with PADDLE_TRAINING_ROLE=TRAINER: run psjob worker"):
        RoleEnv.for_command(roles.PSERVER, "psjob pserver", rendered(roles.TRAINER, 0))
    with pytest.raises(RoleEnvError, match="psjob worker reads its job from the environment"):
        RoleEnv.for_command(roles.TRAINER, "psjob worker", {})
