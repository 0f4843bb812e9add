"""Several distributed lookup tables in one job (Paddle 2.x's parameter-server mode makes every
sparse embedding its own pserver table; PaddleRec's wide_deep has a wide and a deep one).

Two tables of different heights and widths, each with its own per-row optimizer state: the
transpiled programs, sync training equal to a single machine, async training, and a
checkpoint (a base and a delta) restored on another number of pservers. The pservers run
in memory (psjob.cluster.inmemory), as in test_transpiler_training.py.
"""
import importlib.util
import os

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.trainer import checkpoint_save as distributed
from psjob.cluster.trainer.checkpointer import CheckpointConfig, Checkpointer
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.fluid.transpiler import deserialize_dist_program as load
from psjob.fluid.transpiler import serialize_dist_program as dump
from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import read_manifest
from psjob.foundation.tables import SparseTable, shard_of

HERE = os.path.dirname(os.path.abspath(__file__))
EPS = ["127.0.0.1:6170", "127.0.0.1:6171", "127.0.0.1:6172"]
# name -> (height, width): different shapes, so a mix-up between the two shows
TABLES = {"wide": (300, 1), "deep": (500, 6)}


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


training = _load(os.path.join(HERE, "test_transpiler_training.py"))


def two_table_net(opt="adam", lr=None):
    """wide_deep's shape: a 1-wide table and a 6-wide one, each looked up by its own ids,
    concatenated with a dense feature into an fc; the deep table is looked up twice."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 13
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        wide_ids = fluid.layers.data(name="wide_ids", shape=[1], dtype="int64")
        deep_ids = fluid.layers.data(name="deep_ids", shape=[1], dtype="int64")
        more_ids = fluid.layers.data(name="more_ids", shape=[1], dtype="int64")
        x = fluid.layers.data(name="x", shape=[3])
        y = fluid.layers.data(name="y", shape=[1])

        def emb(ids, name):
            return fluid.layers.embedding(ids, size=list(TABLES[name]), is_sparse=True, is_distributed=True,
                                          param_attr=fluid.ParamAttr(
                                              name=name, initializer=fluid.initializer.Uniform(-0.5, 0.5)))
        h = fluid.layers.concat([emb(wide_ids, "wide"), emb(deep_ids, "deep"), emb(more_ids, "deep"), x], axis=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        {"adam": lambda: fluid.optimizer.Adam(lr or 0.02),
         "momentum": lambda: fluid.optimizer.Momentum(lr or 0.05, 0.9),
         "sgd": lambda: fluid.optimizer.SGD(lr or 0.2)}[opt]().minimize(loss)
    return main, startup, loss


def feeds(steps, n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        x = rng.normal(size=(n, 3)).astype("float32")
        wide = rng.integers(0, TABLES["wide"][0], size=(n, 1)).astype("int64")
        wide[:3] = 7  # repeated ids inside and across the trainers' batches
        out.append({"wide_ids": wide, "deep_ids": rng.integers(0, TABLES["deep"][0], size=(n, 1)).astype("int64"),
                    "more_ids": rng.integers(0, 40, size=(n, 1)).astype("int64"),
                    "x": x, "y": 0.3 * x[:, :1] + 0.1})
    return out


def table_rows(cluster, eps, name, fresh=False):
    """Table `name` as a dense array, id i read from the pserver shard_of names (fresh: the
    rows its per-id initializer gives)."""
    height, width = TABLES[name]
    out = np.empty((height, width), dtype="float32")
    ids = np.arange(height, dtype=np.int64)
    owner = shard_of(ids, len(eps))
    for k, ep in enumerate(eps):
        table = cluster.handler(ep).scope.vars[name]
        assert isinstance(table, SparseTable)
        source = SparseTable(table.config) if fresh else table
        out[owner == k] = source.lookup(ids[owner == k])
    return out


def transpiled(pservers=2, trainer_id=0, trainers=2, sync=True, opt="adam"):
    main, startup, loss = two_table_net(opt)
    t = DistributeTranspiler()
    t.transpile(trainer_id, program=main, startup_program=startup, pservers=",".join(EPS[:pservers]),
                trainers=trainers, sync_mode=sync)
    return t


def test_the_plan_and_programs_hold_one_table_each_in_first_lookup_order():
    t = transpiled(pservers=2)
    assert [(tp.name, tp.height, tp.width, tp.optimizer["name"]) for tp in t.plan.tables] == [
        ("wide", 300, 1, "adam"), ("deep", 500, 6, "adam")]
    assert [set(tp.state_vars) for tp in t.plan.tables] == [
        {"wide_moment1_0", "wide_moment2_0", "wide_beta1_pow_acc_0", "wide_beta2_pow_acc_0"},
        {"deep_moment1_0", "deep_moment2_0", "deep_beta1_pow_acc_0", "deep_beta2_pow_acc_0"}]
    assert "wide" not in t.plan.params and "deep" not in t.plan.params  # sharded by id, not sliced

    main = t.get_trainer_program(wait_port=False)
    ops = main.global_block().ops
    prefetches = [op for op in ops if op.type == "prefetch"]
    assert [op.attr("table_names") for op in prefetches] == [["wide"] * 2, ["deep"] * 2]
    pieces = [n for op in prefetches for n in op.input("X") + op.output("Out")]
    assert len(pieces) == len(set(pieces)) == 8  # no variable shared between the tables
    sends = {op.attr("op_role_var")[0]: op.input("X") for op in ops if op.type == "send"
             if op.attr("op_role_var")[0] in TABLES}
    assert sends == {name: [f"{name}@GRAD.trainer_0.pserver_{k}" for k in range(2)] for name in TABLES}
    assert main._distributed_lookup_tables == ["wide", "deep"]
    assert not {"lookup_table", "adam"} & {op.type for op in ops}
    startup = t.get_trainer_startup_program()
    assert sorted(op.output("Out")[0] for op in startup.global_block().ops if op.type == "fake_init") == \
        ["deep", "wide"]

    for ep in EPS[:2]:
        prog, pstartup = t.get_pserver_programs(ep)
        serve = prog.global_block().ops[0]
        assert serve.attr("distributed_lookup_tables") == ["wide", "deep"]
        prefetch = dict(s.split(":") for s in serve.attr("prefetch_var_name_to_block_id"))
        assert set(prefetch) == set(TABLES)
        for name, idx in prefetch.items():
            assert prog.block(int(idx)).ops[0].input("W") == [name]
        grads = [s.split(":")[0] for s in serve.attr("grad_to_block_id")]
        assert {"wide@GRAD", "deep@GRAD"} <= set(grads)
        saves = prog.block(serve.attr("checkpoint_block_id")).ops
        assert [op.attr("table_name") for op in saves] == ["wide", "deep"]
        creates = {op.attr("table_name"): op.attr("dim") for op in pstartup.global_block().ops
                   if op.type == "create_sparse_table"}
        assert creates == {"wide": 1, "deep": 6}
        # the list survives serialization
        assert load(dump(prog))._distributed_lookup_tables == ["wide", "deep"]


def test_a_program_serialized_with_the_single_table_name_still_loads():
    import json
    t = transpiled()
    doc = json.loads(dump(t.get_trainer_program(wait_port=False)))
    del doc["distributed"]["distributed_lookup_tables"]
    doc["distributed"]["distributed_lookup_table"] = "wide"
    assert load(json.dumps(doc))._distributed_lookup_tables == ["wide"]
    doc["distributed"]["distributed_lookup_table"] = None
    assert load(json.dumps(doc))._distributed_lookup_tables == []
    doc["distributed"]["distributed_lookup_tables"] = "wide"
    with pytest.raises(Exception, match="distributed_lookup_tables must be a list"):
        load(json.dumps(doc))


def _run(opt, trainers, pservers, sync=True, steps=5):
    build = lambda: two_table_net(opt)  # noqa: E731
    data = feeds(steps, 12)
    cluster, results, _ = training.distributed(build, data, trainers, pservers, sync=sync)
    return build, data, cluster, results


@pytest.mark.parametrize("opt,trainers,pservers", [("adam", 2, 2), ("adam", 2, 3), ("momentum", 1, 2), ("sgd", 2, 3)])
def test_sync_training_of_two_tables_equals_single_machine_training(opt, trainers, pservers):
    build, data, cluster, results = _run(opt, trainers, pservers)
    eps = EPS[:pservers]
    init = {name: table_rows(cluster, eps, name, fresh=True) for name in TABLES}
    ref, _ = training.single_machine(build, data, init=init)
    for name in TABLES:
        rules = {cluster.handler(ep).scope.vars[name].config.optimizer.name for ep in eps}
        assert rules == {opt}
        np.testing.assert_allclose(table_rows(cluster, eps, name), ref[name], rtol=1e-5, atol=1e-6, err_msg=name)
    for scope, *_ in results:
        np.testing.assert_allclose(scope.vars["fc_0.w_0"], ref["fc_0.w_0"], rtol=1e-5, atol=1e-6)
        # the tables' optimizer state lives on the pservers only
        assert not [n for n in scope.vars if n.startswith(("wide_moment", "deep_moment", "wide_beta", "deep_beta"))]


def test_async_training_of_two_tables_learns_and_touches_only_the_ids_looked_up():
    build, data, cluster, results = _run("sgd", 2, 2, sync=False, steps=30)
    eps = EPS[:2]
    losses = results[0][1]
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    for name, key in (("wide", "wide_ids"), ("deep", "deep_ids")):
        held = np.sort(np.concatenate([cluster.handler(ep).scope.vars[name].export().ids for ep in eps]))
        looked_up = {int(i) for f in data for i in f[key].ravel()}
        if name == "deep":
            looked_up |= {int(i) for f in data for i in f["more_ids"].ravel()}
        assert set(held.tolist()) == looked_up, name


class Job:
    """A sync job of two trainers and `n` in-memory pservers, as test_checkpoint_distributed's."""

    def __init__(self, n):
        self.programs = []
        for t in range(2):
            main, startup, loss = two_table_net("adam")
            tr = DistributeTranspiler()
            tr.transpile(t, program=main, startup_program=startup, pservers=",".join(EPS[:n]), trainers=2)
            self.programs.append((tr, loss))
        self.eps = EPS[:n]
        self.cluster = InMemoryCluster({ep: self.programs[0][0].get_pserver_programs(ep) for ep in self.eps})

    def train(self, steps, root=None, save_at=(), whole=None):
        data = feeds(steps, 12, seed=5)

        def body(t, exe):
            tr, loss = self.programs[t]
            scope = fluid.Scope()
            exe.run(tr.get_trainer_startup_program(), scope=scope)
            prog = tr.get_trainer_program(wait_port=False)
            ckpt = None
            if t == 0 and root:
                config = CheckpointConfig(root=str(root), keep=100, incremental=True, base_every=10)
                ckpt = Checkpointer(exe, prog, config, scope=scope, dist=distributed.DistInfo.of(prog))
            for s, feed in enumerate(data):
                exe.run(prog, feed={k: v[t::2] for k, v in feed.items()}, fetch_list=[loss], scope=scope)
                if ckpt is not None and s + 1 in save_at:
                    assert ckpt.save(s + 1) is not None, ckpt.failures
            if t == 0 and whole:
                fluid.io._save_distributed_persistables(exe, str(whole), prog, scope=scope)
        self.cluster.run_trainers(body, 2)
        return self

    def export(self, name):
        from psjob.foundation.tables import concat_shards
        return concat_shards([self.cluster.handler(ep).scope.vars[name].export() for ep in self.eps])


