"""`psjob export` (Parquet) and `psjob checkpoint import`: round trips through real tables.

A checkpoint is written the way pservers write theirs (every pserver's SparseTable
exports its rows, `save_shard` writes them, the manifest goes last), exported,
imported for another number of pservers and restored into fresh SparseTables with
the restore path pservers run (`read_rows` + `import_into`).
"""
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from psjob.foundation.checkpoint import cli, store
from psjob.foundation.checkpoint.export import export_checkpoint, import_export
from psjob.foundation.checkpoint.format import CheckpointError, new_manifest, read_manifest, write_array, write_manifest
from psjob.foundation.checkpoint.tables import import_into, read_rows, save_shard, table_entry
from psjob.foundation.tables import EvictionConfig, OptimizerConfig, SparseTable, TableConfig, concat_shards, shard_of

ADAM = TableConfig("emb", 6, seed=3, optimizer=OptimizerConfig("adam", lr=0.01),
                   eviction=EvictionConfig(delete_threshold=0.0))
ADAGRAD = TableConfig("ctr.slot_1", 4, seed=5, optimizer=OptimizerConfig("adagrad", lr=0.1))
DENSE = {"fc_0.w_0": np.arange(12, dtype=np.float32).reshape(3, 4), "fc_0.b_0": np.ones(4, np.float32),
         "@LR_DECAY_COUNTER@": np.array([7], np.int64)}


def _pservers(config, ids, num, seed):
    """`num` pserver tables holding the ids `shard_of` gives each, trained a few steps."""
    rng = np.random.default_rng(seed)
    tables = [SparseTable(config) for _ in range(num)]
    owner = shard_of(ids, num)
    for j, t in enumerate(tables):
        mine = ids[owner == j]
        t.lookup(mine)
        for _ in range(3):
            batch = rng.choice(mine, size=mine.size)
            t.push(batch, rng.standard_normal((batch.size, config.dim)), clicks=rng.integers(0, 2, batch.size))
            t.end_step()
    return tables


def _write_checkpoint(path, tables_by_name, step=40):
    """A checkpoint as pservers and trainer 0 write one: shards, dense vars, manifest last."""
    os.makedirs(path)
    tables = {}
    for name, tables_ in tables_by_name.items():
        shards = [save_shard(str(path), name, t.export(), j, len(tables_), optimizer=t.config.optimizer.name)
                  for j, t in enumerate(tables_)]
        tables[name] = table_entry(1000, tables_[0].dim, "float32", shards)
    vars_ = {}
    for name, arr in DENSE.items():
        vars_[name] = write_array(os.path.join(str(path), name), arr)
        vars_[name]["file"] = name
    write_manifest(str(path), new_manifest(vars_, tables=tables, step=step, kind="checkpoint",
                                           position={"step": step, "epoch": 0, "offset": 640}))
    return str(path)


def _ids(n, seed):
    rng = np.random.default_rng(seed)
    ids = np.unique(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n, dtype=np.int64))
    return np.concatenate([ids, [0, -1, np.iinfo(np.int64).max]])


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("src")
    emb = _pservers(ADAM, _ids(3000, 1), 2, seed=2)
    slot = _pservers(ADAGRAD, _ids(500, 3), 2, seed=4)
    path = _write_checkpoint(root / "ckpt" / "step-00000040", {"emb": emb, "ctr.slot_1": slot})
    whole = {"emb": concat_shards([t.export() for t in emb]), "ctr.slot_1": concat_shards([t.export() for t in slot])}
    return path, whole


def _restore(ckpt, name, config, num):
    """What `num` pservers restoring `ckpt` hold for table `name` (the pservers' restore path)."""
    doc = read_manifest(ckpt)["tables"][name]
    out = []
    for j in range(num):
        t = SparseTable(config)
        import_into(t, name, read_rows(ckpt, name, doc, j, num, optimizer=config.optimizer.name))
        exported = t.export()
        assert bool((shard_of(exported.ids, num) == j).all())
        out.append(exported)
    return concat_shards(out)


