"""A Fleet pserver's start: its startup program, then (with a model_dir) its slices of a
saved model or the newest good checkpoint under a checkpoint root."""
from __future__ import annotations

import os

from psjob.cluster.pserver import checkpoint_restore
from psjob.cluster.pserver.pserver import role_service
from psjob.fleet.build import BuiltJob
from psjob.fleet.role_maker import RoleMakerBase
from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import CheckpointError


def init_pserver(rm: RoleMakerBase, job: BuiltJob, executor, model_dir=None) -> None:
    executor.run(job.pserver_startup)
    if not model_dir:
        return
    if not os.path.isdir(model_dir):
        raise ValueError(f"There is no directory named '{model_dir}'")
    if store.is_checkpoint_root(model_dir):
        if checkpoint_restore.restore_newest(executor, model_dir, job.pserver_main) is None:
            raise CheckpointError(f"{model_dir!r} holds no complete checkpoint")
    else:
        checkpoint_restore.load_pserver_slices(executor, model_dir, job.pserver_main,
                                               job.transpiler.vars_overview, rm.current_endpoint())


def run_pserver(rm: RoleMakerBase, job: BuiltJob, executor) -> None:
    """Serve the pserver program until the job ends, with this role's settings (its
    RoleEnv's token, TLS and options), not a second read of the process environment."""
    executor.services.setdefault("pserver", role_service(rm.settings()))
    executor.run(job.pserver_main)
