"""Benchmark: the operator's API load, memory and pass latency with hundreds of jobs.

    .venv/bin/python bench/operator_scale.py                 # 500 jobs, 60 s window
    .venv/bin/python bench/operator_scale.py --jobs 100 --window 30
    .venv/bin/python bench/operator_scale.py --operator-path /tmp/old/operator  # another build

What runs: the real operator (`python -m psjob_operator`, a subprocess, kopf +
the kubernetes client) against the Kubernetes API emulator the operator tests
use (kmock, `tests/operator/opkit_cluster.py`, served on 127.0.0.1 from this
process), with the tests' stand-ins for the StatefulSet/Job controllers and
the kubelet (`opkit_fakes.py`) driven from here:

1. submit `--jobs` ParameterServerJobs (`--pservers` pservers, `--workers`
   trainers each); wait until the operator created every job's children;
   create and run every pod; wait until every job is Running;
2. steady state for `--window` seconds with churn: `--churn` times a second a
   random job loses a worker pod (deleted, as on node loss), the Job
   controller stand-in replaces it, the job leaves Running, the new pod
   starts, the job is Running again. Reaction latency = the kubelet stand-in
   marks the new pod Running → the job's status says Running;
3. prints the operator's API requests/s in the window (from the emulator's
   request log, the operator's own requests only; watch streams counted
   apart: a watch is one long request), by verb; the operator's RSS (now and
   peak, /proc); reconcile pass duration p50/p99 (its histogram,
   interpolated as Prometheus' histogram_quantile does) and the churn reaction
   latency p50/p99.

Everything shares this machine: the emulator (one Python thread, in this
process) and the stand-ins compete with the operator for CPU, so absolute
latencies are upper bounds; request counts do not depend on load.
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import random
import statistics
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "operator"))

from opkit_cluster import NAMESPACE, ClusterThread, TestClient, wait_for
from opkit_fakes import INDEX, FakeControlPlane
from opkit_jobs import job_manifest, submit
from opkit_operator import OperatorProcess
from opkit_rbac import TEST_CLIENT_AGENT
from prometheus_client.parser import text_string_to_metric_families

RUNNING = {"phase": "Running", "podIP": "127.0.0.1",
           "conditions": [{"type": "PodScheduled", "status": "True"},
                          {"type": "Ready", "status": "True"}],
           "containerStatuses": [{"name": "psjob", "ready": True, "restartCount": 0,
                                  "state": {"running": {}}}]}


def settle(probe, timeout: float, what: str) -> None:
    """Poll a whole-cluster `probe` once a second (each poll lists every job: at 500 jobs
    the tests' 0.1 s polling would load the emulator more than the operator does)."""
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(1.0)


def phases(plane: FakeControlPlane) -> dict[str, str]:
    return {j["metadata"]["name"]: (j.get("status") or {}).get("phase", "")
            for j in plane.kube.list(plane.path("parameterserverjobs"))}


def job_phase(plane: FakeControlPlane, name: str) -> str:
    return ((plane.kube.get(plane.path("parameterserverjobs", name)) or {}).get("status")
            or {}).get("phase", "")


def rss_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def histogram(metrics_text: str, name: str) -> list[tuple[float, float]]:
    """Cumulative (upper bound, count) buckets of one histogram."""
    out = []
    for family in text_string_to_metric_families(metrics_text):
        for s in family.samples:
            if s.name == f"{name}_bucket":
                out.append((float(s.labels["le"]), s.value))
    return sorted(out)


def quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus' histogram_quantile: linear within the bucket that holds rank q."""
    total = buckets[-1][1]
    if total == 0:
        return float("nan")
    rank, lower, below = q * total, 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if upper == float("inf"):
                return lower
            return lower + (upper - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = upper, count
    return lower


def delta(after: list[tuple[float, float]], before: list[tuple[float, float]]):
    counts = dict(before)
    return [(le, n - counts.get(le, 0.0)) for le, n in after]


def operator_requests(log: list, since: int) -> list[tuple[str, str, dict]]:
    return [(m, p, params) for m, p, params, agent in log[since:]
            if not agent.startswith(TEST_CLIENT_AGENT)]


def verb(method: str, params: dict) -> str:
    if method == "GET":
        return "watch" if params.get("watch") in ("true", "1") else "get/list"
    return {"POST": "create", "PATCH": "patch", "DELETE": "delete"}.get(method, method)


def start_pods(plane: FakeControlPlane, name: str, args: argparse.Namespace) -> None:
    """What the StatefulSet/Job controllers and the kubelet do for a new job, by name (the
    test kit's `sync` lists pods per job, which the emulator answers in O(all pods))."""
    kube = plane.kube
    sts = kube.get(plane.path("statefulsets", f"{name}-pserver"))
    workers = kube.get(plane.path("jobs", f"{name}-worker"))
    pods = [(f"{name}-pserver-{i}", sts, {}) for i in range(args.pservers)]
    pods += [(f"{name}-worker-{i}-{uuid.uuid4().hex[:5]}", workers, {INDEX: str(i)})
             for i in range(args.workers)]
    for pod_name, owner, pod_annotations in pods:
        template = owner["spec"]["template"]
        meta = {**template.get("metadata", {}), "name": pod_name, "namespace": NAMESPACE,
                "annotations": pod_annotations, "ownerReferences": [{
                    "apiVersion": owner["apiVersion"], "kind": owner["kind"],
                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                    "controller": True}]}
        kube.create(plane.path("pods"), {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                                         "spec": template["spec"]})
        plane.set_status(pod_name, RUNNING)
    kube.patch(plane.path("statefulsets", f"{name}-pserver") + "/status", {"status": {
        "replicas": args.pservers, "readyReplicas": args.pservers}})
    kube.patch(plane.path("jobs", f"{name}-worker") + "/status", {"status": {
        "active": args.workers, "succeeded": 0, "failed": 0}})


def bring_up(plane: FakeControlPlane, args: argparse.Namespace) -> float:
    started = time.monotonic()
    names = [f"job-{i:04d}" for i in range(args.jobs)]
    for name in names:
        submit(plane, job_manifest(name, pservers=args.pservers, workers=args.workers))
    settle(lambda: sum(1 for p in phases(plane).values() if p) == len(names),
           args.timeout, "every job created")
    for name in names:
        start_pods(plane, name, args)
    settle(lambda: all(p == "Running" for p in phases(plane).values()), args.timeout,
           "every job Running")
    return time.monotonic() - started


def churn_once(plane: FakeControlPlane, name: str, timeout: float) -> float:
    """One worker pod of `name` goes away and comes back; seconds until the status shows it."""
    pod = next(n for n in plane.pods(name) if n.startswith(f"{name}-worker-"))
    plane.kube.delete(plane.path("pods", pod))
    plane.sync(name)
    wait_for(lambda: job_phase(plane, name) != "Running", timeout=timeout,
             what=f"{name} leaving Running")
    plane.run(name)
    marked = time.monotonic()
    wait_for(lambda: job_phase(plane, name) == "Running", timeout=timeout,
             what=f"{name} Running again")
    return time.monotonic() - marked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--pservers", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--window", type=float, default=60.0, help="steady-state seconds")
    parser.add_argument("--churn", type=float, default=0.5, help="pod replacements per second")
    parser.add_argument("--resync-seconds", type=float, default=60.0)
    parser.add_argument("--timeout", type=float, default=1800.0, help="bring-up limit")
    parser.add_argument("--operator-path", type=pathlib.Path, default=None,
                        help="put this directory first on the operator's PYTHONPATH")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if args.operator_path:
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(args.operator_path), os.environ.get("PYTHONPATH", "")])

    with ClusterThread() as cluster, tempfile.TemporaryDirectory() as tmp:
        plane = FakeControlPlane(TestClient(cluster.url), NAMESPACE)
        operator = OperatorProcess(cluster.write_kubeconfig(pathlib.Path(tmp) / "kubeconfig"),
                                   pathlib.Path(tmp) / "operator.log")
        operator.start("--resync-seconds", str(args.resync_seconds),
                       "--checkpoint-poll-seconds", "0", "--log-level", "WARNING")
        try:
            up = bring_up(plane, args)
            print(f"{args.jobs} jobs x ({args.pservers} pserver + {args.workers} workers) "
                  f"Running after {up:.1f} s", flush=True)
            emulator = cluster.emulator
            assert emulator is not None
            durations_before = histogram(operator.metrics(),
                                         "psjob_operator_reconcile_duration_seconds")
            mark, started = len(emulator.log), time.monotonic()
            reactions: list[float] = []
            while time.monotonic() - started < args.window:
                tick = time.monotonic()
                reactions.append(churn_once(plane, f"job-{rng.randrange(args.jobs):04d}",
                                            timeout=60))
                time.sleep(max(0.0, 1.0 / args.churn - (time.monotonic() - tick)))
            elapsed = time.monotonic() - started
            sent = operator_requests(list(emulator.log), mark)
            metrics = operator.metrics()
            passes = delta(histogram(metrics, "psjob_operator_reconcile_duration_seconds"),
                           durations_before)
            memory = rss_kib(operator.proc.pid)
        finally:
            log_tail = operator.log()[-2000:]
            if operator.proc is not None:
                operator.proc.kill()  # the figures are taken; no need to wait for it
                operator.proc.wait()
    by_verb = collections.Counter(verb(m, params) for m, _, params in sent)
    non_watch = sum(n for v, n in by_verb.items() if v != "watch")
    print(f"steady state: {elapsed:.1f} s, {len(reactions)} pod replacements "
          f"({len(reactions) / elapsed:.2f}/s)")
    print(f"  operator API requests/s: {non_watch / elapsed:.2f} "
          f"(watch streams opened: {by_verb.get('watch', 0)}) by verb: "
          f"{dict(sorted(by_verb.items()))}")
    print(f"  per pod replacement: {non_watch / max(len(reactions), 1):.1f} requests")
    print(f"  operator RSS: {memory.get('VmRSS', 0) / 1024:.1f} MiB "
          f"(peak {memory.get('VmHWM', 0) / 1024:.1f} MiB)")
    count = passes[-1][1] if passes else 0
    print(f"  reconcile passes: {count:.0f} ({count / elapsed:.1f}/s), duration "
          f"p50 {quantile(0.5, passes) * 1000:.1f} ms, p99 {quantile(0.99, passes) * 1000:.1f} ms")
    if reactions:
        ordered = sorted(reactions)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        print(f"  reaction (pod Running -> job Running): p50 "
              f"{statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    if "Traceback" in log_tail:
        print("operator log tail:\n" + log_tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
