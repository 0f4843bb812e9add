"""Fluid 1.6+ names PaddlePaddle/models' Fluid 1.x examples use: fluid.data, fluid.embedding,
the py_reader / PyReader / DataLoader.from_generator readers with EOFException, require_version,
BuildStrategy/ExecutionStrategy and ParallelExecutor's collective num_trainers,
fluid.layers.square (and its unary siblings), DatasetFactory. Shapes and messages are
Paddle 1.8.5's where it has them."""
import threading

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.fluid.executor import ExecutionError, FeedError
from psjob.fluid.framework import GraphError

RNG = np.random.default_rng(23)


@pytest.fixture
def programs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        yield main, startup


def _exe(startup):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, scope


# -- fluid.data -----------------------------------------------------------------------------

def test_fluid_data_keeps_the_shape_given_with_none_for_the_batch(programs):
    a = fluid.data("a", [None, 1], "int64", lod_level=1)
    d = fluid.data("d", [4, None, 2])
    c = fluid.data("c", (None,), "int64")
    assert (list(a.shape), list(d.shape), list(c.shape)) == ([-1, 1], [4, -1, 2], [-1])
    assert a.lod_level == 1 and a.stop_gradient and a.is_data and a.dtype == "int64"
    assert list(fluid.layers.data("l", [13]).shape) == [-1, 13]  # the old layer still prepends
    assert fluid.data("a", [-1, 1], "int64") is a
    with pytest.raises(ValueError, match=r"declared before with shape \[-1, 1\], now \[-1, 2\]"):
        fluid.data("a", [None, 2], "int64")
    with pytest.raises(ValueError, match="None / -1"):
        fluid.data("bad", [None, -3])
    with pytest.raises(TypeError, match="'shape' must be a list"):
        fluid.data("bad", 3)


def test_a_fed_value_must_match_fluid_datas_rank_and_fixed_dimensions(programs):
    main, startup = programs
    x = fluid.data("x", [None, 3])
    out = fluid.layers.reduce_sum(x)
    exe, scope = _exe(startup)
    got, = exe.run(main, feed={"x": np.ones((5, 3), "float32")}, fetch_list=[out], scope=scope)
    assert got.item() == 15.0
    with pytest.raises(FeedError, match=r"dimension 1 must be 3"):
        exe.run(main, feed={"x": np.ones((5, 4), "float32")}, fetch_list=[out], scope=scope)
    with pytest.raises(FeedError, match=r"expected 2-D"):
        exe.run(main, feed={"x": np.ones((5, 3, 1), "float32")}, fetch_list=[out], scope=scope)
    # Fewer dimensions than declared pass when they match the leading ones, as in Paddle 1.8.5
    # (its feed check compares only the fed dimensions); the array keeps its own shape.
    got, = exe.run(main, feed={"x": np.ones((3,), "float32")}, fetch_list=[out], scope=scope)
    assert got.item() == 3.0


# -- fluid.embedding ------------------------------------------------------------------------

def test_fluid_embedding_appends_the_embedding_dimension_without_squeezing(programs):
    a = fluid.data("a", [None, 1], "int64", lod_level=1)
    b = fluid.data("b", [None, 3], "int64")
    c = fluid.data("c", [None], "int64")
    shapes = [list(fluid.embedding(ids, size=[10, 4]).shape) for ids in (a, b, c)]
    assert shapes == [[-1, 1, 4], [-1, 3, 4], [-1, 4]]  # Paddle 1.8.5's lookup_table_v2 shapes
    assert list(fluid.layers.embedding(a, size=[10, 4]).shape) == [-1, 4]  # the 1.x layer squeezes
    with pytest.raises(TypeError, match="int64"):
        fluid.embedding(fluid.data("f", [None, 1]), size=[10, 4])


