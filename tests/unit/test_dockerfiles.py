"""Dockerfile.server and Dockerfile.worker, checked without a Docker engine.

The Dockerfiles are parsed into stages by Docker's own parser (the
`dockerfile` package wraps BuildKit's) and linted by hadolint; the checks are
the ones a build would fail on or a reviewer would ask about: COPY sources in the
build context, entry points declared in pyproject, versions that agree with
pyproject and the chart's image tags, a non-root user and no compilers in the
final images.
"""
from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import shlex
import subprocess
import sys
import tomllib

import dockerfile as docker_parser
import pytest
import yaml
from packaging.requirements import Requirement

from psjob.foundation import metrics

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CHART_VALUES = yaml.safe_load((ROOT / "charts" / "psjob-operator" / "values.yaml").read_text())
# The images users run: {Dockerfile: {target stage: the console script it starts}}.
# The operator has its own target: the CPU image plus the [operator] extra.
TARGETS = {"Dockerfile.server": {"server": "psjob", "operator": "psjob-operator"},
           "Dockerfile.worker": {"worker": "psjob"}}
CPU_IMAGE, OPERATOR_IMAGE, CUDA_IMAGE = subprocess.run(
    [str(ROOT / "scripts" / "build-images.sh"), "--dry-run"], check=True, capture_output=True,
    text=True, timeout=30).stdout.split()
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|clang|make|cmake|build-essential|[\w.+-]+-dev|cuda-nvcc[\w.-]*|nvcc)\b")


@dataclasses.dataclass
class Stage:
    name: str
    base: str
    commands: list[docker_parser.Command]

    def all(self, keyword: str) -> list[docker_parser.Command]:
        return [command for command in self.commands if command.cmd == keyword]

    def runs(self) -> str:
        return " ".join(" ".join(command.value) for command in self.all("RUN"))


def parse(name: str) -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages in order), parsed by Docker's own (BuildKit) parser."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for command in docker_parser.parse_file(str(ROOT / name)):
        if command.cmd == "FROM":
            base = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m.group(1)], command.value[0])
            named = len(command.value) == 3 and command.value[1].upper() == "AS"
            stages.append(Stage(command.value[2] if named else str(len(stages)), base, []))
        elif not stages and command.cmd == "ARG":
            key, _, value = command.value[0].partition("=")
            global_args[key] = value
        else:
            stages[-1].commands.append(command)
    return global_args, stages


def chain(stages: list[Stage], target: str) -> list[Stage]:
    """The target stage and the stages it is built FROM, nearest first."""
    by_name = {stage.name: stage for stage in stages}
    result = [by_name[target]]
    while result[-1].base in by_name:
        result.append(by_name[result[-1].base])
    return result


def nearest(stages: list[Stage], keyword: str) -> docker_parser.Command:
    """The instruction in force in the final image: the last one, nearest stage first."""
    found = [command for stage in stages for command in reversed(stage.all(keyword))]
    assert found, f"no {keyword} in {[stage.name for stage in stages]}"
    return found[0]


def words(command: docker_parser.Command) -> list[str]:
    return list(command.value) if command.json else shlex.split(command.value[0])


def envs(stages: list[Stage]) -> dict[str, str]:
    result: dict[str, str] = {}
    for stage in reversed(stages):  # base first, so nearer stages override
        for command in stage.all("ENV"):
            result.update(zip(command.value[::2], command.value[1::2], strict=True))
    return result


