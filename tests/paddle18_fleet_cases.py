"""Cases for Paddle 1.8's TestFleetBase harness (tests/thirdparty/paddle18/test_dist_fleet_base.py)
on its dist_fleet_ctr.py, run by tests/component/test_paddle18_dist_programs.py as
`python -m unittest paddle18_fleet_cases.<Case>` inside `psjob as-paddle`, from a copy of the
vendored folder (the harness starts `python dist_fleet_ctr.py` there).

Paddle 1.8's own test_dist_fleet_ctr.py defines such cases (async, pyreader; async, dataset)
but had disabled them ("recover later"); these are the same subclasses, one per Fleet 1.x
mode and reader, with the environment Paddle's cases pass (CPU_NUM 2, the communicator's
queue sizes for half_async). Paddle's check_with_place only runs the job (it compares
nothing, not even the trainers' exit codes); each case here then also requires both trainers
to have exited 0 (their processes, as the harness started them) and their stderr logs (which
the harness writes to tempfile.gettempdir()) to show no traceback and the data prepared twice
(ctr_dataset_reader.prepare_data logs it: once building the network, once to train).
"""
import os
import tempfile
import unittest

from test_dist_fleet_base import TestFleetBase


class _Ctr(TestFleetBase):
    mode = "async"
    reader = "pyreader"
    extra_envs: dict = {}

    def _setup_config(self):
        self._mode = self.mode
        self._reader = self.reader

    def _start_trainer(self, cmd, required_envs):
        started = super()._start_trainer(cmd, required_envs)
        self.trainers = started[:2]
        return started

    def test_dist_train(self):
        envs = {"CPU_NUM": "2", "SAVE_MODEL": "1"}
        envs.update(self.extra_envs)
        self.check_with_place("dist_fleet_ctr.py", delta=1e-5, check_error_log=False, need_envs=envs)
        self.assertEqual([p.returncode for p in self.trainers], [0, 0])
        for i in (0, 1):
            with open(os.path.join(tempfile.gettempdir(), "tr%d_err.log" % i), errors="replace") as f:
                log = f.read()
            self.assertNotIn("Traceback", log, "trainer %d:\n%s" % (i, log[-4000:]))
            self.assertEqual(log.count("dnn input dim"), 2, "trainer %d:\n%s" % (i, log[-4000:]))


class TestCtrSyncPyReader(_Ctr):
    mode = "sync"


class TestCtrAsyncPyReader(_Ctr):
    mode = "async"


class TestCtrHalfAsyncPyReader(_Ctr):
    mode = "half_async"
    extra_envs = {"FLAGS_communicator_send_queue_size": "2", "FLAGS_communicator_max_merge_var_num": "2"}


class TestCtrGeoPyReader(_Ctr):
    mode = "geo"


class TestCtrAsyncDataset(_Ctr):
    mode = "async"
    reader = "dataset"


class TestCtrGeoDataset(_Ctr):
    mode = "geo"
    reader = "dataset"


if __name__ == "__main__":
    unittest.main()
