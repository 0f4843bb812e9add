"""Chart tier: the Helm chart installed by real Helm into an emulated Kubernetes API.

Real: Helm (the Helm Go library bundled by helm-sdkpy, in .venv-helm under
Python 3.12, driven by tests/helm/helm_driver.py in a subprocess); the chart
rendered, schema-checked and applied exactly as `helm install` does; HTTP to
the API server on 127.0.0.1; every stored object validated against the
Kubernetes OpenAPI schemas (kubernetes-validate, strict). The metrics endpoint
test scrapes a real HTTP server on 127.0.0.1.

Faked: the Kubernetes API server is the kmock emulator (in-memory objects, no
controllers, so nothing is scheduled or run). Helm keeps its release records
in its in-memory storage driver (HELM_DRIVER=memory) because kmock 0.8 cannot
decode the protobuf Secrets the default driver writes; kmock's core discovery
answers groupVersion "/v1", which `_Emulator` corrects; kmock applies PATCH as
a plain dict merge (no strategic-merge directives), so after an upgrade only
the fields the upgrade changes are checked, not the whole object's schema.
"""
from __future__ import annotations

import asyncio
import copy
import json
import os
import pathlib
import subprocess
import threading
import warnings
from collections.abc import Iterator

import kmock
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "psjob-operator"
HELM_PYTHON = ROOT / ".venv-helm" / "bin" / "python"
DRIVER = pathlib.Path(__file__).with_name("helm_driver.py")

# Resources of the Prometheus Operator the chart may create; kmock's bundled
# discovery data (a K3s cluster) has only built-in kinds.
MONITORING_RESOURCES = {
    "monitoring.coreos.com/v1/servicemonitors": "ServiceMonitor",
    "monitoring.coreos.com/v1/podmonitors": "PodMonitor",
}
PSJOB_RESOURCE = "psjob.dev/v1alpha1/parameterserverjobs"
ALL_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}


class _Emulator(kmock.KubernetesEmulator):
    async def _serve_version(self, request):  # type: ignore[no-untyped-def]
        # kmock 0.8 answers "/v1" for the core group; client-go's RESTMapper needs "v1".
        payload = await super()._serve_version(request)
        payload["groupVersion"] = payload["groupVersion"].lstrip("/")
        return payload

    async def _serve_list(self, request):  # type: ignore[no-untyped-def]
        # kmock 0.8's lists carry no kind/apiVersion; kubectl get needs them.
        result = await super()._serve_list(request)
        group, version = request.resource.group, request.resource.version
        result["kind"] = f"{self.resources[request.resource].kind}List"
        result["apiVersion"] = f"{group}/{version}" if group else version
        return result


class KubeAPI:
    """A kmock Kubernetes emulator serving on 127.0.0.1 from a background thread."""

    def __init__(self, with_monitoring_crds: bool = True) -> None:
        self._with_monitoring = with_monitoring_crds
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._emulator: _Emulator | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),),
                                        name="kmock", daemon=True)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with _Emulator() as emulator, kmock.Server(emulator) as server:
            with warnings.catch_warnings():  # kmock 0.8 calls the deprecated read_binary()
                warnings.simplefilter("ignore", DeprecationWarning)
                emulator.resources.load_bundled()
            # A real API server serves a CRD's kind once the CRD is created; kmock does
            # not, so ParameterServerJobs are served from the start (kubectl apply -f
            # examples/... right after helm install, as the README does).
            emulator.resources[PSJOB_RESOURCE] = kmock.ResourceInfo(
                kind="ParameterServerJob", singular="parameterserverjob", namespaced=True,
                verbs=ALL_VERBS, shortnames=["psjob", "psj"])
            if self._with_monitoring:
                for key, kind in MONITORING_RESOURCES.items():
                    emulator.resources[key] = kmock.ResourceInfo(
                        kind=kind, singular=kind.lower(), namespaced=True, verbs=ALL_VERBS)
            self._emulator = emulator
            self.port = server.port
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> KubeAPI:
        self._thread.start()
        if not self._ready.wait(timeout=20):
            raise RuntimeError("kmock emulator did not start within 20 s")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    @property
    def kubeconfig(self) -> str:
        # helm-sdkpy takes kubeconfig text only as YAML (JSON is taken for a file path).
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "kmock",
            "clusters": [{"name": "kmock", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
            "users": [{"name": "tester", "user": {"token": "not-checked"}}],
            "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "tester"}}],
        })

    def objects(self) -> list[dict]:
        """A snapshot of every live object the emulator holds, as plain dicts."""
        async def snapshot() -> list[dict]:
            assert self._emulator is not None
            return [json.loads(json.dumps(dict(obj.raw)))
                    for _, obj in self._emulator.objects.items() if not obj.deleted]
        return asyncio.run_coroutine_threadsafe(snapshot(), self._loop).result(timeout=10)


def run_helm_steps(api: KubeAPI, steps: list[dict], timeout: float = 120) -> list[dict]:
    """Run `steps` (see helm_driver.py) in one Helm process against `api`."""
    for step in steps:
        step.setdefault("chart", str(CHART))
    plan = json.dumps({"kubeconfig": api.kubeconfig, "steps": steps})
    env = {**os.environ, "HELM_DRIVER": "memory", "HELM_CACHE_HOME": "/tmp/psjob-helm-cache",
           "HELM_CONFIG_HOME": "/tmp/psjob-helm-config", "HELM_DATA_HOME": "/tmp/psjob-helm-data"}
    proc = subprocess.run([str(HELM_PYTHON), str(DRIVER)], input=plan, capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"helm driver exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


@pytest.fixture(scope="session")
def helm_python() -> pathlib.Path:
    """The .venv-helm interpreter, created by the project's own setup script."""
    subprocess.run([str(ROOT / "scripts" / "setup-helm-venv.sh")], check=True, timeout=600)
    return HELM_PYTHON


@pytest.fixture()
def run_helm(helm_python: pathlib.Path):
    """`run_helm(kube_api, steps)`: run Helm steps in one process; returns their outcomes."""
    return run_helm_steps


@pytest.fixture(scope="session")
def installed_release(helm_python: pathlib.Path):
    """`installed_release(values, release, namespace) -> (objects, notes)`.

    Installs the chart once per distinct set of values into a fresh emulator
    and returns the objects the API server received and the rendered NOTES;
    tests that only read the result share one install.
    """
    cache: dict[str, tuple[list[dict], str]] = {}

    def install(values: dict, release: str, namespace: str) -> tuple[list[dict], str]:
        key = json.dumps([values, release, namespace], sort_keys=True)
        if key not in cache:
            with KubeAPI() as api:
                [outcome] = run_helm_steps(api, [{"action": "install", "release": release,
                                                  "namespace": namespace, "values": values}])
                assert outcome["ok"], outcome["error"]
                cache[key] = (api.objects(), outcome["result"]["notes"])
        return copy.deepcopy(cache[key])

    return install


@pytest.fixture()
def kube_api(helm_python: pathlib.Path) -> Iterator[KubeAPI]:
    with KubeAPI() as api:
        yield api


@pytest.fixture()
def kube_api_without_monitoring_crds(helm_python: pathlib.Path) -> Iterator[KubeAPI]:
    with KubeAPI(with_monitoring_crds=False) as api:
        yield api

