"""The programs DistributeTranspiler writes: op types, order, attributes and names.

Real: the framework, layers, optimizers, the transpiler and (for initial
values) the Executor running startup programs. Nothing is faked; no process
or socket is involved.
"""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.framework import GraphError, OpRole
from psjob.fluid.ops.table_ops import table_config_from_attrs
from psjob.fluid.transpiler import (
    DistributeTranspiler,
    DistributeTranspilerConfig,
    HashName,
    TranspilerConfigError,
    UnsupportedOptimizerError,
    deserialize_dist_program,
    serialize_dist_program,
)

EPS = ["127.0.0.1:6170", "127.0.0.1:6171", "127.0.0.1:6172"]


def dense_net(opt="sgd"):
    """fc 64→256 (16384 weights: two blocks) → fc 1, squared error."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[64])
        y = fluid.layers.data(name="y", shape=[1])
        h = fluid.layers.fc(x, 256, act="tanh")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        (fluid.optimizer.Adam(0.01) if opt == "adam" else fluid.optimizer.SGD(0.1)).minimize(loss)
    return main, startup


def embedding_net(distributed=False, vocab=1024):
    """A sparse embedding [vocab, 16] (two blocks when sliced) feeding an fc."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[vocab, 16], is_sparse=True, is_distributed=distributed,
                                     param_attr=fluid.ParamAttr(name="emb"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
        fluid.optimizer.SGD(0.5).minimize(loss)
    return main, startup


def transpile(build, trainer_id=0, pservers=2, trainers=2, sync=True, config=None, **kw):
    main, startup = build(**kw)
    t = DistributeTranspiler(config)
    t.transpile(trainer_id, program=main, startup_program=startup, pservers=",".join(EPS[:pservers]),
                trainers=trainers, sync_mode=sync)
    return t, main, startup


def op_types(block):
    return [op.type for op in block.ops]


def listen_and_serv(prog):
    (op,) = [op for op in prog.global_block().ops if op.type == "listen_and_serv"]
    return op


# -- dense -------------------------------------------------------------------------------

@pytest.mark.parametrize("pservers", [1, 2, 3])
@pytest.mark.parametrize("trainers", [1, 2])
@pytest.mark.parametrize("sync", [True, False])
def test_the_dense_trainer_program_sends_gradient_blocks_and_receives_parameter_blocks(pservers, trainers, sync):
    t, main, _ = transpile(dense_net, pservers=pservers, trainers=trainers, sync=sync)
    prog = t.get_trainer_program(wait_port=False)
    types = op_types(prog.global_block())
    assert "sgd" not in types and "adam" not in types
    suffix = ".trainer_0" if sync and trainers > 1 else ""
    sends = [op for op in prog.global_block().ops if op.type == "send"]
    sent = [n for op in sends for n in op.input("X")]
    w_blocks = 2 if pservers > 1 else 1
    if w_blocks == 2:
        split = next(op for op in prog.global_block().ops if op.type == "split_byref")
        assert split.input("X") == ["fc_0.w_0@GRAD"] and split.attr("sections") == [32, 32]
        assert split.output("Out") == [f"fc_0.w_0@GRAD.block{i}{suffix}" for i in range(2)]
        assert types.index("split_byref") + 1 == types.index("send", types.index("split_byref"))
    else:
        assert "split_byref" not in types and f"fc_0.w_0@GRAD{suffix}" in sent
    assert f"fc_0.b_0@GRAD{suffix}" in sent and f"fc_1.w_0@GRAD{suffix}" in sent
    # The gradient keeps its name (a user may fetch it); a per-trainer name shares its data.
    assert "fc_0.b_0@GRAD" in prog.global_block().vars
    if suffix:
        share = next(op for op in prog.global_block().ops if op.output("Out") == [f"fc_0.b_0@GRAD{suffix}"])
        assert share.type == "share_data" and share.input("X") == ["fc_0.b_0@GRAD"]
    for op in sends:
        assert len(op.attr("epmap")) == len(op.input("X"))
        assert op.attr("op_role") == int(OpRole.RPC) and op.attr("trainer_id") == 0
    recvs = [op for op in prog.global_block().ops if op.type == "recv"]
    assert sorted(n for op in recvs for n in op.output("Out")) == sorted(
        ["fc_0.b_0", "fc_1.b_0", "fc_1.w_0"] + (["fc_0.w_0.block0", "fc_0.w_0.block1"] if w_blocks == 2
                                                 else ["fc_0.w_0"]))
    if sync:
        assert types.count("send_barrier") == 1 and types.count("fetch_barrier") == 1
        last_send = max(i for i, ty in enumerate(types) if ty == "send")
        first_recv = types.index("recv")
        assert last_send < types.index("send_barrier") < first_recv
        assert max(i for i, ty in enumerate(types) if ty == "recv") < types.index("fetch_barrier")
    else:
        assert "send_barrier" not in types and "fetch_barrier" not in types
    if w_blocks == 2:
        concat = prog.global_block().ops[-1]
        assert concat.type == "concat" and concat.output("Out") == ["fc_0.w_0"]
        assert concat.input("X") == ["fc_0.w_0.block0", "fc_0.w_0.block1"]


@pytest.mark.parametrize("pservers", [1, 2, 3])
@pytest.mark.parametrize("trainers", [1, 2])
def test_every_parameter_block_lives_on_exactly_one_pserver(pservers, trainers):
    t, main, _ = transpile(dense_net, pservers=pservers, trainers=trainers, opt="adam")
    seen = {}
    for ep in EPS[:pservers]:
        prog = t.get_pserver_program(ep)
        for name, var in prog.global_block().vars.items():
            if name.split(".block")[0] in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0") and "@" not in name \
                    and "_moment" not in name and "_pow" not in name:
                seen.setdefault(name, []).append(ep)
    assert all(len(eps) == 1 for eps in seen.values()), seen
    blocks = sorted(n for n in seen if n.startswith("fc_0.w_0"))
    assert blocks == (["fc_0.w_0.block0", "fc_0.w_0.block1"] if pservers > 1 else ["fc_0.w_0"])
    overview = main._parameters_on_pservers
    for dv in overview.get_distributed_vars_by_vtypes(["Param"]):
        assert seen[dv.slice.name] == [dv.endpoint]


def test_a_pserver_program_merges_the_trainers_gradients_then_optimizes_each_block():
    t, _, _ = transpile(dense_net, pservers=2, trainers=2, opt="adam")
    prog = t.get_pserver_program(EPS[1])
    lis = listen_and_serv(prog)
    assert lis.attr("Fanin") == 2 and lis.attr("sync_mode") is True and lis.attr("endpoint") == EPS[1]
    assert lis.attr("lr_decay_block_id") == -1
    blocks = {b.idx: b for b in lis.attr("optimize_blocks")}
    grad_to_block = dict(e.split(":") for e in lis.attr("grad_to_block_id"))
    assert sorted(lis.input("X")) == sorted(f"{g}.trainer_{i}" for g in grad_to_block for i in range(2))
    for grad, idx in grad_to_block.items():
        block = blocks[int(idx)]
        assert op_types(block) == ["sum", "scale", "adam"]
        s, sc, adam = block.ops
        assert s.input("X") == [f"{grad}.trainer_0", f"{grad}.trainer_1"] and s.output("Out") == [grad]
        assert sc.attr("scale") == 0.5
        assert adam.input("Grad") == [grad]
        param = adam.input("Param")[0]
        assert adam.output("ParamOut") == [param]
        assert grad == param.replace(".block", "@GRAD.block") if ".block" in param else grad == param + "@GRAD"


def test_sliced_adam_state_is_cut_to_the_block_and_beta_powers_keep_their_shape():
    t, _, _ = transpile(dense_net, pservers=2, trainers=1, opt="adam")
    for ep in EPS[:2]:
        prog = t.get_pserver_program(ep)
        gb = prog.global_block()
        for block in listen_and_serv(prog).attr("optimize_blocks"):
            (adam,) = [op for op in block.ops if op.type == "adam"]
            param = adam.input("Param")[0]
            if param.startswith("fc_0.w_0.block"):
                suffix = param[len("fc_0.w_0"):]
                assert adam.input("Moment1") == [f"fc_0.w_0_moment1_0{suffix}"]
                assert gb.var(adam.input("Moment1")[0]).shape == (32, 256)
                assert adam.input("Beta1Pow") == [f"fc_0.w_0_beta1_pow_acc_0{suffix}"]
                assert gb.var(adam.input("Beta1Pow")[0]).shape == (1,)
            else:
                assert adam.input("Moment1") == [f"{param}_moment1_0"]
            assert "sum" not in op_types(block)  # one trainer: nothing to merge


def test_the_overview_records_param_and_optimizer_pieces_with_offsets():
    t, main, _ = transpile(dense_net, pservers=2, trainers=1, opt="adam")
    ov = main._parameters_on_pservers
    w = sorted(ov.get_distributed_vars_by_origin("fc_0.w_0"), key=lambda d: d.block_id)
    assert [(d.slice.name, d.is_slice, d.block_id, d.offset) for d in w] == [
        ("fc_0.w_0.block0", True, 0, 0), ("fc_0.w_0.block1", True, 1, 32 * 256)]
    opt = ov.get_distributed_vars_by_vtypes(["Optimizer"], groupby=True)
    m1 = sorted(opt["fc_0.w_0_moment1_0"], key=lambda d: d.block_id)
    assert [(d.slice.name, d.slice.shape, d.offset, d.endpoint) for d in m1] == [
        ("fc_0.w_0_moment1_0.block0", (32, 256), 0, w[0].endpoint),
        ("fc_0.w_0_moment1_0.block1", (32, 256), 8192, w[1].endpoint)]
    assert all(not d.is_slice for d in opt["fc_0.w_0_beta1_pow_acc_0"])
    assert main._is_distributed and main._endpoints == EPS[:2] and main._is_chief


def test_concatenating_the_pservers_initial_blocks_gives_the_single_machine_parameters():
    main, startup = dense_net("adam")
    exe = fluid.Executor(fluid.CPUPlace())
    ref = fluid.Scope()
    exe.run(startup, scope=ref)
    t, tmain, _ = transpile(dense_net, pservers=3, trainers=2, opt="adam")
    scopes = {}
    for ep in EPS[:3]:
        scopes[ep] = fluid.Scope()
        exe.run(t.get_pserver_programs(ep)[1], scope=scopes[ep])
    for name in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0", "fc_0.w_0_moment1_0"):
        pieces = sorted((d for d in tmain._parameters_on_pservers.get_distributed_vars_by_origin(name)),
                        key=lambda d: d.block_id)
        got = np.concatenate([scopes[d.endpoint].vars[d.slice.name] for d in pieces])
        np.testing.assert_array_equal(got, ref.vars[name])
    # the full draw used to cut the blocks does not stay behind
    assert not any("fc_0.w_0" == n for s in scopes.values() for n in s.vars)


def test_the_trainer_startup_receives_every_parameter_from_the_pservers():
    t, _, startup = transpile(dense_net, pservers=2, trainers=2)
    types = op_types(startup.global_block())
    tail = types[types.index("recv"):]
    assert tail == ["recv"] * 4 + ["fetch_barrier", "concat"]
    received = [n for op in startup.global_block().ops if op.type == "recv" for n in op.output("Out")]
    assert sorted(received) == ["fc_0.b_0", "fc_0.w_0.block0", "fc_0.w_0.block1", "fc_1.b_0", "fc_1.w_0"]


def test_every_trainer_derives_the_same_pserver_programs():
    t0, _, _ = transpile(dense_net, trainer_id=0, pservers=3, trainers=2, opt="adam")
    t1, _, _ = transpile(dense_net, trainer_id=1, pservers=3, trainers=2, opt="adam")
    for ep in EPS[:3]:
        for a, b in zip(t0.get_pserver_programs(ep), t1.get_pserver_programs(ep)):
            assert a.to_dict() == b.to_dict()


def test_transpiled_programs_round_trip_through_bytes_with_their_distributed_attributes():
    t, main, _ = transpile(dense_net, pservers=2, trainers=2)
    for prog in (t.get_trainer_program(wait_port=False), t.get_pserver_program(EPS[0])):
        back = deserialize_dist_program(serialize_dist_program(prog))
        assert back.to_dict() == prog.to_dict()
        assert back._is_distributed and back._endpoints == EPS[:2]
        assert back._parameters_on_pservers.overview() == main._parameters_on_pservers.overview()
    assert deserialize_dist_program(serialize_dist_program(t.get_pserver_program(EPS[0])))._ps_endpoint == EPS[0]


def test_hash_name_can_put_two_blocks_of_one_parameter_on_one_pserver_without_shared_state():
    cfg = DistributeTranspilerConfig()
    cfg.split_method = HashName
    # crc32 puts both blocks of fc_0.w_0 on the same endpoint for this pair
    # (found by search; the assertion below checks the premise).
    eps = None
    for a in range(6170, 6300):
        cand = [f"127.0.0.1:{a}", f"127.0.0.1:{a + 1}"]
        d = HashName(cand).dispatch(["fc_0.w_0.block0", "fc_0.w_0.block1"])
        if d[0] == d[1]:
            eps = cand
            break
    assert eps is not None
    main, startup = dense_net("adam")
    t = DistributeTranspiler(cfg)
    t.transpile(0, program=main, startup_program=startup, pservers=",".join(eps), trainers=1)
    holder = HashName(eps).dispatch(["fc_0.w_0.block0"])[0]
    prog = t.get_pserver_program(holder)
    adams = [op for b in listen_and_serv(prog).attr("optimize_blocks") for op in b.ops if op.type == "adam"
             and op.input("Param")[0].startswith("fc_0.w_0")]
    assert sorted(op.input("Beta1Pow")[0] for op in adams) == [
        "fc_0.w_0_beta1_pow_acc_0.block0", "fc_0.w_0_beta1_pow_acc_0.block1"]


def test_without_slicing_each_variable_stays_whole_on_one_pserver_in_a_seeded_order():
    cfg = DistributeTranspilerConfig()
    cfg.slice_var_up = False
    t, main, _ = transpile(dense_net, pservers=3, trainers=2, config=cfg)
    prog = t.get_trainer_program(wait_port=False)
    assert "split_byref" not in op_types(prog.global_block()) and "concat" not in op_types(prog.global_block())
    pieces = main._parameters_on_pservers.get_distributed_vars_by_vtypes(["Param"])
    assert sorted(d.slice.name for d in pieces) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    again, main2, _ = transpile(dense_net, trainer_id=1, pservers=3, trainers=2, config=cfg)
    assert main2._parameters_on_pservers.overview() == main._parameters_on_pservers.overview()


def test_a_pserver_holding_nothing_gets_one_empty_optimize_block():
    def tiny():
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.layers.data(name="x", shape=[4])
            loss = fluid.layers.mean(fluid.layers.fc(x, 1, bias_attr=False))
            fluid.optimizer.SGD(0.1).minimize(loss)
        return main, startup
    t, _, _ = transpile(tiny, pservers=2, trainers=1)
    lis = listen_and_serv(t.get_pserver_program(EPS[1]))
    (block,) = lis.attr("optimize_blocks")
    assert block.ops == [] and lis.attr("grad_to_block_id") == [] and lis.input("X") == []


# -- sparse --------------------------------------------------------------------------------

@pytest.mark.parametrize("pservers", [1, 2, 3])
@pytest.mark.parametrize("trainers", [1, 2])
@pytest.mark.parametrize("sync", [True, False])
def test_a_sparse_gradient_is_split_by_height_sections_and_stays_sparse_on_the_pservers(pservers, trainers, sync):
    t, _, _ = transpile(embedding_net, pservers=pservers, trainers=trainers, sync=sync)
    prog = t.get_trainer_program(wait_port=False)
    suffix = ".trainer_0" if sync and trainers > 1 else ""
    splits = [op for op in prog.global_block().ops if op.type == "split_selected_rows"]
    sends = [n for op in prog.global_block().ops if op.type == "send" for n in op.input("X")]
    if pservers > 1:  # [1024, 16] = 16384 elements: two blocks of 512 rows
        (split,) = splits
        assert split.input("X") == ["emb@GRAD"] and split.attr("height_sections") == [512, 512]
        assert split.output("Out") == [f"emb@GRAD.block{i}{suffix}" for i in range(2)]
        assert prog.global_block().var(f"emb@GRAD.block0{suffix}").type.value == "SELECTED_ROWS"
        assert set(split.output("Out")) <= set(sends)
    else:
        assert not splits and f"emb@GRAD{suffix}" in sends
    held = []
    for ep in EPS[:pservers]:
        prog = t.get_pserver_program(ep)
        gb = prog.global_block()
        for name in listen_and_serv(prog).input("X"):
            if name.startswith("emb@GRAD"):
                assert gb.var(name).type.value == "SELECTED_ROWS"
                held.append(name)
    per_block = trainers if sync and trainers > 1 else 1
    assert len(held) == len(set(held)) == (2 if pservers > 1 else 1) * per_block


# -- the distributed lookup table -----------------------------------------------------------

@pytest.mark.parametrize("pservers", [1, 2, 3])
@pytest.mark.parametrize("trainers", [1, 2])
@pytest.mark.parametrize("sync", [True, False])
def test_the_distributed_table_in_every_job_shape(pservers, trainers, sync):
    t, _, _ = transpile(embedding_net, pservers=pservers, trainers=trainers, sync=sync, distributed=True)
    ops = t.get_trainer_program(wait_port=False).global_block().ops
    (split,) = [op for op in ops if op.type == "split_ids" and op.input("Ids") == ["ids"]]
    assert len(split.output("Out")) == pservers
    (grad_split,) = [op for op in ops if op.type == "split_ids" and op.input("Ids") == ["emb@GRAD"]]
    trainer_part = ".trainer_0" if sync else ""
    assert grad_split.output("Out") == [f"emb@GRAD{trainer_part}.pserver_{k}" for k in range(pservers)]
    for k, ep in enumerate(EPS[:pservers]):
        prog = t.get_pserver_program(ep)
        assert tuple(prog.global_block().var("emb").shape) == (-1, 16)  # a SparseTable: no height
        lis = listen_and_serv(prog)
        key = "emb@GRAD" if sync else f"emb@GRAD.pserver_{k}"
        block = prog.block(int(dict(e.split(":") for e in lis.attr("grad_to_block_id"))[key]))
        assert op_types(block) == (["sum", "scale"] if sync else []) + ["sparse_table_push"]
        if sync:
            assert block.ops[0].input("X") == [f"emb@GRAD.trainer_{i}.pserver_{k}" for i in range(trainers)]


def test_a_distributed_table_lookup_becomes_split_ids_prefetch_merge_ids():
    t, main, startup = transpile(embedding_net, pservers=2, trainers=2, distributed=True)
    prog = t.get_trainer_program(wait_port=False)
    ops = prog.global_block().ops
    types = op_types(prog.global_block())
    assert "lookup_table" not in types
    i = types.index("split_ids")
    assert types[i:i + 3] == ["split_ids", "prefetch", "merge_ids"]
    split, pre, merge = ops[i:i + 3]
    assert split.input("Ids") == ["ids"] and pre.input("X") == split.output("Out")
    assert pre.attr("epmap") == EPS[:2] and pre.attr("table_names") == ["emb", "emb"]
    assert merge.input("Ids") == ["ids"] and merge.input("Rows") == split.output("Out")
    assert merge.input("X") == pre.output("Out")
    grad_split = next(op for op in ops if op.type == "split_ids" and op.input("Ids") == ["emb@GRAD"])
    assert grad_split.output("Out") == ["emb@GRAD.trainer_0.pserver_0", "emb@GRAD.trainer_0.pserver_1"]
    send = ops[ops.index(grad_split) + 1]
    assert send.type == "send" and send.attr("epmap") == EPS[:2]
    assert send.output("Out")[0] in next(op for op in ops if op.type == "send_barrier").input("X")
    # the table is neither received nor concatenated by the trainer
    assert not any("emb" in n for op in ops if op.type in ("recv", "concat") for n in op.output_arg_names)
    stypes = op_types(startup.global_block())
    assert "fake_init" in stypes
    assert not any(op.type != "fake_init" and "emb" in op.output_arg_names for op in startup.global_block().ops)
    assert prog._distributed_lookup_tables == ["emb"]


def test_each_pserver_gets_a_sparse_table_with_optimize_prefetch_and_checkpoint_blocks():
    t, _, _ = transpile(embedding_net, pservers=3, trainers=2, distributed=True, vocab=1000)
    creates = []
    for k, ep in enumerate(EPS[:3]):
        prog, startup = t.get_pserver_programs(ep)
        gb = prog.global_block()
        assert tuple(gb.var("emb").shape) == (-1, 16)
        lis = listen_and_serv(prog)
        blocks = {b.idx: b for b in lis.attr("optimize_blocks")}
        g2b = dict(e.split(":") for e in lis.attr("grad_to_block_id"))
        table_block = blocks[int(g2b["emb@GRAD"])]
        assert op_types(table_block) == ["sum", "scale", "sparse_table_push"]
        assert table_block.ops[0].input("X") == [f"emb@GRAD.trainer_{i}.pserver_{k}" for i in range(2)]
        push = table_block.ops[2]
        assert push.input("W") == ["emb"] and push.input("Grad") == ["emb@GRAD"]
        (lr,) = push.input("LearningRate")
        assert gb.var(lr).persistable  # the table's learning rate, read at push time
        (entry,) = lis.attr("prefetch_var_name_to_block_id")
        table, idx = entry.split(":")
        assert table == "emb"
        (lookup,) = prog.block(int(idx)).ops
        assert lookup.type == "lookup_sparse_table" and lookup.input("W") == ["emb"]
        assert op_types(prog.block(lis.attr("checkpoint_block_id"))) == ["sparse_table_save"]
        (create,) = [op for op in startup.global_block().ops if "emb" in op.output_arg_names]
        assert create.type == "create_sparse_table"
        creates.append({k: v for k, v in create.attrs.items() if k != "op_role"})
    # Every pserver builds the same table config: an id's first row does not depend on where it lives.
    assert creates[0] == creates[1] == creates[2]
    config = table_config_from_attrs(creates[0])
    assert (config.name, config.dim, config.optimizer.name) == ("emb", 16, "sgd")  # SGD(0.5)
    assert config.seed != 0 and config.initializer.kind == "uniform"


def test_async_table_gradients_go_to_each_pserver_without_trainer_suffix():
    t, _, _ = transpile(embedding_net, pservers=2, trainers=2, sync=False, distributed=True)
    prog = t.get_trainer_program(wait_port=False)
    grad_split = next(op for op in prog.global_block().ops if op.type == "split_ids"
                      and op.input("Ids") == ["emb@GRAD"])
    assert grad_split.output("Out") == ["emb@GRAD.pserver_0", "emb@GRAD.pserver_1"]
    lis = listen_and_serv(t.get_pserver_program(EPS[1]))
    assert "emb@GRAD.pserver_1" in lis.input("X") and lis.attr("sync_mode") is False
    assert any(e.startswith("emb@GRAD.pserver_1:") for e in lis.attr("grad_to_block_id"))


# -- LR schedule, clipping, weight decay ------------------------------------------------------

def lr_net():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        y = fluid.layers.data(name="y", shape=[1])
        p = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(
            regularizer=fluid.regularizer.L2Decay(0.1), gradient_clip=fluid.clip.GradientClipByValue(0.5)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(p, y))
        lr = fluid.layers.exponential_decay(0.1, 2, 0.5, staircase=True)
        fluid.optimizer.Momentum(lr, 0.9).minimize(loss)
    return main, startup


def test_lr_ops_move_to_a_pserver_block_and_helpers_stay_with_their_optimizer():
    t, _, _ = transpile(lr_net, pservers=1, trainers=2)
    trainer = t.get_trainer_program(wait_port=False)
    assert not {"increment", "lr_exponential_decay", "clip", "l2_decay", "momentum"} & set(
        op_types(trainer.global_block()))
    prog = t.get_pserver_program(EPS[0])
    lis = listen_and_serv(prog)
    lr_block = prog.block(lis.attr("lr_decay_block_id"))
    assert lis.attr("optimize_blocks")[0] is lr_block
    assert op_types(lr_block) == ["increment", "lr_exponential_decay"]
    g2b = dict(e.split(":") for e in lis.attr("grad_to_block_id"))
    w_block = prog.block(int(g2b["fc_0.w_0@GRAD"]))
    assert op_types(w_block) == ["sum", "scale", "clip", "l2_decay", "momentum"]
    assert w_block.ops[2].input("X") == ["fc_0.w_0@GRAD"]
    assert w_block.ops[4].input("Grad") == w_block.ops[3].output("Out")


# -- misuse ------------------------------------------------------------------------------------

def test_an_endpoint_outside_the_pserver_list_is_refused():
    t, _, _ = transpile(dense_net, pservers=2)
    with pytest.raises(ValueError, match="not one of the pservers"):
        t.get_pserver_program("127.0.0.1:9999")


@pytest.mark.parametrize("trainer_id", [2, -1, "0"])
def test_a_trainer_id_outside_the_trainers_is_refused(trainer_id):
    main, startup = dense_net()
    with pytest.raises(ValueError, match=r"trainer_id must be an int in \[0, 2\)"):
        DistributeTranspiler().transpile(trainer_id, program=main, startup_program=startup,
                                         pservers=EPS[0], trainers=2)


def test_an_optimizer_outside_the_seeds_list_is_refused():
    main, startup = dense_net()
    gb = main.global_block()
    sgd = next(op for op in gb.ops if op.type == "sgd")
    sgd.type = "proximal_gd"
    with pytest.raises(UnsupportedOptimizerError, match="'proximal_gd'.*supported: sgd"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0])


