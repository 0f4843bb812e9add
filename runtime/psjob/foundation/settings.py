"""Settings: the environment contract of a psjob process, parsed in one place.

Every PSJOB_*/PADDLE_* variable a component reads (besides the role's identity, which
psjob.foundation.role_env reads) — RPC, TLS and the job's token, retries, checkpoints,
metrics, the pserver's and heter trainer's serving options, the data plane, S3 (the AWS_*
variables every AWS tool reads) — is parsed and checked here, into one frozen object per
concern. A process builds one `Settings` where it starts (the container entrypoints and
the Fleet's role maker through RoleEnv, `process_settings()` for a plain script) and
passes it down; no other module parses the environment.

Each concern is parsed the first time it is asked for and then kept: a process fails
only on the settings it uses (a trainer is not stopped by a pserver-only typo), and a
bad value fails with a SettingsError naming the variable.

Stdlib only, like psjob.foundation.roles.
"""
from __future__ import annotations

import functools
import ipaddress
import os
import types
from collections.abc import Mapping
from dataclasses import dataclass

from psjob.foundation.roles.names import DEFAULT_METRICS_PORT, STAY_UNTIL_STOPPED_ENV, Mode

# -- the variables -----------------------------------------------------------------------
# Identity variables are named in psjob.foundation.roles (rendered there); these are the
# ones a job's processes read besides, each parsed below.
TRAINER_ID = "PADDLE_TRAINER_ID"
TRAINERS = "PADDLE_TRAINERS"
TRAINERS_NUM = "PADDLE_TRAINERS_NUM"
PSERVER_ENDPOINTS = "PADDLE_PSERVER_ENDPOINTS"
HETER_ENDPOINTS = "PADDLE_HETER_TRAINER_IP_PORT_LIST"
CURRENT_IP = "PADDLE_CURRENT_IP"
CURRENT_ENDPOINT = "PSJOB_CURRENT_ENDPOINT"
MODE = "PSJOB_MODE"
TOPOLOGY_FILE = "PSJOB_TOPOLOGY_FILE"
DATA_STREAM = "PSJOB_DATA_STREAM"
DEVICE = "PSJOB_DEVICE"

AUTH_TOKEN_FILE = "PSJOB_AUTH_TOKEN_FILE"
TLS_CERT_FILE, TLS_KEY_FILE, TLS_CA_FILE = "PSJOB_TLS_CERT_FILE", "PSJOB_TLS_KEY_FILE", "PSJOB_TLS_CA_FILE"
TLS_SERVER_NAME = "PSJOB_TLS_SERVER_NAME"
RPC_DEADLINE_S = "PSJOB_RPC_DEADLINE_S"
RPC_BARRIER_DEADLINE_S = "PSJOB_RPC_BARRIER_DEADLINE_S"
RPC_MAX_ATTEMPTS = "PSJOB_RPC_MAX_ATTEMPTS"
PSERVER_RECOVERY_S = "PSJOB_PSERVER_RECOVERY_S"
WAIT_SERVER_TIMEOUT = "PSJOB_WAIT_SERVER_TIMEOUT"
DATA_PLANE = "PSJOB_DATA_PLANE"
MALLOC_TUNING = "PSJOB_MALLOC_TUNING"
COLLECTIVE_TIMEOUT_S = "PSJOB_COLLECTIVE_TIMEOUT_S"

CHECKPOINT_DIR = "PSJOB_CHECKPOINT_DIR"
CHECKPOINT_INTERVAL_STEPS = "PSJOB_CHECKPOINT_INTERVAL_STEPS"
CHECKPOINT_INTERVAL_SECONDS = "PSJOB_CHECKPOINT_INTERVAL_SECONDS"
CHECKPOINT_KEEP = "PSJOB_CHECKPOINT_KEEP"
CHECKPOINT_INCREMENTAL = "PSJOB_CHECKPOINT_INCREMENTAL"
CHECKPOINT_BASE_EVERY = "PSJOB_CHECKPOINT_BASE_EVERY"
CHECKPOINT_FREEZE_LEASE_S = "PSJOB_CHECKPOINT_FREEZE_LEASE_S"

METRICS_PORT = "PSJOB_METRICS_PORT"

