"""A pserver whose state is "on the device", with numpy as the device's array module.

Real: the transpiler, trainer and pserver programs, Executors, PserverState,
psjob.cluster.pserver.pserver.place_on_device (scope migration, block routing, staging of
every request) and the device-resident SparseTable code path — all with
xp=numpy, which is exactly the code a GPU pserver runs with xp=cupy (the GPU
twin of this test is tests/cuda/test_pserver_device_gpu.py). Faked: only the
wire (InMemoryClient). Training with placement must equal training without,
bit for bit: the routing may change where values live, never what is computed.
"""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.pserver import DevicePlacement, OnDevice, ServeOptions, place_on_device, serve_options
from psjob.cluster.pserver.pserver_state import PserverOptions
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.fluid.transpiler import deserialize_dist_program as load
from psjob.fluid.transpiler import serialize_dist_program as dump
from psjob.foundation.settings import Settings
from psjob.foundation.tables import SparseTable, TableConfig

EPS = ["127.0.0.1:6270", "127.0.0.1:6271"]
VOCAB, DIM = 512, 8


def net(opt):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        x = fluid.layers.data(name="x", shape=[16])
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=True,
                                     param_attr=fluid.ParamAttr(name="emb"))
        h = fluid.layers.fc(fluid.layers.concat([emb, x], axis=1), 32, act="tanh")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        {"sgd": lambda: fluid.optimizer.SGD(0.1), "adam": lambda: fluid.optimizer.Adam(0.01),
         "adagrad": lambda: fluid.optimizer.Adagrad(0.1)}[opt]().minimize(loss)
    return main, startup, loss


def feeds(steps=4, n=16):
    rng = np.random.default_rng(1)
    return [{"ids": rng.integers(0, VOCAB, (n, 1)).astype("int64"),
             "x": rng.standard_normal((n, 16)).astype("float32"),
             "y": rng.standard_normal((n, 1)).astype("float32")} for _ in range(steps)]


def train(opt, trainers, sync, on_device):
    plans = []
    for t in range(trainers):
        main, startup, loss = net(opt)
        tr = DistributeTranspiler()
        tr.transpile(t, program=main, startup_program=startup, pservers=",".join(EPS), trainers=trainers,
                     sync_mode=sync)
        plans.append((load(dump(tr.get_trainer_program(wait_port=False))), load(dump(startup)), loss.name, tr))
    cluster = InMemoryCluster({ep: tuple(load(dump(p)) for p in plans[0][3].get_pserver_programs(ep))
                               for ep in EPS}, options=PserverOptions(30.0))
    placements = {}
    if on_device:
        for ep, state in cluster.states.items():
            placements[ep] = place_on_device(state, "gpu:0", xp=np, device_exe=fluid.Executor(fluid.CPUPlace()))
    data = feeds()

    def body(t, exe):
        main, startup, loss, _ = plans[t]
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        for feed in data:
            per = len(feed["ids"]) // trainers
            exe.run(main, feed={k: v[t * per:(t + 1) * per] for k, v in feed.items()}, fetch_list=[loss],
                    scope=scope)
        return scope
    scopes = cluster.run_trainers(body, trainers)
    return cluster, scopes, placements


def dense_params(scope):
    return {n: np.array(v) for n, v in scope.vars.items() if n.startswith("fc_") and isinstance(v, np.ndarray)}


@pytest.mark.parametrize("opt,trainers,sync", [("adam", 2, True), ("sgd", 1, True), ("adagrad", 2, False)])
def test_training_with_device_placement_equals_training_without(opt, trainers, sync):
    ref_cluster, ref_scopes, _ = train(opt, trainers, sync, on_device=False)
    cluster, scopes, placements = train(opt, trainers, sync, on_device=True)
    if sync:  # async interleavings differ run to run; sync rounds are deterministic
        want, got = dense_params(ref_scopes[0]), dense_params(scopes[0])
        assert want and want.keys() == got.keys()
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    ids = np.arange(VOCAB, dtype=np.int64)
    for ep in EPS:
        table, ref = cluster.handler(ep).scope.vars["emb"], ref_cluster.handler(ep).scope.vars["emb"]
        assert table.array_module is np and table._device is not None   # the device code path ran
        if sync:
            a, b = table.export(), ref.export()
            np.testing.assert_array_equal(a.ids, b.ids)
            np.testing.assert_array_equal(a.values, b.values)
            for k in b.state:
                np.testing.assert_array_equal(a.state[k], b.state[k], err_msg=k)
        else:
            assert len(table) > 0 and table.lookup(ids, create=False).any()
        p = placements[ep]
        assert p.staging.uploads > 0 and p.staging.downloads > 0


def test_table_blocks_run_on_the_host_and_their_gradients_stay_there():
    cluster, _, placements = train("adam", 2, True, on_device=True)
    for ep, p in placements.items():
        state = cluster.handler(ep)
        table_blocks = {i for i in range(len(state.program.blocks))
                        if any(op.type in ("sparse_table_push", "lookup_sparse_table", "sparse_table_save")
                               for op in state.program.block(i).ops)}
        assert table_blocks and p.host_blocks == table_blocks
        # the table's gradient slots (one per trainer, summed on the host) never go to the device
        slots = [n for n in state.recv_names if n.startswith("emb@GRAD")]
        assert slots and all(n in p.host_names for n in slots)
        dense = [n for n in state.recv_names if n.startswith("fc_")]
        assert dense and not any(n in p.host_names for n in dense)
        assert p.executor_for(min(table_blocks)) is p.host_exe
        assert p.executor_for(state.optimize_blocks[0]) is p.device_exe or state.optimize_blocks[0] in table_blocks


