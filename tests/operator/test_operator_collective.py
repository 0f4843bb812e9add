"""A collective job (spec.mode: collective) through the real operator against the emulator:
no pservers; the trainers are an Indexed Job behind a headless Service whose DNS names are
their ring endpoints; a survivor of a lost peer (exit roles.PEER_LOST_EXIT) is recreated
without counting against backoffLimit, the trainer that died counts."""
from __future__ import annotations

from opkit_cluster import NAMESPACE, wait_for
from opkit_jobs import child, children, condition, job_manifest, phase, status, submit

from psjob.foundation import roles


def collective_manifest(name: str, workers: int = 3, **spec):
    manifest = job_manifest(name, workers=workers, mode="collective",
                            command=["python", "/app/train.py"], args=[], **spec)
    del manifest["spec"]["pserver"]
    return manifest


def test_a_collective_job_is_an_indexed_job_behind_a_headless_service_without_pservers(operator, plane):
    submit(plane, collective_manifest("ring"))
    expected = {("Secret", "ring-auth"), ("ConfigMap", "ring-config"),
                ("PersistentVolumeClaim", "ring-checkpoint"), ("NetworkPolicy", "ring-network"),
                ("Service", "ring-worker"), ("Job", "ring-worker")}
    wait_for(lambda: children(plane, "ring") == expected, what="the collective job's children")
    service = child(plane, "services", "ring-worker")["spec"]
    assert service["clusterIP"] == "None" and service["publishNotReadyAddresses"] is True
    assert {"name": "ring", "port": roles.DEFAULT_TRAINER_PORT, "targetPort": "ring",
            "protocol": "TCP"} in service["ports"]
    workers = child(plane, "jobs", "ring-worker")["spec"]
    pod = workers["template"]["spec"]
    assert workers["completionMode"] == "Indexed" and workers["completions"] == 3
    assert pod["subdomain"] == "ring-worker"  # pod i: ring-worker-i.ring-worker.<ns>.svc
    container = pod["containers"][0]
    assert container["command"] == ["python", "/app/train.py"]
    assert {"name": "ring", "containerPort": roles.DEFAULT_TRAINER_PORT, "protocol": "TCP"} in container["ports"]
    env = [(e["name"], e.get("value"), e.get("valueFrom")) for e in container["env"]]
    names = [n for n, _, _ in env]
    values = {n: v for n, v, _ in env}
    ring = [f"ring-worker-{i}.ring-worker.{NAMESPACE}.svc:{roles.DEFAULT_TRAINER_PORT}" for i in range(3)]
    assert values["PADDLE_TRAINER_ENDPOINTS"] == ",".join(ring)
    assert values["PADDLE_TRAINERS_NUM"] == "3" and values["PSJOB_MODE"] == "collective"
    # Kubernetes expands $(PADDLE_TRAINER_ID), the completion index, defined before it.
    assert values["PADDLE_CURRENT_ENDPOINT"] == \
        f"ring-worker-$(PADDLE_TRAINER_ID).ring-worker.{NAMESPACE}.svc:{roles.DEFAULT_TRAINER_PORT}"
    assert names.index("PADDLE_TRAINER_ID") < names.index("PADDLE_CURRENT_ENDPOINT")
    assert not any(n.startswith("PADDLE_PSERVER") for n in names)
    ignored = [r for r in workers["podFailurePolicy"]["rules"] if "onExitCodes" in r]
    assert roles.PEER_LOST_EXIT in ignored[0]["onExitCodes"]["values"]
    wait_for(lambda: phase(plane, "ring") == "Created", what="Created")
    assert condition(plane, "ring", "Running")["message"] == "waiting for pods: 0/3 workers running"


def test_a_lost_trainer_restarts_the_ring_counting_only_itself_and_the_job_succeeds(operator, plane):
    submit(plane, collective_manifest("lose", workers=3, runPolicy={"backoffLimit": 1}))
    wait_for(lambda: phase(plane, "lose") == "Created", what="Created")
    plane.sync("lose")
    plane.run("lose")
    wait_for(lambda: phase(plane, "lose") == "Running", what="Running")
    assert condition(plane, "lose", "Running")["message"] == "3/3 workers running"
    assert status(plane, "lose")["pserversReady"] == "0/0"
    pods = sorted(plane.pods("lose"))
    plane.fail(pods[1], exit_code=137)  # trainer 1 was killed ...
    for survivor in (pods[0], pods[2]):  # ... and the others' all-reduce failed
        plane.fail(survivor, exit_code=roles.PEER_LOST_EXIT)
    plane.sync("lose")  # the Job controller counts trainer 1 only and recreates all three
    wait_for(lambda: phase(plane, "lose") == "Restarting", what="Restarting")
    assert status(plane, "lose")["replicaStatuses"]["worker"]["failed"] == 1
    plane.run("lose")
    wait_for(lambda: phase(plane, "lose") == "Running", what="Running again: the ring formed anew")
    for name, pod in plane.pods("lose").items():
        if pod["status"].get("phase") == "Running":
            plane.succeed(name)
    plane.sync("lose")
    wait_for(lambda: phase(plane, "lose") == "Succeeded", what="Succeeded")
    assert condition(plane, "lose", "Succeeded")["message"] == "3/3 workers completed"


def test_a_collective_job_with_pservers_is_refused_naming_the_field(operator, plane):
    manifest = collective_manifest("both")
    manifest["spec"]["pserver"] = {"replicas": 1}
    submit(plane, manifest)
    wait_for(lambda: phase(plane, "both") == "Failed", what="Failed")
    failed = condition(plane, "both", "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"].startswith("spec.pserver: a collective job has no pservers")
    assert not children(plane, "both")
