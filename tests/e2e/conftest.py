"""End-to-end tier: whole training runs as a user would start them, and the
operator's pods run as processes (test_pods_as_processes.py; see README.md).

Real: the framework, data sets shipped in the package, generated CTR files,
and (in the distributed tests) real processes. Faked: nothing in the training
runs; for pods, what tests/e2e/kubelet.py says it emulates. Every in-process test
builds its programs under fresh default programs, a fresh unique-name
generator and a fresh global scope.
"""
import os
import sys

import pytest

import psjob.fluid as fluid

sys.path[:0] = [os.path.dirname(__file__),
                os.path.join(os.path.dirname(os.path.dirname(__file__)), "operator")]

from kubelet import Kubelet
from opkit_cluster import NAMESPACE, ClusterThread, TestClient


@pytest.fixture
def fresh_fluid():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), fluid.scope_guard(fluid.Scope()):
        yield main, startup


@pytest.fixture(scope="module")
def cluster():
    """The kmock Kubernetes API emulator of the operator tests (tests/operator)."""
    with ClusterThread() as thread:
        yield thread


@pytest.fixture(scope="module")
def api(cluster) -> TestClient:
    return TestClient(cluster.url)


@pytest.fixture()
def kubelet(api, tmp_path):
    """A node that runs the namespace's pods as processes (kubelet.py)."""
    with Kubelet(api, NAMESPACE, tmp_path / "node") as node:
        yield node


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: minutes long and opt-in (see the test module's docstring)")
