"""paddle.distributed.InMemoryDataset / QueueDataset, the MultiSlot protocol and
Executor.train_from_dataset, against exe.run over the same batches."""
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.distributed import InMemoryDataset, QueueDataset
from psjob.distributed.dataset import MultiSlotError
from psjob.distributed.fleet import MultiSlotDataGenerator, MultiSlotStringDataGenerator
from psjob.fluid.executor import observe_steps

N_DENSE, VOCAB = 3, 50

# A PaddleRec-style reader: TSV "label<TAB>d1,d2,d3<TAB>id id ..." → MultiSlot lines.
READER = textwrap.dedent("""
    import psjob.distributed.fleet as fleet

    class Reader(fleet.MultiSlotDataGenerator):
        def generate_sample(self, line):
            def reader():
                label, dense, ids = line.rstrip("\\n").split("\\t")
                yield [("label", [int(label)]), ("dense", [float(v) for v in dense.split(",")]),
                       ("ids", [int(v) for v in ids.split()])]
            return reader

    Reader().run_from_stdin()
""")


def write_raw(path, rng, n):
    w = rng.normal(size=N_DENSE)
    lines = []
    for _ in range(n):
        dense = rng.random(N_DENSE).round(4)
        ids = rng.integers(0, VOCAB, size=rng.integers(1, 4))
        label = int(dense @ w + (ids % 7 == 0).sum() > 0.3)
        lines.append(f"{label}\t{','.join(map(str, dense))}\t{' '.join(map(str, ids))}\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    return [str(write_raw(tmp_path / f"part-{i}", rng, 75)) for i in range(3)]


@pytest.fixture
def reader_cmd(tmp_path):
    script = tmp_path / "reader.py"
    script.write_text(READER)
    return f"{sys.executable} {script}"


def build(seed=5):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        dense = fluid.layers.data(name="dense", shape=[N_DENSE], dtype="float32")
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.sequence_pool(fluid.layers.embedding(ids, size=[VOCAB, 4], is_sparse=True), "sum")
        logit = fluid.layers.fc(fluid.layers.concat([dense, emb], axis=1), 1)
        prob = fluid.layers.sigmoid(logit)
        loss = fluid.layers.mean(fluid.layers.log_loss(prob, fluid.layers.cast(label, "float32")))
        fluid.optimizer.Adam(0.05).minimize(loss)
    return main, startup, [label, dense, ids], loss


def dataset_of(kind, use_var, files, cmd, batch_size=16, thread_num=1):
    ds = kind()
    ds.init(batch_size=batch_size, thread_num=thread_num, use_var=use_var, pipe_command=cmd)
    ds.set_filelist(files)
    return ds


def test_the_generator_writes_multislot_lines_and_refuses_what_paddle_refuses(capsys, monkeypatch):
    import io

    class Gen(MultiSlotDataGenerator):
        def generate_sample(self, line):
            def reader():
                a, b = line.split()
                yield [("click", [int(a)]), ("dense", [float(b), 0.5]), ("c1", [17, 3])]
            return reader

    monkeypatch.setattr(sys, "stdin", io.StringIO("1 0.25\n0 2\n"))
    Gen().run_from_stdin()
    assert capsys.readouterr().out == "1 1 2 0.25 0.5 2 17 3\n1 0 2 2.0 0.5 2 17 3\n"
    with pytest.raises(ValueError, match="slot 'c1' is empty: pad it"):
        Gen()._gen_str([("click", [1]), ("c1", [])])
    gen = Gen()
    gen._gen_str([("click", [1]), ("c1", [2])])
    with pytest.raises(ValueError, match="must carry the same slots"):
        gen._gen_str([("c1", [2]), ("click", [1])])
    with pytest.raises(ValueError, match="must be an int or a float"):
        Gen()._gen_str([("click", ["1"])])
    # a zip of names and values, as Paddle's _gen_str lists it (PaddleRec's match/dssm
    # bq_reader_train_insid.py yields zip(feature_name, input_data)), in both generators
    assert Gen()._gen_str(zip(["click", "c1"], [[1], [2, 3]])) == "1 1 2 2 3\n"
    assert MultiSlotStringDataGenerator()._gen_str(zip(["id", "q"], [["ins_1"], ["0", "1"]])) == "1 ins_1 2 0 1\n"
    with pytest.raises(ValueError, match="a list or tuple of \\(name, values\\), got dict"):
        Gen()._gen_str({"click": [1]})


def test_a_pipe_command_dataset_loads_the_examples_of_every_file(files, reader_cmd):
    _, _, use_var, _ = build()
    ds = dataset_of(InMemoryDataset, use_var, files, reader_cmd, batch_size=1000, thread_num=2)
    ds.load_into_memory()
    assert ds.get_memory_data_size() == 225
    (feed,) = list(ds._thread_feeds(1)[0])
    lines = [line.split("\t") for f in files for line in open(f)]
    assert feed["label"].tolist() == [[int(parts[0])] for parts in lines]
    np.testing.assert_array_equal(feed["dense"], np.array([[float(v) for v in p[1].split(",")] for p in lines],
                                                          np.float32))
    ids, (lod,) = feed["ids"]
    want = [[int(v) for v in p[2].split()] for p in lines]
    assert ids.ravel().tolist() == [i for row in want for i in row]
    assert lod.tolist() == np.cumsum([0] + [len(r) for r in want]).tolist()
    ds.release_memory()
    assert ds.get_memory_data_size() == 0


def test_train_from_dataset_equals_exe_run_over_the_same_batches(files, reader_cmd):
    results = []
    for use_dataset in (True, False):
        main, startup, use_var, loss = build()
        scope = fluid.Scope()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup, scope=scope)
        ds = dataset_of(InMemoryDataset, use_var, files, reader_cmd)
        ds.load_into_memory()
        ds.set_shuffle_seed(1)
        ds.local_shuffle()
        for _ in range(2):
            if use_dataset:
                exe.train_from_dataset(main, ds, scope=scope, thread=1)
            else:
                for feed in ds._thread_feeds(1)[0]:
                    exe.run(main, feed=feed, scope=scope)
        results.append({p.name: np.array(scope.vars[p.name]) for p in main.all_parameters()})
    assert results[0].keys() == results[1].keys()
    for name in results[0]:
        np.testing.assert_array_equal(results[0][name], results[1][name])


