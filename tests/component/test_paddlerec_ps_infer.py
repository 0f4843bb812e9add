"""PaddleRec's distributed evaluation (tools/static_ps_infer.py, vendored unmodified in
tests/thirdparty/paddlerec) of the per-epoch inference models its tools/static_ps_trainer.py saves,
both under `psjob launch --as-paddle` with one pserver and one trainer, on rank/dnn with its own
config_cpups.yaml (async, its pipe reader, AUC statistics) and the 80 lines of its sample data.

The trainer saves `ps_model/<epoch>` with fleet.save_inference_model; static_ps_infer.py then,
for each epoch, has the pservers load that save (fleet.load_inference_model(dir, mode=0)) and
scores the data with exe.infer_from_dataset, logging every batch's cost and AUC and the epoch's
global AUC. Those are checked against the same saves scored in one fresh process
(paddle.static.load_inference_model, the AUC statistics zeroed, the data in the same batches):
equal batch for batch, so the pservers served each epoch's saved parameters and table rows, not
what they held before. The evaluation sends no gradient (its trainer's communicator sends none),
and a mode psjob does not save (Paddle's runner.model_mode=1) is refused by name."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from paddlereczoo import run_ps  # noqa: E402
from thirdparty_code import require  # noqa: E402

pytest.importorskip("yaml", reason="PaddleRec's tools need pyyaml (the test extras)")
pytest.importorskip("six", reason="PaddleRec's tools need six (the test extras)")

PADDLEREC = require("paddlerec")
BATCH = 16  # 80 lines: five batches an epoch
COST = re.compile(r"\[thread 0\] batch (\d+): Epoch (\d+) Var cost: \[([^\]]+)\], Epoch \d+ Var auc: \[([^\]]+)\]")
GLOBAL_AUC = re.compile(r"Epoch: (\d+), using time.*auc: ([0-9.]+)")

# Run under `psjob as-paddle` in the model's folder: argv = [config, batch size, saved dirs...].
# Each save scored alone over the model's own reader (criteo_reader, the fields in create_feeds'
# order), its AUC statistics zeroed first (the save holds the trainer's); prints per save the
# batches' mean cross entropy (from the softmax the model's cost reads) and the AUC op's value.
REFERENCE = r"""
import json, os, sys
import numpy as np
import paddle
sys.path.insert(0, os.path.abspath(os.path.join("..", "..", "..", "tools")))
from utils.static_ps.common_ps import YamlHelper
paddle.enable_static()
config = YamlHelper().load_yaml(sys.argv[1])
config["config_abs_dir"] = os.getcwd()
sys.path.insert(0, os.getcwd())
from static_model import StaticModel
with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
    names = [v.name for v in StaticModel(config).create_feeds(is_infer=False)]
reader = __import__(config.get("runner.train_reader_path"))
data_dir = os.path.join(os.getcwd(), config.get("runner.train_data_dir"))
examples = list(reader.RecDataset([os.path.join(data_dir, f) for f in sorted(os.listdir(data_dir))], config=config))
size = int(sys.argv[2])
exe = paddle.static.Executor(paddle.CPUPlace())
out = {}
for saved in sys.argv[3:]:
    program, feeds, fetches = paddle.static.load_inference_model(saved, exe, model_filename=None,
                                                                 params_filename=None)
    block = program.global_block()
    stats = {n for op in block.ops if op.type == "auc" for n in op.input("StatPos") + op.input("StatNeg")}
    assert stats, "no auc op in the inference model"
    for name in stats:
        tensor = paddle.static.global_scope().find_var(name).get_tensor()
        tensor.set(np.zeros_like(np.array(tensor)), paddle.CPUPlace())
    predict = [op for op in block.ops if op.type == "softmax"][-1].output("Out")[0]
    costs, aucs = [], []
    for start in range(0, len(examples), size):
        batch = examples[start:start + size]
        feed = {n: np.stack([np.asarray(e[names.index(n)]) for e in batch]) for n in feeds}
        prob, auc = exe.run(program, feed=feed, fetch_list=[predict, fetches[0]])
        label = feed["label"].reshape(-1)
        costs.append(float(np.mean(-np.log(np.asarray(prob)[np.arange(len(label)), label]))))
        aucs.append(float(np.asarray(auc).reshape(-1)[0]))
    out[saved] = {"costs": costs, "aucs": aucs}
