"""The checkpoint format: array files, manifests, checkpoint roots, retention, the CLI,
and fluid.io's single-machine saves on top of them."""
import json
import os

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.foundation.checkpoint import cli, store
from psjob.foundation.checkpoint.format import (
    CORRUPT_MARKER,
    MANIFEST,
    CheckpointError,
    CorruptFileError,
    new_manifest,
    read_array,
    read_manifest,
    write_array,
    write_manifest,
)


def _save(path, step, arrays):
    os.makedirs(path, exist_ok=True)
    entries = {}
    for name, arr in arrays.items():
        entries[name] = write_array(os.path.join(path, name), arr)
        entries[name]["file"] = name
    write_manifest(path, new_manifest(entries, step=step, kind="checkpoint"))


def _root(tmp_path, steps):
    root = tmp_path / "ckpt"
    for s in steps:
        _save(str(root / store.step_dirname(s)), s, {"w": np.full((4, 3), s, "float32")})
    return root


def test_an_array_round_trips_with_its_checksum_and_size_recorded(tmp_path):
    arr = np.arange(3 * 5, dtype="float32").reshape(3, 5)
    entry = write_array(str(tmp_path / "a"), arr)
    assert entry["shape"] == [3, 5] and entry["dtype"] == "float32" and entry["bytes"] == arr.nbytes
    assert entry["file_bytes"] == os.path.getsize(tmp_path / "a")
    np.testing.assert_array_equal(read_array(str(tmp_path / "a"), entry), arr)
    # the file is plain .npy: numpy reads it without psjob
    np.testing.assert_array_equal(np.load(tmp_path / "a", allow_pickle=False), arr)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]


def test_a_truncated_or_flipped_file_is_refused_naming_the_file(tmp_path):
    arr = np.random.default_rng(0).normal(size=(64, 64)).astype("float32")
    path = str(tmp_path / "w")
    entry = write_array(path, arr)
    with open(path, "r+b") as f:
        f.seek(entry["file_bytes"] - 7)
        f.write(b"\x00\x01\x02")
    with pytest.raises(CorruptFileError, match=r"w: checksum mismatch for 'w'"):
        read_array(path, entry, "w")
    os.truncate(path, entry["file_bytes"] - 100)
    with pytest.raises(CorruptFileError, match=r"truncated"):
        read_array(path, entry, "w")


def test_a_directory_without_a_manifest_is_not_a_checkpoint(tmp_path):
    _save(str(tmp_path / "ok"), 1, {"w": np.zeros(3, "float32")})
    os.makedirs(tmp_path / "half")
    write_array(str(tmp_path / "half" / "w"), np.zeros(3, "float32"))
    assert store.inspect_dir(str(tmp_path / "ok")).status == store.OK
    assert store.inspect_dir(str(tmp_path / "half")).status == store.INCOMPLETE
    with pytest.raises(CheckpointError, match="no __manifest__.json"):
        read_manifest(str(tmp_path / "half"))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / MANIFEST).write_text('{"format": "other"}')
    assert store.inspect_dir(str(tmp_path / "bad")).status == store.INVALID


def test_the_newest_complete_checkpoint_wins_and_damaged_ones_are_skipped(tmp_path):
    root = _root(tmp_path, [10, 20, 30])
    os.makedirs(root / store.step_dirname(40))  # a save in progress
    assert store.newest_good(str(root)).step == 30
    entry = read_manifest(str(root / store.step_dirname(30)))["vars"]["w"]
    os.truncate(root / store.step_dirname(30) / "w", entry["file_bytes"] - 1)
    damaged = store.inspect_dir(str(root / store.step_dirname(30)))
    assert damaged.status == store.DAMAGED and "truncated" in damaged.reason
    assert [c.step for c in store.candidates(str(root))] == [20, 10]
    store.mark_corrupt(str(root / store.step_dirname(20)), "checksum mismatch in w")
    assert store.inspect_dir(str(root / store.step_dirname(20))).reason.startswith("marked corrupt")
    assert store.newest_good(str(root)).step == 10
    assert os.path.exists(root / store.step_dirname(20) / CORRUPT_MARKER)


def test_retention_keeps_the_newest_k_and_never_the_newest_good_one(tmp_path):
    root = _root(tmp_path, [1, 2, 3, 4, 5])
    os.makedirs(root / store.step_dirname(0))     # an abandoned save, older than the newest good one
    os.makedirs(root / store.step_dirname(9))     # a save in progress: newer, left alone
    removed = store.apply_retention(str(root), keep=2)
    assert sorted(os.path.basename(p) for p in removed) == [store.step_dirname(s) for s in (0, 1, 2, 3)]
    assert sorted(os.listdir(root)) == [store.step_dirname(s) for s in (4, 5, 9)]
    assert [c.step for c in store.candidates(str(root))] == [5, 4]
    store.apply_retention(str(root), keep=0)      # keep is at least one
    assert [c.step for c in store.candidates(str(root))] == [5]