def _glob_regex(pattern: str) -> re.Pattern:
    """Go filepath.Match plus `**` (any number of directories), as Docker reads .dockerignore."""
    regex = ""
    for token in re.split(r"(\*\*/|\*\*|\*|\?)", pattern):
        regex += {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(token, re.escape(token))
    return re.compile(regex)


def dockerignored(path: str) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern also matches a path's parents."""
    ignored = False
    patterns = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines()]
    for pattern in (p for p in patterns if p and not p.startswith("#")):
        negate = pattern.startswith("!")
        regex = _glob_regex(pattern.lstrip("!").rstrip("/"))
        parts = path.split("/")
        if any(regex.fullmatch("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            ignored = not negate
    return ignored


DOCKERFILES = sorted(TARGETS)


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_the_image_is_built_in_several_stages_with_named_targets(dockerfile):
    _, stages = parse(dockerfile)
    assert len(stages) >= 3
    assert set(TARGETS[dockerfile]) <= {stage.name for stage in stages}


def test_the_default_target_of_the_server_dockerfile_is_the_server_image():
    _, stages = parse("Dockerfile.server")
    assert stages[-1].name == "server"


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_every_copy_source_exists_in_the_build_context_and_is_not_dockerignored(dockerfile):
    _, stages = parse(dockerfile)
    names = [stage.name for stage in stages]
    for index, stage in enumerate(stages):
        for command in stage.all("COPY"):
            source_stage = next((f.split("=", 1)[1] for f in command.flags if f.startswith("--from=")), None)
            paths = command.value[:-1]
            if source_stage is not None:
                assert source_stage in names[:index], f"COPY --from={source_stage} is not an earlier stage"
                continue
            for path in paths:
                assert (ROOT / path).exists(), f"{dockerfile}: COPY source {path} does not exist"
                assert not dockerignored(path.rstrip("/")), f"{dockerfile}: COPY source {path} is in .dockerignore"


def test_the_dockerignore_keeps_the_sources_and_drops_build_litter():
    assert not dockerignored("runtime/psjob/foundation/metrics.py")
    assert dockerignored("runtime/psjob/__pycache__/metrics.cpython-311.pyc")
    assert dockerignored(".venv/bin/python") and dockerignored("tests/unit/test_dockerfiles.py")


@pytest.mark.parametrize(("dockerfile", "target"), [(f, t) for f in DOCKERFILES for t in TARGETS[f]])
def test_the_entrypoint_is_a_console_script_declared_in_pyproject(dockerfile, target):
    _, stages = parse(dockerfile)
    command = words(nearest(chain(stages, target), "ENTRYPOINT"))[0]
    assert command == TARGETS[dockerfile][target]
    assert command in PYPROJECT["project"]["scripts"]


@pytest.mark.parametrize(("dockerfile", "target"), [("Dockerfile.server", "server"), ("Dockerfile.worker", "worker")])
def test_the_default_command_is_a_psjob_subcommand_named_for_the_role(dockerfile, target):
    from psjob.cli import COMMANDS  # noqa: PLC0415 — the runtime's CLI table

    _, stages = parse(dockerfile)
    subcommand = words(nearest(chain(stages, target), "CMD"))[0]
    assert subcommand in COMMANDS and subcommand == {"server": "pserver", "worker": "worker"}[target]


@pytest.mark.parametrize("script", ["psjob", "psjob-operator"])
def test_the_console_scripts_point_at_functions_that_exist(script):
    module, _, function = PYPROJECT["project"]["scripts"][script].partition(":")
    package, _, rest = module.partition(".")
    source_root = pathlib.Path(PYPROJECT["tool"]["setuptools"]["package-dir"][package])
    base = ROOT / source_root / rest.replace(".", "/")
    path = base.with_suffix(".py") if rest and base.with_suffix(".py").exists() else base / "__init__.py"
    assert path.exists(), f"{script} points at {module}, but {path.relative_to(ROOT)} does not exist"
    defined = {node.name for node in ast.parse(path.read_text()).body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert function in defined


@pytest.mark.parametrize(("dockerfile", "target"), [(f, t) for f in DOCKERFILES for t in TARGETS[f]])
def test_the_final_image_runs_as_a_numeric_non_root_user_it_creates(dockerfile, target):
    _, stages = parse(dockerfile)
    stage_chain = chain(stages, target)
    uid = nearest(stage_chain, "USER").value[0].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "use a numeric uid so Kubernetes can enforce runAsNonRoot"
    assert f"--uid {uid}" in " ".join(stage.runs() for stage in stage_chain)


def test_the_chart_runs_the_operator_from_the_operator_image_as_the_user_it_creates():
    _, stages = parse("Dockerfile.server")
    user = nearest(chain(stages, "operator"), "USER").value[0]
    pod = CHART_VALUES["operator"]["podSecurityContext"]
    assert user == f"{pod['runAsUser']}:{pod['runAsGroup']}"
    assert "psjob-operator" in PYPROJECT["project"]["scripts"]
    chart = yaml.safe_load((ROOT / "charts" / "psjob-operator" / "Chart.yaml").read_text())
    assert f"{CHART_VALUES['image']['repository']}:{chart['appVersion']}" == CPU_IMAGE
    assert OPERATOR_IMAGE == f"{CPU_IMAGE}-operator"
    templates = ROOT / "charts" / "psjob-operator" / "templates"
    assert '"%s-operator" (include "psjob-operator.image" .)' in (templates / "_helpers.tpl").read_text()
    assert 'image: {{ include "psjob-operator.operatorImage" . }}' in (templates / "deployment.yaml").read_text()


@pytest.mark.parametrize(("dockerfile", "target"), [(f, t) for f in DOCKERFILES for t in TARGETS[f]])
def test_the_image_user_is_the_job_specs_default_user(dockerfile, target):
    # Job pods run as spec.securityContext's runAsUser/runAsGroup (default) and the
    # operator's pods as the chart's: the user the image creates, with a passwd entry.
    from psjob.foundation.jobspec.model import SecuritySpec  # noqa: PLC0415

    _, stages = parse(dockerfile)
    user = nearest(chain(stages, target), "USER").value[0]
    default = SecuritySpec()
    assert user == f"{default.run_as_user}:{default.run_as_group}"
    assert default.fs_group == default.run_as_group


@pytest.mark.parametrize(("dockerfile", "target"), [(f, t) for f in DOCKERFILES for t in TARGETS[f]])
def test_the_final_image_has_no_compilers_or_development_packages(dockerfile, target):
    _, stages = parse(dockerfile)
    stage_chain = chain(stages, target)
    assert "devel" not in stage_chain[-1].base
    for stage in stage_chain:
        assert not BUILD_TOOLS.search(stage.runs()), f"{stage.name}: {stage.runs()}"
    # What comes from build stages is the finished virtual environment only.
    for stage in stage_chain:
        for command in stage.all("COPY"):
            if any(flag.startswith("--from=build") for flag in command.flags):
                source, destination = command.value
                assert source == destination and re.fullmatch(r"/opt/[\w-]+", source), command.original


@pytest.mark.parametrize(("dockerfile", "target"), [(f, t) for f in DOCKERFILES for t in TARGETS[f]])
def test_the_final_image_declares_a_healthcheck_on_the_port_it_serves(dockerfile, target):
    _, stages = parse(dockerfile)
    stage_chain = chain(stages, target)
    healthcheck = nearest(stage_chain, "HEALTHCHECK")
    assert healthcheck.json and healthcheck.value[0] == "CMD"
    exposed = {port for stage in stage_chain for command in stage.all("EXPOSE") for port in command.value}
    if target == "operator":  # kopf's /healthz on --liveness-port, /metrics on --metrics-port
        from psjob_operator.settings import ServeSettings  # noqa: PLC0415

        serve = ServeSettings()
        assert exposed == {str(serve.metrics_port), str(serve.liveness_port)}
        assert f"http://127.0.0.1:{serve.liveness_port}/healthz" in healthcheck.value[-1]
        return
    assert exposed == {str(metrics.DEFAULT_METRICS_PORT)}
    assert envs(stage_chain)["PSJOB_METRICS_PORT"] == str(metrics.DEFAULT_METRICS_PORT)
    assert list(healthcheck.value[1:]) == ["python", "-m", "psjob.foundation.metrics", "healthcheck"]


def test_the_operator_images_default_command_is_one_the_operator_accepts():
    from psjob_operator.__main__ import parse_args  # noqa: PLC0415

    _, stages = parse("Dockerfile.server")
    settings = parse_args(words(nearest(chain(stages, "operator"), "CMD")))
    assert settings.watch.all_namespaces  # the chart's default scope, rbac.scope=cluster


# The Python each Ubuntu release of the CUDA images ships (its python3 package).
UBUNTU_PYTHON = {"ubuntu20.04": "3.8", "ubuntu22.04": "3.10", "ubuntu24.04": "3.12"}


def _python_version(dockerfile: str) -> str:
    global_args, stages = parse(dockerfile)
    if dockerfile == "Dockerfile.server":
        return re.match(r"python:(\d+\.\d+)", global_args["PYTHON_IMAGE"]).group(1)
    installs = " ".join(stage.runs() for stage in stages)
    [version] = set(re.findall(r"apt-get install[^&]*\bpython(\d+\.\d+)\b", installs))
    return version


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_the_python_version_satisfies_pyproject(dockerfile):
    version = _python_version(dockerfile)
    assert Requirement(f"python{PYPROJECT['project']['requires-python']}").specifier.contains(version + ".0")


def test_the_worker_cuda_version_matches_cupy_and_the_cuda_image_tag():
    global_args, _ = parse("Dockerfile.worker")
    cuda = re.match(r"nvidia/cuda:(\d+)\.(\d+)\.\d+-runtime-", global_args["CUDA_IMAGE"])
    assert cuda, "the worker must build on a CUDA runtime (not devel) image"
    major, minor = cuda.groups()
    [cupy] = [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"]["cuda"]
              if r.startswith("cupy")]
    assert cupy.name == f"cupy-cuda{major}x" and str(cupy.specifier) == "==14.2.0"
    assert CUDA_IMAGE.endswith(f"-cuda{major}.{minor}")
    helpers = (ROOT / "charts" / "psjob-operator" / "templates" / "_helpers.tpl").read_text()
    assert f'"%s-cuda{major}.{minor}"' in helpers  # the chart's cudaImage


def test_the_cuda_image_builds_from_registries_alone_with_its_distributions_python():
    # No keyserver (dirmngr ignores http_proxy), no PPA: the CUDA base's own Ubuntu ships
    # the Python the image installs, and every stage starts from CUDA_IMAGE or a stage.
    global_args, stages = parse("Dockerfile.worker")
    release = re.search(r"-(ubuntu\d+\.\d+)$", global_args["CUDA_IMAGE"]).group(1)
    assert _python_version("Dockerfile.worker") == UBUNTU_PYTHON[release]
    names = {stage.name for stage in stages}
    assert all(stage.base in names or stage.base == global_args["CUDA_IMAGE"] for stage in stages)
    runs = " ".join(stage.runs() for stage in stages)
    for word in ("keyserver", "gpg", "ppa", "add-apt-repository", "sources.list", "dirmngr"):
        assert word not in runs.lower(), word
    assert not [c for stage in stages for c in stage.all("COPY") if "keyrings" in c.original]


def test_the_server_image_leaves_out_the_operator_extra_and_the_operator_image_adds_it():
    _, stages = parse("Dockerfile.server")
    runs = next(s for s in stages if s.name == "build").runs()
    # psjob into the venv without extras; the [operator] extra (read from pyproject) into
    # its own prefix, which a .pth file in the venv puts on sys.path where it exists.
    assert "/opt/psjob/bin/pip install . " in runs and '".[operator]"' not in runs
    assert '["optional-dependencies"]["operator"]' in runs
    assert "pip install --prefix /opt/psjob-operator --requirement /tmp/operator.txt" in runs
    assert '"base": "/opt/psjob-operator"' in runs and "psjob-operator.pth" in runs

    def copied(target: str) -> set[str]:
        return {c.value[0] for s in chain(stages, target) for c in s.all("COPY")
                if any(f.startswith("--from=") for f in c.flags)}
    assert copied("server") == {"/opt/psjob"}
    assert copied("operator") == {"/opt/psjob", "/opt/psjob-operator"}
    # The operator image is the server's runtime plus layers: they share the venv's layer.
    by_name = {stage.name: stage for stage in stages}
    assert by_name["operator"].base == by_name["server"].base == "runtime"


def test_the_cuda_image_installs_the_package_with_its_extra():
    _, stages = parse("Dockerfile.worker")
    assert '".[cuda]"' in next(s for s in stages if s.name == "build").runs()


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_the_images_carry_bytecode_for_the_standard_library_and_the_venv(dockerfile):
    # python's official images ship no stdlib .pyc, and the images run with a read-only
    # root and PYTHONDONTWRITEBYTECODE=1: without these every start compiles again.
    _, stages = parse(dockerfile)
    by_name = {stage.name: stage for stage in stages}
    base_runs = by_name["runtime-base"].runs()
    assert re.search(r"python[\d.]* -m compileall .*sysconfig.get_path\(\"stdlib\"\)", base_runs)
    build_runs = by_name["build"].runs()
    compiled = re.search(r"/opt/psjob/bin/python -m compileall -q -j 0 ([/\w -]+)", build_runs)
    assert compiled and "pip uninstall" in build_runs[:compiled.start()]
    wanted = {"/opt/psjob", "/opt/psjob-operator"} if dockerfile == "Dockerfile.server" else {"/opt/psjob"}
    assert set(compiled.group(1).split()) == wanted
    assert envs(chain(stages, next(iter(TARGETS[dockerfile]))))["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_the_build_stage_can_compile_the_c_kernels_before_it_installs_the_package(dockerfile):
    # The extension is optional in pyproject (an install without a compiler goes on, slower):
    # the images must not lose it silently.
    [ext] = PYPROJECT["tool"]["setuptools"]["ext-modules"]
    assert ext["name"] == "psjob.foundation.kernels._native" and ext["optional"] is True
    assert all((ROOT / source).is_file() for source in ext["sources"])
    _, stages = parse(dockerfile)
    runs = next(s for s in stages if s.name == "build").runs()
    installs = re.findall(r"apt-get install[^&]*", runs)
    compiler_at = min(runs.index(i) for i in installs if re.search(r"\bgcc\b", i) and "libc6-dev" in i)
    assert compiler_at < runs.index("pip install")
    if dockerfile == "Dockerfile.worker":  # Ubuntu's python3.X ships its headers apart
        assert any(f"python{_python_version(dockerfile)}-dev" in i for i in installs)


def _constraints(dockerfile: str) -> dict[str, str]:
    _, stages = parse(dockerfile)
    runs = " ".join(stage.runs() for stage in stages)
    pins = re.findall(r"'([\w.-]+)==([\w.]+)'", runs)
    return {name.lower(): version for name, version in pins}


def test_both_images_pin_the_dependencies_pyproject_leaves_as_ranges_within_those_ranges():
    server, worker = _constraints("Dockerfile.server"), _constraints("Dockerfile.worker")
    assert server == worker
    for requirement in map(Requirement, PYPROJECT["project"]["dependencies"]):
        if str(requirement.specifier).startswith("=="):
            continue  # already pinned by pyproject itself
        name = requirement.name.lower()
        assert name in server, f"{name} is not pinned in the images"
        assert requirement.specifier.contains(server[name]), f"{name}=={server[name]} outside {requirement.specifier}"


def test_hadolint_finds_nothing_to_fix_in_either_dockerfile():
    hadolint = pathlib.Path(sys.executable).with_name("hadolint")
    proc = subprocess.run([str(hadolint), "--no-color", "--failure-threshold", "info", *DOCKERFILES],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
