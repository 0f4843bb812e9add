"""The network half of the kubelet emulator's probes (tests/e2e/kubelet.py).

A real kubelet probes a pod from the node: it connects to the pod IP. The
emulated pods live in their own network namespaces behind a bridge in a
"node" network namespace, so this process runs in that namespace and does the
connecting for the harness: one JSON request per line on stdin, one JSON
answer per line on stdout ({"id": ..., "ok": bool, "detail": str}).

Requests: {"id", "kind": "tcpSocket"|"grpc"|"httpGet", "host", "port",
"timeout", plus "service" (grpc), "path"/"scheme"/"headers" (httpGet)}.
The checks are the kubelet's: a TCP connect; grpc.health.v1.Health/Check
answering SERVING; an HTTP status in 200..399.
"""
from __future__ import annotations

import http.client
import json
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc

SERVING = 1  # grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING
_write_lock = threading.Lock()


def _health_request(service: str) -> bytes:
    # HealthCheckRequest{service = 1: string}, encoded by hand (no generated stubs needed).
    data = service.encode()
    return b"\x0a" + bytes([len(data)]) + data if data else b""


def _serving(response: bytes) -> bool:
    # HealthCheckResponse{status = 1: enum}: the field is absent when it is UNKNOWN (0).
    return response[:1] == b"\x08" and response[1:2] == bytes([SERVING])


def tcp(req: dict) -> tuple[bool, str]:
    with socket.create_connection((req["host"], req["port"]), timeout=req["timeout"]):
        return True, "connected"


def grpc_check(req: dict) -> tuple[bool, str]:
    with grpc.insecure_channel(f"{req['host']}:{req['port']}") as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        answer = check(_health_request(req.get("service") or ""), timeout=req["timeout"])
    return _serving(answer), f"health answer {answer!r}"


def http_get(req: dict) -> tuple[bool, str]:
    cls = http.client.HTTPSConnection if req.get("scheme") == "HTTPS" else http.client.HTTPConnection
    conn = cls(req["host"], req["port"], timeout=req["timeout"])
    try:
        conn.request("GET", req.get("path") or "/", headers=req.get("headers") or {})
        status = conn.getresponse().status
    finally:
        conn.close()
    return 200 <= status < 400, f"HTTP {status}"


CHECKS = {"tcpSocket": tcp, "grpc": grpc_check, "httpGet": http_get}


def answer(req: dict) -> None:
    try:
        ok, detail = CHECKS[req["kind"]](req)
    except Exception as exc:  # every failure is a failed probe, reported with its cause
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    with _write_lock:
        sys.stdout.write(json.dumps({"id": req["id"], "ok": ok, "detail": detail}) + "\n")
        sys.stdout.flush()


def main() -> None:
    sys.stdout.write(json.dumps({"id": None, "ok": True, "detail": "ready"}) + "\n")
    sys.stdout.flush()
    with ThreadPoolExecutor(8) as pool:
        for line in sys.stdin:
            pool.submit(answer, json.loads(line))


if __name__ == "__main__":
    main()
