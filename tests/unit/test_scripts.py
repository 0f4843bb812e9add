"""scripts/build-images.sh and scripts/e2e-kind.sh without a container engine or kind:
linted by shellcheck, and the build script's options checked by running it."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "scripts" / "build-images.sh", ROOT / "scripts" / "e2e-kind.sh"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shellcheck_finds_nothing_to_fix(script):
    shellcheck = pathlib.Path(sys.executable).with_name("shellcheck")
    proc = subprocess.run([str(shellcheck), "--severity=style", str(script)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def build_images(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPTS[0]), *args], capture_output=True, text=True, timeout=30,
                          check=False, env=env)


def test_an_unknown_option_is_refused_naming_it():
    proc = build_images("--regsitry", "x")
    assert proc.returncode == 2 and "unknown option --regsitry" in proc.stderr


def test_help_describes_every_option():
    text = build_images("--help").stdout
    for option in ("--registry", "--push", "--cpu-only", "--dry-run"):
        assert option in text


def test_without_docker_or_podman_the_build_says_so(tmp_path):
    # A PATH with bash and coreutils but no container engine.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sed", "head", "dirname"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True,
                               text=True, check=True).stdout.strip()
        (bin_dir / tool).symlink_to(found)
    proc = build_images(env={"PATH": str(bin_dir)})
    assert proc.returncode == 1 and "neither docker nor podman" in proc.stderr


def test_the_e2e_script_runs_the_examples_the_docs_name():
    text = SCRIPTS[1].read_text()
    assert "scripts/build-images.sh --cpu-only" in text
    for example in ("examples/ctr-cpu.yaml", "examples/byo-fleet/"):
        assert example in text and (ROOT / example).exists()
