"""A collective job's pods executed for real: the operator's Indexed Job of trainers behind
its headless Service, run by the kubelet emulator (tests/e2e/kubelet.py) as processes in
their own network namespaces. Each trainer finds the others by the DNS names the operator
derived (<job>-worker-<i>.<job>-worker.<ns>.svc, from /etc/hosts here), its own endpoint
from $(PADDLE_TRAINER_ID) expanded by the kubelet, and all-reduces over the ring with the
job's token."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess

import pytest
import yaml
from kubelet import missing_requirements
from opkit_cluster import NAMESPACE, wait_for
from opkit_operator import OperatorProcess

REPO = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.skipif(bool(missing_requirements()), reason=missing_requirements()),
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
              pytest.mark.timeout(300)]

RING_SCRIPT = """
import json, os
import numpy as np
import psjob.fluid as fluid
from psjob.distributed import fleet

main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 3
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name="x", shape=[4], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(input=x, size=1), y))
    fleet.init(is_collective=True)
    fleet.distributed_optimizer(fluid.optimizer.SGD(0.1)).minimize(loss)
rank, world = fleet.worker_index(), fleet.worker_num()
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
total = fleet.util.all_reduce(np.array([rank + 1.0]), "sum").tolist()
rng = np.random.RandomState(rank)
for _ in range(5):
    xs = rng.rand(8, 4).astype("float32")
    exe.run(main, feed={"x": xs, "y": xs.sum(1, keepdims=True)}, fetch_list=[loss])
w = np.asarray(fluid.global_scope().find_var(main.all_parameters()[0].name).get_tensor())
out = os.path.join(os.environ["PSJOB_CHECKPOINT_DIR"], f"ring-{rank}.json")
with open(out, "w") as f:
    json.dump({"rank": rank, "world": world, "total": total, "w": w.ravel().tolist(),
               "current": os.environ["PADDLE_CURRENT_ENDPOINT"],
               "endpoints": os.environ["PADDLE_TRAINER_ENDPOINTS"]}, f)
"""


@pytest.fixture(scope="module")
def kubeconfig(cluster, tmp_path_factory) -> pathlib.Path:
    return cluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")


@pytest.fixture(scope="module")
def operator(kubeconfig, tmp_path_factory):
    process = OperatorProcess(kubeconfig, tmp_path_factory.mktemp("operator") / "operator.log")
    process.start("--resync-seconds", "5", "--checkpoint-poll-seconds", "0")
    yield process
    process.stop()


def test_a_collective_job_trains_over_its_ring_of_pods(api, operator, kubelet):
    api.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ring-code", "namespace": NAMESPACE},
        "data": {"train.py": RING_SCRIPT}})
    job = yaml.safe_load((REPO / "examples" / "ctr-cpu.yaml").read_text())
    spec = {"image": job["spec"]["image"], "mode": "collective", "command": ["python", "/opt/user/train.py"],
            "worker": {"replicas": 2, "template": {"spec": {
                "volumes": [{"name": "code", "configMap": {"name": "ring-code"}}],
                "containers": [{"name": "psjob", "volumeMounts": [
                    {"name": "code", "mountPath": "/opt/user", "readOnly": True}]}]}}}}
    api.create(f"/apis/psjob.dev/v1alpha1/namespaces/{NAMESPACE}/parameterserverjobs", {
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
        "metadata": {"name": "ring", "namespace": NAMESPACE}, "spec": spec})
    path = f"/apis/psjob.dev/v1alpha1/namespaces/{NAMESPACE}/parameterserverjobs/ring"
    phase = lambda: ((api.get(path) or {}).get("status") or {}).get("phase")  # noqa: E731
    try:
        wait_for(lambda: phase() in ("Succeeded", "Failed"), timeout=240, what="the collective job's end")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{kubelet.logs()}") from None
    assert phase() == "Succeeded", kubelet.logs()
    results = [json.loads((kubelet.claims / "ring-checkpoint" / f"ring-{r}.json").read_text()) for r in range(2)]
    ring = [f"ring-worker-{i}.ring-worker.{NAMESPACE}.svc:6170" for i in range(2)]
    for r, result in enumerate(results):
        assert (result["rank"], result["world"], result["total"]) == (r, 2, [3.0])
        assert result["endpoints"] == ",".join(ring) and result["current"] == ring[r]
    # Both trainers applied the same averaged gradients from the same start: one model.
    assert results[0]["w"] == pytest.approx(results[1]["w"], abs=1e-6)


RESUME_SCRIPT = """
import json, os, shutil, signal
import numpy as np
import psjob.fluid as fluid
from psjob.distributed import fleet

STEPS, KILL_AT = 12, 6
ckpt = os.environ["PSJOB_CHECKPOINT_DIR"]
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 3
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name="x", shape=[4], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(input=x, size=1), y))
    fleet.init(is_collective=True)
    fleet.distributed_optimizer(fluid.optimizer.SGD(0.1)).minimize(loss)
