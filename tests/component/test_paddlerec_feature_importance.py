"""PaddleRec's feature-importance tool (tools/feature_importance.py, vendored unmodified in
tests/thirdparty/paddlerec) under `psjob launch --as-paddle`, one pserver and one worker, on
rank/slot_dnn's offline-inference configuration (config_offline_infer.yaml: an InMemoryDataset
whose lines lead with an instance id, shots_shuffle_list, candidate_size).

The tool has the pservers load a whole-model save (fleet.load_model), scores the loaded
examples with infer_from_dataset for the baseline global AUC, then for each entry of
runner.shots_shuffle_list: set_fea_eval(candidate_size), slots_shuffle(slots), scores again
and logs that AUC and its drop from the baseline. It reads the model's auc_stat_list and
metric_list and, in its loop, get_global_auc() with its default variable names
(_generated_var_2 / _3: the first auc's statistics, as Paddle names them).

Two things are the test's own, as a user of the tool supplies them: the save, written by a short
driver (train_and_save.py below: PaddleRec's own model, strategy and reader helpers, three
passes of train_from_dataset over the model's 10 demo lines, then fleet.save_persistables:
static_ps_trainer.py's per-epoch save of slot_dnn stops on its `show` feed, which the inference
target does not read, its ShowClickEntry naming it in an attribute only), and the model: slot_dnn's StaticModel keeps its AUC statistics in
a local variable, which feature_importance.py reads as `model.auc_stat_list` (so the shipped
model stops there, under Paddle 3.0.0 too), so static_model.py here is slot_dnn's with the
first four of its metric_list (the auc's) as auc_stat_list and the rest as metric_list. The
table parameters are config_online.yaml's (as in tests/component/test_paddlerec_online_trainer.py:
psjob refuses the offline config's CtrCommonAccessor for that embedding by name)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from thirdparty_code import require  # noqa: E402

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENDOR = require("paddlerec")

MODEL = '''
from slot_dnn_static_model import StaticModel as SlotDNN


class StaticModel(SlotDNN):
    """rank/slot_dnn with its statistics where feature_importance.py reads them."""

    def net(self, input, is_infer=False):
        fetch = super().net(input, is_infer)
        self.auc_stat_list, self.metric_list = self.metric_list[:4], self.metric_list[4:]
        return fetch
'''

TRAIN_AND_SAVE = '''
import os
import sys

import paddle
import paddle.distributed.fleet as fleet

sys.path.insert(0, os.path.abspath(os.path.join("..", "..", "..", "tools")))
from utils.static_ps.common_ps import YamlHelper
from utils.static_ps.program_helper import get_model, get_strategy
from utils.static_ps.reader_helper import get_reader

paddle.enable_static()
config = YamlHelper().load_yaml("config_train.yaml")
config.update(yaml_path="config_train.yaml", config_abs_dir=os.getcwd())
fleet.init()
model = get_model(config)
feeds = model.create_feeds()
model.net(feeds)
model.create_optimizer(get_strategy(config))
if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    reader, _ = get_reader(feeds, config)
    paddle.static.default_main_program()._fleet_opt["stat_var_names"] = []
    for _ in range(3):
        exe.train_from_dataset(paddle.static.default_main_program(), reader)
    fleet.save_persistables(exe, "ps_model/0")
    fleet.stop_worker()
'''

ALL_SLOTS = [str(i) for i in range(2, 302)]  # every feature slot of slot_dnn (300)
AUC_LINE = re.compile(r"slots (\[.*?\]) shuffle, auc: ([0-9.]+)")


def _launch(model, script, config, log_dir, env):
    cmd = [sys.executable, "-m", "psjob.cli", "launch", "--as-paddle", "--server_num", "1", "--worker_num", "1",
           "--log_dir", log_dir, "--timeout", "240", script, "-m", config]
    r = subprocess.run(cmd, cwd=model, env=env, capture_output=True, text=True, timeout=300)
    logs = {name: (model / log_dir / name).read_text(errors="replace") if (model / log_dir / name).exists() else ""
            for name in ("workerlog.0", "serverlog.0")}
    tail = r.stdout[-2000:] + r.stderr[-2000:] + "".join(f"\n--- {k}:\n{v[-3000:]}" for k, v in logs.items())
    return r, logs, tail


@pytest.mark.timeout(300)
def test_feature_importance_scores_the_loaded_model_and_each_slot_shuffle(tmp_path):
    work = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(VENDOR, "tools"), work / "tools")
    model = work / "models" / "rank" / "slot_dnn"
    shutil.copytree(os.path.join(VENDOR, "models", "rank", "slot_dnn"), model)
    os.rename(model / "static_model.py", model / "slot_dnn_static_model.py")
    (model / "static_model.py").write_text(MODEL)
    (model / "train_and_save.py").write_text(TRAIN_AND_SAVE)
    with open(model / "config_online.yaml") as f:
        tables = yaml.safe_load(f)["table_parameters"]
    with open(model / "config_offline_infer.yaml") as f:
        infer = yaml.safe_load(f)
    infer["table_parameters"] = tables
    train = {"hyper_parameters": infer["hyper_parameters"], "table_parameters": tables,
             "runner": {"train_data_dir": "data", "train_reader_path": "queuedataset_reader", "sync_mode": "async",
                        "use_gpu": False, "use_auc": False, "train_batch_size": 5, "thread_num": 1,
                        "reader_type": "QueueDataset", "pipe_command": "python queuedataset_reader.py"}}
    with open(model / "config_train.yaml", "w") as f:
        yaml.safe_dump(train, f)
    offline = model / "infer_data" / "offline"  # the config's data_dir; the reader splits `ins_id\tline`
    offline.mkdir(parents=True)
    with open(model / "data" / "demo_10") as f:
        (offline / "demo_0").write_text("".join(f"ins_{i}\t{line}" for i, line in enumerate(f)))
    shuffles = infer["runner"]["shots_shuffle_list"] + [ALL_SLOTS]  # the config's [["2"], ["3"]], then all
    infer["runner"].update(init_model_path="ps_model/0", pipe_command="python inmemorydataset_reader.py",
                           shots_shuffle_list=shuffles)
    with open(model / "config_fi.yaml", "w") as f:
        yaml.safe_dump(infer, f)

    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for key in ("PYTHONPATH", "PADDLE_TRAINING_ROLE", "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST"):
        env.pop(key, None)
    r, logs, tail = _launch(model, "train_and_save.py", "config_train.yaml", "trainlog", env)
    assert r.returncode == 0 and (model / "ps_model" / "0" / "__manifest__.json").exists(), tail

    r, logs, tail = _launch(model, "../../../tools/feature_importance.py", "config_fi.yaml", "filog", env)
    assert r.returncode == 0, tail
    log = logs["workerlog.0"]
    assert "Run Success, Exit." in log and "gradients sent" not in log, tail
    assert re.search(r"loaded \d+ variable\(s\) from ps_model/0 in", logs["serverlog.0"]), tail
    baseline = float(re.search(r"baseline auc: ([0-9.]+)", log).group(1))
    shuffled = AUC_LINE.findall(log)
    assert [s for s, _ in shuffled] == [str(s) for s in shuffles], log[-3000:]
    for slots, auc in shuffled:
        assert 0.0 <= float(auc) <= 1.0
        drop = float(re.search(rf"slots: {re.escape(slots)}, auc Variation: (-?[0-9.e-]+)", log).group(1))
        assert drop == pytest.approx(baseline - float(auc), abs=1e-12)
    # the model learned its 10 lines; with every feature slot's values moved between them, the
    # examples score with other examples' features and the AUC drops
    assert baseline > 0.5, log[-3000:]
    assert float(shuffled[-1][1]) < baseline, log[-3000:]
