"""Paddle >= 2.5 names PaddleRec and Paddle's own code use: paddle.base (fluid's new name),
paddle.utils.unique_name, paddle.static.nn.sequence_lod, paddle.io.DistributedBatchSampler,
paddle.distributed.fleet.utils.ps_util.DistributedInfer (its job-less refusal; the
distributed behaviour is tests/component/test_paddle2_collective_save.py)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid

RUNTIME = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "runtime", "psjob")


def test_paddle_base_is_fluid_with_every_submodule_the_same_object():
    import psjob.base as base
    import psjob.base.framework
    import psjob.base.layers.nn
    from psjob.base import core
    from psjob.base.executor import Executor
    assert base is fluid is paddle.base
    assert core is fluid.core and psjob.base.framework is fluid.framework
    assert psjob.base.layers.nn is fluid.layers.nn and Executor is fluid.Executor
    fluid_modules = []
    for dirpath, _, files in os.walk(os.path.join(RUNTIME, "fluid")):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), RUNTIME)[:-3].replace(os.sep, ".")
                fluid_modules.append(rel.removesuffix(".__init__")[len("fluid"):])
    # Fluid 1.x's incubate import paths (Fleet, data generator) are the distributed layer's,
    # loaded by a script's import only; Paddle's paddle.base has no incubate either.
    fluid_modules = [m for m in fluid_modules if not m.startswith(".incubate")]
    for suffix in fluid_modules:  # a fluid module added later must be aliased too (psjob/base.py)
        assert sys.modules.get("psjob.base" + suffix) is sys.modules["psjob.fluid" + suffix], suffix


def test_paddle_base_alone_in_a_fresh_process():
    code = ("from psjob.base import core, framework\nimport psjob.base.io\nimport psjob.fluid\n"
            "assert psjob.base.io is psjob.fluid.io and core.Scope is psjob.fluid.Scope\n"
            "assert framework.Program is psjob.fluid.Program\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_unique_name_generate_guard_and_switch_as_paddle():
    from psjob.utils import unique_name
    assert paddle.utils.unique_name is unique_name
    with unique_name.guard():
        assert [unique_name.generate("fc") for _ in range(2)] == ["fc_0", "fc_1"]
        with unique_name.guard():
            assert unique_name.generate("fc") == "fc_0"
        with unique_name.guard(b"pre_"):
            assert unique_name.generate("fc") == "pre_fc_0"
        assert unique_name.generate("fc") == "fc_2"
        old = unique_name.switch()  # Paddle 2.x: (previous generator, previous checker)
        assert isinstance(old, tuple) and len(old) == 2
        assert unique_name.generate("fc") == "fc_0"
        unique_name.switch(*old)
        assert unique_name.generate("fc") == "fc_3"
        # the layers name from the same generator
        paddle.enable_static()
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            assert paddle.nn.Linear(2, 2).weight.name == "linear_0.w_0"
            assert unique_name.generate("linear") == "linear_1"


def test_sequence_lod_module_pools_lod_inputs():
    import psjob.static.nn.sequence_lod as sequence_lod
    assert paddle.static.nn.sequence_lod is sequence_lod
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = paddle.static.data("x", [None, 2], "float32", lod_level=1)
        outs = [sequence_lod.sequence_pool(x, "sum"), sequence_lod.sequence_first_step(x),
                sequence_lod.sequence_last_step(x)]
    value = np.arange(10, dtype="float32").reshape(5, 2)
    t = fluid.create_lod_tensor(value, [[2, 3]], fluid.CPUPlace())
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": t}, fetch_list=outs, scope=fluid.Scope())
    np.testing.assert_array_equal(got[0], [value[:2].sum(0), value[2:].sum(0)])
    np.testing.assert_array_equal(got[1], value[[0, 2]])
    np.testing.assert_array_equal(got[2], value[[1, 4]])


def test_distributed_batch_sampler_splits_as_paddle():
    from psjob.io import DistributedBatchSampler
    # Paddle 3.0.0's batches for these arguments (its io/dataloader/batch_sampler.py).
    assert [list(DistributedBatchSampler(list(range(10)), 3, num_replicas=3, rank=r)) for r in range(3)] == [
        [[0, 1, 2], [9]], [[3, 4, 5], [0]], [[6, 7, 8], [1]]]
    for n, bs, replicas, drop in [(23, 4, 2, False), (23, 4, 3, True), (5, 2, 4, False), (100, 7, 3, False)]:
        shares = [DistributedBatchSampler(list(range(n)), bs, num_replicas=replicas, rank=r, shuffle=True,
                                          drop_last=drop) for r in range(replicas)]
        for s in shares:
            s.set_epoch(4)
        got = [[i for b in s for i in b] for s in shares]
        assert all(len(b) == bs for s in shares for b in s) or not drop
        if not drop:
            assert all(len(g) == -(-n // replicas) for g in got)  # ceil(n / replicas) each, padded
            assert set().union(*map(set, got)) == set(range(n))   # every index somewhere
        assert [len(s) for s in shares] == [len(list(s)) for s in shares]
    first, again = (DistributedBatchSampler(list(range(30)), 4, 2, 0, shuffle=True) for _ in range(2))
    epoch0, epoch0_again, epoch1 = list(first), list(again), list(first)
    assert epoch0 == epoch0_again and epoch1 != epoch0  # seeded by the epoch, which advances per pass


def test_distributed_batch_sampler_reads_the_launchers_environment(monkeypatch):
    from psjob.io import DistributedBatchSampler
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "1")
    s = DistributedBatchSampler(list(range(8)), 2)
    assert (s.nranks, s.local_rank, list(s)) == (2, 1, [[2, 3], [6, 7]])
    with pytest.raises(ValueError, match="rank 2 >= num_replicas 2"):
        DistributedBatchSampler(list(range(8)), 2, num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        DistributedBatchSampler(list(range(8)), 0)


def test_distributed_infer_needs_a_job_and_keeps_its_own_copy_of_the_program():
    from psjob.distributed.fleet.utils.ps_util import DistributedInfer
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        paddle.static.nn.fc(paddle.static.data("x", [None, 2], "float32"), 1)
    infer = DistributedInfer(main_program=main)
    assert infer.origin_main_program is not main
    assert [op.type for op in infer.origin_main_program.global_block().ops] == [
        op.type for op in main.global_block().ops]
    if paddle.distributed.fleet.fleet.transpiler is None:
        with pytest.raises(RuntimeError, match="DistributedInfer needs the fleet job"):
            infer.get_dist_infer_program()
