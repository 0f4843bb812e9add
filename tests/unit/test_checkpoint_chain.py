"""Incremental (delta) checkpoints: chains of a base and deltas, over real pserver programs.

Trainer 0 checkpoints through a `Checkpointer` with incremental checkpoints on;
the pservers (in-memory transport, as tests/unit/test_checkpoint_distributed.py)
track their table's changes and write deltas. A restore (on 2 or 3 pservers) of
the newest link equals a whole save taken at the same instant; a broken link
falls back to the newest complete prefix; `compact` folds a chain into a base.
The component tier repeats the important cases with pserver processes.
"""
import dataclasses
import importlib.util
import json
import os

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.trainer import checkpoint_save as distributed
from psjob.cluster.trainer.checkpointer import CheckpointConfig, Checkpointer
from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint import cli, storage, store
from psjob.foundation.checkpoint.format import CheckpointError, read_manifest
from psjob.foundation.checkpoint.tables import save_shard, table_entry
from psjob.foundation.settings import Settings
from psjob.foundation.tables import EvictionConfig, TableShard, shard_of

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dist = _load(os.path.join(HERE, "test_checkpoint_distributed.py"))


def train_with_checkpoints(job, root, start, steps, save_at, base_every=10, whole=None, between=None,
                           incremental=True):
    """Train `steps` steps from `start`; trainer 0 checkpoints into `root` at the steps in
    `save_at` (incremental), and at the end writes a whole save (outside the chain) to `whole`.
    `between(step)` runs on trainer 0 after each step's checkpoint (with the pservers idle in sync mode)."""
    def body(t, exe):
        tr, loss = job.programs[t]
        scope = fluid.Scope()
        exe.run(tr.get_trainer_startup_program(), scope=scope)
        prog = tr.get_trainer_program(wait_port=False)
        ckpt = None
        if t == 0:
            config = CheckpointConfig(root=str(root), keep=100, incremental=incremental, base_every=base_every)
            ckpt = Checkpointer(exe, prog, config, scope=scope, dist=distributed.DistInfo.of(prog))
            ckpt.resume()
        for s in range(start, start + steps):
            exe.run(prog, feed=dist.feed(s, t), fetch_list=[loss], scope=scope)
            if ckpt is not None and s + 1 in save_at:
                assert ckpt.save(s + 1) is not None, ckpt.failures
            if ckpt is not None and between is not None:
                between(s + 1)
        if t == 0 and whole:
            fluid.io._save_distributed_persistables(exe, str(whole), prog, scope=scope)
        return ckpt
    return job.cluster.run_trainers(body, dist.TRAINERS)[0]


def tables_of(job, n):
    return [job.cluster.handler(ep).scope.vars["emb"] for ep in dist.EPS[:n]]


def restored(root, n):
    """n fresh pservers restore the newest good checkpoint of root; their table rows, dense."""
    job = dist.Job(n)
    for ep in dist.EPS[:n]:
        state = job.cluster.handler(ep)
        assert state.restore_from_checkpoints(str(root)) is not None
    return job, dist.live_table(*tables_of(job, n))


def test_deltas_hold_only_changed_rows_and_a_restore_equals_a_whole_save_on_two_or_three_pservers(tmp_path):
    root = tmp_path / "ckpt"
    job = dist.Job(2)
    ckpt = train_with_checkpoints(job, root, 0, 8, {2, 4, 6, 8}, whole=tmp_path / "whole")
    infos = store.candidates(str(root))
    assert [(c.step, c.kind) for c in infos] == [(8, "delta"), (6, "delta"), (4, "delta"), (2, "base")]
    assert ckpt.failures == []
    base, newest = infos[-1].manifest, infos[0].manifest
    assert newest["version"] == 2 and base["version"] == 1
    assert newest["chain"]["depth"] == 3 and newest["chain"]["base"]["id"] == base["chain"]["id"]
    assert newest["chain"]["parent"]["path"] == store.step_dirname(6)
    rows = lambda doc: sum(s["rows"] for s in doc["tables"]["emb"]["shards"])  # noqa: E731
    assert 0 < rows(newest) < rows(base) and newest["tables"]["emb"]["delta"] is True
    assert infos[0].links == tuple(str(root / store.step_dirname(s)) for s in (2, 4, 6, 8))
    whole = dist.saved(str(tmp_path / "whole"))
    for n in (2, 3):
        _job, table = restored(root, n)
        np.testing.assert_array_equal(table, whole["emb"])
    # every link's dense variables are whole: the newest holds what the whole save holds
    for name, entry in newest["vars"].items():
        assert entry["sha256"] == read_manifest(str(tmp_path / "whole"))["vars"][name]["sha256"], name
    # a delta's table is refused by a reader that does not follow chains
    with pytest.raises(CheckpointError, match="is a delta"):
        dist.saved(infos[0].path)


