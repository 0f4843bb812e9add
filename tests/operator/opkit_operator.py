"""The operator as a subprocess: `python -m psjob_operator` against the emulator."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import urllib.request

from opkit_cluster import NAMESPACE, free_port, wait_for

REPO = pathlib.Path(__file__).resolve().parents[2]


class OperatorProcess:
    """`python -m psjob_operator` against the emulator, with short intervals."""

    def __init__(self, kubeconfig: pathlib.Path, log_path: pathlib.Path):
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.metrics_port = self.liveness_port = 0
        self.flags: tuple[str, ...] = ()

    def start(self, *flags: str) -> OperatorProcess:
        self.flags = flags or self.flags
        self.metrics_port, self.liveness_port = free_port(), free_port()
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig))
        env.pop("KUBERNETES_SERVICE_HOST", None)  # never log in to a real cluster
        scope = [] if "--all-namespaces" in self.flags else ["--namespace", NAMESPACE]
        cmd = [sys.executable, "-m", "psjob_operator", *scope,
               "--metrics-port", str(self.metrics_port),
               "--liveness-port", str(self.liveness_port), "--bind", "127.0.0.1",
               *self.flags]
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     cwd=REPO)
        wait_for(self.alive, timeout=60, what=f"operator liveness (log: {self.log_path})")
        return self

    def alive(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError(f"operator exited; log:\n{self.log()[-3000:]}")
        try:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.liveness_port}/healthz", timeout=1) as resp:
                return resp.status == 200
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                    timeout=2) as resp:
            return resp.read().decode()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=15)
        self.proc = None
        return code

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""
