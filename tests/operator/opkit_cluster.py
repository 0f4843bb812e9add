"""A Kubernetes API for the operator tests: kmock's emulator, patched up.

`KubernetesEmulator` (kmock 0.8) stores objects and serves list/watch/get/
create/patch/delete over real HTTP. This subclass adds what a real API server
does and the operator relies on, and nothing more:

- metadata.uid, creationTimestamp, resourceVersion and generation (bumped
  when a PATCH changes spec);
- status subresources: PATCH .../status changes only status, a PATCH of the
  main resource ignores status;
- labelSelector on list and watch (equality terms only: `k=v`, `k`);
- `kind`/`apiVersion` on list responses and `groupVersion: v1` in core
  discovery (kmock answers "/v1");
- the garbage collector: deleting an object deletes the objects whose
  ownerReferences point at its uid (recursively, synchronously);
- CustomResourceDefinitions: creating one serves its resource (discovery,
  list, watch, CRUD, status subresource) as the apiextensions server would
  once the CRD is Established — so a test installs a scheduler's CRDs with
  `kubectl apply`.

`ClusterThread` runs it on 127.0.0.1 in a background thread with its own event
loop; `TestClient` talks to it with urllib, as an independent client.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import itertools
import json
import pathlib
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import kmock
from kmock._internal import enums, loading

from psjob.launcher.local import free_ports

T = TypeVar("T")
NAMESPACE = "psjob-test"
CORE_GROUPS = ("v1", "apps/v1", "batch/v1", "networking.k8s.io/v1", "apiextensions.k8s.io/v1")
JOBS_RESOURCE = "psjob.dev/v1alpha1/parameterserverjobs"


def _builtin_resources() -> dict:
    path = pathlib.Path(kmock.__file__).parent / "_internal" / "resources.json.gz"
    documents = json.loads(gzip.decompress(path.read_bytes()))
    found = {}
    for doc in documents:
        if doc["groupVersion"] in CORE_GROUPS:
            found.update(loading.parse_group_version(doc))
    return found


def _selector_matches(selector: str, labels: dict[str, str]) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def free_port() -> int:
    """A free port outside the ephemeral range, where no other test's bind(0) lands."""
    return free_ports(1)[0]


