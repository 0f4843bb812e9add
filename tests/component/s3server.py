"""A real S3 API server for the s3:// checkpoint tests: moto in server mode, as a process.

moto runs from its own environment, .venv-s3 (scripts/setup-s3-venv.sh: botocore,
which moto needs, cannot share the main .venv with the kubernetes client). psjob
talks to it over HTTP with its own client, exactly as it would talk to MinIO or AWS.
Tests load this file by path (faultkit.load), like faultkit itself.
"""
import os
import subprocess
import time
import urllib.request
import uuid

from psjob.launcher.local import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MOTO = os.path.join(REPO, ".venv-s3", "bin", "moto_server")
START_BOUND_S = 60


class S3Server:
    """`moto_server` on a free 127.0.0.1 port, started and answered before use."""

    def __init__(self, log_path):
        subprocess.run([os.path.join(REPO, "scripts", "setup-s3-venv.sh")], check=True, timeout=600)
        self.port = free_ports(1)[0]  # outside the ephemeral range, where pservers' ports are drawn too
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen([MOTO, "-H", "127.0.0.1", "-p", str(self.port)], stdout=self._log,
                                     stderr=subprocess.STDOUT)
        t_end = time.monotonic() + START_BOUND_S
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > t_end:
                self.stop()
                raise RuntimeError(f"moto_server did not come up on {self.endpoint}:\n"
                                   + open(log_path, errors="replace").read()[-3000:])
            time.sleep(0.05)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):
                return True
        except OSError:
            return False

    def env(self) -> dict:
        """The standard AWS configuration that points a client at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "psjob-test",
                "AWS_SECRET_ACCESS_KEY": "psjob-test-secret", "AWS_REGION": "us-east-1"}

    def use(self, monkeypatch) -> None:
        """Point this process's AWS_* environment at the server (and only at it)."""
        for key in [k for k in os.environ if k.startswith("AWS_")]:
            monkeypatch.delenv(key)
        for key, value in self.env().items():
            monkeypatch.setenv(key, value)

    def new_bucket(self) -> str:
        """A fresh, empty bucket (CreateBucket through psjob's own signed client)."""
        from psjob.foundation.checkpoint import s3client
        from psjob.foundation.settings import Settings
        name = f"psjob-{uuid.uuid4().hex[:12]}"
        s3client.Client(s3client.Config.of(Settings(self.env()).s3)).request("PUT", f"s3://{name}")
        return name

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
