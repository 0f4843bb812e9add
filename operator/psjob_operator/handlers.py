"""kopf handlers: watch, poke, nothing else.

kopf gives us the watch streams (with their re-listing after an operator
restart), login, and the liveness endpoint. Every handler here is a one-liner
that tells the `Controller` which job to look at; the decisions are made by
the reconciler, level-based, from what the cluster shows. There are no
create/update/delete handlers and no timers on purpose: those make kopf add a
finalizer and keep per-object progress, and a finalizer left behind by a
stopped operator blocks `kubectl delete` — a classic complaint we avoid.

Every child watch carries the server-side labelSelector `psjob.dev/job-name`
(kopf's `settings.watching.label_selectors`): the API server sends only
objects of psjob jobs, not every pod of a shared namespace or cluster. The
same streams feed the watch cache (`cache.py`) the reconciler reads.

The registry is built per controller (no module-level state), so tests and
`__main__` get independent operators.
"""
from __future__ import annotations

from typing import Any

import kopf

from psjob.foundation import jobspec
from psjob_operator import cache, naming
from psjob_operator.controller import Controller
from psjob_operator.settings import OperatorSettings

# Every child kind is watched (and cached); each event pokes the child's job. With a
# gang scheduler, its PodGroups too (`controller.cache.children`).
WATCHED_CHILDREN = tuple((r.group, r.version, r.plural) for r in cache.CACHED_CHILDREN)


def build_registry(controller: Controller, settings: OperatorSettings) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    delay = settings.reconcile.child_event_delay_seconds
    children = tuple((r.group, r.version, r.plural) for r in controller.cache.children)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **indices: Any) -> None:
        # Least privilege: watch only the resources below in the given namespaces;
        # no cluster-wide CRD/namespace scanning, no kopf-authored events.
        settings.scanning.disabled = True
        settings.posting.enabled = False
        settings.watching.server_timeout = 300  # re-open watches every 5 minutes
        settings.watching.label_selectors[
            lambda r: (r.group, r.version, r.plural) in children] = cache.CHILD_SELECTOR
        controller.cache.bind(indices)

    cache.register_indexes(registry, controller.cache.children)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> Any:
        # In-cluster service account first, else the kubeconfig ($KUBECONFIG).
        # This also configures the kubernetes client the reconciler uses.
        return kopf.login_via_client(**kwargs)

    @kopf.on.event(jobspec.API_GROUP, jobspec.API_VERSION, jobspec.PLURAL, registry=registry)
    async def job_event(type: str | None, name: str, namespace: str, **_: Any) -> None:
        if type == "DELETED":
            controller.forget(namespace, name)
        else:
            controller.poke(namespace, name)

    for group, version, plural in children:
        @kopf.on.event(group, version, plural, labels={naming.LABEL_JOB: kopf.PRESENT},
                       registry=registry, id=f"child-{plural}")
        async def child_event(labels: Any, namespace: str, **_: Any) -> None:
            controller.poke(namespace, labels[naming.LABEL_JOB], delay)

    @kopf.on.probe(id="reconciler", registry=registry)
    def reconciler_alive(**_: Any) -> dict[str, Any]:
        if not controller.healthy():
            raise kopf.PermanentError("the reconcile workers have stopped")
        return controller.stats()

    return registry
