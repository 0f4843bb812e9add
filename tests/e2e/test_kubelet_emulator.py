"""The kubelet emulator on its own: hand-written pod specs, no operator.

Checks that tests/e2e/kubelet.py does what its docstring says for any pod spec
(so that what the operator tests conclude is about the operator's specs, not the
harness): init containers, volumes, the downward API, envFrom, security context,
headless-Service names (and no other: no cluster DNS), httpGet/exec probes, restarts,
Job failure policies.
"""
from __future__ import annotations

import json

import pytest
from kubelet import missing_requirements
from opkit_cluster import NAMESPACE, wait_for

pytestmark = [pytest.mark.skipif(bool(missing_requirements()), reason=missing_requirements()),
              pytest.mark.timeout(120)]

NS = NAMESPACE
CORE, APPS, BATCH = (f"/api/v1/namespaces/{NS}", f"/apis/apps/v1/namespaces/{NS}",
                     f"/apis/batch/v1/namespaces/{NS}")

# What the checking container reports, as JSON on its output volume.
REPORT = r"""
import json, os, socket, stat, time, urllib.request
out = {"env": {k: os.environ.get(k) for k in ("POD_NAME", "POD_IP", "JOB_COMPLETION_INDEX",
                                                "MEM_MI", "CPU", "CFG_color", "TOKEN", "GREETING")},
       "hostname": socket.gethostname(), "uid": os.getuid(), "groups": os.getgroups(),
       "cwd": os.getcwd(), "init": open("/shared/init.txt").read().strip(),
       "secret": open("/creds/key.txt").read(),
       "secret_mode": oct(stat.S_IMODE(os.stat("/creds/key.txt").st_mode)),
       "web": urllib.request.urlopen("http://web-0.web.%s.svc.cluster.local:8080/page.txt"
                                     % os.environ["NS"], timeout=10).read().decode()}
started = time.monotonic()  # no cluster DNS: a name not in /etc/hosts is refused at once
try:
    socket.getaddrinfo("absent.%s.svc.cluster.local" % os.environ["NS"], 80)
    out["absent_name_s"] = "resolved"
except socket.gaierror:
    out["absent_name_s"] = time.monotonic() - started
try:
    open("/not-writable", "w")
    out["root_writable"] = True
except OSError:
    out["root_writable"] = False
with open("/out/report-%s.json" % os.environ["JOB_COMPLETION_INDEX"], "w") as f:
    json.dump(out, f)
"""


def settle(kubelet, done, what: str, timeout: float = 60) -> None:
    try:
        wait_for(done, timeout=timeout, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{kubelet.logs()}") from None


KINDS = {"secrets": ("v1", "Secret"), "configmaps": ("v1", "ConfigMap"),
         "persistentvolumeclaims": ("v1", "PersistentVolumeClaim"), "services": ("v1", "Service"),
         "statefulsets": ("apps/v1", "StatefulSet"), "jobs": ("batch/v1", "Job")}


def create(api, path: str, body: dict) -> None:
    body["apiVersion"], body["kind"] = KINDS[path.rsplit("/", 1)[1]]
    body.setdefault("metadata", {})["namespace"] = NS
    api.create(path, body)


def job_conditions(api, name: str) -> dict[str, dict]:
    status = (api.get(f"{BATCH}/jobs/{name}") or {}).get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or [] if c["status"] == "True"}


def pod_status(api, name: str) -> dict:
    return (api.get(f"{CORE}/pods/{name}") or {}).get("status") or {}


