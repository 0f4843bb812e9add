"""A Fleet process serves and calls with its RoleEnv's settings, which the entrypoint read
once: the pserver service started by the executor's listen op, and every RPC client of a
trainer (the role maker's registration, init_worker's, a checkpoint save's), do not read the
process environment.

Real: Fleets with a PaddleCloudRoleMaker given a RoleEnv built from a mapping (not
os.environ), a pserver program served over gRPC on 127.0.0.1 in a thread, PSClients.
The process environment holds no auth token and no TLS settings; the roles' settings do.
"""
import importlib.util
import os
import threading

import pytest

import psjob.fluid as fluid
from psjob.cluster.rpc.auth import read_token
from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy, RpcError
from psjob.cluster.rpc.tls import TlsFiles
from psjob.cluster.trainer import checkpoint_save
from psjob.fleet.fleet import Fleet
from psjob.fleet.role_maker import PaddleCloudRoleMaker
from psjob.foundation import roles
from psjob.foundation.role_env import RoleEnv
from psjob.launcher.launch import free_ports, write_token

_spec = importlib.util.spec_from_file_location(
    "faultkit", os.path.join(os.path.dirname(os.path.abspath(__file__)), "faultkit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)
make_certs = kit.load(os.path.join(kit.SCRIPTS, "make_certs.py")).make_certs


def build(fleet):
    """A tiny async model, transpiled by `fleet` for its role."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        strategy = fluid.DistributeTranspilerConfig()
        strategy.sync_mode = False
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), strategy).minimize(loss)
    return main, startup


def serve(role):
    """A Fleet pserver of `role`, serving in a thread."""
    fleet = Fleet()
    fleet.init(PaddleCloudRoleMaker(role_env=role))
    build(fleet)
    fleet.init_server(executor=fluid.Executor())
    served = threading.Thread(target=fleet.run_server, daemon=True)
    served.start()
    return served


def test_a_fleet_pserver_takes_its_token_from_the_role_settings_not_the_process_environment(tmp_path,
                                                                                             monkeypatch):
    monkeypatch.delenv("PSJOB_AUTH_TOKEN_FILE", raising=False)
    monkeypatch.delenv("PSJOB_METRICS_PORT", raising=False)
    endpoint = f"127.0.0.1:{free_ports(1)[0]}"
    token_file = write_token(str(tmp_path))
    role = RoleEnv.from_environ({
        "PADDLE_TRAINING_ROLE": roles.PSERVER, "PADDLE_PSERVER_ENDPOINTS": endpoint,
        "PSJOB_CURRENT_ENDPOINT": endpoint, "PSJOB_PSERVER_INDEX": "0", "PADDLE_TRAINERS": "1",
        "PSJOB_MODE": "async",
        "PSJOB_AUTH_TOKEN_FILE": token_file})
    served = serve(role)

    token = read_token(token_file)
    quick = RetryPolicy(deadline_s=10, max_attempts=1)
    trainer = GrpcPSClient([endpoint], 0, auth_token=token, tls=None, retry=quick)
    stranger = GrpcPSClient([endpoint], 0, tls=None, retry=quick)
    try:
        trainer.wait_server_ready(timeout_s=60)
        with pytest.raises(RpcError, match="UNAUTHENTICATED"):
            stranger.status(endpoint)
        assert trainer.status(endpoint).state == "SERVING"
        trainer.complete()
        served.join(30)
        assert not served.is_alive(), "the pserver kept serving after its only trainer completed"
    finally:
        trainer.close()
        stranger.close()


def test_a_fleet_trainers_clients_take_tls_and_token_from_the_role_settings(tmp_path, monkeypatch):
    """The pserver speaks only TLS; the trainer's process environment names no CA, its
    RoleEnv does: registering for an id (PADDLE_TRAINER_ID auto), init_worker's client and a
    checkpoint save's own client all reach the pserver, so each took the role's settings."""
    for name in ("PSJOB_AUTH_TOKEN_FILE", "PSJOB_METRICS_PORT", "PSJOB_TLS_CERT_FILE", "PSJOB_TLS_KEY_FILE",
                 "PSJOB_TLS_CA_FILE"):
        monkeypatch.delenv(name, raising=False)
    # A client that read the process environment instead would give up quickly, not hang.
    for name, value in (("PSJOB_WAIT_SERVER_TIMEOUT", "3"), ("PSJOB_RPC_DEADLINE_S", "2"),
                        ("PSJOB_RPC_MAX_ATTEMPTS", "1"), ("PSJOB_PSERVER_RECOVERY_S", "0")):
        monkeypatch.setenv(name, value)
    ca, cert, key = make_certs(str(tmp_path / "certs"))
    endpoint = f"127.0.0.1:{free_ports(1)[0]}"
    token_file = write_token(str(tmp_path))
    job = {"PADDLE_PSERVER_ENDPOINTS": endpoint, "PADDLE_TRAINERS": "2", "PSJOB_MODE": "async",
           "PSJOB_AUTH_TOKEN_FILE": token_file}
    served = serve(RoleEnv.from_environ({
        **job, "PADDLE_TRAINING_ROLE": roles.PSERVER, "PSJOB_CURRENT_ENDPOINT": endpoint,
        "PSJOB_PSERVER_INDEX": "0", "PSJOB_TLS_CERT_FILE": cert, "PSJOB_TLS_KEY_FILE": key}))
    other = GrpcPSClient([endpoint], 1, auth_token=read_token(token_file), tls=TlsFiles(ca_file=ca),
                     retry=RetryPolicy())
    try:
        other.wait_server_ready(timeout_s=60)
        fleet = Fleet()
        fleet.init(PaddleCloudRoleMaker(role_env=RoleEnv.from_environ({
            **job, "PADDLE_TRAINING_ROLE": roles.TRAINER, "PADDLE_TRAINER_ID": "auto", "PSJOB_TLS_CA_FILE": ca})))
        assert fleet.worker_index() == 0  # registered with the pserver over TLS
        build(fleet)
        fleet.init_worker()
        fluid.Executor().run(fleet.startup_program)  # pulls the parameters through init_worker's client
        fleet.stop_worker()  # completes trainer 0 over TLS; trainer 1 keeps the pserver serving

        # No trainer service is installed any more: a save opens its own client.
        program, dist = fleet.checkpoint_target()
        client, _flush, close = checkpoint_save.rpc_service(fluid.Executor(), program, dist)
        try:
            assert client.status(endpoint).completed_trainers == [0]
        finally:
            close()
        other.complete()
        served.join(30)
        assert not served.is_alive(), "the pserver kept serving after both trainers completed"
    finally:
        other.close()
