"""Distributed saves and loads over real pserver programs, with the in-memory transport.

Trainer 0's save pulls the pservers' slices and reassembles them; pservers load
their slices back by offset and the table by feature id, for any number of
pservers. The wire is InMemoryClient (psjob.cluster.inmemory); the
component tests repeat the important cases over gRPC between processes.
"""
import os
import threading
import time

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster import checkpoint_protocol as protocol
from psjob.cluster.inmemory import InMemoryClient, InMemoryCluster
from psjob.cluster.pserver.checkpoint_restore import load_pserver_slices, restore_newest
from psjob.cluster.pserver.pserver_state import PserverState
from psjob.cluster.trainer import checkpoint_save as distributed
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import CORRUPT_MARKER, CheckpointError, read_array, read_manifest, read_var
from psjob.foundation.checkpoint.tables import assemble
from psjob.foundation.tables import shard_of

EPS = ["127.0.0.1:6170", "127.0.0.1:6171", "127.0.0.1:6172"]
VOCAB, DIM, TRAINERS = 1000, 8, 2


def net(distributed=True):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        x = fluid.layers.data(name="x", shape=[13])
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=distributed,
                                     param_attr=fluid.ParamAttr(name="emb",
                                                                initializer=fluid.initializer.Uniform(-0.5, 0.5)))
        h = fluid.layers.fc(fluid.layers.concat([emb, x], axis=1), 1024, act="tanh")  # sliced: 21*1024 > 8192
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        fluid.optimizer.Adam(fluid.layers.exponential_decay(0.01, 2, 0.9)).minimize(loss)
    return main, startup, loss


def feed(step, tid):
    rng = np.random.default_rng(step)
    ids = rng.integers(0, VOCAB, size=(16, 1)).astype("int64")
    x = rng.normal(size=(16, 13)).astype("float32")
    return {"ids": ids[tid::TRAINERS], "x": x[tid::TRAINERS], "y": 0.5 * x[tid::TRAINERS, :1]}


class Job:
    """A sync job of TRAINERS trainers and `n` in-memory pservers."""

    def __init__(self, n, load_dir=None):
        self.programs = []
        for t in range(TRAINERS):
            main, startup, loss = net()
            tr = DistributeTranspiler()
            tr.transpile(t, program=main, startup_program=startup, pservers=",".join(EPS[:n]), trainers=TRAINERS)
            self.programs.append((tr, loss))
        tr0 = self.programs[0][0]
        self.pserver_programs = {ep: tr0.get_pserver_programs(ep) for ep in EPS[:n]}
        self.cluster = InMemoryCluster(self.pserver_programs)
        if load_dir:  # seed 004: pservers load_persistables(exe, path, pserver_startup)
            for ep, state in self.cluster.states.items():
                with fluid.scope_guard(state.scope):
                    fluid.io.load_persistables(state.exe, load_dir, self.pserver_programs[ep][1])

    def train(self, start, steps, save_dir=None):
        def body(t, exe):
            tr, loss = self.programs[t]
            scope = fluid.Scope()
            exe.run(tr.get_trainer_startup_program(), scope=scope)
            prog = tr.get_trainer_program(wait_port=False)
            for s in range(start, start + steps):
                exe.run(prog, feed=feed(s, t), fetch_list=[loss], scope=scope)
            if t == 0 and save_dir:
                fluid.io._save_distributed_persistables(exe, save_dir, prog, scope=scope)
        self.cluster.run_trainers(body, TRAINERS)
        return self


def saved(path):
    doc = read_manifest(path)
    out = {n: read_var(path, n, e) for n, e in doc["vars"].items()}
    for table, tdoc in doc.get("tables", {}).items():
        out[table] = assemble(path, table, tdoc)
    return out


