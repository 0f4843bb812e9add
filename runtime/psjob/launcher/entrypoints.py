"""Container entrypoints: `psjob pserver`, `psjob worker`, `psjob heter-worker`.

These are the commands the operator's pods run (and `psjob run` starts
locally) when a job sets no `spec.command`. They take the job's `spec.args`
(psjob.training.options) and read everything else from the role
environment that psjob.foundation.roles renders — nothing is passed on the command
line that differs between replicas, so one pod template serves them all.

The role environment is read once, at start-up, into a RoleEnv
(psjob.foundation.role_env) that is passed to the job; it completes the identity a pod
learns only at run time (roles.resolve_identity): a
pserver of the StatefulSet learns its index from its hostname
(`<job>-pserver-<i>`) and then listens on all interfaces (0.0.0.0), since
its stable DNS name may not resolve before the pod is ready; a trainer with
`PSJOB_TRAINER_ID=auto` (a Deployment pod) registers with pserver 0 for an id.

`psjob heter-worker` is a heterogeneous trainer of the same job: when the job
has heter trainers (PSJOB_HETER_TRAINERS > 0) the CTR model's MLP is built
under `fluid.device_guard("gpu")`, CPU trainers send its inputs to their heter
trainer and it runs the MLP on the role's device (psjob.fleet.heter).

Exit status: 0 when the process finished its part of the job; 2 for a
configuration problem (bad argument, incomplete environment, no GPU for a
gpu role), with one line naming it; 1 for a failure while training; 75
(roles.PSERVER_UNREACHABLE_EXIT) for a trainer whose pservers stayed
unreachable past their recovery window (PSJOB_PSERVER_RECOVERY_S) or did not
come up at start (PSJOB_WAIT_SERVER_TIMEOUT): not the trainer's fault, so the
worker Job's podFailurePolicy (and `psjob run`) start it again without
counting it against runPolicy.backoffLimit; 76 (roles.RESIZE_HOLD_EXIT) for
trainer 0 that checkpointed and stopped because the pservers are being
replaced (a pserver resize: its topology file lists other endpoints), which is
not a failure either.
"""
from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

from psjob.foundation import roles
from psjob.foundation.role_env import RoleEnv, RoleEnvError, process_environment

CONFIG_EXIT = 2
FAILED_EXIT = 1


class EntrypointError(ValueError):
    """The process cannot start as asked; the message says what to fix."""


def pserver_main(argv: Sequence[str] | None = None) -> int:
    return _main(roles.PSERVER, "psjob pserver", argv)


def worker_main(argv: Sequence[str] | None = None) -> int:
    return _main(roles.TRAINER, "psjob worker", argv)


def heter_worker_main(argv: Sequence[str] | None = None) -> int:
    """A heterogeneous trainer of the built-in job: it runs the CTR model's MLP section."""
    return _main(roles.HETER_TRAINER, "psjob heter-worker", argv)


def _main(role: str, prog: str, argv: Sequence[str] | None) -> int:
    from psjob.training import options  # lazy: `psjob --help` stays fast

    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        opts = options.parse(argv, prog)
        role_env = _prepare_environment(role, prog)
    except (options.UsageError, EntrypointError) as exc:
        return _fail(prog, exc, CONFIG_EXIT)
    from psjob.training import job  # the framework: only once the arguments are fine
    flows = {roles.PSERVER: job.run_pserver, roles.TRAINER: job.run_trainer,
             roles.HETER_TRAINER: job.run_heter_trainer}
    return _run(flows[role], opts, role_env, prog)


def _run(fn: Callable[[Any, RoleEnv], int], opts: Any, role_env: RoleEnv, prog: str) -> int:
    from psjob.cluster.rpc.auth import AuthConfigError
    from psjob.cluster.rpc.client import RETRYABLE, RpcError
    from psjob.cluster.trainer.communicator import CommunicatorError
    from psjob.fleet import FleetError, RoleMakerError
    from psjob.fleet.heter import HeterDeviceError
    from psjob.fluid.core import PlaceError
    from psjob.fluid.executor import ExecutionError
    from psjob.fluid.transpiler.heter_split import HeterSplitError
    from psjob.training.options import UsageError

    try:
        return fn(opts, role_env)
    except (UsageError, RoleMakerError, FleetError, PlaceError, AuthConfigError, HeterSplitError,
            HeterDeviceError) as exc:
        return _fail(prog, exc, CONFIG_EXIT)
    except (RpcError, TimeoutError, ExecutionError, CommunicatorError) as exc:
        # TimeoutError: the pservers never came up (wait_server_ready); an RPC that gave
        # up on a pserver may also surface from inside an op (ExecutionError's cause) or
        # from the communicator's last flush (CommunicatorError, at stop_worker: a trainer
        # that had trained its share when a pserver was lost has gradients not yet applied).
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, RpcError):
            cause = cause.__cause__
        unreachable = isinstance(exc, TimeoutError) or (cause is not None
                                                        and cause.code in RETRYABLE)
        if unreachable and role_env.role != roles.PSERVER:
            return _fail(prog, f"{exc}; the pservers stayed unreachable: exiting "
                               f"{roles.PSERVER_UNREACHABLE_EXIT} to be started again without "
                               f"counting against runPolicy.backoffLimit",
                         roles.PSERVER_UNREACHABLE_EXIT)
        if isinstance(exc, (ExecutionError, CommunicatorError)):
            raise  # a failing op or background call: its traceback is the report
        return _fail(prog, exc, FAILED_EXIT)


def _prepare_environment(role: str, prog: str) -> RoleEnv:
    """Read the role environment once (RoleEnv, completing what a pod learns at run time)
    and check it against the command. What the command implies (PADDLE_TRAINING_ROLE when
    unset; PSJOB_BIND_ALL for a pserver in a pod) goes into the RoleEnv's settings, which
    the services get from the Fleet: nothing reads the process environment again."""
    try:
        role_env, from_hostname = RoleEnv.for_command(role, prog, process_environment())
    except RoleEnvError as exc:
        raise EntrypointError(str(exc)) from None
    if from_hostname:
        print(f"[psjob] pserver index {role_env.index} from hostname "
              f"{socket.gethostname()}; serving {role_env.current_endpoint}", flush=True)
    return role_env


def _fail(prog: str, problem: object, status: int) -> int:
    print(f"{prog}: error: {problem}", file=sys.stderr, flush=True)
    return status