def test_two_hogwild_threads_train_and_see_every_example_once_per_epoch(files, reader_cmd, capsys):
    main, startup, use_var, loss = build()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    ds = dataset_of(InMemoryDataset, use_var, files, reader_cmd, batch_size=8, thread_num=2)
    ds.load_into_memory()
    ds.local_shuffle()
    seen, threads = [], set()
    lock = threading.Lock()

    def record(executor, program, feed, run_scope, seconds):
        with lock:
            seen.extend(feed["dense"].tolist())
            threads.add(threading.current_thread().name)
    whole = dataset_of(InMemoryDataset, use_var, files, reader_cmd, batch_size=1000)
    whole.load_into_memory()
    (all_feed,) = list(whole._thread_feeds(1)[0])
    before = exe.run(main.clone(for_test=True), feed=all_feed, fetch_list=[loss], scope=scope)[0]
    remove = observe_steps(main, record)
    try:
        for epoch in range(3):
            seen.clear()
            exe.train_from_dataset(main, ds, scope=scope, thread=2, fetch_list=[loss], fetch_info=["loss"],
                                   print_period=5)
            assert sorted(map(tuple, seen)) == sorted(map(tuple, all_feed["dense"].tolist())), epoch
    finally:
        remove()
    assert threads == {"psjob-hogwild-0", "psjob-hogwild-1"}
    after = exe.run(main.clone(for_test=True), feed=all_feed, fetch_list=[loss], scope=scope)[0]
    assert after.item() < 0.8 * before.item(), (before, after)
    assert "[thread 1] batch 5: loss:" in capsys.readouterr().out


