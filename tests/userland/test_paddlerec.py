"""PaddleRec's rank models (dnn, wide_deep, deepfm) trained by PaddleRec's own PS trainer code as
1 pserver + 2 async trainers, by the harness (`paddlerec/run.sh psjob MODEL`, imports rewritten to
psjob). PaddleRec's trainer file itself, unmodified under --as-paddle, runs in
test_paddlerec_trainer.py.

The bar (the harness's): both trainers print
PADDLEREC_RESULT; the run is distributed; every epoch trains all 4000 examples; the last epoch's
loss is below the first's; the last epoch's AUC, local and PaddleRec's global one, is above 0.75;
trainer 0's inference model and persistables directories are non-empty."""
import ast
import re

import pytest

HARNESS_TIMEOUT = 400           # PADDLEREC_TIMEOUT, the harness's limit on the launcher, raised for a busy machine (conftest)
FIGURES = re.compile(r"^trainer (\d): auc (\[.*?\]) global_auc (\[.*?\]) loss (\[.*?\]) "
                     r"examples (\[.*?\]) saved (\{.*\})$", re.M)
VERDICT = re.compile(r"^PADDLEREC-BAR psjob (\w+): (PASS|FAIL.*)$", re.M)


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
