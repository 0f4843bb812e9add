"""Trainer 0's watch of the job's topology file (fleet.checkpointer.TopologyWatch): a change of
the pserver endpoints — and only that — is a resize it holds for."""
import json
import os

from psjob.cluster.trainer.checkpointer import TopologyWatch

MINE = ("127.0.0.1:7000", "127.0.0.2:7000")


def write(path, endpoints, trainers=2):
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"pserver_endpoints": list(endpoints), "trainers": trainers}, f)
    os.replace(tmp, path)  # as psjob run writes it (and a ConfigMap volume swaps its data)


def test_only_a_change_of_the_pserver_endpoints_is_a_resize(tmp_path):
    path = str(tmp_path / "topology.json")
    write(path, MINE)
    watch = TopologyWatch(path, MINE)
    assert not watch.resized() and not watch.resized()
    write(path, MINE, trainers=3)  # an elastic trainer resize changes the file too
    assert not watch.resized()
    write(path, MINE + ("127.0.0.3:7000",))
    assert watch.resized()


def test_a_trainer_started_after_the_file_changed_holds_at_its_first_check(tmp_path):
    path = str(tmp_path / "topology.json")
    write(path, ("127.0.0.1:7100",))
    assert TopologyWatch(path, MINE).resized()


def test_a_missing_or_half_written_file_is_no_resize(tmp_path):
    path = tmp_path / "topology.json"
    watch = TopologyWatch(str(path), MINE)
    assert not watch.resized()
    path.write_text('{"pserver_endpoints": ["127.0.0.')
    assert not watch.resized()
    write(str(path), ("127.0.0.9:1",))
    assert watch.resized()
