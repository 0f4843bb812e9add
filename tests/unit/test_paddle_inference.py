"""paddle.inference (psjob.inference): predictors over saved inference models give what the
Executor gives for the same program and parameters; each has its own scope; errors name the problem."""
import os
import re
import shutil
import threading

import numpy as np
import pytest

import psjob
import psjob.device
import psjob.fluid as fluid
import psjob.static as static
from psjob.fluid.executor import FeedError
from psjob.inference import (
    Config,
    DataType,
    PlaceType,
    PrecisionType,
    PredictorPool,
    create_predictor,
    get_num_bytes_of_data_type,
)
from psjob.io import DataLoader, IterableDataset

X = np.random.default_rng(1).random((4, 3)).astype("float32")
IDS = np.array([[1], [2], [3], [4]], dtype="int64")


def _build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = static.data("x", [None, 3], "float32")
        ids = static.data("ids", [None, 1], "int64")
        emb = psjob.reshape(static.nn.embedding(ids, size=[10, 2]), [-1, 2])
        y = static.nn.fc(psjob.concat([x, emb], axis=1), 1, activation="sigmoid")
    return main, startup, x, ids, y


def _save(prefix, seed):
    """A saved model with parameters from `seed`; returns the Executor's output for X, IDS."""
    main, startup, x, ids, y = _build()
    startup.random_seed = seed
    exe = static.Executor(static.CPUPlace())
    with static.scope_guard(static.Scope()):
        exe.run(startup)
        want = exe.run(main, feed={"x": X, "ids": IDS}, fetch_list=[y])[0]
        static.save_inference_model(str(prefix), [x, ids], [y], exe, program=main)
    return want


@pytest.fixture
def model(tmp_path):
    prefix = tmp_path / "m" / "model"
    return prefix, _save(prefix, seed=7)


def _predictor(prefix):
    return create_predictor(Config(f"{prefix}.pdmodel", f"{prefix}.pdiparams"))


def test_handles_give_the_executors_output(model):
    prefix, want = model
    p = _predictor(prefix)
    assert p.get_input_names() == ["x", "ids"]
    (out_name,) = p.get_output_names()
    x, ids, out = p.get_input_handle("x"), p.get_input_handle("ids"), p.get_output_handle(out_name)
    assert x.shape() == [0] and x.type() == DataType.FLOAT32 and ids.type() == DataType.INT64
    with pytest.raises(RuntimeError, match="holds no value"):
        out.copy_to_cpu()
    x.copy_from_cpu(X)
    ids.copy_from_cpu(IDS)
    assert x.shape() == [4, 3] and x.name() == "x"
    np.testing.assert_array_equal(x.copy_to_cpu(), X)
    p.run()
    assert out.shape() == [4, 1] and out.type() == DataType.FLOAT32 and str(out.type()) == "DataType.FLOAT32"
    np.testing.assert_array_equal(out.copy_to_cpu(), want)
    # the handle holds a copy: changing the caller's array after copy_from_cpu changes nothing
    fed = X.copy()
    x.copy_from_cpu(fed)
    fed[:] = 0
    p.run()
    np.testing.assert_array_equal(out.copy_to_cpu(), want)
    # another batch size: the shapes follow the inputs
    x.copy_from_cpu(X[:2])
    ids.copy_from_cpu(IDS[:2])
    p.run()
    assert out.shape() == [2, 1]
    # not bit for bit: a matrix product of 2 rows may round differently from one of 4 (BLAS blocking)
    np.testing.assert_allclose(out.copy_to_cpu(), want[:2], rtol=1e-6)


def test_run_with_a_list_returns_tensors_with_numpy(model):
    prefix, want = model
    p = _predictor(prefix)
    (got,) = p.run([X, IDS])
    assert isinstance(got.numpy(), np.ndarray) and type(got.numpy()) is np.ndarray
    np.testing.assert_array_equal(got.numpy(), want)
    # what run(list) returns is accepted by run(list) (Paddle passes its tensors back in)
    (again,) = p.run([psjob.io.eager_tensor(X), IDS])
    np.testing.assert_array_equal(again.numpy(), want)
    with pytest.raises(ValueError, match="a list of 2 arrays, one per input"):
        p.run([X])


def test_two_predictors_have_their_own_parameters_and_inputs(tmp_path):
    want_a = _save(tmp_path / "a" / "model", seed=1)
    want_b = _save(tmp_path / "b" / "model", seed=2)
    assert not np.array_equal(want_a, want_b)  # same parameter names, other values
    before = set(static.global_scope().vars)
    a, b = _predictor(tmp_path / "a" / "model"), _predictor(tmp_path / "b" / "model")
    assert set(static.global_scope().vars) == before  # loading wrote nothing into the global scope
    np.testing.assert_array_equal(a.run([X, IDS])[0].numpy(), want_a)
    np.testing.assert_array_equal(b.run([X, IDS])[0].numpy(), want_b)
    np.testing.assert_array_equal(a.run([X, IDS])[0].numpy(), want_a)
    # one predictor's inputs are not the other's
    c = _predictor(tmp_path / "a" / "model")
    with pytest.raises(ValueError, match=r"input\(s\) 'x', 'ids' not set"):
        c.run()


