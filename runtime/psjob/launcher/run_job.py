"""`psjob run JOB.yaml`: run a ParameterServerJob on this machine, as the operator would.

    psjob run JOB.yaml [--workdir DIR] [--summary PATH] [--metrics-port P] [--stop-grace S]

Lifecycle:

1. Parse the YAML with psjob.foundation.jobspec (a problem names the field and the fix;
   exit 2) and check what only a cluster can provide (`valueFrom` env).
2. Lay out the workdir (default `runs/<job>-<time>`): `auth-token` (a fresh
   per-run token), `topology.json`, `checkpoints/` (PSJOB_CHECKPOINT_DIR),
   `logs/<role>-<i>.log`. Reusing a workdir keeps its checkpoints, so a
   restarted pserver — or a rerun — resumes from them.
3. Compute the topology with `roles.local_topology` — pserver i at
   127.0.0.(i+1) on one shared free port, like `psjob launch` — and give
   every process exactly `roles.role_environment(...)`, the function the
   operator's pod templates use, plus the role's literal `env`. Commands are
   the job's (`spec.command`/`args`, per-role overrides), default
   `psjob pserver` / `psjob worker`.
4. Supervise as Kubernetes would (launcher.supervisor): a pserver that dies
   is restarted with the same index and endpoint (a StatefulSet recreating
   its pod), worker failures draw on one budget of `runPolicy.backoffLimit`
   retries (a Job's), `activeDeadlineSeconds` ends the run; what a restart
   cannot fix (exit 2, a configuration problem; a full disk) ends it at once.
   While it runs, one progress line per trainer (launcher.job_progress), with
   the checkpoint saves that failed.
   A collective job (`spec.mode: collective`) has no pservers: trainer t gets
   a free ring port on 127.0.0.1 (PADDLE_TRAINER_ENDPOINTS, PADDLE_CURRENT_ENDPOINT);
   when one trainer dies the others' all-reduce fails and they exit
   `roles.PEER_LOST_EXIT`, restarted without drawing on backoffLimit (only the
   trainer that died counts), so the ring forms again and the script resumes
   from its newest checkpoint (docs/user/collective.md).
5. The job succeeded when every worker exited 0 (pservers still running then
   are stopped, as the operator's cleanPodPolicy does). Print a summary
   line; `--summary PATH` writes it as JSON; exit 0, else non-zero.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from psjob.foundation import jobspec, roles
from psjob.foundation.settings import TOPOLOGY_FILE
from psjob.launcher import scale
from psjob.launcher.job_progress import LogWatcher
from psjob.launcher.local import (
    PROGRESS_INTERVAL_S,
    STOP_GRACE_S,
    Deadline,
    LocalJob,
    check_options,
    free_ports,
    metrics_banner,
    place,
    run_local,
    write_token,
)
from psjob.launcher.supervisor import ProcessSpec, RestartBudget, Supervisor

# A StatefulSet recreates a crashing pserver forever, with backoff; locally a
# pserver that keeps crashing ends the run after this many restarts instead.
PSERVER_RESTARTS = 10
SUBCOMMAND = {roles.PSERVER: "pserver", roles.TRAINER: "worker", roles.HETER_TRAINER: "heter-worker"}
LOG_NAME = {roles.PSERVER: "pserver", roles.TRAINER: "worker", roles.HETER_TRAINER: "heter-worker"}


class RunError(ValueError):
    """The job cannot run locally; the message names the field and the fix."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="psjob run", description="Run a ParameterServerJob YAML on "
                                "this machine: pservers and trainers as local processes.")
    p.add_argument("job", metavar="JOB.yaml")
    p.add_argument("--workdir", default="", help="checkpoints, logs and the auth token go here "
                   "(default: runs/<job>-<time>); reusing one resumes from its checkpoints")
    p.add_argument("--summary", default="", metavar="PATH", help="write a JSON summary here")
    p.add_argument("--metrics-port", type=int, default=0, metavar="P",
                   help="serve /metrics of pserver i on 127.0.0.1:P+i, then heter trainers, then "
                        "trainers (default: every process picks a free port and logs it)")
    p.add_argument("--progress-interval", type=float, default=PROGRESS_INTERVAL_S, metavar="S",
                   help="seconds between progress lines")
    p.add_argument("--stop-grace", type=float, default=STOP_GRACE_S, metavar="S",
                   help="when the job is stopped (a failure past backoffLimit, activeDeadlineSeconds, "
                        "Ctrl-C), seconds each process gets to exit after SIGTERM before SIGKILL")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        job = jobspec.load_job_file(args.job)
        check_local(job, args)
        ignored = cluster_only_fields(job)
        if ignored:
            print(f"[psjob] psjob run ignores what only a cluster uses: {', '.join(ignored)}",
                  file=sys.stderr, flush=True)
        if job.spec.run_policy.suspend:
            print(f"[psjob] {job.name} is suspended (spec.runPolicy.suspend: true): nothing to "
                  "run; set it to false to train")
            return 0
        run = plan(job, args)
    except jobspec.JobSpecError as exc:  # a problem of the file itself names it already
        return _usage(str(exc) if exc.field == args.job else f"{args.job}: {exc}")
    except FileNotFoundError as exc:
        return _usage(f"{exc.filename}: no such file")
    except (RunError, OSError) as exc:
        return _usage(str(exc))
    return execute(job, run, args)


