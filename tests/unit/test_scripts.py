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


def tool_path(tmp_path: pathlib.Path, engines: dict[str, int]) -> pathlib.Path:
    """A PATH with bash and coreutils and, for each of `engines`, a stand-in for that
    container CLI: `info` exits with the given status (a docker CLI whose daemon is not
    running exits 1), anything else succeeds; every call is appended to calls.log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sed", "head", "dirname", "basename", "awk"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True,
                               text=True, check=True).stdout.strip()
        (bin_dir / tool).symlink_to(found)
    for engine, info_status in engines.items():
        fake = bin_dir / engine
        fake.write_text(f"#!{bin_dir}/bash\n"
                        f'echo "{engine} $*" >> {tmp_path}/calls.log\n'
                        f'if [ "$1" = info ]; then exit {info_status}; fi\n')
        fake.chmod(0o755)
    return bin_dir


def engine_calls(tmp_path: pathlib.Path, chosen: str | None = None,
                 **engines: int) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run `build-images.sh --cpu-only` with these stand-in engines (CONTAINER_ENGINE=chosen):
    its result and the engine calls it made."""
    env = {"PATH": str(tool_path(tmp_path, engines))}
    if chosen is not None:
        env["CONTAINER_ENGINE"] = chosen
    proc = build_images("--cpu-only", env=env)
    log = tmp_path / "calls.log"
    return proc, log.read_text().splitlines() if log.exists() else []


def builds(engine: str, *flags: str) -> list[str]:
    return [f"{engine} build {' '.join(flags)}{' ' if flags else ''}-f Dockerfile.server "
            f"--target {target} -t {image} ." for target, image in
            (("server", IMAGES[0]), ("operator", IMAGES[1]))]


IMAGES = subprocess.run([str(SCRIPTS[0]), "--dry-run", "--cpu-only"], capture_output=True,
                        text=True, check=True, timeout=30).stdout.split()


def test_without_any_container_engine_the_build_says_so(tmp_path):
    proc, _ = engine_calls(tmp_path)
    assert proc.returncode == 1
    assert "no container engine: install docker, podman or buildah" in proc.stderr


def test_a_docker_cli_without_a_daemon_is_passed_over_for_podman_in_docker_format(tmp_path):
    proc, calls = engine_calls(tmp_path, docker=1, podman=0)
    assert proc.returncode == 0, proc.stderr
    # podman's default format, OCI, drops HEALTHCHECK: Docker's format keeps it.
    assert calls == ["docker info", "podman info", *builds("podman", "--format", "docker")]
    assert proc.stdout.split() == ["built:", IMAGES[0], "built:", IMAGES[1]]


def test_a_docker_whose_daemon_answers_is_used_first(tmp_path):
    proc, calls = engine_calls(tmp_path, docker=0, podman=0)
    assert proc.returncode == 0 and calls == ["docker info", *builds("docker")]


def test_buildah_alone_builds_in_docker_format(tmp_path):
    proc, calls = engine_calls(tmp_path, buildah=0)
    assert proc.returncode == 0 and calls == ["buildah info", *builds("buildah", "--format", "docker")]


def test_when_no_engine_answers_the_error_names_what_was_tried(tmp_path):
    proc, calls = engine_calls(tmp_path, docker=1, podman=125)
    assert proc.returncode == 1 and calls == ["docker info", "podman info"]
    assert ("no working container engine: 'docker info', 'podman info' failed (a docker CLI "
            "without a running daemon?)") in proc.stderr


def test_container_engine_chooses_without_asking_the_others(tmp_path):
    proc, calls = engine_calls(tmp_path, "podman", docker=0, podman=1)
    assert proc.returncode == 0 and calls == builds("podman", "--format", "docker")
    (tmp_path / "calls.log").unlink()
    proc = build_images("--cpu-only", env={"PATH": str(tmp_path / "bin"),
                                           "CONTAINER_ENGINE": "nerdctl"})
    assert proc.returncode == 1 and "CONTAINER_ENGINE=nerdctl is not installed" in proc.stderr


def test_the_e2e_script_runs_the_examples_the_docs_name():
    text = SCRIPTS[1].read_text()
    assert "scripts/build-images.sh --cpu-only" in text
    for example in ("examples/ctr-cpu.yaml", "examples/byo-fleet/"):
        assert example in text and (ROOT / example).exists()