def test_a_queue_dataset_streams_the_same_batches_as_an_unshuffled_in_memory_one(files):
    tmp = [f + ".ms" for f in files]
    _, _, use_var, _ = build()
    for raw, out in zip(files, tmp):  # MultiSlot files read with pipe_command "cat"
        with open(out, "w") as f:
            for label, dense, ids in (line.rstrip("\n").split("\t") for line in open(raw)):
                d, i = dense.split(","), ids.split()
                f.write(f"1 {label} {len(d)} {' '.join(d)} {len(i)} {' '.join(i)}\n")
    queue = dataset_of(QueueDataset, use_var, tmp, "cat", batch_size=32)
    memory = dataset_of(InMemoryDataset, use_var, tmp, "cat", batch_size=32)
    memory.load_into_memory()
    # QueueDataset batches each file on its own: compare file by file.
    got = [b for b in queue._thread_feeds(1)[0]]
    assert len(got) == 3 * 3  # 75 examples per file → 32 + 32 + 11
    flat = np.concatenate([b["dense"] for b in got])
    np.testing.assert_array_equal(flat, np.concatenate([b["dense"] for b in memory._thread_feeds(1)[0]]))


def test_bad_multislot_lines_and_commands_are_named(tmp_path):
    _, _, use_var, _ = build()
    cases = {
        "1 1 3 0.1 0.2 0.3 0\n": "slot 2 ('ids'): count 0 but",
        "1 1 2 0.1 0.2 1 7\n": "slot 1 ('dense'): 2 values, the variable takes 3",
        "1 1 3 0.1 0.2 0.3 1 x\n": "value 'x' is not an integer",
        "1 1 3 0.1 0.2 0.3 1 18446744073709551616\n": "value '18446744073709551616' does not fit int64",
        "1 1 3 0.1 0.2 0.3 1 7 9\n": "1 values left after the 3 slots",
    }
    for i, (line, message) in enumerate(cases.items()):
        f = tmp_path / f"bad{i}"
        f.write_text("1 0 3 0.1 0.2 0.3 2 4 5\n" + line)
        ds = dataset_of(InMemoryDataset, use_var, [str(f)], "cat")
        with pytest.raises(MultiSlotError, match="line 2") as err:
            ds.load_into_memory()
        assert message in str(err.value)
    ds = dataset_of(InMemoryDataset, use_var, [str(f)], "exit 3")
    with pytest.raises(MultiSlotError, match="exited 3"):
        ds.load_into_memory()
    with pytest.raises(FileNotFoundError):
        ds.set_filelist([str(tmp_path / "missing")])
    # fs_name/fs_ugi configure Paddle's HDFS reads of hdfs:/afs: entries only; local files are
    # read whatever they say (as Paddle 3.0.0 does), an hdfs:// entry is refused
    good = tmp_path / "good"
    good.write_text("1 0 3 0.1 0.2 0.3 2 4 5\n")
    with_fs = InMemoryDataset()
    with_fs.init(use_var=use_var, pipe_command="cat", fs_name="afs://xxx", fs_ugi="xxx,xxx")
    with_fs.set_filelist([str(good)])
    with_fs.load_into_memory()
    assert [len(feed["label"]) for feed in with_fs._thread_feeds(1)[0]] == [1]
    with_fs.update_settings(fs_name="", fs_ugi="")
    assert (with_fs.fs_name, with_fs.fs_ugi) == ("", "")
    with pytest.raises(OSError, match="unsupported scheme 'hdfs'"):
        dataset_of(InMemoryDataset, use_var, ["hdfs://nn/part-0"], "cat")
    with pytest.raises(OSError, match="unsupported scheme 'gs'"):  # s3:// is served: test_data_s3.py
        dataset_of(InMemoryDataset, use_var, ["gs://bucket/part-0"], "cat")


