"""Heterogeneous jobs in one process: the split programs train exactly like the plain job.

Real: device_guard, the DistributeTranspiler, the heter split, the programs
(shipped as bytes before running, as separate processes would), Executors
and kernels, PserverState with its sync rounds, HeterState with one section
per CPU trainer (each heter section transpiles and splits for its trainer
itself, as fleet/heter.py does). Faked: only the wire — InMemoryClient and
InMemoryHeterClient call the states directly, copying values both ways.
"""
import numpy as np

import psjob.fluid as fluid
from psjob.cluster.heter.heter_inmemory import InMemoryHeterClient
from psjob.cluster.heter.heter_state import HeterSection, HeterState
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.pserver_state import PserverOptions
from psjob.fluid.executor import Executor
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.fluid.transpiler import deserialize_dist_program as load
from psjob.fluid.transpiler import serialize_dist_program as dump
from psjob.fluid.transpiler.heter_split import served_trainers, split_heter_program

EPS = ["127.0.0.1:6170", "127.0.0.1:6171", "127.0.0.1:6172"]
HEPS = ["127.0.0.1:7170", "127.0.0.1:7171"]
VOCAB, DIM, WIDTH = 1000, 8, 64


def mlp_net(device="gpu", loss_inside=False, distributed=False, optimizer="adam"):
    """ids → embedding (CPU side) ⊕ x → [fc 256 relu → fc 1 (→ loss)] inside device_guard."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        x = fluid.layers.data(name="x", shape=[WIDTH])
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=distributed,
                                     param_attr=fluid.ParamAttr(name="emb"))
        pooled = fluid.layers.sequence_pool(emb, pool_type="sum")
        h = fluid.layers.concat([pooled, x], axis=1)
        with fluid.device_guard(device):
            h = fluid.layers.fc(h, 256, act="relu")
            pred = fluid.layers.fc(h, 1)
            if loss_inside:
                loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        if not loss_inside:
            loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        opt = fluid.optimizer.Adam(0.01) if optimizer == "adam" else fluid.optimizer.SGD(0.05)
        opt.minimize(loss)
    return main, startup, loss


def feeds(steps, batch, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        lengths = rng.integers(1, 4, size=batch)
        ids = rng.integers(0, VOCAB, size=(int(lengths.sum()), 1)).astype("int64")
        x = rng.normal(size=(batch, WIDTH)).astype("float32")
        y = (0.1 * x[:, :4].sum(1, keepdims=True) + 0.01 * (ids.sum() % 7)).astype("float32")
        out.append({"ids": (ids, np.concatenate([[0], np.cumsum(lengths)])), "x": x, "y": y})
    return out


def part(feed, t, trainers):
    """Trainer t's examples t::trainers of a global batch (LoD kept consistent)."""
    ids, offsets = feed["ids"]
    rows = np.arange(len(offsets) - 1)[t::trainers]
    pieces = [ids[offsets[r]:offsets[r + 1]] for r in rows]
    lengths = [len(p) for p in pieces]
    return {"ids": (np.concatenate(pieces), [np.concatenate([[0], np.cumsum(lengths)])]),
            "x": feed["x"][t::trainers], "y": feed["y"][t::trainers]}


def transpile(build, t, trainers, pservers, sync):
    main, startup, loss = build()
    config = DistributeTranspilerConfig()
    config.wait_port = False
    tr = DistributeTranspiler(config)
    tr.transpile(t, program=main, startup_program=startup, pservers=",".join(EPS[:pservers]),
                 trainers=trainers, sync_mode=sync)
    return tr, tr.get_trainer_program(wait_port=False), startup, loss


def run_job(build, data, trainers, pservers, heter=0, sync=True, fetch_extra=(), wire=lambda client: client):
    """Train in one process: pservers in memory, trainers in threads, heter trainers as HeterStates.

    Every process's programs are built by transpiling (and splitting) itself, then shipped
    as bytes; the heter trainers split for each trainer they serve, as fleet/heter.py does.
    `wire` wraps every pserver client (CPU trainers' and heter sections').
    Returns (cluster, per-trainer (scope, losses, extra fetches), trainer 0's transpiler)."""
    heps = HEPS[:heter]
    progs = []
    for t in range(trainers):
        tr, main, startup, loss = transpile(build, t, trainers, pservers, sync)
        if heter:
            split_heter_program(main, startup, tr.plan, heps)
        progs.append((load(dump(main)), load(dump(startup)), loss.name, tr))
    cluster = InMemoryCluster.from_transpiler(progs[0][3], options=PserverOptions(30.0))
    states = {}
    for h, hep in enumerate(heps):
        sections = {}
        for t in served_trainers(h, heter, trainers):
            tr, main, startup, _ = transpile(build, t, trainers, pservers, sync)
            exe = Executor()
            exe.services["rpc"] = wire(cluster.client(t))  # pushes and pulls as trainer t
            sections[t] = HeterSection(split_heter_program(main, startup, tr.plan, heps), exe)
        states[hep] = HeterState(hep, sections)
        states[hep].start()

    def body(t, exe):
        main, startup, loss, _ = progs[t]
        exe.services["rpc"] = wire(exe.services["rpc"])
        if heter:
            client = exe.services["heter"] = InMemoryHeterClient(states, t)
            exe.add_close_hook(client.complete)  # runs before the pserver complete (newest first)
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        losses, extra = [], []
        for feed in data:
            got = exe.run(main, feed=part(feed, t, trainers), fetch_list=[loss, *fetch_extra], scope=scope)
            losses.append(float(got[0][0]))
            extra.append(got[1:])
        return scope, losses, extra
    results = cluster.run_trainers(body, trainers)
    return cluster, results, progs[0][3], states


