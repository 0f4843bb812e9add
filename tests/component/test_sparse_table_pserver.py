"""A real pserver process hosting a hash-keyed sparse table: prefetch, push, /metrics.

The pserver runs the fleet_train CTR script with `--distributed_table` (async,
one trainer slot), with SGD and with Adam; the test talks to it over gRPC as a
trainer would, with feature ids no dense table could hold (negative, the int64
extremes).
"""
import os
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy
from psjob.fluid.core import SelectedRows
from psjob.foundation import roles
from psjob.launcher.launch import free_ports, loopback_endpoints, write_token
from psjob.training.models.ctr import TABLE_NAME

QUICK = RetryPolicy(deadline_s=20, max_attempts=2, initial_backoff_s=0.05)
IDS = np.array([-(2**63), -1, 0, 7, 2**40 + 3, 2**63 - 1], dtype=np.int64)


LR = 1e-3  # fleet_train.py's default --lr


@pytest.fixture(params=["sgd", "adam"])
def pserver(request, tmp_path, script):
    endpoint = loopback_endpoints(1)[0]
    token_file = write_token(str(tmp_path))
    metrics_port = free_ports(1)[0]
    topo = roles.JobTopology(job_name="tables", namespace="local", pserver_endpoints=(endpoint,), trainers=1,
                             mode="async", metrics_port=0, auth_token_file=token_file)
    env = dict(os.environ)
    env.update(roles.role_environment(topo, roles.PSERVER, 0))
    env["PSJOB_METRICS_PORT"] = str(metrics_port)
    log = open(tmp_path / "pserver.log", "w")
    proc = subprocess.Popen([sys.executable, script("fleet_train.py"), "--model", "ctr", "--mode", "async",
                             "--distributed_table", "--optimizer", request.param, "--out", str(tmp_path)],
                            env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    client = GrpcPSClient([endpoint], 0, auth_token=open(token_file).read().strip(), retry=QUICK)
    try:
        client.wait_server_ready(timeout_s=90)
        yield client, endpoint, metrics_port, request.param
    finally:
        proc.kill()
        proc.wait()
        log.close()


def _scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def _sample(text, name):
    for line in text.splitlines():
        if line.startswith(name + "{") and f'table="{TABLE_NAME}"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} sample for {TABLE_NAME} in:\n{text}")


def test_a_pserver_serves_hashed_ids_creates_rows_on_first_use_and_reports_them_on_metrics(pserver):
    client, ep, metrics_port, optimizer = pserver
    first = client.prefetch(ep, TABLE_NAME, IDS).wait()
    assert first.shape == (len(IDS), 16) and np.abs(first).max() <= 0.01  # Uniform(-0.01, 0.01) rows
    assert len({tuple(r) for r in first}) == len(IDS)  # each id its own row
    np.testing.assert_array_equal(client.prefetch(ep, TABLE_NAME, IDS[::-1]).wait(), first[::-1])
    # An async push keyed by feature id (height 0: unbounded ids) moves exactly those rows, by the
    # job's optimizer rule: sgd steps lr * grad; Adam's first step is lr / (1 + eps) whatever the
    # gradient's size (the table runs the program's rule per row, not Fluid 1.x's plain sgd).
    grad = SelectedRows(IDS[:2], np.full((2, 16), 2.0, np.float32), 0)
    client.push(ep, {f"{TABLE_NAME}@GRAD.pserver_0": grad}).wait()  # async: no trainer suffix
    after = client.prefetch(ep, TABLE_NAME, IDS).wait()
    step = {"sgd": 2.0 * LR, "adam": LR / (1 + 1e-8)}[optimizer]
    np.testing.assert_allclose(first[:2] - after[:2], step, rtol=1e-3)
    np.testing.assert_array_equal(after[2:], first[2:])
    text = _scrape(metrics_port)
    assert _sample(text, "psjob_sparse_table_rows") == len(IDS)
    assert _sample(text, "psjob_sparse_table_admitted_total") == len(IDS)
    assert _sample(text, "psjob_sparse_table_hits_total") == 2 * len(IDS)
    assert _sample(text, "psjob_sparse_table_bytes") > 0