rank = fleet.worker_index()
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
done = [int(n[5:]) for n in os.listdir(ckpt) if n.startswith("step-")]
start = int(fleet.util.all_reduce(np.array([float(max(done, default=0))]), "min")[0])
if start:
    fluid.io.load_persistables(exe, os.path.join(ckpt, f"step-{start}"), main)
with open(os.path.join(ckpt, f"starts-{rank}.txt"), "a") as f:
    f.write(f"{start}\\n")
marker = os.path.join(ckpt, "killed-once")
for i in range(start, STEPS):
    if rank == 1 and i == KILL_AT and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    xs = np.random.RandomState(100 * i + rank).rand(8, 4).astype("float32")
    exe.run(main, feed={"x": xs, "y": xs.sum(1, keepdims=True)}, fetch_list=[loss])
    if rank == 0:
        tmp = os.path.join(ckpt, f".step-{i + 1}")
        shutil.rmtree(tmp, ignore_errors=True)
        fleet.save_persistables(exe, tmp)
        os.rename(tmp, os.path.join(ckpt, f"step-{i + 1}"))
"""


def test_a_killed_trainer_pod_restarts_the_ring_and_the_job_resumes_and_succeeds(api, operator, kubelet):
    """Trainer 1 dies (SIGKILL) mid-run: trainer 0's all-reduce fails and it exits 77, which the
    worker Job's podFailurePolicy ignores; the Job recreates both pods (same DNS names), the
    ring forms again, both resume from the newest checkpoint and the job succeeds with one
    counted failure (backoffLimit 1)."""
    api.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "resume-code", "namespace": NAMESPACE},
        "data": {"train.py": RESUME_SCRIPT}})
    job = yaml.safe_load((REPO / "examples" / "ctr-cpu.yaml").read_text())
    spec = {"image": job["spec"]["image"], "mode": "collective", "command": ["python", "/opt/user/train.py"],
            "runPolicy": {"backoffLimit": 1},
            "worker": {"replicas": 2, "template": {"spec": {
                "volumes": [{"name": "code", "configMap": {"name": "resume-code"}}],
                "containers": [{"name": "psjob", "volumeMounts": [
                    {"name": "code", "mountPath": "/opt/user", "readOnly": True}]}]}}}}
    api.create(f"/apis/psjob.dev/v1alpha1/namespaces/{NAMESPACE}/parameterserverjobs", {
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
        "metadata": {"name": "resume", "namespace": NAMESPACE}, "spec": spec})
    path = f"/apis/psjob.dev/v1alpha1/namespaces/{NAMESPACE}/parameterserverjobs/resume"
    status = lambda: (api.get(path) or {}).get("status") or {}  # noqa: E731
    try:
        wait_for(lambda: status().get("phase") in ("Succeeded", "Failed"), timeout=240,
                 what="the collective job's end")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{kubelet.logs()}") from None
    assert status().get("phase") == "Succeeded", kubelet.logs()
    assert status()["replicaStatuses"]["worker"]["failed"] == 1, status()
    claim = kubelet.claims / "resume-checkpoint"
    assert (claim / "killed-once").exists() and (claim / "step-12").exists()
    for rank in range(2):
        starts = (claim / f"starts-{rank}.txt").read_text().split()
        assert starts[0] == "0" and int(starts[-1]) > 0, (rank, starts)  # resumed, not from scratch


def test_the_collective_example_rendered_by_kubectl_kustomize_runs_to_succeeded(api, operator, kubelet,
                                                                                kubeconfig):
    """examples/collective as `kubectl apply -k` would create it (the steps shrunk): the ConfigMap
    with train.py and the job; its trainers save checkpoints on the claim; kubectl reads Succeeded."""
    rendered = yaml.safe_load_all(subprocess.run(
        [shutil.which("kubectl"), "--kubeconfig", str(kubeconfig), "kustomize", str(REPO / "examples" / "collective")],
        capture_output=True, text=True, timeout=60, check=True).stdout)
    for obj in rendered:
        obj["metadata"]["namespace"] = NAMESPACE
        if obj["kind"] == "ConfigMap":
            api.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", obj)
        else:
            assert obj["kind"] == "ParameterServerJob", obj["kind"]
            args = obj["spec"]["args"]
            args[args.index("--steps") + 1] = "40"
            api.create(f"/apis/psjob.dev/v1alpha1/namespaces/{NAMESPACE}/parameterserverjobs", obj)
    path = f"/apis/psjob.dev/v1alpha1/namespaces/{NAMESPACE}/parameterserverjobs/collective"
    phase = lambda: ((api.get(path) or {}).get("status") or {}).get("phase")  # noqa: E731
    try:
        wait_for(lambda: phase() in ("Succeeded", "Failed"), timeout=240, what="the example's end")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{kubelet.logs()}") from None
    assert phase() == "Succeeded", kubelet.logs()
    out = subprocess.run([shutil.which("kubectl"), "--kubeconfig", str(kubeconfig), "-n", NAMESPACE, "get",
                          "psjob", "collective", "-o", "jsonpath={.status.phase}"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    assert out == "Succeeded"
    assert sorted(p.name for p in (kubelet.claims / "collective-checkpoint").iterdir()) == ["step-20", "step-40"]