def test_evicted_rows_become_tombstones_and_a_recreated_id_restores_its_new_row(tmp_path):
    root = tmp_path / "ckpt"
    job = dist.Job(2)

    def evict_all(step):
        if step == 4:  # after the delta of step 4: every row goes (and some come back at step 5, 6)
            for table in tables_of(job, 2):
                table._config = dataclasses.replace(table.config,
                                                    eviction=EvictionConfig(delete_after_unseen_steps=0))
                table.tick(table.step + 5)
                assert table.evict() > 0
    train_with_checkpoints(job, root, 0, 6, {2, 4, 6}, whole=tmp_path / "whole", between=evict_all)
    newest = store.newest_good(str(root))
    shards = newest.manifest["tables"]["emb"]["shards"]
    assert newest.kind == "delta" and sum(s["tombstones"] for s in shards) > 0
    live = dist.live_table(*tables_of(job, 2))
    _job, table = restored(root, 3)
    np.testing.assert_array_equal(table, live)
    had = {int(i) for t in tables_of(job, 2) for i in t.export().ids}
    got = {int(i) for t in tables_of(_job, 3) for i in t.export().ids}
    assert got == had  # the evicted ids that did not come back are gone, not restored from the base


def test_base_every_starts_a_new_chain_and_retention_keeps_the_links_a_kept_delta_needs(tmp_path):
    root = tmp_path / "ckpt"
    train_with_checkpoints(dist.Job(2), root, 0, 5, {1, 2, 3, 4, 5}, base_every=3)
    kinds = [(c.step, c.kind) for c in reversed(store.candidates(str(root)))]
    assert kinds == [(1, "base"), (2, "delta"), (3, "delta"), (4, "base"), (5, "delta")]
    removed = store.apply_retention(str(root), keep=1)
    assert sorted(os.path.basename(p) for p in removed) == [store.step_dirname(s) for s in (1, 2, 3)]
    assert [c.step for c in store.candidates(str(root))] == [5, 4]  # the kept delta's base stays


def test_a_broken_link_falls_back_to_the_newest_complete_prefix(tmp_path, capsys):
    root = tmp_path / "ckpt"
    job = dist.Job(2)
    train_with_checkpoints(job, root, 0, 6, {2, 4, 6})
    step4 = root / store.step_dirname(4)
    # the middle link is corrupt: 6 (on it) and 4 are skipped, the base 2 restores (on 3 pservers,
    # each of which reads every saved shard)
    shard = step4 / "__tables__" / "emb.shard-1-of-2.values"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0x55
    shard.write_bytes(bytes(data))
    base = dist.saved(str(root / store.step_dirname(2)))
    fresh = dist.Job(3)
    for ep in dist.EPS[:3]:
        info = fresh.cluster.handler(ep).restore_from_checkpoints(str(root))
        assert info.step == 2
    out = capsys.readouterr().out
    assert "checksum mismatch" in out and (step4 / "__corrupt__.txt").exists()
    np.testing.assert_array_equal(dist.live_table(*tables_of(fresh, 3)), base["emb"])
    status = {c.step: (c.status, c.reason) for c in store.scan(str(root))}
    assert status[6][0] == "damaged" and f"its parent {step4} is damaged" in status[6][1]
    assert cli.main(["verify", str(root)]) == 1


