"""A stream job (spec.data.stream) as real processes: it follows folders as their done markers
appear, publishes checkpoints holding its stream position, and a job SIGKILLed mid-folder and
started again from its checkpoint trains every example exactly once.

`psjob run` starts a pserver and two sync trainers; each trainer's --audit_ids log records the
ids it fed per step (every example of the stream carries its own number, tests/streamkit.py).
The examples that count for the first run are those of its steps up to the checkpoint the
second run resumed from; what the first run trained after it is not in any checkpoint (the
model the second run starts from never saw it) and must be trained again, once.
"""
import collections
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import read_manifest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import streamkit  # noqa: E402

PSJOB = [sys.executable, "-m", "psjob.cli"]
F1, F2, F3, F4 = "20261128/2300", "20261128/2305", "20261128/2310", "20261128/2315"


def write_job(tmp_path, root, audit, name="stream"):
    body = {"image": "psjob:test", "mode": "sync",
            "args": ["--batch", "40", "--distributed_table", "--log_every", "1", "--audit_ids", str(audit)],
            "pserver": {"replicas": 1}, "worker": {"replicas": 2},
            "data": {"stream": {"root": str(root), "pollSeconds": 1}},
            # Published incrementally: deltas of the rows each interval touched, a base every 4.
            "checkpoint": {"intervalSeconds": 1, "keep": 50, "incremental": {"enabled": True, "baseEvery": 4}},
            "runPolicy": {"backoffLimit": 0}}
    path = tmp_path / f"{audit.name}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                                    "metadata": {"name": name}, "spec": body}))
    return path


def start(job, work, metrics_port):
    cmd = PSJOB + ["run", str(job), "--workdir", str(work), "--metrics-port", str(metrics_port),
                   "--progress-interval", "1"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=work.parent, start_new_session=True)


def job_pids(work):
    """Pids of the processes of the run in `work` (psjob run's children run in their own sessions)."""
    marker = f"PSJOB_CHECKPOINT_DIR={work}/checkpoints".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if marker in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def kill_all(proc, work):
    os.killpg(proc.pid, signal.SIGKILL)
    for pid in job_pids(work):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(30)


def audit(directory):
    """{trainer: [(step, [example numbers])]}; a torn last line (a killed writer) is dropped."""
    out = {}
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        rows = []
        with open(os.path.join(directory, name)) as f:
            for line in f:
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                rows.append((doc["step"], [streamkit.example_number(i) for i in doc["ids"]]))
        out[name] = rows
    return out


def trained(directory, up_to=None):
    return [n for rows in audit(directory).values() for step, ns in rows
            if up_to is None or step <= up_to for n in ns]


def wait_for(what, check, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"psjob run ended while waiting for {what}:\n{proc.stdout.read()}")
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGTERM)
    pytest.fail(f"timed out waiting for {what}")


def checkpoints(work):
    out = []
    for c in store.committed(str(work / "checkpoints")):
        if c.ok:
            out.append((c.step, read_manifest(c.path)["position"]["stream"], c.path))
    return sorted(out)


def scrape(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return response.read().decode()
    except OSError:
        return ""


def free_port_block(count):
    from psjob.launcher.launch import free_port_block as block
    first = block(count)
    if first is None:
        pytest.skip("no block of free ports")
    return first


def test_a_stream_job_killed_mid_folder_resumes_from_its_checkpoint_training_each_example_once(tmp_path):
    root, work = tmp_path / "stream", tmp_path / "work"
    n = streamkit.write_folder(root, F1, 0, [300, 200])
    n = streamkit.write_folder(root, F2, n, [250])
    big = n
    n = streamkit.write_folder(root, F3, n, [9000, 7000], done=False)  # its marker comes later
    run1_audit, run2_audit = tmp_path / "audit1", tmp_path / "audit2"
    port = free_port_block(3)
    proc = start(write_job(tmp_path, root, run1_audit), work, port)
    try:
        # The job trains what is done, then waits: nothing of F3 before its marker.
        wait_for("F1 and F2 trained", lambda: len(trained(run1_audit)) == big, proc)
        wait_for("a checkpoint holding F2", lambda: any(p["done"] == F2 for _, p, _ in checkpoints(work)), proc)
        assert max(trained(run1_audit)) == big - 1
        streamkit.mark(root, F3)
        # Kill it once a checkpoint stands inside F3 (a file and an offset) and it trained past it.
        mid = wait_for("a checkpoint inside F3", lambda: [c for c in checkpoints(work)
                                                           if c[1]["folder"] == F3 and c[1]["offset"] > 0], proc)
        wait_for("training past that checkpoint", lambda: max(
            (s for rows in audit(run1_audit).values() for s, _ in rows), default=0) > mid[-1][0] + 3, proc)
    finally:
        kill_all(proc, work)
    newest = checkpoints(work)[-1]
    resume_step, resume_at = newest[0], newest[1]
    kinds = [read_manifest(path).get("chain", {}).get("kind") for _, _, path in checkpoints(work)]
    assert "delta" in kinds and "base" in kinds, kinds
    run1_beyond = [n for rows in audit(run1_audit).values() for s, ns in rows if s > resume_step for n in ns]
    assert run1_beyond, "the kill left nothing trained after the newest checkpoint: the test proves nothing"
    n = streamkit.write_folder(root, F4, n, [500])  # a folder that appears while the job is down

    proc = start(write_job(tmp_path, root, run2_audit), work, port)
    try:
        # Everything up to F4's end trained; its tail published while the stream is idle.
        wait_for("a checkpoint holding F4", lambda: any(p["done"] == F4 for _, p, _ in checkpoints(work)),
                 proc, timeout=240)
        metrics = wait_for("freshness on trainer 0", lambda: (lambda t: t if re.search(
            r"^psjob_trainer_stream_freshness_seconds_count [1-9]", t, re.M) else None)(scrape(port + 1)), proc)
        pserver = scrape(port)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            kill_all(proc, work)
    log0 = (work / "logs").glob("*worker-0*")
    text = "".join(p.read_text() for p in log0)
    assert f"starts the stream at step {resume_step}" in text, text[-3000:]
    counts = collections.Counter(trained(run1_audit, resume_step) + trained(run2_audit))
    twice = sorted(k for k, c in counts.items() if c > 1)
    missing = sorted(set(range(n)) - set(counts))
    assert not twice and not missing, (f"resumed at step {resume_step} ({resume_at}): trained twice "
                                       f"{twice[:10]}..., never {missing[:10]}...")
    assert set(counts) == set(range(n))
    assert re.search(rf'^psjob_pserver_stream_published_until_timestamp_seconds\{{folder="{F4}"\}} 1\.\d+e\+09$',
                     pserver, re.M), pserver
    assert re.search(r"^psjob_trainer_stream_lag_seconds 0\.0$", metrics, re.M)
