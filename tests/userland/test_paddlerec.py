"""PaddleRec's rank models (dnn, wide_deep, deepfm) trained by PaddleRec's own PS trainer code as
1 pserver + 2 async trainers: by the harness (`paddlerec/run.sh psjob MODEL`, imports rewritten to
psjob), and dnn once more under `psjob launch --as-paddle` with no change to any file.

The bar (the harness's, repeated here for the --as-paddle run): both trainers print
PADDLEREC_RESULT; the run is distributed; every epoch trains all 4000 examples; the last epoch's
loss is below the first's; the last epoch's AUC, local and PaddleRec's global one, is above 0.75;
trainer 0's inference model and persistables directories are non-empty."""
import ast
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import psjob

HARNESS_TIMEOUT = 400           # PADDLEREC_TIMEOUT, the harness's limit on the launcher, raised for a busy machine (conftest)
FIGURES = re.compile(r"^trainer (\d): auc (\[.*?\]) global_auc (\[.*?\]) loss (\[.*?\]) "
                     r"examples (\[.*?\]) saved (\{.*\})$", re.M)
VERDICT = re.compile(r"^PADDLEREC-BAR psjob (\w+): (PASS|FAIL.*)$", re.M)
NOTICE = f"paddle -> psjob {psjob.__version__} (--as-paddle)"


def _fmt(values):
    return "→".join("-" if v is None else f"{v:.3f}" for v in values) if values else "-"


def figures(trainer, auc, global_auc, loss, examples, saved):
    """One line of the figures a trainer reported."""
    falling = "falling" if len(loss) > 1 and loss[-1] < loss[0] else "NOT falling"
    where = ", ".join(f"{k}={v}" for k, v in saved.items()) if trainer == 0 else "-"
    return (f"trainer {trainer}: AUC {_fmt(auc)} (global {_fmt(global_auc)}), loss {_fmt(loss)} {falling}, "
            f"examples per epoch {examples}, saved {where}")


def harness_report(output):
    """(verdict, the figures lines, the message for an assertion)."""
    verdicts = VERDICT.findall(output)
    verdict = verdicts[-1][1] if verdicts else "no verdict line"
    lines = [figures(int(t), *(ast.literal_eval(x) for x in rest)) for t, *rest in FIGURES.findall(output)]
    problems = [line for line in output.splitlines() if line.startswith("  - ")]
    message = "\n".join([f"verdict: {verdict}", *lines, *problems, "--- harness output (tail):",
                         *output.splitlines()[-40:]])
    return verdict, lines, message


@pytest.mark.timeout(HARNESS_TIMEOUT + 240)
@pytest.mark.parametrize("model", [pytest.param(m, marks=pytest.mark.userland(f"paddlerec-{m}"))
                                   for m in ("dnn", "wide_deep", "deepfm")])
def test_paddlerec_rank_model_passes_the_harness(userland, harness, model):
    r = harness(["bash", str(userland / "paddlerec" / "run.sh"), "psjob", model],
                timeout=HARNESS_TIMEOUT + 180, env={"PADDLEREC_TIMEOUT": str(HARNESS_TIMEOUT)})
    verdict, lines, message = harness_report(r.stdout)
    print(message.split("--- harness output")[0])  # the figures, shown for a passing run by -rP
    assert verdict == "PASS" and r.returncode == 0, message
    assert len(lines) == 2, message  # both trainers' figures, in the format parsed here


# --- the same dnn run with no file changed: psjob launch --as-paddle ---------------------------

def paddlerec_tree(userland, work, model="dnn"):
    """run.sh's PaddleRec layout (tools/, models/, the driver, the config, 2 x 2000 lines of
    PaddleRec's sample), without the import rewrite."""
    here = userland / "paddlerec"
    shutil.copytree(here / "vendor" / "tools", work / "tools")
    shutil.copytree(here / "vendor" / "models", work / "models")
    (work / "tools" / "static_ps_trainer.py").unlink()   # a reference copy, not run (as run.sh)
    shutil.copy(here / "run_dnn_ps.py", work / "tools")
    md = work / "models" / "rank" / model
    shutil.copy(here / "configs" / f"{model}.yaml", md / "config_bar.yaml")
    sample = (here / "vendor" / "models" / "rank" / model / "data" / "sample_data" / "train" /
              "sample_train.txt").read_text()
    (md / "data" / "bar_train").mkdir(parents=True)
    for part in (0, 1):
        (md / "data" / "bar_train" / f"part-{part}").write_text(sample * 25)
    return f"models/rank/{model}/config_bar.yaml"


