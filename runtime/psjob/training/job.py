"""The built-in CTR job: one pserver or one trainer, configured by the environment.

Lifecycle of every process (the same ARGS everywhere):

1. The entrypoint read the role environment once (psjob.foundation.role_env.RoleEnv:
   role, endpoints, trainer count, mode, device, checkpoint directory) and
   passes it here; `Fleet.init(PaddleCloudRoleMaker(role_env=...))` takes it
   as it is. A trainer whose id is "auto" (a Deployment pod) registers with
   pserver 0 for one.
2. The CTR model (psjob.training.models.ctr) is built with the same seed everywhere
   and transpiled by the job's mode (PSJOB_MODE), so every process agrees on
   which pserver holds which slice.
3. A pserver initializes its slices and serves until every trainer has
   completed, then exits 0. A trainer connects, trains on its share of the
   data (psjob.training.data) for `--epochs`, printing progress lines and
   updating its metrics, tells the pservers it completed, prints its final
   line and exits 0.

Elastic jobs (PSJOB_MAX_TRAINERS set; docs/user/local-runs.md "Elastic trainers"):
a trainer joins the pservers' member set in init_worker, takes its data share
at the start of every epoch from the members then (its rank among them), and
on SIGTERM (scaled away) finishes its step, leaves and exits 0.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from dataclasses import dataclass, field

from psjob import fluid
from psjob.cluster.trainer.checkpointer import Checkpointer
from psjob.cluster.trainer.monitor import checkpoint_label
from psjob.cluster.trainer.telemetry import TrainerTelemetry
from psjob.dataset import ctr
from psjob.fleet import Fleet, PaddleCloudRoleMaker
from psjob.fleet.strategy import ResolvedStrategy
from psjob.fluid.core import PlaceError
from psjob.fluid.pipeline import pipelined
from psjob.foundation.checkpoint import store
from psjob.foundation.progress import ProgressReporter, ProgressState
from psjob.foundation.role_env import RoleEnv
from psjob.foundation.roles import Mode
from psjob.training import data, stream
from psjob.training.models import BUILT_IN as BUILT_IN_MODELS
from psjob.training.models import ctr as ctr_model
from psjob.training.options import TrainOptions


def strategy_for(role: RoleEnv, table_optimizer: str | None = None) -> ResolvedStrategy:
    """The Fleet strategy of the job: its role's Mode, passed as it is (not spelled in Paddle's
    DistributedStrategy booleans for the Fleet to decode). A heter trainer runs its section on
    the device of its role; `table_optimizer` updates the distributed table (None: the
    optimizer's own rule)."""
    mode = role.mode
    return ResolvedStrategy(
        mode, k_steps=max(role.k_steps, 1) if mode is Mode.GEO else 0,
        heter_worker_device_guard=role.device if role.is_heter_trainer else "cpu",
        # Sparse embeddings become pserver tables as under a Fleet 2.x DistributedStrategy,
        # except in half_async, which the job used to spell as Fluid 1.x's transpiler config.
        sparse_tables=mode is not Mode.HALF_ASYNC, table_optimizer=table_optimizer)


def place_for(device: str):
    """CPUPlace, or CUDAPlace(0) for PSJOB_DEVICE=gpu (fails now, clearly, without a GPU)."""
    if device == "gpu":
        place = fluid.CUDAPlace(0)
        try:
            place.array_module()
        except PlaceError as exc:
            raise PlaceError(f"this role runs on device gpu (PSJOB_DEVICE, from the job's "
                             f"`device` field) but {exc}; set device: cpu to train on CPUs") from None
        return place
    return fluid.CPUPlace()


def build(opts: TrainOptions, fleet: Fleet, role: RoleEnv) -> ctr_model.CTRModel:
    """Build and transpile the model into fleet.main_program / startup_program."""
    # In a heter job the MLP is the heter section: heter trainers run it (the split of Fleet's heterogeneous parameter server).
    config = dataclasses.replace(BUILT_IN_MODELS[opts.model], sparse_feature_dim=ctr.SPARSE_FEATURE_DIM,
                                 is_distributed=opts.distributed_table,
                                 optimizer=opts.optimizer, learning_rate=opts.learning_rate,
                                 mlp_device="gpu" if role.heter_trainers else "")
    strategy = strategy_for(role, opts.table_optimizer)
    optimizer = fleet.distributed_optimizer(
        ctr_model.make_optimizer(config.optimizer, config.learning_rate), strategy)
    return ctr_model.build(config, fluid.Program(), fluid.Program(), optimizer=optimizer)


def _fleet(role: RoleEnv | None) -> tuple[Fleet, RoleEnv]:
    role = RoleEnv.from_environ() if role is None else role
    fleet = Fleet()
    fleet.init(PaddleCloudRoleMaker(role_env=role))
    return fleet, role


def run_pserver(opts: TrainOptions, role: RoleEnv | None = None) -> int:
    fleet, role = _fleet(role)
    build(opts, fleet, role)
    print(f"[psjob] pserver {fleet.server_index()} of {fleet.server_num()} at "
          f"{role.current_endpoint} ({role.mode} mode, "
          f"{fleet.worker_num()} trainer(s), pid {os.getpid()})", flush=True)
    newest = newest_checkpoint(role.checkpoint_dir)
    if newest is not None:
        # A restarted pserver (or a rerun in the same workdir) continues from the newest
        # good checkpoint: the pserver service restores it once, before it answers anyone
        # (psjob.cluster.pserver.pserver), falling back to an older one if that one is damaged.
        print(f"[psjob] pserver {fleet.server_index()} restores its shard from {newest.path}",
              flush=True)
    fleet.init_server(executor=fluid.Executor(place_for(role.device)))
    fleet.run_server()
    print(f"[psjob] pserver {fleet.server_index()}: every trainer completed", flush=True)
    return 0


def run_heter_trainer(opts: TrainOptions, role: RoleEnv | None = None) -> int:
    """A heterogeneous trainer: serves the MLP section of the CPU trainers assigned to it."""
    fleet, role = _fleet(role)
    build(opts, fleet, role)
    print(f"[psjob] heter trainer {role.index} at {role.current_endpoint} "
          f"({role.mode} mode, device {role.device}, pid {os.getpid()})", flush=True)
    fleet.init_server()
    fleet.run_server()
    print(f"[psjob] heter trainer {role.index}: every trainer it serves completed", flush=True)
    return 0


def run_trainer(opts: TrainOptions, role: RoleEnv | None = None) -> int:
    fleet, role = _fleet(role)
    tid, trainers = fleet.worker_index(), fleet.worker_num()  # tid may come from Register
    stream_config = stream.config_from(role.settings)
    if stream_config is not None:
        return run_stream_trainer(opts, fleet, role, stream_config)
    share = data.share_for(opts, tid, trainers)
    model = build(opts, fleet, role)
    exe = fluid.Executor(place_for(role.device))
    exe.collect_timing = True  # per-op timings split the batch time into push/pull/compute
    telemetry = TrainerTelemetry.start(tid, role.settings)
    ckpt_dir = role.checkpoint_dir
    print(f"[psjob] trainer {tid} of {trainers}: {role.mode} mode, "
          f"{fleet.server_num()} pserver(s), {share.describe()}, batch {opts.batch}, "
          f"{opts.epochs} epoch(s)", flush=True)
    try:
        fleet.init_worker()
        telemetry.attach(exe, fleet.rpc_service)  # staleness of the pushes (send ops, communicator)
        exe.run(fleet.startup_program)
        # Trainer 0 checkpoints every PSJOB_CHECKPOINT_INTERVAL_* (psjob.cluster.trainer.checkpointer);
        # a restarted trainer resumes at the data position of the newest checkpoint.
        ckpt = Checkpointer.for_fleet(fleet, exe, trainer_id=tid)  # tid may come from Register
        position = ckpt.resume() or {}
        state = ProgressState(tid, opts.epochs, data.steps_per_epoch(share))
        start = Position(int(position.get("step", 0)), int(position.get("epoch", 1)),
                         int(position.get("batch", 0)))
        if start.step:
            state.steps, state.examples = start.step, start.step * opts.batch
            print(f"[psjob] trainer {tid} resumes at step {start.step} (epoch {start.epoch}, "
                  f"batch {start.batch}) from {ckpt.resumed_from}", flush=True)
        reporter = ProgressReporter(state, opts.log_every_s,
                                    checkpoint=lambda: checkpoint_label(ckpt_dir),
                                    on_window=telemetry.window)
        loop = Loop(fleet, exe, model, share, reporter, telemetry, ckpt,
                    elastic=bool(role.max_trainers))
        if loop.elastic:
            signal.signal(signal.SIGTERM, lambda *_: loop.leave.set())
        _train(opts, loop, start)
        fleet.stop_worker()
        if loop.leave.is_set():
            print(f"[psjob] trainer {tid} left the job (scaled away) after step {loop.reporter.state.steps}",
                  flush=True)
        reporter.finish()
    finally:
        telemetry.close()
    return 0


@dataclass(frozen=True)
class Position:
    step: int = 0
    epoch: int = 1
    batch: int = 0   # batches of `epoch` already trained


@dataclass(frozen=True)
class Loop:
    fleet: Fleet
    exe: object
    model: ctr_model.CTRModel
    share: data.Share
    reporter: ProgressReporter
    telemetry: TrainerTelemetry
    checkpointer: Checkpointer
    elastic: bool = False
    leave: threading.Event = field(default_factory=threading.Event)  # set by SIGTERM (elastic)

    def share_for_epoch(self, opts: TrainOptions) -> data.Share:
        """This epoch's share: an elastic trainer's rank among the members at its start."""
        if not self.elastic:
            return self.share
        members = self.fleet.worker_members()
        me = self.share.trainer
        rank = members.index(me) if me in members else 0
        return data.share_for(opts, rank, max(1, len(members)))


def _train(opts: TrainOptions, loop: Loop, start: Position) -> None:
    fetch = [loop.model.loss, loop.model.auc]
    client = loop.fleet.rpc_client
    step = start.step
    for epoch in range(start.epoch, opts.epochs + 1):
        skip = start.batch if epoch == start.epoch else 0
        fed = ((index, batch, ctr_model.feed_dict(loop.model, batch))
               for index, batch in enumerate(loop.share_for_epoch(opts), start=1) if index > skip)
        # Async: the next batch's embedding prefetches travel while this one runs.
        for index, batch, feed in pipelined(loop.exe, loop.fleet.main_program, fed, feed_of=lambda item: item[2]):
            if loop.leave.is_set() or (opts.max_steps and step >= opts.max_steps):
                return
            t0 = time.perf_counter()
            loss, auc = loop.exe.run(loop.fleet.main_program, feed=feed, fetch_list=fetch)
            seconds = time.perf_counter() - t0
            loss, auc = float(loss.reshape(-1)[0]), float(auc.reshape(-1)[0])
            step += 1
            loop.telemetry.step(len(batch), seconds, loss, auc, executor=loop.exe, client=client)
            loop.reporter.step(epoch, len(batch), loss, auc)
            loop.checkpointer.after_step(step, epoch=epoch, batch=index)


def run_stream_trainer(opts: TrainOptions, fleet: Fleet, role: RoleEnv, config) -> int:
    """A trainer of a stream job (psjob.training.stream): follows the stream until stopped."""
    tid, trainers = fleet.worker_index(), fleet.worker_num()
    model = build(opts, fleet, role)
    exe = fluid.Executor(place_for(role.device))
    exe.collect_timing = True
    telemetry = TrainerTelemetry.start(tid, role.settings)
    audit = stream.Audit(opts.audit_ids, tid)
    print(f"[psjob] trainer {tid} of {trainers}: {role.mode} mode, {fleet.server_num()} pserver(s), "
          f"stream {config.root} (layout {config.layout}, done marker {config.done_file}, "
          f"poll {config.poll_seconds:g}s), batch {opts.batch}", flush=True)
    try:
        fleet.init_worker()
        telemetry.attach(exe, fleet.rpc_service)
        exe.run(fleet.startup_program)
        ckpt = Checkpointer.for_fleet(fleet, exe, trainer_id=tid)
        position = ckpt.resume() or {}
        step = int(position.get("step", 0))
        publisher = stream.Publisher(ckpt, None, telemetry)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())  # suspended or deleted: end the step, exit
        reader = stream.reader_for(config, tid, trainers, opts.batch, opts.id_mode or "dense", position,
                                   publisher, stop)
        publisher.stream = reader.stream
        start = reader.position()
        if step:
            publisher.resumed(step, start)
        print(f"[psjob] trainer {tid} starts the stream at step {step}, {start.describe()}"
              + (f" (from {ckpt.resumed_from})" if ckpt.resumed_from else ""), flush=True)
        state = ProgressState(tid, 1, None)
        state.steps, state.examples = step, step * opts.batch
        reporter = ProgressReporter(state, opts.log_every_s, checkpoint=lambda: checkpoint_label(role.checkpoint_dir),
                                    on_window=telemetry.window)
        fetch = [model.loss, model.auc]
        for batch, where in reader:
            if stop.is_set() or (opts.max_steps and step >= opts.max_steps):
                break
            t0 = time.perf_counter()
            loss, auc = exe.run(fleet.main_program, feed=ctr_model.feed_dict(model, batch), fetch_list=fetch)
            seconds = time.perf_counter() - t0
            loss, auc = float(loss.reshape(-1)[0]), float(auc.reshape(-1)[0])
            step += 1
            telemetry.step(len(batch), seconds, loss, auc, executor=exe, client=fleet.rpc_client)
            reporter.step(1, len(batch), loss, auc)
            audit.record(step, batch)
            publisher.after_step(step, where)
        fleet.stop_worker()
        reporter.finish()
    finally:
        audit.close()
        telemetry.close()
    return 0


def newest_checkpoint(root: str):
    """The newest good checkpoint under PSJOB_CHECKPOINT_DIR (psjob.foundation.checkpoint.store), or None."""
    return store.newest_good(root) if root else None
