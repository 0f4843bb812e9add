"""The operator's pods executed for real: kopf operator + kmock API + tests/e2e/kubelet.py.

The real operator reconciles examples/ctr-cpu.yaml (shrunk) in the API emulator;
the kubelet emulator runs every pod it leads to as local processes in their own
namespaces, exactly as the pod specs say, and reports them back; real kubectl
reads the job's phase. See kubelet.py for what is real and what is emulated.
"""
from __future__ import annotations

import base64
import contextlib
import json
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml
from kubelet import INDEX_KEY, Kubelet, PodWorker, missing_requirements
from opkit_cluster import NAMESPACE, TestClient, wait_for
from opkit_operator import OperatorProcess

REPO = pathlib.Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")
PSJOB = str(pathlib.Path(sys.executable).parent / "psjob")

pytestmark = [
    pytest.mark.skipif(bool(missing_requirements()), reason=missing_requirements()),
    pytest.mark.skipif(KUBECTL is None, reason="needs kubectl"),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def kubeconfig(cluster, tmp_path_factory) -> pathlib.Path:
    return cluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")


@pytest.fixture(scope="module")
def operator(kubeconfig, tmp_path_factory):
    process = OperatorProcess(kubeconfig, tmp_path_factory.mktemp("operator") / "operator.log")
    process.start("--resync-seconds", "5", "--checkpoint-poll-seconds", "0")
    yield process
    process.stop()


def ctr_cpu(name: str, **spec) -> dict:
    """examples/ctr-cpu.yaml as shipped, shrunk: small data, frequent checkpoints."""
    job = yaml.safe_load((REPO / "examples" / "ctr-cpu.yaml").read_text())
    job["metadata"].update(name=name, namespace=NAMESPACE)
    args = job["spec"]["args"]
    args[args.index("--examples") + 1] = "6000"
    args[args.index("--batch") + 1] = "300"
    job["spec"]["worker"]["replicas"] = 2
    job["spec"]["checkpoint"]["intervalSteps"] = 5
    job["spec"].update(spec)
    return job


def kubectl(kubeconfig: pathlib.Path, *args: str) -> str:
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "-n", NAMESPACE, *args],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def jobs_path(name: str = "") -> str:
    base = f"/apis/psjob.dev/v1alpha1/namespaces/{NAMESPACE}/parameterserverjobs"
    return f"{base}/{name}" if name else base


def phase(api: TestClient, name: str) -> str | None:
    return ((api.get(jobs_path(name)) or {}).get("status") or {}).get("phase")


def wait_for_phase(api, kubelet, name: str, wanted: str, timeout: float = 180) -> None:
    try:
        wait_for(lambda: phase(api, name) in (wanted, "Failed"), timeout=timeout,
                 what=f"job {name} {wanted}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{kubelet.logs()}") from None
    assert phase(api, name) == wanted, kubelet.logs()


def declared_probes_pass(kubelet: Kubelet, pod: str) -> list[str]:
    """Run every probe the pod's spec declares now (not at its period: a short job may end
    before a 10 s startup period comes round); the kinds of probe, if all passed."""
    try:
        container = kubelet.worker(pod).container()
    except KeyError:
        return []
    if container.worker.sandbox is None or "running" not in container.state:
        return []
    probes = [container.spec[k] for k in ("startupProbe", "readinessProbe", "livenessProbe")
              if k in container.spec]
    if not probes or not all(kubelet.probe(container, p)[0] for p in probes):
        return []
    return sorted({kind for p in probes for kind in ("grpc", "tcpSocket", "httpGet", "exec")
                   if kind in p})


@contextlib.contextmanager
def trainer_paused(api: TestClient, kubelet: Kubelet, job: str, index: int = 0, once=None):
    """Trainer `index` of `job` stopped (SIGSTOP) for the block, from its container's start
    or, given `once`, from when once() holds (polled closely: the trainer runs meanwhile).
    The pservers serve until every trainer completed, so the job cannot end (nor its
    pservers go away) during the block, however long it takes on a loaded machine."""
    def started() -> PodWorker | None:
        for pod in worker_pods(api, job):
            if pod["metadata"]["annotations"][INDEX_KEY] != str(index):
                continue
            try:
                worker = kubelet.worker(pod["metadata"]["name"])
            except KeyError:
                continue
            proc = worker.container().proc
            if proc is not None and proc.poll() is None:
                return worker
        return None
    worker = wait_for(started, timeout=120, what=f"trainer {index} of {job} started")
    deadline = time.monotonic() + 120
    while once is not None and not once():
        assert time.monotonic() < deadline, f"trainer {index} of {job}: {once} never held\n{kubelet.logs()}"
        time.sleep(0.01)
    worker.kill(signal.SIGSTOP)
    try:
        yield
    finally:
        worker.kill(signal.SIGCONT)


