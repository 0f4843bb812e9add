"""Unmodified Paddle code under psjob (psjob.launcher.aspaddle): a script that says `import paddle` and
`import paddle.distributed.fleet as fleet`, with a QueueDataset whose pipe_command reader imports
paddle too, run as 1 pserver + 2 trainers by `psjob launch --as-paddle`, and as a job with
spec.asPaddle by `psjob run` (the operator's `psjob as-paddle --` command, run locally)."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import psjob

NOTICE = f"paddle -> psjob {psjob.__version__} (--as-paddle)"
BATCH_LOSS = re.compile(r"\[thread 0\] batch \d+: loss: \[([-0-9.e]+)\]")


@pytest.fixture
def data(tmp_path):
    """Two files of "x1 .. x13 y" lines, y linear in x."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=13)
    directory = tmp_path / "data"
    directory.mkdir()
    for part in range(2):
        x = rng.normal(size=(200, 13))
        rows = np.hstack([x, (x @ w)[:, None]])
        (directory / f"part-{part}").write_text("".join(" ".join(f"{v:.5f}" for v in r) + "\n" for r in rows))
    return directory


def python_first_on_path():
    """The reader's pipe_command says `python`: this interpreter, as an activated environment has it."""
    return {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}


def results(log_text):
    return [json.loads(line[len("RESULT "):]) for line in log_text.splitlines() if line.startswith("RESULT ")]


def test_an_unmodified_paddle_script_trains_under_psjob_launch_as_paddle(tmp_path, data, script, launch,
                                                                          read_logs):
    log_dir = tmp_path / "log"
    r = launch(["--as-paddle", "--server_num", "1", "--worker_num", "2", "--mode", "async", "--log_dir",
                str(log_dir), script("paddle_unmodified.py"), "--data", str(data)], env=python_first_on_path())
    assert r.returncode == 0, r.stdout + r.stderr + read_logs(log_dir)
    assert "[psjob] --as-paddle: `import paddle` is psjob" in r.stdout
    for name in ("serverlog.0", "workerlog.0", "workerlog.1"):
        text = (log_dir / name).read_text()
        assert text.count(NOTICE) == 1 and "WARNING: paddle -> psjob shadows" not in text, text[-2000:]
    for t in (0, 1):
        text = (log_dir / f"workerlog.{t}").read_text()
        assert results(text) == [{"paddle": "psjob", "fleet": "psjob.distributed.fleet", "fleet_is_module": True,
                                  "worker": t}], text[-2000:]
        # Every batch came through the reader (a grandchild that imported paddle): both files,
        # 400 lines, 25 batches of 16 per epoch, printed at batches 10 and 20; 3 epochs; the loss fell.
        losses = [float(v) for v in BATCH_LOSS.findall(text)]
        assert len(losses) == 3 * 2 and losses[-1] < 0.1 * losses[0], losses


def test_without_as_paddle_the_same_script_has_no_paddle(tmp_path, data, script, launch):
    log_dir = tmp_path / "log"
    r = launch(["--server_num", "1", "--worker_num", "1", "--log_dir", str(log_dir),
                script("paddle_unmodified.py"), "--data", str(data)], env=python_first_on_path())
    assert r.returncode != 0
    # The pserver and the trainer both run the script; whichever fails first ends the job,
    # possibly before the other has written its traceback.
    logs = [(log_dir / name).read_text() for name in ("serverlog.0", "workerlog.0") if (log_dir / name).exists()]
    assert any("No module named 'paddle'" in text for text in logs), logs


def test_a_job_with_as_paddle_runs_it_under_psjob_run(tmp_path, data, script):
    job = tmp_path / "job.yaml"
    job.write_text(f"""\
apiVersion: psjob.dev/v1alpha1
kind: ParameterServerJob
metadata:
  name: unmodified
spec:
  image: ghcr.io/psjob/psjob:0.1.0
  asPaddle: true
  command: ["python", {json.dumps(script("paddle_unmodified.py"))}, "--data", {json.dumps(str(data))}, "--epochs", "2"]
  mode: async
  pserver:
    replicas: 1
  worker:
    replicas: 1
  checkpoint:
    enabled: false
""")
    env = dict(os.environ)
    env.update(python_first_on_path())
    work = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "psjob.cli", "run", str(job), "--workdir", str(work)],
                       capture_output=True, text=True, timeout=240, env=env)
    worker = (work / "logs" / "worker-0.log").read_text() if (work / "logs" / "worker-0.log").exists() else ""
    assert r.returncode == 0, r.stdout + r.stderr + worker[-3000:]
    assert worker.count(NOTICE) == 1 and results(worker)[0]["paddle"] == "psjob", worker[-2000:]
    assert (work / "logs" / "pserver-0.log").read_text().count(NOTICE) == 1