BIND_ALL = "PSJOB_BIND_ALL"
PSERVER_DEVICE = "PSJOB_PSERVER_DEVICE"
RPC_MAX_MESSAGE_BYTES = "PSJOB_RPC_MAX_MESSAGE_BYTES"
RPC_MAX_IN_FLIGHT_BYTES = "PSJOB_RPC_MAX_IN_FLIGHT_BYTES"
RPC_MAX_PREFETCH_IDS = "PSJOB_RPC_MAX_PREFETCH_IDS"
RPC_READ_TIMEOUT_S = "PSJOB_RPC_READ_TIMEOUT_S"
SAVE_ROOTS = "PSJOB_SAVE_ROOTS"
RESTORE_DIGEST = "PSJOB_RESTORE_DIGEST"

EMBEDDING_FUSION = "PSJOB_EMBEDDING_FUSION"
NATIVE_KERNELS = "PSJOB_NATIVE_KERNELS"

# -- defaults ----------------------------------------------------------------------------
MAX_MESSAGE_BYTES = 1 << 30       # gRPC's per-message cap psjob sets on both sides
WAIT_SERVER_TIMEOUT_S = 300.0     # how long a client waits for its servers to serve
# A training process retries a pserver at least this long after a first failure: a
# restarted pserver pod (image pull, restore) comes back within it.
RECOVERY_S = 600.0
COLLECTIVE_TIMEOUT_DEFAULT_S = 60.0  # how long a collective trainer waits on a silent peer
# How long a checkpoint freeze holds without trainer 0 renewing it, and the longest a
# pserver grants (docs/user/checkpoints.md).
DEFAULT_FREEZE_LEASE_S = 10.0
MAX_FREEZE_LEASE_S = 600.0
DEFAULT_BASE_EVERY = 10
DEFAULT_CHECKPOINT_KEEP = 3


class SettingsError(ValueError):
    """A setting does not parse or contradicts another; the message names the variable."""


class TlsConfigError(RuntimeError):
    """A TLS setting is incomplete or a certificate file cannot be read (names the variable)."""


def process_environment() -> Mapping[str, str]:
    """This process's environment, read-only: the PSJOB_*/PADDLE_* settings (and the
    AWS_*, CPU_NUM, ... of the libraries psjob stands in for). A process that changes
    os.environ (the container entrypoints) is seen changed by the next call."""
    return types.MappingProxyType(dict(os.environ))


# -- one object per concern --------------------------------------------------------------

@dataclass(frozen=True)
class TlsFiles:
    """PSJOB_TLS_*: the certificate files of the RPC's TLS (psjob.cluster.rpc.tls)."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    server_name: str = ""   # overrides the host name checked against the certificate


@dataclass(frozen=True)
class RetryPolicy:
    """How an RPC client retries (PSJOB_RPC_DEADLINE_S, _BARRIER_DEADLINE_S, _MAX_ATTEMPTS,
    PSJOB_PSERVER_RECOVERY_S)."""

    deadline_s: float = 60.0        # per attempt
    max_attempts: int = 8
    initial_backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    # Barriers wait for the slowest trainer; give them a longer deadline.
    barrier_deadline_s: float = 600.0
    # Retry at least this long after a first failure. 0 for a policy built in code (a probe
    # wants a quick answer); a training process (its Settings) gets RECOVERY_S by default.
    recovery_s: float = 0.0


@dataclass(frozen=True)
class RpcSettings:
    """The RPC's settings: the job's token file, TLS, retries, waits, the data plane."""

    auth_token_file: str = ""
    tls: TlsFiles | None = None              # None: plaintext
    retry: RetryPolicy = RetryPolicy(recovery_s=RECOVERY_S)
    wait_server_timeout_s: float = WAIT_SERVER_TIMEOUT_S
    data_plane: bool = True                  # PSJOB_DATA_PLANE=tcp (default) vs grpc
    malloc_tuning: bool = True               # PSJOB_MALLOC_TUNING=0 leaves glibc's malloc alone
    collective_timeout_s: float = COLLECTIVE_TIMEOUT_DEFAULT_S


@dataclass(frozen=True)
class CheckpointSettings:
    """PSJOB_CHECKPOINT_*: where and how often checkpoints are written."""

    root: str = ""                 # PSJOB_CHECKPOINT_DIR: a directory or s3://BUCKET/PREFIX; "" = none
    interval_steps: int = 0
    interval_seconds: float = 0.0
    keep: int = DEFAULT_CHECKPOINT_KEEP
    incremental: bool = False      # deltas between bases
    base_every: int = DEFAULT_BASE_EVERY
    freeze_lease_s: float = DEFAULT_FREEZE_LEASE_S
    topology_file: str = ""        # PSJOB_TOPOLOGY_FILE: watched by trainer 0 for a resize


@dataclass(frozen=True)
class MetricsSettings:
    """PSJOB_METRICS_PORT and the address /metrics listens on."""

    enabled: bool = False          # PSJOB_METRICS_PORT set: serve /metrics
    port: int = DEFAULT_METRICS_PORT  # 0: any free port (local runs)
    host: str = "0.0.0.0"          # loopback when this process's own address is loopback


@dataclass(frozen=True)
class ServeSettings:
    """A pserver's or heter trainer's serving settings; None/0 = the server's own default."""

    bind_all_interfaces: bool = False   # PSJOB_BIND_ALL=1: 0.0.0.0:<port> (pods)
    max_message_bytes: int = 0
    read_timeout_s: float | None = None
    max_in_flight_bytes: int = 0
    max_prefetch_ids: int | None = None
    save_roots: tuple[str, ...] = ()    # PSJOB_SAVE_ROOTS (comma-separated: a URI has colons)
    device: str = "cpu"                 # PSJOB_PSERVER_DEVICE, else PSJOB_DEVICE
    # PSJOB_STAY_UNTIL_STOPPED=1: after its trainers completed, stay up until SIGTERM. StatefulSet
    # pods do (resolve_identity sets it: restartPolicy Always would restart a server that exits);
    # local runs let servers exit with the job.
    stay_until_stopped: bool = False
    restore_digest: bool = False        # PSJOB_RESTORE_DIGEST=1


