"""The metric catalog (runtime/psjob/foundation/metrics.py) against its table (docs/user/metrics.md) and the Grafana dashboard."""
from __future__ import annotations

import dataclasses
import json
import logging
import pathlib
import re

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from psjob.foundation import metrics, roles

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "user" / "metrics.md"
DASHBOARD = ROOT / "charts" / "psjob-operator" / "files" / "dashboards" / "psjob.json"
FACTORIES = {"pserver": metrics.pserver_metrics, "trainer": metrics.trainer_metrics,
             "heter trainer": metrics.heter_metrics, "operator": metrics.operator_metrics}
# Target labels the chart's PodMonitor adds (psjob.dev/job-name and psjob.dev/role pod labels);
# dashboard queries use them as labels, not metric names.
TARGET_LABELS = {"psjob_job", "psjob_role"}
STATS = metrics.SparseTableStats(table="emb", shard=0, rows=10, bytes=640, admitted=12, rejected=2,
                                 evicted=2, hits=30, misses=12)


def code_catalog() -> dict[str, tuple[str, tuple[str, ...], str]]:
    """{exposed name: (type, labels, process)} for everything the factories and collector export."""
    catalog = {}
    for process, factory in FACTORIES.items():
        registry = CollectorRegistry()
        group = factory(registry=registry)
        for family in registry.collect():  # scrape-time collectors registered by the factory
            if family.name == "psjob_operator_jobs":
                catalog[family.name] = (family.type, tuple(family.samples[0].labels), process)
        for field in dataclasses.fields(group):
            metric = getattr(group, field.name)
            labels = tuple(metric._labelnames)
            family = next(iter(metric.describe()))
            name = family.name + "_total" if family.type == "counter" else family.name
            catalog[name] = (family.type, labels, process)
    for family in metrics.SparseTableCollector(lambda: [STATS]).collect():
        labels = tuple(family.samples[0].labels) if family.samples and family.samples[0].labels else ()
        name = family.name + "_total" if family.type == "counter" else family.name
        catalog[name] = (family.type, labels, "pserver")
    return catalog


def doc_catalog() -> dict[str, tuple[str, tuple[str, ...], str]]:
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| `psjob_")]
    catalog = {}
    for row in rows:
        name, kind, labels, process, meaning = [cell.strip() for cell in row.strip("|").split("|")]
        assert meaning, f"{name} has no meaning in docs/user/metrics.md"
        catalog[name.strip("`")] = (kind, tuple(re.findall(r"`(\w+)`", labels)), process)
    return catalog


def exported_sample_names() -> set[str]:
    names = set()
    for name, (kind, _, _) in code_catalog().items():
        names.add(name)
        if kind == "histogram":
            names |= {name + "_bucket", name + "_sum", name + "_count"}
    return names


def queried_metric_names() -> set[str]:
    return {name for query in dashboard_queries() for name in re.findall(r"\bpsjob_\w+", query)} - TARGET_LABELS


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        queries.append(query["query"] if isinstance(query, dict) else str(query or ""))
    return queries


def test_the_docs_table_lists_exactly_the_metrics_the_code_exports_with_types_and_labels():
    assert doc_catalog() == code_catalog()


def test_every_metric_name_has_the_psjob_prefix():
    assert all(name.startswith(metrics.PREFIX) for name in code_catalog())


def test_the_dashboard_queries_only_metrics_the_code_exports():
    exported = exported_sample_names()
    queried = queried_metric_names()
    assert queried, "the dashboard queries no psjob metric"
    assert queried - exported == set()


def test_the_dashboard_has_a_panel_for_every_exported_metric():
    queried = queried_metric_names()
    missing = [name for name, (kind, _, _) in code_catalog().items()
               if name not in queried and not (kind == "histogram" and f"{name}_bucket" in queried)
               and f"{name}_count" not in queried]
    assert missing == []


def test_job_panels_are_filtered_by_the_namespace_and_job_variables():
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"namespace", "job", "datasource"} <= variables
    for query in dashboard_queries():
        for name, selector in re.findall(r"\b(psjob_(?:trainer|pserver|heter|sparse_table)_\w+)(\{[^}]*\})?", query):
            if query.startswith("label_values"):
                continue
            assert 'namespace="$namespace"' in selector and 'psjob_job=~"$job"' in selector, (name, query)


def test_the_factories_register_into_the_registry_they_are_given():
    first, second = CollectorRegistry(), CollectorRegistry()
    metrics.trainer_metrics(registry=first).steps.inc(3)
    metrics.trainer_metrics(registry=second)
    assert first.get_sample_value("psjob_trainer_steps_total") == 3
    assert second.get_sample_value("psjob_trainer_steps_total") == 0
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        metrics.trainer_metrics(registry=first)