def test_the_vectorised_multislot_path_parses_as_the_line_by_line_one():
    from psjob.distributed.dataset import _parse_uniform, _Slot, parse_multislot
    _, _, use_var, _ = build()
    rng = np.random.default_rng(0)
    lines = [f"1 {rng.integers(0, 2)} 3 {' '.join(f'{v:.4f}' for v in rng.random(3))} 2 {rng.integers(0, 50)} "
             f"{rng.integers(0, 50)}\n" for _ in range(300)]
    data = "".join(lines).encode()
    slots = [_Slot(v) for v in use_var]
    fast = _parse_uniform(data, slots)
    assert fast is not None
    slow = parse_multislot(data.replace(b" ", b"  "), slots, "x")  # double spaces: the line path
    for s in range(len(slots)):
        np.testing.assert_array_equal(fast.values[s], slow.values[s])
        np.testing.assert_array_equal(fast.offsets[s], slow.offsets[s])


def test_batches_of_examples_in_file_order_are_slices_equal_to_the_gathered_ones():
    from psjob.distributed.dataset import _Slot, parse_multislot
    _, _, use_var, _ = build()
    rng = np.random.default_rng(1)
    lines = []
    for _ in range(70):  # ragged ids (1-3 per example): offsets that are not a multiple of the batch
        ids = rng.integers(0, 50, size=rng.integers(1, 4))
        lines.append(f"1 {rng.integers(0, 2)} 3 {' '.join(f'{v:.4f}' for v in rng.random(3))} "
                     f"{len(ids)} {' '.join(map(str, ids))}\n")
    uniform = [line.split(" ", 6)[:6] for line in lines]  # one id a line: the vectorised path's layout
    uniform = "".join(" ".join(head) + f" 1 {i}\n" for i, head in enumerate(uniform)).encode()
    slots = [_Slot(v) for v in use_var]
    ds = QueueDataset()
    ds.init(batch_size=32, use_var=use_var)
    for data in ("".join(lines).encode(), uniform):
        examples = parse_multislot(data, slots, "x")
        assert (examples.offsets[0] is examples.offsets[2]) == (data is uniform)  # label, ids: one width
        sliced = list(ds._batches(examples, None))
        gathered = list(ds._batches(examples, np.arange(len(examples))))
        assert [len(b["label"]) for b in sliced] == [32, 32, 6]
        for a, b in zip(sliced, gathered, strict=True):
            for name in ("label", "dense"):
                assert a[name].shape == b[name].shape
                np.testing.assert_array_equal(a[name], b[name])
            (ids_a, (lod_a,)), (ids_b, (lod_b,)) = a["ids"], b["ids"]
            np.testing.assert_array_equal(ids_a, ids_b)
            np.testing.assert_array_equal(lod_a, lod_b)
            assert lod_a[0] == 0 and lod_a[-1] == len(ids_a)


def test_multislot_output_is_parsed_in_blocks_and_a_bad_line_of_a_later_block_is_named(monkeypatch):
    from psjob.distributed import dataset
    _, _, use_var, _ = build()
    slots = [dataset._Slot(v) for v in use_var]
    lines = [f"1 {i % 2} 3 0.{i:04d} 1.5 2.5 2 {i} {i + 7}\n" for i in range(400)]
    data = "".join(lines).encode()
    whole = dataset.parse_multislot(data, slots, "x")
    monkeypatch.setattr(dataset, "_BLOCK_BYTES", 1000)  # ~12 blocks
    assert len(list(dataset._blocks(data))) > 10
    assert b"".join(dataset._blocks(data)) == data
    blocked = dataset.parse_multislot(data, slots, "x")
    for s in range(len(slots)):
        np.testing.assert_array_equal(blocked.values[s], whole.values[s])
        np.testing.assert_array_equal(blocked.offsets[s], whole.offsets[s])
    lines[333] = "1 0 3 0.5 1.5 2.5 2 1\n"  # one id where the count says two
    with pytest.raises(MultiSlotError, match="line 334"):
        dataset.parse_multislot("".join(lines).encode(), slots, "x")