def test_a_program_without_optimizer_ops_is_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4])
        fluid.backward.append_backward(fluid.layers.mean(fluid.layers.fc(x, 1)))
    with pytest.raises(GraphError, match="no optimizer ops: call optimizer.minimize"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0])


def test_a_min_block_size_below_the_minimum_is_refused_at_construction():
    cfg = DistributeTranspilerConfig()
    cfg.min_block_size = 1024
    with pytest.raises(TranspilerConfigError, match="min_block_size=1024"):
        DistributeTranspiler(cfg)


def test_nccl2_mode_adds_the_rings_rendezvous_to_the_startup_program_only():
    main, startup = dense_net()
    cfg = DistributeTranspilerConfig()
    cfg.mode = "nccl2"
    before = [op.type for op in main.global_block().ops]
    t = DistributeTranspiler(cfg)
    t.transpile(1, program=main, startup_program=startup, trainers="127.0.0.1:7001,127.0.0.1:7002",
                current_endpoint="127.0.0.1:7002")
    assert [op.type for op in main.global_block().ops] == before
    gen = [op for op in startup.global_block().ops if op.type == "gen_nccl_id"]
    assert len(gen) == 1
    assert (gen[0].attr("trainers"), gen[0].attr("trainer_id")) == (["127.0.0.1:7001", "127.0.0.1:7002"], 1)
    assert not getattr(main, "_is_distributed", False)


