"""The heterogeneous split of a transpiled trainer program (transpiler/heter_split.py).

Real: layers and device_guard, the DistributeTranspiler, the split, HeterSection
and HeterState with real Executors. Faked: nothing — no stage here reaches a
pserver (the checks refuse the requests first, or the programs are only read).
"""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.heter.heter_state import HeterSection, HeterState
from psjob.fluid.executor import Executor
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.fluid.transpiler.heter_split import (
    HeterSplitError,
    heter_endpoint_for,
    marked_heter_ops,
    served_trainers,
    split_heter_program,
)

EPS = ["127.0.0.1:6170", "127.0.0.1:6171"]
HEPS = ["127.0.0.1:7170"]


def net(hidden=64, shared_param=False, stateful=False, second_device=None, distributed=False,
        lookup_inside=False, inner_concat=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        x = fluid.layers.data(name="x", shape=[16])
        y = fluid.layers.data(name="y", shape=[1])
        with fluid.device_guard("gpu" if lookup_inside else None):
            emb = fluid.layers.embedding(ids, size=[100, 8], is_sparse=True, is_distributed=distributed,
                                         param_attr=fluid.ParamAttr(name="emb"))
        h = fluid.layers.concat([emb, x], axis=1)
        shared = fluid.ParamAttr(name="shared_w")
        with fluid.device_guard("gpu"):
            h = fluid.layers.fc(h, hidden, act="relu", param_attr=shared if shared_param else None)
            if inner_concat:
                h = fluid.layers.concat([h, h], axis=1)
            if stateful:
                h = fluid.layers.batch_norm(h)
        with fluid.device_guard(second_device):
            pred = fluid.layers.fc(h, 1)
        if shared_param:
            pred = pred + fluid.layers.fc(fluid.layers.concat([emb, x], axis=1), hidden, param_attr=shared)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def transpile(build, trainer_id=0, trainers=1, sync=True, pservers=EPS):
    main, startup, loss = build()
    config = DistributeTranspilerConfig()
    config.wait_port = False
    t = DistributeTranspiler(config)
    t.transpile(trainer_id, program=main, startup_program=startup, pservers=",".join(pservers),
                trainers=trainers, sync_mode=sync)
    return t, t.get_trainer_program(wait_port=False), startup


def split(build, heps=HEPS, **kwargs):
    t, main, startup = transpile(build, **kwargs)
    return split_heter_program(main, startup, t.plan, heps), main, startup, t


def types(program, block=0):
    return [op.type for op in program.block(block).ops]


def test_the_section_becomes_a_forward_and_a_backward_stage_served_by_the_heter_trainer():
    sp, main, startup, t = split(lambda: net(second_device="gpu"))
    ops = types(main)
    assert "mul" not in ops and "relu" not in ops and "relu_grad" not in ops
    assert ops.count("send_and_recv") == 2
    fwd, bwd = sp.stages
    assert (fwd.forward, bwd.forward) == (True, False)
    assert fwd.inputs == ("concat_0.tmp_0",) and fwd.outputs == ("fc_1.tmp_1",)
    assert bwd.inputs == ("fc_1.tmp_1@GRAD",) and bwd.outputs == ("concat_0.tmp_0@GRAD",)
    assert set(sp.params) == {"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"}
    assert sp.endpoint == HEPS[0] and sp.device == "gpu"
    # The heter trainer pulls its parameters first and pushes their gradients itself.
    heter_fwd, heter_bwd = types(sp.program, fwd.block_idx), types(sp.program, bwd.block_idx)
    assert heter_fwd[:4] == ["recv"] * 4 and heter_fwd[4:] == ["mul", "elementwise_add", "relu", "mul",
                                                               "elementwise_add"]
    assert heter_bwd.count("send") == 4 and "relu_grad" in heter_bwd
    # The CPU trainer neither initializes, fetches nor sends them.
    cpu_names = {n for op in main.global_block().ops if op.type in ("recv", "send")
                 for n in op.output_arg_names + op.input_arg_names}
    assert not any(n.startswith("fc_") for n in cpu_names)
    assert not any(n.startswith("fc_") for op in startup.global_block().ops for n in op.output_arg_names)
    # No control variable crosses: the barrier waits only on the CPU's own sends.
    produced = {n for op in main.global_block().ops if op.type == "send" for n in op.output_arg_names}
    barrier = next(op for op in main.global_block().ops if op.type == "send_barrier")
    assert set(barrier.input("X")) <= produced


def test_a_for_test_clone_keeps_the_forward_stage_and_drops_the_backward_stage():
    _, main, _, _ = split(lambda: net())
    test = main.clone(for_test=True)
    stages = [op for op in test.global_block().ops if op.type == "send_and_recv"]
    assert [op.attr("forward") for op in stages] == [True]


def test_a_cpu_trainer_that_pulls_nothing_still_ends_each_round_with_its_fetch_barrier():
    """The MLP moved to the heter trainer, so the CPU trainer pulls from no pserver; its fetch
    barrier (which waits for the round at every pserver) is what ends its sync round."""
    sp, main, _, t = split(lambda: net(distributed=True, second_device="gpu"), pservers=EPS[:1])
    ops = types(main)
    assert "recv" not in ops and "prefetch" in ops  # the table is prefetched, the MLP is remote
    barrier = main.global_block().ops[ops.index("fetch_barrier")]
    assert barrier.attr("endpoints") == EPS[:1] and ops.index("send_barrier") < ops.index("fetch_barrier")


def test_embedding_lookups_inside_the_guard_still_prefetch_on_the_cpu_trainer():
    sp, main, _, _ = split(lambda: net(distributed=True, lookup_inside=True))
    ops = types(main)
    assert {"split_ids", "prefetch", "merge_ids"} <= set(ops)
    assert ops.index("merge_ids") < ops.index("send_and_recv")
    assert sp.stages[0].inputs == ("concat_0.tmp_0",)


def test_trainers_are_shared_out_over_heter_trainers_round_robin():
    assert [heter_endpoint_for(t, ["a", "b"]) for t in range(5)] == ["a", "b", "a", "b", "a"]
    assert served_trainers(1, 2, 5) == [1, 3]
    sp, _, _, _ = split(lambda: net(), heps=["h0:1", "h1:1"], trainer_id=3, trainers=4)
    assert sp.endpoint == "h1:1"


def test_both_sides_compute_the_same_signature_and_a_section_of_another_program_is_refused():
    cpu, _, _, _ = split(lambda: net())
    heter, _, _, _ = split(lambda: net())
    assert [s.signature for s in cpu.stages] == [s.signature for s in heter.stages]
    other, _, _, _ = split(lambda: net(hidden=32))
    section = HeterSection(other, Executor())
    values = {"concat_0.tmp_0": np.zeros((2, 24), "float32")}
    with pytest.raises(ValueError, match="built different programs"):
        section.run_stage(0, cpu.stages[0].signature, values)


def test_a_section_refuses_unknown_stages_and_wrong_inputs():
    sp, _, _, _ = split(lambda: net())
    section = HeterSection(sp, Executor())
    with pytest.raises(ValueError, match="stages 0..1, not 7"):
        section.run_stage(7, "", {})
    with pytest.raises(ValueError, match=r"missing \['concat_0.tmp_0'\], unexpected \['x'\]"):
        section.run_stage(0, sp.stages[0].signature, {"x": np.zeros((1, 16), "float32")})


def test_the_heter_state_refuses_trainers_it_does_not_serve_or_that_completed():
    sp, _, _, _ = split(lambda: net())
    state = HeterState(HEPS[0], {0: HeterSection(sp, Executor())})
    with pytest.raises(RuntimeError, match="not serving yet"):
        state.on_run_stage(0, 0, "", {})
    state.start()
    with pytest.raises(ValueError, match="does not serve trainer 1"):
        state.on_run_stage(1, 0, "", {})
    assert state.on_complete(0) == 0 and state.on_complete(0) == 0  # a retried Complete is harmless
    assert state.wait_done(0)
    with pytest.raises(RuntimeError, match="trainer 0 already completed"):
        state.on_run_stage(0, 0, sp.stages[0].signature, {})
    assert HeterState("idle:1", {}).start() is None and HeterState("idle:1", {}).on_status()["trainers"] == []


def test_heter_trainers_without_heter_ops_is_a_clear_error():
    main, startup, _ = net()
    for op in main.global_block().ops:
        op.attrs.pop("op_device", None)
    config = DistributeTranspilerConfig()
    config.wait_port = False
    t = DistributeTranspiler(config)
    t.transpile(0, program=main, startup_program=startup, pservers=EPS[0], trainers=1)
    with pytest.raises(HeterSplitError, match="a heter section with no ops"):
        split_heter_program(t.get_trainer_program(wait_port=False), startup, t.plan, HEPS)


def test_heter_ops_without_heter_trainers_is_a_clear_error():
    with pytest.raises(HeterSplitError, match="--heter_worker_num"):
        split(lambda: net(), heps=[])


def test_a_parameter_used_on_both_sides_is_refused_and_the_program_left_alone():
    t, main, startup = transpile(lambda: net(shared_param=True))
    before = types(main)
    with pytest.raises(HeterSplitError, match="'shared_w' is read inside the heter section"):
        split_heter_program(main, startup, t.plan, HEPS)
    assert types(main) == before


def test_a_section_mixing_gpu_and_xpu_is_refused():
    with pytest.raises(HeterSplitError, match=r"mixes devices \['gpu', 'xpu'\]"):
        split(lambda: net(second_device="xpu"))


def test_state_inside_the_section_is_refused():
    with pytest.raises(HeterSplitError, match="'batch_norm' in the heter section writes the persistable variable"):
        split(lambda: net(stateful=True))


def test_marked_ops_are_the_forward_ops_built_inside_a_gpu_or_xpu_guard():
    main, _, _ = net()
    assert [op.type for op in marked_heter_ops(main)] == ["mul", "elementwise_add", "relu"]


def test_a_layers_concat_inside_the_section_stays_in_place_while_parameter_pulls_move_first():
    sp, _, _, _ = split(lambda: net(inner_concat=True, second_device="gpu"), pservers=EPS)
    forward = sp.stages[0].op_types
    assert forward[:4] == ("recv",) * 4
    assert forward[4:] == ("mul", "elementwise_add", "relu", "concat", "mul", "elementwise_add")
