"""What PaddleRec's online trainer (tools/static_ps_online_trainer.py, rank/slot_dnn) uses beyond
the Fleet basics: paddle.static.ctr_metric_bundle (values against Paddle 3.0.0), the sparse
tables' entry policies, fleet.utils.fs's LocalFS and HDFSClient (against a stand-in `hadoop`
command line), the datasets' HDFS / instance-id settings, and 64-bit feature signs."""
import stat
import textwrap

import numpy as np
import pytest

import psjob as paddle
from psjob.distributed.dataset import MultiSlotError
from psjob.distributed.fleet.utils.fs import ExecuteError, FSFileExistsError, FSFileNotExistsError, HDFSClient, LocalFS

paddle.enable_static()


def test_ctr_metric_bundle_accumulates_paddles_sums():
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        p = paddle.static.data("p", [-1, 1], "float32")
        label = paddle.static.data("l", [-1, 1], "float32")
        outs = paddle.static.ctr_metric_bundle(p, label)
    assert all(v.persistable for v in outs)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(start)
    feeds = [{"p": np.array([[0.9], [0.2], [0.6], [0.3]], "float32"), "l": np.array([[1], [0], [0], [1]], "float32")},
             {"p": np.array([[0.7], [0.1]], "float32"), "l": np.array([[1], [1]], "float32")}]
    got = [[np.asarray(v).reshape(-1)[0] for v in exe.run(main, feed=f, fetch_list=list(outs))] for f in feeds]
    # Paddle 3.0.0 (FLAGS_enable_pir_api=0), the same program and feeds: sqrerr, abserr, prob,
    # q (the sum of sigmoid(prob)), pos_num, ins_num after each batch.
    want = [[0.8999999761581421, 1.600000023841858, 2.0, 2.480882167816162, 2.0, 4.0],
            [1.7999999523162842, 2.8000001907348633, 2.799999952316284, 3.674049139022827, 4.0, 6.0]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        with pytest.raises(ValueError, match="must have one shape"):
            paddle.static.ctr_metric_bundle(paddle.static.data("a", [-1, 1], "float32"),
                                            paddle.static.data("b", [-1, 2], "float32"))


def test_auc_and_ctr_metric_bundle_name_their_global_variables_as_paddle_does():
    """Paddle 3.0.0 (FLAGS_enable_pir_api=0) named these variables of this program so; PaddleRec's
    metric_helper.get_global_auc() reads _generated_var_2 / _3 by default (a model's first auc's
    stat_pos / stat_neg), as its feature_importance.py does."""
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()), paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [-1, 2], "float32")
        y = paddle.static.data("y", [-1, 1], "int64")
        bundle = paddle.static.ctr_metric_bundle(x[:, 1:], paddle.cast(y, "float32"))
        _, _, first = paddle.static.auc(input=x, label=y)
        _, _, second = paddle.static.auc(input=x, label=y)
    assert [v.name for v in bundle] == [f"_generated_var_{i}" for i in (1, 0, 2, 3, 4, 5)]
    assert [v.name for v in first + second] == [f"_generated_var_{i}" for i in range(15, 23)]
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()), paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [-1, 2], "float32")
        _, _, stats = paddle.static.auc(input=x, label=paddle.static.data("y", [-1, 1], "int64"))
    assert [v.name for v in stats] == [f"_generated_var_{i}" for i in range(4)]


def test_entry_policies_check_their_arguments_as_paddle_and_sparse_embedding_takes_only_them():
    assert paddle.distributed.ShowClickEntry("show", "click")._to_attr() == "show_click_entry:show:click"
    assert paddle.distributed.CountFilterEntry(10)._to_attr() == "count_filter_entry:10"
    assert paddle.distributed.ProbabilityEntry(0.1)._to_attr() == "probability_entry:0.1"
    with pytest.raises(ValueError, match="count_filter must be an integer"):
        paddle.distributed.CountFilterEntry(-1)
    with pytest.raises(ValueError, match=r"probability must be a float in \(0, 1\)"):
        paddle.distributed.ProbabilityEntry(1)
    with pytest.raises(ValueError, match="must be str"):
        paddle.distributed.ShowClickEntry(None, "click")
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        ids = paddle.static.data("ids", [-1, 1], "int64", lod_level=1)
        emb = paddle.static.nn.sparse_embedding(ids, [100, 4], entry=paddle.distributed.CountFilterEntry(2))
        assert list(emb.shape) == [-1, 4]
        with pytest.raises(ValueError, match="entry must be a paddle.distributed.ProbabilityEntry"):
            paddle.static.nn.sparse_embedding(ids, [100, 4], entry="count_filter_entry:2")
        with pytest.raises(ValueError, match="table_class must be"):
            paddle.static.nn.sparse_embedding(ids, [100, 4], table_class="HashTable")