def test_ctr_cpu_runs_as_its_pod_specs_say_and_kubectl_shows_it_succeed(
        api, operator, kubelet, kubeconfig):
    api.create(jobs_path(), ctr_cpu("ctr-cpu"))
    with trainer_paused(api, kubelet, "ctr-cpu"):
        for i in range(2):  # the kubelet's gRPC health probes pass against the real pservers
            assert wait_for(lambda: declared_probes_pass(kubelet, f"ctr-cpu-pserver-{i}"),
                            timeout=120, what=f"pserver {i} passing its probes") == ["grpc"]
    wait_for_phase(api, kubelet, "ctr-cpu", "Succeeded")

    out = kubectl(kubeconfig, "get", "psjob", "ctr-cpu", "-o",
                  "custom-columns=NAME:.metadata.name,PHASE:.status.phase")
    assert out.split() == ["NAME", "PHASE", "ctr-cpu", "Succeeded"], out
    logs = kubelet.logs()
    assert "pserver index 1 from hostname ctr-cpu-pserver-1" in logs, logs
    assert "trainer=1 finished steps=10 examples=3000" in logs, logs
    # Done, the pservers stayed up (restartPolicy Always restarts a container that exits)
    # until cleanPodPolicy's scale-down stopped them: no restart after the job.
    for i in range(2):
        assert (f"[psjob] pserver ctr-cpu-pserver-{i}.ctr-cpu-pserver.{NAMESPACE}.svc:6174: every trainer "
                f"completed; staying up until stopped") in logs, logs
    assert not [e for e in kubelet.events if "restarting container" in e], logs


def test_a_tls_job_runs_with_its_secret_mounted_and_tcp_probes(api, operator, kubelet,
                                                              tmp_path):
    names = [f"ctr-tls-pserver-{i}.ctr-tls-pserver.{NAMESPACE}.svc" for i in range(2)]
    subprocess.run([sys.executable, str(REPO / "tests" / "component" / "scripts" /
                                        "make_certs.py"), str(tmp_path / "certs"),
                    *(arg for name in names for arg in ("--name", name))], check=True)
    api.create(f"/api/v1/namespaces/{NAMESPACE}/secrets", {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "ctr-tls", "namespace": NAMESPACE},
        "data": {key: base64.b64encode((tmp_path / "certs" / key).read_bytes()).decode()
                 for key in ("ca.crt", "tls.crt", "tls.key")}})
    api.create(jobs_path(), ctr_cpu("ctr-tls", tls={"secretName": "ctr-tls"}))
    with trainer_paused(api, kubelet, "ctr-tls"):
        for i in range(2):  # with TLS the kubelet cannot speak gRPC: a TCP probe
            assert wait_for(lambda: declared_probes_pass(kubelet, f"ctr-tls-pserver-{i}"),
                            timeout=120, what=f"pserver {i} passing its probes") == ["tcpSocket"]
    wait_for_phase(api, kubelet, "ctr-tls", "Succeeded")
    assert "trainer=1 finished steps=10 examples=3000" in kubelet.logs()


def container_status(api: TestClient, pod: str) -> dict:
    found = api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}") or {}
    return ((found.get("status") or {}).get("containerStatuses") or [{}])[0]


