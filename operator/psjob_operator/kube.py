"""The operator's only door to the Kubernetes API.

A thin REST adapter over the official client's `ApiClient` (configuration,
authentication, TLS, token refresh), speaking plain dicts: builders produce
dicts, the status rules read dicts, and there is no model (de)serialisation
to pay for. Every call names a `Resource` constant below; `rbac.py` lists the
permissions those calls need, and a test checks the two agree.

Errors come back as `ApiError` with the HTTP status, classified once here
(`transient`, `invalid`, ...) so callers never parse status codes.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

MERGE_PATCH = "application/merge-patch+json"
# The API server's metadata-only representation of any object (meta.k8s.io/v1).
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None, name: str | None = None,
             subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace is not None:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        if subresource is not None:
            base += f"/{subresource}"
        return base


JOBS = Resource("psjob.dev", "v1alpha1", "parameterserverjobs", "ParameterServerJob")
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
SECRETS = Resource("", "v1", "secrets", "Secret")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
EVENTS = Resource("", "v1", "events", "Event")
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet")
BATCH_JOBS = Resource("batch", "v1", "jobs", "Job")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
# PodGroups of the batch schedulers (gang.py); the CRDs come with those schedulers.
VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
PLUGINS_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
PODGROUP_KINDS = (VOLCANO_PODGROUPS, PLUGINS_PODGROUPS)

# The kinds builders emit; `resource_for` maps a manifest to its endpoint.
CHILD_RESOURCES = (SECRETS, CONFIGMAPS, CLAIMS, NETWORK_POLICIES, SERVICES, STATEFULSETS,
                   BATCH_JOBS, VOLCANO_PODGROUPS, PLUGINS_PODGROUPS)
_BY_KIND = {(r.api_version, r.kind): r for r in CHILD_RESOURCES}


def resource_for(manifest: Mapping[str, Any]) -> Resource:
    return _BY_KIND[(manifest["apiVersion"], manifest["kind"])]


class ApiError(Exception):
    """A failed API call: HTTP status (0: no response), reason and message."""

    def __init__(self, status: int, reason: str, message: str, method: str = "", path: str = ""):
        self.status, self.reason, self.message = status, reason, message
        self.method, self.path = method, path
        super().__init__(f"{method} {path}: {status} {reason}: {message}")

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def invalid(self) -> bool:
        """The server refused the content: retrying the same body cannot help."""
        return self.status in (400, 422)

    @property
    def transient(self) -> bool:
        return self.status == 0 or self.status == 429 or self.status >= 500


class KubeApi:
    """Synchronous calls (the reconciler runs in worker threads).

    `on_write(resource, object)` sees the API's answer to every create and
    patch (the watch cache's overlay of the operator's own writes).
    """

    def __init__(self, api_client: Any = None, timeout: float = 15.0,
                 on_write: Callable[[Resource, dict], None] | None = None):
        self._client = api_client
        self._lock = threading.Lock()
        self._timeout = timeout
        self._on_write = on_write

    def _api_client(self) -> Any:
        # Created lazily: the configuration is loaded by the login handler first.
        with self._lock:
            if self._client is None:
                import kubernetes.client

                config = kubernetes.client.Configuration.get_default_copy()
                self._client = kubernetes.client.ApiClient(config)
            return self._client

    def request(self, method: str, path: str, *, query: Mapping[str, str] | None = None,
                body: Any = None, content_type: str = "application/json",
                accept: str = "application/json") -> Any:
        client = self._api_client()
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        full = path + (f"?{urlencode(query)}" if query else "")
        method_, url, headers, body_, _ = client.param_serialize(
            method=method, resource_path=full, header_params=headers, body=body,
            auth_settings=["BearerToken"])
        try:
            response = client.call_api(method_, url, header_params=headers, body=body_,
                                       _request_timeout=self._timeout)
            data = response.read()
        except Exception as exc:  # connection refused, timeouts, TLS: no HTTP status
            raise ApiError(0, type(exc).__name__, str(exc), method, path) from exc
        payload = json.loads(data) if data else {}
        if response.status >= 400:
            raise ApiError(response.status, str(payload.get("reason", response.reason)),
                           str(payload.get("message", data[:300])), method, path)
        return payload

    def get(self, resource: Resource, namespace: str, name: str) -> dict | None:
        try:
            found: dict | None = self.request("GET", resource.path(namespace, name))
        except ApiError as exc:
            if exc.not_found:
                return None
            raise
        return found

    def get_metadata(self, resource: Resource, namespace: str, name: str) -> dict | None:
        """An object's metadata only (a PartialObjectMetadata): whose it is, not what it
        holds — a Secret's data never reaches the operator. None if it does not exist."""
        try:
            answer = self.request("GET", resource.path(namespace, name), accept=METADATA_ONLY)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise
        return {"apiVersion": resource.api_version, "kind": resource.kind,
                "metadata": answer.get("metadata") or {}}

    def create(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> dict:
        return self._written(resource, self.request("POST", resource.path(namespace),
                                                    body=dict(body)))

    def patch(self, resource: Resource, namespace: str, name: str, patch: Mapping[str, Any],
              subresource: str | None = None) -> dict:
        return self._written(resource, self.request(
            "PATCH", resource.path(namespace, name, subresource), body=dict(patch),
            content_type=MERGE_PATCH))

    def _written(self, resource: Resource, answer: dict) -> dict:
        if self._on_write is not None and isinstance(answer, dict):
            self._on_write(resource, answer)
        return answer

    def delete(self, resource: Resource, namespace: str, name: str,
               propagation: str = "Background") -> bool:
        """Delete; False if it was already gone. Propagation: Background or Foreground."""
        try:
            self.request("DELETE", resource.path(namespace, name),
                         body={"apiVersion": "v1", "kind": "DeleteOptions",
                               "propagationPolicy": propagation})
            return True
        except ApiError as exc:
            if exc.not_found:
                return False
            raise


def merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 JSON merge patch that turns `old` into `new`."""
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            sub = merge_diff(before, value)
            if sub:
                patch[key] = sub
        elif key not in old or before != value:
            patch[key] = value
    return patch
