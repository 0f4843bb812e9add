"""The CPU images built for real with podman, and containers run from them.

Slow (a few minutes: apt and pip in the build stages, PyPI access) and it needs rootful
podman, so it runs only where PSJOB_IMAGE_BUILD=1 is set on a machine with podman, as
root; everywhere else it is skipped, saying why. The base image (`python:3.11-slim-bookworm`)
must be pullable or already in podman's storage. Machines whose podman needs settings
(another OCI runtime, ulimits, a CA bundle for a TLS-intercepting proxy) pass them the usual
way, CONTAINERS_CONF, which the build and the runs inherit.

What a unit test cannot see: scripts/build-images.sh builds both targets of
Dockerfile.server with podman in Docker's format (the HEALTHCHECK survives), the server
image runs `psjob` as the job spec's default user with a passwd entry, carries bytecode
for the standard library, and leaves out the operator's extra, which the operator image
adds in one layer on top of the server image's.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import uuid

import pytest

from psjob.foundation.jobspec.model import SecuritySpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGISTRY = "localhost/psjob-e2e"
BASE = "python:3.11-slim-bookworm"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("podman") is None,
                       reason="podman is not installed: the real image build needs it"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the real image build needs root (rootful podman)"),
    pytest.mark.skipif(os.environ.get("PSJOB_IMAGE_BUILD") != "1",
                       reason="slow (builds the CPU images: minutes, PyPI access): set "
                              "PSJOB_IMAGE_BUILD=1 to run it"),
]


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def images() -> tuple[str, str]:
    if podman("image", "exists", BASE, check=False).returncode != 0:
        pulled = podman("pull", "--quiet", BASE, timeout=300, check=False)
        if pulled.returncode != 0:
            pytest.skip(f"the base image {BASE} is neither in podman's storage nor pullable: "
                        f"{pulled.stderr.strip()[-300:]}")
    server, operator = subprocess.run(
        [str(ROOT / "scripts" / "build-images.sh"), "--cpu-only", "--dry-run", "--registry",
         REGISTRY], capture_output=True, text=True, check=True, timeout=30).stdout.split()
    built = subprocess.run([str(ROOT / "scripts" / "build-images.sh"), "--cpu-only",
                            "--registry", REGISTRY], cwd=ROOT, capture_output=True, text=True,
                           timeout=1500, check=False,
                           env={**os.environ, "CONTAINER_ENGINE": "podman"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert [line for line in built.stdout.splitlines() if line.startswith("built: ")] == \
        [f"built: {server}", f"built: {operator}"]
    assert "build-images: building with podman" in built.stderr
    return server, operator


def run(image: str, *args: str, entrypoint: str | None = None, user: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    """`podman run` the way the operator's pods run: read-only root, /tmp writable, no
    capabilities, no network."""
    flags = ["--rm", "--network", "none", "--read-only", "--read-only-tmpfs=false", "--tmpfs",
             "/tmp", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    if entrypoint is not None:
        flags += ["--entrypoint", entrypoint]
    if user is not None:
        flags += ["--user", user]
    return podman("run", *flags, image, *args, check=check)


@pytest.mark.timeout(1800)
def test_the_server_image_runs_psjob_as_the_job_specs_default_user(images):
    server, _ = images
    assert run(server, "--version").stdout.strip() == \
        subprocess.run([str(ROOT / ".venv" / "bin" / "psjob"), "--version"], capture_output=True,
                       text=True, check=True).stdout.strip()
    default = SecuritySpec()
    pod_user = f"{default.run_as_user}:{default.run_as_group}"
    assert run(server, "-c", "id -un; id -u; id -g", entrypoint="sh", user=pod_user).stdout.split() \
        == ["psjob", str(default.run_as_user), str(default.run_as_group)]
    assert run(server, "-u", entrypoint="id").stdout.strip() == str(default.run_as_user)


@pytest.mark.timeout(1800)
def test_the_server_image_has_bytecode_for_the_stdlib_and_no_operator_extra(images):
    server, _ = images
    probe = ("import importlib.util as u, json, os, sys, email.parser, numpy, grpc, "
             "psjob.foundation.kernels.native as native\n"
             "cached = lambda m: os.path.exists(u.cache_from_source(m.__file__))\n"
             "print(json.dumps({'stdlib': cached(email.parser), 'venv': cached(numpy),\n"
             "    'kernels': native.built(), 'kopf': u.find_spec('kopf') is not None,\n"
             "    'kubernetes': u.find_spec('kubernetes') is not None}))")
    found = json.loads(run(server, "-c", probe, entrypoint="python").stdout)
    assert found == {"stdlib": True, "venv": True, "kernels": True, "kopf": False,
                     "kubernetes": False}
    refused = run(server, "--help", entrypoint="psjob-operator", check=False)
    assert refused.returncode == 1
    assert "psjob-operator: kopf is not installed: run the operator from psjob's operator " \
           "image" in refused.stderr


@pytest.mark.timeout(1800)
def test_the_operator_image_is_the_server_image_plus_the_operator_extra(images):
    server, operator = images
    assert "--all-namespaces" in run(operator, "--help").stdout
    imported = run(operator, "-c", "import kopf, kubernetes, psjob_operator.reconcile",
                   entrypoint="python", user="10001:10001")
    assert imported.returncode == 0

    def layers(image: str) -> list[str]:
        return json.loads(podman("image", "inspect", "--format", "{{json .RootFS.Layers}}",
                                 image).stdout)
    below, above = layers(server), layers(operator)
    assert above[:len(below)] == below and len(above) == len(below) + 1


@pytest.mark.timeout(1800)
def test_the_healthcheck_survives_the_podman_build_and_passes_while_metrics_answer(images):
    server, _ = images
    config = json.loads(podman("image", "inspect", "--format", "{{json .Config.Healthcheck}}",
                               server).stdout)
    assert config["Test"] == ["CMD", "python", "-m", "psjob.foundation.metrics", "healthcheck"]
    names = [f"psjob-health-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    quiet, serving = names
    serve = ("import prometheus_client, time; prometheus_client.start_http_server(9100); "
             "print('serving', flush=True); time.sleep(300)")
    try:
        podman("run", "-d", "--name", quiet, "--network", "none", "--entrypoint", "sleep", server,
               "300")
        podman("run", "-d", "--name", serving, "--network", "none", "--entrypoint", "python",
               server, "-c", serve)
        # Nothing answers on 9100 in the first: podman runs the check and it fails (1; 125
        # would mean the image has no HEALTHCHECK, as podman's default OCI format leaves it).
        assert podman("healthcheck", "run", quiet, check=False).returncode == 1
        with subprocess.Popen(["podman", "logs", "--follow", serving], stdout=subprocess.PIPE,
                              text=True) as logs:
            assert logs.stdout is not None
            assert next(logs.stdout, "").strip() == "serving"  # /metrics answers from now on
            logs.kill()
        checked = podman("healthcheck", "run", serving, check=False)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    finally:
        for name in names:
            podman("rm", "--force", "--time", "0", name, check=False)
