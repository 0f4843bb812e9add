"""PaddleRec's zoo (tests/thirdparty/paddlerec/models, unmodified) trained in parameter-server mode
by PaddleRec's own tools/static_ps_trainer.py under `psjob launch --as-paddle`.

static_ps_trainer.py trains only from a QueueDataset/InmemoryDataset, whose runner.pipe_command
turns each data file into MultiSlot lines; the models other than dnn, wide_deep and ncf ship no
such pipe reader, so tests/paddlerec_pipe.py is the command: it prints what the model's own
DataLoader reader (the one static_trainer.py uses) yields, field by field.

Two checks, each in a copy under tmp_path whose data file is cut to a few batches:
- every model, 1 pserver + 2 trainers (async, or sync, as MODELS says; QueueDataset, or
  InmemoryDataset; 1 or 2 Hogwild threads each), 2 epochs: the launch exits 0, both trainers log
  "Run Success, Exit.", every printed cost is finite and (but for autoint, MODELS) the second epoch's mean cost is below the
  first's, and the last epoch's inference model (fleet.save_inference_model) loads in a fresh
  process and scores a batch of the model's own data to finite values. (static_infer.py reads
  static_trainer.py's `rec_static` saves, not inference models, so it has nothing to read here.)
- the pinned models, 1 pserver + 1 trainer in sync mode from the start parameters of the
  single-process zoo tests (write_paddle_init's file, loaded by the pserver through
  runner.warmup_model_path -> fleet.init_server): the per-batch costs equal Paddle 3.0.0's
  single-process costs the zoo tests pin (sync PS equals single-process training).

- rank/dnn with its own config_cpups.yaml and pipe reader in geo mode.

The models static_ps_trainer.py stops on, under Paddle as well, are strict xfails (BLOCKED, with
the error the run prints). deepfefm and naml are left out (docs/user/paddle2.md says why).
"""
from __future__ import annotations

import importlib.util
import math
import os
import re
import shutil
import sys
from dataclasses import dataclass

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from paddlereczoo import check_inference_model, param_shapes, run_ps, write_init_from_shapes, write_psjob_init  # noqa: E402
from thirdparty_code import require  # noqa: E402

pytest.importorskip("yaml", reason="PaddleRec's trainers need pyyaml (the test extras)")
pytest.importorskip("six", reason="PaddleRec's trainers need six (the test extras)")

PADDLEREC = require("paddlerec")
PIPE = os.path.join(HERE, "..", "paddlerec_pipe.py")
# run_dataset prints "[thread T] batch N: Epoch E Var cost: [C], Epoch E Var auc: [A]"
COST = re.compile(r"\[thread (\d+)\] batch (\d+): Epoch (\d+) Var cost: \[([^\]]+)\]")


@dataclass(frozen=True)
class Model:
    group: str
    data: str | None = None  # the data file cut to `lines` (None: all data as shipped)
    lines: int | None = None
    overrides: tuple = ()
    # the 2-trainer run: its sync_mode (geo needs runner.geo_step, an int only where the config
    # has the key: PaddleRec's -o keeps other values strings, which Paddle's a_sync_configs
    # refuses, and so does psjob's), reader type and Hogwild threads per trainer
    mode: str = "async"
    reader: str = "QueueDataset"
    threads: int = 1
    # the second epoch's mean cost below the first's (tagspace's hinge loss is mostly 0 and
    # match-pyramid's near 1 on the sample: for them, not above it, within 1e-4; None: not compared)
    falls: bool | None = True


CRITEO = "data/sample_data/train/sample_train.txt"
MODELS = {
    # AutoInt's four Adam steps a trainer (batch 2) move its cost on these lines either way: its
    # second epoch's mean rose in 1 of 8 runs (1.77 -> 2.02; the runtime before this check's
    # last change too, 1 of 5), with 32 lines in 2 of 5 (0.65 -> 1.04): not compared.
    "autoint": Model("rank", CRITEO, 8, ("runner.use_gpu=False",), falls=None),
    "dcn": Model("rank", "data/sample_data/sample_train.txt", 32, mode="sync"),
    "deepfm": Model("rank", CRITEO, 8, threads=2),
    "difm": Model("rank", CRITEO, 16),
    "dlrm": Model("rank", CRITEO, 8, reader="InmemoryDataset"),
    "fm": Model("rank", CRITEO, 16, mode="sync"),
    "gatenet": Model("rank", CRITEO, 16, threads=2),
    "logistic_regression": Model("rank", CRITEO, 16),
    "xdeepfm": Model("rank", CRITEO, 16),
    "tagspace": Model("contentunderstanding", "data/train_data/small_train.csv", 80, falls=False),
    "match-pyramid": Model("match", falls=False),  # its loss slices a batch of 128: one a pass
}

