"""What a peer can hold on a real pserver process: threads, bytes, sockets and seconds.

Unauthenticated peers (no job token) speak raw HTTP/2 to the gRPC port (rawpeer.py:
partial bodies, stalls, huge declared messages) and idle TCP to the data port;
authenticated ones send oversized, stalled or huge requests. Each test measures the
pserver process itself (/proc/PID/status VmHWM, VmRSS, Threads; /proc/PID/fd) and
checks that a legitimate trainer is still served. docs/security.md ("What an
unauthenticated peer can hold") quotes the figures these tests print.
"""
import os
import subprocess
import sys
import time

import grpc
import numpy as np
import pytest

from psjob import roles
from psjob.launcher.launch import free_ports, loopback_endpoints, write_token
from psjob.rpc.client import PSClient, RetryPolicy, RpcError

HERE = os.path.dirname(os.path.abspath(__file__))
_kit = __import__("importlib.util").util
_spec = _kit.spec_from_file_location("rawpeer", os.path.join(HERE, "rawpeer.py"))
raw = _kit.module_from_spec(_spec)
_spec.loader.exec_module(raw)

QUICK = RetryPolicy(deadline_s=10, max_attempts=2, initial_backoff_s=0.05)
SEND_PATH = "/psjob.rpc.v1.ParameterServer/SendVariables"
MiB = 1 << 20


class Pserver:
    """One pserver process of fleet_train.py (1 trainer slot) with a per-run token."""

    def __init__(self, tmp_path, script, mode="sync", model_args=(), extra_env=None, preexec_fn=None):
        self.endpoint = loopback_endpoints(1)[0]
        self.host, port = self.endpoint.rsplit(":", 1)
        self.port = int(port)
        token_file = write_token(str(tmp_path))
        self.token = open(token_file).read().strip()
        self.metrics_port = free_ports(1)[0]
        self.topo = roles.JobTopology(job_name="bounds", namespace="local", pserver_endpoints=(self.endpoint,),
                                      trainers=1, mode=mode, metrics_port=0, auth_token_file=token_file)
        self.tmp_path, self.script = tmp_path, script
        self.args = ["--mode", mode, "--out", str(tmp_path), "--steps", "5", *model_args]
        env = self.env(roles.PSERVER)
        env["PSJOB_METRICS_PORT"] = str(self.metrics_port)
        env[roles.STAY_UNTIL_STOPPED_ENV] = "1"  # up after its trainer, for what the test asks next
        env.update(extra_env or {})
        self.log = tmp_path / "pserver.log"
        self.proc = subprocess.Popen([sys.executable, script("fleet_train.py"), *self.args], env=env,
                                     stdout=open(self.log, "w"), stderr=subprocess.STDOUT, preexec_fn=preexec_fn)
        self.others = []

    def env(self, role):
        env = dict(os.environ)
        env.update(roles.role_environment(self.topo, role, 0))
        return env

    def client(self, **kw) -> PSClient:
        c = PSClient([self.endpoint], 0, auth_token=self.token, retry=QUICK, **kw)
        c.wait_server_ready(timeout_s=90)
        return c

    def trainer(self):
        log = self.tmp_path / "trainer.log"
        p = subprocess.Popen([sys.executable, self.script("fleet_train.py"), *self.args], env=self.env(roles.TRAINER),
                             stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.others.append(p)
        return p, log

    def memory(self) -> dict:
        return raw.memory_kib(self.proc.pid)

    def scrape(self) -> str:
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            return r.read().decode()

    def stop(self):
        for p in [*self.others, self.proc]:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture
def pserver(tmp_path, script):
    started = []

    def start(**kw):
        ps = Pserver(tmp_path, script, **kw)
        started.append(ps)
        return ps
    yield start
    for ps in started:
        ps.stop()


def test_stalled_and_huge_unauthenticated_grpc_calls_hold_no_worker_and_no_memory(pserver):
    """32 calls without the token that declare 1 MiB, send 100 bytes and stall (twice the
    pserver's 16 workers), then one declaring 512 MiB and three declaring 900 MiB that
    send as fast as the server lets them: each is refused on its headers, before a byte of
    its body is read, on no worker of the trainers' pool; the pserver's memory and thread
    count stay where they were, and a real trainer trains to the end meanwhile."""
    ps = pserver()
    client = ps.client()
    before = ps.memory()
    conns = [raw.H2Connection(ps.host, ps.port) for _ in range(4)]
    try:
        stalled = {c: [c.call(SEND_PATH, declared=MiB, body=b"x" * 100) for _ in range(8)] for c in conns}
        t0 = time.monotonic()
        for c, streams in stalled.items():
            assert c.wait_ended(streams, timeout=10), "the pserver left unauthenticated calls open"
        refused_s = time.monotonic() - t0
        # The trainers' pool is untouched: a control call and a real trainer go through at once.
        assert client.status(ps.endpoint, deadline=5).state == "SERVING"
        trainer, log = ps.trainer()
        assert trainer.wait(timeout=120) == 0, log.read_text()
        # Huge declared messages: the pserver lets through at most a flow-control window.
        huge = raw.H2Connection(ps.host, ps.port)
        conns.append(huge)
        s = huge.call(SEND_PATH, declared=512 * MiB)
        accepted = [huge.stream_bytes(s, 512 * MiB, stall_s=3)]
        import threading
        three = [raw.H2Connection(ps.host, ps.port) for _ in range(3)]
        conns.extend(three)

        def flood(c):
            st = c.call(SEND_PATH, declared=900 * MiB)
            accepted.append(c.stream_bytes(st, 900 * MiB, stall_s=3))
        threads = [threading.Thread(target=flood, args=(c,)) for c in three]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        after = ps.memory()
    finally:
        for c in conns:
            c.close()
    growth_mib = (after["VmHWM"] - before["VmHWM"]) / 1024
    print(f"\n[bounds] unauthenticated gRPC: 32 stalled calls refused in {refused_s:.2f}s; body bytes "
          f"let through per huge call {sorted(accepted)}; VmHWM {before['VmHWM'] // 1024} -> "
          f"{after['VmHWM'] // 1024} MiB, VmRSS {after['VmRSS'] // 1024} MiB, threads {before['Threads']} -> "
          f"{after['Threads']}")
    assert max(accepted) < 8 * MiB, accepted
    assert growth_mib < 64, (before, after)
    assert after["Threads"] <= before["Threads"] + 4, (before, after)
    assert 'psjob_pserver_auth_failures_total{reason="missing"} 36.0' in ps.scrape()