PARAMS = ("emb", "fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0")


def plain(**kwargs):
    return lambda: mlp_net(device=None, **kwargs)


def heter(**kwargs):
    return lambda: mlp_net(device="gpu", **kwargs)


def assert_same_training(plain_run, heter_run, names=PARAMS):
    (c0, r0, t0, _), (c1, r1, t1, _) = plain_run, heter_run
    for (_, want, _), (_, got, _) in zip(r0, r1):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for name in names:
        np.testing.assert_allclose(c1.gather(t1.vars_overview, name), c0.gather(t0.vars_overview, name),
                                   rtol=1e-6, atol=1e-7, err_msg=name)


def test_sync_heter_training_equals_the_plain_job_with_a_parameter_sliced_over_two_pservers():
    data = feeds(4, 16)
    base = run_job(plain(), data, trainers=2, pservers=2)
    got = run_job(heter(), data, trainers=2, pservers=2, heter=1)
    assert len(got[2].vars_overview.get_distributed_vars_by_origin("fc_0.w_0")) == 2
    assert_same_training(base, got)
    scope = got[1][0][0]
    assert "emb" in scope.vars and not any(p in scope.vars for p in PARAMS[1:]), \
        "the CPU trainer holds only its own parameters"
    status = got[3][HEPS[0]].on_status()
    assert status["stages_run"] == 2 * 2 * 4 and status["completed"] == [0, 1] and status["state"] == "STOPPING"


def test_two_heter_trainers_each_serve_every_other_cpu_trainer():
    data = feeds(3, 16)
    base = run_job(plain(), data, trainers=2, pservers=1)
    got = run_job(heter(), data, trainers=2, pservers=1, heter=2)
    assert_same_training(base, got)
    assert [sorted(s.sections) for s in got[3].values()] == [[0], [1]]


def test_the_distributed_table_stays_with_the_cpu_trainers_and_training_matches():
    data = feeds(3, 12)
    base = run_job(plain(distributed=True, optimizer="sgd"), data, trainers=2, pservers=3)
    got = run_job(heter(distributed=True, optimizer="sgd"), data, trainers=2, pservers=3, heter=1)
    assert_same_training(base, got, names=PARAMS[1:])
    for ep in EPS:
        # Each pserver's shard is a hash-keyed SparseTable: compare its rows by id.
        a = got[0].handler(ep).scope.vars["emb"].export()
        b = base[0].handler(ep).scope.vars["emb"].export()
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_allclose(a.values, b.values, rtol=1e-6, atol=1e-7)


def test_a_loss_built_inside_the_section_is_computed_by_the_heter_trainer_and_fetched():
    data = feeds(3, 8)
    base = run_job(plain(loss_inside=True), data, trainers=1, pservers=1)
    got = run_job(heter(loss_inside=True), data, trainers=1, pservers=1, heter=1)
    assert_same_training(base, got)  # the fetched losses too
    cpu_ops = [op.type for op in got[2].origin_program.global_block().ops]
    assert "mean" not in cpu_ops and "mean_grad" not in cpu_ops
    forward = got[3][HEPS[0]].sections[0].split.stages[0]
    assert "mean" in forward.op_types and any(n.startswith("mean") for n in forward.outputs)


def test_async_heter_training_of_one_trainer_equals_the_plain_async_job():
    # One trainer and no communicator: every push is applied before the next pull,
    # so asynchronous training is deterministic and the two jobs must agree.
    data = feeds(4, 8)
    base = run_job(plain(), data, trainers=1, pservers=2, sync=False)
    got = run_job(heter(), data, trainers=1, pservers=2, heter=1, sync=False)
    assert_same_training(base, got)


class LatePushes:
    """The wire of gRPC, where a push may land after `push` returned: here a push reaches
    the pserver only when its handle is waited for (every other verb is the in-memory one)."""

    def __init__(self, client):
        self.client, self.trainer_id = client, client.trainer_id

    def push(self, endpoint, values, **kwargs):
        client = self.client

        class Late:
            def wait(self):
                return client.push(endpoint, values, **kwargs).wait()
        return Late()

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_backward_stage_lands_its_pushes_before_the_cpu_trainer_closes_the_round():
    data = feeds(3, 16)
    base = run_job(plain(), data, trainers=2, pservers=1, wire=LatePushes)
    got = run_job(heter(), data, trainers=2, pservers=1, heter=1, wire=LatePushes)
    assert_same_training(base, got)