@dataclass(frozen=True)
class ProcessSettings:
    """What a trainer's script-level code needs of its place in the job (Fluid scripts run
    without a RoleEnv read these as Paddle does): its id, the trainer count, the servers."""

    trainer_id: int = 0
    trainers: int = 1                   # PADDLE_TRAINERS_NUM, or Fluid's PADDLE_TRAINERS
    trainers_num: int = 0               # PADDLE_TRAINERS_NUM alone (Paddle 2.x's ParallelEnv); 0 unset
    pserver_endpoints: tuple[str, ...] = ()
    heter_endpoints: tuple[str, ...] = ()
    mode: Mode = Mode.SYNC
    data_stream: str = ""               # PSJOB_DATA_STREAM: the job's spec.data.stream (JSON)
    selected_gpus: str = "0"            # FLAGS_selected_gpus, as Paddle's launcher sets it
    cpu_num: int = 1                    # CPU_NUM: Paddle's CPU places (static.cpu_places)


@dataclass(frozen=True)
class Switches:
    """Process-wide switches of the engine (each "0" turns its feature off)."""

    embedding_fusion: bool = True
    native_kernels: bool = True


@dataclass(frozen=True)
class S3Settings:
    """The AWS_* variables psjob's S3 client reads, as every AWS tool reads them."""

    endpoint: str = ""                  # "" for AWS itself
    region: str = "us-east-1"
    access_key: str = ""
    secret_key: str = ""
    session_token: str = ""
    ca_bundle: str = ""
    role_arn: str = ""
    web_identity_token_file: str = ""
    sts_endpoint: str = ""
    role_session_name: str = ""


class Settings:
    """A process's settings, one frozen object per concern, each parsed on first use.

    Built once where a process starts (`RoleEnv.settings`, `process_settings()`) from the
    environment it started with, and passed down; `environ` is that environment (read-only),
    for what a process hands on to the processes it starts."""

    def __init__(self, environ: Mapping[str, str] | None = None):
        self.environ: Mapping[str, str] = types.MappingProxyType(dict(environ or {}))

    def __repr__(self) -> str:
        return f"Settings({len(self.environ)} variables)"

    @functools.cached_property
    def rpc(self) -> RpcSettings:
        return _rpc(self.environ)

    @functools.cached_property
    def checkpoint(self) -> CheckpointSettings:
        return _checkpoint(self.environ)

    @functools.cached_property
    def metrics(self) -> MetricsSettings:
        return _metrics(self.environ)

    @functools.cached_property
    def serve(self) -> ServeSettings:
        return _serve(self.environ)

    @functools.cached_property
    def process(self) -> ProcessSettings:
        return _process(self.environ)

    @functools.cached_property
    def switches(self) -> Switches:
        return Switches(
            embedding_fusion=_switch(self.environ, EMBEDDING_FUSION, "1 (fuse embedding lookups and pools where a "
                                     "program has the shape) or 0 (run every program op by op)"),
            native_kernels=_switch(self.environ, NATIVE_KERNELS, "1 (use the C kernels where built) or 0"))

    @functools.cached_property
    def s3(self) -> S3Settings:
        return _s3(self.environ)


