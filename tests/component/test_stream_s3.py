"""A stream of folders in an S3 bucket (moto's server as a process, s3server.py): the stream
reader lists the layout's folders, waits for a folder's done marker, and resumes from a
position inside a folder, reading the objects through the checkpoint store's S3 client."""
import importlib.util
import os
import sys
import threading

import pytest

from psjob.dataset.stream import StreamConfig, StreamReader
from psjob.foundation.checkpoint import storage

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import streamkit  # noqa: E402


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


s3server = _load(os.path.join(HERE, "s3server.py"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = s3server.S3Server(tmp_path_factory.mktemp("moto") / "moto.log")
    yield srv
    srv.stop()


@pytest.fixture
def root(server, monkeypatch):
    server.use(monkeypatch)
    return f"s3://{server.new_bucket()}/stream"


def put_folder(root, folder, first, counts, done=True):
    store = storage.for_path(root)
    for name, data in streamkit.folder_bytes(first, counts).items():
        store.write_bytes(f"{root}/{folder}/{name}", data)
    if done:
        store.write_bytes(f"{root}/{folder}/_SUCCESS", b"")
    return first + sum(counts)


def numbers(batch):
    return [streamkit.example_number(i) for i in batch.ids[streamkit.AUDIT_SLOT]]


def test_an_s3_stream_is_followed_in_order_and_resumed_inside_a_folder(root):
    n = put_folder(root, "20261128/23", 0, [40, 25])
    n2 = put_folder(root, "20261129/00", n, [30], done=False)
    storage.for_path(root).write_bytes(f"{root}/20261128/_tmp/x", b"")  # not a folder of the layout
    config = StreamConfig(root=root, layout="%Y%m%d/%H", poll_seconds=0.05)
    idle = []

    def on_idle():
        idle.append(1)
        if len(idle) == 1:
            storage.for_path(root).write_bytes(f"{root}/20261129/00/_SUCCESS", b"")
        elif len(idle) > 2:
            stop.set()
    stop = threading.Event()
    got = [(numbers(b), p) for b, p in StreamReader(config, 0, 2, 10, stop=stop, on_idle=on_idle)]
    mine = [k for ns, _ in got for k in ns]
    assert mine and max(mine) >= n  # the second folder was read once its marker came
    # Both trainers from a position inside the first folder: the rest, once.
    cut = got[1][1]
    assert cut.folder == "20261128/23" and cut.offset > 0
    rest = []
    for t in range(2):
        stop = threading.Event()
        rest += [k for b, _ in StreamReader(config, t, 2, 10, start=cut, stop=stop, on_idle=stop.set)
                 for k in numbers(b)]
    before = []
    for t in range(2):
        reader = StreamReader(config, t, 2, 10)
        for i, (b, p) in enumerate(reader):
            before += numbers(b)
            if p == cut:
                break
    assert sorted(before + rest) == list(range(n2))