def test_a_pserver_killed_mid_run_is_restarted_in_its_pod_and_the_job_still_succeeds(
        api, operator, kubelet):
    job = ctr_cpu("ctr-kill")
    job["spec"]["args"][job["spec"]["args"].index("--examples") + 1] = "12000"
    api.create(jobs_path(), job)
    claim = kubelet.claims / "ctr-kill-checkpoint"
    wait_for(lambda: list(claim.glob("step-*/__manifest__.json")), timeout=120,
             what="a first checkpoint committed")
    before = max(int(m.parent.name.split("-")[1]) for m in claim.glob("step-*/__manifest__.json"))
    victim = kubelet.worker("ctr-kill-pserver-1")
    assert victim.pod["spec"]["restartPolicy"] == "Always"
    victim.kill()
    restarted = wait_for(lambda: container_status(api, "ctr-kill-pserver-1").get(
        "restartCount", 0) >= 1 and container_status(api, "ctr-kill-pserver-1"), timeout=60,
        what="the pserver restarted in its pod (restartCount 1)")
    assert restarted["lastState"]["terminated"]["exitCode"] == 137  # SIGKILL, as reported
    wait_for_phase(api, kubelet, "ctr-kill", "Succeeded")

    log = victim.log_path.read_text()
    second_run = log.split("--- start 1:")[1]
    assert "pserver index 1 from hostname ctr-kill-pserver-1" in second_run, log
    assert "pserver 1 restores its shard from /var/lib/psjob/checkpoints/step-" in second_run, log
    verify = subprocess.run([PSJOB, "checkpoint", "verify", str(claim)], capture_output=True,
                            text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    listing = subprocess.run([PSJOB, "checkpoint", "list", str(claim)], capture_output=True,
                             text=True, check=True)
    newest = [line.split() for line in listing.stdout.splitlines() if line.startswith("*")]
    assert newest and int(newest[0][1]) > before, listing.stdout  # saved again after the restart


def worker_pods(api: TestClient, job: str) -> list[dict]:
    return [p for p in api.list(f"/api/v1/namespaces/{NAMESPACE}/pods")
            if p["metadata"]["name"].startswith(f"{job}-worker-")]


def runs_of(log: pathlib.Path) -> list[str]:
    """A pod log's runs: the kubelet heads each with `--- start N:` (a re-created pod
    appends to the same file, starting again at 0)."""
    return log.read_text().split("--- start ")[1:]


def start_job(api, kubelet, name: str, examples: int, **spec) -> pathlib.Path:
    """Start a ctr-cpu job of 2 trainers (batch 300) that allows no worker failure
    (backoffLimit 0); its checkpoint claim's directory on the node."""
    job = ctr_cpu(name, runPolicy={"backoffLimit": 0, "cleanPodPolicy": "Running"}, **spec)
    job["spec"]["args"][job["spec"]["args"].index("--examples") + 1] = str(examples)
    api.create(jobs_path(), job)
    return kubelet.claims / f"{name}-checkpoint"


def first_checkpoint(claim: pathlib.Path) -> None:
    wait_for(lambda: list(claim.glob("step-*/__manifest__.json")), timeout=120,
             what="a first checkpoint committed")


def replaced_and_serving(api, kubelet, pod: str, old_uid: str) -> None:
    """Wait until the StatefulSet controller has re-created `pod` (a new uid, the same
    name and index) and its pserver, having restored its shard from the newest checkpoint
    on the shared claim, serves again (the re-created pod's run is its log's second)."""
    log = kubelet.workdir / "logs" / f"{pod}.log"
    wait_for(lambda: len(runs_of(log)) == 2 and re.search(r"serving \d trainers", runs_of(log)[1]),
             timeout=60, what=f"the re-created {pod} serving")
    assert "restores its shard from /var/lib/psjob/checkpoints/step-" in runs_of(log)[1]
    assert api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}")["metadata"]["uid"] != old_uid


def completed_worker_job(api: TestClient, name: str) -> dict:
    """The worker Job once its controller has marked it Complete (the operator may call the
    job Succeeded from the pods a moment before)."""
    def complete() -> dict | None:
        job = api.get(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}-worker")
        done = any(c["type"] == "Complete" and c["status"] == "True"
                   for c in job["status"].get("conditions") or [])
        return job if done else None
    return wait_for(complete, timeout=30, what=f"Job {name}-worker Complete")


def job_events(api: TestClient, name: str) -> list[dict]:
    return [e for e in api.list(f"/api/v1/namespaces/{NAMESPACE}/events")
            if (e.get("involvedObject") or {}).get("name") == name]