def process_settings() -> Settings:
    """The settings of this process's environment as it is now: for an entry point that
    has no RoleEnv (a plain Fluid script, the `psjob` commands) to build once and pass down."""
    return Settings(process_environment())


# -- parsing -----------------------------------------------------------------------------

def _raw(env: Mapping[str, str], name: str) -> str:
    return (env.get(name, "") or "").strip()


def _number(env: Mapping[str, str], name: str, kind, default, *, positive: bool = True, zero_ok: bool = False):
    """A number from `name` (`default` when unset); with `positive`, > 0 (or 0 when `zero_ok`)."""
    raw = _raw(env, name)
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a {kind.__name__}") from None
    if kind is float and not value == value:  # nan
        raise SettingsError(f"{name}={raw!r}: not a number")
    if positive and not (value > 0 or (zero_ok and value == 0)):
        raise SettingsError(f"{name}={raw!r}: must be positive")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """An on/off switch: 1/true/yes/on or 0/false/no/off (`default` when unset)."""
    raw = _raw(env, name).lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={raw!r}: expected 1 or 0 (true or false)")


def _switch(env: Mapping[str, str], name: str, expected: str) -> bool:
    """A "1"/"0" switch, on when unset."""
    value = (env.get(name, "") or "1").strip()
    if value not in ("0", "1"):
        raise SettingsError(f"{name}={value!r}: expected {expected}")
    return value == "1"


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(e.strip() for e in (env.get(name, "") or "").split(",") if e.strip())


def tls_files(env: Mapping[str, str]) -> TlsFiles | None:
    """PSJOB_TLS_*, or None when none of the file variables is set (plaintext)."""
    files = TlsFiles(cert_file=_raw(env, TLS_CERT_FILE), key_file=_raw(env, TLS_KEY_FILE),
                     ca_file=_raw(env, TLS_CA_FILE), server_name=_raw(env, TLS_SERVER_NAME))
    if not (files.cert_file or files.key_file or files.ca_file):
        return None
    if bool(files.cert_file) != bool(files.key_file):
        missing = TLS_KEY_FILE if files.cert_file else TLS_CERT_FILE
        raise TlsConfigError(f"{TLS_CERT_FILE} and {TLS_KEY_FILE} go together: set {missing} too (or neither)")
    return files


def _retry(env: Mapping[str, str]) -> RetryPolicy:
    base = RetryPolicy()
    return RetryPolicy(
        deadline_s=_number(env, RPC_DEADLINE_S, float, base.deadline_s),
        barrier_deadline_s=_number(env, RPC_BARRIER_DEADLINE_S, float, base.barrier_deadline_s),
        max_attempts=_number(env, RPC_MAX_ATTEMPTS, int, base.max_attempts),
        # 0: the attempts alone bound the retries
        recovery_s=_number(env, PSERVER_RECOVERY_S, float, RECOVERY_S, zero_ok=True))


def _rpc(env: Mapping[str, str]) -> RpcSettings:
    plane = (_raw(env, DATA_PLANE) or "tcp").lower()
    if plane not in ("tcp", "grpc"):
        raise SettingsError(f"{DATA_PLANE}={plane!r}: expected 'tcp' (framed calls over their own "
                            f"connection) or 'grpc' (every call over gRPC)")
    return RpcSettings(auth_token_file=_raw(env, AUTH_TOKEN_FILE), tls=tls_files(env), retry=_retry(env),
                       wait_server_timeout_s=_number(env, WAIT_SERVER_TIMEOUT, float, WAIT_SERVER_TIMEOUT_S,
                                                     zero_ok=True),
                       data_plane=plane == "tcp", malloc_tuning=_raw(env, MALLOC_TUNING) != "0",
                       collective_timeout_s=_number(env, COLLECTIVE_TIMEOUT_S, float,
                                                    COLLECTIVE_TIMEOUT_DEFAULT_S))


