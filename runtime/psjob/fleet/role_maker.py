"""Role makers: who am I in the job (server or worker, which index, who are the others).

`PaddleCloudRoleMaker` reads the environment contract that psjob.roles
renders (and that the operator, `psjob launch` and `psjob run` set);
`UserDefinedRoleMaker` takes the same facts as arguments.
"""
from __future__ import annotations

import enum
import os
import socket

from .. import roles


class Role(enum.IntEnum):
    WORKER = 1
    SERVER = 2
    HETER_WORKER = 3


class RoleMakerError(ValueError):
    pass


class RoleMakerBase:
    def __init__(self):
        self._role = Role.WORKER
        self._current_id = 0
        self._worker_num = 1
        self._server_endpoints: list[str] = []
        self._heter_endpoints: list[str] = []
        self._mode = "sync"
        self._k_steps = 0
        self._worker_capacity = 0  # elastic jobs: the most trainers at once (0: not elastic)
        self._generated = False

    def generate_role(self):
        self._generated = True

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

    def current_endpoint(self) -> str:
        if self.is_server():
            return self._server_endpoints[self._current_id]
        if self.is_heter_worker():
            return self._heter_endpoints[self._current_id]
        return ""

    @property
    def mode(self) -> str:
        return self._mode


class UserDefinedRoleMaker(RoleMakerBase):
    def __init__(self, current_id=0, role=Role.WORKER, worker_num=1, server_endpoints=None,
                 heter_worker_endpoints=None):
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


class PaddleCloudRoleMaker(RoleMakerBase):
    """Reads PADDLE_TRAINING_ROLE, PADDLE_PSERVER_ENDPOINTS (or IPS+PORT), PADDLE_TRAINERS, ..."""

    def __init__(self, is_collective=False, environ=None):
        super().__init__()
        if is_collective:
            raise RoleMakerError("collective (nccl2) training is not supported by psjob; "
                                 "use the parameter-server mode (is_collective=False)")
        self._env = dict(os.environ if environ is None else environ)
        self.generate_role()

    def generate_role(self):
        env = dict(self._env)
        env.update(roles.resolve_identity(env, socket.gethostname()))
        role = env.get("PADDLE_TRAINING_ROLE")
        if role not in roles.ROLES:
            raise RoleMakerError(f"PADDLE_TRAINING_ROLE must be one of {', '.join(roles.ROLES)}, got {role!r}")
        endpoints = [e for e in env.get("PADDLE_PSERVER_ENDPOINTS", "").split(",") if e]
        if not endpoints:
            ips = [ip for ip in env.get("PADDLE_PSERVER_IPS", "").split(",") if ip]
            port = env.get("PADDLE_PSERVER_PORT", str(roles.DEFAULT_PSERVER_PORT))
            endpoints = [f"{ip}:{port}" for ip in ips]
        if not endpoints:
            raise RoleMakerError("no pservers: set PADDLE_PSERVER_ENDPOINTS (or PADDLE_PSERVER_IPS and "
                                 "PADDLE_PSERVER_PORT)")
        self._server_endpoints = endpoints
        heter = env.get("PADDLE_HETER_TRAINER_IP_PORT_LIST", "")
        self._heter_endpoints = [e for e in heter.split(",") if e]
        try:
            self._worker_num = int(env.get("PADDLE_TRAINERS", "1"))
        except ValueError:
            raise RoleMakerError(f"PADDLE_TRAINERS must be an integer, got {env.get('PADDLE_TRAINERS')!r}") from None
        try:
            self._worker_capacity = int(env.get("PSJOB_MAX_TRAINERS", "0") or 0)
        except ValueError:
            raise RoleMakerError(f"PSJOB_MAX_TRAINERS must be an integer, got "
                                 f"{env.get('PSJOB_MAX_TRAINERS')!r}") from None
        if self._worker_capacity and self._worker_capacity < self._worker_num:
            raise RoleMakerError(f"PSJOB_MAX_TRAINERS={self._worker_capacity} is below "
                                 f"PADDLE_TRAINERS={self._worker_num}")
        self._mode = env.get("PSJOB_MODE", "sync")
        self._k_steps = int(env.get("PSJOB_K_STEPS", "0") or 0)
        if role == roles.PSERVER:
            self._role = Role.SERVER
            current = env.get("PSJOB_CURRENT_ENDPOINT") or (
                f"{env.get('PADDLE_CURRENT_IP', '')}:{env.get('PADDLE_PSERVER_PORT', '')}")
            if current not in endpoints:
                raise RoleMakerError(f"this pserver's endpoint {current} is not in PADDLE_PSERVER_ENDPOINTS "
                                     f"({', '.join(endpoints)})")
            self._current_id = endpoints.index(current)
        elif role == roles.HETER_TRAINER:
            self._role = Role.HETER_WORKER
            self._current_id = int(env.get("PSJOB_HETER_TRAINER_ID", "0"))
        else:
            self._role = Role.WORKER
            tid = env.get("PADDLE_TRAINER_ID", env.get("PSJOB_TRAINER_ID", "0"))
            if tid == roles.AUTO:
                tid = self._register(env)
            self._current_id = int(tid)
            limit = max(self._worker_num, self._worker_capacity)
            if not 0 <= self._current_id < limit:
                raise RoleMakerError(f"PADDLE_TRAINER_ID {self._current_id} out of range "
                                     f"(PADDLE_TRAINERS={self._worker_num}"
                                     + (f", PSJOB_MAX_TRAINERS={self._worker_capacity})"
                                        if self._worker_capacity else ")"))
        self._generated = True

    def _register(self, env) -> int:
        """A Deployment pod has no stable index: ask pserver 0 for a trainer id."""
        from ..rpc.client import PSClient
        from ..ps.auth import read_token
        client = PSClient(self._server_endpoints, auth_token=read_token(env.get("PSJOB_AUTH_TOKEN_FILE", "")))
        try:
            client.wait_server_ready(self._server_endpoints[:1])
            tid, _ = client.register(socket.gethostname())
            return tid
        finally:
            client.close()