def test_fluid_embedding_reads_rows_keeps_the_lod_and_zeroes_padding(programs):
    main, startup = programs
    ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
    table = RNG.normal(size=(6, 3)).astype("float32")
    emb = fluid.embedding(ids, size=[6, 3], padding_idx=-1, param_attr=fluid.ParamAttr(
        name="T", initializer=fluid.initializer.NumpyArrayInitializer(table)))
    pooled = fluid.layers.sequence_pool(fluid.layers.squeeze(emb, axes=[1]), "sum")
    exe, scope = _exe(startup)
    feed = fluid.create_lod_tensor(np.array([[0], [2], [5], [1]], "int64"), [[3, 1]], fluid.CPUPlace())
    rows, sums = exe.run(main, feed={"ids": feed}, fetch_list=[emb, pooled], scope=scope)
    expected = table[[0, 2, 5, 1]]
    expected[2] = 0.0  # padding_idx -1 is row 5
    np.testing.assert_allclose(rows[:, 0, :], expected, rtol=1e-6)
    np.testing.assert_allclose(sums, [expected[:3].sum(0), expected[3]], rtol=1e-5)


def test_a_sparse_fluid_embedding_has_a_selected_rows_gradient_and_sgd_moves_only_those_rows(programs):
    main, startup = programs
    ids = fluid.data("ids", [None, 2], "int64")
    table = RNG.normal(size=(8, 2)).astype("float32")
    emb = fluid.embedding(ids, size=[8, 2], is_sparse=True, param_attr=fluid.ParamAttr(
        name="T", initializer=fluid.initializer.NumpyArrayInitializer(table)))
    loss = fluid.layers.reduce_sum(emb)
    fluid.optimizer.SGD(0.5).minimize(loss)
    lookup = next(op for op in main.global_block().ops if op.type == "lookup_table")
    assert lookup.attr("is_sparse") and lookup.attr("remote_prefetch")  # Fluid 1.8's attributes
    exe, scope = _exe(startup)
    grad, = exe.run(main, feed={"ids": np.array([[1, 3], [3, 6]], "int64")}, fetch_list=["T@GRAD"],
                    scope=scope)
    assert isinstance(grad, fluid.SelectedRows)
    assert sorted(np.asarray(grad.rows).tolist()) == [1, 3, 3, 6]
    after = np.array(scope.find_var("T").get_tensor())
    moved = table.copy()
    moved[[1, 6]] -= 0.5
    moved[3] -= 1.0  # looked up twice
    np.testing.assert_allclose(after, moved, rtol=1e-6)


# -- py_reader: create_py_reader_by_data + read_file, non-iterable ---------------------------

def _reader_net(capacity=2):
    dense = fluid.data("dense", [None, 2])
    ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
    reader = fluid.layers.create_py_reader_by_data(capacity=capacity, feed_list=[dense, ids], name="pr")
    got_dense, got_ids = fluid.layers.read_file(reader)
    total = fluid.layers.reduce_sum(got_dense)
    return reader, got_dense, got_ids, total


def _samples(n):
    def reader():
        for i in range(n):
            yield [float(i), 1.0], list(range(i % 3 + 1))
    return reader


def test_a_py_reader_pass_runs_until_eof_exception_and_reset_starts_the_next(programs):
    main, startup = programs
    reader, got_dense, got_ids, total = _reader_net()
    assert (list(got_dense.shape), got_ids.lod_level) == ([-1, 2], 1)
    reader.decorate_paddle_reader(paddle.batch(_samples(7), batch_size=3))
    exe, scope = _exe(startup)
    passes = []
    for _ in range(2):
        reader.start()
        sums, lods = [], []
        try:
            while True:
                s, i = exe.run(main, fetch_list=[total, got_ids], scope=scope, return_numpy=False)
                sums.append(np.array(s).item())
                lods.append(i.lod())
        except fluid.core.EOFException:
            with pytest.raises(fluid.core.EOFException):  # drained: every later run says so too
                exe.run(main, fetch_list=[total], scope=scope)
            reader.reset()
        passes.append((sums, lods))
    # batches of 3, 3, 1 samples: dense sums 0+1+2 + 3, 3+4+5 + 3, 6 + 1; ids 1, 2, 3 long
    assert passes[0] == passes[1] == ([6.0, 15.0, 7.0], [[[0, 1, 3, 6]], [[0, 1, 3, 6]], [[0, 1]]])


def test_a_py_reader_refuses_a_read_before_start_and_a_second_start(programs):
    main, startup = programs
    reader, _, _, total = _reader_net()
    reader.decorate_paddle_reader(paddle.batch(_samples(4), batch_size=2))
    exe, scope = _exe(startup)
    with pytest.raises(ExecutionError, match=r"read before start\(\)"):  # Paddle waits for ever
        exe.run(main, fetch_list=[total], scope=scope)
    reader.start()
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        reader.start()
    reader.reset()  # mid-pass: the producer stops, the queue empties
    reader.start()
    assert exe.run(main, fetch_list=[total], scope=scope)[0].item() == 3.0  # the first batch again
    reader.reset()