def _usage(message: str) -> int:
    print(f"psjob run: {message}", file=sys.stderr)
    return 2


def check_local(job: jobspec.ParameterServerJob, args: argparse.Namespace) -> None:
    """Refuse what only a cluster can provide, naming the field; check the options."""
    s = job.spec
    heter = s.heter_worker.replicas if s.heter_worker is not None else 0
    pservers = 0 if s.mode is jobspec.Mode.COLLECTIVE else s.pserver.replicas
    try:
        # An elastic job may run up to maxReplicas trainers, each with its own port.
        check_options(args.metrics_port,
                      pservers + heter + (s.worker.max_replicas or s.worker.replicas),
                      args.progress_interval, args.stop_grace)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    if s.tls is not None:
        raise RunError(f"spec.tls.secretName ({s.tls.secret_name}): psjob run cannot read Secrets; "
                       "remove spec.tls and export PSJOB_TLS_CERT_FILE, PSJOB_TLS_KEY_FILE and "
                       "PSJOB_TLS_CA_FILE for psjob run instead (every process inherits them)")
    for key, role in (("pserver", s.pserver), ("worker", s.worker), ("heterWorker", s.heter_worker)):
        if role is None:
            continue
        for i, var in enumerate(role.env):
            if var.value_from is not None:
                raise RunError(f"spec.{key}.env[{i}].valueFrom ({var.name}): psjob run cannot read "
                               "Secrets, ConfigMaps or pod fields; give a literal value instead")
        program = command_for(s, roles.TRAINER, role)[0]  # the role is only used for psjob's own
        if not shutil.which(program):
            field = f"spec.{key}.command[0]" if role.command else "spec.command[0]"
            raise RunError(f"{field}: {program!r} is not a program this machine can run (not on "
                           "PATH, or not executable)")


# Fields only the operator reads (images, scheduling, volumes, Kubernetes policies).
CLUSTER_ONLY_JOB = ("image", "image_pull_policy", "image_pull_secrets", "network_policy",
                    "security_context")
CLUSTER_ONLY_ROLE = ("image", "template", "resources", "node_selector", "tolerations",
                     "priority_class_name")
CLUSTER_ONLY_CHECKPOINT = ("storage_class_name", "size", "existing_claim", "access_mode")
CLUSTER_ONLY_RUN_POLICY = ("ttl_seconds_after_finished", "clean_pod_policy")


def cluster_only_fields(job: jobspec.ParameterServerJob) -> list[str]:
    """The cluster-only fields this job sets (other than their defaults), as YAML paths."""
    s = job.spec
    found = []

    def check(obj: object, default: object, names: Sequence[str], path: str) -> None:
        for name in names:
            value = getattr(obj, name)
            if value not in (None, (), {}) and value != getattr(default, name):
                found.append(f"{path}.{_key(type(obj), name)}")

    check(s, jobspec.JobSpec(image=""), CLUSTER_ONLY_JOB, "spec")
    for key, role in (("pserver", s.pserver), ("worker", s.worker),
                      ("heterWorker", s.heter_worker)):
        if role is not None:
            check(role, type(role)(), CLUSTER_ONLY_ROLE, f"spec.{key}")
    check(s.checkpoint, jobspec.CheckpointSpec(), CLUSTER_ONLY_CHECKPOINT, "spec.checkpoint")
    check(s.run_policy, jobspec.RunPolicy(), CLUSTER_ONLY_RUN_POLICY, "spec.runPolicy")
    return found


def _key(cls: type, name: str) -> str:
    return next(f.schema.key for f in jobspec.fields_of(cls) if f.name == name)