def test_clone_shares_parameters_not_inputs(model):
    prefix, want = model
    p = _predictor(prefix)
    p.run([X, IDS])
    q = p.clone()
    with pytest.raises(ValueError, match="not set"):
        q.run()
    np.testing.assert_array_equal(q.run([X, IDS])[0].numpy(), want)
    w = next(n for n in p._scope.vars if n.endswith(".w_0") and n.startswith("fc"))
    assert q._scope.vars[w] is p._scope.vars[w]
    p.clear_intermediate_tensor()
    assert p.try_shrink_memory() == 0
    np.testing.assert_array_equal(p.run([X, IDS])[0].numpy(), want)
    pool = PredictorPool(Config(f"{prefix}.pdmodel", f"{prefix}.pdiparams"), 2)
    np.testing.assert_array_equal(pool.retrive(1).run([X, IDS])[0].numpy(), want)
    with pytest.raises(IndexError, match="holds 2 predictors"):
        pool.retrive(2)


def test_clones_run_in_threads_at_once(model):
    """Paddle's use of clone(): one predictor a serving thread, over one copy of the parameters."""
    prefix, want = model
    first = _predictor(prefix)
    clones = [first] + [first.clone() for _ in range(3)]
    start = threading.Barrier(len(clones))
    results: dict = {}

    def serve(i, p):
        start.wait()
        rows = slice(i % 4, i % 4 + 1)
        results[i] = [p.run([X[rows], IDS[rows]])[0].numpy() for _ in range(30)]

    threads = [threading.Thread(target=serve, args=(i, p)) for i, p in enumerate(clones)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(len(clones)):
        rows = slice(i % 4, i % 4 + 1)
        alone = first.run([X[rows], IDS[rows]])[0].numpy()  # the same row run by itself, no threads
        np.testing.assert_allclose(alone, want[rows], rtol=1e-6)
        for got in results[i]:
            np.testing.assert_array_equal(got, alone)


def test_files_of_other_names_and_fluid_saves(tmp_path, model):
    prefix, want = model
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(f"{prefix}.pdmodel", other / "net.pdmodel")
    shutil.copy(f"{prefix}.pdiparams", other / "weights.pdiparams")
    p = create_predictor(Config(str(other / "net.pdmodel"), str(other / "weights.pdiparams")))
    np.testing.assert_array_equal(p.run([X, IDS])[0].numpy(), want)
    # Fluid saves: one file a parameter (Config(model_dir)) and combined (__params__)
    main, startup, x, ids, y = _build()
    exe = static.Executor(static.CPUPlace())
    with static.scope_guard(static.Scope()):
        exe.run(startup)
        fluid_want = exe.run(main, feed={"x": X, "ids": IDS}, fetch_list=[y])[0]
        fluid.io.save_inference_model(str(tmp_path / "sep"), ["x", "ids"], [y], exe, main_program=main)
        fluid.io.save_inference_model(str(tmp_path / "comb"), ["x", "ids"], [y], exe, main_program=main,
                                      params_filename="__params__")
    for config in (Config(str(tmp_path / "sep")), Config(str(tmp_path / "comb")),
                   Config(str(tmp_path / "comb" / "__model__"), str(tmp_path / "comb" / "__params__"))):
        got = create_predictor(config)
        assert got.get_input_names() == ["x", "ids"]
        np.testing.assert_array_equal(got.run([X, IDS])[0].numpy(), fluid_want)


def test_config_accessors_and_switches(model):
    prefix, _ = model
    c = Config()
    assert (c.model_dir(), c.prog_file(), c.params_file()) == ("", "", "")
    c.set_model("some/dir")
    assert c.model_dir() == "some/dir" and c.prog_file() == ""
    c.set_prog_file(f"{prefix}.pdmodel")
    c.set_params_file(f"{prefix}.pdiparams")
    assert c.prog_file().endswith("model.pdmodel") and c.params_file().endswith("model.pdiparams")
    c.disable_gpu()
    assert not c.use_gpu()
    c.set_cpu_math_library_num_threads(3)
    assert c.cpu_math_library_num_threads() == 3
    c.enable_mkldnn()
    assert c.mkldnn_enabled()
    c.switch_ir_optim(False)
    c.enable_memory_optim()
    c.switch_use_feed_fetch_ops(False)
    c.switch_specify_input_names(True)
    c.disable_glog_info()
    assert not c.ir_optim() and c.specify_input_name() and c.glog_info_disabled()
    copy = Config(c)
    assert copy.prog_file() == c.prog_file() and copy.cpu_math_library_num_threads() == 3
    assert "model.pdmodel" in c.summary() and re.search(r"\| cpu_math_thread +\| 3 +\|", c.summary())
    assert create_predictor(c).get_input_names() == ["x", "ids"]  # the program file wins over the directory
    assert PrecisionType.Half == 2 and Config.Precision.Float32 == 0 and PlaceType.CPU == 0
    assert get_num_bytes_of_data_type(DataType.INT64) == 8


def test_errors_name_the_problem(tmp_path, model):
    prefix, _ = model
    with pytest.raises(FileNotFoundError, match="nope.pdmodel does not exist"):
        create_predictor(Config(str(tmp_path / "nope.pdmodel"), f"{prefix}.pdiparams"))
    with pytest.raises(FileNotFoundError, match="has no __model__"):
        create_predictor(Config(str(prefix.parent)))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        create_predictor(Config(str(tmp_path / "nodir")))
    with pytest.raises(ValueError, match="names no model"):
        create_predictor(Config())
    with pytest.raises(TypeError, match="takes a paddle.inference.Config"):
        create_predictor(f"{prefix}.pdmodel")
    with pytest.raises(NotImplementedError, match="CPU only"):
        Config().enable_use_gpu(100, 0)
    with pytest.raises(ValueError, match="thread count"):
        Config().set_cpu_math_library_num_threads(0)
    p = _predictor(prefix)
    with pytest.raises(ValueError, match=r"no input named 'nope'; its inputs: x, ids"):
        p.get_input_handle("nope")
    with pytest.raises(ValueError, match="no output named 'x'"):
        p.get_output_handle("x")
    x = p.get_input_handle("x")
    with pytest.raises(TypeError, match="takes a numpy ndarray, got list"):
        x.copy_from_cpu([[1.0, 2.0, 3.0]])
    with pytest.raises(TypeError, match="dtype <U1 is not one of"):
        x.copy_from_cpu(np.array([["a", "b", "c"]]))
    with pytest.raises(ValueError, match="is an output of the model"):
        p.get_output_handle(p.get_output_names()[0]).copy_from_cpu(X)
    x.copy_from_cpu(X)
    with pytest.raises(ValueError, match=r"input\(s\) 'ids' not set"):
        p.run()
    p.get_input_handle("ids").copy_from_cpu(IDS.astype("float32"))
    with pytest.raises(FeedError, match="'ids': expected int64, got float32"):
        p.run()
    p.get_input_handle("ids").copy_from_cpu(IDS)
    x.copy_from_cpu(np.ones((4, 5), "float32"))
    with pytest.raises(FeedError, match="'x': dimension 1 must be 3"):
        p.run()


def test_reshape_and_lod(model):
    prefix, _ = model
    p = _predictor(prefix)
    x = p.get_input_handle("x")
    x.copy_from_cpu(X)
    x.reshape([2, 6])
    assert x.shape() == [2, 6] and x.copy_to_cpu().shape == (2, 6)
    x.reshape([5, 3])  # another size: the value is dropped until the next copy_from_cpu
    assert x.shape() == [5, 3]
    with pytest.raises(RuntimeError, match="copy_from_cpu first"):
        x.copy_to_cpu()
    x.set_lod([[0, 1, 2]])
    assert x.lod() == [[0, 1, 2]]


class _Rows(IterableDataset):
    def __iter__(self):
        return ((np.array([i], "int64"), np.full(3, i, "float32")) for i in range(7))


def test_dataloader_in_dynamic_mode_yields_tensors_with_numpy(monkeypatch):
    monkeypatch.setattr(psjob.device, "_static", False)  # Paddle's default: dynamic mode
    batches = list(DataLoader(_Rows(), batch_size=3, drop_last=True))
    assert len(batches) == 2
    ids, dense = batches[1]
    assert type(ids.numpy()) is np.ndarray and ids.numpy().tolist() == [[3], [4], [5]]
    assert dense.numpy().shape == (3, 3) and dense.numpy().dtype == np.float32
    # in static mode the fields stay plain arrays (what static_trainer feeds its executor)
    monkeypatch.setattr(psjob.device, "_static", True)
    ids, _ = next(iter(DataLoader(_Rows(), batch_size=3)))
    assert type(ids) is np.ndarray


def test_as_paddle_name_resolves():
    import psjob.inference
    assert psjob.inference is psjob.__getattr__("inference")
    assert os.path.basename(psjob.inference.__file__) == "inference.py"
