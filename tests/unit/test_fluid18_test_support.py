"""The Fluid 1.x APIs Paddle 1.8's own distributed test programs needed (tests/component/
test_paddle18_dist_programs.py): paddle.dataset.common's download cache, paddle.compat,
fluid.profiler, an importable fluid.dygraph that refuses use, Program.parse_from_string, and
fluid.log_helper.get_logger (dist_ctr_reader.py's logger), paddle.dataset.mnist (dist_mnist.py's data). Expected values follow Paddle 1.8.5's
python/paddle/dataset/common.py, compat.py, log_helper.py and dataset/mnist.py."""
import hashlib
import os

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob import compat
from psjob.dataset import common
from psjob.fluid import profiler


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_download_returns_the_cached_file_whose_md5_matches(data_home):
    cached = data_home / "simnet" / "train"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"0;1 1;1;2;3;\n")
    md5 = hashlib.md5(b"0;1 1;1;2;3;\n").hexdigest()
    # the URL is never fetched (it could not be): the cached file matches
    got = common.download("http://unreachable.invalid/simnet.train.1000", "simnet", md5, "train")
    assert got == str(cached)


def test_download_fetches_into_the_cache(data_home, tmp_path):
    source = tmp_path / "avazu_ctr_data.tgz"
    source.write_bytes(b"payload")
    got = common.download(source.as_uri(), "avazu_ctr_data", hashlib.md5(b"payload").hexdigest())
    assert got == os.path.join(str(data_home), "avazu_ctr_data", "avazu_ctr_data.tgz")
    assert open(got, "rb").read() == b"payload"
    assert common.md5file(got) == hashlib.md5(b"payload").hexdigest()


def test_download_gives_up_after_three_tries(data_home, tmp_path):
    source = tmp_path / "f.txt"
    source.write_bytes(b"not what the md5 says")
    with pytest.raises(RuntimeError, match=r"Cannot download .*f\.txt within retry limit 3"):
        common.download(source.as_uri(), "m", "0" * 32)


def test_compat_matches_paddle():
    assert compat.to_text(b"abc") == "abc" and compat.to_bytes("abc") == b"abc"
    assert compat.to_text([b"a", "b", None]) == ["a", "b", None]
    assert compat.to_text({b"k": b"v"}) == {"k": "v"}
    items = [b"x"]
    assert compat.to_text(items, inplace=True) is items and items == ["x"]
    assert compat.to_bytes({"a"}) == {b"a"}
    # halves away from zero (Paddle's rule), not Python 3's banker's rounding
    assert (compat.round(2.5), compat.round(-2.5), compat.round(0.5), compat.round(1.25, 1)) == (3.0, -3.0, 1.0, 1.3)
    assert compat.floor_division(7, 2) == 3 and compat.get_exception_message(ValueError("m")) == "m"


def test_profiler_checks_its_arguments_as_paddle(capsys):
    with pytest.raises(ValueError, match="The state must be 'CPU' or 'GPU' or 'All'"):
        profiler.start_profiler("TPU")
    with pytest.raises(ValueError, match="tracer option must be"):
        profiler.start_profiler("CPU", tracer_option="Everything")
    with pytest.raises(ValueError, match="The sorted_key must be None or in"):
        profiler.stop_profiler("fastest")
    with profiler.profiler("CPU", sorted_key="total", profile_path="/nonexistent/profile"):
        pass
    assert "between start and stop" in capsys.readouterr().err
    with pytest.raises(RuntimeError, match="cuda_profiler"):
        profiler.cuda_profiler("out.txt")


def test_dygraph_imports_and_refuses_use():
    from psjob.fluid.dygraph import DygraphNotSupported, base, parallel
    assert base.enabled() is False
    with pytest.raises(DygraphNotSupported, match="paddle.fluid.dygraph.to_variable is not supported"):
        base.to_variable(np.ones(2))
    with pytest.raises(DygraphNotSupported, match="DataParallel"):
        parallel.DataParallel(None, None)