def live_table(*tables):
    """The rows the pservers' SparseTables hold, as a dense [VOCAB, DIM] array (absent ids: 0)."""
    out = np.zeros((VOCAB, DIM), dtype="float32")
    for table in tables:
        rows = table.export()
        out[rows.ids] = rows.values
    return out


def test_trainer_0_saves_every_slice_accumulator_counter_and_table_shard_whole(tmp_path):
    job = Job(2).train(0, 3, str(tmp_path))
    doc = read_manifest(str(tmp_path))
    names = set(doc["vars"])
    assert {"fc_0.w_0", "fc_0.w_0_moment1_0", "fc_0.w_0_moment2_0", "fc_0.w_0_beta1_pow_acc_0",
            "@LR_DECAY_COUNTER@"} <= names
    assert "emb" not in names and doc["tables"]["emb"]["num_shards"] == 2
    # fc_0.w_0 is sliced across both pservers; the save holds it whole, in order
    overview = job.programs[0][0].vars_overview
    pieces = [dv for dv in overview.get_distributed_vars_by_origin("fc_0.w_0") if dv.vtype == "Param"]
    assert len({dv.endpoint for dv in pieces}) == 2
    values = saved(str(tmp_path))
    np.testing.assert_array_equal(values["fc_0.w_0"], job.cluster.gather(overview, "fc_0.w_0"))
    for dv in overview.get_distributed_vars_by_origin("fc_0.w_0_moment1_0"):  # param-shaped: sliced alike
        block = job.cluster.handler(dv.endpoint).scope.vars[dv.slice.name]
        np.testing.assert_array_equal(values["fc_0.w_0_moment1_0"].reshape(-1)[dv.offset:dv.offset + block.size],
                                      block.reshape(-1))
    # the pservers' counter (advanced once per round), not the trainer's copy, which nothing advances
    counter = job.cluster.handler(EPS[0]).scope.vars["@LR_DECAY_COUNTER@"]
    np.testing.assert_array_equal(values["@LR_DECAY_COUNTER@"], counter)
    assert int(counter[0]) >= 2
    np.testing.assert_array_equal(values["emb"], live_table(*(job.cluster.handler(ep).scope.vars["emb"]
                                                              for ep in EPS[:2])))
    for entry in doc["tables"]["emb"]["shards"]:  # each shard holds its pserver's ids, ascending
        ids = read_array(os.path.join(str(tmp_path), entry["files"]["ids"]["file"]), entry["files"]["ids"])
        assert (shard_of(ids, 2) == entry["index"]).all() and (np.diff(ids) > 0).all()
    assert store.verify(str(tmp_path)) == []


@pytest.mark.parametrize("pservers", [3, 1])
def test_a_save_of_two_pservers_loads_into_another_number_and_saves_back_identically(tmp_path, pservers):
    Job(2).train(0, 3, str(tmp_path / "a"))
    Job(pservers, load_dir=str(tmp_path / "a")).train(3, 0, str(tmp_path / "b"))
    a, b = saved(str(tmp_path / "a")), saved(str(tmp_path / "b"))
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_training_continued_from_a_save_on_three_pservers_equals_uninterrupted_training(tmp_path):
    Job(2).train(0, 3, str(tmp_path / "half"))
    Job(3, load_dir=str(tmp_path / "half")).train(3, 3, str(tmp_path / "continued"))
    Job(2).train(0, 6, str(tmp_path / "straight"))
    a, b = saved(str(tmp_path / "continued")), saved(str(tmp_path / "straight"))
    for name in b:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