def _freeze_lease(env: Mapping[str, str]) -> float:
    raw = _raw(env, CHECKPOINT_FREEZE_LEASE_S)
    if not raw:
        return DEFAULT_FREEZE_LEASE_S
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{CHECKPOINT_FREEZE_LEASE_S}={raw!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):  # also refuses nan
        raise SettingsError(f"{CHECKPOINT_FREEZE_LEASE_S}={raw!r}: the freeze lease must be a positive "
                            "number of seconds")
    if value > MAX_FREEZE_LEASE_S:
        raise SettingsError(f"{CHECKPOINT_FREEZE_LEASE_S}={raw!r}: at most {MAX_FREEZE_LEASE_S:.0f} seconds "
                            "(a pserver grants no longer freeze)")
    return value


def _checkpoint(env: Mapping[str, str]) -> CheckpointSettings:
    def count(name, kind, default):
        raw = _raw(env, name)
        try:
            return kind(raw) if raw else default
        except ValueError:
            raise SettingsError(f"{name}={raw!r} is not a number") from None
    base_every = _raw(env, CHECKPOINT_BASE_EVERY)
    if base_every:
        try:
            every = int(base_every)
        except ValueError:
            raise SettingsError(f"{CHECKPOINT_BASE_EVERY}={base_every!r} is not an integer") from None
        if every < 1:
            raise SettingsError(f"{CHECKPOINT_BASE_EVERY}={base_every!r}: must be at least 1 (1 writes every "
                                "checkpoint whole)")
    else:
        every = DEFAULT_BASE_EVERY
    keep = count(CHECKPOINT_KEEP, int, DEFAULT_CHECKPOINT_KEEP)
    return CheckpointSettings(root=env.get(CHECKPOINT_DIR, "") or "",
                              interval_steps=count(CHECKPOINT_INTERVAL_STEPS, int, 0),
                              interval_seconds=count(CHECKPOINT_INTERVAL_SECONDS, float, 0.0),
                              keep=keep if keep > 0 else DEFAULT_CHECKPOINT_KEEP,
                              incremental=_flag(env, CHECKPOINT_INCREMENTAL, False),
                              base_every=every, freeze_lease_s=_freeze_lease(env),
                              topology_file=env.get(TOPOLOGY_FILE, "") or "")


def metrics_host(env: Mapping[str, str]) -> str:
    """Listen on loopback when this process's own address is loopback (`psjob run`,
    `psjob launch`: nothing outside this machine scrapes it), else on every interface
    (pods: Prometheus scrapes the pod IP). The address comes from PADDLE_CURRENT_IP,
    else PSJOB_CURRENT_ENDPOINT's host (pservers), else POD_IP."""
    endpoint_host = (env.get(CURRENT_ENDPOINT, "") or "").rpartition(":")[0].strip("[]")
    ip = env.get(CURRENT_IP) or endpoint_host or env.get("POD_IP", "")
    try:
        if ip and ipaddress.ip_address(ip).is_loopback:
            return "127.0.0.1"
    except ValueError:
        pass
    return "0.0.0.0"


def _metrics(env: Mapping[str, str]) -> MetricsSettings:
    raw = env.get(METRICS_PORT, "")
    port = DEFAULT_METRICS_PORT
    if raw not in ("", None):
        try:
            port = int(raw)
        except ValueError:
            raise SettingsError(f"{METRICS_PORT} must be a port number, got {raw!r}") from None
        if not 0 <= port <= 65535:
            raise SettingsError(f"{METRICS_PORT} must be in 0..65535 (0 = any free port), got {port}")
    return MetricsSettings(enabled=METRICS_PORT in env, port=port, host=metrics_host(env))


def parse_device(text: str) -> tuple[str, int]:
    """'cpu' → ('cpu', 0); 'gpu' → ('gpu', 0); 'gpu:N' → ('gpu', N). Anything else is an error."""
    value = (text or "cpu").strip().lower()
    if value == "cpu":
        return "cpu", 0
    kind, sep, index = value.partition(":")
    if kind == "gpu" and (not sep or (index.isdigit() and len(index) <= 3)):
        return "gpu", int(index) if sep else 0
    raise ValueError(f"pserver device must be cpu, gpu or gpu:N (N a device index), got {text!r}")


