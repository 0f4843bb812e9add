"""Runs Paddle 1.8's own TestDistBase harness (test_dist_base.py, vendored unmodified) on one
of its model programs: check_with_place starts the local run, then 2 pservers and 2 trainers
(update_method pserver, DistributeTranspiler), and asserts each of the RUN_STEP losses of the
local run equals the mean of the two trainers' within `delta`. The cases mirror Paddle 1.8's
test_dist_simnet_bow.py (and one with Adam). Prints one JSON line: {"ok", "local", "dist"} (the pairs the harness
compared, from its "======= local : dist =======" lines).

usage: run_dist_base.py CASE   (run in a folder holding the vendored programs)"""
import contextlib
import io
import json
import os
import re
import sys
import unittest

from test_dist_base import TestDistBase

DATA_ENV = {k: os.environ[k] for k in ("PADDLE18_DATA_HOME", "PADDLE18_TEST_URLS") if k in os.environ}

CASES = {
    # name: (model file, sync mode, delta, need_envs)
    "simnet_dense_sync": ("dist_simnet_bow.py", True, 1e-5,
                          {"IS_DISTRIBUTED": "0", "IS_SPARSE": "0", "IS_SELF_CONTAINED_LR": "1"}),
    "simnet_dense_async": ("dist_simnet_bow.py", False, 100,
                           {"IS_DISTRIBUTED": "0", "IS_SPARSE": "0", "IS_SELF_CONTAINED_LR": "1"}),
    "simnet_sparse_sync": ("dist_simnet_bow.py", True, 1e-5,
                           {"IS_DISTRIBUTED": "0", "IS_SPARSE": "1", "IS_SELF_CONTAINED_LR": "1"}),
    "simnet_sparse_async": ("dist_simnet_bow.py", False, 100,
                            {"IS_DISTRIBUTED": "0", "IS_SPARSE": "1", "IS_SELF_CONTAINED_LR": "1"}),
    "simnet_lookup_table_sync": ("dist_simnet_bow.py", True, 1e-5,
                                 {"IS_DISTRIBUTED": "1", "IS_SPARSE": "1", "IS_SELF_CONTAINED_LR": "1"}),
    "simnet_lookup_table_async": ("dist_simnet_bow.py", False, 100,
                                  {"IS_DISTRIBUTED": "1", "IS_SPARSE": "1", "IS_SELF_CONTAINED_LR": "1"}),
    "simnet_lookup_table_not_contain_lr_sync": ("dist_simnet_bow.py", True, 1e-5,
                                                {"IS_DISTRIBUTED": "1", "IS_SPARSE": "1",
                                                 "IS_SELF_CONTAINED_LR": "0"}),
    # Not one of test_dist_simnet_bow.py's cases: its program with OPTIMIZER=adam.
    "simnet_sparse_sync_adam": ("dist_simnet_bow.py", True, 1e-5,
                                {"IS_DISTRIBUTED": "0", "IS_SPARSE": "1", "IS_SELF_CONTAINED_LR": "0",
                                 "OPTIMIZER": "adam"}),
}


def main(case):
    model, sync, delta, envs = CASES[case]

    class Case(TestDistBase):
        def _setup_config(self):
            self._sync_mode = sync
            self._enforce_place = "CPU"

        def test(self):
            self.check_with_place(model, delta=delta, check_error_log=True,
                                  need_envs=dict(envs, **DATA_ENV), log_name=case)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(
            unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    pairs = re.findall(r"======= (\S+) : (\S+) =======", out.getvalue())
    sys.stderr.write(out.getvalue())
    print(json.dumps({"ok": result.wasSuccessful(), "local": [float(a) for a, _ in pairs],
                      "dist": [float(b) for _, b in pairs]}))


if __name__ == "__main__":
    main(sys.argv[1])