def test_a_hand_written_statefulset_and_indexed_job_run_as_their_specs_say(api, kubelet):
    create(api, f"{CORE}/secrets", {"metadata": {"name": "creds"},
                                    "stringData": {"key": "s3cret", "token": "t0k"}})
    create(api, f"{CORE}/configmaps", {"metadata": {"name": "cfg"}, "data": {"color": "blue"}})
    create(api, f"{CORE}/persistentvolumeclaims", {
        "metadata": {"name": "out"}, "spec": {"accessModes": ["ReadWriteMany"],
                                              "resources": {"requests": {"storage": "1Gi"}}}})
    create(api, f"{CORE}/services", {"metadata": {"name": "web"}, "spec": {
        "clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 8080}]}})
    create(api, f"{APPS}/statefulsets", {"metadata": {"name": "web"}, "spec": {
        "serviceName": "web", "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "volumes": [{"name": "site", "emptyDir": {}}],
            "initContainers": [{"name": "page", "command": ["sh", "-c",
                                                            "echo hello > /site/page.txt"],
                                "volumeMounts": [{"name": "site", "mountPath": "/site"}]}],
            "containers": [{
                "name": "web", "command": ["python3", "-m", "http.server", "8080"],
                "workingDir": "/site", "ports": [{"name": "http", "containerPort": 8080}],
                "volumeMounts": [{"name": "site", "mountPath": "/site"}],
                "readinessProbe": {"httpGet": {"path": "/page.txt", "port": "http"},
                                   "periodSeconds": 1},
                # Fails once the file is gone: the container is killed and restarted.
                "livenessProbe": {"exec": {"command": ["test", "!", "-e", "/site/die"]},
                                  "periodSeconds": 1, "failureThreshold": 1}}]}}}})
    # The Job's pods read a page from web-0 once: they start once it serves (its readiness
    # probe passed), not in a race with its server's start.
    settle(kubelet, lambda: any(pod == "web-0" and kind == "readiness" and ok
                                for pod, kind, ok, _ in kubelet.probes), "web-0 readiness probe passed")
    create(api, f"{BATCH}/jobs", {"metadata": {"name": "check"}, "spec": {
        "completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 0,
        "template": {"metadata": {"labels": {"app": "check"}}, "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsUser": 1234, "runAsGroup": 1234, "fsGroup": 4321,
                                "runAsNonRoot": True},
            "volumes": [{"name": "shared", "emptyDir": {}},
                        {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o440,
                                                     "items": [{"key": "key", "path": "key.txt"}]}},
                        {"name": "out", "persistentVolumeClaim": {"claimName": "out"}}],
            "initContainers": [{"name": "prepare", "command": ["sh", "-c",
                                                               "echo ready > /shared/init.txt"],
                                "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}],
            "containers": [{
                "name": "main", "command": ["python3", "-c", REPORT], "workingDir": "/shared",
                "resources": {"limits": {"memory": "256Mi", "cpu": "1500m"}},
                "securityContext": {"readOnlyRootFilesystem": True,
                                    "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
                "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
                "env": [
                    {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {
                        "resource": "limits.memory", "divisor": "1Mi"}}},
                    {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds",
                                                                     "key": "token"}}},
                    {"name": "GREETING", "value": "hi $(CFG_color) $$(CFG_color)"}],
                "volumeMounts": [{"name": "shared", "mountPath": "/shared"},
                                 {"name": "creds", "mountPath": "/creds", "readOnly": True},
                                 {"name": "out", "mountPath": "/out"}]}]}}}})

    settle(kubelet, lambda: "Complete" in job_conditions(api, "check"), "job check Complete")
    reports = [json.loads((kubelet.claims / "out" / f"report-{i}.json").read_text())
               for i in range(2)]
    for i, report in enumerate(reports):
        env = report["env"]
        assert env["JOB_COMPLETION_INDEX"] == str(i) and env["POD_NAME"].startswith(f"check-{i}-")
        assert env["POD_IP"].startswith("10.244.0.") and env["CFG_color"] == "blue"
        assert (env["MEM_MI"], env["CPU"], env["TOKEN"]) == ("256", "2", "t0k")
        assert env["GREETING"] == "hi blue $(CFG_color)"
        assert report["hostname"] == f"check-{i}" and report["uid"] == 1234
        assert 4321 in report["groups"] and report["cwd"] == "/shared"
        assert report["init"] == "ready" and report["secret"] == "s3cret"
        assert report["secret_mode"] == "0o440" and report["root_writable"] is False
        assert report["web"] == "hello\n"
        # Not this machine's nameserver, which the pod network cannot reach (5 s a try).
        assert report["absent_name_s"] != "resolved" and report["absent_name_s"] < 2, report
    assert reports[0]["env"]["POD_IP"] != reports[1]["env"]["POD_IP"]

    # The liveness probe fails once /site/die exists: killed, restarted in the same pod.
    (kubelet.worker("web-0").sandbox.volumes["site"] / "die").touch()
    settle(kubelet, lambda: pod_status(api, "web-0")["containerStatuses"][0]["restartCount"] >= 1,
           "web-0 restarted by its liveness probe")


def test_a_job_failure_policy_and_backoff_limit_end_the_job_failed(api, kubelet):
    def failing(name: str, code: int, policy: dict | None) -> None:
        spec = {"completionMode": "Indexed", "completions": 1, "parallelism": 1,
                "backoffLimit": 1, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "command": ["sh", "-c", f"exit {code}"]}]}}}
        if policy:
            spec["podFailurePolicy"] = policy
        create(api, f"{BATCH}/jobs", {"metadata": {"name": name}, "spec": spec})

    failing("fatal", 3, {"rules": [{"action": "FailJob",
                                    "onExitCodes": {"operator": "In", "values": [3]}}]})
    failing("flaky", 1, None)
    settle(kubelet, lambda: "Failed" in job_conditions(api, "fatal") and
           "Failed" in job_conditions(api, "flaky"), "both jobs Failed")
    assert job_conditions(api, "fatal")["Failed"]["reason"] == "PodFailurePolicy"
    assert job_conditions(api, "flaky")["Failed"]["reason"] == "BackoffLimitExceeded"
    assert api.get(f"{BATCH}/jobs/fatal")["status"]["failed"] == 1  # no retry after FailJob
    assert api.get(f"{BATCH}/jobs/flaky")["status"]["failed"] == 2  # backoffLimit 1: 2 tries


def test_a_statefulset_pod_lost_with_its_node_is_re_created_once_force_deleted(api, kubelet):
    create(api, f"{CORE}/services", {"metadata": {"name": "db"}, "spec": {
        "clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}})
    create(api, f"{APPS}/statefulsets", {"metadata": {"name": "db"}, "spec": {
        "serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{
            "name": "db", "command": ["sh", "-c", "echo up $(hostname); exec sleep 600"]}]}}}})
    ready = lambda: any(c["type"] == "Ready" and c["status"] == "True"
                        for c in pod_status(api, "db-0").get("conditions") or [])
    settle(kubelet, ready, "db-0 Ready")
    before = api.get(f"{CORE}/pods/db-0")
    process = kubelet.worker("db-0").container().proc

    kubelet.lose_pod("db-0")
    assert process.wait(10) == -9  # SIGKILL, no grace period
    # Nothing reports on a lost node's pod: it stays as it was, Running, not restarted.
    assert api.get(f"{CORE}/pods/db-0")["status"] == before["status"]
    kubelet.force_delete("db-0")
    settle(kubelet, lambda: (api.get(f"{CORE}/pods/db-0") or {}).get("metadata", {}).get("uid")
           not in (None, before["metadata"]["uid"]) and ready(), "db-0 re-created and Ready")
    after = api.get(f"{CORE}/pods/db-0")
    assert after["status"]["podIP"] == before["status"]["podIP"]  # its stable IP
    assert after["status"]["containerStatuses"][0]["restartCount"] == 0  # a new pod
    assert kubelet.worker("db-0").log_path.read_text().count("--- start 0:") == 2