def test_infer_from_dataset_runs_a_test_program_and_leaves_the_parameters(files, reader_cmd, capsys):
    main, startup, use_var, loss = build()
    test_program = main.clone(for_test=True)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    before = {p.name: np.array(scope.vars[p.name]) for p in main.all_parameters()}
    ds = dataset_of(QueueDataset, use_var, files, reader_cmd, batch_size=25, thread_num=3)
    exe.infer_from_dataset(test_program, ds, scope=scope, fetch_list=[loss], fetch_info=["loss"], print_period=1)
    for name, value in before.items():
        np.testing.assert_array_equal(scope.vars[name], value)
    printed = capsys.readouterr().out
    assert all(f"[thread {t}] batch 3: loss:" in printed for t in range(3))  # 3 files of 75: one per thread


@pytest.mark.parametrize("slot", [1, 2, 3])  # the label, a dense value, an id
def test_the_vectorised_multislot_path_never_accepts_a_value_the_line_path_refuses(slot):
    from psjob.distributed.dataset import _parse_uniform, _Slot, parse_multislot
    _, _, use_var, _ = build()
    slots = [_Slot(v) for v in use_var]
    good = ["1", "0", "3", "0.1", "0.2", "0.3", "1", "7"]
    where = {1: 1, 2: 3, 3: 7}[slot]
    accepted = 0
    for text in ["1.", ".5", "1e", "+1", "-0", "007", "1e5", "1E-3", "1e999", "--1", "1-2", "+", "e5",
                 "9223372036854775807", "9223372036854775808", "0.5e", "nan", "inf", "0x1", "1_0"]:
        tokens = list(good)
        tokens[where] = text
        data = (" ".join(tokens) + "\n").encode()
        fast = _parse_uniform(data, slots)
        try:
            slow = parse_multislot(data.replace(b" ", b"  "), slots, "x")  # double spaces: the line path
        except MultiSlotError:
            assert fast is None, text
            continue
        if fast is not None:
            accepted += 1
            for s in range(len(slots)):
                np.testing.assert_array_equal(fast.values[s], slow.values[s])
    assert accepted >= 2


def test_load_into_memory_runs_thread_num_pipe_commands_at_once(tmp_path):
    """Each command waits until all three have started (bounded): with thread_num=3 they meet,
    one at a time they could not."""
    _, _, use_var, _ = build()
    started = tmp_path / "started"
    started.mkdir()
    files = []
    for i in range(3):
        files.append(str(tmp_path / f"part-{i}"))
        (tmp_path / f"part-{i}").write_text(f"1 {i % 2} 3 0.1 0.2 0.3 2 {i} 7\n")
    meet = (f"touch {started}/$$; n=0; while [ $(ls {started} | wc -l) -lt 3 ]; do n=$((n + 1)); "
            "[ $n -gt 3000 ] && echo 'the others never started' >&2 && exit 7; sleep 0.01; done; cat")
    ds = dataset_of(InMemoryDataset, use_var, files, meet, thread_num=3)
    ds.load_into_memory()
    assert ds.get_memory_data_size() == 3


def test_a_pipes_output_is_parsed_as_it_streams_and_bad_lines_keep_their_numbers(tmp_path, monkeypatch):
    from psjob.distributed import dataset
    _, _, use_var, _ = build()
    lines = [f"1 {i % 2} 3 0.{i:04d} 1.5 2.5 2 {i} {i + 7}\n" for i in range(400)]
    path = tmp_path / "part-0"
    path.write_text("".join(lines).rstrip("\n"))  # the last line without its newline
    whole = dataset.parse_multislot(path.read_bytes(), [dataset._Slot(v) for v in use_var], "x")
    monkeypatch.setattr(dataset, "_BLOCK_BYTES", 1000)  # ~12 blocks read from the pipe
    ds = dataset_of(InMemoryDataset, use_var, [str(path)], "cat")
    ds.load_into_memory()
    for s in range(len(use_var)):
        np.testing.assert_array_equal(ds._examples.values[s], whole.values[s])
        np.testing.assert_array_equal(ds._examples.offsets[s], whole.offsets[s])
    lines[200] = "\n"  # a blank line still counts
    lines[333] = "1 0 3 0.5 1.5 2.5 2 x 1\n"
    path.write_text("".join(lines))
    with pytest.raises(MultiSlotError, match="line 334: slot 'ids': value 'x' is not an integer"):
        ds.load_into_memory()
    ds.set_pipe_command("cat; exit 3")  # a bad line, then the command fails: its exit status is named
    with pytest.raises(MultiSlotError, match="exited 3"):
        ds.load_into_memory()


