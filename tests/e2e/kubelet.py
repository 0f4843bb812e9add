"""A kubelet, a StatefulSet controller and a Job controller for the emulated API.

The operator tests stop at the objects the operator writes. This harness runs
them: it reads the StatefulSets and Jobs from the kmock API emulator, creates
their Pod objects there, and runs every pod's containers as local processes
exactly as the pod spec says, writing the pod status back so the operator
sees what a cluster would show it. It executes whatever pod spec it is given;
nothing in it knows about psjob.

Real
- Each pod is a sandbox of its own Linux namespaces (mount, network, UTS),
  held open by a waiting process as the pause container holds them: its
  hostname is the pod's (spec.hostname or the pod name), its network namespace
  has an eth0 with the pod IP (10.244.0.x) on a bridge in a private "node"
  network namespace, so fixed ports (6174, 9100, ...) never collide with each
  other or with the host's.
- Init containers run one by one to success, then the containers together.
  Each container's root filesystem is an overlay of this machine's / (the
  "image": whatever `image` says, this checkout's virtual environment runs),
  remounted read-only when securityContext.readOnlyRootFilesystem is set;
  volumes are bind-mounted at their mountPath (readOnly, subPath honoured),
  shared by the pod's containers: emptyDir (a fresh directory), secret and
  configMap (files written from the objects in the API, `items`,
  `defaultMode`), persistentVolumeClaim (one directory per claim, shared by
  every pod that mounts it, like a ReadWriteMany volume); fsGroup owns them.
  /etc/hosts is the kubelet's: the pod's own name, plus the DNS names of every
  pod behind a headless Service (`<pod>.<service>.<ns>.svc[.cluster.local]`),
  since there is no cluster DNS; so is /etc/resolv.conf, whose nameserver is
  the pod's own loopback, where nothing listens: a name not in /etc/hosts
  fails at once, as an NXDOMAIN from cluster DNS would, instead of waiting out
  this machine's nameserver, which the pod network cannot reach (gRPC's c-ares
  resolver asks DNS before /etc/hosts: 14 s per new channel).
- The process: command/args with $(VAR) expansion, env and envFrom (values,
  the downward API's fieldRef and resourceFieldRef, secretKeyRef,
  configMapKeyRef), workingDir, run as securityContext.runAsUser/runAsGroup
  with fsGroup and supplementalGroups, the runtime's default capabilities less
  `drop` plus `add`, no_new_privs (setpriv); runAsNonRoot with uid 0 refuses
  to start. The Job controller's JOB_COMPLETION_INDEX and the
  KUBERNETES_SERVICE_* variables every pod gets. Output goes to
  <workdir>/logs/<pod>.log (<pod>_<container>.log for several containers).
- Probes: startupProbe, then readinessProbe and livenessProbe, at their
  periods, timeouts and thresholds: tcpSocket, grpc and httpGet from the node
  network namespace (probe_agent.py), exec inside the container.
  A failed liveness or startup probe kills the container.
- Restarts: restartPolicy Always/OnFailure restarts a container in the same
  sandbox (same IP, same volumes) with restartCount and lastState; Never ends
  the pod Succeeded or Failed by exit codes. Deleting a pod in the API stops
  its processes (SIGTERM, terminationGracePeriodSeconds, SIGKILL). Sandboxes
  and containers die with the test process, however it ends.
- Node loss (`lose_pod`): the pod's processes are SIGKILLed with no grace
  period and its status is no longer written, until `force_delete` removes
  the object (what the node lifecycle controller does after
  tolerationSeconds, or `kubectl delete pod --force`).

Emulated, minimally
- StatefulSet: pods `<sts>-<i>` for i < replicas (all at once, as
  podManagementPolicy Parallel), hostname/subdomain set, a Failed pod replaced,
  a deleted one re-created (same name, a new uid), status
  replicas/readyReplicas; its pods keep their IP (and MAC, so that peers' ARP
  caches stay right) when re-created (a real cluster updates DNS instead), so
  a re-created pod starts once the deleted one's processes and sandbox are gone. Indexed Job: one pod per unfinished index,
  with the completion index annotation and label, hostname <job>-<index> (and, with
  the template's subdomain behind a headless Service, a stable IP and DNS name), parallelism, suspend,
  backoffLimit and podFailurePolicy (onExitCodes, onPodConditions), status
  active/succeeded/failed and Complete/Failed conditions. PersistentVolumeClaims
  are bound at once. No scheduler, no resource enforcement (limits are only
  read, for resourceFieldRef), no image pulls or ENTRYPOINT (`command` is
  required), no sidecar init containers, no PID namespace, restart back-off of
  1 s instead of 10 s doubling, no cluster DNS (see /etc/hosts above), no
  Service virtual IPs, no NetworkPolicy.
"""
from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import decimal
import itertools
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

from opkit_cluster import TestClient

HERE = pathlib.Path(__file__).resolve().parent
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
SUBNET = "10.244.0"
NODE_IP = f"{SUBNET}.1"
CLUSTER_DOMAIN = "cluster.local"
RESTART_BACKOFF_S = 1.0
RESYNC_S = 0.2
# No cluster DNS: lookups go to the pod's loopback and are refused at once (module doc).
RESOLV_CONF = "nameserver 127.0.0.1\n"
# What holds a namespace open: a shell waiting on its stdin, a pipe from this process, so
# that it goes away with the test process however that ends.
HOLD = "read _"
# Every pod gets the API server's Service variables, enableServiceLinks or not.
KUBERNETES_SERVICE_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
                          "KUBERNETES_SERVICE_PORT_HTTPS": "443",
                          "KUBERNETES_PORT": "tcp://10.96.0.1:443"}
IMAGE_PATH = f"{pathlib.Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:" \
             "/usr/bin:/sbin:/bin"
# The "image": this checkout (editable install) and its venv. A pod volume mounted over
# one of their parents (an emptyDir at /tmp, with the checkout under /tmp) would hide
# them, so each container's root binds them back after its volumes.
IMAGE_DIRS = sorted({str(pathlib.Path(__file__).resolve().parents[2]), sys.prefix})
TOOLS = {name: shutil.which(name) or name
         for name in ("unshare", "nsenter", "ip", "mount", "chroot", "setpriv", "env")}