def test_a_data_source_that_raises_stops_the_run_with_its_error(programs):
    main, startup = programs
    reader, _, _, total = _reader_net()

    def broken():
        yield [([1.0, 2.0], [0])]
        raise OSError("disk gone")
    reader.decorate_paddle_reader(broken)
    exe, scope = _exe(startup)
    reader.start()
    assert exe.run(main, fetch_list=[total], scope=scope)[0].item() == 3.0
    with pytest.raises(ExecutionError, match="raised OSError: disk gone"):
        exe.run(main, fetch_list=[total], scope=scope)
    reader.reset()


def test_a_bad_batch_is_named_as_a_bad_feed(programs):
    main, startup = programs
    reader, _, _, total = _reader_net()
    reader.decorate_tensor_provider(lambda: iter([[np.ones((2, 3), "float32"),
                                                   np.zeros((2, 1), "int64")]]))
    exe, scope = _exe(startup)
    reader.start()
    with pytest.raises(ExecutionError, match=r"dimension 1 must be 2"):
        exe.run(main, fetch_list=[total], scope=scope)
    reader.reset()


def test_the_queue_holds_at_most_capacity_batches(programs):
    main, startup = programs
    reader, _, _, total = _reader_net(capacity=2)
    produced, first_two_queued = [], threading.Event()

    def batches():
        for i in range(6):
            produced.append(i)
            if i == 2:
                first_two_queued.set()  # batch 2 is made only when 0 and 1 were queued
            yield [np.full((1, 2), i, "float32"), np.zeros((1, 1), "int64")]
    reader.decorate_tensor_provider(batches)
    exe, scope = _exe(startup)
    reader.start()
    assert first_two_queued.wait(10)
    assert reader.queue.capacity == 2 and len(reader.queue._items) <= 2
    got = [exe.run(main, fetch_list=[total], scope=scope)[0].item() for _ in range(6)]
    assert got == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    with pytest.raises(fluid.core.EOFException):
        exe.run(main, fetch_list=[total], scope=scope)
    reader.reset()


def test_parallel_executor_raises_eof_exception_too(programs):
    main, startup = programs
    x = fluid.data("x", [None, 1])
    loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4, iterable=False)
    y = fluid.layers.reduce_sum(fluid.layers.fc(x, 1, bias_attr=False))
    fluid.optimizer.SGD(0.1).minimize(y)
    loader.set_sample_generator(lambda: ([float(i)] for i in range(5)), batch_size=2, drop_last=True)
    exe, scope = _exe(startup)
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=y.name, main_program=main, scope=scope)
    loader.start()
    runs = 0
    with pytest.raises(fluid.core.EOFException):
        while True:
            pe.run(fetch_list=[y.name])
            runs += 1
    assert runs == 2  # 5 samples, batches of 2, the last one dropped
    loader.reset()


def test_a_non_iterable_loader_made_after_the_layers_that_read_it_is_named(programs):
    main, startup = programs
    x = fluid.data("x", [None, 1])
    y = fluid.layers.reduce_sum(x)
    loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2, iterable=False)
    loader.set_batch_generator(lambda: iter([[np.ones((1, 1), "float32")]]))
    exe, scope = _exe(startup)
    loader.start()
    with pytest.raises(GraphError, match="only written later by op #1 'read'"):
        exe.run(main, fetch_list=[y], scope=scope)
    loader.reset()


# -- fluid.io.PyReader, iterable --------------------------------------------------------------

