"""PaddleRec's online trainer (tools/static_ps_online_trainer.py) trains rank/slot_dnn, both
vendored unmodified (tests/thirdparty/paddlerec), under `psjob launch --as-paddle` with one
pserver and one worker: a day of passes over PaddleRec's own demo data (laid out by the model's
prepare_online_data.sh), each pass an InMemoryDataset of fleet.util.get_file_shard's files,
global AUC and the ctr_metric_bundle metrics through fleet.util.all_reduce, a checkpoint and a
delta inference model per pass, fleet.shrink at the day's end, the next day's base model, the
batch model and their donefiles. Then PaddleRec's offline inference (static_ps_offline_infer.py)
on the first pass's save, dumping every variable per instance id; then the job restarts for the
next day and resumes from its donefile: fleet.load_model of the last save into the running
pserver, then that day's passes.

One worker, as the model's README runs it: with two, PaddleRec's write_model_donefile returns
before its fleet.barrier_worker() on the first worker only (the first time it writes a local
donefile), so the workers' collectives no longer pair; psjob's pserver then fails both with a
message naming the two calls (tests/unit/test_trainer_gather_members.py), where Paddle's gloo
pairs them out of order.

The run's configuration is the model's config_online.yaml with what a short test needs: one day
(start_day = end_day), two passes (split_interval 720 minutes, one interval per pass), one
reader thread, and `python` for the pipe command's `python3.7`. Paddle 3.0.0 runs the same
configuration (its own run printed the same kinds of lines and wrote the same donefiles; with
NumPy 2.4 its metric helper stops at math.sqrt of a [1] array, with NumPy 2.3 it finishes)."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from thirdparty_code import require  # noqa: E402

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENDOR = require("paddlerec")
DAY, NEXT_DAY = "20190720", "20190721"


@pytest.mark.timeout(420)
def test_paddlerecs_online_trainer_runs_slot_dnn_for_a_day(tmp_path):
    work = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(VENDOR, "tools"), work / "tools")
    model = work / "models" / "rank" / "slot_dnn"
    shutil.copytree(os.path.join(VENDOR, "models", "rank", "slot_dnn"), model)
    subprocess.run(["bash", "prepare_online_data.sh"], cwd=model, check=True, capture_output=True, timeout=120)
    with open(model / "config_online.yaml") as f:
        config = yaml.safe_load(f)
    config["runner"].update(end_day=DAY, split_interval=720, split_per_pass=1, train_thread_num=1,
                            shuffle_thread_num=1, pipe_command="python queuedataset_reader.py")
    with open(model / "config_test.yaml", "w") as f:
        yaml.safe_dump(config, f)

    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for key in ("PYTHONPATH", "PADDLE_TRAINING_ROLE", "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST"):
        env.pop(key, None)
    cmd = [sys.executable, "-m", "psjob.cli", "launch", "--as-paddle", "--server_num", "1", "--worker_num", "1",
           "--log_dir", "log", "--timeout", "300", "../../../tools/static_ps_online_trainer.py", "-m",
           "config_test.yaml"]
    r = subprocess.run(cmd, cwd=model, env=env, capture_output=True, text=True, timeout=360)
    logs = {name: (model / "log" / name).read_text(errors="replace") if (model / "log" / name).exists() else ""
            for name in ("workerlog.0", "serverlog.0")}
    tail = "\n".join(f"--- {k}:\n{v[-3000:]}" for k, v in logs.items())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:] + tail

    log = logs["workerlog.0"]
    assert "Run Success, Exit." in log and "shrink table done" in log, tail
    # Both passes' global metrics; each pass reads one file of the day's demo lines (10).
    metrics = re.findall(r"Day:(\d+), Pass: (\d+), Train Global Metric: +global AUC=([\d.]+) .*Ins number=(\d+)", log)
    assert [(d, p, n) for d, p, _, n in metrics] == [(DAY, "1", "10"), (DAY, "2", "10")], log[-3000:]
    assert all(0.0 <= float(auc) <= 1.0 for _, _, auc, _ in metrics)
    assert re.findall(r"Day:\d+, Pass: (\d+), Infer Global Metric", log) == ["1", "2"]

    out = model / "output_model"
    donefile = [line.split("\t") for line in (out / "donefile.txt").read_text().splitlines()]
    assert [(d[0], d[2], d[3]) for d in donefile] == [
        (DAY, f"output_model/{DAY}/1/", "1"), (NEXT_DAY, f"output_model/{NEXT_DAY}/0/", "-1")]
    for saved in (out / DAY / "1", out / NEXT_DAY / "0"):
        assert (saved / "linear_0.w_0").exists() and (saved / "__tables__").is_dir(), sorted(os.listdir(saved))

    # Offline inference (tools/static_ps_offline_infer.py, config_offline_infer.yaml) on the first
    # pass's save: fleet.load_model by the first worker, an InMemoryDataset whose lines lead with
    # an instance id (parse_ins_id), infer_from_dataset dumping every variable of the model per
    # example. It pushes nothing: no gradient reaches the pserver.
    offline = model / "infer_data" / "offline"
    offline.mkdir(parents=True)
    with open(model / "data" / "demo_10") as f:  # the reader splits `ins_id\tline`
        (offline / "demo_0").write_text("".join(f"ins_{i}\t{line}" for i, line in enumerate(f)))
    with open(model / "config_offline_infer.yaml") as f:
        infer_config = yaml.safe_load(f)
    infer_config["runner"].update(init_model_path=f"output_model/{DAY}/1",
                                  pipe_command="python inmemorydataset_reader.py")
    # The table as the online trainer trained it: the offline config names a CtrCommonAccessor
    # (rows pulled with show and click, fea_dim 11) for the same 9-column embedding, which psjob
    # refuses by name (docs/user/paddle2.md, sparse_table_configs).
    infer_config["table_parameters"] = config["table_parameters"]
    with open(model / "config_infer_test.yaml", "w") as f:
        yaml.safe_dump(infer_config, f)
    infer_cmd = cmd[:-3] + ["../../../tools/static_ps_offline_infer.py", "-m", "config_infer_test.yaml"]
    shutil.rmtree(model / "log")
    r = subprocess.run(infer_cmd, cwd=model, env=env, capture_output=True, text=True, timeout=360)
    inferred = (model / "log" / "workerlog.0").read_text(errors="replace")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:] + inferred[-3000:]
    assert "Infer Dataset Done" in inferred and "gradients sent" not in inferred, inferred[-3000:]
    dumped = (model / "dump_offline_infer" / "part-000-00000").read_text().splitlines()
    assert [line.split("\t")[0] for line in dumped] == [f"ins_{i}" for i in range(10)]
    fields = [field.split(":")[:2] for field in dumped[0].split("\t")[1:]]
    assert len(fields) > 300 and all(int(n) > 0 for _, n in fields), dumped[0][:500]

    # A restarted job resumes from its donefile: fleet.load_model of the last save (the next day's
    # base) into the running pserver, then that day's passes.
    config["runner"]["end_day"] = NEXT_DAY
    with open(model / "config_test.yaml", "w") as f:
        yaml.safe_dump(config, f)
    shutil.rmtree(model / "log")
    r = subprocess.run(cmd, cwd=model, env=env, capture_output=True, text=True, timeout=360)
    resumed = (model / "log" / "workerlog.0").read_text(errors="replace")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:] + resumed[-3000:]
    assert f"going to load model output_model/{NEXT_DAY}/0/" in resumed and "load model cost" in resumed
    assert re.findall(r"Day:(\d+), Pass: (\d+), Train Global Metric", resumed) == [(NEXT_DAY, "1"), (NEXT_DAY, "2")]
    assert "loaded" in (model / "log" / "serverlog.0").read_text(errors="replace")
    donefile = [line.split("\t") for line in (out / "donefile.txt").read_text().splitlines()]
    assert [(d[0], d[3]) for d in donefile][2:] == [(NEXT_DAY, "1"), ("20190722", "-1")], donefile

    # The next day's base inference model (the dense part, fed with the embeddings) loads and
    # scores in a fresh process. psjob's layout: the program and dense parameters in the folder,
    # the table in __tables__ (Paddle's: dnn_plugin/ and the table's shard folders).
    base = out / NEXT_DAY / "base"
    assert (base / "__model__").exists() and (base / "__tables__").is_dir(), sorted(os.listdir(base))
    check = subprocess.run([sys.executable, "-c", SCORE, str(base)], capture_output=True, text=True, timeout=120,
                           env=env)
    assert check.returncode == 0, check.stderr[-2000:]
    scores = np.array(check.stdout.split(), dtype=float)
    assert scores.shape == (4,) and np.all((scores > 0) & (scores < 1))


SCORE = """
import sys
import numpy as np
import psjob as paddle
paddle.enable_static()
exe = paddle.static.Executor(paddle.CPUPlace())
program, feeds, fetches = paddle.fluid.io.load_inference_model(sys.argv[1], exe)
block = program.global_block()
rs = np.random.RandomState(0)
feed = {n: rs.uniform(-0.01, 0.01, (4, block.var(n).shape[-1])).astype("float32") for n in feeds}
out, = exe.run(program, feed=feed, fetch_list=fetches)
print(" ".join(str(v) for v in np.asarray(out).reshape(-1)))
"""
