"""`python -m psjob_operator` / `psjob-operator`: start the operator.

Lifecycle: parse flags into `OperatorSettings` → start the /metrics server →
run kopf (login: in-cluster service account, else the kubeconfig named by
$KUBECONFIG or ~/.kube/config; liveness at :<liveness-port>/healthz) and the
reconcile controller side by side on one event loop → on SIGTERM/SIGINT kopf
stops its watches, the controller is cancelled, the process exits 0.

One replica at a time (kopf runs standalone, without peering): deploy it with
the Recreate strategy.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

try:
    import kopf
except ModuleNotFoundError as missing:  # psjob's job images leave the [operator] extra out
    raise SystemExit(f"psjob-operator: {missing.name} is not installed: run the operator from "
                     f"psjob's operator image (<registry>/psjob:<version>-operator) or install "
                     f"psjob[operator]") from missing
from prometheus_client import CollectorRegistry

from psjob_operator import gang
from psjob_operator.cache import Overlay, WatchCache, cached_children
from psjob_operator.controller import Controller
from psjob_operator.handlers import build_registry
from psjob_operator.kube import KubeApi
from psjob_operator.metrics import OperatorMetrics
from psjob_operator.reconcile import Reconciler
from psjob_operator.settings import (
    GangScheduler,
    OperatorSettings,
    QueueSystem,
    ReconcileSettings,
    SchedulingSettings,
    ServeSettings,
    WatchSettings,
)

log = logging.getLogger("psjob_operator")


def parse_args(argv: Sequence[str] | None = None) -> OperatorSettings:
    defaults = ReconcileSettings()
    serve = ServeSettings()
    parser = argparse.ArgumentParser(prog="psjob-operator",
                                     description="Reconcile ParameterServerJob resources.")
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                       help="serve this namespace (repeatable)")
    scope.add_argument("--all-namespaces", "-A", action="store_true",
                       help="serve every namespace (needs a ClusterRole)")
    parser.add_argument("--metrics-port", type=int, default=serve.metrics_port,
                        help="Prometheus /metrics port (default %(default)s)")
    parser.add_argument("--liveness-port", type=int, default=serve.liveness_port,
                        help="liveness probe port, path /healthz (default %(default)s)")
    parser.add_argument("--bind", default=serve.host, help="address of both HTTP servers")
    parser.add_argument("--workers", type=int, default=defaults.workers,
                        help="jobs reconciled in parallel (default %(default)s)")
    parser.add_argument("--resync-seconds", type=float, default=defaults.resync_seconds,
                        help="re-read every job at least this often (default %(default)s)")
    parser.add_argument("--checkpoint-poll-seconds", type=float,
                        default=defaults.checkpoint_poll_seconds,
                        help="read pserver 0's checkpoint metrics this often; 0 disables")
    parser.add_argument("--secret-recheck-seconds", type=float,
                        default=defaults.secret_recheck_seconds,
                        help="re-create a job's auth Secret deleted by hand within this long "
                             "(one request per job each time; default %(default)s)")
    parser.add_argument("--gang-scheduler", default=GangScheduler.NONE.value,
                        choices=[g.value for g in GangScheduler],
                        help="create a PodGroup per job for this batch scheduler and mark the "
                             "pods (default %(default)s)")
    parser.add_argument("--scheduler-name", default="",
                        help="schedulerName of the pods with a gang scheduler (default: volcano, "
                             "or scheduler-plugins-scheduler)")
    parser.add_argument("--queue-system", default=QueueSystem.NONE.value,
                        choices=[q.value for q in QueueSystem],
                        help="kueue: label pods of jobs with runPolicy.schedulingPolicy.queue "
                             "for Kueue's pod groups (default %(default)s)")
    parser.add_argument("--log-level", default="INFO",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.log_level != "DEBUG":
        # kopf logs every handled watch event at INFO ("Handler ... succeeded"): with
        # one handler per pod event that drowns the reconciler's own messages.
        for noisy in ("kopf.objects", "aiohttp.access", "kopf.activities.probe"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    return OperatorSettings(
        watch=WatchSettings(namespaces=tuple(args.namespace),
                            all_namespaces=args.all_namespaces),
        serve=ServeSettings(host=args.bind, metrics_port=args.metrics_port,
                            liveness_port=args.liveness_port),
        reconcile=ReconcileSettings(workers=args.workers, resync_seconds=args.resync_seconds,
                                    checkpoint_poll_seconds=args.checkpoint_poll_seconds,
                                    secret_recheck_seconds=args.secret_recheck_seconds),
        scheduling=SchedulingSettings(gang_scheduler=GangScheduler(args.gang_scheduler),
                                      scheduler_name=args.scheduler_name,
                                      queue_system=QueueSystem(args.queue_system)),
    )


async def run(settings: OperatorSettings, registry: CollectorRegistry | None = None) -> None:
    """Run kopf and the controller until kopf stops (signal) or one of them fails."""
    overlay = Overlay()
    api = KubeApi(timeout=settings.reconcile.request_timeout_seconds, on_write=overlay.record)
    reconciler = Reconciler(api, settings.reconcile, overlay=overlay,
                            scheduling=settings.scheduling)
    watched = cached_children(gang.podgroup_resource(settings.scheduling))
    controller = Controller(reconciler, settings.reconcile, WatchCache(watched))
    metrics = OperatorMetrics(registry or CollectorRegistry(), controller.phase_counts)
    controller.metrics = metrics
    server = metrics.serve(settings.serve.metrics_port, settings.serve.host)
    controller.start()
    try:
        await kopf.operator(
            registry=build_registry(controller, settings),
            standalone=True,
            clusterwide=settings.watch.all_namespaces,
            namespaces=list(settings.watch.namespaces),
            liveness_endpoint=(f"http://{settings.serve.host}:{settings.serve.liveness_port}"
                               "/healthz"),
        )
    finally:
        await controller.stop()
        server.close()


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_args(argv)
    scope = "all namespaces" if settings.watch.all_namespaces else \
        ", ".join(settings.watch.namespaces)
    log.info("psjob operator serving %s (metrics :%d, liveness :%d/healthz)", scope,
             settings.serve.metrics_port, settings.serve.liveness_port)
    asyncio.run(run(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