def test_an_iterable_py_reader_yields_feeds_for_exe_run(programs):
    main, startup = programs
    x = fluid.data("x", [None, 2])
    ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
    total = fluid.layers.reduce_sum(x)
    pooled = fluid.layers.sequence_pool(fluid.layers.cast(ids, "float32"), "sum")
    reader = fluid.io.PyReader(feed_list=[x, ids], capacity=4, iterable=True)
    assert reader.iterable
    reader.decorate_sample_list_generator(paddle.batch(_samples(5), batch_size=2), fluid.cpu_places())
    exe, scope = _exe(startup)
    got = [exe.run(main, feed=feed, fetch_list=[total, pooled], scope=scope) for feed in reader()]
    assert [t.item() for t, _ in got] == [3.0, 7.0, 5.0]
    np.testing.assert_array_equal(got[1][1].ravel(), [3.0, 0.0])  # ids [0, 1, 2] and [0]
    with pytest.raises(TypeError, match="iterable=False"):
        reader.start()

    listed = fluid.io.PyReader(feed_list=[x], capacity=2, return_list=True)
    listed.decorate_sample_generator(lambda: (([float(i), 1.0],) for i in range(3)), batch_size=2,
                                     drop_last=False)
    batches = list(listed())
    assert [b[0].shape for b in batches] == [(2, 2), (1, 2)]
    assert batches[0][0].dtype == np.float32


def test_a_batch_generator_must_give_one_value_per_variable(programs):
    x, y = fluid.data("x", [None, 1]), fluid.data("y", [None, 1])
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2)
    loader.set_batch_generator(lambda: iter([[np.ones((1, 1))]]))
    with pytest.raises(ValueError, match="a batch has 1 values but feed_list names 2"):
        list(loader())
    with pytest.raises(ValueError, match="capacity"):
        fluid.io.DataLoader.from_generator(feed_list=[x], capacity=0)
    with pytest.raises(ValueError, match="set a data source first"):
        list(fluid.io.PyReader(feed_list=[x], capacity=1)())


# -- require_version -------------------------------------------------------------------------

def test_require_version_accepts_up_to_fluid_1_8_5_and_refuses_as_paddle_does():
    fluid.require_version("1.6.1")
    fluid.require_version("1.8.5")
    fluid.require_version("1.0", "1.8.5.0")
    with pytest.raises(Exception, match=r"VersionError: PaddlePaddle version 1\.9 or higher is required, "
                                        r"but 1\.8\.5 installed"):
        fluid.require_version("1.9")
    with pytest.raises(Exception, match=r"version in \[1\.5, 1\.7\] required, but 1\.8\.5 installed"):
        fluid.require_version("1.5", "1.7")
    with pytest.raises(ValueError, match="must look like '1.5.2.0'"):
        fluid.require_version("1.x")
    with pytest.raises(TypeError, match="must be a str"):
        fluid.require_version(1.6)


# -- strategies and collective refusal -------------------------------------------------------

def test_strategies_have_paddles_fields_and_enums():
    build, run = fluid.BuildStrategy(), fluid.ExecutionStrategy()
    assert build.reduce_strategy == fluid.BuildStrategy.ReduceStrategy.AllReduce
    assert build.gradient_scale_strategy == fluid.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
    assert int(fluid.BuildStrategy.ReduceStrategy.Reduce) == 1
    assert (build.num_trainers, run.num_threads, run.num_iteration_per_drop_scope) == (1, 0, 100)
    assert fluid.compiler.BuildStrategy is fluid.BuildStrategy


def test_collective_num_trainers_all_reduces_the_gradients_of_a_copy(programs):
    """num_trainers > 1 outside a PS program is NCCL2-mode training (docs/user/collective.md): a copy
    of the program scales every gradient by 1/num_trainers and all-reduces it after backward."""
    main, startup = programs
    x = fluid.data("x", [None, 2])
    loss = fluid.layers.mean(fluid.layers.fc(x, 1))
    fluid.optimizer.SGD(0.1).minimize(loss)
    before = [op.type for op in main.global_block().ops]
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main, num_trainers=2,
                                trainer_id=0)
    assert [op.type for op in main.global_block().ops] == before  # the user's program is untouched
    types = [op.type for op in pe._program.global_block().ops]
    assert types.count("c_allreduce_sum") == 2 and types.count("sgd") == 2
    assert max(i for i, t in enumerate(types) if t == "c_allreduce_sum") < types.index("sgd")
    scales = [op for op in pe._program.global_block().ops if op.type == "scale"
              and op.output("Out")[0].endswith("@GRAD") and op.attr("scale") == 0.5]
    assert len(scales) == 2  # CoeffNumDevice: the mean over trainers

    build = fluid.BuildStrategy()
    build.num_trainers = 2
    build.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.One
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=build)
    assert compiled._program is not main
    assert not [op for op in compiled._program.global_block().ops if op.attr("scale") == 0.5]
    assert sum(op.type == "c_allreduce_sum" for op in compiled._program.global_block().ops) == 2
    with pytest.raises(ValueError, match="num_trainers=3 but BuildStrategy.num_trainers=2"):
        fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main, num_trainers=3,
                               build_strategy=build)
    assert fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main)._program is main

    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170", trainers=2)
    trainer = t.get_trainer_program(wait_port=False)
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=trainer,
                                num_trainers=2, trainer_id=0)  # PS mode: trainers meet at the pservers
    assert pe._program is trainer