def test_a_delta_whose_parent_is_missing_or_replaced_is_refused_naming_the_parent(tmp_path, capsys):
    root = tmp_path / "ckpt"
    train_with_checkpoints(dist.Job(2), root, 0, 4, {2, 4})
    step2, step4 = root / store.step_dirname(2), root / store.step_dirname(4)
    # replaced: the parent's manifest is not the one the delta was written on
    doc = json.loads((step2 / "__manifest__.json").read_text())
    doc["time"] += 1
    (step2 / "__manifest__.json").write_text(json.dumps(doc))
    info = store.inspect_dir(str(step4))
    assert info.status == "damaged" and "the parent was replaced" in info.reason
    os.rename(step2, tmp_path / "elsewhere")
    info = store.inspect_dir(str(step4))
    assert info.status == "damaged" and f"a delta on {step2}" in info.reason and "missing" in info.reason
    with pytest.raises(chains.BrokenChain, match="its parent is gone"):
        chains.compact(str(step4), str(tmp_path / "out"))
    assert cli.main(["compact", str(step4), str(tmp_path / "out")]) == 1
    assert "its parent is gone" in capsys.readouterr().err
    assert not (tmp_path / "out" / "__manifest__.json").exists()
    assert store.candidates(str(root)) == []
    # a pserver starting on that root fails saying why, instead of restoring a partial table
    state = dist.Job(2).cluster.handler(dist.EPS[0])
    with pytest.raises(CheckpointError, match=r"no checkpoint under .* could be loaded:\n.*its parent is gone"):
        state.restore_from_checkpoints(str(root))


def test_compact_folds_a_chain_into_a_base_that_restores_the_same_rows(tmp_path, capsys):
    root = tmp_path / "ckpt"
    train_with_checkpoints(dist.Job(2), root, 0, 6, {2, 4, 6})
    newest = store.newest_good(str(root))
    out = tmp_path / "compacted" / store.step_dirname(6)
    assert cli.main(["compact", newest.path, str(out), "--pservers", "3"]) == 0
    assert "3 link(s)" in capsys.readouterr().out
    doc = read_manifest(str(out))
    assert doc["chain"]["kind"] == "base" and doc["tables"]["emb"]["num_shards"] == 3 and doc["version"] == 1
    assert store.verify(str(out)) == []
    a, b = restored(root, 2)[1], restored(out.parent, 2)[1]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dist.saved(str(out))["emb"], a)  # a base: whole-table readers take it


def test_list_inspect_and_verify_show_chains(tmp_path, capsys):
    root = tmp_path / "ckpt"
    train_with_checkpoints(dist.Job(2), root, 0, 4, {2, 4})
    assert cli.main(["list", str(root)]) == 0
    out = capsys.readouterr().out
    assert "KIND" in out and " base " in out and " delta " in out
    assert cli.main(["inspect", str(root)]) == 0
    out = capsys.readouterr().out
    assert "chain    delta, depth 1, on step-00000002" in out and "tombstones" in out
    assert cli.main(["verify", str(root)]) == 0
    assert "2 of 2 checkpoint(s) verified" in capsys.readouterr().out


def test_a_pserver_that_restarted_or_missed_a_commit_gets_a_base_written_instead_of_a_delta(tmp_path):
    root = tmp_path / "ckpt"
    job = dist.Job(2)

    def forget(step):
        if step == 2:  # pserver 1 lost its change tracking (as a restarted one would have)
            state = job.cluster.handler(dist.EPS[1])
            state.delta_base = None
    train_with_checkpoints(job, root, 0, 4, {2, 3, 4}, between=forget)
    kinds = [(c.step, c.kind) for c in reversed(store.candidates(str(root)))]
    assert kinds == [(2, "base"), (3, "base"), (4, "delta")]


def test_without_the_policy_every_checkpoint_is_a_base_and_no_table_tracks_changes(tmp_path):
    job = dist.Job(2)
    train_with_checkpoints(job, tmp_path / "ckpt", 0, 3, {1, 2, 3}, incremental=False)
    assert [c.kind for c in store.candidates(str(tmp_path / "ckpt"))] == ["base"] * 3
    assert not any(t.tracking_changes for t in tables_of(job, 2))
    assert {job.cluster.handler(ep).delta_base for ep in dist.EPS[:2]} == {None}


def test_bad_policy_settings_are_named():
    with pytest.raises(ValueError, match="PSJOB_CHECKPOINT_INCREMENTAL='maybe'"):
        Settings({"PSJOB_CHECKPOINT_INCREMENTAL": "maybe"}).checkpoint
    with pytest.raises(ValueError, match="PSJOB_CHECKPOINT_BASE_EVERY='0': must be at least 1"):
        Settings({"PSJOB_CHECKPOINT_BASE_EVERY": "0"}).checkpoint
    config = CheckpointConfig.of(Settings({"PSJOB_CHECKPOINT_DIR": "x", "PSJOB_CHECKPOINT_INCREMENTAL": "1",
                                           "PSJOB_CHECKPOINT_BASE_EVERY": "4"}))
    assert config.incremental and config.base_every == 4


