"""Where the pserver's, heter trainer's and trainer's /metrics listeners bind: loopback
for processes of `psjob run` / `psjob launch` (their own address is 127.0.0.x), every
interface in pods (Prometheus scrapes the pod IP). Real listeners on free ports."""
from __future__ import annotations

import pytest

from psjob.cluster.pserver.observability import heter_telemetry, pserver_telemetry
from psjob.foundation import jobspec, metrics, roles
from psjob.foundation.settings import Settings, metrics_host

EXAMPLE = "examples/ctr-cpu.yaml"


def launched_pserver_env(index: int) -> dict[str, str]:
    """A pserver's environment as `psjob launch` / `psjob run` give it."""
    job = jobspec.load_job_file(EXAMPLE)
    topology = roles.local_topology(job, [6174] * job.spec.pserver.replicas, "/tmp/unused")
    return {**roles.role_environment(topology, roles.PSERVER, index),
            metrics.METRICS_PORT_ENV: "0"}


@pytest.mark.parametrize("index", [0, 1])
def test_a_launched_pservers_metrics_listen_on_loopback_only(index):
    env = launched_pserver_env(index)
    assert env["PSJOB_CURRENT_ENDPOINT"].startswith(f"127.0.0.{index + 1}:")
    telemetry = pserver_telemetry(Settings(env).metrics)
    try:
        assert telemetry.server.host == "127.0.0.1"
    finally:
        telemetry.server.close()


def test_a_pserver_or_heter_trainer_in_a_pod_listens_on_every_interface():
    pod = {"POD_IP": "10.244.1.7", "PSJOB_PSERVER_INDEX": "auto", metrics.METRICS_PORT_ENV: "0"}
    for serve in (pserver_telemetry, heter_telemetry):
        telemetry = serve(Settings(pod).metrics)
        try:
            assert telemetry.server.host == "0.0.0.0"
        finally:
            telemetry.server.close()


@pytest.mark.parametrize("env, host", [
    ({"PADDLE_CURRENT_IP": "127.0.0.3"}, "127.0.0.1"),
    ({"PSJOB_CURRENT_ENDPOINT": "127.0.0.2:6174"}, "127.0.0.1"),
    ({"PSJOB_CURRENT_ENDPOINT": "[::1]:6174"}, "127.0.0.1"),
    ({"POD_IP": "10.0.0.5"}, "0.0.0.0"),
    ({"PSJOB_CURRENT_ENDPOINT": "ctr-pserver-0.ctr-pserver.ml.svc:6174"}, "0.0.0.0"),
    ({}, "0.0.0.0"),
])
def test_the_listener_address_follows_the_processs_own_address(env, host):
    assert metrics_host(env) == host