# -- layers.square and its siblings ----------------------------------------------------------

def test_layers_square_forward_and_gradient(programs):
    main, startup = programs
    value = RNG.normal(size=(4, 3)).astype("float32")
    w = fluid.layers.create_parameter([4, 3], "float32", attr=fluid.ParamAttr(
        name="w", initializer=fluid.initializer.NumpyArrayInitializer(value)))
    out = fluid.layers.square(w)
    assert list(out.shape) == [4, 3]
    fluid.backward.append_backward(fluid.layers.reduce_sum(out))
    exe, scope = _exe(startup)
    got, grad = exe.run(main, fetch_list=[out, "w@GRAD"], scope=scope)
    np.testing.assert_allclose(got, value ** 2, rtol=1e-6)
    np.testing.assert_allclose(grad, 2 * value, rtol=1e-6)
    assert list(fluid.layers.square(fluid.data("x", [None, 3])).shape) == [-1, 3]
    with pytest.raises(TypeError, match="float"):
        fluid.layers.square(fluid.data("i", [None, 1], "int64"))


def test_the_unary_math_layers_compute_their_functions(programs):
    main, startup = programs
    x = fluid.data("x", [None, 2])
    outs = [fluid.layers.sqrt(x), fluid.layers.abs(x), fluid.layers.exp(x), fluid.layers.log(x)]
    value = np.array([[0.25, 4.0], [1.0, 9.0]], "float32")
    exe, scope = _exe(startup)
    got = exe.run(main, feed={"x": value}, fetch_list=outs, scope=scope)
    for g, want in zip(got, [np.sqrt(value), np.abs(value), np.exp(value), np.log(value)]):
        np.testing.assert_allclose(g, want, rtol=1e-6)


# -- DatasetFactory --------------------------------------------------------------------------

def test_dataset_factory_makes_psjobs_datasets_and_they_train(programs, tmp_path):
    main, startup = programs
    from psjob.distributed import InMemoryDataset, QueueDataset
    assert isinstance(fluid.DatasetFactory().create_dataset(), QueueDataset)  # Paddle's default
    with pytest.raises(ValueError, match="'BoxPSDataset' does not exist"):
        fluid.DatasetFactory().create_dataset("BoxPSDataset")

    x = fluid.data("x", [None, 2])
    label = fluid.data("label", [None, 1])
    loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), label))
    fluid.optimizer.SGD(0.1).minimize(loss)
    path = tmp_path / "part-0"
    path.write_text("".join(f"2 {i} 1 1 {i}\n" for i in range(6)))  # MultiSlot: x (2 values), label
    dataset = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    assert isinstance(dataset, InMemoryDataset)
    dataset.set_batch_size(4)
    dataset.set_thread(1)
    dataset.set_use_var([x, label])
    dataset.set_pipe_command("cat")
    dataset.set_filelist([str(path)])
    dataset.load_into_memory()
    assert dataset.get_memory_data_size() == 6
    exe, scope = _exe(startup)
    seen = []
    remove = fluid.executor.observe_steps(main, lambda e, p, feed, s, t: seen.append(len(feed["x"])))
    exe.train_from_dataset(main, dataset, scope=scope)
    remove()
    assert seen == [4, 2]


# -- paddle.fluid.incubate: Fluid 1.x's Fleet import paths -----------------------------------