# Issue 17: a pserver's node is lost mid-job; the worker Job allows no failure at all.
def test_a_pserver_pod_lost_with_its_node_is_replaced_and_the_job_succeeds_with_backoff_limit_0(
        api, operator, kubelet):
    claim = start_job(api, kubelet, "ctr-lost", examples=12000)
    # The operator reports a restart of a job it saw Running, which needs its pservers past
    # their startup probes (10 s apart): trainer 0 (and so, in sync mode, training) waits.
    with trainer_paused(api, kubelet, "ctr-lost"):
        wait_for_phase(api, kubelet, "ctr-lost", "Running")
    first_checkpoint(claim)
    trainers_before = {p["metadata"]["uid"] for p in worker_pods(api, "ctr-lost")
                       if p["status"]["phase"] == "Running"}
    assert len(trainers_before) == 2, kubelet.logs()
    pserver = "ctr-lost-pserver-1"
    old_uid = kubelet.worker(pserver).uid
    lost = time.monotonic()
    kubelet.lose_pod(pserver)
    kubelet.force_delete(pserver)  # at once: `kubectl delete pod --force`, or a quick eviction
    replaced_and_serving(api, kubelet, pserver, old_uid)
    recovered = time.monotonic() - lost
    wait_for_phase(api, kubelet, "ctr-lost", "Succeeded")
    print(f"\n{pserver}'s pod lost with its node and force-deleted; re-created, its shard "
          f"restored, serving {recovered:.2f} s later")

    # The trainers waited for it. Both were running when the pod was lost, and in sync
    # mode no step completes without every pserver; yet the same two pods (no
    # replacement, no retry) went on to train every step and succeeded, and the worker
    # Job counted no failure (backoffLimit 0 allows none).
    workers = worker_pods(api, "ctr-lost")
    assert {p["metadata"]["uid"] for p in workers} == trainers_before, kubelet.logs()
    assert all(p["status"]["phase"] == "Succeeded" for p in workers), kubelet.logs()
    worker_job = completed_worker_job(api, "ctr-lost")
    assert worker_job["status"].get("failed", 0) == 0 and worker_job["status"]["succeeded"] == 2
    endpoint = re.escape(f"{pserver}.ctr-lost-pserver.{NAMESPACE}.svc:6174")
    for pod in workers:
        (run,) = runs_of(kubelet.workdir / "logs" / f"{pod['metadata']['name']}.log")
        assert "finished steps=20 examples=6000" in run, run
        # A call in flight when the pserver died logs the outage it then rode out.
        waited = re.search(rf"pserver {endpoint} answers again after ([0-9.]+) s", run)
        if waited:
            print(f"{pod['metadata']['name']}: a call to {pserver} failed, was retried and "
                  f"answered {float(waited.group(1)):.2f} s later")
    # The operator said so while it happened.
    assert "PserverRestarting" in [e["reason"] for e in job_events(api, "ctr-lost")]


def test_trainers_that_give_up_on_a_lost_pserver_exit_75_and_are_not_counted(api, operator,
                                                                             kubelet):
    # A trainer whose calls fail gives up after about 4 s (2 s deadline, one attempt, 2 s
    # recovery window); the lost node's pod is evicted only once one has, as a cluster's
    # node lifecycle controller does minutes later.
    impatient = [{"name": "PSJOB_RPC_DEADLINE_S", "value": "2"},
                 {"name": "PSJOB_RPC_MAX_ATTEMPTS", "value": "1"},
                 {"name": "PSJOB_PSERVER_RECOVERY_S", "value": "2"}]
    claim = start_job(api, kubelet, "ctr-gaveup", examples=24000, mode="async",
                      worker={"replicas": 2, "env": impatient})
    # Async trainers do not wait for each other: trainer 1 could train its whole share before
    # trainer 0's first checkpoint. It is paused from its first step (it writes its position
    # every step) until the pod is lost, so it is training then, however the machine
    # schedules the two.
    pserver = "ctr-gaveup-pserver-1"
    with trainer_paused(api, kubelet, "ctr-gaveup", 1, once=(claim / "positions" / "trainer-1.json").exists):
        first_checkpoint(claim)
        old_uid = kubelet.worker(pserver).uid
        kubelet.lose_pod(pserver)

    def gave_up_and_replaced() -> set[str]:
        pods = worker_pods(api, "ctr-gaveup")
        gave_up = {p["metadata"]["annotations"][INDEX_KEY] for p in pods
                   if p["status"]["phase"] == "Failed" and container_status(
                       api, p["metadata"]["name"]).get("state", {}).get("terminated", {}).get(
                       "exitCode") == 75}
        running = {p["metadata"]["annotations"][INDEX_KEY] for p in pods
                   if p["status"]["phase"] == "Running"}
        return gave_up and gave_up <= running
    # (A trainer blocked where no deadline applies, behind its communicator, just waits.)
    try:
        wait_for(gave_up_and_replaced, timeout=60,
                 what="a trainer exited 75 and was re-created with its index")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{kubelet.logs()}") from None
    evicted = time.monotonic()
    kubelet.force_delete(pserver)
    replaced_and_serving(api, kubelet, pserver, old_uid)
    recovered = time.monotonic() - evicted
    wait_for_phase(api, kubelet, "ctr-gaveup", "Succeeded")
    print(f"\n{pserver} evicted after a trainer gave up (exit 75); re-created, its shard "
          f"restored, serving {recovered:.2f} s later")

    # The podFailurePolicy ignored the exits: nothing counted against backoffLimit 0.
    worker_job = completed_worker_job(api, "ctr-gaveup")
    assert worker_job["status"].get("failed", 0) == 0 and worker_job["status"]["succeeded"] == 2
    for pod in worker_pods(api, "ctr-gaveup"):
        if pod["status"]["phase"] == "Failed":
            log = kubelet.workdir / "logs" / f"{pod['metadata']['name']}.log"
            assert "exiting 75 to be started again without counting" in log.read_text()


