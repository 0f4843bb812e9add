"""PaddlePaddle 1.8's own parameter-server test programs (tests/thirdparty/paddle18-tests,
unmodified) run under `psjob as-paddle` with real pservers and trainers on 127.0.0.1.

- DistributeTranspiler (Fluid 1.x): Paddle's TestDistBase harness (test_dist_base.py) on
  dist_simnet_bow.py, driven by tests/paddle18dist/run_dist_base.py with the cases of Paddle
  1.8's test_dist_simnet_bow.py. Its check_with_place runs the program locally, then with 2
  pservers + 2 trainers (get_pserver_program / get_startup_program / get_trainer_program,
  dense, is_sparse and is_distributed embeddings, sync and async), and asserts every step's
  local loss equals the mean of the trainers' within its delta: psjob must pass that
  assertion. The program starts from constant initial values and reads its data in order,
  so its local losses are also pinned to Paddle 1.8.5's (PADDLE185_LOCAL, printed by the same
  driver under Paddle 1.8.5 on the same data). They stay near the margin 0.1 because both
  cosines start at 1; what moves them is float32 rounding of those cosines, so they are
  compared within the harness's own delta (1e-5), not more tightly.
- Fleet 1.x (paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler): Paddle's
  TestFleetBase command lines (test_dist_fleet_base.py's _run_cluster: 2 pservers and 2
  trainers with UserDefinedRoleMaker, StrategyFactory sync / async / half_async / geo) on
  dist_fleet_ctr.py, through PyReader + CompiledProgram and through train_from_dataset with
  its `python ctr_dataset_reader.py` pipe. That harness asserts nothing about results (it
  only waits for the trainers), and the program shuffles (paddle.reader.shuffle) and samples
  (random 5 %) its data, so these runs are checked for exit status and finite losses only.

Data: the programs download theirs (paddle.dataset.common.download + md5); there is no
internet here, so tests/paddle18dist/makedata.py writes synthetic files in the exact format
into a temporary DATA_HOME, and tests/paddle18dist/sitecustomize.py, on the PYTHONPATH of
these runs (and of the Paddle 1.8.5 reference runs alike), points DATA_HOME there and
answers download() for those URLs with the file already in place.

Paddle 1.8.5 itself stops on the is_distributed (lookup-table) cases in its transpiler
(IndexError in DistributeTranspiler._replace_lookup_table_op_with_prefetch); psjob passes the
harness there too. Paddle 1.8.5 hangs on train_from_dataset in sync (and half_async) mode with two
threads; psjob refuses sync mode with a clear error instead (checked below).
"""
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
from contextlib import closing

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENDORED = os.path.join(TESTS, "thirdparty", "paddle18-tests")
SUPPORT = os.path.join(TESTS, "paddle18dist")
sys.path.insert(0, SUPPORT)
import makedata  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.isdir(VENDORED), reason="tests/thirdparty/paddle18-tests is absent")

# Paddle 1.8.5's local losses for the simnet cases (every case trains the same local program),
# from `python run_dist_base.py simnet_dense_sync` under Paddle 1.8.5 on makedata's data.
PADDLE185_LOCAL = [0.10000205, 0.100001276, 0.10000026, 0.09999919, 0.099998236]
HARNESS_DELTA = 1e-5  # test_dist_simnet_bow.py's delta for its sync cases

SIMNET_SYNC = ["simnet_dense_sync", "simnet_sparse_sync", "simnet_lookup_table_sync",
               "simnet_lookup_table_not_contain_lr_sync"]
