"""A Fleet trainer's connection to the pservers, from init_worker to stop_worker.

`WorkerConnection.open` makes the gRPC client (waiting until every pserver
serves when the strategy's `launch_barrier` is set or the job is elastic — a
trainer the pservers had recorded as completed exits 0 there instead;
joining the member set of an elastic job before the startup program pulls the
parameters: see psjob.cluster.pserver.pserver_state), builds the mode's RPC service around
it (psjob.cluster.trainer.client_service.trainer_service) and installs that as the process
default, so every Executor the script creates talks through it; connects a heter
job's CPU trainer to its heter trainer; and starts the TrainerMonitor
(cluster/trainer/monitor.py) unless the process observes its own loop. `close` flushes,
tells the pservers (and first the heter trainer) this trainer completed, and
undoes all of it.
"""
from __future__ import annotations

from psjob.cluster.rpc.auth import job_token
from psjob.cluster.rpc.client import GrpcPSClient
from psjob.cluster.trainer import client_service, telemetry
from psjob.cluster.trainer.monitor import TrainerMonitor
from psjob.fleet.build import BuiltJob
from psjob.fleet.role_maker import RoleMakerBase
from psjob.fleet.strategy import predict_pulls_by_name
from psjob.fluid.core import global_scope
from psjob.foundation.roles import Mode


class WorkerConnection:
    def __init__(self, client: GrpcPSClient, service, heter, monitor: TrainerMonitor | None):
        self.client, self.service, self._heter, self._monitor = client, service, heter, monitor

    @classmethod
    def open(cls, rm: RoleMakerBase, job: BuiltJob, scope=None) -> WorkerConnection:
        settings = rm.settings()
        token = job_token(settings)
        client = GrpcPSClient(rm.get_pserver_endpoints(), rm.worker_index(), auth_token=token, settings=settings)
        if job.strategy.launch_barrier or rm.worker_capacity():
            # ... or exit 0 at once (TrainerAlreadyCompleted) when this trainer had completed.
            try:
                client_service.wait_until_serving(client, settings, elastic=bool(rm.worker_capacity()))
            except BaseException:
                client.close()
                raise
        if rm.worker_capacity():
            client.join()  # before the startup program pulls the parameters: see psjob.cluster.pserver.pserver_state
        s = job.strategy
        geo = None
        if s.mode is Mode.GEO:
            params = [p.name for p in job.geo_program.all_parameters() if p.trainable]
            geo = client_service.GeoSettings(scope or global_scope(), job.transpiler.vars_overview, params,
                                             rm.worker_num(), s.k_steps)
        service = client_service.trainer_service(client, s.mode, max_merge_var_num=s.max_merge_var_num,
                                                 send_queue_size=s.send_queue_size,
                                                 max_stale_steps=s.max_stale_steps,
                                                 predict_pulls=predict_pulls_by_name(s.predict_pulls,
                                                                                     job.transpiler.plan),
                                                 geo=geo)
        client_service.install(service)
        if job.heter is not None:
            try:
                job.heter.init_worker(token)
            except BaseException:
                client_service.install(None)
                client.close()
                raise
        monitor = None
        if telemetry.current() is None:  # else the process observes its own loop: one telemetry per process
            monitor = TrainerMonitor(job.main, rm.worker_index(), job.loss_name, settings, service=service,
                                     client=client)
        return cls(client, service, job.heter, monitor)

    def members(self, first_pserver: str) -> list[int]:
        """An elastic job's trainers taking part now (pserver 0's member set)."""
        return list(self.client.status(first_pserver).members)

    def close(self) -> None:
        completed = False
        try:
            try:
                if self._heter is not None:
                    self._heter.stop_worker()  # first: the heter trainer flushes this trainer's pushes
            finally:
                self.service.complete()
            completed = True
            client_service.announce_completion(self.client.trainer_id)
        finally:
            client_service.install(None)
            self.client.close()
            if self._monitor is not None:
                # The final progress line only for a trainer whose pushes all landed.
                monitor, self._monitor = self._monitor, None
                monitor.close(finished=completed)

    def abandon(self) -> None:
        """Stop the monitor without a final line (init_worker called again before stop_worker)."""
        if self._monitor is not None:
            self._monitor.close(finished=False)
            self._monitor = None
