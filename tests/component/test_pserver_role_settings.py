"""A Fleet pserver serves with its RoleEnv's settings, which the entrypoint read once: the
pserver service started by the executor's listen op does not read the process environment.

Real: a Fleet with a PaddleCloudRoleMaker given a RoleEnv built from a mapping (not
os.environ), its pserver program served over gRPC on 127.0.0.1 in a thread, PSClients.
The process environment holds no auth token; the role's settings do.
"""
import threading

import pytest

import psjob.fluid as fluid
from psjob import roles
from psjob.fleet.fleet import Fleet
from psjob.fleet.role_maker import PaddleCloudRoleMaker
from psjob.launcher.launch import free_ports, write_token
from psjob.ps.auth import read_token
from psjob.role_env import RoleEnv
from psjob.rpc.client import PSClient, RetryPolicy, RpcError


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
    fleet = Fleet()
    fleet.init(PaddleCloudRoleMaker(role_env=role))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        strategy = fluid.DistributeTranspilerConfig()
        strategy.sync_mode = False
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), strategy).minimize(loss)
    fleet.init_server(executor=fluid.Executor())
    served = threading.Thread(target=fleet.run_server, daemon=True)
    served.start()

    token = read_token(token_file)
    quick = RetryPolicy(deadline_s=10, max_attempts=1)
    trainer = PSClient([endpoint], 0, auth_token=token, tls=None, retry=quick)
    stranger = PSClient([endpoint], 0, tls=None, retry=quick)
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
