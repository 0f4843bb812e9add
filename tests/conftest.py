"""Settings for the whole suite, made before any test module imports numpy.

One math-library thread per process (unless exported): the suite runs pservers, trainers and
the test process itself side by side on a few cores, and each OpenBLAS/OpenMP pool otherwise
starts one spinning thread per core. The launchers size these pools the same way for the
processes they start (psjob.foundation.roles.threads); this covers the test process (in-process training,
e.g. test_ctr_distributed's single-process reference: 19 s wall / 7.6 CPU-s with the default
2 threads vs 2-3 s / 2 CPU-s with 1, on 2 cores at load 6) and the processes tests start
themselves. test_launch_and_fleet clears them where the launchers' own sizing is under test.
"""
import os

from psjob.foundation.roles import MATH_THREAD_ENV

for _var in MATH_THREAD_ENV:
    os.environ.setdefault(_var, "1")

# Third-party code the tests run as it was written (tests/thirdparty/README.md); its files are not tests.
collect_ignore = ["thirdparty"]


def pytest_configure(config):
    """PaddleRec's files, exported from a local clone when none are in tests/thirdparty (once, in
    the process that starts the xdist workers: before any of them collects)."""
    if not hasattr(config, "workerinput"):
        import sys

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from thirdparty_code import provide_paddlerec

        provide_paddlerec()
