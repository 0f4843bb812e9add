"""psjob_trainer_staleness_steps on real jobs: `psjob run` with metrics ports, trainers scraped while they train.

Real: `psjob run`, the pserver and trainer processes, gRPC (the pserver's
staleness travels in SendReply to the trainer's push handle), the trainers'
/metrics endpoints. Each trainer is scraped once it trained its last step: the
trainers run `psjob worker` through a wrapper that, before the trainer stops its
/metrics, says so and waits until the test has scraped it — the final figures
every time, whatever the machine's speed. The wrapper also starts both trainers'
first steps together, so their pushes interleave however late one of them starts.
"""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml


def free_port_block(count):
    from psjob.launcher.launch import free_port_block as block
    first = block(count)
    if first is None:
        pytest.skip("no block of free ports")
    return first


SCRAPE_GATE_WRAPPER = r"""
import os, sys, time
from psjob.launcher import entrypoints
from psjob.cluster.trainer import telemetry
from psjob.training import job

pipelined = job.pipelined

def pipelined_together(*args, **kwargs):
    # Both trainers begin their first step together: a trainer that started late on a busy
    # machine could otherwise find the other one done, and no push would be stale.
    gates = os.environ["SCRAPE_DIR"]
    open(os.path.join(gates, "trainer-" + os.environ["PADDLE_TRAINER_ID"] + ".training"), "w").close()
    deadline = time.monotonic() + 60
    while (time.monotonic() < deadline and not all(
            os.path.exists(os.path.join(gates, "trainer-%d.training" % t)) for t in (0, 1))):
        time.sleep(0.005)
    yield from pipelined(*args, **kwargs)

job.pipelined = pipelined_together

close = telemetry.TrainerTelemetry.close

def close_after_the_final_scrape(self):
    if self.server is not None:  # the last step is trained: /metrics holds the final figures
        gate = os.path.join(os.environ["SCRAPE_DIR"], "trainer-" + os.environ["PADDLE_TRAINER_ID"])
        open(gate + ".final", "w").close()
        with open(gate + ".scraped") as fifo:  # a FIFO: returns once the test has scraped
            fifo.read()
    close(self)

telemetry.TrainerTelemetry.close = close_after_the_final_scrape
sys.exit(entrypoints.worker_main(sys.argv[1:]))
"""


def sample(text, name):
    match = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", text, re.M)
    return float(match.group(1)) if match else None


def run_and_scrape_trainers(tmp_path, mode):
    """Run a 1-pserver, 2-trainer job; → ({trainer: its final /metrics text}, output)."""
    wrapper, gates = tmp_path / "scrape_gate.py", tmp_path / "gates"
    wrapper.write_text(SCRAPE_GATE_WRAPPER)
    gates.mkdir()
    for trainer in (0, 1):
        os.mkfifo(gates / f"trainer-{trainer}.scraped")
    job = tmp_path / f"{mode}.yaml"
    table = [] if mode == "geo" else ["--distributed_table"]  # geo keeps local copies of every parameter
    job.write_text(yaml.safe_dump({
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "metadata": {"name": f"stale-{mode}"},
        "spec": {"image": "psjob:test", "mode": mode,
                 # Geo pushes every kSteps steps: 30 steps per trainer push 3 times, and the rest at the end.
                 **({"kSteps": 10} if mode == "geo" else {}),
                 "args": ["--examples", "12000", "--batch", "200", *table, "--log_every", "0.5"],
                 "pserver": {"replicas": 1},
                 "worker": {"replicas": 2, "command": ["python", str(wrapper)],
                            "env": [{"name": "SCRAPE_DIR", "value": str(gates)}]}}}))
    first = free_port_block(3)
    ports = {0: first + 1, 1: first + 2}  # pserver 0 on `first`, then the trainers
    proc = subprocess.Popen([sys.executable, "-m", "psjob.cli", "run", str(job), "--workdir",
                             str(tmp_path / "work"), "--metrics-port", str(first)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
                            start_new_session=True)
    last = {}
    deadline = time.monotonic() + 120
    while len(last) < len(ports) and proc.poll() is None and time.monotonic() < deadline:
        for trainer, port in ports.items():
            if trainer in last or not (gates / f"trainer-{trainer}.final").exists():
                continue
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
                last[trainer] = response.read().decode()
            with open(gates / f"trainer-{trainer}.scraped", "w"):
                pass  # the trainer goes on: it stops /metrics and exits
        time.sleep(0.05)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        pytest.fail(f"psjob run did not finish:\n{out}")
    assert proc.returncode == 0, out
    assert sorted(last) == [0, 1], f"trainers scraped after their last step: {sorted(last)}\n{out}"
    return last, out


def staleness(text):
    return (sample(text, "psjob_trainer_staleness_steps_count") or 0,
            sample(text, 'psjob_trainer_staleness_steps_bucket{le="0.0"}') or 0,
            sample(text, "psjob_trainer_staleness_steps_sum") or 0)


def test_async_trainers_export_the_staleness_their_gradients_were_applied_with(tmp_path):
    last, out = run_and_scrape_trainers(tmp_path, "async")
    found = {t: staleness(text) for t, text in last.items()}
    assert all(count >= 3 for count, _, _ in found.values()), (found, out)
    # Two trainers updating the same parameters concurrently: some pushes were applied on
    # parameters the other trainer had updated since the pusher's last pull.
    assert sum(total for _, _, total in found.values()) > 0, found
    assert any(zeros < count for count, zeros, _ in found.values()), found


def test_sync_trainers_export_only_zero_staleness(tmp_path):
    last, out = run_and_scrape_trainers(tmp_path, "sync")
    for trainer, text in last.items():
        count, zeros, total = staleness(text)
        assert count >= 3 and zeros == count and total == 0, (trainer, count, zeros, total)


def test_geo_trainers_export_the_staleness_of_their_delta_pushes(tmp_path):
    last, out = run_and_scrape_trainers(tmp_path, "geo")
    for trainer, text in last.items():
        count, zeros, total = staleness(text)
        assert count >= 3 and zeros <= count, (trainer, count, zeros, total, out)