class SteppedClock:
    """The freeze leases' clock, moved by the test: a lease runs out when the test says so."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _async_state(clock=time.monotonic):
    main, startup, _ = net()
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=EPS[0], trainers=1, sync_mode=False)
    pserver_main, pserver_startup = tr.get_pserver_programs(EPS[0])
    state = PserverState(pserver_main, scope=fluid.Scope(), executor=fluid.Executor(), clock=clock)
    state.run_startup(pserver_startup)
    return state


def _wait_held(state, pushes):
    """Wait until `pushes` pushes are waiting out the freeze."""
    lock = state.exclusive()
    with lock:
        assert lock.wait_for(lambda: state.updates_held == pushes, timeout=30)


def test_a_frozen_pserver_holds_updates_until_thawed_or_until_its_lease_runs_out():
    clock = SteppedClock()
    state = _async_state(clock)
    grad = np.ones((1024,), "float32")
    before = np.array(state.scope.vars["fc_0.b_0"], copy=True)
    state.on_checkpoint("", 1, protocol.tag(protocol.FREEZE, lease=30))
    pusher = threading.Thread(target=state.on_send, args=(0, {"fc_0.b_0@GRAD": grad}))
    pusher.start()
    _wait_held(state, 1)
    assert pusher.is_alive()
    np.testing.assert_array_equal(state.scope.vars["fc_0.b_0"], before)  # nothing applied while frozen
    reply = protocol.decode_reply(EPS[0], state.on_checkpoint("", 1, protocol.tag(protocol.THAW)))
    pusher.join(5)
    assert not pusher.is_alive() and reply["expired"] is False
    assert not np.array_equal(state.scope.vars["fc_0.b_0"], before)
    state.on_checkpoint("", 2, protocol.tag(protocol.FREEZE, lease=0.2))
    pusher = threading.Thread(target=state.on_send, args=(0, {"fc_0.b_0@GRAD": grad}))
    pusher.start()
    _wait_held(state, 1)
    clock.now += 0.2  # the lease runs out: the held push goes on by itself
    pusher.join(30)
    assert not pusher.is_alive() and state.updates_held == 0
    reply = protocol.decode_reply(EPS[0], state.on_checkpoint("", 2, protocol.tag(protocol.THAW)))
    assert reply["expired"] is True



def test_a_stopping_pserver_fails_the_updates_a_freeze_holds_at_once():
    """SIGTERM mid-checkpoint (a job past its deadline): close() fails the pushes held by the
    freeze instead of leaving their threads to wait out its lease, which kept the process from
    exiting until the launcher's SIGKILL."""
    from psjob.cluster.pserver.pserver_state import PserverStopping
    state = _async_state(SteppedClock())   # the lease never runs out by itself here
    before = np.array(state.scope.vars["fc_0.b_0"], copy=True)
    state.on_checkpoint("", 1, protocol.tag(protocol.FREEZE, lease=30))
    failures = []

    def push():
        try:
            state.on_send(0, {"fc_0.b_0@GRAD": np.ones((1024,), "float32")})
        except Exception as exc:  # what the RPC guard maps to UNAVAILABLE
            failures.append(exc)
    pusher = threading.Thread(target=push, daemon=True)
    pusher.start()
    _wait_held(state, 1)
    state.close()
    pusher.join(10)
    assert not pusher.is_alive() and state.updates_held == 0
    assert len(failures) == 1 and isinstance(failures[0], PserverStopping), failures
    assert "checkpoint freeze" in str(failures[0])
    np.testing.assert_array_equal(state.scope.vars["fc_0.b_0"], before)  # nothing applied

def test_the_freeze_api_holds_one_named_freeze_that_renews_and_thaws_only_by_its_id():
    state = _async_state()
    version = state.freeze("save-1", 30.0)
    assert state.frozen and version == state.version
    assert state.renew("save-1", 30.0) and not state.renew("other", 30.0)
    assert state.thaw("other") == (True, False) and state.frozen  # another save's thaw leaves it be
    state.freeze("save-2", 30.0)  # a newer freeze replaces the older one
    assert not state.renew("save-1", 30.0)
    assert state.thaw("save-2") == (False, False) and not state.frozen
    state.freeze("save-3", 30.0)
    assert state.thaw() == (False, True) and not state.frozen  # an id-less thaw releases what is held
    assert state.thaw() == (False, False)


