"""Role makers: who am I in the job (server or worker, which index, who are the others).

`PaddleCloudRoleMaker` reads the environment contract that psjob.foundation.roles
renders (and that the operator, `psjob launch` and `psjob run` set);
`UserDefinedRoleMaker` takes the same facts as arguments.
"""
from __future__ import annotations

import enum
import socket

from psjob.foundation import roles
from psjob.foundation.role_env import CollectiveEnv, RoleEnv, RoleEnvError
from psjob.foundation.roles import Mode
from psjob.foundation.settings import TRAINER_ID, Settings, process_settings


class Role(enum.IntEnum):
    WORKER = 1
    SERVER = 2
    HETER_WORKER = 3


class RoleMakerError(ValueError):
    pass


class RoleMakerBase:
    # A collective (NCCL2-mode) trainer's place (is_collective=True); None in a PS job.
    collective: CollectiveEnv | None = None

    def __init__(self):
        self._role = Role.WORKER
        self._current_id = 0
        self._worker_num = 1
        self._server_endpoints: list[str] = []
        self._heter_endpoints: list[str] = []
        self._worker_endpoints: list[str] = []
        self._mode = Mode.SYNC
        self._k_steps = 0
        self._worker_capacity = 0  # elastic jobs: the most trainers at once (0: not elastic)
        self._generated = False

    def generate_role(self):
        self._generated = True

    def settings(self) -> Settings:
        """This process's settings (checkpoints, RPC, TLS, metrics): a user-defined role's are
        the process environment's, built once (on the first call) and kept; PaddleCloudRoleMaker's,
        its RoleEnv's."""
        settings = getattr(self, "_process_settings", None)
        if settings is None:
            settings = self._process_settings = process_settings()
        return settings

    def is_worker(self) -> bool:
        return self._role == Role.WORKER

    def is_server(self) -> bool:
        return self._role == Role.SERVER

    def is_heter_worker(self) -> bool:
        return self._role == Role.HETER_WORKER

    def is_first_worker(self) -> bool:
        return self.is_worker() and self._current_id == 0

    def worker_index(self) -> int:
        return self._current_id if self.is_worker() else 0

    def server_index(self) -> int:
        return self._current_id if self.is_server() else 0

    def role_id(self) -> int:
        return self._current_id

    def worker_num(self) -> int:
        return self._worker_num

    def worker_capacity(self) -> int:
        """Elastic jobs (PSJOB_MAX_TRAINERS): the most trainers the job may have at once,
        which the programs are transpiled for; 0 when the trainer count is fixed."""
        return self._worker_capacity

    def server_num(self) -> int:
        return len(self._server_endpoints)

    def get_pserver_endpoints(self) -> list[str]:
        return list(self._server_endpoints)

    def get_heter_worker_endpoints(self) -> list[str]:
        return list(self._heter_endpoints)

    def get_trainer_endpoints(self) -> list[str]:
        """The trainers' endpoints as the job names them (PADDLE_TRAINER_ENDPOINTS; a psjob
        trainer serves no RPC: its endpoint is where its /metrics are), or [] when not given."""
        return list(self._worker_endpoints)

    def current_endpoint(self) -> str:
        if self.is_server():
            return self._server_endpoints[self._current_id]
        if self.is_heter_worker():
            return self._heter_endpoints[self._current_id]
        return ""

    @property
    def mode(self) -> Mode:
        return self._mode


