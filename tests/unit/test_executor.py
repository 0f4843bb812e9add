"""The Executor: feeding, fetching, scopes, and the errors users hit first."""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.executor import ExecutionError, FeedError
from psjob.fluid.framework import GraphError


def _net():
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        y = fluid.layers.fc(x, 2)
        loss = fluid.layers.mean(y)
    return main, startup, x, ids, y, loss


def _ready():
    main, startup, x, ids, y, loss = _net()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, scope, main, y, loss


def test_a_run_returns_numpy_copies_of_the_fetched_values():
    exe, scope, main, y, loss = _ready()
    out, l = exe.run(main, feed={"x": np.ones((3, 4), np.float32)}, fetch_list=[y, loss.name], scope=scope)
    assert out.shape == (3, 2) and l.shape == (1,)
    w = np.array(scope.find_var("fc_0.w_0").get_tensor())
    np.testing.assert_allclose(out, np.ones((3, 4)) @ w, rtol=1e-6)


def test_tensors_set_through_the_scope_are_used_by_the_next_run():
    exe, scope, main, y, _ = _ready()
    scope.find_var("fc_0.w_0").get_tensor().set(np.zeros((4, 2), np.float32), fluid.CPUPlace())
    out, = exe.run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[y], scope=scope)
    np.testing.assert_array_equal(out, np.zeros((2, 2)))


@pytest.mark.parametrize("value, message", [
    (np.ones((3, 5), np.float32), r"dimension 1 must be 4"),
    (np.ones((3, 4, 1), np.float32), r"expected 2-D data shaped \[-1, 4\]"),
    (np.array([["a"] * 4]), r"expected float32"),
])
def test_feeding_a_wrong_shape_or_dtype_names_the_input(value, message):
    exe, scope, main, y, _ = _ready()
    with pytest.raises(FeedError, match=f"feed 'x': {message}"):
        exe.run(main, feed={"x": value}, fetch_list=[y], scope=scope)


def test_a_checked_feed_is_still_checked_after_the_variable_changes_and_still_copied():
    # The executor remembers which (dtype, shape) a variable accepted; what it accepted
    # before must not let a value through once the declared shape changes.
    exe, scope, main, y, _ = _ready()
    x = np.ones((3, 4), np.float32)
    for _ in range(2):  # the second run takes the remembered path
        exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)
        assert not np.shares_memory(np.asarray(scope.find_var("x").get_tensor()), x)
    exe.run(main, feed={"x": x.astype(np.float64)}, fetch_list=[y], scope=scope)  # converted, as before
    assert np.asarray(scope.find_var("x").get_tensor()).dtype == np.float32
    main.global_block().var("x").shape = (-1, 5)
    with pytest.raises(FeedError, match=r"feed 'x': dimension 1 must be 5"):
        exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)


def test_a_refilled_lod_array_is_read_anew_and_a_bad_one_still_refused():
    # Checked LoD layouts are remembered by content: refilling the fed offsets array in
    # place must give the next run the new offsets, and bad offsets are refused every time.
    exe, scope, main, y, _ = _ready()
    x, ids = np.ones((2, 4), np.float32), np.arange(3, dtype=np.int64).reshape(3, 1)
    offsets = np.array([0, 2, 3], np.int64)
    for want in ([0, 2, 3], [0, 1, 3]):
        offsets[:] = want
        exe.run(main, feed={"x": x, "ids": (ids, [offsets])}, fetch_list=[y], scope=scope)
        assert scope.lods["ids"][0].tolist() == want
    offsets[:] = [0, 3, 1]
    for _ in range(2):
        with pytest.raises(FeedError, match="never decrease"):
            exe.run(main, feed={"x": x, "ids": (ids, [offsets])}, fetch_list=[y], scope=scope)


def test_feeding_floats_into_an_integer_input_is_refused():
    exe, scope, main, y, _ = _ready()
    with pytest.raises(FeedError, match="float values for an integer input"):
        exe.run(main, feed={"x": np.ones((1, 4), np.float32), "ids": (np.ones((2, 1)), [[0, 2]])},
                fetch_list=[y], scope=scope)


def test_lod_offsets_that_do_not_cover_the_rows_are_refused():
    exe, scope, main, y, _ = _ready()
    with pytest.raises(FeedError, match="must start at 0, never decrease and end at the number of rows"):
        exe.run(main, feed={"x": np.ones((1, 4), np.float32),
                            "ids": (np.ones((3, 1), np.int64), [[0, 2, 1]])}, fetch_list=[y], scope=scope)


def test_feeding_or_fetching_an_unknown_variable_names_it():
    exe, scope, main, y, _ = _ready()
    with pytest.raises(FeedError, match="feed target 'nope' is not a variable"):
        exe.run(main, feed={"nope": np.ones(1)}, fetch_list=[y], scope=scope)
    with pytest.raises(GraphError, match="fetch target 'ghost' is not a variable"):
        exe.run(main, feed={"x": np.ones((1, 4), np.float32)}, fetch_list=["ghost"], scope=scope)