def test_local_fs(tmp_path):
    fs = LocalFS()
    root = str(tmp_path / "r")
    fs.mkdirs(root + "/a/b")
    fs.touch(root + "/f")
    assert fs.ls_dir(root) == (["a"], ["f"]) and fs.list_dirs(root) == ["a"]
    assert fs.is_dir(root + "/a") and fs.is_file(root + "/f") and fs.is_exist(root + "/a/b")
    assert fs.ls_dir(root + "/missing") == ([], []) and not fs.need_upload_download()
    with pytest.raises(FSFileExistsError):
        fs.touch(root + "/f", exist_ok=False)
    fs.mv(root + "/f", root + "/g")
    with pytest.raises(FSFileNotExistsError):
        fs.mv(root + "/f", root + "/h")
    fs.touch(root + "/h")
    with pytest.raises(FSFileExistsError):
        fs.mv(root + "/g", root + "/h")
    fs.mv(root + "/g", root + "/h", overwrite=True)
    fs.delete(root + "/a")
    fs.delete(root + "/missing")
    assert fs.ls_dir(root) == ([], ["h"])


# `hadoop fs -D k=v ... <cmd>` over a local folder: the command line HDFSClient drives.
FAKE_HADOOP = textwrap.dedent("""\
    #!/bin/sh
    shift  # fs
    while [ "$1" = "-D" ]; do echo "$2" >> "$HADOOP_LOG"; shift 2; done
    cmd=$1; shift
    case "$cmd" in
      -test) [ "$1" = -d ] && exec test -d "$2"; exec test -e "$2" ;;
      -ls) for f in "$1"/*; do
             if [ -d "$f" ]; then t=drwxr-xr-x; else t=-rw-r--r--; fi
             echo "$t 1 u g 0 2026-11-29 12:00 $f"; done ;;
      -lsr) find "$1" -mindepth 1 | sort | while read -r f; do
             if [ -d "$f" ]; then t=drwxr-xr-x; else t=-rw-r--r--; fi
             echo "$t 1 u g 0 2026-11-29 12:00 $f"; done ;;
      -mkdir) [ "$1" = -p ] && shift; exec mkdir -p "$1" ;;
      -put|-get) exec cp -r "$1" "$2" ;;
      -cat) exec cat "$1" ;;
      -rm|-rmr) exec rm -rf "$1" ;;
      -mv) exec mv "$1" "$2" ;;
      -touchz) exec touch "$1" ;;
      *) echo "unknown $cmd" >&2; exit 1 ;;
    esac
    """)


def _fake_hadoop_home(tmp_path, monkeypatch):
    home = tmp_path / "hadoop"
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "hadoop"
    script.write_text(FAKE_HADOOP)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("HADOOP_LOG", str(tmp_path / "conf.log"))
    return home


def test_hdfs_client_drives_hadoops_command_line(tmp_path, monkeypatch):
    home = _fake_hadoop_home(tmp_path, monkeypatch)
    client = HDFSClient(str(home), {"fs.default.name": "hdfs://nn:9000", "hadoop.job.ugi": "u,p"},
                        time_out=20000, sleep_inter=10)
    remote = str(tmp_path / "remote")
    client.mkdirs(remote + "/day/0000")
    local = tmp_path / "part-0"
    local.write_text("1 5\n")
    client.upload(str(local), remote + "/day/0000/part-0")
    client.touch(remote + "/day/donefile")
    assert client.ls_dir(remote + "/day") == (["0000"], ["donefile"])
    assert client.is_dir(remote + "/day/0000") and client.is_file(remote + "/day/donefile")
    assert client.cat(remote + "/day/0000/part-0") == "1 5" and client.need_upload_download()
    with pytest.raises(FSFileExistsError):
        client.upload(str(local), remote + "/day/0000/part-0")
    client.download(remote + "/day/0000/part-0", str(tmp_path / "back"))
    assert (tmp_path / "back").read_text() == "1 5\n"
    client.mv(remote + "/day/donefile", remote + "/day/done2")
    client.delete(remote + "/day")
    assert not client.is_exist(remote + "/day")
    assert "fs.default.name=hdfs://nn:9000" in (tmp_path / "conf.log").read_text()
    with pytest.raises(ExecuteError, match="bin/hadoop not found"):
        HDFSClient(str(tmp_path / "nowhere"), {}).mkdirs("/x")