class UserDefinedRoleMaker(RoleMakerBase):
    def __init__(self, current_id=0, role=Role.WORKER, worker_num=1, server_endpoints=None,
                 heter_worker_endpoints=None, worker_endpoints=None):
        super().__init__()
        if not isinstance(role, Role):
            raise RoleMakerError(f"role must be Role.WORKER, Role.SERVER or Role.HETER_WORKER, got {role!r}")
        server_endpoints = list(server_endpoints or [])
        if not server_endpoints:
            raise RoleMakerError("server_endpoints must list at least one pserver ip:port")
        for ep in server_endpoints:
            roles.split_endpoint(ep)
        if worker_num < 1:
            raise RoleMakerError(f"worker_num must be >= 1, got {worker_num}")
        limit = {Role.WORKER: worker_num, Role.SERVER: len(server_endpoints),
                 Role.HETER_WORKER: len(heter_worker_endpoints or [])}[role]
        if not 0 <= current_id < limit:
            raise RoleMakerError(f"current_id {current_id} out of range for {role.name} (0..{limit - 1})")
        self._role, self._current_id, self._worker_num = role, int(current_id), int(worker_num)
        self._server_endpoints = server_endpoints
        self._heter_endpoints = list(heter_worker_endpoints or [])
        self._worker_endpoints = list(worker_endpoints or [])


class PaddleCloudRoleMaker(RoleMakerBase):
    """The role of the environment's contract (psjob.foundation.role_env.RoleEnv: PADDLE_TRAINING_ROLE,
    PADDLE_PSERVER_ENDPOINTS or IPS+PORT, PADDLE_TRAINERS, ..., or Paddle 2.x's TRAINING_ROLE,
    PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ID, POD_IP + PADDLE_PORT). A process that already read
    its RoleEnv (the container entrypoints) passes it as `role_env`; a Fluid script's is read
    from `environ` (the process environment by default)."""

    def __init__(self, is_collective=False, environ=None, role_env: RoleEnv | None = None):
        super().__init__()
        if is_collective:
            # Collective: every process is a trainer of the ring PADDLE_TRAINER_ENDPOINTS names.
            self._settings = process_settings() if environ is None else Settings(environ)
            try:
                self.collective = CollectiveEnv.from_environ(self._settings.environ)
            except RoleEnvError as exc:
                raise RoleMakerError(str(exc)) from None
            self.role_env = None
            self._server_endpoints, self._heter_endpoints = [], []
            self._worker_endpoints = list(self.collective.endpoints)
            self._worker_num, self._worker_capacity = self.collective.world_size, 0
            self._mode, self._k_steps = Mode.COLLECTIVE, 0
            self._role, self._current_id = Role.WORKER, self.collective.rank
            self._generated = True
            return
        if role_env is None:
            try:
                role_env = RoleEnv.from_environ(environ)  # None: this process's environment
            except RoleEnvError as exc:
                raise RoleMakerError(str(exc)) from None
        self.role_env = role_env
        self.generate_role()

    def settings(self) -> Settings:
        return self._settings if self.collective is not None else self.role_env.settings

    def generate_role(self):
        if self.collective is not None:
            return
        env = self.role_env
        self._server_endpoints = list(env.pserver_endpoints)
        self._heter_endpoints = list(env.heter_endpoints)
        self._worker_endpoints = list(env.trainer_endpoints)
        self._worker_num = env.trainers
        self._mode, self._k_steps = env.mode, env.k_steps
        self._worker_capacity = env.max_trainers
        self._role = {roles.PSERVER: Role.SERVER, roles.HETER_TRAINER: Role.HETER_WORKER}.get(env.role, Role.WORKER)
        self._current_id = env.index if env.index is not None else self._register()
        if self._role == Role.WORKER and not 0 <= self._current_id < max(self._worker_num,
                                                                          self._worker_capacity):
            raise RoleMakerError(f"{TRAINER_ID} {self._current_id} out of range "
                                 f"(PADDLE_TRAINERS={self._worker_num})")
        self._generated = True

    def _register(self) -> int:
        """A Deployment pod has no stable index: ask pserver 0 for a trainer id."""
        from psjob.cluster.rpc.auth import read_token
        from psjob.cluster.rpc.client import GrpcPSClient
        client = GrpcPSClient(self._server_endpoints, auth_token=read_token(self.role_env.auth_token_file),
                          settings=self.role_env.settings)
        try:
            client.wait_server_ready(self._server_endpoints[:1])
            tid, _ = client.register(socket.gethostname())
            return tid
        finally:
            client.close()
