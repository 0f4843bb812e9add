"""`paddle.distributed.fleet.base.role_maker`: Paddle 2.x's role makers over psjob's.

`PaddleCloudRoleMaker` reads the Paddle 2.x environment (TRAINING_ROLE,
PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ID,
POD_IP, PADDLE_PORT) or the Fluid one psjob's launchers also set.
`UserDefinedRoleMaker` takes 2.x's arguments: the number of workers is
`worker_num` or, as in Paddle, the length of `worker_endpoints`.
"""
from __future__ import annotations

from psjob.fleet.role_maker import PaddleCloudRoleMaker as _CloudRoleMaker
from psjob.fleet.role_maker import Role, RoleMakerBase, RoleMakerError  # noqa: F401
from psjob.fleet.role_maker import UserDefinedRoleMaker as _UserDefinedRoleMaker


class PaddleCloudRoleMaker(_CloudRoleMaker):
    def __init__(self, is_collective=False, **kwargs):
        # Paddle's kwargs (path, init_gloo, ...) configure gloo, which psjob does not use.
        super().__init__(is_collective=is_collective, environ=kwargs.get("environ"))


class UserDefinedRoleMaker(_UserDefinedRoleMaker):
    def __init__(self, is_collective=False, init_gloo=False, current_id=0, role=Role.WORKER,
                 worker_endpoints=None, server_endpoints=None, worker_num=None, **kwargs):
        if is_collective:
            raise RoleMakerError("UserDefinedRoleMaker(is_collective=True) is not supported by psjob: "
                                 "collective trainers read their ring from the environment "
                                 "(PaddleCloudRoleMaker(is_collective=True) or fleet.init(is_collective=True))")
        if worker_num is None:
            worker_num = len(worker_endpoints) if worker_endpoints else 1
        elif worker_endpoints and len(worker_endpoints) != worker_num:
            raise RoleMakerError(f"worker_num={worker_num} but worker_endpoints lists {len(worker_endpoints)}")
        super().__init__(current_id=current_id, role=role, worker_num=worker_num,
                         server_endpoints=server_endpoints, heter_worker_endpoints=kwargs.get("heter_worker_endpoints"),
                         worker_endpoints=worker_endpoints)