def test_a_base_and_a_delta_of_two_tables_restore_on_three_pservers_with_their_state(tmp_path):
    root = tmp_path / "ckpt"
    job = Job(2).train(6, root=root, save_at={3, 6}, whole=tmp_path / "whole")
    infos = store.candidates(str(root))
    assert [(c.step, c.kind) for c in infos] == [(6, "delta"), (3, "base")]
    delta, base = infos[0].manifest, infos[1].manifest
    whole = read_manifest(str(tmp_path / "whole"))  # step 6, every row
    assert set(whole["tables"]) == set(TABLES) and not set(TABLES) & set(whole["vars"])
    for name in TABLES:
        assert base["tables"][name]["num_shards"] == 2 and delta["tables"][name]["delta"] is True
        assert base["tables"][name]["width"] == TABLES[name][1]
        rows = lambda doc: sum(s["rows"] for s in doc["tables"][name]["shards"])  # noqa: E731
        assert 0 < rows(delta) < rows(whole), name  # only the rows steps 4-6 changed

    for n in (3, 2):
        fresh = Job(n)
        for ep in fresh.eps:
            info = fresh.cluster.handler(ep).restore_from_checkpoints(str(root))
            assert info is not None and info.step == 6
        for name in TABLES:
            want, got = job.export(name), fresh.export(name)
            np.testing.assert_array_equal(got.ids, want.ids, err_msg=name)
            np.testing.assert_array_equal(got.values, want.values, err_msg=name)
            assert set(got.state) == {"moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"}
            for key in want.state:
                np.testing.assert_array_equal(got.state[key], want.state[key], err_msg=f"{name} {key}")
            for ep in fresh.eps:  # each pserver holds exactly the ids shard_of gives it, of both tables
                ids = fresh.cluster.handler(ep).scope.vars[name].export().ids
                assert (shard_of(ids, n) == fresh.eps.index(ep)).all()