@pytest.mark.parametrize("trainers,trainer_id,current,message", [
    (2, 0, "", "trainers must list every trainer's endpoint"),
    ("127.0.0.1:7001,127.0.0.1:7002", 2, "", r"trainer_id must be an int in \[0, 2\)"),
    ("127.0.0.1:7001,127.0.0.1:7002", 0, "127.0.0.1:7002", "is not trainer 0's endpoint"),
])
def test_nccl2_mode_checks_its_arguments(trainers, trainer_id, current, message):
    main, startup = dense_net()
    cfg = DistributeTranspilerConfig()
    cfg.mode = "nccl2"
    with pytest.raises(ValueError, match=message):
        DistributeTranspiler(cfg).transpile(trainer_id, program=main, startup_program=startup,
                                            trainers=trainers, current_endpoint=current)


@pytest.mark.parametrize("pservers,message", [
    ("", "pservers is empty"),
    ("127.0.0.1", "not 'host:port'"),
    ("127.0.0.1:6170,127.0.0.1:6170", "must be distinct"),
])
def test_malformed_pserver_lists_are_refused(pservers, message):
    main, startup = dense_net()
    with pytest.raises(ValueError, match=message):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=pservers)


def test_transpiling_a_program_twice_is_refused():
    t, main, startup = transpile(dense_net)
    with pytest.raises(GraphError, match="already transpiled"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0])