def missing_requirements() -> str:
    """Why pods cannot run here ("" when they can): root, namespaces, the tools."""
    if os.geteuid() != 0:
        return "the kubelet emulator needs root (mount and network namespaces)"
    absent = [name for name, path in TOOLS.items() if shutil.which(path) is None]
    if absent:
        return f"the kubelet emulator needs {', '.join(absent)}"
    probe = subprocess.run([TOOLS["unshare"], "--mount", "--net", "--uts", "--", "true"],
                           capture_output=True, text=True)
    return f"unshare fails here: {probe.stderr.strip()}" if probe.returncode else ""


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodConfigError(Exception):
    """The pod cannot start as specified (the kubelet's CreateContainerConfigError)."""


# --- quantities and the downward API ---------------------------------------------------

_SUFFIXES = {"": 1, "m": decimal.Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9,
             "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: str | int | float) -> decimal.Decimal:
    match = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(text))
    if not match or match.group(2) not in _SUFFIXES:
        raise PodConfigError(f"quantity {text!r} is not a Kubernetes quantity")
    return decimal.Decimal(match.group(1)) * _SUFFIXES[match.group(2)]


def resource_field(pod: dict, container: dict, ref: dict) -> str:
    """resourceFieldRef: the limit or request, divided and rounded up; a missing limit
    reads as the node's allocatable (this machine's CPUs and memory), as on a node."""
    name = ref.get("containerName") or container["name"]
    target = next((c for c in pod["spec"]["containers"] if c["name"] == name), None)
    if target is None:
        raise PodConfigError(f"resourceFieldRef names container {name!r}, which the pod lacks")
    kind, _, resource = ref["resource"].partition(".")
    value = ((target.get("resources") or {}).get(kind) or {}).get(resource)
    if value is None and kind == "requests":
        value = ((target.get("resources") or {}).get("limits") or {}).get(resource)
    if value is None:
        value = {"cpu": os.cpu_count() or 1,
                 "memory": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                 }.get(resource, 0)
    result = quantity(value) / quantity(ref.get("divisor") or "1")
    return str(int(result.to_integral_value(rounding=decimal.ROUND_CEILING)))


def field_ref(pod: dict, path: str) -> str:
    meta, status = pod["metadata"], pod.get("status") or {}
    simple = {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", ""),
              "metadata.uid": meta.get("uid", ""), "spec.nodeName": pod["spec"].get("nodeName", ""),
              "spec.serviceAccountName": pod["spec"].get("serviceAccountName", "default"),
              "status.hostIP": status.get("hostIP", ""), "status.podIP": status.get("podIP", ""),
              "status.podIPs": status.get("podIP", "")}
    if path in simple:
        return simple[path]
    match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if match:
        return (meta.get(match.group(1)) or {}).get(match.group(2), "")
    raise PodConfigError(f"fieldRef {path!r} is not a field the downward API offers")


