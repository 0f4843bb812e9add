"""examples/byo-fleet: a user's Fleet script shipped in a ConfigMap, run as spec.command.

Real: `kubectl kustomize` renders the example (the ConfigMap with train.py and the
job), the operator's builders turn the job into pods (validated against the
Kubernetes schema), and the script taken out of the rendered ConfigMap trains as 2
pservers + 2 trainers under `psjob launch` — the processes a pod runs, on loopback.
"""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from psjob.foundation.jobspec import parse_job
from psjob_operator import builders
from psjob_operator.validation import validate_for_cluster

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "byo-fleet"
pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict]:
    out = subprocess.run(["kubectl", "kustomize", str(EXAMPLE)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return {d["kind"]: d for d in yaml.safe_load_all(out)}


def test_kustomize_ships_the_script_in_the_configmap_the_pods_mount(rendered):
    config_map, job = rendered["ConfigMap"], rendered["ParameterServerJob"]
    assert config_map["data"]["train.py"] == (EXAMPLE / "train.py").read_text()
    parsed = parse_job(job)
    validate_for_cluster(parsed)
    kids = builders.build_children(parsed, builders.Owner("byo-fleet", "uid"), "token")
    for kind in ("StatefulSet", "Job"):
        [child] = [c for c in kids if c["kind"] == kind]
        kubernetes_validate.validate(child, kubernetes_validate.latest_version(), strict=True)
        pod = child["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert container["command"] == ["python", "/opt/train/train.py"]
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/opt/train")
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    # The script serves through psjob's pserver, which must listen on the pod's interfaces.
    [pservers] = [c for c in kids if c["kind"] == "StatefulSet"]
    env = pservers["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "PSJOB_BIND_ALL", "value": "1"} in env


def test_the_shipped_script_trains_as_pservers_and_trainers(rendered, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(rendered["ConfigMap"]["data"]["train.py"])
    args = rendered["ParameterServerJob"]["spec"]["args"]
    steps = ["--steps", "100"] if "--steps" in args else []
    result = subprocess.run(
        [sys.executable, "-m", "psjob.cli", "launch", "--server_num", "2", "--worker_num", "2",
         "--log_dir", str(tmp_path / "log"), str(script), *args, *steps],
        capture_output=True, text=True, timeout=240, check=False)
    assert result.returncode == 0, result.stderr
    for trainer in (0, 1):
        log = (tmp_path / "log" / f"workerlog.{trainer}").read_text()
        losses = [float(v) for v in re.findall(rf"trainer {trainer} step \d+ loss ([\d.]+)", log)]
        assert len(losses) >= 2 and losses[-1] < 0.01 * losses[0], log