# The user's own Fleet script (issue 15 item 3): it reads its role from the environment
# the operator gives each pod. Trainer 0 leaves its losses on the shared checkpoint volume.
USER_FLEET_SCRIPT = """
import json, os
import numpy as np
import psjob.fluid as fluid
from psjob import fleet
from psjob.fleet import DistributedStrategy

fleet.init()
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    x = fluid.layers.data(name="x", shape=[4])
    y = fluid.layers.data(name="y", shape=[1])
    loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
    fleet.distributed_optimizer(fluid.optimizer.SGD(0.05), DistributedStrategy()).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    fleet.init_worker()
    exe.run(fleet.startup_program)
    rng = np.random.default_rng(fleet.worker_index())
    w = np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")
    losses = []
    for _ in range(30):
        X = rng.normal(size=(16, 4)).astype("float32")
        losses.append(float(exe.run(fleet.main_program, feed={"x": X, "y": X @ w},
                                    fetch_list=[loss])[0][0]))
    if fleet.worker_index() == 0:
        with open(os.path.join(os.environ["PSJOB_CHECKPOINT_DIR"], "byo.json"), "w") as f:
            json.dump({"losses": losses, "trainers": fleet.worker_num(),
                       "team": os.environ.get("TEAM")}, f)
    fleet.stop_worker()
"""


# Issue 15 item 4: pod templates add a ConfigMap volume with the script, labels and env.
def test_a_job_with_pod_templates_runs_the_users_script_from_a_configmap_volume(
        api, operator, kubelet):
    api.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "user-code", "namespace": NAMESPACE},
        "data": {"train.py": USER_FLEET_SCRIPT}})
    template = {
        "metadata": {"labels": {"team": "ads"},
                     "annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {"volumes": [{"name": "code", "configMap": {"name": "user-code"}}],
                 "containers": [{"name": "psjob",
                                 "volumeMounts": [{"name": "code", "mountPath": "/opt/user",
                                                   "readOnly": True}],
                                 "env": [{"name": "TEAM", "valueFrom": {"fieldRef": {
                                     "fieldPath": "metadata.labels['team']"}}}]}]}}
    job = ctr_cpu("templated", command=["python", "/opt/user/train.py"], args=[])
    for role in ("pserver", "worker"):
        job["spec"][role]["template"] = template
    api.create(jobs_path(), job)
    wait_for_phase(api, kubelet, "templated", "Succeeded")
    result = json.loads((kubelet.claims / "templated-checkpoint" / "byo.json").read_text())
    assert result["trainers"] == 2 and result["team"] == "ads"
    assert result["losses"][-1] < result["losses"][0] / 4, result["losses"]


BYO_EXAMPLE = REPO / "examples" / "byo-fleet"


# The shipped bring-your-own-code example, as `kubectl apply -k` would create it.
def test_the_byo_fleet_example_rendered_by_kubectl_kustomize_runs_to_succeeded(
        api, operator, kubelet, kubeconfig):
    rendered = list(yaml.safe_load_all(kubectl(kubeconfig, "kustomize", str(BYO_EXAMPLE))))
    for obj in rendered:
        obj["metadata"]["namespace"] = NAMESPACE
        if obj["kind"] == "ConfigMap":
            api.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", obj)
        else:
            assert obj["kind"] == "ParameterServerJob", obj["kind"]
            args = obj["spec"].get("args") or []
            if "--steps" in args:  # shrunk: the example's script, fewer steps
                args[args.index("--steps") + 1] = "10"
            api.create(jobs_path(), obj)
            name = obj["metadata"]["name"]
    wait_for_phase(api, kubelet, name, "Succeeded")
    out = kubectl(kubeconfig, "get", "psjob", name, "-o", "jsonpath={.status.phase}")
    assert out == "Succeeded"
