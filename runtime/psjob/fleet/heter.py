"""The Fleet's heterogeneous parameter-server runtime (Fleet's heterogeneous parameter server; ParameterServerRuntime's heter parts).

A heter job has pservers, CPU trainers (role TRAINER) and heter trainers
(role HETER_TRAINER, `psjob launch --heter_worker_num K`). Every process
runs the same script; ops built inside `fluid.device_guard("gpu")` form the
heter section (docs/user/heter.md):

- CPU trainer t: `minimize` transpiles as usual, then `split_heter_program`
  replaces the section by `send_and_recv` stages served by heter trainer
  t mod K; init_worker connects to it (waiting until it serves when
  `launch_barrier` is set), stop_worker completes with it before the
  pservers are told, so the heter trainer can flush t's gradient pushes.
- heter trainer h: `minimize` only keeps copies of the programs;
  `init_server()` (Fleet 2.0 scripts send heter workers down the server path:
  `fleet.is_server()` is true for them) waits for the pservers, then for each
  served trainer t transpiles *as trainer t*, splits, and opens a section
  whose Executor runs on the place `a_sync_configs["heter_worker_device_guard"]`
  names (cpu → CPUPlace, gpu → CUDAPlace(FLAGS_selected_gpus), xpu → not
  available) and talks to the pservers as t (sync: a GrpcPSClient; async and
  half-async: a Communicator). `run_server()` serves until those trainers
  complete.

Geo mode trains local copies of every parameter on each trainer, which a
split section cannot; heter jobs run sync, async or half-async.
"""
from __future__ import annotations

from psjob.cluster.heter.heter_state import HeterSection, HeterState
from psjob.fleet.strategy import predict_pulls_by_name
from psjob.fluid.core import CPUPlace, CUDAPlace, PlaceError
from psjob.fluid.executor import Executor
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.fluid.transpiler.heter_split import (
    HeterSplitError,
    heter_device_of,
    marked_heter_ops,
    served_trainers,
    split_heter_program,
)
from psjob.foundation.roles import Mode
from psjob.foundation.settings import Settings, process_settings

DEVICE_GUARDS = ("cpu", "gpu", "xpu")


class HeterDeviceError(RuntimeError):
    """The heter trainer cannot run on the device the strategy names."""


def heter_place(device_guard: str, settings: Settings | None = None):
    """The Place of a heter trainer for `heter_worker_device_guard` (ParameterServerRuntime._get_executor);
    a gpu one is FLAGS_selected_gpus' first of the process's settings (None: its environment's)."""
    guard = str(device_guard).lower()
    if guard not in DEVICE_GUARDS:
        raise ValueError(f"heter_worker_device_guard must be one of {', '.join(DEVICE_GUARDS)}; "
                         f"got {device_guard!r}")
    if guard == "cpu":
        return CPUPlace()
    if guard == "xpu":
        raise HeterDeviceError("heter_worker_device_guard='xpu': XPU devices are not available in psjob "
                               "(no XPU runtime is built in); use 'gpu' or 'cpu'")
    settings = process_settings() if settings is None else settings
    selected = settings.process.selected_gpus.split(",")[0].strip()
    if not selected.isdigit():
        raise HeterDeviceError(f"FLAGS_selected_gpus={settings.process.selected_gpus!r} is not a GPU index")
    place = CUDAPlace(int(selected))
    try:
        place.array_module()
    except PlaceError as exc:
        raise HeterDeviceError(f"heter_worker_device_guard='gpu': {exc}") from exc
    return place