def test_running_the_main_program_before_the_startup_program_says_so():
    main, startup, *_ , y, loss = _net()
    with pytest.raises(GraphError, match="did you run the startup program"):
        fluid.Executor().run(main, feed={"x": np.ones((1, 4), np.float32)}, fetch_list=[y],
                             scope=fluid.Scope())


def test_a_missing_feed_and_a_cycle_are_distinguished():
    exe, scope, main, y, _ = _ready()
    with pytest.raises(GraphError, match="reads 'x' .* feed it"):
        exe.run(main, feed={}, fetch_list=[y], scope=scope)
    prog = fluid.Program()
    block = prog.global_block()
    a = block.create_var(name="a", shape=[1], dtype="float32")
    b = block.create_var(name="b", shape=[1], dtype="float32")
    block.append_op(type="scale", inputs={"X": [a]}, outputs={"Out": [b]}, attrs={"scale": 2.0})
    block.append_op(type="scale", inputs={"X": [b]}, outputs={"Out": [a]}, attrs={"scale": 2.0})
    with pytest.raises(GraphError, match="only written later by op #1 'scale': the program has a cycle"):
        fluid.Executor().run(prog, fetch_list=[b], scope=fluid.Scope())


def test_a_failing_kernel_is_reported_with_the_op_and_its_input_shapes():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(ids, size=[10, 3])
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(ExecutionError, match=r"op #0 'lookup_table' failed: .*"):
        exe.run(main, feed={"ids": (np.array([[3], [99]], np.int64), [[0, 2]])}, fetch_list=[emb],
                scope=scope)


def test_the_wrong_executor_argument_types_are_clear_type_errors():
    with pytest.raises(TypeError, match="Executor needs a place"):
        fluid.Executor("cpu")
    with pytest.raises(TypeError, match="needs a fluid Program or CompiledProgram"):
        fluid.Executor().run("not a program")


def test_cuda_place_without_a_gpu_is_a_clear_error():
    from psjob.fluid.core import PlaceError
    with pytest.raises(PlaceError, match="needs cupy and an NVIDIA GPU|not usable here|GPU"):
        fluid.Executor(fluid.CUDAPlace(0)).run(fluid.Program())


def test_a_closed_executor_refuses_to_run_and_runs_its_close_hooks_once():
    exe, calls = fluid.Executor(), []
    exe.add_close_hook(lambda: calls.append(1))
    exe.close()
    exe.close()
    assert calls == [1]
    with pytest.raises(RuntimeError, match="after close"):
        exe.run(fluid.Program())


def test_compiled_and_parallel_executors_run_the_same_program():
    exe, scope, main, y, loss = _ready()
    feed = {"x": np.ones((2, 4), np.float32)}
    plain, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    compiled, = exe.run(fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name), feed=feed,
                        fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(plain, compiled)


def test_a_step_observer_sees_every_successful_run_of_its_program_and_nothing_else():
    from psjob.fluid.executor import observe_steps
    exe, scope, main, y, loss = _ready()
    seen = []
    remove = observe_steps(main, lambda *a: seen.append(a))
    feed = {"x": np.ones((3, 4), np.float32)}
    out, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert len(seen) == 1
    executor, program, fed, sc, seconds = seen[0]
    assert executor is exe and program is main and fed is feed and sc is scope and seconds > 0
    # The run's outputs are in the scope when the observer is called: it needs no fetch of its own.
    np.testing.assert_array_equal(sc.vars[loss.name], out)
    exe.run(fluid.CompiledProgram(main), feed=feed, scope=scope)  # the same program, wrapped
    fluid.Executor().run(main, feed=feed, scope=scope)              # any executor
    assert len(seen) == 3
    exe.run(main.clone(for_test=True), feed=feed, fetch_list=[y], scope=scope)  # a clone: not observed
    with pytest.raises(FeedError):
        exe.run(main, feed={"x": np.ones((3, 5), np.float32)}, scope=scope)  # failed: not a step
    assert len(seen) == 3
    remove()
    exe.run(main, feed=feed, scope=scope)
    assert len(seen) == 3


def test_timed_runs_report_a_failing_op_as_untimed_runs_do():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(ids, size=[10, 3])
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.collect_timing = True
    with pytest.raises(ExecutionError, match=r"op #0 'lookup_table' failed: .*"):
        exe.run(main, feed={"ids": (np.array([[3], [99]], np.int64), [[0, 2]])}, fetch_list=[emb],
                scope=scope)
    assert exe.kernel_seconds["lookup_table"] == 0.0  # the failed op counted no time


def test_timed_runs_read_the_clock_once_per_op_and_count_each_op_its_interval():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        h = fluid.layers.fc(fluid.layers.fc(x, size=3), size=2)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    readings = []
    exe.timing_clock = lambda: readings.append(None) or float(len(readings))  # 1.0, 2.0, ...
    exe.collect_timing = True
    exe.run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[h], scope=scope)
    types = [op.type for op in main.global_block().ops]
    assert len(readings) == len(types) + 1
    assert dict(exe.kernel_seconds) == {t: float(types.count(t)) for t in set(types)}