def _same(a, b, state=True):
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.values, b.values)
    assert set(a.meta) == set(b.meta)
    for k in a.meta:
        np.testing.assert_array_equal(a.meta[k], b.meta[k])
    if state:
        assert set(a.state) == set(b.state) and a.state
        for k in a.state:
            np.testing.assert_array_equal(a.state[k], b.state[k])


def test_export_then_import_on_three_pservers_restores_every_row_value_and_optimizer_state(source, tmp_path):
    ckpt, whole = source
    out = tmp_path / "export"
    man = export_checkpoint(ckpt, str(out), with_optimizer_state=True, row_group_rows=1000)
    assert sorted(os.listdir(out)) == ["dense", "manifest.json", "tables"]
    assert json.loads((out / "manifest.json").read_text()) == man
    emb = man["tables"]["emb"]
    assert emb["rows"] == len(whole["emb"]) and emb["dim"] == 6 and emb["optimizer"] == "adam"
    assert [(c["name"], c["dtype"], c["shape"]) for c in emb["columns"]] == [
        ("id", "int64", []), ("embedding", "float32", [6]), ("click", "float32", []), ("last_seen", "int32", []),
        ("show", "float32", []), ("opt_beta1_pow_acc", "float32", [1]), ("opt_beta2_pow_acc", "float32", [1]),
        ("opt_moment1", "float32", [6]), ("opt_moment2", "float32", [6])]
    assert [f["path"] for f in emb["files"]] == ["tables/emb/part-00000.parquet", "tables/emb/part-00001.parquet"]
    assert man["source"]["step"] == 40 and man["source"]["checkpoint"] == ckpt
    assert sorted(man["dense"]) == sorted(DENSE)

    back = tmp_path / "imported" / "step-00000040"
    import_export(str(out), str(back), num_shards=3)
    assert store.verify(str(back)) == []
    assert [c.step for c in store.candidates(str(back.parent))] == [40]
    doc = read_manifest(str(back))
    assert doc["step"] == 40 and doc["position"] == {"step": 40, "epoch": 0, "offset": 640}
    assert {n: t["num_shards"] for n, t in doc["tables"].items()} == {"emb": 3, "ctr.slot_1": 3}
    _same(_restore(str(back), "emb", ADAM, 3), whole["emb"])
    _same(_restore(str(back), "ctr.slot_1", ADAGRAD, 1), whole["ctr.slot_1"])
    for name, arr in DENSE.items():
        got = np.load(back / name, allow_pickle=False)
        assert got.dtype == arr.dtype
        np.testing.assert_array_equal(got, arr)


def test_without_optimizer_state_the_rows_come_back_with_the_state_a_new_row_gets(source, tmp_path):
    ckpt, whole = source
    man = export_checkpoint(ckpt, str(tmp_path / "export"))
    assert not any(c["name"].startswith("opt_") for t in man["tables"].values() for c in t["columns"])
    assert man["tables"]["ctr.slot_1"]["optimizer_state"] is False
    back = str(tmp_path / "back")
    import_export(str(tmp_path / "export"), back)  # as many pservers as the source: 2
    got = _restore(back, "ctr.slot_1", ADAGRAD, 2)
    _same(got, whole["ctr.slot_1"], state=False)
    fresh = SparseTable(ADAGRAD)
    fresh.lookup(got.ids)
    np.testing.assert_array_equal(got.state["moment"], fresh.export().state["moment"])
    assert not np.array_equal(got.state["moment"], whole["ctr.slot_1"].state["moment"])