def wait_for(probe: Callable[[], T], timeout: float = 30.0, what: str = "condition") -> T:
    """Poll `probe` until it returns something truthy; fail with the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


class ClusterEmulator(kmock.KubernetesEmulator):
    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._versions = itertools.count(1)
        self._gone_uids: set[str] = set()  # uids of deleted objects (for the GC emulation)
        self.log: list[tuple[str, str, dict, str]] = []
        self.accepts: list[str] = []  # the Accept header of each request in `log`
        for resource, info in _builtin_resources().items():
            self.resources[resource] = info
        self.resources[JOBS_RESOURCE] = kmock.ResourceInfo(
            kind="ParameterServerJob", singular="parameterserverjob", namespaced=True,
            shortnames={"psjob", "psj"}, subresources={"status"},
            verbs={"get", "list", "watch", "create", "patch", "delete", "update"})

    def _key(self, request: Any) -> tuple:
        return (request.resource, request.namespace, request.name)

    def _live(self, key: tuple) -> dict | None:
        if key in self.objects and not self.objects[key].deleted:
            return self.objects[key].raw
        return None

    async def _handle(self, request: Any):
        # kmock dispatches a request by scanning every request it has served (quadratic
        # over a test module); keep only the recent ones it may still be dispatching, and
        # our own compact log for the RBAC test.
        if len(self._requests) > 64:
            del self._requests[:-32]
        self.log.append((str(request.method.value), request.url.path, dict(request.params or {}),
                         (request.headers or {}).get("User-Agent", "")))
        self.accepts.append((request.headers or {}).get("Accept", ""))
        gc_uid = None
        if request.resource is not None and isinstance(request.data, dict):
            now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if request.action == enums.action.CREATE:
                meta = request.data.setdefault("metadata", {})
                if not meta.get("name") and meta.get("generateName"):
                    meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
                if request.namespace:
                    meta.setdefault("namespace", request.namespace)
                meta.update(uid=str(uuid.uuid4()), creationTimestamp=now, generation=1,
                            resourceVersion=str(next(self._versions)))
            elif request.action == enums.action.UPDATE:
                current = self._live(self._key(request)) or {}
                if request.subresource == "status":
                    patch = {"status": request.data.get("status")}
                else:
                    patch = {k: v for k, v in request.data.items() if k != "status"}
                    if "spec" in patch and _merged(current.get("spec"), patch["spec"]) != \
                            current.get("spec"):
                        patch.setdefault("metadata", {})["generation"] = int(
                            (current.get("metadata") or {}).get("generation", 1)) + 1
                patch.setdefault("metadata", {})["resourceVersion"] = str(next(self._versions))
                request.data.clear()
                request.data.update(patch)
        if request.resource is not None and request.action == enums.action.DELETE \
                and request.name is not None:
            live = self._live(self._key(request))
            gc_uid = (live or {}).get("metadata", {}).get("uid")
        response = await super()._handle(request)
        if request.action == enums.action.CREATE and isinstance(request.data, dict) \
                and request.data.get("kind") == "CustomResourceDefinition":
            self._establish(request.data)
        if gc_uid:
            self._gone_uids.add(gc_uid)
            await self._collect_garbage(gc_uid)
        elif request.resource is not None and request.action == enums.action.CREATE \
                and isinstance(request.data, dict):
            # Kubernetes' GC controller also removes a dependent created after its owner
            # was deleted (a reconcile that raced the deletion); do the same at once.
            refs = (request.data.get("metadata") or {}).get("ownerReferences") or []
            if any(ref.get("uid") in self._gone_uids for ref in refs):
                await self._delete_orphan((request.data.get("metadata") or {}).get("uid"))
        return response

    def _establish(self, crd: dict) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            key = kmock.resource(spec["group"], version["name"], names["plural"])
            self.resources[key] = kmock.ResourceInfo(
                kind=names["kind"], singular=names.get("singular", names["kind"].lower()),
                namespaced=spec.get("scope") == "Namespaced",
                shortnames=set(names.get("shortNames") or ()),
                subresources=set((version.get("subresources") or {}).keys()),
                verbs={"get", "list", "watch", "create", "patch", "delete", "update"})

    async def _delete_orphan(self, uid) -> None:
        async with self._lock:
            for key, obj in list(self.objects.items()):
                if not obj.deleted and obj.raw.get("metadata", {}).get("uid") == uid:
                    raw = obj.raw
                    obj.delete()
                    await self._buses[key[0]].put({"type": "DELETED", "object": raw})

    async def _collect_garbage(self, owner_uid: str) -> None:
        self._gone_uids.add(owner_uid)
        doomed = []
        async with self._lock:
            for key, obj in list(self.objects.items()):
                if obj.deleted:
                    continue
                refs = obj.raw.get("metadata", {}).get("ownerReferences") or []
                if any(ref.get("uid") == owner_uid for ref in refs):
                    raw = obj.raw
                    obj.delete()
                    await self._buses[key[0]].put({"type": "DELETED", "object": raw})
                    doomed.append(raw["metadata"].get("uid"))
        for uid in doomed:
            if uid:
                await self._collect_garbage(uid)

    async def _serve_list(self, request: Any):
        result = await super()._serve_list(request)
        selector = (request.params or {}).get("labelSelector")
        if selector:
            result["items"] = [i for i in result["items"] if _selector_matches(
                selector, (i.get("metadata") or {}).get("labels") or {})]
        info = self.resources[request.resource]
        result["kind"] = f"{info.kind}List"
        group = request.resource.group
        result["apiVersion"] = f"{group}/{request.resource.version}" if group else \
            request.resource.version
        return result

    async def _serve_watch(self, request: Any):
        selector = (request.params or {}).get("labelSelector")
        async for event in super()._serve_watch(request):
            if selector and isinstance(event, dict):
                labels = (event.get("object", {}).get("metadata") or {}).get("labels") or {}
                if not _selector_matches(selector, labels):
                    continue
            yield event

    async def _serve_version(self, request: Any):
        result = await super()._serve_version(request)
        result["groupVersion"] = result["groupVersion"].lstrip("/")
        return result


def _merged(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = _merged(base.get(key), value)
        return out
    return patch


class ClusterThread:
    """The emulator served on 127.0.0.1:<random port> from a background thread."""

    def __init__(self):
        self.emulator: ClusterEmulator | None = None
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="kmock", daemon=True)

    def __enter__(self) -> ClusterThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Kubernetes emulator did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        # Bounded: aiohttp may linger on watch connections of a killed operator; the
        # thread is a daemon and dies with the test process anyway.
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(1)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with ClusterEmulator() as emulator, kmock.Server(emulator) as server:
            self.emulator = emulator
            self.url = str(server.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()

    def requests(self) -> list[tuple[str, str, dict, str]]:
        """(method, path, params, user agent) of every request served so far."""
        assert self.emulator is not None
        return list(self.emulator.log)

    def requests_with_accept(self) -> list[tuple[str, str, dict, str, str]]:
        """`requests()` with each request's Accept header last."""
        assert self.emulator is not None
        return [(*entry, accept) for entry, accept in zip(list(self.emulator.log),
                                                          list(self.emulator.accepts))]

    def write_kubeconfig(self, path: pathlib.Path) -> pathlib.Path:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "test-token"}}],
            "contexts": [{"name": "emulator", "context": {"cluster": "emulator",
                                                          "user": "tester",
                                                          "namespace": NAMESPACE}}],
        }
        path.write_text(json.dumps(config))
        return path


class TestClient:
    """Minimal JSON-over-HTTP client for the tests (independent of the operator)."""
    __test__ = False  # not a test class

    def __init__(self, url: str):
        self.url = url

    def call(self, method: str, path: str, body: Any = None, params: dict | None = None,
             content_type: str = "application/json") -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path + query, data=data, method=method,
                                     headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        return json.loads(raw) if raw else None

    def get(self, path: str) -> dict | None:
        return self.call("GET", path)

    def list(self, path: str, selector: str | None = None) -> list[dict]:
        result = self.call("GET", path, params={"labelSelector": selector} if selector else None)
        return list((result or {}).get("items") or [])

    def create(self, path: str, body: dict) -> dict:
        return self.call("POST", path, body)

    def patch(self, path: str, body: dict) -> dict:
        return self.call("PATCH", path, body, content_type="application/merge-patch+json")

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path)
