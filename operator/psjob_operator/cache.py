"""The watch cache: what the operator's watch streams show, one job at a time.

Why: a reconcile pass used to GET each of a job's children (StatefulSets,
Services, ConfigMap, NetworkPolicy, worker Job, claim) and LIST its pods —
about ten requests per job per pass, i.e. some 80 requests/s for 500 jobs at
the default 60 s resync, before any event. kopf already keeps one watch stream
per kind the operator serves; each child kind's stream carries the
server-side labelSelector `psjob.dev/job-name` (`handlers.configure`), so the
API server only sends objects of psjob jobs. The kopf *indexes* registered
here keep the newest body of every object those streams delivered, keyed by
(namespace, job name), and drop it when the object is deleted. kopf holds
back every other handler until each indexed kind has finished its initial
listing, so the first pass after an operator (re)start never sees a
half-filled cache.

Lifecycle of a pass: the controller takes a `Snapshot` of one job on kopf's
event loop (plain dict reads on the thread that writes the indexes: no locks)
and hands it to the reconcile thread. A pass that writes (create, patch,
status) records the API's answer in the `Overlay`; until the watch stream
delivers that resourceVersion or a newer one, the overlay's copy wins, so the
next pass does not act on its own stale view (no repeated creates, status
writes or Events). The only reads left on the API are the user's
`checkpoint.existingClaim` (not labelled by us) and the applier's fallback
for a child kind the cache does not hold (none today).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import kopf

from psjob.foundation import jobspec
from psjob_operator import naming
from psjob_operator.kube import (
    BATCH_JOBS,
    CLAIMS,
    CONFIGMAPS,
    JOBS,
    NETWORK_POLICIES,
    PODS,
    SERVICES,
    STATEFULSETS,
    Resource,
)

# Every kind a pass reads. The children are watched with a server-side labelSelector;
# with a gang scheduler its PodGroups too (`cached_children`).
CACHED_CHILDREN = (PODS, STATEFULSETS, BATCH_JOBS, SERVICES, CONFIGMAPS, NETWORK_POLICIES,
                   CLAIMS)
CHILD_SELECTOR = naming.LABEL_JOB  # "the label is present": only psjob children
Key = tuple[str, str]  # (namespace, job name)


def index_id(resource: Resource) -> str:
    # Also the keyword under which kopf passes the index to handlers: an identifier.
    return f"cache_{resource.plural}"


def cached_children(podgroups: Resource | None) -> tuple[Resource, ...]:
    return CACHED_CHILDREN + ((podgroups,) if podgroups is not None else ())


def register_indexes(registry: kopf.OperatorRegistry, children: tuple[Resource, ...]) -> None:
    """One kopf index per cached kind: (namespace, job name) → bodies."""
    @kopf.index(jobspec.API_GROUP, jobspec.API_VERSION, jobspec.PLURAL, registry=registry,
                id=index_id(JOBS))
    def index_job(namespace: str, name: str, body: kopf.Body, **_: Any) -> dict:
        return {(namespace, name): dict(body)}

    for resource in children:
        @kopf.index(resource.group, resource.version, resource.plural, registry=registry,
                    labels={naming.LABEL_JOB: kopf.PRESENT}, id=index_id(resource))
        def index_child(namespace: str, labels: Mapping[str, str], body: kopf.Body,
                        **_: Any) -> dict:
            return {(namespace, labels[naming.LABEL_JOB]): dict(body)}


@dataclass(frozen=True)
class Snapshot:
    """One job and everything labelled with its name, as the watches last showed them."""
    job: dict | None = None
    children: Mapping[tuple[str, str], dict] = field(default_factory=dict)  # (kind, name)
    pods: tuple[dict, ...] = ()

    def child(self, resource: Resource, name: str) -> dict | None:
        return self.children.get((resource.kind, name))


class WatchCache:
    """Reads kopf's indexes. Call `snapshot` on kopf's event loop only."""

    def __init__(self, children: tuple[Resource, ...] = CACHED_CHILDREN) -> None:
        self.children = children
        self._indices: Mapping[str, Any] = {}

    def bind(self, indices: Mapping[str, Any]) -> None:
        """Take kopf's indexes (a start-up handler's keyword arguments, by index id)."""
        self._indices = {index_id(r): indices[index_id(r)] for r in (JOBS, *self.children)}

    def snapshot(self, namespace: str, name: str) -> Snapshot:
        key = (namespace, name)
        jobs = list(self._values(JOBS, key))
        children: dict[tuple[str, str], dict] = {}
        for resource in self.children:
            if resource is PODS:
                continue
            for obj in self._values(resource, key):
                children[(resource.kind, obj["metadata"]["name"])] = obj
        return Snapshot(jobs[0] if jobs else None, children, tuple(self._values(PODS, key)))

    def _values(self, resource: Resource, key: Key) -> list[dict]:
        index = self._indices[index_id(resource)]
        return list(index[key]) if key in index else []


def _version(obj: Mapping[str, Any] | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or -1)
    except ValueError:
        return -1  # not an etcd revision: trust the watch stream


class Overlay:
    """The operator's own writes, newer than the watch streams have shown yet.

    Like client-go's MutationCache, it compares resourceVersions as integers
    (etcd revisions); an object whose version cannot be read is never
    overlaid. An entry lives until the watch shows that version or a newer
    one, or at most `max_age` seconds (an object created and deleted again
    between two passes). Thread-safe: written by reconcile threads.
    """

    def __init__(self, max_age: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self._written: dict[Key, dict[tuple[str, str], tuple[float, dict]]] = {}
        self._lock = threading.Lock()
        self._max_age = max_age
        self._clock = clock

    def record(self, resource: Resource, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if _version(obj) < 0 or not meta.get("name") or not meta.get("namespace"):
            return
        job = meta["name"] if resource is JOBS else (meta.get("labels") or {}).get(
            naming.LABEL_JOB)
        if not job:
            return
        with self._lock:
            self._written.setdefault((meta["namespace"], job), {})[
                (resource.kind, meta["name"])] = (self._clock(), dict(obj))

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._written.pop((namespace, name), None)

    def merge(self, namespace: str, name: str, seen: Snapshot) -> Snapshot:
        """`seen` with every own write the watches have not caught up with yet."""
        now = self._clock()
        with self._lock:
            written = self._written.get((namespace, name))
            if not written:
                return seen
            job, children = seen.job, dict(seen.children)
            for key, (when, obj) in list(written.items()):
                is_job = key == (JOBS.kind, name)
                current = job if is_job else children.get(key)
                if (current is not None and _version(current) >= _version(obj)) \
                        or now - when > self._max_age or (is_job and job is None):
                    del written[key]  # caught up, too old, or the job is gone
                elif is_job:
                    job = obj
                else:
                    children[key] = obj
            if not written:
                del self._written[(namespace, name)]
        return replace(seen, job=job, children=children)