@dataclass
class LocalRun:
    """What `plan` decided: the workdir, the topology, one ProcessSpec per process (a pserver
    resize gives the run a new topology: `relayout`)."""
    workdir: str
    topology: roles.JobTopology
    specs: list[ProcessSpec]
    worker_budget: RestartBudget  # runPolicy.backoffLimit, shared by every worker


def plan(job: jobspec.ParameterServerJob, args: argparse.Namespace) -> LocalRun:
    s = job.spec
    workdir = os.path.abspath(args.workdir or os.path.join(
        "runs", f"{job.name}-{time.strftime('%Y%m%d-%H%M%S')}"))
    os.makedirs(os.path.join(workdir, "logs"), exist_ok=True)
    if s.mode is jobspec.Mode.COLLECTIVE:  # no pservers: one ring port per trainer
        n, heter = 0, []
        topology = roles.local_topology(job, free_ports(s.worker.replicas), workdir,
                                        metrics_port=args.metrics_port)
    else:
        n = s.pserver.replicas
        endpoints, heter_endpoints = place(n, s.heter_worker.replicas if s.heter_worker is not None else 0)
        port = roles.split_endpoint(endpoints[0])[1]
        heter = [roles.split_endpoint(ep)[1] for ep in heter_endpoints]
        topology = roles.local_topology(job, [port] * n + heter, workdir, metrics_port=args.metrics_port)
    if n and list(topology.pserver_endpoints) != endpoints:  # psjob launch and psjob run must agree
        raise RuntimeError(f"local_topology placed pservers at {topology.pserver_endpoints}, "
                           f"launch at {endpoints}")
    write_token(workdir)
    if topology.checkpoint_dir and "://" not in topology.checkpoint_dir:  # not an object store URI
        os.makedirs(topology.checkpoint_dir, exist_ok=True)
    budget = RestartBudget(s.run_policy.backoff_limit)
    run = LocalRun(workdir, topology, [], budget)
    write_topology(run)
    for role, count in ((roles.PSERVER, n), (roles.HETER_TRAINER, len(heter)),
                        (roles.TRAINER, s.worker.replicas)):
        run.specs.extend(process_spec(job, run, role, i) for i in range(count))
    return run


def write_topology(run: LocalRun) -> None:
    """WORKDIR/topology.json: what every process's PSJOB_TOPOLOGY_FILE and `psjob scale` read."""
    with open(os.path.join(run.workdir, "topology.json"), "w") as f:
        json.dump(roles.topology_to_dict(run.topology), f, indent=1)


def relayout(run: LocalRun, pservers: int) -> roles.JobTopology:
    """Give the run `pservers` pserver endpoints (a resize, launcher.scale): placed as `plan`
    places them — 127.0.0.(i+1) on one free port — and written to topology.json. Returns the
    topology it replaced (`put_layout` puts it back if the resize is abandoned)."""
    previous = run.topology
    endpoints, _ = place(pservers, 0)
    put_layout(run, dataclasses.replace(run.topology, pserver_endpoints=tuple(endpoints)))
    return previous


def put_layout(run: LocalRun, topology: roles.JobTopology) -> None:
    run.topology = topology
    write_topology(run)


def process_spec(job: jobspec.ParameterServerJob, run: LocalRun, role: str, index: int) -> ProcessSpec:
    """Process `index` of `role`: its command, exactly the operator's environment, its log."""
    s = job.spec
    role_spec: Any = {roles.PSERVER: s.pserver, roles.HETER_TRAINER: s.heter_worker, roles.TRAINER: s.worker}[role]
    # An elastic job's trainer `index` may lie beyond the replicas it started with.
    topology = run.topology
    if role == roles.TRAINER and index >= topology.trainers:
        topology = dataclasses.replace(topology, trainers=index + 1)
    env = roles.role_environment(topology, role, index)
    env[TOPOLOGY_FILE] = os.path.join(run.workdir, "topology.json")
    env.update({var.name: var.value or "" for var in role_spec.env})
    spec = ProcessSpec(role, index, command_for(s, role, role_spec), env,
                       os.path.join(run.workdir, "logs", f"{LOG_NAME[role]}-{index}.log"))
    if role == roles.PSERVER:
        spec.restarts_left = PSERVER_RESTARTS
    else:
        spec.budget = run.worker_budget
    return spec


def command_for(spec: jobspec.JobSpec, role: str, role_spec: Any) -> list[str]:
    """The role's command + args, as the operator's pod template has them.

    `psjob` and `python` are this interpreter, so a local run uses the psjob
    it was started from whatever is first on PATH. With `spec.asPaddle` it
    runs under `psjob as-paddle --`, as the operator's pods do.
    """
    command = _this_interpreter(list(role_spec.command or spec.command or ("psjob", SUBCOMMAND[role])))
    if spec.as_paddle:
        command = _this_interpreter(list(roles.AS_PADDLE_COMMAND)) + command
    return command + list(role_spec.args or spec.args)