def _device(env: Mapping[str, str]) -> str:
    """PSJOB_PSERVER_DEVICE (a pserver-only override, e.g. for `psjob launch`), else the
    role's PSJOB_DEVICE (from spec.pserver.device); checked so a typo fails at start."""
    name = PSERVER_DEVICE if env.get(PSERVER_DEVICE) else DEVICE
    value = env.get(name, "") or "cpu"
    try:
        parse_device(value)
    except ValueError as exc:
        raise SettingsError(f"{name}: {exc}") from None
    return value


def _serve(env: Mapping[str, str]) -> ServeSettings:
    max_message = _number(env, RPC_MAX_MESSAGE_BYTES, int, 0, zero_ok=True)
    in_flight = _number(env, RPC_MAX_IN_FLIGHT_BYTES, int, 0)
    if in_flight and in_flight < (max_message or MAX_MESSAGE_BYTES):
        raise SettingsError(f"{RPC_MAX_IN_FLIGHT_BYTES}={in_flight} is below the message cap "
                            f"{max_message or MAX_MESSAGE_BYTES} ({RPC_MAX_MESSAGE_BYTES}): one request would "
                            f"never fit")
    return ServeSettings(bind_all_interfaces=_raw(env, BIND_ALL) == "1", max_message_bytes=max_message,
                         read_timeout_s=_number(env, RPC_READ_TIMEOUT_S, float, None),
                         max_in_flight_bytes=in_flight,
                         max_prefetch_ids=_number(env, RPC_MAX_PREFETCH_IDS, int, None),
                         save_roots=_list(env, SAVE_ROOTS), device=_device(env),
                         stay_until_stopped=_raw(env, STAY_UNTIL_STOPPED_ENV) == "1",
                         restore_digest=_raw(env, RESTORE_DIGEST) == "1")


def parse_mode(text: str | Mode, name: str = MODE) -> Mode:
    """A training mode from its name ("" = sync); a bad one names `name` and the modes."""
    if isinstance(text, Mode):
        return text
    try:
        return Mode(text or Mode.SYNC.value)
    except ValueError:
        raise SettingsError(f"{name} must be one of {', '.join(m.value for m in Mode)}, got {text!r}") from None


def _process(env: Mapping[str, str]) -> ProcessSettings:
    trainer_id = _number(env, TRAINER_ID, int, 0, positive=False)
    trainers_num = _number(env, TRAINERS_NUM, int, 0, positive=False)
    trainers = trainers_num or _number(env, TRAINERS, int, 0, positive=False) or 1
    return ProcessSettings(trainer_id=trainer_id, trainers=trainers, trainers_num=trainers_num,
                           pserver_endpoints=_list(env, PSERVER_ENDPOINTS),
                           heter_endpoints=_list(env, HETER_ENDPOINTS),
                           mode=parse_mode(_raw(env, MODE)), data_stream=_raw(env, DATA_STREAM),
                           selected_gpus=_raw(env, "FLAGS_selected_gpus") or "0",
                           cpu_num=_number(env, "CPU_NUM", int, 1))


def _s3(env: Mapping[str, str]) -> S3Settings:
    import urllib.parse
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").rstrip("/")
    if endpoint and urllib.parse.urlsplit(endpoint).scheme not in ("http", "https"):
        raise SettingsError(f"AWS_ENDPOINT_URL={endpoint!r} is not an http:// or https:// URL")
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    sts = env.get("AWS_ENDPOINT_URL_STS") or env.get("AWS_ENDPOINT_URL") or f"https://sts.{region}.amazonaws.com"
    return S3Settings(endpoint=endpoint, region=region,
                      access_key=env.get("AWS_ACCESS_KEY_ID", ""), secret_key=env.get("AWS_SECRET_ACCESS_KEY", ""),
                      session_token=env.get("AWS_SESSION_TOKEN", ""), ca_bundle=env.get("AWS_CA_BUNDLE", ""),
                      role_arn=env.get("AWS_ROLE_ARN", ""),
                      web_identity_token_file=env.get("AWS_WEB_IDENTITY_TOKEN_FILE", ""),
                      sts_endpoint=sts.rstrip("/"),
                      role_session_name=env.get("AWS_ROLE_SESSION_NAME", "") or f"psjob-{os.getpid()}")