class HeterRuntime:
    """Heter-job state of one Fleet process (CPU trainer or heter trainer)."""

    def __init__(self, role_maker, strategy, device: str):
        self.rm, self.strategy, self.device = role_maker, strategy, device
        self.heter_endpoints = role_maker.get_heter_worker_endpoints()
        self.split = None          # CPU trainer: its HeterSplit
        self._client = None
        self._origin = None        # heter trainer: (main, startup) as minimize left them
        self._state: HeterState | None = None

    @classmethod
    def for_job(cls, role_maker, strategy, program) -> HeterRuntime | None:
        """None for a plain PS job; raises when heter trainers and heter ops do not match."""
        marked = marked_heter_ops(program)
        heter_eps = role_maker.get_heter_worker_endpoints()
        if not marked and not heter_eps:
            return None
        if marked and not heter_eps:
            device = heter_device_of(marked)
            raise HeterSplitError(
                f"{len(marked)} op(s) ({', '.join(sorted({op.type for op in marked}))}) are placed on '{device}' "
                "by fluid.device_guard but the job has no heter trainers (heter_worker_num=0): start it with "
                "`psjob launch --heter_worker_num K`, or build the model without device_guard")
        if heter_eps and not marked:
            raise HeterSplitError(
                f"the job has {len(heter_eps)} heter trainer(s) but the program has no op for them (a heter "
                "section with no ops): build the layers they should run inside fluid.device_guard('gpu'), "
                "or launch without --heter_worker_num")
        if strategy.mode is Mode.GEO:
            raise HeterSplitError("geo mode trains local copies of every parameter on each trainer; a heter "
                                  "job runs sync, async or half_async (a_sync=True with k_steps=0)")
        return cls(role_maker, strategy, heter_device_of(marked))

    # -- CPU trainer ------------------------------------------------------------------------
    def split_trainer(self, transpiler: DistributeTranspiler, main, startup) -> None:
        self.split = split_heter_program(main, startup, transpiler.plan, self.heter_endpoints)

    def init_worker(self, auth_token: str) -> None:
        from psjob.cluster.heter.heter import install_client
        from psjob.cluster.rpc.heter_client import HeterClient
        client = HeterClient(self.heter_endpoints, self.rm.worker_index(), auth_token=auth_token,
                             settings=self.rm.settings())
        if self.strategy.launch_barrier:
            client.wait_server_ready([self.split.endpoint])
        self._client = client
        install_client(client)

    def stop_worker(self) -> None:
        from psjob.cluster.heter.heter import install_client
        if self._client is None:
            return
        try:
            self._client.complete([self.split.endpoint])
        finally:
            install_client(None)
            self._client.close()
            self._client = None

    # -- heter trainer ----------------------------------------------------------------------
    def keep_programs(self, main, startup) -> None:
        self._origin = (main.clone(), startup.clone())

    def init_server(self) -> None:
        from psjob.cluster.rpc.auth import job_token
        from psjob.cluster.rpc.client import GrpcPSClient
        rm = self.rm
        settings = rm.settings()
        place = heter_place(self.strategy.heter_worker_device_guard, settings)
        index, count = rm.role_id(), len(self.heter_endpoints)
        token = job_token(settings)
        if self.strategy.launch_barrier:
            probe = GrpcPSClient(rm.get_pserver_endpoints(), auth_token=token, settings=settings)
            try:
                probe.wait_server_ready()
            finally:
                probe.close()
        sections = {t: self._section(t, place, token) for t in served_trainers(index, count, rm.worker_num())}
        self._state = HeterState(self.heter_endpoints[index], sections, device=repr(place))

    def run_server(self) -> None:
        from psjob.cluster.heter.heter import serve
        if self._state is None:
            raise RuntimeError("call fleet.init_server() before fleet.run_server() on a heter trainer")
        serve(self._state, settings=self.rm.settings())

    def _section(self, trainer_id: int, place, token: str) -> HeterSection:
        from psjob.cluster.rpc.client import GrpcPSClient
        from psjob.cluster.trainer.client_service import trainer_service
        rm, s = self.rm, self.strategy
        main, startup = self._origin[0].clone(), self._origin[1].clone()
        config = DistributeTranspilerConfig()
        config.wait_port = False
        t = DistributeTranspiler(config)
        t.transpile(trainer_id=trainer_id, program=main, pservers=",".join(rm.get_pserver_endpoints()),
                    trainers=rm.worker_num(), sync_mode=s.sync_mode, startup_program=startup)
        split = split_heter_program(t.get_trainer_program(wait_port=False), startup, t.plan, self.heter_endpoints)
        client = GrpcPSClient(rm.get_pserver_endpoints(), trainer_id, auth_token=token, settings=rm.settings())
        service = trainer_service(client, s.mode, max_merge_var_num=s.max_merge_var_num,
                                  send_queue_size=s.send_queue_size, max_stale_steps=s.max_stale_steps,
                                  predict_pulls=predict_pulls_by_name(s.predict_pulls, t.plan))
        exe = Executor(place)
        exe.services["rpc"] = service

        def close():  # flush this trainer's pushes; the CPU trainer itself completes with the pservers
            try:
                if service is not client:
                    service.stop()
            finally:
                client.close()
        exe.add_close_hook(close)
        return HeterSection(split, exe)