def test_an_object_body_that_fails_mid_read_is_reported_after_the_command_exits(tmp_path):
    # The feed of an s3:// object into pipe_command: a command that exits 0 on the part it
    # got must not pass the load off as complete.
    import subprocess

    from psjob.distributed.dataset import _BLOCK_BYTES, _Feeder

    class Body:  # a store's object body whose connection drops after the first block
        def __init__(self):
            self.reads = 0

        def read(self, n):
            self.reads += 1
            if self.reads > 1:
                raise ConnectionResetError("connection reset by peer")
            return b"x" * _BLOCK_BYTES

    out = tmp_path / "got"
    proc = subprocess.Popen(f"cat > {out}", shell=True, stdin=subprocess.PIPE)
    feeder = _Feeder(Body(), proc.stdin, "s3://bucket/part-0")
    assert proc.wait(timeout=30) == 0
    feeder.join(30)
    assert out.stat().st_size == _BLOCK_BYTES
    with pytest.raises(OSError, match=r"reading s3://bucket/part-0 for pipe_command failed: "
                                      r"ConnectionResetError: connection reset by peer"):
        feeder.check()


def test_a_queue_dataset_starts_the_next_files_pipe_command_before_handing_out_this_files_batches(tmp_path):
    """The next file's command (often an interpreter importing a framework: seconds) starts
    while this file's batches train, not after them: with the first batch of file 0 in hand,
    file 1's command runs (each command records its start, bounded wait)."""
    _, _, use_var, _ = build()
    started = tmp_path / "started"
    started.mkdir()
    files = []
    for i in range(3):
        files.append(str(tmp_path / f"part-{i}"))
        (tmp_path / f"part-{i}").write_text(f"1 {i % 2} 3 0.1 0.2 0.3 2 {i} 7\n" * 20)
    ds = dataset_of(QueueDataset, use_var, files, f"touch {started}/$$; cat", batch_size=8)
    stream = ds._thread_feeds(1)[0]
    first = next(stream)
    assert first["ids"][0][0] == 0  # a batch of file 0
    deadline = time.monotonic() + 30
    while len(list(started.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(list(started.iterdir())) == 2, "file 1's pipe_command did not start during file 0's batches"
    rest = list(stream)
    assert 1 + len(rest) == 3 * 3 and len(list(started.iterdir())) == 3  # 20 examples per file: 8 + 8 + 4


def test_a_queue_dataset_stopped_early_stops_the_command_it_started_ahead(tmp_path):
    _, _, use_var, _ = build()
    files = []
    for i in range(2):
        files.append(str(tmp_path / f"part-{i}"))
        (tmp_path / f"part-{i}").write_text(f"1 {i % 2} 3 0.1 0.2 0.3 2 {i} 7\n" * 20)
    ds = dataset_of(QueueDataset, use_var, files, "cat", batch_size=8)
    stream = ds._stream(files)
    next(stream)
    ahead = stream.gi_frame.f_locals["ahead"]  # file 1's command, started with file 0's first batch
    assert ahead is not None and ahead.path == files[1]
    stream.close()
    assert ahead.proc.returncode is not None and ahead.body.closed and ahead.stderr.closed


def test_paddlerecs_in_memory_dataset_calls_set_what_paddle_sets_and_refuse_what_psjob_does_not_read(files, reader_cmd):
    """PaddleRec's static_ps InmemoryDatset helper: _set_use_ps_gpu(use_gpu), init with an empty
    fs_name/fs_ugi, then update_settings(parse_ins_id=False, parse_content=False). Paddle's
    update_settings changes what init set; a Paddle build without its GPU PS (heterps) resets
    use_ps_gpu to 0 and reads on the CPU."""
    _, _, use_var, _ = build()
    ds = InMemoryDataset()
    ds._set_use_ps_gpu(True)
    assert ds.use_ps_gpu == 0
    ds.init(use_var=use_var, pipe_command="cat", batch_size=4, thread_num=1, fs_name="", fs_ugi="")
    ds.set_filelist(files)
    ds.update_settings(parse_ins_id=False, parse_content=False, pipe_command=reader_cmd, batch_size=100,
                       thread_num=2, fleet_send_batch_size=1024)
    assert (ds.batch_size, ds.thread_num, ds.pipe_command) == (100, 2, reader_cmd)
    ds.load_into_memory()
    assert [len(feed["label"]) for feed in ds._thread_feeds(1)[0]] == [100, 100, 25]
    for setting, message in [({"merge_by_sid": True}, "without merge_by_sid"),
                             ({"merge_size": 2}, "does not merge"),
                             ({"input_type": 2}, r"0 \(one example per line\) or 1")]:
        with pytest.raises(ValueError, match=message):
            ds.update_settings(**setting)
    with pytest.raises(TypeError, match="unknown setting 'bach_size'"):
        ds.update_settings(bach_size=3)


def test_a_dense_slot_with_a_minus_one_batch_dimension_takes_a_multiple_of_its_width_per_example(tmp_path):
    """Paddle's dense slot (lod_level 0) infers a -1 batch dimension from the batch's values:
    Paddle 3.0.0 (legacy static graph) feeds `paddle.static.data("x", [-1, 1], "int64")` from
    MultiSlot lines `2 1 2 1 7`, `3 4 5 6 1 8`, `1 9 1 10` with batch_size 2 as x = [[1], [2],
    [4], [5], [6]] (shape [5, 1], no LoD), then [[9]] (paddle.static.Print of x in
    train_from_dataset). Paddle's own dist_fleet_ctr.py feeds its [-1, 1] id slots so. A count
    that is no multiple of the width is still refused (no tensor has that many values)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[-1, 1], dtype="int64")
        y = fluid.data(name="y", shape=[-1, 1], dtype="int64")
        pair = fluid.data(name="pair", shape=[-1, 2], dtype="float32")
    data = tmp_path / "part-0"
    data.write_text("2 1 2 1 7 2 0.5 1.5\n3 4 5 6 1 8 4 1 2 3 4\n1 9 1 10 2 7 8\n")
    for kind in (InMemoryDataset, QueueDataset):
        ds = dataset_of(kind, [x, y, pair], [str(data)], "cat", batch_size=2)
        if kind is InMemoryDataset:
            ds.load_into_memory()
        batches = list(ds._thread_feeds(1)[0])
        assert [b["x"].tolist() for b in batches] == [[[1], [2], [4], [5], [6]], [[9]]], kind
        assert [b["y"].tolist() for b in batches] == [[[7], [8]], [[10]]], kind
        assert [b["pair"].shape for b in batches] == [(3, 2), (1, 2)], kind
    for line, message in {"1 1 1 2 3 0.1 0.2 0.3\n": "slot 2 ('pair'): 3 values, the variable takes 2 or a multiple",
                          "1 1 1 2 0 \n": "slot 2 ('pair'): count 0 but"}.items():
        bad = tmp_path / "bad"
        bad.write_text(line)
        ds = dataset_of(InMemoryDataset, [x, y, pair], [str(bad)], "cat")
        with pytest.raises(MultiSlotError, match="line 1") as err:
            ds.load_into_memory()
        assert message in str(err.value)
