"""A trainer whose last gradients cannot reach a lost pserver exits 75 (started again without
counting), not 1: the communicator's failure surfaces at stop_worker, after the last step.

Seen in the kubelet emulator under load: trainer 0 had trained its whole share when the
pserver's pod was lost, its final flush failed, and the traceback's exit 1 failed a job
with backoffLimit 0. Real: a GrpcPSClient to a port where nothing listens (the pserver is gone),
the Communicator, and the entrypoint's exit-status mapping.
"""
import numpy as np

from psjob.cluster.rpc.client import GrpcPSClient
from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
from psjob.foundation import roles
from psjob.foundation.role_env import RoleEnv
from psjob.launcher import entrypoints
from psjob.launcher.local import free_ports


def test_a_trainer_whose_final_flush_finds_its_pserver_gone_exits_75(capsys):
    endpoint = f"127.0.0.1:{free_ports(1)[0]}"
    settings = {"PSJOB_RPC_DEADLINE_S": "1", "PSJOB_RPC_MAX_ATTEMPTS": "1", "PSJOB_PSERVER_RECOVERY_S": "0"}
    role = RoleEnv.from_environ({"PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_PSERVER_ENDPOINTS": endpoint,
                                "PADDLE_TRAINERS": "1", "PADDLE_TRAINER_ID": "0", **settings}, hostname="x")
    comm = Communicator(GrpcPSClient([endpoint], 0, tls=None, settings=role.settings),
                        CommunicatorConfig(send_wait_s=0))
    comm.push(endpoint, {"fc_0.w_0@GRAD": np.ones((4, 2), np.float32)})  # the last step's gradient

    status = entrypoints._run(lambda opts, role_env: comm.stop(), None, role, "psjob worker")

    assert status == roles.PSERVER_UNREACHABLE_EXIT
    err = capsys.readouterr().err
    assert "communicator failed" in err and f"exiting {roles.PSERVER_UNREACHABLE_EXIT}" in err, err