def test_one_staged_upload_per_push_request_and_one_download_per_pull():
    cluster, _, placements = train("sgd", 1, False, on_device=True)   # async: applied at once
    ep = EPS[0]
    state, p = cluster.handler(ep), placements[ep]
    dense = [n for n in state.recv_names if n.startswith("fc_")]
    assert len(dense) > 1
    before_up, before_down = p.staging.uploads, p.staging.downloads
    state.on_send(0, {n: np.ones(state._gb.var(n).shape, np.float32) for n in dense})
    assert p.staging.uploads == before_up + 1      # every gradient of the request in one copy
    params = [n for n in state.scope.vars if n.startswith("fc_") and "@GRAD" not in n
              and n in state._gb.vars and state._gb.var(n).persistable]
    out, _ = state.on_get(0, params)
    assert p.staging.downloads == before_down + 1
    for n in params:
        assert isinstance(out[n], np.ndarray) and not np.shares_memory(out[n], state.scope.vars[n])
        np.testing.assert_array_equal(out[n], state.scope.vars[n])
    rows = state.on_prefetch(0, "emb", np.array([1, 2, 3], np.int64))
    assert rows.shape == (3, DIM) and rows.any()


def test_on_device_wraps_only_the_request_methods():
    class Counting:
        def __init__(self):
            self.entered = 0

        def device(self):
            outer = self

            class Ctx:
                def __enter__(self):
                    outer.entered += 1

                def __exit__(self, *exc):
                    return False
            return Ctx()

    class State:
        endpoint = "e"

        def on_status(self):
            return {"ok": 1}

    staging = Counting()
    handler = OnDevice(State(), staging)
    assert handler.on_status() == {"ok": 1} and staging.entered == 1
    assert handler.endpoint == "e" and staging.entered == 1


def test_the_device_option_flows_from_the_environment_and_bad_values_fail_at_start():
    assert ServeOptions().device == "cpu"
    assert serve_options(Settings({})).device == "cpu"
    assert serve_options(Settings({"PSJOB_DEVICE": "gpu"})).device == "gpu"
    assert serve_options(Settings({"PSJOB_DEVICE": "cpu", "PSJOB_PSERVER_DEVICE": "gpu:1"})).device == "gpu:1"
    with pytest.raises(ValueError, match="PSJOB_PSERVER_DEVICE: pserver device must be cpu, gpu or gpu:N"):
        serve_options(Settings({"PSJOB_PSERVER_DEVICE": "cuda"}))


def test_a_device_table_equals_the_host_table_row_for_row_after_the_same_pushes():
    from psjob.cluster.pserver.device_staging import DeviceStaging
    from psjob.foundation.tables import OPTIMIZERS, InitializerConfig, OptimizerConfig
    rng = np.random.default_rng(4)
    hypers = {"momentum": {"mu": 0.9}, "rmsprop": {"centered": True}}
    for name in OPTIMIZERS:
        hyper = hypers.get(name, {})
        cfg = TableConfig("t", dim=8, seed=2, initializer=InitializerConfig("uniform", low=-0.1, high=0.1),
                          optimizer=OptimizerConfig(name, lr=0.05, hyper=hyper), initial_capacity=16)
        host, staged = SparseTable(cfg), SparseTable(cfg)
        host.lookup(np.arange(10))
        staged.lookup(np.arange(10))
        staged.to_device(np, transfer=DeviceStaging(np))   # after rows exist: they move too
        for step in range(5):
            ids = rng.integers(-40, 40, 200)
            np.testing.assert_array_equal(staged.lookup(ids), host.lookup(ids))
            g = rng.standard_normal((200, 8)).astype(np.float32)
            host.push(ids, g, lr=np.array([0.02], np.float32))
            staged.push(ids, g, lr=np.array([0.02], np.float32))
        a, b = staged.export(), host.export()
        np.testing.assert_array_equal(a.values, b.values)
        for k in b.state:
            np.testing.assert_array_equal(a.state[k], b.state[k], err_msg=f"{name} {k}")
        back = SparseTable(cfg).to_device(np)
        back.import_rows(a)
        np.testing.assert_array_equal(back.export().values, b.values)
        with pytest.raises(RuntimeError, match="already device-resident"):
            staged.to_device(np)


def test_placement_routing_is_computed_from_the_program_alone():
    main, startup, _ = net("sgd")
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS), trainers=1)
    prog, _ = tr.get_pserver_programs(EPS[0])
    from psjob.cluster.pserver.device_staging import DeviceStaging
    p = DevicePlacement(prog, fluid.Executor(fluid.CPUPlace()), DeviceStaging(np))
    assert p.xp_for("emb") is np
    lr_names = [n for n in prog.global_block().vars if "learning_rate" in n]
    assert lr_names and not any(n in p.host_names for n in lr_names)  # read by both: device


def test_spec_pserver_device_gpu_gives_pserver_pods_a_gpu_and_psjob_device():
    """The job spec → operator → pod → serve_options chain for `spec.pserver.device: gpu`."""
    from psjob.foundation.jobspec import parse_job
    from psjob_operator import builders
    spec = parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                      "metadata": {"name": "ctr", "namespace": "ml"},
                      "spec": {"image": "psjob-worker:cuda", "pserver": {"replicas": 2, "device": "gpu"},
                               "worker": {"replicas": 1}}})
    kids = builders.build_children(spec, builders.Owner("ctr", "uid"), "t")
    sts = next(c for c in kids if c["kind"] == "StatefulSet" and c["metadata"]["name"].endswith("pserver"))
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container["image"] == "psjob-worker:cuda"
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PSJOB_DEVICE"] == "gpu"
    assert Settings(env).serve.device == "gpu"   # what serve_options reads in the pod
    workers = next(c for c in kids if c["kind"] == "Job")["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in workers.get("resources", {}).get("limits", {})