# Models static_ps_trainer.py stops on: the error line the run prints. Paddle 3.0.0 stops on
# each as well: the first four kinds are PaddleRec's own Python (the trainer reads
# model.inference_target_var, asserts create_feeds gave a list, counts a binary file's text
# lines); for the [-1, -1] slots Paddle's QueueDataset resizes the batch to a negative
# dimension (checked with a two-slot program); for a feed the inference targets do not use,
# Paddle's save_inference_model raises too ("doesn't exist in pruned inference program").
NO_TARGET = "object has no attribute 'inference_target_var'"
BINARY = "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80"
OPEN_SLOT = "has an unknown dimension after the batch one; give it lod_level=1 for a variable-length slot"
UNUSED_FEED = "is not needed to compute the targets (or not in the program)"
BLOCKED = {
    # dien, dsin and dselect_k also lack inference_target_var: the pservers stop on that (their
    # network() comes first there), the trainers on the data; whichever a run logs first stands
    "bst": ("rank", OPEN_SLOT), "din": ("rank", OPEN_SLOT), "dien": ("rank", (OPEN_SLOT, NO_TARGET)),
    "dmr": ("rank", NO_TARGET), "dsin": ("rank", (BINARY, NO_TARGET)),
    "dselect_k": ("multitask", (BINARY, NO_TARGET)), "escm2": ("multitask", NO_TARGET), "esmm": ("multitask", NO_TARGET),
    "mmoe": ("multitask", NO_TARGET), "ple": ("multitask", NO_TARGET), "share_bottom": ("multitask", NO_TARGET),
    "mind": ("recall", NO_TARGET), "ncf": ("recall", UNUSED_FEED), "tisas": ("recall", "assert isinstance(input_var, list)"),
    "word2vec": ("recall", NO_TARGET), "multiview-simnet": ("match", UNUSED_FEED),
    "textcnn": ("contentunderstanding", NO_TARGET),
}
MODELS.update({name: Model(group) for name, (group, _) in BLOCKED.items()})

# The single-process zoo tests' pins (Paddle 3.0.0's costs from write_paddle_init's parameters;
# their data cuts are the ones above, or longer).
# (difm and gatenet, pinned there too, pass here as well: left out to keep the file short)
_PINNED_IN = {"rank_a": ("autoint", "dcn", "deepfm", "dlrm"),
              "rank_b": ("fm", "logistic_regression", "xdeepfm"), "multitask": ("tagspace",)}


def _pins():
    pins = {}
    for module, names in _PINNED_IN.items():
        spec = importlib.util.spec_from_file_location(f"_zoo_{module}", os.path.join(HERE, f"test_paddlerec_zoo_{module}.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up there
        spec.loader.exec_module(mod)
        pins.update({n: mod.PADDLE_COSTS[n] for n in names})
    return pins


PADDLE_COSTS = _pins()
# Batches of the cut data (the pins may go further; the last batch of a QueueDataset pass may be
# partial, static_trainer's DataLoader drops it).
PINNED_BATCHES = {"xdeepfm": 3, "tagspace": 8}


def _model_dir(tmp_path, name):
    spec = MODELS[name]
    root = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(PADDLEREC, "tools"), root / "tools")
    model_dir = root / "models" / spec.group / name
    shutil.copytree(os.path.join(PADDLEREC, "models", spec.group, name), model_dir)
    if spec.lines is not None:
        data = model_dir / spec.data
        data.write_text("".join(data.read_text().splitlines(keepends=True)[:spec.lines]))
    (model_dir / "ps_model").mkdir()  # made before the trainers start: both would makedirs it
    return model_dir


def _ps_overrides(name, *extra):
    return ["runner.reader_type=QueueDataset", f"runner.pipe_command=python {os.path.abspath(PIPE)}",
            "runner.thread_num=1", "runner.print_interval=1", "runner.use_auc=False",
            "runner.model_save_path=ps_model", *MODELS[name].overrides, *extra]


def _costs(log):
    """{epoch: [cost of batch 1, 2, ...]} from one trainer's log."""
    out: dict[int, list[float]] = {}
    seen: dict[tuple, int] = {}
    for thread, batch, epoch, cost in COST.findall(log):
        seen[thread, epoch] = seen.get((thread, epoch), 0) + 1
        assert seen[thread, epoch] == int(batch), log[-3000:]  # every batch printed, in order
        out.setdefault(int(epoch), []).append(float(cost))
    return out


def _tail(r, logs):
    return "\n".join([r.stdout[-1500:], r.stderr[-1500:], *(f"--- {n}\n{t[-2500:]}" for n, t in logs.items())])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_two_trainers_train_and_save_a_loadable_inference_model(tmp_path, name):
    model_dir = _model_dir(tmp_path, name)
    spec = MODELS[name]
    r, logs = run_ps(model_dir, _ps_overrides(name, "runner.epochs=2", f"runner.sync_mode={spec.mode}",
                                              f"runner.reader_type={spec.reader}", f"runner.thread_num={spec.threads}"),
                     workers=2)
    if name in BLOCKED:
        # still stopped where BLOCKED says (a model that runs, or stops elsewhere, fails here)
        # (in any process's log: whichever role fails first, the launcher stops the others before they log)
        errors = BLOCKED[name][1] if isinstance(BLOCKED[name][1], tuple) else (BLOCKED[name][1],)
        assert r.returncode != 0 and any(e in text for e in errors for text in logs.values()), _tail(r, logs)
        pytest.xfail(" or ".join(errors))
    assert r.returncode == 0, _tail(r, logs)
    first = last = 0.0
    for trainer in ("workerlog.0", "workerlog.1"):
        log = logs.get(trainer, "")
        assert "Run Success, Exit." in log, _tail(r, logs)
        costs = _costs(log)
        assert sorted(costs) == [0, 1] and all(math.isfinite(c) for cs in costs.values() for c in cs), costs
        first, last = first + np.mean(costs[0]), last + np.mean(costs[1])
    # "Not above" allows 1e-4 relative: match-pyramid's flat cost (one update a pass per trainer)
    # lands a few 1e-6 either side of the first epoch's, by which of the two async trainers'
    # updates each read (0.99997723 then 0.99997992 in one run of many); a real rise is far larger.
    assert spec.falls is None or last < first or (not spec.falls and last <= first * (1 + 1e-4)), \
        f"mean cost per epoch {first / 2}, then {last / 2}"
    r, out = check_inference_model(model_dir, model_dir / "ps_model" / "1")
    assert r.returncode == 0 and "INFER-OK" in out, out[-3000:]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(PADDLE_COSTS))