def pooled_two_table_net():
    """The CTR shape per table: LoD slots 0-1 sum-pooled from one table, slot 2 from
    another (widths 4 and 2), one fc over the list of pooled slots."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        y = fluid.layers.data(name="y", shape=[1])
        slots = [fluid.layers.data(name=f"s{i}", shape=[1], dtype="int64", lod_level=1) for i in range(3)]
        pooled = []
        for i, s in enumerate(slots):
            name, dim = ("a", 4) if i < 2 else ("b", 2)
            attr = fluid.ParamAttr(name=name, initializer=fluid.initializer.Uniform(-0.5, 0.5))
            pooled.append(fluid.layers.sequence_pool(fluid.layers.embedding(
                s, size=[12, dim], is_sparse=True, is_distributed=True, param_attr=attr), "sum"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(pooled, 1), y))
        fluid.optimizer.SGD(0.3).minimize(loss)
    return main, startup, loss


def test_each_table_of_the_ctr_shape_is_fused_and_trains_like_a_single_machine():
    data = training.pooled_feeds(4, 10)
    for f in data:
        del f["dense"]
    cluster, results, _ = training.distributed(pooled_two_table_net, data, 1, 2)
    ran = results[0][2]
    assert training.FUSED <= ran and not {"merge_ids", "sequence_pool", "lookup_table_grad"} & ran
    init, got = {}, {}
    for name, dim in (("a", 4), ("b", 2)):
        ids = np.arange(12, dtype=np.int64)
        owner = shard_of(ids, 2)
        init[name], got[name] = np.empty((12, dim), "float32"), np.empty((12, dim), "float32")
        for k, ep in enumerate(EPS[:2]):
            table = cluster.handler(ep).scope.vars[name]
            init[name][owner == k] = SparseTable(table.config).lookup(ids[owner == k])
            got[name][owner == k] = table.lookup(ids[owner == k])
    ref, _ = training.single_machine(pooled_two_table_net, data, init=init)
    for name in ("a", "b", "fc_0.w_0", "fc_0.w_2"):
        want = ref[name]
        have = got[name] if name in got else results[0][0].vars[name]
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6, err_msg=name)