def test_asking_for_programs_before_transpile_is_refused():
    with pytest.raises(RuntimeError, match="transpile\\(\\) first"):
        DistributeTranspiler().get_trainer_program(wait_port=False)


def test_dc_asgd_with_sync_training_is_refused():
    cfg = DistributeTranspilerConfig()
    cfg.enable_dc_asgd = True
    main, startup = dense_net()
    with pytest.raises(TranspilerConfigError, match="enable_dc_asgd needs async"):
        DistributeTranspiler(cfg).transpile(0, program=main, startup_program=startup, pservers=EPS[0])


def test_clipping_by_global_norm_across_parameters_is_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        fluid.clip.set_gradient_clip(fluid.clip.GradientClipByGlobalNorm(1.0))
        fluid.optimizer.SGD(0.1).minimize(loss)
    with pytest.raises(GraphError, match="global norm"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0])


def test_a_refused_program_is_left_exactly_as_it_was():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[100, 8], is_sparse=False, is_distributed=True)
        fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(emb))
    before, before_startup = main.to_dict(), startup.to_dict()
    with pytest.raises(GraphError, match="is_sparse=True, is_distributed=True"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0])
    assert main.to_dict() == before and startup.to_dict() == before_startup
    assert not main._is_distributed


@pytest.mark.parametrize("initializer, want", [
    (fluid.initializer.Normal(0.5, 0.2), {"kind": "normal", "mean": 0.5, "std": 0.2}),
    (fluid.initializer.TruncatedNormal(0.0, 0.1), {"kind": "truncated_normal", "mean": 0.0, "std": 0.1}),
    (fluid.initializer.Constant(0.25), {"kind": "constant", "value": 0.25}),
])
def test_the_sparse_table_initializer_follows_the_tables_init_op(initializer, want):
    def build():
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 11
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
            emb = fluid.layers.embedding(ids, size=[100, 4], is_sparse=True, is_distributed=True,
                                         param_attr=fluid.ParamAttr(name="emb", initializer=initializer))
            fluid.optimizer.SGD(0.5).minimize(fluid.layers.mean(fluid.layers.fc(emb, 1)))
        return main, startup
    t, _, _ = transpile(build, pservers=2)
    _, startup = t.get_pserver_programs(EPS[0])
    (create,) = [op for op in startup.global_block().ops if op.type == "create_sparse_table"]
    config = table_config_from_attrs(create.attrs)
    assert {k: getattr(config.initializer, k) for k in want} == pytest.approx(want)