def test_a_delta_of_hand_made_shards_applies_tombstones_before_rows(tmp_path):
    """The chain format alone (no pserver): a base, a delta that evicts 1 and 3, recreates 3, changes 4."""
    def rows(ids, fill):
        ids = np.asarray(ids, np.int64)
        return TableShard(ids=ids, values=np.full((ids.size, 2), fill, np.float32))
    base_dir, delta_dir = str(tmp_path / "step-00000001"), str(tmp_path / "step-00000002")
    from psjob.foundation.checkpoint.format import manifest_sha256, new_manifest, write_manifest
    shards = [save_shard(base_dir, "t", rows([i for i in range(6) if shard_of(np.int64(i), 2) == k], 1.0), k, 2)
              for k in range(2)]
    write_manifest(base_dir, new_manifest({}, tables={"t": table_entry(6, 2, "float32", shards)},
                                          **chains.manifest_version(chains.base_link("b"))))
    changed, gone = np.array([3, 4]), np.array([1, 3])
    shards = [save_shard(delta_dir, "t", rows(changed[shard_of(changed, 2) == k], 2.0), k, 2,
                         tombstones=gone[shard_of(gone, 2) == k]) for k in range(2)]
    link = chains.delta_link("d", base_dir, read_manifest(base_dir), manifest_sha256(base_dir))
    write_manifest(delta_dir, new_manifest({}, tables={"t": table_entry(6, 2, "float32", shards, delta=True)},
                                           **chains.manifest_version(link)))
    links = chains.resolve(delta_dir)
    got = {}
    for k in range(3):
        for part in chains.read_chain_rows(links, "t", k, 3):
            got.update({int(i): float(v[0]) for i, v in zip(part.ids, part.values)})
    assert got == {0: 1.0, 2: 1.0, 3: 2.0, 4: 2.0, 5: 1.0}
    assert storage.parent(delta_dir) == str(tmp_path)


def test_a_delta_exports_as_parquet_rows_and_tombstones_that_rebuild_the_table_from_its_base(tmp_path, capsys):
    import pyarrow.parquet as pq
    root = tmp_path / "ckpt"
    job = dist.Job(2)

    def evict_all(step):
        if step == 2:
            for table in tables_of(job, 2):
                table._config = dataclasses.replace(table.config,
                                                    eviction=EvictionConfig(delete_after_unseen_steps=0))
                table.tick(table.step + 5)
                table.evict()
    train_with_checkpoints(job, root, 0, 3, {2, 3}, between=evict_all)
    base_out, delta_out = tmp_path / "base", tmp_path / "delta"
    assert cli.export_main([str(root / store.step_dirname(2)), str(base_out), "--format", "parquet"]) == 0
    assert cli.export_main([str(root), str(delta_out), "--format", "parquet"]) == 0
    man = json.loads((delta_out / "manifest.json").read_text())
    emb = man["tables"]["emb"]
    assert emb["delta"] is True and emb["tombstones"]["rows"] > 0 and man["source"]["chain"]["kind"] == "delta"
    # a reader holding the base applies the delta with pyarrow alone: drop tombstones, upsert rows
    rows = {}
    for f in json.loads((base_out / "manifest.json").read_text())["tables"]["emb"]["files"]:
        t = pq.read_table(base_out / f["path"]).to_pydict()
        rows.update(zip(t["id"], t["embedding"]))
    for f in emb["tombstones"]["files"]:
        for i in pq.read_table(delta_out / f["path"]).column("id").to_pylist():
            rows.pop(i, None)
    for f in emb["files"]:
        t = pq.read_table(delta_out / f["path"]).to_pydict()
        rows.update(zip(t["id"], t["embedding"]))
    live = {int(i): v for table in tables_of(job, 2) for i, v in zip(table.export().ids, table.export().values)}
    assert rows.keys() == live.keys()
    for i, v in live.items():
        np.testing.assert_array_equal(np.asarray(rows[i], np.float32), v)
    assert cli.main(["import", str(delta_out), str(tmp_path / "back")]) == 1
    assert "the export of a delta" in capsys.readouterr().err