print("REFERENCE " + json.dumps(out))
"""


def _tail(r, logs):
    return "\n".join([r.stdout[-1500:], r.stderr[-1500:], *(f"--- {n}\n{t[-2500:]}" for n, t in logs.items())])


def _scored(log):
    """{epoch: ([batch costs], [batch AUCs])} from static_ps_infer's worker log."""
    out: dict[int, tuple[list, list]] = {}
    for batch, epoch, cost, auc in COST.findall(log):
        costs, aucs = out.setdefault(int(epoch), ([], []))
        assert int(batch) == len(costs) + 1, log[-3000:]
        costs.append(float(cost))
        aucs.append(float(auc))
    return out


@pytest.mark.timeout(300)
def test_static_ps_infer_scores_each_epochs_saved_model(tmp_path):
    root = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(PADDLEREC, "tools"), root / "tools")
    model_dir = root / "models" / "rank" / "dnn"
    shutil.copytree(os.path.join(PADDLEREC, "models", "rank", "dnn"), model_dir)
    (model_dir / "ps_model").mkdir()
    common = ["runner.epochs=2", "runner.thread_num=1", f"runner.train_batch_size={BATCH}", "runner.print_interval=1",
              f"runner.pipe_command=python {model_dir / 'queuedataset_reader.py'}"]
    r, logs = run_ps(model_dir, [*common, "runner.model_save_path=ps_model"], config="config_cpups.yaml")
    assert r.returncode == 0 and "Run Success, Exit." in logs.get("workerlog.0", ""), _tail(r, logs)
    assert "gradients sent" in logs["workerlog.0"]  # the training did send: the check below can fail

    r, logs = run_ps(model_dir, [*common, "runner.infer_load_path=ps_model"], config="config_cpups.yaml",
                     tool="static_ps_infer.py", log_dir="inferlog")
    assert r.returncode == 0, _tail(r, logs)
    log = logs["workerlog.0"]
    assert "Run Success, Exit." in log and "gradients sent" not in log, _tail(r, logs)
    served = re.findall(r"loaded \d+ variable\(s\) from (\S+) in", logs["serverlog.0"])
    assert served == ["ps_model/0", "ps_model/1"], logs["serverlog.0"][-3000:]

    ref = subprocess.run([sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-c", REFERENCE,
                          "config_cpups.yaml", str(BATCH), "ps_model/0", "ps_model/1"],
                         cwd=model_dir, capture_output=True, text=True, timeout=120)
    assert ref.returncode == 0, ref.stderr[-3000:]
    want = json.loads(re.search(r"^REFERENCE (.*)$", ref.stdout, re.M).group(1))
    scored = _scored(log)
    assert sorted(scored) == [0, 1], log[-3000:]
    for epoch in (0, 1):
        costs, aucs = scored[epoch]
        saved = want[f"ps_model/{epoch}"]
        np.testing.assert_allclose(costs, saved["costs"], rtol=1e-5)
        np.testing.assert_allclose(aucs, saved["aucs"], rtol=1e-6, atol=1e-8)
    # the two saves score differently, so matching each proves each was loaded
    assert not np.allclose(want["ps_model/0"]["costs"], want["ps_model/1"]["costs"], rtol=1e-3)
    # the epoch's global AUC (metric_helper.get_global_auc over the trainers' statistics) is the
    # AUC of the whole pass: the last batch's cumulative AUC
    global_aucs = {int(e): float(a) for e, a in GLOBAL_AUC.findall(log)}
    assert sorted(global_aucs) == [0, 1]
    for epoch in (0, 1):
        assert global_aucs[epoch] == pytest.approx(want[f"ps_model/{epoch}"]["aucs"][-1], abs=1e-6)

    r, logs = run_ps(model_dir, [*common, "runner.infer_load_path=ps_model", "runner.model_mode=1"],
                     config="config_cpups.yaml", tool="static_ps_infer.py", log_dir="modelog")
    assert r.returncode != 0
    assert "fleet.load_inference_model('ps_model/0', mode=1): psjob loads mode 0" in logs.get("workerlog.0", ""), \
        _tail(r, logs)
