"""`psjob scale WORKDIR --pservers M`: a running `psjob run` moves its tables from N pservers to M.

Real processes: `psjob run` starts 2 pservers and 2 trainers; the test asks for
3 pservers, then for fewer again, while the trainers train. Each resize takes a
checkpoint (trainer 0 holds at its next step), replaces every process and
restores the checkpoint resharded N→M. Checked:

- every table row of the checkpoint is on exactly the pserver `shard_of(id, M)`
  names, with its values: each new pserver logs the rows it holds right after
  its restore (count and `rows_digest`) and the test recomputes both from the
  checkpoint's files;
- training goes on from the checkpoint (trainer 0 resumes at its step) and the
  job ends Succeeded, nothing counted against backoffLimit 0;
- sync mode redoes no step: the trainers' steps add up to exactly the job's.

Printed (run with -s): per resize, the steps redone and the time from
`psjob scale` to the first step trained after it.
"""
import contextlib
import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

from psjob import cli as psjob_cli
from psjob.foundation.checkpoint.format import read_manifest
from psjob.foundation.checkpoint.tables import read_rows, rows_digest
from psjob.foundation.tables import concat_shards, shard_of

PSJOB = [sys.executable, "-m", "psjob.cli"]
BOUND_S = 120
TABLE = "SparseFeatFactors"
# Enough steps (60 a trainer an epoch) to outlast two resizes, the job's time after the last one
# being spent training for nothing else. The test asks for the first resize once trainer 0 is
# past step 10 and for the next as soon as it trains again: trainer 0 held at steps 12-25 in
# runs with both cores busy. Asynchronous trainers step about twice as fast as sync ones; geo
# trainers, which wait for nothing, up to four times (trainer 1 at step 100 when trainer 0 held
# at 24): with 3 epochs it could finish before the resize reached it.
EPOCHS = {"sync": 2, "async": 3, "half_async": 3, "geo": 8}


def scale(work, *args):
    """`psjob scale WORK ARGS` run in this process (psjob.cli.main, as the command does) →
    (exit code, stderr): a request lands at once, not after an interpreter start that, on a
    loaded machine, lets the trainers run hundreds of steps. The command as a process is tested
    in test_psjob_scale_pservers_refuses_what_cannot_apply."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = psjob_cli.main(["scale", str(work), *args])
    return code, err.getvalue()


def write_job(tmp_path, mode, epochs):
    # Geo mode trains local copies of every parameter: its embedding is an ordinary (sliced)
    # parameter, not a distributed table.
    table = ["--distributed_table"] if mode != "geo" else []
    body = {"image": "psjob:test", "mode": mode,
            "args": ["--examples", "6000", "--batch", "50", *table, "--log_every", "0.1",
                     "--epochs", str(epochs)],
            # The restore line gives the table's digest (checked by check_rows_resharded).
            "pserver": {"replicas": 2, "env": [{"name": "PSJOB_RESTORE_DIGEST", "value": "1"}]},
            "worker": {"replicas": 2},
            "checkpoint": {"intervalSteps": 100000}, "runPolicy": {"backoffLimit": 0}}
    path = tmp_path / "resize.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                                    "metadata": {"name": "resize"}, "spec": body}))
    return path


class Run:
    def __init__(self, tmp_path, mode, epochs):
        self.work, self.summary = tmp_path / "work", tmp_path / "summary.json"
        self.proc = subprocess.Popen(PSJOB + ["run", str(write_job(tmp_path, mode, epochs)), "--workdir",
                                              str(self.work), "--summary", str(self.summary)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)

    def log(self, name):
        path = self.work / "logs" / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def steps(self, trainer=0):
        found = re.findall(r"\bsteps?=(\d+)", self.log(f"worker-{trainer}"))
        return int(found[-1]) if found else 0

    def wait_for(self, cond, what):
        deadline = time.monotonic() + BOUND_S
        while not cond():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                pytest.fail(f"{what}: not seen\n{self.proc.communicate()[0]}\n{self.dump()}")
            time.sleep(0.05)

    def resize(self, pservers):
        """Ask for `pservers`; wait for trainer 0's first step after the restore. Returns
        (checkpoint path, step, seconds from the request to that step)."""
        restores = self.log("pserver-0").count("restored step")
        t0 = time.monotonic()
        code, err = scale(self.work, "--pservers", str(pservers))
        assert code == 0, err
        self.wait_for(lambda: self.log("pserver-0").count("restored step") > restores,
                      f"pserver 0 of {pservers} restoring the resize's checkpoint")
        restored = re.findall(r"restored step (\d+) from ([^\s;]+)", self.log("pserver-0"))[-1]
        step, path = int(restored[0]), restored[1]
        resumed = f"resumes at step {step} "

        def trained_after():
            log = self.log("worker-0")
            # Progress lines are periodic, not one per step: any step past the restored one.
            return resumed in log and any(int(n) > step for n in
                                          re.findall(r"\bstep=(\d+)/", log[log.rindex(resumed):]))
        self.wait_for(trained_after, f"trainer 0 training again after the resize to {pservers}")
        return path, step, time.monotonic() - t0

    def finish(self):
        try:
            out, _ = self.proc.communicate(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"psjob run did not finish:\n{self.proc.communicate()[0]}\n{self.dump()}")
        return self.proc.returncode, out

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)

    def dump(self):
        logs = sorted((self.work / "logs").glob("*.log")) if (self.work / "logs").exists() else []
        return "\n".join(f"--- {p.name}\n{p.read_text()[-2500:]}" for p in logs)


def check_rows_resharded(run, path, step, pservers):
    """Each of the `pservers` new pservers holds exactly the checkpoint's rows `shard_of` gives it."""
    doc = read_manifest(path)
    everything = read_rows(path, TABLE, doc["tables"][TABLE], 0, 1)
    ids = np.concatenate([r.ids for r in everything])
    assert len(ids) == len(np.unique(ids)) and len(ids) > 0
    owner = np.concatenate([shard_of(r.ids, pservers) for r in everything])
    for j in range(pservers):
        mine = [r.take(shard_of(r.ids, pservers) == j) for r in everything]
        rows = concat_shards(mine)
        logged = re.findall(rf"restored step {step} from {re.escape(path)}; table {TABLE}: (\d+) rows, "
                            rf"digest (\w+)", run.log(f"pserver-{j}"))
        assert logged, f"pserver {j} did not restore {path}\n{run.log(f'pserver-{j}')[-2000:]}"
        assert (int(logged[-1][0]), logged[-1][1]) == (len(rows), rows_digest(rows)), (
            f"pserver {j} of {pservers}: holds {logged[-1]}, the checkpoint gives it "
            f"{len(rows)} rows, digest {rows_digest(rows)}")
        assert int((owner == j).sum()) == len(rows)


