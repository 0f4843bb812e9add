"""What Prometheus (through the chart's ServiceMonitor/PodMonitor) and the images' HEALTHCHECK see.

A real HTTP /metrics endpoint on 127.0.0.1 (psjob.foundation.metrics.MetricsServer) is
scraped with urllib, and `python -m psjob.foundation.metrics healthcheck` runs as a real
process against it.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import urllib.request

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from psjob.foundation import metrics


def scrape(port: int) -> dict[str, list]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert response.status == 200
        text = response.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_a_scrape_returns_every_catalog_metric_with_the_values_just_recorded():
    registry = CollectorRegistry()
    pserver = metrics.pserver_metrics(registry=registry)
    trainer = metrics.trainer_metrics(registry=registry)
    heter = metrics.heter_metrics(registry=registry)
    operator = metrics.operator_metrics(registry=registry, phases=lambda: {"Running": 2})
    stats = metrics.SparseTableStats(table="emb", shard=1, rows=7, bytes=448, admitted=9, rejected=0,
                                     evicted=2, hits=5, misses=9)
    metrics.sparse_table_collector(lambda: [stats], registry=registry)
    pserver.rpc_requests.labels(method="Push", status="UNAUTHENTICATED").inc()
    pserver.auth_failures.labels(reason="invalid").inc()
    pserver.rpc_duration.labels(method="Push").observe(0.003)
    trainer.loss.set(0.25)
    trainer.batch_duration.labels(phase="pull").observe(0.02)
    trainer.rpc_retries.labels(method="SendVariables").inc(2)
    heter.stage_duration.labels(stage="1").observe(0.004)
    heter.rpc_requests.labels(method="RunStage", status="OK").inc()
    operator.errors.labels(kind="conflict").inc()

    with metrics.MetricsServer(0, registry, host="127.0.0.1") as server:
        assert server.port > 0
        families = scrape(server.port)

    def value(family: str, sample: str, **labels: str) -> float:
        [match] = [s.value for s in families[family] if s.name == sample and s.labels == labels]
        return match

    assert value("psjob_pserver_rpc_requests", "psjob_pserver_rpc_requests_total",
                 method="Push", status="UNAUTHENTICATED") == 1
    assert value("psjob_pserver_auth_failures", "psjob_pserver_auth_failures_total", reason="invalid") == 1
    assert value("psjob_pserver_rpc_duration_seconds", "psjob_pserver_rpc_duration_seconds_count", method="Push") == 1
    assert value("psjob_trainer_loss", "psjob_trainer_loss") == 0.25
    assert value("psjob_operator_jobs", "psjob_operator_jobs", phase="Running") == 2
    assert value("psjob_operator_reconcile_errors", "psjob_operator_reconcile_errors_total", kind="conflict") == 1
    assert value("psjob_sparse_table_rows", "psjob_sparse_table_rows", table="emb", shard="1") == 7
    assert value("psjob_trainer_rpc_retries", "psjob_trainer_rpc_retries_total", method="SendVariables") == 2
    assert value("psjob_heter_stage_seconds", "psjob_heter_stage_seconds_count", stage="1") == 1
    assert value("psjob_heter_rpc_requests", "psjob_heter_rpc_requests_total", method="RunStage", status="OK") == 1
    expected_families = {name.removesuffix("_total") for name in _catalog_names()}
    assert expected_families <= set(families)


def _catalog_names() -> list[str]:
    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "user" / "metrics.md"
    return [line.split("`")[1] for line in doc.read_text().splitlines() if line.startswith("| `psjob_")]


def test_serve_metrics_on_port_zero_returns_the_port_it_bound():
    registry = CollectorRegistry()
    metrics.trainer_metrics(registry=registry).steps.inc(5)
    port = metrics.serve_metrics(0, registry, host="127.0.0.1")  # lives until the test process exits
    assert port > 0
    [sample] = [s for s in scrape(port)["psjob_trainer_steps"] if s.name == "psjob_trainer_steps_total"]
    assert sample.value == 5


def _healthcheck(port: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "PSJOB_METRICS_PORT": str(port)}
    return subprocess.run([sys.executable, "-m", "psjob.foundation.metrics", "healthcheck"], env=env,
                          capture_output=True, text=True, timeout=30, check=False)


def test_the_image_healthcheck_passes_while_metrics_answer_and_fails_after():
    with metrics.MetricsServer(0, CollectorRegistry(), host="127.0.0.1") as server:
        port = server.port
        alive = _healthcheck(port)
    dead = _healthcheck(port)
    assert alive.returncode == 0, alive.stderr
    assert dead.returncode == 1
    assert "psjob healthcheck failed" in dead.stderr
