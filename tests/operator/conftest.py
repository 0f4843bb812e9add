"""Operator tests: the real operator against an emulated Kubernetes API.

Real: the operator as users run it — `python -m psjob_operator` in a
subprocess (kopf, the official kubernetes client, our reconciler), logging in
through a kubeconfig and talking HTTP to kmock's Kubernetes emulator on
127.0.0.1; its /metrics and /healthz servers; the builders, status rules,
jobspec parser and CRD generator (unit tests in this folder).

Faked: the rest of the control plane. kmock stores objects and serves the
API; `opkit_cluster.ClusterEmulator` adds uids, generations, status
subresources, label selectors and the garbage collector; the StatefulSet and
Job controllers and the kubelet are `opkit_fakes.FakeControlPlane`, which the
tests drive step by step (create pods, mark them Running, crash-looping,
failed, succeeded). No scheduler, no admission control, no CEL evaluation.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from opkit_cluster import NAMESPACE, ClusterThread, TestClient
from opkit_fakes import FakeControlPlane
from opkit_operator import OperatorProcess


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterThread]:
    with ClusterThread() as thread:
        yield thread


@pytest.fixture(scope="module")
def kube(cluster: ClusterThread) -> TestClient:
    return TestClient(cluster.url)


@pytest.fixture(scope="module")
def plane(kube: TestClient) -> FakeControlPlane:
    return FakeControlPlane(kube, NAMESPACE)


@pytest.fixture(scope="module")
def operator_flags() -> tuple[str, ...]:
    """Extra command-line flags; a module overrides this fixture to change them.
    Checkpoint probing is off by default: every probe re-reads running jobs, and the
    emulator is slow enough for that to crowd out the events under test."""
    return ("--resync-seconds", "5", "--checkpoint-poll-seconds", "0",
            "--secret-recheck-seconds", "5")


@pytest.fixture(scope="module")
def operator(cluster: ClusterThread, tmp_path_factory: pytest.TempPathFactory,
             operator_flags: tuple[str, ...]) -> Iterator[OperatorProcess]:
    tmp = tmp_path_factory.mktemp("operator")
    process = OperatorProcess(cluster.write_kubeconfig(tmp / "kubeconfig"), tmp / "operator.log")
    process.start(*operator_flags)
    yield process
    if process.proc is not None:
        process.stop()