def test_the_cli_lists_inspects_and_verifies_naming_a_bad_file(tmp_path, capsys):
    root = _root(tmp_path, [3, 6])
    assert cli.main(["list", str(root)]) == 0
    out = capsys.readouterr().out
    assert "step-00000003" in out and "*          6  ok" in out
    assert cli.main(["inspect", str(root)]) == 0
    out = capsys.readouterr().out
    assert "step     6" in out and "w " in out and "float32" in out and "[4, 3]" in out
    assert cli.main(["verify", str(root)]) == 0
    assert "2 of 2 checkpoint(s) verified" in capsys.readouterr().out
    bad = root / store.step_dirname(6) / "w"
    data = bytearray(bad.read_bytes())
    data[-1] ^= 0xFF
    bad.write_bytes(bytes(data))
    assert cli.main(["verify", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"FAILED  {root / store.step_dirname(6)}" in out and f"{bad}: checksum mismatch" in out
    assert cli.main(["verify", str(tmp_path / "nope")]) == 2


def _linear_program():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        y = fluid.layers.data(name="y", shape=[1])
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        fluid.optimizer.Adam(0.1).minimize(loss)
    return main, startup, loss


def test_single_machine_save_and_load_persistables_keep_their_format_and_restore_adam_state(tmp_path):
    main, startup, loss = _linear_program()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((2, 4), "float32"), "y": np.zeros((2, 1), "float32")}
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path), main)
    doc = json.loads((tmp_path / MANIFEST).read_text())
    assert doc["format"] == "psjob.vars" and doc["version"] == 1
    assert {"fc_0.w_0", "fc_0.w_0_moment1_0", "fc_0.w_0_beta1_pow_acc_0"} <= set(doc["vars"])
    fresh = fluid.Scope()
    exe.run(startup, scope=fresh)
    with fluid.scope_guard(fresh):
        fluid.io.load_persistables(exe, str(tmp_path), main)
    for name in doc["vars"]:
        np.testing.assert_array_equal(fresh.vars[name], scope.vars[name])


def test_a_failed_load_leaves_the_scope_untouched(tmp_path):
    main, startup, _ = _linear_program()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path), main)
    before = {n: np.array(v, copy=True) for n, v in scope.vars.items() if isinstance(v, np.ndarray)}
    scope.vars["fc_0.w_0"] += 1.0
    expected = np.array(scope.vars["fc_0.w_0"], copy=True)
    with open(tmp_path / "fc_0.b_0", "r+b") as f:  # the last file of the load order goes bad
        f.seek(-1, os.SEEK_END)
        f.write(b"\xff")
    with fluid.scope_guard(scope), pytest.raises(CheckpointError, match="fc_0.b_0"):
        fluid.io.load_persistables(exe, str(tmp_path), main)
    np.testing.assert_array_equal(scope.vars["fc_0.w_0"], expected)
    assert before.keys() <= scope.vars.keys()


def test_a_manifest_of_the_first_release_without_sizes_or_time_still_loads(tmp_path):
    main, startup, _ = _linear_program()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path), main)
    doc = json.loads((tmp_path / MANIFEST).read_text())
    doc.pop("time")
    for entry in doc["vars"].values():
        entry.pop("file_bytes")
    (tmp_path / MANIFEST).write_text(json.dumps(doc))
    assert store.inspect_dir(str(tmp_path)).ok
    fresh = fluid.Scope()
    with fluid.scope_guard(fresh):
        fluid.io.load_persistables(exe, str(tmp_path), main)
    np.testing.assert_array_equal(fresh.vars["fc_0.w_0"], scope.vars["fc_0.w_0"])


def test_io_refuses_a_parallel_executor_or_a_non_program_with_a_type_error(tmp_path):
    main, _, loss = _linear_program()
    with pytest.raises(TypeError, match="ParallelExecutor is not allowed"):
        fluid.io.save_persistables(fluid.ParallelExecutor(main_program=main, loss_name=loss.name), str(tmp_path))
    with pytest.raises(TypeError, match="must be a fluid.Executor, got str"):
        fluid.io.load_persistables("exe", str(tmp_path), main)
    with pytest.raises(TypeError, match="main_program must be a fluid.Program"):
        fluid.io.save_persistables(fluid.Executor(), str(tmp_path), main_program=42)