def test_the_metric_groups_are_frozen():
    group = metrics.operator_metrics(registry=CollectorRegistry())
    with pytest.raises(dataclasses.FrozenInstanceError):
        group.errors = None  # type: ignore[misc]


def test_jobs_by_phase_are_read_at_scrape_time_with_every_phase_present():
    counts = {"Running": 2}
    registry = CollectorRegistry()
    metrics.operator_metrics(registry=registry, phases=lambda: counts)
    assert registry.get_sample_value("psjob_operator_jobs", {"phase": "Running"}) == 2
    assert registry.get_sample_value("psjob_operator_jobs", {"phase": "Failed"}) == 0
    counts.update(Running=1, Failed=1)
    assert registry.get_sample_value("psjob_operator_jobs", {"phase": "Running"}) == 1
    assert registry.get_sample_value("psjob_operator_jobs", {"phase": "Failed"}) == 1


def test_a_broken_phase_source_leaves_the_other_operator_metrics_scrapable(caplog):
    registry = CollectorRegistry()
    metrics.operator_metrics(registry=registry, phases=lambda: 1 / 0).reconciles.labels("success").inc()
    with caplog.at_level(logging.ERROR, logger="psjob.foundation.metrics"):
        text = generate_latest(registry).decode()
    assert 'psjob_operator_reconciles_total{result="success"} 1.0' in text
    assert "job phase source failed" in caplog.text


def test_the_catalog_phases_are_the_operators_job_phases():
    from psjob_operator.status import Phase  # noqa: PLC0415 — the operator owns the phase names

    assert set(metrics.JOB_PHASES) == {phase.value for phase in Phase}


def test_sparse_table_stats_are_read_from_the_source_at_each_scrape():
    current = [STATS]
    registry = CollectorRegistry()
    metrics.sparse_table_collector(lambda: current, registry=registry)
    labels = {"table": "emb", "shard": "0"}
    assert registry.get_sample_value("psjob_sparse_table_rows", labels) == 10
    current[:] = [dataclasses.replace(STATS, rows=25, evicted=7),
                  dataclasses.replace(STATS, shard=1, rows=4)]
    assert registry.get_sample_value("psjob_sparse_table_rows", labels) == 25
    assert registry.get_sample_value("psjob_sparse_table_evicted_total", labels) == 7
    assert registry.get_sample_value("psjob_sparse_table_rows", {"table": "emb", "shard": "1"}) == 4


def test_registering_the_table_collector_does_not_call_its_source():
    calls = []
    registry = CollectorRegistry()
    metrics.sparse_table_collector(lambda: calls.append(1) or [], registry=registry)
    assert calls == []


@pytest.mark.parametrize("source", [lambda: 1 / 0, lambda: ["not stats"]], ids=["raises", "returns the wrong type"])
def test_a_broken_table_source_is_counted_and_the_scrape_still_answers(source, caplog):
    registry = CollectorRegistry()
    metrics.trainer_metrics(registry=registry).steps.inc()
    metrics.sparse_table_collector(source, registry=registry)
    with caplog.at_level(logging.ERROR, logger="psjob.foundation.metrics"):
        generate_latest(registry)
        text = generate_latest(registry).decode()
    assert "psjob_trainer_steps_total 1.0" in text
    assert "psjob_sparse_table_collect_errors_total 2.0" in text
    assert "sparse table stats source failed" in caplog.text


@pytest.mark.parametrize(("field", "value"), [("rows", -1), ("hits", 1.5), ("shard", True), ("table", "")])
def test_bad_table_stats_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"SparseTableStats\.{field}"):
        dataclasses.replace(STATS, **{field: value})


def test_a_non_callable_table_source_is_refused():
    with pytest.raises(TypeError, match="callable"):
        metrics.SparseTableCollector([STATS])  # type: ignore[arg-type]


@pytest.mark.parametrize("port", [-1, 65536, "9100", True])
def test_serve_metrics_refuses_a_bad_port_before_opening_anything(port):
    with pytest.raises(ValueError, match="metrics port"):
        metrics.serve_metrics(port, CollectorRegistry())


def test_the_metrics_port_comes_from_the_environment_with_a_default():
    from psjob.foundation.settings import Settings
    assert Settings({}).metrics.port == roles.DEFAULT_METRICS_PORT and not Settings({}).metrics.enabled
    assert Settings({"PSJOB_METRICS_PORT": "9200"}).metrics.port == 9200
    # 0 = any free port: local runs put several processes on one host.
    assert Settings({"PSJOB_METRICS_PORT": "0"}).metrics.port == 0
    for bad in ("http", "-1", "70000"):
        with pytest.raises(ValueError, match="PSJOB_METRICS_PORT"):
            Settings({"PSJOB_METRICS_PORT": bad}).metrics