class RestartingClient(InMemoryClient):
    """The wire to a pserver that crashes and comes back (a new PserverState) mid-checkpoint."""

    def __init__(self, cluster, trainer_id, victim, programs):
        super().__init__(cluster, trainer_id)
        self.victim, self.programs = victim, programs

    def checkpoint_notify(self, dirname, step=0, tag="", endpoints=None):
        if tag.startswith(protocol.SAVE):
            main, startup = self.programs[self.victim]
            fresh = PserverState(main, scope=fluid.Scope(), executor=fluid.Executor())
            fresh.run_startup(startup)
            self.cluster.states[self.victim] = fresh
        return super().checkpoint_notify(dirname, step, tag, endpoints)


def test_a_save_during_which_a_pserver_restarts_is_abandoned_without_a_manifest(tmp_path):
    job = Job(2).train(0, 1)
    tr, _ = job.programs[0]
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.services["rpc"] = RestartingClient(job.cluster, 0, EPS[1], job.pserver_programs)
    exe.run(tr.get_trainer_startup_program(), scope=scope)
    prog = tr.get_trainer_program(wait_port=False)
    with pytest.raises(distributed.CheckpointAbandoned, match=f"pserver\\(s\\) {EPS[1]} restarted during it"):
        fluid.io._save_distributed_persistables(exe, str(tmp_path), prog, scope=scope)
    assert store.inspect_dir(str(tmp_path)).status == store.INCOMPLETE
    # the other pserver was thawed: it accepts updates again at once
    assert not job.cluster.handler(EPS[0]).frozen


def test_a_pserver_restores_the_newest_good_checkpoint_and_falls_back_past_a_corrupt_one(tmp_path, capsys):
    root = tmp_path / "ckpt"
    job = Job(2).train(0, 2, str(root / store.step_dirname(2)))
    Job(2, load_dir=str(root / store.step_dirname(2))).train(2, 2, str(root / store.step_dirname(4)))
    shard = root / store.step_dirname(4) / "__tables__" / "emb.shard-1-of-2.values"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0x55  # same size: only the checksum can tell
    shard.write_bytes(bytes(data))
    main, startup = job.pserver_programs[EPS[1]]
    state = PserverState(main, scope=fluid.Scope(), executor=fluid.Executor())
    state.run_startup(startup)
    info = state.restore_from_checkpoints(str(root))
    out = capsys.readouterr().out
    assert info.step == 2 and state.restored_step == 2
    assert f"checkpoint {root / store.step_dirname(4)} is unusable" in out and "checksum mismatch" in out
    assert "falling back to the previous good checkpoint" in out and "restored step 2" in out
    assert (root / store.step_dirname(4) / CORRUPT_MARKER).exists()  # later readers skip it too
    want = saved(str(root / store.step_dirname(2)))["emb"]
    mine = shard_of(np.arange(VOCAB), 2) == 1
    np.testing.assert_array_equal(live_table(state.scope.vars["emb"])[mine], want[mine])
    # pserver 0 reads only its own shard, yet skips the marked checkpoint as well
    main0, startup0 = job.pserver_programs[EPS[0]]
    other = PserverState(main0, scope=fluid.Scope(), executor=fluid.Executor())
    other.run_startup(startup0)
    assert other.restore_from_checkpoints(str(root)).step == 2


def test_pservers_agree_on_the_step_when_only_one_shard_of_the_newest_checkpoint_is_corrupt(tmp_path, capsys):
    # pserver 0 restores first: its own shard of step 4 is intact, pserver 1's is not. Loading
    # step 4 there while pserver 1 falls back to step 2 would mix two steps in one model.
    root = tmp_path / "ckpt"
    job = Job(2).train(0, 2, str(root / store.step_dirname(2)))
    Job(2, load_dir=str(root / store.step_dirname(2))).train(2, 2, str(root / store.step_dirname(4)))
    shard = root / store.step_dirname(4) / "__tables__" / "emb.shard-1-of-2.values"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0x55
    shard.write_bytes(bytes(data))
    steps = []
    for ep in EPS[:2]:
        main, startup = job.pserver_programs[ep]
        state = PserverState(main, scope=fluid.Scope(), executor=fluid.Executor())
        state.run_startup(startup)
        steps.append(state.restore_from_checkpoints(str(root)).step)
    assert steps == [2, 2]
    assert "emb shard 1 values" in capsys.readouterr().out
    assert (root / store.step_dirname(4) / CORRUPT_MARKER).exists()


