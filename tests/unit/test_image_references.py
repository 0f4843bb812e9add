"""One image naming scheme everywhere: what scripts/build-images.sh builds.

The script's --dry-run prints the three references it builds (CPU, operator, CUDA).
Every psjob image named in examples/, charts/, docs/ and README.md must be one
of them, with any registry in front (users push to their own); a job YAML's
`image` fields (spec.image, spec.<role>.image) must be exactly one of them.
"""
from __future__ import annotations

import pathlib
import re
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCANNED = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
           *sorted(p for p in (ROOT / "examples").rglob("*") if p.is_file()),
           *sorted(p for p in (ROOT / "charts").rglob("*") if p.is_file() and p.suffix in
                   (".yaml", ".yml", ".txt", ".tpl", ".md", ".json"))]
# A repository whose last path segment names a psjob image, then a tag with a digit and
# a letter or dot: `ghcr.io/psjob/psjob:0.1.0`, `psjob-worker:0.1.0-cuda12`,
# `REGISTRY/psjob:0.1.0`, `psjob:latest` (not a port, `psjob-operator:8080`, nor an RPC
# message, `psjob:commit`).
REFERENCE = re.compile(r"(?<![\w./-])((?:[\w.:-]+/)*psjob(?:-[a-z]+)?):"
                       r"((?=[\w.-]*\d)(?=[\w.-]*[a-z.])[\w.-]+|latest)", re.I)


def dry_run(*args: str) -> list[str]:
    out = subprocess.run([str(ROOT / "scripts" / "build-images.sh"), "--dry-run", *args],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return out.splitlines()


BUILT = dry_run()
CPU, OPERATOR, CUDA = BUILT


def test_the_build_script_names_cpu_operator_and_cuda_images_tagged_from_the_project_version():
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(),
                        re.M).group(1)
    cuda = re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:(\d+\.\d+)\.",
                     (ROOT / "Dockerfile.worker").read_text(), re.M).group(1)
    assert BUILT == [f"ghcr.io/psjob/psjob:{version}", f"ghcr.io/psjob/psjob:{version}-operator",
                     f"ghcr.io/psjob/psjob:{version}-cuda{cuda}"]
    assert dry_run("--registry", "registry.example.com/team", "--cpu-only") == [
        f"registry.example.com/team/psjob:{version}",
        f"registry.example.com/team/psjob:{version}-operator"]


def allowed(repository: str, tag: str) -> bool:
    name = repository.rsplit("/", 1)[-1]
    return any(f"{name}:{tag}" == ref.rsplit("/", 1)[-1] for ref in BUILT)


def references(text: str) -> list[tuple[str, str]]:
    return REFERENCE.findall(text)


def test_the_pattern_finds_the_old_schemes_and_accepts_the_built_images():
    old = ("image: ghcr.io/psjob/psjob-worker:0.1.0\n"
           "docker build -t psjob-server:0.1.0-py3.11 .\n"
           "ghcr.io/psjob/psjob-operator:0.1.0 and psjob:0.1.0-cuda12")
    assert [allowed(*ref) for ref in references(old)] == [False] * 4
    fine = f"kind load docker-image {CPU}; REGISTRY/psjob:{CUDA.split(':')[1]}"
    assert [allowed(*ref) for ref in references(fine)] == [True, True]
    assert references("labels: {psjob.dev/job-name: ctr}, psjob-operator:8080, "
                      "`psjob:commit`") == []
    assert references("image: psjob:latest") == [("psjob", "latest")]


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_psjob_image_named_in_the_docs_examples_and_chart_is_a_built_one(path):
    text = path.read_text(errors="replace")
    wrong = [f"{repo}:{tag}" for repo, tag in references(text) if not allowed(repo, tag)]
    assert wrong == [], f"{path.relative_to(ROOT)} names images no script builds; use {BUILT}"


def _job_images(document: dict) -> list[str]:
    spec = document.get("spec") or {}
    images = [spec.get("image")]
    images += [(spec.get(role) or {}).get("image") for role in ("pserver", "worker", "heterWorker")]
    return [image for image in images if image]


JOB_FILES = sorted(p for p in (ROOT / "examples").rglob("*.yaml")
                   if "kind: ParameterServerJob" in p.read_text())


@pytest.mark.parametrize("path", JOB_FILES, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_every_example_job_runs_a_built_image_and_gpu_jobs_keep_pservers_on_the_cpu_image(path):
    jobs = [d for d in yaml.safe_load_all(path.read_text())
            if d and d.get("kind") == "ParameterServerJob"]
    assert jobs, f"{path.name} holds no ParameterServerJob"
    for document in jobs:
        # Job pods run the CPU or the CUDA image; the operator's image is the operator's.
        assert set(_job_images(document)) <= {CPU, CUDA}
        spec = document["spec"]
        if (spec.get("worker") or {}).get("device") == "gpu":
            assert spec["image"] == CUDA and spec["pserver"]["image"] == CPU