def paddlerec_deps(userland):
    """PYTHONPATH entries for PaddleRec's own dependencies (pyyaml, six), where run.sh keeps them."""
    if subprocess.run([sys.executable, "-c", "import yaml, six"], capture_output=True).returncode == 0:
        return []
    deps = pathlib.Path(os.environ.get("PADDLEREC_DEPS") or "/tmp/paddlerec-bar/deps")
    probe = dict(os.environ, PYTHONPATH=str(deps))
    if subprocess.run([sys.executable, "-c", "import yaml, six"], env=probe, capture_output=True).returncode:
        got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-compile", "--target",
                              str(deps), "pyyaml", "six"], capture_output=True, text=True, timeout=300)
        if got.returncode:
            pytest.fail(f"cannot install PaddleRec's pyyaml/six into {deps}: {got.stdout}{got.stderr}")
    return [str(deps)]


def check_results(work):
    """run.sh's checks on the trainers' PADDLEREC_RESULT lines: (figures lines, problems)."""
    lines, problems = [], []
    for t in (0, 1):
        log = work / "log" / f"workerlog.{t}"
        text = log.read_text(errors="replace") if log.exists() else ""
        found = [line for line in text.splitlines() if line.startswith("PADDLEREC_RESULT ")]
        if not found:
            problems.append(f"trainer {t}: no PADDLEREC_RESULT line; log tail:\n" + "\n".join(
                text.splitlines()[-12:]))
            continue
        r = json.loads(found[-1][len("PADDLEREC_RESULT "):])
        lines.append(figures(t, r["auc"], r["global_auc"], r["loss"], r["examples"], r["saved"]))
        if not r.get("distributed"):
            problems.append(f"trainer {t}: not a distributed run (no TRAINING_ROLE)")
        if len(r["loss"]) < 2 or any(n != r["examples_per_epoch"] for n in r["examples"]):
            problems.append(f"trainer {t}: epochs/examples {r['examples']} != {r['examples_per_epoch']} per epoch")
        if not (r["loss"] and r["loss"][-1] < r["loss"][0]):
            problems.append(f"trainer {t}: last loss not below first")
        if not (r["auc"] and r["auc"][-1] > 0.75):
            problems.append(f"trainer {t}: last-epoch AUC <= 0.75")
        if not (r["global_auc"] and r["global_auc"][-1] is not None and r["global_auc"][-1] > 0.75):
            problems.append(f"trainer {t}: last-epoch global AUC <= 0.75")
        if t == 0:
            for key in ("inference_dir", "persistables_dir"):
                d = pathlib.Path(r["saved"][key])
                d = d if d.is_absolute() else work / d
                if not (d.is_dir() and any(f for _, _, files in os.walk(d) for f in files)):
                    problems.append(f"trainer 0: {key} {d} missing or empty")
    return lines, problems


def unchanged(userland, work):
    """The .py files of the run that differ from PaddleRec's vendored ones (none may)."""
    vendor = userland / "paddlerec" / "vendor"
    changed = []
    for path in sorted(work.rglob("*.py")):
        rel = path.relative_to(work)
        source = userland / "paddlerec" / "run_dnn_ps.py" if rel.name == "run_dnn_ps.py" else vendor / rel
        if not source.exists() or source.read_bytes() != path.read_bytes():
            changed.append(str(rel))
    return changed


@pytest.mark.timeout(HARNESS_TIMEOUT + 240)
@pytest.mark.userland("paddlerec-dnn-as-paddle")
def test_paddlerec_dnn_runs_unmodified_under_psjob_launch_as_paddle(userland, harness, tmp_path):
    model = "dnn"
    work = tmp_path / "paddlerec"
    work.mkdir()
    config = paddlerec_tree(userland, work, model)
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": os.pathsep.join(paddlerec_deps(userland)),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    for var in ("PADDLE_TRAINING_ROLE", "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ID"):
        env[var] = None  # as run.sh: the launcher gives each process its role
    r = harness([sys.executable, "-m", "psjob.cli", "launch", "--as-paddle", "--server_num", "1",
                     "--worker_num", "2", "--mode", "async", "--log_dir", "log", "--timeout",
                     str(HARNESS_TIMEOUT), "tools/run_dnn_ps.py", "-m", config],
                    timeout=HARNESS_TIMEOUT + 60, env=env, cwd=work)
    assert unchanged(userland, work) == []
    lines, problems = check_results(work)
    message = "\n".join([f"launcher exit {r.returncode} (work dir {work})", *lines, *problems,
                         "--- launcher output (tail):", *r.stdout.splitlines()[-20:]])
    print(message.split("--- launcher output")[0])  # the figures, shown for a passing run by -rP
    assert r.returncode == 0 and not problems and len(lines) == 2, message
    for name in ("serverlog.0", "workerlog.0", "workerlog.1"):
        assert NOTICE in (work / "log" / name).read_text(errors="replace"), name