def test_a_dense_table_saved_by_single_machine_training_loads_into_the_pservers_as_ids_0_to_h(tmp_path):
    main, startup, loss = net(distributed=False)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed(0, 0), fetch_list=[loss], scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path), main)
    dense = np.array(scope.vars["emb"])
    job = Job(3, load_dir=str(tmp_path))
    owner = shard_of(np.arange(VOCAB), 3)
    for k, ep in enumerate(EPS[:3]):
        rows = job.cluster.handler(ep).scope.vars["emb"].export()
        np.testing.assert_array_equal(rows.ids, np.nonzero(owner == k)[0])
        np.testing.assert_array_equal(rows.values, dense[owner == k])
    np.testing.assert_array_equal(job.cluster.gather(job.programs[0][0].vars_overview, "fc_0.w_0"),
                                  scope.vars["fc_0.w_0"])


def test_loading_a_save_of_another_model_raises_and_keeps_the_startup_values(tmp_path):
    Job(2).train(0, 1, str(tmp_path))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[7])
        loss = fluid.layers.mean(fluid.layers.fc(fluid.layers.fc(x, 4096), 1))  # fc_0.w_0 is [7, 4096]
        fluid.optimizer.SGD(0.1).minimize(loss)
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:2]), trainers=1)
    pmain, pstartup = tr.get_pserver_programs(EPS[0])
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(pstartup, scope=scope)
    before = {n: np.array(v, copy=True) for n, v in scope.vars.items() if isinstance(v, np.ndarray)}
    with pytest.raises(CheckpointError, match=r"fc_0\.[wb]_0.* shape .*program declares"):
        load_pserver_slices(exe, str(tmp_path), pmain, scope=scope)
    for name, value in before.items():
        np.testing.assert_array_equal(scope.vars[name], value)
    assert restore_newest(exe, str(tmp_path / "empty"), pmain, scope=scope) is None


def test_a_distributed_program_is_refused_the_wrong_executor_or_a_missing_endpoint(tmp_path):
    main, startup, loss = net()
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:2]), trainers=1)
    with pytest.raises(TypeError, match="ParallelExecutor is not allowed"):
        fluid.io.save_persistables(fluid.ParallelExecutor(main_program=main), str(tmp_path), main)
    with pytest.raises(ValueError, match="need current_endpoint set in DistributeTranspiler.transpile"):
        fluid.io.load_persistables(fluid.Executor(), str(tmp_path), tr.get_trainer_program(wait_port=False))
    assert os.listdir(tmp_path) == []


def test_fleet_saves_refuse_a_parallel_executor_a_non_executor_and_a_compiled_program(tmp_path):
    from psjob.fleet import Fleet
    main, _, loss = net()
    fleet = Fleet()
    with pytest.raises(TypeError, match="ParallelExecutor is not allowed"):
        fleet.save_persistables(fluid.ParallelExecutor(main_program=main), str(tmp_path))
    with pytest.raises(TypeError, match=r"executor must be as Executor type$"):
        fleet.save_inference_model("exe", str(tmp_path), ["x"], [loss])
    with pytest.raises(TypeError, match="CompiledProgram is not allowed"):
        fleet.save_persistables(fluid.Executor(), str(tmp_path), fluid.CompiledProgram(main))
    assert os.listdir(tmp_path) == []