def test_the_export_is_readable_with_pyarrow_alone(source, tmp_path):
    ckpt, whole = source
    out = tmp_path / "export"
    export_checkpoint(ckpt, str(out), row_group_rows=500)
    expected = whole["emb"]
    # -- from here on only pyarrow and the documented layout: what a serving team writes --
    manifest = json.loads((out / "manifest.json").read_text())
    files = [str(out / f["path"]) for f in manifest["tables"]["emb"]["files"]]
    dataset = ds.dataset(files, format="parquet")
    assert dataset.count_rows() == len(expected) == manifest["tables"]["emb"]["rows"]
    assert dataset.schema.field("embedding").type == pa.list_(pa.float32(), 6)
    assert dataset.schema.field("id").type == pa.int64()
    wanted = [int(expected.ids[0]), int(expected.ids[1234]), -1, 0, int(expected.ids[-1])]
    got = dataset.to_table(filter=ds.field("id").isin(wanted), columns=["id", "embedding"]).to_pydict()
    by_id = dict(zip(got["id"], got["embedding"]))
    assert sorted(by_id) == sorted(wanted)
    for i in wanted:
        row = int(np.searchsorted(expected.ids, i))
        assert np.array_equal(np.asarray(by_id[i], np.float32), expected.values[row])
    meta = pq.ParquetFile(files[0]).metadata
    assert meta.num_row_groups == -(-meta.num_rows // 500)
    stats = [meta.row_group(g).column(0).statistics for g in range(meta.num_row_groups)]
    assert all(a.max < b.min for a, b in zip(stats, stats[1:]))  # sorted by id: lookups prune groups
    dense = np.load(out / manifest["dense"]["fc_0.w_0"]["file"], allow_pickle=False)
    np.testing.assert_array_equal(dense, DENSE["fc_0.w_0"])


def _corrupt(path):
    with open(path, "r+b") as f:
        f.seek(-3, os.SEEK_END)
        b = f.read(1)
        f.seek(-3, os.SEEK_END)
        f.write(bytes([b[0] ^ 0xFF]))


def test_a_checkpoint_failing_verification_is_refused_and_nothing_is_written(source, tmp_path):
    ckpt, _ = source
    bad = tmp_path / "ckpt" / "step-00000040"
    import shutil
    shutil.copytree(ckpt, bad)
    _corrupt(bad / "__tables__" / "emb.shard-1-of-2.state.moment2")
    out = tmp_path / "out" / "export"
    with pytest.raises(CheckpointError, match=r"emb.shard-1-of-2.state.moment2: checksum mismatch"):
        export_checkpoint(str(bad), str(out))  # state not exported, and still verified
    assert os.listdir(tmp_path / "out") == []  # no export, no temporary directory
    rc = cli.export_main([str(bad), str(out), "--format", "parquet"])
    assert rc == 1 and os.listdir(tmp_path / "out") == []
    os.remove(bad / "__tables__" / "emb.shard-0-of-2.values")
    with pytest.raises(CheckpointError, match="damaged.*emb.shard-0-of-2.values: missing"):
        export_checkpoint(str(bad), str(out))


def test_cli_export_and_import_and_their_refusals(source, tmp_path, capsys):
    ckpt, whole = source
    root = os.path.dirname(ckpt)  # a root: its newest good checkpoint is exported
    out = str(tmp_path / "export")
    assert cli.export_main([root, out, "--format", "parquet", "--with-optimizer-state",
                            "--row-group-rows", "64"]) == 0
    text = capsys.readouterr().out
    assert f"table emb: {len(whole['emb'])} rows x 6 in 2 file(s)" in text and "opt_moment1" in text
    assert cli.export_main([root, out, "--format", "parquet"]) == 1
    assert "already exists" in capsys.readouterr().err
    assert cli.export_main([root, str(tmp_path / "x"), "--format", "parquet", "--step", "7"]) == 1
    assert "step-00000007" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.export_main([root, str(tmp_path / "y"), "--format", "csv"])
    back = str(tmp_path / "back")
    assert cli.main(["import", out, back, "--pservers", "1"]) == 0
    assert f"table emb: {len(whole['emb'])} rows x 6 in 1 shard(s)" in capsys.readouterr().out
    _same(_restore(back, "emb", ADAM, 1), whole["emb"])
    assert cli.main(["import", out, back]) == 1
    _corrupt(os.path.join(out, "tables", "emb", "part-00001.parquet"))
    assert cli.main(["import", out, str(tmp_path / "back2")]) == 1
    assert "part-00001.parquet" in capsys.readouterr().err and not os.path.exists(tmp_path / "back2")
    assert cli.main(["import", str(tmp_path), str(tmp_path / "back3")]) == 1
    assert "no manifest.json" in capsys.readouterr().err
