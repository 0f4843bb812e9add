"""The README's Kubernetes commands and docs/user/install.md's CRD-first path, run as written.

Real: Helm (helm-sdkpy) and the kubectl binary, talking to kmock's Kubernetes API
emulator. The README's `helm install` line is parsed into the same release,
namespace and flags Helm's CLI would use; `kubectl` lines run as they are, with
KUBECONFIG pointing at the emulator. What the operator then does with the job is
covered by tests/operator (its reconciliation in every namespace with
--all-namespaces, the flag the chart's Deployment passes by default).
"""
from __future__ import annotations

import os
import pathlib
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CRD = "crds/parameterserverjobs.psjob.dev.yaml"
pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def readme_kubernetes_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("**On Kubernetes**"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [shlex.split(line, comments=True) for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def helm_step(argv: list[str]) -> dict:
    """`helm install RELEASE CHART [--namespace NS] [--create-namespace] [--set k=v]`."""
    assert argv[:2] == ["helm", "install"], argv
    release, chart, *flags = argv[2:]
    step = {"action": "install", "release": release, "chart": str(ROOT / chart),
            "namespace": "default", "values": {}}
    while flags:
        flag = flags.pop(0)
        if flag in ("--namespace", "-n"):
            step["namespace"] = flags.pop(0)
        elif flag == "--create-namespace":
            pass  # the emulator accepts objects in any namespace
        else:
            raise AssertionError(f"the test does not know helm flag {flag}")
    return step


def kubectl(api, tmp_path: pathlib.Path, argv: list[str]) -> subprocess.CompletedProcess:
    config = tmp_path / "kubeconfig"
    config.write_text(api.kubeconfig)
    # kmock serves no OpenAPI document for kubectl's client-side validation.
    if argv[1] == "apply":
        argv = [*argv[:2], "--validate=false", *argv[2:]]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KUBECONFIG": str(config)}, check=False)


def test_the_readme_commands_install_an_operator_that_watches_the_namespace_the_job_lands_in(
        run_helm, kube_api, tmp_path):
    commands = readme_kubernetes_commands()
    assert [c[:2] for c in commands] == [
        ["scripts/build-images.sh", "--cpu-only"], ["kind", "load"], ["helm", "install"],
        ["kubectl", "apply"], ["kubectl", "get"]]
    # No image engine or kind here: what the build would name is what kind loads.
    built = subprocess.run([*commands[0], "--dry-run"], cwd=ROOT, capture_output=True,
                           text=True, timeout=30, check=True).stdout.split()
    assert commands[1] == ["kind", "load", "docker-image", *built]
    [outcome] = run_helm(kube_api, [helm_step(commands[2])])
    assert outcome["ok"], outcome
    applied = kubectl(kube_api, tmp_path, commands[3])
    assert applied.returncode == 0, applied.stderr
    listed = kubectl(kube_api, tmp_path, [c for c in commands[4] if c != "-w"])
    assert listed.returncode == 0 and "ctr-cpu" in listed.stdout, listed.stderr[:3000]
    objects = kube_api.objects()
    [job] = [o for o in objects if o["kind"] == "ParameterServerJob"]
    namespace = job["metadata"].get("namespace", "default")
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    # The operator the chart runs watches the job's namespace (here: all of them) ...
    assert "--all-namespaces" in container["args"] or f"--namespace={namespace}" in container["args"]
    # ... with rights there, from the ClusterRole the default cluster scope grants.
    [role] = [o for o in objects if o["kind"] == "ClusterRole"]
    assert any("parameterserverjobs" in rule["resources"] and "watch" in rule["verbs"]
               for rule in role["rules"])
    # The job runs the CPU image and the chart's operator the operator image: both built
    # and loaded.
    assert job["spec"]["image"] == built[0] and container["image"] == built[1]


def test_crds_applied_with_kubectl_first_then_the_chart_installs_without_adopting_them(
        run_helm, kube_api, tmp_path):
    applied = kubectl(kube_api, tmp_path, ["kubectl", "apply", "-f", CRD])
    assert applied.returncode == 0, applied.stderr
    outcomes = run_helm(kube_api, [
        {"action": "install", "release": "psjob", "namespace": "psjob-system", "values": {}},
        {"action": "upgrade", "release": "psjob", "namespace": "psjob-system", "values": {}}])
    assert [o["ok"] for o in outcomes] == [True, True], outcomes
    objects = kube_api.objects()
    [crd] = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    # Still kubectl's: no Helm ownership written onto it, and not in the release.
    assert "meta.helm.sh/release-name" not in (crd["metadata"].get("annotations") or {})
    assert "kind: CustomResourceDefinition" not in outcomes[0]["result"]["manifest"]
    assert {o["kind"] for o in objects} >= {"Deployment", "ClusterRole", "ServiceAccount"}
    assert crd["spec"] == yaml.safe_load((ROOT / CRD).read_text())["spec"]