@pytest.mark.parametrize("mode,sizes", [("sync", (3, 2)), ("async", (3, 1)), ("half_async", (3,)),
                                        ("geo", (1,))])
def test_pservers_resize_mid_job_reshard_every_row_and_the_job_succeeds(tmp_path, mode, sizes):
    run = Run(tmp_path, mode, epochs=EPOCHS[mode])
    figures = []
    try:
        run.wait_for(lambda: run.steps(0) >= 10, "trainer 0 training")
        before = 2
        for pservers in sizes:
            path, step, resume_s = run.resize(pservers)
            if mode != "geo":
                check_rows_resharded(run, path, step, pservers)
            figures.append((before, pservers, step, resume_s))
            before = pservers
        status, out = run.finish()
    finally:
        run.stop()
    assert status == 0, out + run.dump()
    summary = json.loads(run.summary.read_text())
    assert summary["status"] == "Succeeded", summary
    resizes = summary["pserver_resizes"]
    assert [(r["from"], r["to"]) for r in resizes] == list(zip((2,) + sizes[:-1], sizes))
    assert [r["step"] for r in resizes] == [f[2] for f in figures]
    assert "restarting" not in out and "backoffLimit" not in out, out  # no failure, no retry
    assert all(p["restarts"] == 0 for p in summary["processes"]), str(summary["processes"]) + run.dump()
    if mode == "sync":  # lock-step rounds: nothing redone, nothing skipped
        assert all(r["steps_redone"] == 0 for r in resizes), resizes
        assert summary["steps"] == 2 * EPOCHS[mode] * 60, summary  # 2 trainers × 3000/50 batches an epoch
    for (n, m, step, resume_s), r in zip(figures, resizes):
        print(f"\n[resize] {mode} {n}→{m} at step {step}: steps redone {r['steps_redone']}, processes "
              f"replaced {r['replaced_after_s']:.2f}s and trainer 0 training again {resume_s:.2f}s after "
              f"`psjob scale`")


def test_psjob_scale_pservers_refuses_what_cannot_apply(tmp_path):
    from psjob.foundation import roles
    work = tmp_path / "work"
    work.mkdir()
    topology = roles.JobTopology(job_name="fixed", namespace="default",
                                 pserver_endpoints=("127.0.0.1:1", "127.0.0.2:1"), trainers=2)
    (work / "topology.json").write_text(json.dumps(roles.topology_to_dict(topology)))

    refused = subprocess.run(PSJOB + ["scale", str(work), "--pservers", "3"], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "keeps no checkpoints (spec.checkpoint.enabled is false)" in refused.stderr
    (work / "topology.json").write_text(json.dumps(roles.topology_to_dict(
        dataclasses.replace(topology, checkpoint_dir=str(tmp_path / "ckpt")))))
    code, err = scale(work, "--pservers", "0")
    assert code == 2 and "--pservers 0: a job needs at least 1 pserver" in err
    code, err = scale(work)
    assert code == 2 and "--workers N and/or --pservers M" in err
    (work / "topology.json").write_text(json.dumps(roles.topology_to_dict(dataclasses.replace(
        topology, checkpoint_dir=str(tmp_path / "ckpt"), heter_trainers=1,
        heter_endpoints=("127.0.0.1:2",)))))
    code, err = scale(work, "--pservers", "3")
    assert code == 2 and "has heter trainers" in err
    assert not (work / "scale-request.json").exists()  # nothing asked of the run
    (work / "topology.json").write_text(json.dumps(roles.topology_to_dict(dataclasses.replace(
        topology, checkpoint_dir=str(tmp_path / "ckpt"), max_trainers=4))))
    assert scale(work, "--pservers", "3")[0] == 0
    assert scale(work, "--workers", "4")[0] == 0  # a request for the other role is kept
    assert json.loads((work / "scale-request.json").read_text()) == {"pservers": 3, "workers": 4}