def test_sync_pserver_from_the_pinned_start_equals_paddles_single_process_costs(tmp_path, name):
    model_dir = _model_dir(tmp_path, name)
    # the parameters of static_trainer's save, as the zoo tests' write_paddle_init draws them
    write_init_from_shapes(param_shapes(model_dir, MODELS[name].overrides), tmp_path / "init")
    write_psjob_init(tmp_path / "init", tmp_path / "init_ps")
    r, logs = run_ps(model_dir, _ps_overrides(name, "runner.epochs=1", "runner.sync_mode=sync",
                                              f"runner.warmup_model_path={tmp_path / 'init_ps'}"))
    assert r.returncode == 0 and "Run Success, Exit." in logs.get("workerlog.0", ""), _tail(r, logs)
    want = PADDLE_COSTS[name][:PINNED_BATCHES.get(name, len(PADDLE_COSTS[name]))]
    got = _costs(logs["workerlog.0"])[0][:len(want)]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


@pytest.mark.timeout(300)
def test_dnn_trains_in_geo_mode_with_its_own_ps_config(tmp_path):
    """rank/dnn's config_cpups.yaml (its own pipe reader, AUC statistics) in geo mode: geo needs
    runner.geo_step, which only the configs that have the key take as an int from -o."""
    root = tmp_path / "paddlerec"
    shutil.copytree(os.path.join(PADDLEREC, "tools"), root / "tools")
    model_dir = root / "models" / "rank" / "dnn"
    shutil.copytree(os.path.join(PADDLEREC, "models", "rank", "dnn"), model_dir)
    (model_dir / "ps_model").mkdir()
    r, logs = run_ps(model_dir, ["runner.epochs=2", "runner.sync_mode=geo", "runner.geo_step=2", "runner.thread_num=1",
                                 "runner.train_batch_size=16", "runner.print_interval=1", "runner.model_save_path=ps_model",
                                 f"runner.pipe_command=python {model_dir / 'queuedataset_reader.py'}"],
                     workers=2, config="config_cpups.yaml")
    assert r.returncode == 0, _tail(r, logs)
    for trainer in ("workerlog.0", "workerlog.1"):
        assert "Run Success, Exit." in logs.get(trainer, ""), _tail(r, logs)
        costs = _costs(logs[trainer])
        assert sorted(costs) == [0, 1] and len(costs[0]) == 5, costs  # 80 lines, batches of 16
        assert all(math.isfinite(c) for cs in costs.values() for c in cs) and np.mean(costs[1]) < np.mean(costs[0]), costs
        # the trainer's global AUC (summed over both trainers' statistics) after each epoch
        aucs = [float(a) for a in re.findall(r"Epoch: \d+, using time.*auc: ([0-9.]+)", logs[trainer])]
        # (80 lines: the AUC of so few moves run to run; the falling cost above is the learning)
        assert len(aucs) == 2 and all(0.0 <= a <= 1.0 for a in aucs), aucs
    r, out = check_inference_model(model_dir, model_dir / "ps_model" / "1")
    assert r.returncode == 0 and "INFER-OK" in out, out[-3000:]