# -- the distributed table's optimizer ----------------------------------------------------

def table_net(make_opt):
    def build():
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 11
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
            emb = fluid.layers.embedding(ids, size=[1000, 8], is_sparse=True, is_distributed=True,
                                         param_attr=fluid.ParamAttr(name="emb"))
            make_opt().minimize(fluid.layers.mean(fluid.layers.fc(emb, 1)))
        return main, startup
    return build


def table_config(t, ep=EPS[0]):
    _, startup = t.get_pserver_programs(ep)
    (create,) = [op for op in startup.global_block().ops if op.type == "create_sparse_table"]
    return table_config_from_attrs(create.attrs)


@pytest.mark.parametrize("make_opt, name, hyper", [
    (lambda: fluid.optimizer.Adam(0.01, beta1=0.8, beta2=0.99, epsilon=1e-6), "adam",
     {"beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6, "scale_epsilon": False}),
    (lambda: fluid.optimizer.Adagrad(0.1, epsilon=1e-5), "adagrad", {"epsilon": 1e-5}),
    (lambda: fluid.optimizer.Momentum(0.1, 0.7, use_nesterov=True), "momentum", {"mu": 0.7, "use_nesterov": True}),
    (lambda: fluid.optimizer.RMSProp(0.1, rho=0.9, epsilon=1e-4, momentum=0.5, centered=True), "rmsprop",
     {"rho": 0.9, "epsilon": 1e-4, "momentum": 0.5, "centered": True}),
    (lambda: fluid.optimizer.Ftrl(0.1, l1=0.01, l2=0.02), "ftrl", {"l1": 0.01, "l2": 0.02, "lr_power": -0.5}),
    (lambda: fluid.optimizer.SGD(0.1), "sgd", {}),
])
def test_the_pservers_table_runs_the_programs_rule_with_its_hyperparameters(make_opt, name, hyper):
    t, main, startup = transpile(table_net(make_opt), pservers=2)
    configs = [table_config(t, ep) for ep in EPS[:2]]
    assert configs[0] == configs[1]
    assert configs[0].optimizer.name == name
    assert dict(configs[0].optimizer.hyper) == pytest.approx(hyper)
    # The table's state lives in the pservers' SparseTable rows: no [1000, ...] state on a
    # trainer (neither declared nor initialized) or in the pserver programs' variables.
    trainer = t.get_trainer_program(wait_port=False)
    for prog in (trainer, startup) + t.get_pserver_programs(EPS[0]):
        assert not [n for n in prog.global_block().vars if n.startswith("emb_")], prog
    assert not [op for op in startup.global_block().ops
                if any(n.startswith("emb_") for n in op.output_arg_names)]


def test_table_optimizer_sgd_gives_the_pservers_plain_sgd_for_the_table_only():
    cfg = DistributeTranspilerConfig()
    cfg.table_optimizer = "sgd"
    t, _, _ = transpile(table_net(lambda: fluid.optimizer.Adam(0.01)), pservers=2, config=cfg)
    assert table_config(t).optimizer.name == "sgd" and dict(table_config(t).optimizer.hyper) == {}
    prog = t.get_pserver_program(EPS[0]) if t.plan.blocks_on(EPS[0]) else t.get_pserver_program(EPS[1])
    assert "adam" in {op.type for b in listen_and_serv(prog).attr("optimize_blocks") for op in b.ops}
    assert cfg.as_dict()["table_optimizer"] == "sgd"


@pytest.mark.parametrize("bad", ["adam", "", None, True])
def test_a_bad_table_optimizer_is_refused_naming_the_accepted_values(bad):
    cfg = DistributeTranspilerConfig()
    cfg.table_optimizer = bad
    with pytest.raises(TranspilerConfigError, match="table_optimizer must be one of 'same', 'sgd'"):
        DistributeTranspiler(cfg)
    good = DistributeTranspilerConfig()
    t = DistributeTranspiler(good)
    good.table_optimizer = bad  # changed after construction: refused at transpile, program untouched
    main, startup = table_net(lambda: fluid.optimizer.Adam(0.01))()
    before = main.to_dict()
    with pytest.raises(TranspilerConfigError, match="'same', 'sgd'"):
        t.transpile(0, program=main, startup_program=startup, pservers=EPS[0])
    assert main.to_dict() == before


def test_a_table_state_start_the_sparse_table_cannot_reproduce_is_refused():
    build = table_net(lambda: fluid.optimizer.Adagrad(0.1, initial_accumulator_value=0.1))
    main, startup = build()
    before = main.to_dict()
    with pytest.raises(TranspilerConfigError, match="initial_accumulator_value must be 0"):
        DistributeTranspiler().transpile(0, program=main, startup_program=startup, pservers=EPS[0])
    assert main.to_dict() == before
    cfg = DistributeTranspilerConfig()
    cfg.table_optimizer = "sgd"  # the way out: plain sgd has no state
    t, _, _ = transpile(build, pservers=1, config=cfg)
    assert table_config(t).optimizer.name == "sgd"


@pytest.mark.parametrize("strategy_kind", ["distributed_strategy", "transpiler_config"])
def test_a_fleet_strategy_table_optimizer_reaches_the_program_and_the_pservers(strategy_kind):
    from psjob.fleet import Fleet
    from psjob.fleet.role_maker import Role, UserDefinedRoleMaker
    from psjob.fleet.strategy import DistributedStrategy

    def strategy(value):
        s = DistributedStrategy() if strategy_kind == "distributed_strategy" else DistributeTranspilerConfig()
        if strategy_kind == "transpiler_config":
            s.sync_mode = True
        s.table_optimizer = value
        return s

    def fleet_build(role, value):
        fleet = Fleet()
        fleet.init(UserDefinedRoleMaker(current_id=0, role=role, worker_num=2, server_endpoints=EPS[:2]))
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 11
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
            emb = fluid.layers.embedding(ids, size=[1000, 8], is_sparse=True, is_distributed=True,
                                         param_attr=fluid.ParamAttr(name="emb"))
            opt = fluid.optimizer.Adagrad(0.1)
            fleet.distributed_optimizer(opt, strategy(value)).minimize(fluid.layers.mean(fluid.layers.fc(emb, 1)))
        assert opt.table_optimizer == "same"  # the user's optimizer is left as it was
        return fleet

    server = fleet_build(Role.SERVER, "sgd")
    (create,) = [op for op in server.startup_program.global_block().ops if op.type == "create_sparse_table"]
    assert table_config_from_attrs(create.attrs).optimizer.name == "sgd"
    server = fleet_build(Role.SERVER, "same")
    (create,) = [op for op in server.startup_program.global_block().ops if op.type == "create_sparse_table"]
    assert table_config_from_attrs(create.attrs).optimizer.name == "adagrad"
    with pytest.raises(ValueError, match="strategy.table_optimizer must be one of 'same', 'sgd'"):
        fleet_build(Role.WORKER, "naive")
