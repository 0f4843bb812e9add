"""The operator as a process: restarts, checkpoint probing, metrics, RBAC."""
from __future__ import annotations

import http.server
import signal
import threading

import pytest
from opkit_cluster import free_port, wait_for
from opkit_fakes import FakeControlPlane
from opkit_jobs import child, children, condition, event_reasons, job_manifest, phase, status, submit
from opkit_operator import OperatorProcess
from opkit_rbac import operator_triples, uncovered
from prometheus_client.parser import text_string_to_metric_families

METRICS_PAGE = """\
# HELP psjob_pserver_last_checkpoint_step Step of the newest committed checkpoint.
# TYPE psjob_pserver_last_checkpoint_step gauge
psjob_pserver_last_checkpoint_step{path="/var/lib/psjob/checkpoints/step-1200"} 1200
# HELP psjob_pserver_last_checkpoint_timestamp_seconds Commit time of the newest checkpoint.
# TYPE psjob_pserver_last_checkpoint_timestamp_seconds gauge
psjob_pserver_last_checkpoint_timestamp_seconds 1.7e9
"""


@pytest.fixture(scope="module")
def operator_flags():
    return ("--resync-seconds", "5", "--checkpoint-poll-seconds", "0.5")


@pytest.fixture()
def pserver_metrics():
    """What pserver 0's metrics endpoint serves: a real HTTP server on 127.0.0.1."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server API)
            body = METRICS_PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


def test_checkpoint_progress_reported_by_pserver_0_reaches_the_status(operator, plane,
                                                                      pserver_metrics):
    submit(plane, job_manifest("ckpt", pservers=1, workers=1, metricsPort=pserver_metrics))
    wait_for(lambda: phase(plane, "ckpt") == "Created", what="Created")
    plane.sync("ckpt")
    plane.run("ckpt", ip="127.0.0.1")
    last = wait_for(lambda: status(plane, "ckpt").get("lastCheckpoint"), what="lastCheckpoint")
    assert last == {"step": 1200, "path": "/var/lib/psjob/checkpoints/step-1200",
                    "time": "2023-11-14T22:13:20Z"}


def test_the_operator_serves_liveness_and_its_own_metrics(operator, plane):
    submit(plane, job_manifest("observed", pservers=1, workers=1))
    wait_for(lambda: phase(plane, "observed") == "Created", what="Created")
    plane.sync("observed")
    plane.run("observed")
    wait_for(lambda: phase(plane, "observed") == "Running", what="Running")
    assert operator.alive()

    def scraped():
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in text_string_to_metric_families(operator.metrics())
                   for s in family.samples}
        ready = samples.get(("psjob_operator_jobs", (("phase", "Running"),)), 0) >= 1 and \
            samples.get(("psjob_operator_job_startup_seconds_count", ()), 0) >= 1
        return ready and samples
    samples = wait_for(scraped, what="metrics of a running job")
    assert samples[("psjob_operator_reconciles_total", (("result", "success"),))] > 0
    assert samples[("psjob_operator_reconcile_duration_seconds_count", ())] > 0
    assert samples[("psjob_operator_transitions_total",
                    (("condition", "Running"), ("status", "True")))] >= 1


def test_an_operator_restart_mid_run_resumes_from_what_the_cluster_shows(operator, plane):
    submit(plane, job_manifest("resume", pservers=2, workers=2))
    wait_for(lambda: phase(plane, "resume") == "Created", what="Created")
    plane.sync("resume")
    plane.run("resume")
    wait_for(lambda: phase(plane, "resume") == "Running", what="Running")
    token = plane.kube.get(plane.path("secrets", "resume-auth"))["data"]["token"]
    before = children(plane, "resume")

    operator.stop(signal.SIGKILL)  # a crash: no graceful shutdown
    for name in plane.pods("resume"):
        if name.startswith("resume-worker-"):
            plane.succeed(name)
    plane.sync("resume")
    submit(plane, job_manifest("newcomer", pservers=1, workers=1))  # while nobody watches
    operator.start()

    wait_for(lambda: phase(plane, "resume") == "Succeeded", what="Succeeded after restart")
    wait_for(lambda: phase(plane, "newcomer") == "Created", what="the new job handled")
    assert children(plane, "resume") == before
    assert plane.kube.get(plane.path("secrets", "resume-auth"))["data"]["token"] == token
    assert event_reasons(plane, "resume").count("AllPodsRunning") == 1
    assert condition(plane, "resume", "Succeeded")["status"] == "True"
    wait_for(lambda: child(plane, "statefulsets", "resume-pserver")["spec"]["replicas"] == 0,
             what="pservers stopped")


def test_every_api_call_the_operator_made_is_covered_by_the_required_rbac(cluster, operator):
    triples = operator_triples(cluster.requests())
    # The run above exercised reads, watches, creates, patches, status and events.
    assert {("psjob.dev", "parameterserverjobs", "watch"), ("", "pods", "list"),
            ("psjob.dev", "parameterserverjobs/status", "patch"),
            ("", "events", "create"), ("apps", "statefulsets", "create")} <= triples
    assert uncovered(cluster.requests()) == []


def test_the_operator_stops_cleanly_on_sigterm(operator):
    # Last in this module: the operator stays stopped.
    assert operator.stop(signal.SIGTERM) == 0


def test_with_all_namespaces_the_operator_serves_jobs_anywhere(cluster, operator, plane, tmp_path):
    # The module's operator is stopped by now; this one watches cluster-wide.
    wide = OperatorProcess(cluster.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "log")
    wide.start("--all-namespaces", "--checkpoint-poll-seconds", "0")
    try:
        far = FakeControlPlane(plane.kube, "elsewhere")
        manifest = job_manifest("far", pservers=1, workers=1)
        manifest["metadata"]["namespace"] = "elsewhere"
        submit(far, manifest)
        wait_for(lambda: phase(far, "far") == "Created", what="a job in another namespace")
        assert ("StatefulSet", "far-pserver") in children(far, "far")
    finally:
        assert wide.stop() == 0
