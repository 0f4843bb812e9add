"""The operator's pods executed for real: kopf operator + kmock API + tests/e2e/kubelet.py.

The real operator reconciles examples/ctr-cpu.yaml (shrunk) in the API emulator;
the kubelet emulator runs every pod it leads to as local processes in their own
namespaces, exactly as the pod specs say, and reports them back; real kubectl
reads the job's phase. See kubelet.py for what is real and what is emulated.
"""
from __future__ import annotations

import base64
import json
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

from kubelet import Kubelet, missing_requirements
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


def test_ctr_cpu_runs_as_its_pod_specs_say_and_kubectl_shows_it_succeed(
        api, operator, kubelet, kubeconfig):
    api.create(jobs_path(), ctr_cpu("ctr-cpu"))
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
