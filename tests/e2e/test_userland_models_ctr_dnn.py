"""PaddlePaddle/models' Fluid 1.x CTR-DNN (PaddleRec/ctr/dnn: fluid.data, fluid.embedding,
py_reader, ParallelExecutor, DistributeTranspiler, save_persistables), unchanged but for its
imports, as 2 pservers + 2 sync trainers started with the example's own cluster environment.

The code and its harness live in the shared userland folder next to the checkout
(`<repo>/../shared/userland/models-ctr-dnn`, or $PSJOB_USERLAND/models-ctr-dnn): the harness
checks every trainer's 100 progress lines, a falling loss, trainer 0's batch AUC > 0.72 and
the saved persistables, and ends with its verdict line."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USERLAND = os.environ.get("PSJOB_USERLAND") or os.path.join(os.path.dirname(REPO), "shared", "userland")
HARNESS = os.path.join(USERLAND, "models-ctr-dnn", "run.sh")

pytestmark = [pytest.mark.skipif(not os.path.exists(HARNESS),
                                 reason=f"no userland harness at {HARNESS} (the shared folder next to "
                                        "the checkout, or $PSJOB_USERLAND)"),
              pytest.mark.timeout(420)]


def test_models_ctr_dnn_trains_under_psjob_as_under_paddle():
    env = dict(os.environ, PY=sys.executable, CTRDNN_TIMEOUT="300")
    done = subprocess.run(["bash", HARNESS, "psjob"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=400)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "MODELS-CTR-DNN psjob: PASS" in out, out[-4000:]
