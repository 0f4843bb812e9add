"""API load: labelled watches only, and passes that read the watch cache, not the API.

Proved from the emulator's request log (every request the operator process sent,
with its query parameters), not from the operator's own account of itself.
"""
from __future__ import annotations

import pytest
from opkit_cluster import wait_for
from opkit_jobs import job_manifest, phase, submit
from opkit_rbac import TEST_CLIENT_AGENT
from prometheus_client.parser import text_string_to_metric_families

from psjob_operator import naming

JOBS = ("load-a", "load-b", "load-c")


@pytest.fixture(scope="module")
def operator_flags():
    # A short resync: many passes over quiet jobs in a second or two.
    return ("--resync-seconds", "0.3", "--checkpoint-poll-seconds", "0")


def operator_requests(cluster, since: int = 0) -> list[tuple[str, str, dict]]:
    return [(method, path, params) for method, path, params, agent in cluster.requests()[since:]
            if not agent.startswith(TEST_CLIENT_AGENT)]


def passes(operator) -> float:
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            if sample.name == "psjob_operator_reconciles_total" and \
                    sample.labels == {"result": "success"}:
                return sample.value
    return 0.0


@pytest.fixture(scope="module")
def running_jobs(operator, plane):
    for name in JOBS:
        submit(plane, job_manifest(name, pservers=2, workers=2))
    for name in JOBS:
        wait_for(lambda: phase(plane, name) == "Created", what=f"{name} Created")
        plane.sync(name)
        plane.run(name)
    for name in JOBS:
        wait_for(lambda: phase(plane, name) == "Running", what=f"{name} Running")
    return JOBS


def test_every_child_list_and_watch_carries_the_job_label_selector(cluster, running_jobs):
    reads = [(path, params) for method, path, params in operator_requests(cluster)
             if method == "GET" and not path.rstrip("/").split("/")[-1].startswith(
                 tuple(running_jobs))]
    collections = [(path, params) for path, params in reads
                   if path.startswith(("/api/v1/namespaces/", "/apis/"))
                   and path.count("/") in (5, 6) and "/namespaces/" in path
                   and not path.endswith("/status")]
    assert collections, "no list or watch recorded"
    watched = {path.rsplit("/", 1)[-1] for path, _ in collections}
    assert {"pods", "statefulsets", "jobs", "services", "configmaps", "networkpolicies",
            "persistentvolumeclaims", "parameterserverjobs"} <= watched
    for path, params in collections:
        if path.endswith("/parameterserverjobs"):
            continue  # every object of our own kind is ours: no selector needed
        assert params.get("labelSelector") == naming.LABEL_JOB, (path, params)


def test_passes_over_quiet_jobs_send_no_request_at_all(cluster, operator, running_jobs):
    # Let the jobs settle (their last status writes and Events), then count.
    before_passes = passes(operator)
    wait_for(lambda: passes(operator) >= before_passes + 2 * len(running_jobs),
             what="passes over the settled jobs")
    mark = len(cluster.requests())
    start = passes(operator)
    wait_for(lambda: passes(operator) >= start + 5 * len(running_jobs),
             what="five passes per job")
    sent = [(method, path) for method, path, params in operator_requests(cluster, mark)
            if params.get("watch") not in ("true", "1")]
    assert sent == [], f"{passes(operator) - start:.0f} passes sent {sent[:10]}"
