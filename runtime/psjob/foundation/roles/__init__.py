"""The role environment of every psjob process: one function, three callers.

A psjob job is a set of processes — pservers, trainers (workers) and optional
heterogeneous trainers — that find each other through environment variables.
The Kubernetes operator writes them into pod templates, the local launcher
(`psjob run`) passes them to child processes, and the runtime reads them. All
three call `role_environment()` here so the names and values cannot drift.

Lifecycle of an identity:

1. A builder (`kubernetes_topology()` or `local_topology()`) turns a parsed
   `ParameterServerJob` into a `JobTopology`: endpoints, counts, mode, paths.
2. `role_environment(topology, role, index)` renders the variables of one
   process. When the index is known (local runs) everything is concrete.
   When it is not known until the process runs (`index=None`: one pod
   template serves all replicas) the index variables say "auto".
3. At start-up the process calls `resolve_identity(os.environ, hostname)`,
   which fills in what a pod derives at run time: a StatefulSet pod's ordinal
   from its hostname (`<job>-pserver-3` → pserver 3), an Indexed Job pod's
   trainer id from `JOB_COMPLETION_INDEX`, the pod IP from `POD_IP`. A trainer
   left with `PSJOB_TRAINER_ID=auto` gets its id from a rendezvous with
   pserver 0 (the runtime's job, not this module's).

The variable names are the Fluid ones (PADDLE_*) so that Fluid-style scripts
run unchanged, plus psjob's own (PSJOB_*). Stdlib only: the operator, the
launcher and the runtime all import this module.

The package, by job: `names` (roles, modes, ports, mount paths, RESERVED_ENV),
`topology` (JobTopology and its builders), `environment` (role_environment),
`identity` (resolve_identity, fluid_environment), `threads` (math_threads).
`psjob.foundation.roles` re-exports their public names: the operator, the launchers and the
runtime import from here.
"""
from psjob.foundation.roles.environment import (  # noqa: F401
    collective_launch_environment,
    job_environment,
    role_environment,
)
from psjob.foundation.roles.identity import PADDLE2_TO_FLUID, fluid_environment, resolve_identity  # noqa: F401
from psjob.foundation.roles.names import (
                    AS_PADDLE_COMMAND,
                    AUTO,
                    COLLECTIVE,
                    DEFAULT_GEO_K_STEPS,
                    DEFAULT_HETER_PORT,
                    DEFAULT_METRICS_PORT,
                    DEFAULT_PSERVER_PORT,
                    DEFAULT_TRAINER_PORT,
                    DEVICES,
                    HETER_TRAINER,
                    KUBERNETES_AUTH_TOKEN_FILE,
                    KUBERNETES_CHECKPOINT_DIR,
                    LOCAL_HOST,
                    PEER_LOST_EXIT,
                    PSERVER,
                    PSERVER_UNREACHABLE_EXIT,
                    RESERVED_ENV,  # noqa: F401
                    RESIZE_HOLD_EXIT,
                    ROLES,
                    STAY_UNTIL_STOPPED_ENV,
                    TRAINER,
                    Mode,
)
from psjob.foundation.roles.threads import MATH_THREAD_ENV, math_threads  # noqa: F401
from psjob.foundation.roles.topology import (
                    JobTopology,
                    heter_service,
                    kubernetes_host,
                    kubernetes_topology,
                    local_pserver_host,
                    local_topology,  # noqa: F401
                    pserver_service,
                    split_endpoint,
                    topology_from_dict,
                    topology_to_dict,
                    trainer_service,
)