def test_fluid18_hdfs_client_keeps_its_names_and_argument_order(tmp_path, monkeypatch):
    """paddle.fluid.incubate.fleet.utils.hdfs.HDFSClient (Fluid 1.8): the HDFS path first,
    full paths from ls/lsr, False instead of raising on a refused copy, split_files's shares."""
    from psjob.fluid.incubate.fleet.utils.hdfs import HDFSClient as Fluid18HDFSClient
    client = Fluid18HDFSClient(str(_fake_hadoop_home(tmp_path, monkeypatch)), {"fs.default.name": "hdfs://nn"})
    remote, local = str(tmp_path / "remote"), tmp_path / "part-0"
    local.write_text("1 5\n")
    assert client.ls(remote) == [] and client.makedirs(remote + "/a/b")
    assert client.upload(remote + "/a/b/part-0", str(local))
    assert not client.upload(remote + "/a/b/part-0", str(local))  # exists, no overwrite
    assert client.upload(remote + "/a/b/part-0", str(local), overwrite=True)
    assert client.upload(remote + "/a/part-1.tmp", str(local))
    assert client.ls(remote + "/a") == [remote + "/a/b", remote + "/a/part-1.tmp"]
    assert client.lsr(remote, excludes=["*.tmp"]) == [remote + "/a/b/part-0"]
    assert client.download(remote + "/a/b/part-0", str(tmp_path / "back"))
    assert not client.download(remote + "/missing", str(tmp_path / "back2"))
    assert client.rename(remote + "/a/part-1.tmp", remote + "/a/part-1") and client.is_file(remote + "/a/part-1")
    assert client.delete(remote) and not client.is_exist(remote)
    files = [f"f{i}" for i in range(7)]
    shares = [Fluid18HDFSClient.split_files(files, t, 3) for t in range(3)]
    assert shares == [["f0", "f1", "f2"], ["f3", "f4"], ["f5", "f6"]]  # the first 7 % 3 take one more, as Fluid 1.8


def _slots(*names):
    return [paddle.static.data(n, [-1, 1], "int64", lod_level=1) for n in names]


def test_datasets_read_64_bit_feature_signs_as_paddles_feed_does(tmp_path):
    # Paddle's MultiSlot feed reads an int64 slot's values as uint64 and keeps their bits: a
    # sign from 2**63 up is the negative int64 of the same bits.
    data = tmp_path / "part-0"
    data.write_text("1 5 2 18446744073709551615 9223372036854775808\n1 6 3 3 4 -2\n")
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        ds = paddle.distributed.InMemoryDataset()
        ds.init(batch_size=2, use_var=_slots("a", "b"), pipe_command="cat")
        ds.set_filelist([str(data)])
        ds.load_into_memory()
        values = ds._loaded().values
    assert values[1].tolist() == [-1, -(2 ** 63), 3, 4, -2]
    bad = tmp_path / "part-1"
    bad.write_text("1 5 1 18446744073709551616\n")
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        ds = paddle.distributed.InMemoryDataset()
        ds.init(batch_size=2, use_var=_slots("a", "b"), pipe_command="cat")
        ds.set_filelist([str(bad)])
        with pytest.raises(MultiSlotError, match="line 1: slot 'b': value '18446744073709551616' does not fit"):
            ds.load_into_memory()


