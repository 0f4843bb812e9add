"""Paddle 1.8's own parameter-server test programs (PaddlePaddle/Paddle's
python/paddle/fluid/tests/unittests, Fluid 1.x versions, in tests/thirdparty/paddle18 as their
authors wrote them) run by their own harnesses under `psjob as-paddle`.

Each case is `python -m unittest <module>.<Case>` in a copy of that folder, as Paddle's CI
ran them, inside `psjob as-paddle` so that every process the harness starts (`python
dist_simnet_bow.py --role pserver ...`, the trainers, the local run, the dataset's `python
ctr_dataset_reader.py` pipe) imports psjob as `paddle`. The verdict is the harness's:

- TestDistBase.check_with_place (test_dist_simnet_bow.py's own cases: sync dense, sync
  sparse, async sparse, and the `is_distributed` lookup-table cases) runs the program
  locally and as 2 pservers + 2 trainers on 127.0.0.1 and asserts each step's local loss
  equals the mean of the trainers' (delta 1e-5 in sync mode, 100 in async).
  Left out: TestDistSimnetBow2x2DenseAsync, which Paddle disabled (`notest_simnet_bow`),
  and OPTIMIZER=adam, not one of Paddle's cases, whose losses differ by design
  (docs/user/paddle2.md, "Paddle 1.8's own parameter-server tests"). Paddle 1.8.5 itself
  stops on the lookup-table cases (an IndexError in its transpiler); psjob runs them.
- test_dist_ctr.py's cases on dist_ctr.py (a wide-and-deep CTR model, sparse embeddings,
  SGD; the same TestDistBase check): sync (delta 1e-2) and the two hogwild async cases
  (delta 100). Paddle 1.8.5 passes the sync case and stops on both async ones, its
  trainers failing with "Communicator is not Initialized" (this harness transpiles for async
  but starts no Communicator); psjob runs them. Left out: TestDistCTRWithL2Decay2x2, which
  Paddle's own `skip_ci` decorator turns into a function that unittest cannot run
  ("no attribute 'runTest'", under Paddle 1.8.5 as well). The stored dist_ctr.py is a
  later revision than Paddle 1.8's: it calls `paddle.mean(x=cost)`, which Paddle 1.8.5
  lacks; Paddle's verdicts above are from a copy with that one call as `fluid.layers.mean`.
- test_dist_text_classification.py's two cases on dist_text_classification.py (embedding,
  `nets.sequence_conv_pool`, two fc, SGD): sync (delta 1e-6) and async (delta 100). Paddle
  1.8.5 passes both (its copy with `paddle.mean` and `paddle.static.accuracy`, later names the
  stored revision uses, as `fluid.layers.mean` / `fluid.layers.accuracy`); its local run's
  five losses equal psjob's to the printed digit (every parameter starts constant).
- TestFleetBase.check_with_place on dist_fleet_ctr.py (cases in tests/paddle18_fleet_cases.py,
  one per Fleet 1.x mode: sync, async, half_async and geo with PyReader; async and geo with
  train_from_dataset) runs the job and compares nothing; those cases add that both trainers
  exit 0 without a traceback, having prepared their data to train. Left out: sync and
  half_async with the dataset, which hang Paddle 1.8.5 itself (psjob refuses sync there).

The programs download their data (simnet, avazu_ctr_data, text_classification), which this machine cannot reach;
tests/paddle18_data.py writes synthetic files in the exact format into a download cache and a
sitecustomize.py (on PYTHONPATH, which the harnesses pass on) that serves them.
"""
import os
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)
import paddle18_data  # noqa: E402
from thirdparty_code import run_unittest_as_paddle  # noqa: E402

VENDORED = os.path.join(TESTS, "thirdparty", "paddle18")

pytestmark = pytest.mark.skipif(not os.path.isfile(os.path.join(VENDORED, "test_dist_base.py")),
                                reason="tests/thirdparty/paddle18 is absent")

SIMNET_CASES = [
    "TestDistSimnetBowDense2x2",
    "TestDistSimnetBowSparse2x2",
    "TestDistSimnetBow2x2SparseAsync",
    "TestDistSimnetBow2x2LookupTableSync",
    "TestDistSimnetBow2x2LookupTableAsync",
    "TestDistSimnetBow2x2LookupTableNotContainLRSync",
]
CTR_CASES = [
    "TestDistCTR2x2",
    "TestDistCTR2x2_ASYNC",
    "TestDistCTR2x2_ASYNC2",
]
TEXT_CASES = [
    "TestDistTextClassification2x2",
    "TestDistTextClassification2x2Async",
]
FLEET_CASES = [
    "TestCtrSyncPyReader",
    "TestCtrAsyncPyReader",
    "TestCtrHalfAsyncPyReader",
    "TestCtrGeoPyReader",
    "TestCtrAsyncDataset",
    "TestCtrGeoDataset",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The synthetic download cache and the sitecustomize.py that serves it (one per module)."""
    return paddle18_data.site_dir(str(tmp_path_factory.mktemp("paddle18_cache")))


def _run_unittest(name, site, tmp_path):
    rc, text = run_unittest_as_paddle(name, VENDORED, tmp_path, 150, pythonpath=os.pathsep.join([site, TESTS]))
    assert rc == 0, f"{name} exited {rc}:\n{text[-6000:]}"
    assert "\nOK" in text and "Ran 1 test" in text, text[-3000:]


@pytest.mark.parametrize("case", SIMNET_CASES)
def test_dist_simnet_bow(case, site, tmp_path):
    _run_unittest(f"test_dist_simnet_bow.{case}", site, tmp_path)


@pytest.mark.parametrize("case", FLEET_CASES)
def test_dist_fleet_ctr(case, site, tmp_path):
    _run_unittest(f"paddle18_fleet_cases.{case}", site, tmp_path)


@pytest.mark.skipif(not os.path.isfile(os.path.join(VENDORED, "test_dist_ctr.py")),
                    reason="tests/thirdparty/paddle18/test_dist_ctr.py (+ dist_ctr.py, dist_ctr_reader.py) is absent")
@pytest.mark.parametrize("case", CTR_CASES)
def test_dist_ctr(case, site, tmp_path):
    _run_unittest(f"test_dist_ctr.{case}", site, tmp_path)


@pytest.mark.skipif(not os.path.isfile(os.path.join(VENDORED, "test_dist_text_classification.py")),
                    reason="tests/thirdparty/paddle18/test_dist_text_classification.py "
                           "(+ dist_text_classification.py) is absent")
@pytest.mark.parametrize("case", TEXT_CASES)
def test_dist_text_classification(case, site, tmp_path):
    _run_unittest(f"test_dist_text_classification.{case}", site, tmp_path)