def test_parse_from_string_reads_a_saved_inference_model(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        y = fluid.layers.fc(input=x, size=2, param_attr=fluid.ParamAttr(
            initializer=fluid.initializer.Constant(0.5)), bias_attr=False)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    fluid.io.save_inference_model(str(tmp_path), ["x"], [y], exe, main)
    with open(tmp_path / "__model__", "rb") as f:
        program = fluid.Program.parse_from_string(f.read())
    assert [op.type for op in program.global_block().ops] == [op.type for op in main._prune([y]).global_block().ops]
    feed = np.arange(6, dtype=np.float32).reshape(2, 3)
    out, = exe.run(program, feed={"x": feed}, fetch_list=[y.name])
    np.testing.assert_allclose(out, feed @ np.full((3, 2), 0.5, np.float32))  # numpy by hand
    with pytest.raises(fluid.framework.ProgramFormatError, match="parse_from_string"):
        fluid.Program.parse_from_string(b"\x08\x01protobuf")


def test_fleet1_save_inference_model_on_a_non_chief_trainer(tmp_path):
    """Fluid 1.x's transpiler fleet lets every trainer call save_inference_model (Paddle 1.8's
    dist_fleet_ctr.py does, on both): trainers but 0 write the model file and the variables
    they hold; the pservers' parameters (here all of them) are trainer 0's to pull. No pserver
    is contacted, so none runs here."""
    import psjob.fluid.incubate.fleet.base.role_maker as role_maker
    from psjob.fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet
    from psjob.fluid.incubate.fleet.parameter_server.distribute_transpiler.distributed_strategy import (
        StrategyFactory,
    )
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fleet.init(role_maker.UserDefinedRoleMaker(current_id=1, role=role_maker.Role.WORKER, worker_num=2,
                                                   server_endpoints=["127.0.0.1:1", "127.0.0.1:2"]))
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(input=x, size=2))
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), StrategyFactory.create_sync_strategy()).minimize(loss)
    fleet.save_inference_model(fluid.Executor(fluid.CPUPlace()), str(tmp_path), ["x"], loss)
    with open(tmp_path / "__model__", "rb") as f:
        program = fluid.Program.parse_from_string(f.read())
    assert [op.type for op in program.global_block().ops] == ["mul", "elementwise_add", "mean"]
    params = [v.name for v in program.global_block().all_parameters()]
    assert params and not any((tmp_path / name).exists() for name in params)


def test_log_helper_get_logger_as_fluid_18_builds_it(capsys):
    """Paddle 1.8.5's get_logger: that name and level, one stderr handler formatted by fmt,
    no propagation to the root logger (checked against Paddle 1.8.5)."""
    import logging

    from psjob.fluid.log_helper import get_logger

    logger = get_logger("psjob-test-log-helper", logging.INFO, fmt="%(levelname)s|%(message)s")
    assert logger is logging.getLogger("psjob-test-log-helper")
    assert logger.level == logging.INFO and logger.propagate is False
    assert len(logger.handlers) == 1 and isinstance(logger.handlers[0], logging.StreamHandler)
    logger.info("dnn input dim: %d", 1000)
    logger.debug("not shown")
    assert capsys.readouterr().err == "INFO|dnn input dim: 1000\n"
    plain = get_logger("psjob-test-log-helper-plain", logging.WARNING)
    assert plain.level == logging.WARNING and plain.handlers[0].formatter is None


def _idx_files(tmp_path, n=200):
    import gzip
    import struct

    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, (n, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, n).astype(np.uint8)
    image_file, label_file = tmp_path / "images.gz", tmp_path / "labels.gz"
    image_file.write_bytes(gzip.compress(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes()))
    label_file.write_bytes(gzip.compress(struct.pack(">II", 2049, n) + labels.tobytes()))
    return str(image_file), str(label_file), images, labels


def test_mnist_reader_yields_pixels_in_minus_one_to_one_and_int_labels(tmp_path):
    """The same IDX pair through Paddle 1.8.5's paddle.dataset.mnist.reader_creator gave
    200 samples, labels starting 8, 6, 5, 2, 0 and first pixels (float32, as Python floats)
    0.3490196466445923, -0.6313725709915161, -0.08235293626785278, every image equal to
    psjob's bit for bit."""
    from psjob.dataset import mnist

    image_file, label_file, images, labels = _idx_files(tmp_path)
    samples = list(mnist.reader_creator(image_file, label_file, 100)())
    assert len(samples) == 200
    assert [label for _, label in samples[:5]] == [8, 6, 5, 2, 0]
    assert all(type(label) is int for _, label in samples)
    first = samples[0][0]
    assert first.dtype == np.float32 and first.shape == (784,)
    assert [float(x) for x in first[:3]] == [0.3490196466445923, -0.6313725709915161, -0.08235293626785278]
    got = np.stack([image for image, _ in samples])
    np.testing.assert_array_equal(got, images.reshape(200, 784).astype(np.float32) / 255.0 * 2.0 - 1.0)
    assert [label for _, label in samples] == labels.tolist()


def test_mnist_train_test_and_fetch_go_through_the_download_cache(tmp_path, monkeypatch):
    from psjob.dataset import mnist

    image_file, label_file, _, _ = _idx_files(tmp_path)
    calls = []

    def download(url, module, md5, save_name=None):
        calls.append((url.rsplit("/", 1)[1], module, md5))
        return image_file if "images" in url else label_file

    monkeypatch.setattr(common, "download", download)
    assert len(list(mnist.train()())) == 200 and len(list(mnist.test()())) == 200
    assert calls == [("train-images-idx3-ubyte.gz", "mnist", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                     ("train-labels-idx1-ubyte.gz", "mnist", "d53e105ee54ea40749a09fcbcd1e9432"),
                     ("t10k-images-idx3-ubyte.gz", "mnist", "9fb629c4189551a2d022fa330f9573f3"),
                     ("t10k-labels-idx1-ubyte.gz", "mnist", "ec29112dd5afa0611ce80d1b7f02629c")]
    calls.clear()
    mnist.fetch()
    assert [c[0] for c in calls] == ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                     "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