def test_fluid_incubate_paths_lead_to_psjobs_fleet_and_strategy_factory_sets_the_mode():
    import psjob.fleet
    from psjob.fleet.strategy import resolve
    from psjob.fluid.incubate.fleet.base import role_maker
    from psjob.fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet
    from psjob.fluid.incubate.fleet.parameter_server.distribute_transpiler.distributed_strategy import StrategyFactory
    assert fleet is psjob.fleet.fleet and role_maker.PaddleCloudRoleMaker is psjob.fleet.PaddleCloudRoleMaker
    assert role_maker.Role.WORKER != role_maker.Role.SERVER
    modes = [resolve(StrategyFactory.create_sync_strategy()).mode,
             resolve(StrategyFactory.create_async_strategy()).mode,
             resolve(StrategyFactory.create_half_async_strategy()).mode]
    assert modes == ["sync", "async", "half_async"]
    geo = resolve(StrategyFactory.create_geo_strategy(400))
    assert (geo.mode, geo.k_steps) == ("geo", 400)
    strategy = StrategyFactory.create_async_strategy()
    strategy.set_program_config({"slice_var_up": False})
    assert strategy.get_program_config().slice_var_up is False
    assert resolve(strategy).mode == "async"  # the mode survives a config update
    with pytest.raises(ValueError, match="doesn't have key: no_such_key"):
        strategy.set_program_config({"no_such_key": 1})
    assert isinstance(strategy.get_build_strategy(), fluid.BuildStrategy)


def test_fluid_incubate_data_generator_writes_multislot_lines(capsys, monkeypatch):
    import io
    import sys

    import psjob.fluid.incubate.data_generator as dg

    class Reader(dg.MultiSlotDataGenerator):
        def generate_sample(self, line):
            def sample():
                label, ids = line.strip().split(";")
                yield [("label", [int(label)]), ("ids", [int(i) for i in ids.split()])]
            return sample
    monkeypatch.setattr(sys, "stdin", io.StringIO("1;3 4\n0;7\n"))
    Reader().run_from_stdin()
    assert capsys.readouterr().out == "1 1 2 3 4\n1 0 1 7\n"


def test_fleet_split_files_gives_each_trainer_a_contiguous_block():
    from psjob.fleet import Fleet
    from psjob.fluid.incubate.fleet.base import role_maker
    files = [f"part-{i}" for i in range(7)]
    shares = []
    for trainer in range(3):
        fleet = Fleet()
        fleet.init(role_maker.UserDefinedRoleMaker(current_id=trainer, role=role_maker.Role.WORKER,
                                                   worker_num=3, server_endpoints=["127.0.0.1:6170"]))
        shares.append(fleet.split_files(files))
    assert shares == [files[0:3], files[3:5], files[5:7]]  # Paddle 1.8's split: the first gets the extra
    with pytest.raises(TypeError, match="list of files"):
        fleet.split_files("part-0")


# -- layers of the simnet / CTR examples -----------------------------------------------------

def test_cos_sim_of_rows_and_against_one_row(programs):
    main, startup = programs
    x, y, one = fluid.data("x", [None, 3]), fluid.data("y", [None, 3]), fluid.data("one", [1, 3])
    rows, against_one = fluid.layers.cos_sim(x, y), fluid.layers.cos_sim(X=x, Y=one)
    assert list(rows.shape) == [-1, 1] and list(against_one.shape) == [-1, 1]
    xv, yv, ov = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3)), RNG.normal(size=(1, 3))
    exe, scope = _exe(startup)
    got_rows, got_one = exe.run(main, feed={"x": xv.astype("float32"), "y": yv.astype("float32"),
                                            "one": ov.astype("float32")},
                                fetch_list=[rows, against_one], scope=scope)

    def cos(a, b):
        return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(got_rows.ravel(), cos(xv, yv), rtol=1e-5)
    np.testing.assert_allclose(got_one.ravel(), cos(xv, np.repeat(ov, 5, 0)), rtol=1e-5)
    with pytest.raises(GraphError, match="differ after the first dimension"):
        fluid.layers.cos_sim(x, fluid.data("z", [None, 4]))