def expand(text: str, env: dict[str, str]) -> str:
    """$(VAR) references, as Kubernetes expands them in env values, command and args."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


# --- the node's network ----------------------------------------------------------------

def _wait_line(proc: subprocess.Popen, what: str) -> str:
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"{what} exited before it was ready: {proc.stderr.read()}")
    return line


class NodeNetwork:
    """A private network namespace with a bridge; every pod gets a veth on it."""

    def __init__(self):
        script = (f"ip link set lo up && ip link add br0 type bridge && "
                  f"ip addr add {NODE_IP}/24 dev br0 && ip link set br0 up && echo up && "
                  f"{HOLD}")
        self.holder = subprocess.Popen([TOOLS["unshare"], "--net", "--", "sh", "-c", script],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
        _wait_line(self.holder, "the node network namespace")
        self._hosts = itertools.count(2)
        self._veths = itertools.count()
        self._reserved: dict[str, str] = {}
        self._lock = threading.RLock()
        self._attached: set[str] = set()  # IPs a live sandbox holds
        self._freed = threading.Condition(self._lock)
        self.agent = ProbeAgent(self.holder.pid)

    def new_ip(self) -> str:
        with self._lock:
            n = next(self._hosts)
        if n > 254:
            raise PodConfigError("the emulated node ran out of pod IPs")
        return f"{SUBNET}.{n}"

    def reserve(self, key: str) -> str:
        """The same IP whenever `key` asks again (a StatefulSet pod's stable identity)."""
        with self._lock:
            if key not in self._reserved:
                self._reserved[key] = self.new_ip()
            return self._reserved[key]

    def attach(self, pod_pid: int, ip: str) -> None:
        with self._lock:
            # A stable IP (a re-created pod's) is given once the old sandbox let it go.
            if not self._freed.wait_for(lambda: ip not in self._attached, timeout=60):
                raise PodConfigError(f"IP {ip} is still held by a sandbox that did not go away")
            self._attached.add(ip)
            veth = f"veth{next(self._veths)}"
        try:
            run([TOOLS["ip"], "link", "add", veth, "netns", str(self.holder.pid), "type", "veth",
                 "peer", "name", "eth0", "netns", str(pod_pid)])
            run([TOOLS["nsenter"], "-t", str(self.holder.pid), "-n", "sh", "-c",
                 f"ip link set {veth} master br0 && ip link set {veth} up"])
            # The MAC follows from the IP: a re-created StatefulSet pod keeps both, so its
            # peers' ARP caches stay right (with a new MAC behind the old IP they would send
            # to the dead sandbox's address until their entries expire, 15-45 s and more).
            mac = "02:42:" + ":".join(f"{int(octet):02x}" for octet in ip.split("."))
            run([TOOLS["nsenter"], "-t", str(pod_pid), "-n", "sh", "-c",
                 f"ip link set eth0 address {mac} && ip link set lo up && "
                 f"ip addr add {ip}/24 dev eth0 && ip link set eth0 up && "
                 f"ip route add default via {NODE_IP}"])
        except Exception:
            self.release(ip)
            raise

    def release(self, ip: str) -> None:
        with self._lock:
            self._attached.discard(ip)
            self._freed.notify_all()

    def close(self) -> None:
        self.agent.close()
        self.holder.kill()
        self.holder.wait()


class ProbeAgent:
    """probe_agent.py in the node network namespace, called from any thread."""

    def __init__(self, node_pid: int):
        self.proc = subprocess.Popen(
            [TOOLS["nsenter"], "-t", str(node_pid), "-n", sys.executable,
             str(HERE / "probe_agent.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_line(self.proc, "the probe agent")
        self._ids = itertools.count()
        self._waiting: dict[int, tuple[threading.Event, list]] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True, name="probe-agent").start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            reply = json.loads(line)
            with self._lock:
                event, box = self._waiting.pop(reply["id"], (None, None))
            if event is not None:
                box.append(reply)
                event.set()

    def check(self, request: dict) -> tuple[bool, str]:
        event, box = threading.Event(), []
        with self._lock:
            rid = next(self._ids)
            self._waiting[rid] = (event, box)
            self.proc.stdin.write(json.dumps({**request, "id": rid}) + "\n")
            self.proc.stdin.flush()
        if not event.wait(request["timeout"] + 5):
            return False, "the probe agent did not answer"
        return box[0]["ok"], box[0]["detail"]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def run(cmd: list[str], **kw: Any) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


# --- the kubelet -----------------------------------------------------------------------

# A container runtime's default capabilities (Docker's, containerd's); securityContext
# .capabilities drops from and adds to them. A non-root process keeps none anyway.
DEFAULT_CAPABILITIES = ("chown", "dac_override", "fsetid", "fowner", "mknod", "net_raw", "setgid",
                        "setuid", "setfcap", "setpcap", "net_bind_service", "sys_chroot", "kill",
                        "audit_write")


class Sandbox:
    """A pod's namespaces, volumes, /etc/hosts and /etc/resolv.conf (the pause container's
    role), and a root filesystem per container."""

    def __init__(self, kubelet: Kubelet, pod: dict):
        self.kubelet, self.pod = kubelet, pod
        meta = pod["metadata"]
        self.dir = kubelet.workdir / "pods" / f"{meta['name']}-{meta['uid'][:8]}"
        (self.dir / "volumes").mkdir(parents=True)
        self.holder = subprocess.Popen(
            [TOOLS["unshare"], "--mount", "--net", "--uts", "--propagation", "private", "--",
             "sh", "-c", f"echo up && {HOLD}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_line(self.holder, f"the sandbox of pod {meta['name']}")
        self.pid = self.holder.pid
        # A pod with a hostname behind a subdomain has a DNS name: a StatefulSet's (hostname =
        # pod name), or an Indexed Job's with a template subdomain (hostname <job>-<index>).
        named = pod["spec"].get("hostname") and pod["spec"].get("subdomain")
        self.ip = kubelet.stable_ip(pod["spec"]["hostname"]) if named else kubelet.network.new_ip()
        kubelet.network.attach(self.pid, self.ip)
        self._nsenter("-u", "hostname", pod["spec"].get("hostname") or meta["name"])
        self.hosts = self.dir / "hosts"
        self.hosts.write_text(kubelet.hosts_file(pod, self.ip))
        self.resolv_conf = self.dir / "resolv.conf"
        self.resolv_conf.write_text(RESOLV_CONF)
        self.volumes = kubelet.volume_sources(pod, self.dir / "volumes")
        self._roots: dict[str, pathlib.Path] = {}

    def _nsenter(self, *args: str) -> str:
        return run([TOOLS["nsenter"], "-t", str(self.pid), *args])

    def root(self, container: dict) -> pathlib.Path:
        """The container's root: an overlay of this machine's / with /proc /dev /sys, its
        volumeMounts and the pod's /etc/hosts and /etc/resolv.conf; read-only if the
        container asks."""
        if container["name"] in self._roots:
            return self._roots[container["name"]]
        where = self.dir / "containers" / container["name"]
        for sub in ("upper", "work", "rootfs"):
            (where / sub).mkdir(parents=True)
        root = shlex.quote(str(where / "rootfs"))
        steps = [f"mount -t overlay overlay -o lowerdir=/,upperdir={where}/upper,"
                 f"workdir={where}/work {root}"]
        steps += [f"mount --rbind /{d} {root}/{d}" for d in ("proc", "dev", "sys")]
        # The "image": this machine's Python lives under /root; let any uid run it.
        steps.append(f"chmod o+x {root}/root")
        for mount in container.get("volumeMounts") or []:
            if mount["name"] not in self.volumes:
                raise PodConfigError(f"container {container['name']}: volumeMount "
                                     f"{mount['name']!r} names no volume of the pod")
            # Symlinks resolved as inside the root (/var/run -> /run): the root mirrors this
            # machine's /, so its realpath is the pod's; never a path outside the root.
            inside = os.path.realpath(mount["mountPath"]).lstrip("/")
            target = shlex.quote(f"{where}/rootfs/{inside}")
            source = self.volumes[mount["name"]]
            if mount.get("subPath"):
                source = source / mount["subPath"]
            steps.append(f"mkdir -p {target}" if source.is_dir() else
                         f"mkdir -p $(dirname {target}) && touch {target}")
            steps.append(f"mount --bind {shlex.quote(str(source))} {target}")
            if mount.get("readOnly"):
                steps.append(f"mount -o remount,bind,ro {target}")
        for image_dir in IMAGE_DIRS:
            target = shlex.quote(f"{where}/rootfs/{image_dir.lstrip('/')}")
            steps.append(f"mkdir -p {target} && mount --bind {shlex.quote(image_dir)} {target}")
        steps.append(f"mount --bind {self.hosts} {root}/etc/hosts")
        steps.append(f"mount --bind {self.resolv_conf} {root}/etc/resolv.conf")
        if (container.get("securityContext") or {}).get("readOnlyRootFilesystem"):
            steps.append(f"mount -o remount,bind,ro {root}")
        self._nsenter("-m", "sh", "-e", "-c", " && ".join(steps))
        self._roots[container["name"]] = where / "rootfs"
        return where / "rootfs"

    def command(self, container: dict, argv: list[str]) -> list[str]:
        """argv run inside the pod: its namespaces, the container's root and user, its
        capabilities."""
        pod_sc = self.pod["spec"].get("securityContext") or {}
        sc = {**pod_sc, **(container.get("securityContext") or {})}
        uid, gid = int(sc.get("runAsUser", 0)), int(sc.get("runAsGroup", 0))
        if sc.get("runAsNonRoot") and uid == 0:
            raise PodConfigError(f"container {container['name']} has runAsNonRoot and image "
                                 f"will run as root")
        groups = [str(g) for g in [pod_sc.get("fsGroup"), *(pod_sc.get("supplementalGroups") or [])]
                  if g is not None]
        caps = sc.get("capabilities") or {}
        dropped = {c.lower() for c in caps.get("drop") or []}
        kept = [] if "all" in dropped else [c for c in DEFAULT_CAPABILITIES if c not in dropped]
        kept += [c.lower() for c in caps.get("add") or [] if c.lower() not in kept]
        # --pdeathsig: the container dies with the thread that started it (which waits on
        # it), so a test process killed outright leaves no pserver running.
        user = [TOOLS["setpriv"], "--pdeathsig=KILL", f"--reuid={uid}", f"--regid={gid}",
                f"--groups={','.join(groups)}" if groups else "--clear-groups",
                "--bounding-set=" + ",".join(["-all", *(f"+{c}" for c in kept)])]
        if sc.get("allowPrivilegeEscalation") is False:
            user.append("--no-new-privs")
        return [TOOLS["nsenter"], "-t", str(self.pid), "-m", "-n", "-u", "--",
                TOOLS["chroot"], str(self.root(container)), *user, "--", TOOLS["env"],
                f"--chdir={container.get('workingDir') or '/'}", "--", *argv]

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait()
        self.kubelet.network.release(self.ip)  # its network namespace went with the holder


class Container:
    """One container of a pod: its runs, its probes, its entry in the pod's status."""

    def __init__(self, worker: PodWorker, spec: dict, init: bool = False):
        self.worker, self.spec, self.init = worker, spec, init
        self.name = spec["name"]
        self.restarts = 0
        self.ready = self.started = False
        self.state: dict = {"waiting": {"reason": "PodInitializing" if not init
                                        else "ContainerCreating"}}
        self.last_state: dict = {}
        self.proc: subprocess.Popen | None = None
        pod = worker.name if len(worker.pod["spec"]["containers"]) == 1 and not init \
            else f"{worker.name}_{self.name}"
        self.log_path = worker.kubelet.workdir / "logs" / f"{pod}.log"

    def status(self) -> dict:
        return {"name": self.name, "image": self.spec.get("image", ""),
                "ready": self.ready, "started": self.started, "restartCount": self.restarts,
                "state": self.state, "lastState": self.last_state}

    def run(self, policy: str) -> int:
        """Run until the container is done under `policy`; returns the last exit code."""
        while True:
            code = self._run_once()
            if self.worker.stopping.is_set():
                return code
            terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                          "finishedAt": now()}
            if policy == "Always" or (policy == "OnFailure" and code != 0):
                self.last_state = {"terminated": terminated}
                self.restarts += 1
                self.state = {"waiting": {"reason": "CrashLoopBackOff"}}
                self.worker.write_status()
                self.worker.kubelet.note(f"pod {self.worker.name}: restarting container "
                                         f"{self.name} (restartPolicy {policy})")
                if self.worker.stopping.wait(RESTART_BACKOFF_S):
                    return code
                continue
            self.state = {"terminated": terminated}
            self.worker.write_status()
            return code

    def _run_once(self) -> int:
        worker, sandbox = self.worker, self.worker.sandbox
        assert sandbox is not None
        env = worker.kubelet.container_env(worker.pod, self.spec, sandbox.ip)
        if not self.spec.get("command"):
            raise PodConfigError(f"container {self.name}: the kubelet emulator needs a command "
                                 f"(there is no image ENTRYPOINT to fall back on)")
        argv = [expand(a, env) for a in self.spec["command"] + (self.spec.get("args") or [])]
        argv_in_pod = sandbox.command(self.spec, argv)
        self.ready = self.started = False
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as log:
            log.write(f"--- start {self.restarts}: {shlex.join(argv)}\n")
            log.flush()
            self.proc = subprocess.Popen(argv_in_pod, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        self.state = {"running": {"startedAt": now()}}
        worker.write_status()
        worker.kubelet.note(f"pod {worker.name}: container {self.name} started")
        prober = None if self.init else Prober(self)
        code = self.proc.wait()
        if code < 0:  # killed by a signal: the runtime reports 128 + the signal's number
            code = 128 - code
        if prober is not None:
            prober.stop()
        worker.kubelet.note(f"pod {worker.name}: container {self.name} exited {code}")
        return code

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def terminate(self, grace: int) -> None:
        """SIGTERM, up to `grace` seconds, then SIGKILL (at once when grace is 0)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        if grace > 0:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace)
                return
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):  # reaped meanwhile by its run thread
            os.killpg(proc.pid, signal.SIGKILL)


class PodWorker:
    """One pod: its sandbox, init containers in order, then its containers; its status."""

    def __init__(self, kubelet: Kubelet, pod: dict):
        self.kubelet, self.pod = kubelet, copy.deepcopy(pod)
        self.name, self.uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        self.stopping = threading.Event()
        self.sandbox: Sandbox | None = None
        self.pod["status"] = {"startTime": now()}
        spec = self.pod["spec"]
        self.inits = [Container(self, c, init=True) for c in spec.get("initContainers") or []]
        self.containers = [Container(self, c) for c in spec["containers"]]
        self.initialized = not self.inits
        self.problem = ""
        self._status_lock = threading.Lock()
        self.thread = threading.Thread(target=self._main, daemon=True, name=f"pod-{self.name}")
        self.thread.start()

    def container(self, name: str | None = None) -> Container:
        return next(c for c in self.containers if name in (None, c.name))

    def phase(self) -> str:
        if self.problem or not self.initialized:
            return "Failed" if self.problem.startswith("init") else "Pending"
        policy = self.pod["spec"].get("restartPolicy", "Always")
        done = [c for c in self.containers if "terminated" in c.state]
        if policy == "Always" or len(done) < len(self.containers):
            return "Running"
        codes = [c.state["terminated"]["exitCode"] for c in done]
        return "Succeeded" if not any(codes) else "Failed"

    def write_status(self) -> None:
        with self._status_lock:
            phase = self.phase()
            ready = phase == "Running" and all(c.ready for c in self.containers)
            status: dict[str, Any] = {
                "phase": phase, "hostIP": NODE_IP, "startTime": self.pod["status"]["startTime"],
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Initialized", "status": str(self.initialized)},
                    {"type": "ContainersReady", "status": str(ready)},
                    {"type": "Ready", "status": str(ready),
                     **({} if ready else {"reason": "ContainersNotReady"})}],
                "containerStatuses": [c.status() for c in self.containers]}
            if self.inits:
                status["initContainerStatuses"] = [c.status() for c in self.inits]
            if self.sandbox is not None:
                status.update(podIP=self.sandbox.ip, podIPs=[{"ip": self.sandbox.ip}])
            self.pod["status"] = status
            if not self.stopping.is_set():
                self.kubelet.api.patch(self.kubelet.path("pods", self.name) + "/status",
                                       {"status": status})

    def _main(self) -> None:
        try:
            if any(c.get("restartPolicy") for c in self.pod["spec"].get("initContainers") or []):
                raise PodConfigError("sidecar init containers (restartPolicy on an init "
                                     "container) are not emulated")
            self.sandbox = Sandbox(self.kubelet, self.pod)
            self._initialize()
            if self.initialized:
                policy = self.pod["spec"].get("restartPolicy", "Always")
                runs = [threading.Thread(target=self._guarded, args=(c, policy), daemon=True,
                                         name=f"pod-{self.name}-{c.name}")
                        for c in self.containers]
                for run_thread in runs:
                    run_thread.start()
                for run_thread in runs:
                    run_thread.join()
        except PodConfigError as exc:
            self._config_error(exc)
        finally:
            if self.sandbox is not None:
                self.sandbox.close()

    def _initialize(self) -> None:
        """Init containers one by one, each to success; a pod that never restarts fails
        with its first failing init container."""
        never = self.pod["spec"].get("restartPolicy", "Always") == "Never"
        for init in self.inits:
            if init.run("Never" if never else "OnFailure") != 0 or self.stopping.is_set():
                if never and not self.stopping.is_set():
                    self.problem = f"init container {init.name} failed"
                    self.write_status()
                return
        self.initialized = True
        self.write_status()

    def _guarded(self, container: Container, policy: str) -> None:
        try:
            container.run(policy)
        except PodConfigError as exc:
            self._config_error(exc)

    def _config_error(self, exc: PodConfigError) -> None:
        for c in self.containers:
            c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}}
        self.write_status()
        self.kubelet.note(f"pod {self.name}: {exc}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the pod's (first) container's processes: the tests' fault injection (it
        dies), or SIGSTOP and SIGCONT to pause it."""
        self.containers[0].kill(sig)

    @property
    def log_path(self) -> pathlib.Path:
        return self.containers[0].log_path

    def stop(self) -> None:
        """The pod was deleted: SIGTERM, the grace period, SIGKILL, sandbox removed."""
        self.stopping.set()
        grace = int(self.pod["spec"].get("terminationGracePeriodSeconds", 30))
        stoppers = [threading.Thread(target=c.terminate, args=(grace,), daemon=True)
                    for c in self.inits + self.containers]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
        self.thread.join(30)


class Prober:
    """startupProbe, then readinessProbe and livenessProbe, each on its own period."""

    def __init__(self, container: Container):
        self.container = container
        self.done = threading.Event()
        self.startup_passed = threading.Event()
        spec = container.spec
        startup = spec.get("startupProbe")
        if startup is None:
            self.startup_passed.set()
            container.started = True
        else:
            self._start(self._loop, "startup", startup, None)
        if spec.get("readinessProbe") is not None:
            self._start(self._loop, "readiness", spec["readinessProbe"], self.startup_passed)
        else:
            self._start(self._ready_once_started)
        if spec.get("livenessProbe") is not None:
            self._start(self._loop, "liveness", spec["livenessProbe"], self.startup_passed)

    def _start(self, target, *args) -> None:
        threading.Thread(target=target, args=args, daemon=True,
                         name=f"probe-{self.container.worker.name}").start()

    def _ready_once_started(self) -> None:
        self.startup_passed.wait()
        self._set_ready(True)

    def _loop(self, kind: str, probe: dict, after: threading.Event | None) -> None:
        if after is not None:
            after.wait()
        container, kubelet = self.container, self.container.worker.kubelet
        period = int(probe.get("periodSeconds", 10))
        successes = failures = 0
        if self.done.wait(int(probe.get("initialDelaySeconds", 0))):
            return
        while not self.done.is_set():
            ok, detail = kubelet.probe(container, probe)
            kubelet.record_probe(container.worker.name, kind, ok, detail)
            successes, failures = (successes + 1, 0) if ok else (0, failures + 1)
            if kind == "startup" and ok:
                container.started = True
                self.startup_passed.set()
                container.worker.write_status()
                return
            if kind == "readiness":
                if ok and successes >= int(probe.get("successThreshold", 1)):
                    self._set_ready(True)
                elif not ok and failures >= int(probe.get("failureThreshold", 3)):
                    self._set_ready(False)
            if kind in ("startup", "liveness") and failures >= int(probe.get("failureThreshold", 3)):
                kubelet.note(f"pod {container.worker.name}: {kind} probe failed {failures} "
                             f"times ({detail}); killing container {container.name}")
                container.kill(signal.SIGKILL)
                return
            if self.done.wait(period):
                return

    def _set_ready(self, ready: bool) -> None:
        if self.done.is_set() or self.container.ready == ready:
            return
        self.container.ready = ready
        self.container.worker.write_status()

    def stop(self) -> None:
        self.done.set()
        self.startup_passed.set()
        self.container.ready = False


class ControlPlane:
    """The StatefulSet and Job controllers and a volume provisioner, as far as pods go.

    A mixin of `Kubelet`, which gives it `path()` and `note()`; `Kubelet.sync()` calls
    `sync_controllers()` every resync.
    """
    api: TestClient
    claims: pathlib.Path  # one directory per bound claim
    _counted_failures: set[str]  # uids of failed Job pods already counted

    def sync_controllers(self) -> None:
        for claim in self.api.list(self.path("persistentvolumeclaims")):
            self._bind_claim(claim)
        for sts in self.api.list(self.path("statefulsets")):
            self._sync_statefulset(sts)
        for job in self.api.list(self.path("jobs")):
            self._sync_job(job)

    def pods_owned_by(self, owner: dict) -> list[dict]:
        uid = owner["metadata"]["uid"]
        return [p for p in self.api.list(self.path("pods"))
                if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]

    def _new_pod(self, owner: dict, name: str, labels: dict, annotations: dict,
                 spec_update: dict) -> None:
        template = copy.deepcopy(owner["spec"]["template"])
        meta = template.get("metadata") or {}
        spec = template["spec"]
        spec.update(spec_update, nodeName="emulated-node")
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": self.ns,
            "labels": {**(meta.get("labels") or {}), **labels},
            "annotations": {**(meta.get("annotations") or {}), **annotations},
            "ownerReferences": [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                 "name": owner["metadata"]["name"],
                                 "uid": owner["metadata"]["uid"], "controller": True,
                                 "blockOwnerDeletion": True}]},
            "spec": spec, "status": {"phase": "Pending"}}
        self.api.create(self.path("pods"), body)

    def _bind_claim(self, claim: dict) -> None:
        if (claim.get("status") or {}).get("phase") == "Bound":
            return
        (self.claims / claim["metadata"]["name"]).mkdir(parents=True, exist_ok=True)
        size = claim["spec"]["resources"]["requests"]["storage"]
        self.api.patch(self.path("persistentvolumeclaims", claim["metadata"]["name"]) + "/status",
                       {"status": {"phase": "Bound", "capacity": {"storage": size},
                                   "accessModes": claim["spec"].get("accessModes")}})

    def _sync_statefulset(self, sts: dict) -> None:
        name, spec = sts["metadata"]["name"], sts["spec"]
        replicas = int(spec.get("replicas", 1))
        pods = {p["metadata"]["name"]: p for p in self.pods_owned_by(sts)}
        for pod_name, pod in pods.items():
            ordinal = int(pod_name.rsplit("-", 1)[1])
            if ordinal >= replicas or (pod.get("status") or {}).get("phase") == "Failed":
                self.api.delete(self.path("pods", pod_name))
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            if pod_name not in pods:
                self._new_pod(sts, pod_name, {"statefulset.kubernetes.io/pod-name": pod_name,
                                              "apps.kubernetes.io/pod-index": str(i)}, {},
                              {"hostname": pod_name, "subdomain": spec.get("serviceName", name)})
        ready = sum(1 for p in pods.values() if int(p["metadata"]["name"].rsplit("-", 1)[1])
                    < replicas and _is_ready(p))
        status = {"replicas": min(replicas, len(pods)), "readyReplicas": ready,
                  "availableReplicas": ready, "currentReplicas": min(replicas, len(pods)),
                  "observedGeneration": sts["metadata"].get("generation", 1)}
        if {k: (sts.get("status") or {}).get(k) for k in status} != status:
            self.api.patch(self.path("statefulsets", name) + "/status", {"status": status})

    def _sync_job(self, job: dict) -> None:
        name, spec = job["metadata"]["name"], job["spec"]
        if spec.get("completionMode") != "Indexed":
            self.note(f"job {name}: only Indexed Jobs are emulated")
            return
        status = copy.deepcopy(job.get("status") or {})
        conditions = status.setdefault("conditions", [])
        finished = any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                       for c in conditions)
        pods = self.pods_owned_by(job)
        phase = lambda p: (p.get("status") or {}).get("phase")
        index = lambda p: p["metadata"]["annotations"][INDEX_KEY]
        succeeded = sorted({index(p) for p in pods if phase(p) == "Succeeded"}, key=int)
        fail_job = ""
        for pod in pods:  # failed pods stay (the operator reads them), each counted once
            uid = pod["metadata"]["uid"]
            if phase(pod) != "Failed" or uid in self._counted_failures:
                continue
            action = _pod_failure_action(spec.get("podFailurePolicy"), pod)
            if action == "FailJob":
                fail_job = f"pod {pod['metadata']['name']} matched a FailJob rule"
            if action != "Ignore":
                status["failed"] = int(status.get("failed", 0)) + 1
            self._counted_failures.add(uid)
        active = [p for p in pods if phase(p) in (None, "Pending", "Running")]
        completions = int(spec["completions"])
        if not finished:
            if fail_job or int(status.get("failed", 0)) > int(spec.get("backoffLimit", 6)):
                conditions.append({"type": "Failed", "status": "True", "lastTransitionTime": now(),
                                   "reason": "PodFailurePolicy" if fail_job
                                   else "BackoffLimitExceeded",
                                   "message": fail_job or "Job has reached the specified "
                                                          "backoff limit"})
                finished = True
            elif len(succeeded) >= completions:
                for ctype in ("SuccessCriteriaMet", "Complete"):
                    conditions.append({"type": ctype, "status": "True",
                                       "lastTransitionTime": now()})
                status["completionTime"] = now()
                finished = True
        if finished or spec.get("suspend"):
            for pod in active:
                self.api.delete(self.path("pods", pod["metadata"]["name"]))
            active = []
        else:
            busy = {index(p) for p in active} | set(succeeded)
            room = int(spec.get("parallelism", completions)) - len(active)
            for i in (str(i) for i in range(completions)):
                if i not in busy and room > 0:
                    room -= 1
                    self._new_pod(job, f"{name}-{i}-{uuid.uuid4().hex[:5]}", {INDEX_KEY: i},
                                  {INDEX_KEY: i},
                                  {"hostname": f"{name}-{i}",
                                   **_with_completion_index(job["spec"]["template"]["spec"], i)})
                    active.append({"metadata": {"annotations": {INDEX_KEY: i}}})
        status.update(active=len(active), succeeded=len(succeeded),
                      completedIndexes=",".join(succeeded),
                      ready=sum(1 for p in active if _is_ready(p)))
        status.setdefault("startTime", now())
        status.setdefault("failed", 0)
        if status != (job.get("status") or {}):
            self.api.patch(self.path("jobs", name) + "/status", {"status": status})


class Kubelet(ControlPlane):
    """The node: pod workers for the namespace's pods, plus the two controllers."""

    def __init__(self, api: TestClient, namespace: str, workdir: pathlib.Path):
        self.api, self.ns, self.workdir = api, namespace, workdir
        self.network = NodeNetwork()
        self.workers: dict[str, PodWorker] = {}  # by pod uid
        # Deleted pods whose processes and sandbox are still going away, by pod name: a
        # pod re-created under that name (a StatefulSet's) starts once they are gone, so
        # its sandbox never holds the stable IP while the old one still does.
        self._retiring: dict[str, threading.Thread] = {}
        self._counted_failures: set[str] = set()  # uids of failed Job pods already counted
        self.claims = workdir / "claims"
        self.events: list[str] = []
        self._last_note = ""
        self.probes: list[tuple[str, str, bool, str]] = []  # (pod, kind, ok, detail)
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True, name="kubelet")

    def __enter__(self) -> Kubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)
        stoppers = [threading.Thread(target=w.stop) for w in self.workers.values()]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        self.network.close()

    def note(self, text: str) -> None:
        """A line of the node's log, with the seconds since the node started."""
        if text != self._last_note:  # a failing sync repeats itself every resync
            self.events.append(f"{time.monotonic() - self.started:6.1f}s {text}")
        self._last_note = text

    def record_probe(self, pod: str, kind: str, ok: bool, detail: str) -> None:
        self.probes.append((pod, kind, ok, detail))
        self.note(f"{kind} probe of {pod}: {'ok' if ok else 'failed'} ({detail[:80]})")

    def path(self, kind: str, name: str | None = None) -> str:
        group = {"statefulsets": "/apis/apps/v1", "jobs": "/apis/batch/v1"}.get(kind, "/api/v1")
        base = f"{group}/namespaces/{self.ns}/{kind}"
        return f"{base}/{name}" if name else base

    # --- the loop -----------------------------------------------------------------------

    def _main(self) -> None:
        while not self._stop.wait(RESYNC_S):
            try:
                self.sync()
            except Exception as exc:  # keep the node alive; the test sees the note
                self.note(f"sync failed: {type(exc).__name__}: {exc}")

    def sync(self) -> None:
        """The controllers' pass, then the pods: start new ones, stop deleted ones."""
        self.sync_controllers()
        pods = {p["metadata"]["uid"]: p for p in self.api.list(self.path("pods"))}
        for uid, worker in list(self.workers.items()):
            if uid not in pods:
                del self.workers[uid]
                self._retire(worker)
        self._retiring = {name: t for name, t in self._retiring.items() if t.is_alive()}
        for uid, pod in pods.items():
            if uid not in self.workers and pod["metadata"]["name"] not in self._retiring \
                    and (pod.get("status") or {}).get("phase") in (None, "Pending"):
                self.workers[uid] = PodWorker(self, pod)

    def _retire(self, worker: PodWorker) -> None:
        stopper = threading.Thread(target=worker.stop, daemon=True, name=f"stop-{worker.name}")
        self._retiring[worker.name] = stopper
        stopper.start()

    def lose_pod(self, pod_name: str) -> None:
        """The pod's node is lost: its processes die at once (SIGKILL: no grace period, no
        restart in place) and nothing reports on the pod any more (its status stays as
        it was). The Pod object stays until `force_delete` — a cluster's node lifecycle
        controller evicts it after the pod's tolerationSeconds (300 s by default)."""
        worker = self.worker(pod_name)
        worker.stopping.set()
        for container in worker.inits + worker.containers:
            container.kill(signal.SIGKILL)
        self.note(f"pod {pod_name}: node lost (processes killed)")

    def force_delete(self, pod_name: str) -> None:
        """`kubectl delete pod --force --grace-period=0`, or the node lifecycle controller's
        eviction of a lost node's pod: the object goes at once; its controller replaces it."""
        self.api.delete(self.path("pods", pod_name))
        self.note(f"pod {pod_name}: force-deleted")

    # --- what a pod sees ----------------------------------------------------------------

    def hosts_file(self, pod: dict, ip: str) -> str:
        """The kubelet's /etc/hosts, plus every headless-Service pod name (no cluster DNS)."""
        own = pod["spec"].get("hostname") or pod["metadata"]["name"]
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
                 f"{ip}\t{own}"]
        for name, address in sorted(self.dns_names().items()):
            lines.append(f"{address}\t{name}")
        return "\n".join(lines) + "\n"

    def dns_names(self) -> dict[str, str]:
        """`<hostname>.<subdomain>.<ns>.svc[.cluster.local]` for pods behind a headless
        Service, with the IP their sandbox will get (allocated up front for
        StatefulSet pods and Indexed Job pods with a subdomain, which is what makes the
        names stable)."""
        names = {}
        headless = {s["metadata"]["name"] for s in self.api.list(self.path("services"))
                    if s["spec"].get("clusterIP") == "None"}
        for sts in self.api.list(self.path("statefulsets")):
            service = sts["spec"].get("serviceName")
            if service not in headless:
                continue
            for i in range(int(sts["spec"].get("replicas", 1))):
                short = f"{sts['metadata']['name']}-{i}.{service}.{self.ns}.svc"
                ip = self.stable_ip(f"{sts['metadata']['name']}-{i}")
                names[short] = names[f"{short}.{CLUSTER_DOMAIN}"] = ip
        for job in self.api.list(self.path("jobs")):  # Indexed Job pods with a subdomain
            service = job["spec"]["template"]["spec"].get("subdomain")
            if service not in headless or job["spec"].get("completionMode") != "Indexed":
                continue
            for i in range(int(job["spec"]["completions"])):
                short = f"{job['metadata']['name']}-{i}.{service}.{self.ns}.svc"
                ip = self.stable_ip(f"{job['metadata']['name']}-{i}")
                names[short] = names[f"{short}.{CLUSTER_DOMAIN}"] = ip
        return names

    def stable_ip(self, pod_name: str) -> str:
        """StatefulSet pods keep their IP across re-creation here (a real cluster
        changes it and updates DNS; with static /etc/hosts files it must not change)."""
        return self.network.reserve(pod_name)

    def volume_sources(self, pod: dict, where: pathlib.Path) -> dict[str, pathlib.Path]:
        sources = {}
        fs_group = (pod["spec"].get("securityContext") or {}).get("fsGroup")
        for volume in pod["spec"].get("volumes") or []:
            name, path = volume["name"], where / volume["name"]
            if "emptyDir" in volume:
                path.mkdir()
            elif "persistentVolumeClaim" in volume:
                claim = volume["persistentVolumeClaim"]["claimName"]
                if self.api.get(self.path("persistentvolumeclaims", claim)) is None:
                    raise PodConfigError(f'persistentvolumeclaim "{claim}" not found')
                path = self.claims / claim
                path.mkdir(parents=True, exist_ok=True)
            elif "secret" in volume or "configMap" in volume:
                self._project(volume, path)
            else:
                raise PodConfigError(f"volume {name!r}: the kubelet emulator mounts emptyDir, "
                                     f"secret, configMap and persistentVolumeClaim only")
            if fs_group is not None:
                _give_to_group(path, int(fs_group))
            sources[name] = path
        return sources

    def _project(self, volume: dict, path: pathlib.Path) -> None:
        kind = "secret" if "secret" in volume else "configMap"
        source = volume[kind]
        obj_name = source["secretName"] if kind == "secret" else source["name"]
        data = self._data(kind, obj_name, optional=bool(source.get("optional")))
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        path.mkdir()
        for item in items:
            if item["key"] not in data:
                raise PodConfigError(f"{kind} {obj_name!r} has no key {item['key']!r}")
            target = path / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data[item["key"]])
            target.chmod(int(item.get("mode", source.get("defaultMode", 0o644))))

    def _data(self, kind: str, name: str, optional: bool = False) -> dict[str, bytes]:
        plural = "secrets" if kind == "secret" else "configmaps"
        obj = self.api.get(self.path(plural, name))
        if obj is None:
            if optional:
                return {}
            raise PodConfigError(f'{kind} "{name}" not found')
        if kind == "secret":
            data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
            data.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
            return data
        data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        return data

    def container_env(self, pod: dict, container: dict, ip: str) -> dict[str, str]:
        """The process environment, in Kubernetes' order: image, service variables,
        envFrom, env (later wins; $(VAR) sees what came before)."""
        view = copy.deepcopy(pod)
        view.setdefault("status", {}).update(podIP=ip, hostIP=NODE_IP)
        hostname = pod["spec"].get("hostname") or pod["metadata"]["name"]
        env = {"PATH": IMAGE_PATH, "HOSTNAME": hostname, "HOME": "/", **KUBERNETES_SERVICE_ENV}
        for source in container.get("envFrom") or []:
            kind = "secret" if "secretRef" in source else "configMap"
            ref = source.get("secretRef") or source.get("configMapRef")
            data = self._data(kind, ref["name"], optional=bool(ref.get("optional")))
            env.update({source.get("prefix", "") + k: v.decode() for k, v in data.items()})
        for var in container.get("env") or []:
            env[var["name"]] = self._env_value(view, container, var, env)
        return env

    def _env_value(self, pod: dict, container: dict, var: dict, env: dict) -> str:
        source = var.get("valueFrom")
        if source is None:
            return expand(var.get("value", ""), env)
        if "fieldRef" in source:
            return field_ref(pod, source["fieldRef"]["fieldPath"])
        if "resourceFieldRef" in source:
            return resource_field(pod, container, source["resourceFieldRef"])
        for key, kind in (("secretKeyRef", "secret"), ("configMapKeyRef", "configMap")):
            if key in source:
                ref = source[key]
                data = self._data(kind, ref["name"], optional=bool(ref.get("optional")))
                if ref["key"] not in data:
                    if ref.get("optional"):
                        return ""
                    raise PodConfigError(f"{kind} {ref['name']!r} has no key {ref['key']!r}")
                return data[ref["key"]].decode()
        raise PodConfigError(f"env {var['name']}: unknown valueFrom {sorted(source)}")

    # --- probes -------------------------------------------------------------------------

    def probe(self, container: Container, probe: dict) -> tuple[bool, str]:
        timeout = int(probe.get("timeoutSeconds", 1))
        worker, sandbox = container.worker, container.worker.sandbox
        assert sandbox is not None
        if "exec" in probe:
            env = self.container_env(worker.pod, container.spec, sandbox.ip)
            try:
                proc = subprocess.run(sandbox.command(container.spec, probe["exec"]["command"]),
                                      env=env, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return False, f"exec timed out after {timeout}s"
            return proc.returncode == 0, f"exit {proc.returncode}: {proc.stdout[-200:]}"
        kind = next(k for k in ("tcpSocket", "grpc", "httpGet") if k in probe)
        spec = probe[kind]
        request = {"kind": kind, "host": spec.get("host") or sandbox.ip,
                   "port": _port(container.spec, spec["port"]), "timeout": timeout}
        if kind == "grpc":
            request["service"] = spec.get("service", "")
        if kind == "httpGet":
            request.update(path=spec.get("path", "/"), scheme=spec.get("scheme", "HTTP"),
                           headers={h["name"]: h["value"] for h in spec.get("httpHeaders") or []})
        return self.network.agent.check(request)

    # --- for tests ----------------------------------------------------------------------

    def worker(self, pod_name: str) -> PodWorker:
        found = [w for w in self.workers.values() if w.name == pod_name and not w.stopping.is_set()]
        if not found:
            raise KeyError(f"no running pod {pod_name}")
        return found[0]

    def logs(self) -> str:
        logs = sorted((self.workdir / "logs").glob("*.log"))
        return "\n".join(f"===== {p.name}\n{p.read_text()[-3000:]}" for p in logs) + \
            "\n===== kubelet\n" + "\n".join(self.events)


def _is_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _port(container: dict, port: int | str) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise PodConfigError(f"probe port {port!r} names no port of container {container['name']}")


def _with_completion_index(spec: dict, index: str) -> dict:
    """The Job controller gives every container JOB_COMPLETION_INDEX (from the annotation)."""
    update = {}
    for key in ("initContainers", "containers"):
        containers = copy.deepcopy(spec.get(key) or [])
        for c in containers:
            c.setdefault("env", []).insert(0, {"name": "JOB_COMPLETION_INDEX", "valueFrom": {
                "fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_KEY}']"}}})
        if containers:
            update[key] = containers
    return update


def _pod_failure_action(policy: dict | None, pod: dict) -> str:
    """The first podFailurePolicy rule matching a failed pod: FailJob, Ignore or Count."""
    status = pod.get("status") or {}
    conditions = {(c.get("type"), c.get("status", "True")) for c in status.get("conditions") or []}
    codes = [((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
             for cs in status.get("containerStatuses") or []]
    for rule in (policy or {}).get("rules") or []:
        on_codes = rule.get("onExitCodes")
        if on_codes:
            values = set(on_codes.get("values") or [])
            hit = [c for c in codes if c not in (None, 0)]
            matched = any((c in values) == (on_codes.get("operator", "In") == "In") for c in hit)
        else:
            matched = any((c.get("type"), c.get("status", "True")) in conditions
                          for c in rule.get("onPodConditions") or [])
        if matched:
            return rule["action"]
    return "Count"


def _give_to_group(path: pathlib.Path, gid: int) -> None:
    """fsGroup: the volume's files belong to the group, group-writable directories with setgid."""
    for item in [path, *path.rglob("*")]:
        os.chown(item, -1, gid)
        if item.is_dir():
            item.chmod(item.stat().st_mode | 0o2070)
