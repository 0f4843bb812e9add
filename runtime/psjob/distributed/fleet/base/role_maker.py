"""`paddle.distributed.fleet.base.role_maker`: Paddle 2.x's role makers over psjob's.

`PaddleCloudRoleMaker` reads the Paddle 2.x environment (TRAINING_ROLE,
PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ID,
POD_IP, PADDLE_PORT) or the Fluid one psjob's launchers also set.
`UserDefinedRoleMaker` takes 2.x's arguments: the number of workers is
`worker_num` or, as in Paddle, the length of `worker_endpoints`.
Without a launcher (no role and no pservers in the environment) `PaddleCloudRoleMaker` is,
as Paddle's, the single worker of a non-distributed run (`_is_non_distributed()`): worker
0 of 1, no servers; `fleet.distributed_optimizer(...).minimize` then adds the optimizer's
own update ops, as Paddle's does.
Both also answer Paddle 2.x's underscored names (`_generate_role`, `_is_worker`,
`_is_server`, `_is_heter_worker`, `_worker_index`, `_server_index`, ...).
"""
from __future__ import annotations

from psjob.fleet.role_maker import PaddleCloudRoleMaker as _CloudRoleMaker
from psjob.fleet.role_maker import Role, RoleMakerBase, RoleMakerError  # noqa: F401
from psjob.fleet.role_maker import UserDefinedRoleMaker as _UserDefinedRoleMaker
from psjob.foundation.role_env import RoleEnv, names_no_job


class _PrivateNames:
    """The underscored methods of Paddle 2.x's role makers, which Paddle's own programs call
    (its parameter-server tests: `role_maker._generate_role()`, `_is_heter_worker()`), over
    psjob's public ones. `_generate_role` reads the role once, as Paddle's does."""

    _non_distributed = False

    def _is_non_distributed(self):
        """Whether this process runs without a job: no launcher set its role."""
        return self._non_distributed

    def _generate_role(self):
        if not self._generated:
            self.generate_role()

    def _is_worker(self):
        return self.is_worker()

    def _is_server(self):
        return self.is_server()

    def _is_heter_worker(self):
        return self.is_heter_worker()

    def _is_first_worker(self):
        return self.is_first_worker()

    def _worker_index(self):
        return self.worker_index()

    def _server_index(self):
        return self.server_index()

    def _role_id(self):
        return self.role_id()

    def _server_num(self):
        return self.server_num()

    def _get_pserver_endpoints(self):
        return self.get_pserver_endpoints()

    def _get_trainer_endpoints(self):
        return self.get_trainer_endpoints()

    def _get_heter_worker_endpoints(self):
        return self.get_heter_worker_endpoints()


class PaddleCloudRoleMaker(_PrivateNames, _CloudRoleMaker):
    """Paddle's reads the environment when the role is generated (`_generate_role`, which
    fleet.init and every role query call first), not when it is made: an environment psjob
    cannot read makes the role maker all the same, and its error (a ValueError) is raised by
    generate_role, which reads the environment again, and by every role query before it."""

    def __init__(self, is_collective=False, **kwargs):
        self._args = (is_collective, kwargs)
        self._env_error: RoleMakerError | None = None
        # Paddle's kwargs (path, init_gloo, ...) configure gloo, which psjob does not use.
        environ = kwargs.get("environ")
        # As Paddle's: a process no launcher started (no role, no pservers in its environment)
        # is the single worker of a non-distributed run.
        self._non_distributed = not is_collective and names_no_job(environ)
        role_env = RoleEnv.non_distributed(environ) if self._non_distributed else None
        try:
            super().__init__(is_collective=is_collective, environ=environ, role_env=role_env)
            if not (is_collective or self._non_distributed) and not self.role_env.trainer_id_named:
                # Paddle 2.x's trainer needs its id (Fluid's, psjob.fleet's, defaulted it to 0).
                raise RoleMakerError("Can not find PADDLE_TRAINER_ID, please check your environment.")
        except RoleMakerError as exc:
            RoleMakerBase.__init__(self)
            self._env_error = exc

    def generate_role(self):
        if self._env_error is not None:
            is_collective, kwargs = self._args
            self.__init__(is_collective, **kwargs)  # the environment as it is now, as Paddle reads it
            if self._env_error is not None:
                raise self._env_error
            return
        super().generate_role()


def _generating_first(name: str):
    query = getattr(_CloudRoleMaker, name)

    def generating_first(self, *args, **kwargs):
        if self._env_error is not None:
            self.generate_role()
        return query(self, *args, **kwargs)
    generating_first.__name__ = name
    generating_first.__doc__ = query.__doc__
    return generating_first


for _name in ("settings", "is_worker", "is_server", "is_heter_worker", "is_first_worker", "worker_index",
              "server_index", "role_id", "worker_num", "worker_capacity", "server_num", "get_pserver_endpoints",
              "get_heter_worker_endpoints", "get_trainer_endpoints", "current_endpoint"):
    setattr(PaddleCloudRoleMaker, _name, _generating_first(_name))


class UserDefinedRoleMaker(_PrivateNames, _UserDefinedRoleMaker):
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