def test_comparisons_softsign_clip_slice_flatten(programs):
    main, startup = programs
    x, y = fluid.data("x", [None, 2, 3]), fluid.data("y", [None, 2, 3])
    outs = [fluid.layers.less_than(x, y), fluid.layers.greater_equal(x, y), fluid.layers.equal(x, y),
            fluid.layers.softsign(x), fluid.layers.clip(x, -0.5, 0.5),
            fluid.layers.slice(x, axes=[1, 2], starts=[1, -2], ends=[2, 100]),
            fluid.layers.flatten(x, axis=1), fluid.layers.flatten(x, axis=2), fluid.layers.flatten(x, axis=0)]
    assert outs[0].dtype == "bool" and outs[0].stop_gradient
    assert [list(o.shape) for o in outs[5:]] == [[-1, 1, 2], [-1, 6], [-1, 3], [1, -1]]
    xv = RNG.normal(size=(4, 2, 3)).astype("float32")
    yv = np.where(RNG.random((4, 2, 3)) < 0.3, xv, RNG.normal(size=(4, 2, 3))).astype("float32")
    exe, scope = _exe(startup)
    got = exe.run(main, feed={"x": xv, "y": yv}, fetch_list=outs, scope=scope)
    want = [xv < yv, xv >= yv, xv == yv, xv / (1 + np.abs(xv)), np.clip(xv, -0.5, 0.5),
            xv[:, 1:2, -2:], xv.reshape(4, 6), xv.reshape(8, 3), xv.reshape(1, 24)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    with pytest.raises(TypeError, match="is float32 but y"):
        fluid.layers.less_than(x, fluid.data("i", [None, 2, 3], "int64"))
    with pytest.raises(ValueError, match="min .* exceeds max"):
        fluid.layers.clip(x, 1.0, 0.0)


def test_fill_constant_batch_size_like_takes_the_batch_or_the_number_of_sequences(programs):
    main, startup = programs
    dense, seq = fluid.data("dense", [None, 4]), fluid.data("seq", [None, 1], "int64", lod_level=1)
    a = fluid.layers.fill_constant_batch_size_like(dense, shape=[-1, 2], dtype="float32", value=0.1)
    b = fluid.layers.fill_constant_batch_size_like(seq, shape=[3, -1], dtype="int64", value=7,
                                                   input_dim_idx=0, output_dim_idx=1)
    assert (list(a.shape), list(b.shape), b.dtype, a.stop_gradient) == ([-1, 2], [3, -1], "int64", True)
    exe, scope = _exe(startup)
    ids = fluid.create_lod_tensor(np.arange(6, dtype="int64").reshape(6, 1), [[2, 1, 3]], fluid.CPUPlace())
    got_a, got_b = exe.run(main, feed={"dense": np.zeros((5, 4), "float32"), "seq": ids},
                           fetch_list=[a, b], scope=scope)
    np.testing.assert_allclose(got_a, np.full((5, 2), 0.1, "float32"))
    np.testing.assert_array_equal(got_b, np.full((3, 3), 7))  # three sequences, not six rows


def test_create_tensor_is_filled_by_a_later_op(programs):
    main, startup = programs
    t = fluid.layers.create_tensor("float32", name="holder")
    fluid.layers.assign(fluid.layers.fill_constant([2], "float32", 3.0), t)
    exe, scope = _exe(startup)
    np.testing.assert_array_equal(exe.run(main, fetch_list=[t], scope=scope)[0], [3.0, 3.0])


def test_a_py_reader_declared_by_shapes_reads_what_its_tensor_provider_gives(programs):
    main, startup = programs
    reader = fluid.layers.py_reader(capacity=2, shapes=[[-1, 2], [-1, 1]], dtypes=["float32", "int64"],
                                    lod_levels=[0, 1], name="by_shapes")
    x, ids = fluid.layers.read_file(fluid.layers.double_buffer(reader))
    assert (list(x.shape), x.dtype, ids.lod_level) == ([-1, 2], "float32", 1)
    pooled = fluid.layers.sequence_pool(fluid.layers.cast(ids, "float32"), "sum")
    seqs = fluid.create_lod_tensor(np.array([[1], [2], [3]], "int64"), [[1, 2]], fluid.CPUPlace())
    reader.decorate_tensor_provider(lambda: iter([(np.ones((2, 2), "float32"), seqs)]))
    exe, scope = _exe(startup)
    reader.start()
    got_x, got_pooled = exe.run(main, fetch_list=[x, pooled], scope=scope)
    np.testing.assert_array_equal(got_x, np.ones((2, 2)))
    np.testing.assert_array_equal(got_pooled.ravel(), [1.0, 5.0])  # the LoD came through
    with pytest.raises(fluid.core.EOFException):
        exe.run(main, fetch_list=[x], scope=scope)
    reader.reset()