SIMNET_ASYNC = ["simnet_sparse_async", "simnet_lookup_table_async"]
# name: what psjob gets wrong (strict: these must keep failing until fixed).
XFAIL = {
    "simnet_sparse_sync_adam": (
        "Paddle's assertion fails: with Adam the local run's 5th loss is 1.0500001, the trainers' "
        "mean 0.0999999 (Paddle 1.8.5: 0.10000023 both). Not a semantic difference: every fc output "
        "starts as a constant vector, so both cosines are exactly 1 and every gradient exactly 0 in "
        "exact arithmetic; the gradients psjob and Paddle compute are float32 rounding noise "
        "(1e-11..1e-7), which Adam turns into +-lr steps of noise-chosen "
        "sign. psjob's per-sample forward values depend on the batch's row count at the last "
        "float32 bit (numpy's BLAS picks another kernel for 1 row than for 2), so its local "
        "(2 rows) and trainer (1 row each) runs take different noise; Paddle 1.8.5's do not"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A copy of the vendored programs and the harness driver, and a DATA_HOME with the data."""
    work = tmp_path_factory.mktemp("paddle18")
    for name in os.listdir(VENDORED):
        if name.endswith(".py"):
            shutil.copy(os.path.join(VENDORED, name), work)
    shutil.copy(os.path.join(SUPPORT, "run_dist_base.py"), work)
    data_home = work / "data_home"
    urls = makedata.all_data(str(data_home))
    env = dict(os.environ, PADDLE18_DATA_HOME=str(data_home), PADDLE18_TEST_URLS=",".join(urls),
               PYTHONPATH=os.pathsep.join(p for p in (SUPPORT, os.environ.get("PYTHONPATH")) if p),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return work, env


def _as_paddle(*argv):
    return [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-u", *argv]


def _dist_base(workdir, case):
    work, env = workdir
    proc = subprocess.run(_as_paddle("run_dist_base.py", case), cwd=work, env=env, capture_output=True,
                          text=True, errors="replace", timeout=150)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, f"{case}: exit {proc.returncode}\n{proc.stderr[-4000:]}"
    result = json.loads(lines[-1])
    logs = "".join((work / f"{case}_{part}.log").read_text(errors="replace")[-1500:]
                   for part in ("local", "tr0_err", "ps0_err") if (work / f"{case}_{part}.log").exists())
    assert result["ok"], f"{case}: Paddle's harness assertion failed: {result}\n{proc.stderr[-3000:]}\n{logs}"
    assert len(result["local"]) == len(result["dist"]) == 5, result
    return result


@pytest.mark.parametrize("case", SIMNET_SYNC + [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=why)) for name, why in XFAIL.items()])
def test_dist_base_sync_equals_local_and_paddle(workdir, case):
    result = _dist_base(workdir, case)
    for step, (got, want) in enumerate(zip(result["local"], PADDLE185_LOCAL)):
        assert abs(got - want) <= HARNESS_DELTA, f"step {step}: psjob {got} vs Paddle 1.8.5 {want}"


@pytest.mark.parametrize("case", SIMNET_ASYNC)
def test_dist_base_async_runs(workdir, case):
    result = _dist_base(workdir, case)
    assert all(math.isfinite(v) for v in result["local"] + result["dist"]), result


def _free_port():
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fleet_cluster(workdir, mode, reader, tag):
    """TestFleetBase._run_cluster's four processes (its exact arguments), each under psjob
    as-paddle; (trainer exit codes, trainer outputs)."""
    work, env = workdir
    env = dict(env, GRAD_CLIP="0", FLAGS_rpc_deadline="5000", http_proxy="")
    endpoints = "127.0.0.1:%d,127.0.0.1:%d" % (_free_port(), _free_port())

    def start(role, i):
        args = ["dist_fleet_ctr.py", "--role", role, "--endpoints", endpoints, "--current_id", str(i),
                "--trainers", "2", "--mode", mode, "--geo_sgd_need_push_nums", "5", "--reader", reader]
        out = open(work / f"{tag}_{role}{i}.log", "w")
        return subprocess.Popen(_as_paddle(*args), cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT), out

    servers = [start("pserver", i) for i in (0, 1)]
    trainers = [start("trainer", i) for i in (0, 1)]
    try:
        codes = [p.wait(timeout=150) for p, _ in trainers]
    finally:
        for p, out in servers + trainers:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
            out.close()
    return codes, [(work / f"{tag}_trainer{i}.log").read_text(errors="replace") for i in (0, 1)]


@pytest.mark.parametrize("mode", ["sync", "async", "half_async", "geo"])
def test_fleet_ctr_pyreader(workdir, mode):
    codes, outs = _fleet_cluster(workdir, mode, "pyreader", f"pyreader_{mode}")
    for i, (code, out) in enumerate(zip(codes, outs)):
        assert code == 0, f"trainer {i} exited {code}:\n{out[-4000:]}"
        losses = [float(v) for v in re.findall(r"TRAIN ---> pass: 0 loss: (\S+)", out)]
        # 2 x 1000 lines in batches of 128, the last one short: 16 steps, each printed
        assert len(losses) == 16 and all(math.isfinite(v) for v in losses), out[-3000:]


@pytest.mark.parametrize("mode", ["async", "geo"])
def test_fleet_ctr_dataset(workdir, mode):
    codes, outs = _fleet_cluster(workdir, mode, "dataset", f"dataset_{mode}")
    for i, (code, out) in enumerate(zip(codes, outs)):
        assert code == 0, f"trainer {i} exited {code}:\n{out[-4000:]}"
        done = re.findall(r"trainer=%d finished steps=(\d+) .*loss=(\S+)" % i, out)
        assert done and int(done[-1][0]) > 0 and math.isfinite(float(done[-1][1])), out[-3000:]


def test_fleet_ctr_dataset_sync_refused_clearly(workdir):
    codes, outs = _fleet_cluster(workdir, "sync", "dataset", "dataset_sync")
    for code, out in zip(codes, outs):
        assert code != 0
        assert "train_from_dataset(thread=2) on a sync-mode trainer program" in out, out[-3000:]