def _this_interpreter(command: list[str]) -> list[str]:
    if command[0] == "psjob":
        return [sys.executable, "-m", "psjob.cli", *command[1:]]
    if command[0] in ("python", "python3"):
        return [sys.executable, *command[1:]]
    return command


def execute(job: jobspec.ParameterServerJob, run: LocalRun, args: argparse.Namespace) -> int:
    s = job.spec
    started = time.monotonic()
    heter = f", {s.heter_worker.replicas} heter trainer(s)" if s.heter_worker is not None else ""
    if s.mode is jobspec.Mode.COLLECTIVE:
        what = f"{s.worker.replicas} trainer(s), collective (ring all-reduce)"
    else:
        what = f"{s.pserver.replicas} pserver(s){heter} and {s.worker.replicas} trainer(s), {s.mode.value} mode"
    opening = [f"[psjob] {job.name}: {what}, on this machine; workdir {_short(run.workdir)}"]
    if s.checkpoint.enabled and s.checkpoint.uri:
        opening.append(f"[psjob] checkpoints go to {s.checkpoint.uri}" + (
            " (spec.checkpoint.credentialsSecret is a cluster Secret: ignored here; the AWS_* "
            "variables of this environment configure the store)" if s.checkpoint.credentials_secret else ""))
    if args.metrics_port:
        trainers = sum(sp.role == roles.TRAINER for sp in run.specs)
        opening.append(metrics_banner(args.metrics_port, len(run.specs) - trainers))
    deadline = s.run_policy.active_deadline_seconds
    local = LocalJob(
        name=job.name, mode=s.mode.value, trainers=s.worker.replicas,
        checkpoint_dir=run.topology.checkpoint_dir, specs=run.specs,
        deadline=Deadline(float(deadline), "DeadlineExceeded",
                          f"runPolicy.activeDeadlineSeconds={deadline}") if deadline else None,
        backoff_limit=s.run_policy.backoff_limit,
        name_of=lambda sp: f"{LOG_NAME[sp.role]}-{sp.index}",
        label_of=lambda sp: f"{LOG_NAME[sp.role]} {sp.index}",
        summary_extra={"workdir": run.workdir})
    printer = _event_printer(run.specs, started)
    # `psjob scale` resizes the run (launcher.scale): an elastic job's trainers, or the pservers
    # of a job that keeps checkpoints. New trainers are watched like the others.
    def scaler(watcher: LogWatcher) -> Callable[[Supervisor], None]:
        scaling = scale.Scaler(run.workdir, lambda role, i: _new_process(job, run, watcher, role, i),
                               relayout=lambda n: relayout(run, n),
                               put_layout=lambda t: put_layout(run, t),
                               checkpoint_dir=run.topology.checkpoint_dir)
        local.summary_extra["pserver_resizes"] = scaling.resizes  # filled as resizes happen
        return scaling.poll
    return run_local(local, progress_interval=args.progress_interval, summary_path=args.summary,
                     opening=opening, on_event=printer, on_poll=scaler, stop_grace_s=args.stop_grace)


def _new_process(job: jobspec.ParameterServerJob, run: LocalRun, watcher: LogWatcher, role: str,
                 index: int) -> ProcessSpec:
    """Process `index` of `role` under the run's current topology (started by `psjob scale`);
    a new trainer's progress lines are shown like the others'."""
    spec = process_spec(job, run, role, index)
    if role == roles.TRAINER:
        watcher.watch(index, spec.log_path)
    return spec


def _short(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def _event_printer(specs: list[ProcessSpec], started: float) -> Callable[[str, Callable[[str], None]], None]:
    by_name = {sp.name: sp for sp in specs}

    def on_event(message: str, write: Callable[[str], None]) -> None:
        if message.endswith(" exited 0"):
            return  # the progress lines say when a worker is done; pservers follow them
        if message.startswith("started "):
            name = message.split()[1]
            if name in by_name and by_name[name].starts <= 1:
                return  # first starts are summed up by the opening line
        write(f"[psjob {time.monotonic() - started:5.0f}s] {_pod_names(message)}")
    return on_event


def _pod_names(message: str) -> str:
    # The supervisor names processes pserver.0 / trainer.1; say worker 1 like the job does.
    return (message.replace("trainer.", "worker ").replace("pserver.", "pserver ")
            .replace("heter_trainer.", "heter-worker "))
