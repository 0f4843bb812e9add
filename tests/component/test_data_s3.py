"""Training data at s3:// URIs: the CTR readers and InMemoryDataset read objects through the
checkpoint store's S3 client (psjob.dataset.sources, via the DATA_STORAGE hook), against moto's
S3 server as a process (s3server.py), and get exactly what they get from the same local files."""
import importlib.util
import os
import sys

import numpy as np
import pytest

from psjob.dataset import ctr
from psjob.foundation.checkpoint import storage

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


s3server = _load(os.path.join(HERE, "s3server.py"))


READER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "paddle2", "reader.py")


def _ctr_use_var():
    """The example reader's slots as static data vars: label, C1..C26, dense_input."""
    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        use_var = [paddle.static.data(name="label", shape=[None, 1], dtype="int64")]
        use_var += [paddle.static.data(name=f"C{i}", shape=[None, 1], lod_level=1, dtype="int64")
                    for i in range(1, 27)]
        use_var.append(paddle.static.data(name="dense_input", shape=[None, 13], dtype="float32"))
    return use_var


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = s3server.S3Server(tmp_path_factory.mktemp("moto") / "moto.log")
    yield srv
    srv.stop()


@pytest.fixture
def data(server, monkeypatch, tmp_path):
    """(local directory, the same part-* files under s3://BUCKET/ctr) with AWS_* pointing at moto."""
    server.use(monkeypatch)
    ctr.generate(tmp_path / "ctr", 600, num_files=3, seed=1)
    uri = f"s3://{server.new_bucket()}/ctr"
    store = storage.for_path(uri)
    for name in sorted(os.listdir(tmp_path / "ctr")):
        store.write_bytes(f"{uri}/{name}", (tmp_path / "ctr" / name).read_bytes())
    return tmp_path / "ctr", uri


def test_ctr_batches_read_an_s3_prefix_as_they_read_the_local_directory(data):
    local, uri = data
    names = [os.path.basename(p) for p in ctr.list_files(local)]
    assert ctr.list_files(uri) == [f"{uri}/{name}" for name in names]
    want, got = list(ctr.batches(local, 128)), list(ctr.batches(uri, 128))
    assert len(got) == len(want) == 5
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.dense, b.dense)
        np.testing.assert_array_equal(a.label, b.label)
        for s in range(ctr.NUM_SLOTS):
            np.testing.assert_array_equal(a.ids[s], b.ids[s])
            np.testing.assert_array_equal(a.lod[s], b.lod[s])
    with pytest.raises(FileNotFoundError, match="part-99999"):
        ctr.list_files(f"{uri}/part-99999")


def test_in_memory_dataset_pipes_s3_objects_through_its_command(data):
    """The example's reader (a MultiSlotDataGenerator pipe_command) over s3:// files."""
    from psjob.distributed import InMemoryDataset
    local, uri = data
    use_var = _ctr_use_var()

    def feeds(files):
        ds = InMemoryDataset()
        ds.init(batch_size=200, thread_num=1, use_var=use_var, pipe_command=f"{sys.executable} {READER}")
        ds.set_filelist(files)
        ds.load_into_memory()
        assert ds.get_memory_data_size() == 600
        return [feed for stream in ds._thread_feeds(1) for feed in stream]

    want = feeds(ctr.list_files(local))
    got = feeds(ctr.list_files(uri))
    assert len(got) == len(want) == 3
    for a, b in zip(got, want):
        assert sorted(a) == sorted(b)
        for name in a:
            va, vb = a[name], b[name]
            if isinstance(va, tuple):
                np.testing.assert_array_equal(va[0], vb[0])
                assert [list(x) for x in va[1]] == [list(x) for x in vb[1]]
            else:
                np.testing.assert_array_equal(va, vb)
    with pytest.raises(FileNotFoundError, match="part-7"):
        InMemoryDataset().set_filelist([f"{uri}/part-7"])


def test_a_pipe_command_that_stops_reading_an_s3_object_early_gets_what_it_read(data):
    # The object's body is streamed into the command (never held whole); `head` closing its
    # input early is the command's business, not an error.
    from psjob.distributed import InMemoryDataset
    from psjob.distributed.dataset import MultiSlotError
    local, uri = data
    use_var = _ctr_use_var()
    ds = InMemoryDataset()
    ds.init(batch_size=50, thread_num=2, use_var=use_var,
            pipe_command=f"head -n 7 | {sys.executable} {READER}")
    ds.set_filelist(ctr.list_files(uri))
    ds.load_into_memory()
    assert ds.get_memory_data_size() == 3 * 7
    # A command that fails is reported with its status, as for local files.
    ds.init(batch_size=50, thread_num=1, use_var=use_var, pipe_command="head -c 100 >/dev/null; exit 3")
    with pytest.raises(MultiSlotError, match="exited 3"):
        ds.load_into_memory()
