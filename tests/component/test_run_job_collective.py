"""`psjob run` of a collective job (spec.mode: collective): trainers only, real processes
all-reducing over their ring on 127.0.0.1, no pservers.

A lost trainer fails the step of every trainer; the survivors exit roles.PEER_LOST_EXIT and are
restarted without drawing on backoffLimit, the dead one is restarted against it, the ring forms
again and the script resumes from its newest checkpoint — ending with exactly the parameters of
an uninterrupted run (one process on the concatenated batches).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from psjob.foundation import roles

from .conftest import SCRIPTS
from .test_run_job import finish, start_run

RESUME = os.path.join(SCRIPTS, "collective_resume.py")
TRAINER = os.path.join(SCRIPTS, "collective_trainer.py")
STEPS = 8


def write_collective_job(tmp_path, out, *extra, backoff=1, spec=None):
    body = {"image": "psjob:test", "mode": "collective", "command": ["python", RESUME],
            "args": [str(out), str(STEPS), *map(str, extra)], "worker": {"replicas": 2},
            "runPolicy": {"backoffLimit": backoff}}
    body.update(spec or {})
    path = tmp_path / "ring.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                                    "metadata": {"name": "ring"}, "spec": body}))
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("single") / "single.npz")
    subprocess.run([sys.executable, TRAINER, "single", "sgd", path, str(STEPS)], check=True, timeout=120,
                   capture_output=True)
    return np.load(path)


def _assert_matches(tmp_path, reference):
    for rank in range(2):
        got = np.load(tmp_path / f"out{rank}.npz")
        for name in got.files:
            np.testing.assert_allclose(got[name], reference[name], atol=1e-5, err_msg=name)


def test_a_collective_job_runs_its_trainers_as_a_ring_without_pservers(tmp_path, reference):
    rc, out = finish(start_run(write_collective_job(tmp_path, tmp_path / "out{rank}.npz"), tmp_path),
                     timeout=180)
    assert rc == 0, out
    assert "ring: 2 trainer(s), collective (ring all-reduce), on this machine" in out
    assert not os.path.exists(tmp_path / "work" / "logs" / "pserver-0.log")
    topology = json.loads((tmp_path / "work" / "topology.json").read_text())
    assert topology["mode"] == "collective" and topology["pserver_endpoints"] == []
    assert len(topology["trainer_endpoints"]) == 2
    _assert_matches(tmp_path, reference)


def test_a_lost_trainer_fails_the_ring_and_the_job_resumes_from_the_newest_checkpoint(tmp_path, reference):
    rc, out = finish(start_run(write_collective_job(tmp_path, tmp_path / "out{rank}.npz", 4), tmp_path),
                     timeout=240)
    assert rc == 0, out
    assert "worker 1 failed with status 137; restarting it (0 restarts left)" in out, out
    assert f"worker 0 exited {roles.PEER_LOST_EXIT}: its all-reduce ring lost a peer" in out, out
    logs = tmp_path / "work" / "logs"
    log0 = (logs / "worker-0.log").read_text()
    assert "PeerLostError" in log0 or "CollectiveError" in log0, log0[-3000:]
    resumed = [line for line in log0.splitlines() if line.startswith("trainer 0 resumes at step")]
    assert resumed[0] == "trainer 0 resumes at step 0" and resumed[-1] != resumed[0], resumed
    _assert_matches(tmp_path, reference)


def test_a_collective_job_with_a_pserver_section_is_refused_naming_the_field(tmp_path):
    job = write_collective_job(tmp_path, tmp_path / "o.npz", spec={"pserver": {"replicas": 2}})
    rc, out = finish(start_run(job, tmp_path), timeout=60)
    assert rc == 2
    assert "spec.pserver: a collective job has no pservers" in out