def test_dataset_settings_the_online_trainer_makes():
    ds = paddle.distributed.InMemoryDataset()
    ds.set_hdfs_config("", "")
    ds.set_parse_ins_id(False)
    ds.set_parse_content(False)
    ds.update_settings(batch_size=8, thread_num=2, fleet_send_batch_size=1024)
    assert (ds.batch_size, ds.thread_num) == (8, 2)
    # Paddle uses them only for hdfs:/afs: entries of the file list; psjob keeps them and
    # refuses such entries (it reads local files and s3:// objects)
    ds.set_hdfs_config("afs://xxx", "xxx,xxx")
    assert (ds.fs_name, ds.fs_ugi) == ("afs://xxx", "xxx,xxx")
    with pytest.raises(OSError, match="unsupported scheme 'afs'"):
        ds.set_filelist(["afs://xxx/day/part-0"])
    with pytest.raises(TypeError, match="unknown setting 'batchsize'"):
        ds.update_settings(batchsize=8)


# An offline-inference dataset (PaddleRec's static_ps_offline_infer: parse_ins_id, a dump of
# every variable of the model): lines `1 <ins id> [1 <content>]` then the MultiSlot slots.
INFER_LINES = "1 ins_a 1 page_1 2 3 4 1 1\n1 ins_b 1 page_2 1 5 1 0\n\n1 ins_c 1 page_3 3 6 7 8 1 1\n"


def _infer_program():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        ids = paddle.static.data("ids", [None, 1], "int64", lod_level=1)
        label = paddle.static.data("label", [None, 1], "int64")
        emb = paddle.fluid.layers.embedding(ids, [10, 2], param_attr=paddle.ParamAttr(
            name="emb", initializer=paddle.nn.initializer.Assign(np.arange(20, dtype="float32").reshape(10, 2) / 8)))
        pooled = paddle.static.nn.sequence_pool(emb, "sum")
        score = paddle.sum(pooled, axis=1, keepdim=True)
        loss = paddle.mean(paddle.square(score - paddle.cast(label, "float32")))
        paddle.optimizer.SGD(0.1).minimize(loss)
    return main, startup, [ids, label], pooled, score


def test_parse_ins_id_and_content_lead_the_dump_of_infer_from_dataset(tmp_path):
    """Paddle's dump lines (DeviceWorker::DumpField): `<ins id>\t<content>` then per field
    `\t<name>:<count>:<v1>,<v2>` (C++ stream floats, int64 as uint64), one line per example
    into <path>/part-<rank>-<thread>. A field that is not one row (or sequence) per example, or
    that the program lacks, is skipped, as in Paddle."""
    paddle.enable_static()
    main, startup, use_var, pooled, score = _infer_program()
    data = tmp_path / "part-0"
    data.write_text(INFER_LINES)
    ds = paddle.distributed.InMemoryDataset()
    ds.init(use_var=use_var, pipe_command="cat", batch_size=2, thread_num=1)
    ds.update_settings(parse_ins_id=True, parse_content=True)
    ds.set_filelist([str(data)])
    ds.load_into_memory()
    main._fleet_opt = {"dump_fields_path": str(tmp_path / "dump"), "dump_fields": [pooled.name, score.name, "ids",
                                                                                 "no_such_var"]}
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    exe.infer_from_dataset(main, ds)
    lines = (tmp_path / "dump" / "part-000-00000").read_text().splitlines()
    # emb rows: id k is [2k, 2k + 1] / 8; the first SGD step runs before ins_c's batch
    assert lines[0] == f"ins_a\tpage_1\t{pooled.name}:2:1.75,2\t{score.name}:1:3.75\tids:2:3,4"
    assert lines[1] == f"ins_b\tpage_2\t{pooled.name}:2:1.25,1.375\t{score.name}:1:2.625\tids:1:5"
    assert lines[2].startswith(f"ins_c\tpage_3\t{pooled.name}:2:") and lines[2].endswith("\tids:3:6,7,8")
    assert len(lines) == 3
    main._fleet_opt = None  # no dump: the ids are dropped before the batches are fed
    exe.train_from_dataset(main, ds)

    bad = tmp_path / "bad"
    bad.write_text("2 3 4 1 1\n")  # no instance id
    ds.set_filelist([str(bad)])
    with pytest.raises(MultiSlotError, match="line 1: the instance id .* must come first as `1 <token>`"):
        ds.load_into_memory()
