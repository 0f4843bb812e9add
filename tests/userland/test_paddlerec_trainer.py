"""PaddleRec's own `tools/static_ps_trainer.py` (not a trimmed copy) trains rank/dnn with its
config_cpups.yaml as 1 pserver + 2 async trainers under `psjob launch`
(tests/userland/paddlerec_trainer.sh): once with its import lines renamed to psjob, once with
no file changed under `psjob launch --as-paddle`.

The bar (the script's): both trainers log "Run Success, Exit."; the `_fleet_opt` they print
names DistMultiTrainer and the two AUC statistics; train_result_dict.txt holds a global AUC per
epoch, the last above 0.75; every epoch's inference model is written and the last, loaded in a
fresh process, scores AUC > 0.75 on the sample; with --as-paddle every process's log says
which paddle it got, and no vendored file differs."""
import pathlib
import re

import pytest

HERE = pathlib.Path(__file__).resolve().parent
LIMIT = 400   # the launch's limit (PADDLEREC_TIMEOUT), raised for a busy machine (conftest)
VERDICT = re.compile(r"^PADDLEREC-TRAINER (\S+) (\w+): (PASS|FAIL.*)$", re.M)


@pytest.mark.timeout(LIMIT + 240)
@pytest.mark.parametrize("as_paddle", [pytest.param("0", marks=pytest.mark.userland("paddlerec-trainer-dnn"),
                                                    id="imports-renamed"),
                                       pytest.param("1", marks=pytest.mark.userland("paddlerec-trainer-dnn-as-paddle"),
                                                    id="unmodified-as-paddle")])
def test_paddlerecs_own_trainer_trains_dnn(userland, harness, as_paddle):
    r = harness(["bash", str(HERE / "paddlerec_trainer.sh"), "dnn"], timeout=LIMIT + 180,
                env={"PSJOB_USERLAND": str(userland), "PADDLEREC_TIMEOUT": str(LIMIT), "AS_PADDLE": as_paddle})
    verdicts = VERDICT.findall(r.stdout)
    figures = [line for line in r.stdout.splitlines()
               if line.startswith(("trainer ", "train_result_dict", "inference model", "  - "))]
    message = "\n".join([f"verdict: {verdicts[-1][2] if verdicts else 'none'}", *figures,
                         "--- output (tail):", *r.stdout.splitlines()[-30:]])
    print(message.split("--- output")[0])
    assert verdicts and verdicts[-1][2] == "PASS" and r.returncode == 0, message
