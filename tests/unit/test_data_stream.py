"""The stream reader (psjob.dataset.stream) over real folders on disk: time order, done
markers, the round-robin deal over trainers, and positions that resume exactly."""
import os
import sys
import threading

import pytest

from psjob.dataset.stream import (
    Stream,
    StreamConfig,
    StreamError,
    StreamPosition,
    StreamReader,
    check_layout,
    folder_time,
)
from psjob.foundation.settings import Settings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import streamkit  # noqa: E402


def numbers(batch):
    return [streamkit.example_number(i) for i in batch.ids[streamkit.AUDIT_SLOT]]


def take(reader, count):
    out = []
    for batch, position in reader:
        out.append((numbers(batch), position))
        if len(out) == count:
            break
    return out


def config(root, **kw):
    return StreamConfig(root=str(root), poll_seconds=0.05, **kw)


def three_folders(root):
    n = streamkit.write_folder(root, "20261128/2300", 0, [25, 10])
    n = streamkit.write_folder(root, "20261128/2305", n, [7])
    n = streamkit.write_folder(root, "20261129/0000", n, [30, 0, 3])
    return n


def test_folders_are_read_in_time_order_in_batches_that_never_span_folders(tmp_path):
    total = three_folders(tmp_path)
    streamkit.write_folder(tmp_path, "20261129/0005", total, [5], done=False)  # no marker yet
    (tmp_path / "20261128" / "notes").mkdir()  # not a folder of the layout: ignored
    stop = threading.Event()
    reader = StreamReader(config(tmp_path), 0, 1, 16, stop=stop, on_idle=stop.set)
    got = [(numbers(b), p) for b, p in reader]
    assert [len(n) for n, _ in got] == [12, 12, 11, 7, 11, 11, 11]  # rounds as equal as can be, <= 16
    assert [k for n, _ in got for k in n] == list(range(total))
    assert got[2][1].done == "20261128/2300" and got[2][1].folder == ""
    assert got[1][1] == StreamPosition("20261128/2300", "part-00000", got[1][1].offset, 24, "", 0.0)
    assert got[-1][1].done == "20261129/0000"


def test_trainers_deal_the_batches_round_robin_and_finish_every_folder_together(tmp_path):
    total = three_folders(tmp_path)
    runs = []
    for t in range(3):
        stop = threading.Event()
        runs.append([(numbers(b), p) for b, p in StreamReader(config(tmp_path), t, 3, 8, stop=stop,
                                                                on_idle=stop.set)])
    seen = sorted(k for run in runs for n, _ in run for k in n)
    assert seen == list(range(total))  # each example to exactly one trainer
    assert len({len(run) for run in runs}) == 1  # the same number of steps: sync rounds line up
    for r in range(len(runs[0])):
        assert runs[0][r][1] == runs[1][r][1] == runs[2][r][1]  # and end at the same place
    rounds = min(len(r) for r in runs)
    for r in range(rounds):  # every trainer ends round r at the same place of the stream
        following = set()
        for t in range(3):
            stop = threading.Event()
            rest = [k for b, _ in StreamReader(config(tmp_path), 0, 1, 8, start=runs[t][r][1], stop=stop,
                                               on_idle=stop.set) for k in numbers(b)]
            following.add(tuple(rest))
        assert len(following) == 1, r


@pytest.mark.parametrize("trainers_after", [1, 2, 3])
def test_resuming_from_any_round_trains_the_rest_once(tmp_path, trainers_after):
    total = three_folders(tmp_path)
    for cut in range(1, 7):
        before = []
        for t in range(2):
            reader = StreamReader(config(tmp_path), t, 2, 6)
            before += take(reader, cut)
        assert before[cut - 1][1] == before[-1][1]  # both trainers ended round `cut` here
        resume = before[-1][1]
        after = []
        for t in range(trainers_after):
            stop = threading.Event()
            after += [k for b, _ in StreamReader(config(tmp_path), t, trainers_after, 6, start=resume,
                                                   stop=stop, on_idle=stop.set)
                      for k in numbers(b)]
        trained = sorted([k for n, _ in before for k in n] + after)
        assert trained == list(range(total)), (cut, resume)


def test_a_new_folder_is_followed_once_its_marker_appears_and_malformed_lines_are_skipped(tmp_path):
    n = streamkit.write_folder(tmp_path, "2026112823", 0, [4], marker="donefile",
                               extra={"part-00009": b"garbage line\n" + streamkit.line(4)})
    streamkit.write_folder(tmp_path, "2026112900", n + 1, [3], done=False)
    idle = []

    def on_idle():
        idle.append(1)
        if len(idle) == 2:
            streamkit.mark(tmp_path, "2026112900", "donefile")
        if len(idle) > 3:
            stop.set()
    stop = threading.Event()
    reader = StreamReader(config(tmp_path, layout="%Y%m%d%H", done_file="donefile"), 0, 1, 10,
                          stop=stop, on_idle=on_idle)
    got = [k for b, _ in reader for k in numbers(b)]
    assert got == list(range(n + 4))
    assert reader.stats.skipped_total == 1


def test_the_start_folder_skips_older_folders(tmp_path):
    three_folders(tmp_path)
    stop = threading.Event()
    reader = StreamReader(config(tmp_path, start="20261128/2305"), 0, 1, 100, stop=stop, on_idle=stop.set)
    assert [numbers(b)[0] for b, _ in reader] == [35, 42]
    assert [f for f in Stream(config(tmp_path)).folders(after="20261128/2300")] == ["20261128/2305",
                                                                                  "20261129/0000"]


def test_bad_settings_say_what_to_change(tmp_path):
    with pytest.raises(StreamError, match="%Y, %m and %d"):
        check_layout("%H%M")
    with pytest.raises(StreamError, match="fields %Y %m %d %H %M"):
        check_layout("%Y%m%d/%S")
    with pytest.raises(StreamError, match="does not match the layout"):
        config(tmp_path, start="2026-11-28")
    with pytest.raises(StreamError, match="plain file name"):
        config(tmp_path, done_file="a/b")
    with pytest.raises(StreamError, match="pollSeconds"):
        StreamConfig(root="x", poll_seconds=0)
    with pytest.raises(StreamError, match="unknown stream field"):
        StreamConfig.from_dict({"root": "x", "donefile": "y"})
    assert folder_time("%Y%m%d/%H%M", "19700101/0001") == 60.0


def test_a_folder_smaller_than_the_trainer_count_gives_its_examples_to_the_first_trainers(tmp_path, caplog):
    n = streamkit.write_folder(tmp_path, "20261128/2300", 0, [1])
    n = streamkit.write_folder(tmp_path, "20261128/2305", n, [9])
    runs = []
    for t in range(2):
        stop = threading.Event()
        runs.append([numbers(b) for b, _ in StreamReader(config(tmp_path), t, 2, 4, stop=stop, on_idle=stop.set)])
    assert runs[0][0] == [0] and all(0 not in b for b in runs[1])
    assert sorted(k for run in runs for b in run for k in b) == list(range(n))
    assert "holds 1 example(s) for 2 trainers" in caplog.text


def test_the_jobs_stream_setting_is_checked_with_a_usage_error():
    from psjob.training import stream
    from psjob.training.options import UsageError
    assert stream.config_from(Settings({})) is None
    assert stream.config_from(Settings({"PSJOB_DATA_STREAM": '{"root": "s3://b/p", "pollSeconds": 5}'})) == \
        StreamConfig(root="s3://b/p", poll_seconds=5.0)
    for raw, expected in (('{"root": "/d", "layout": "%H"}', "must contain %Y, %m and %d"),
                          ("[1]", "must be a JSON object"), ("nope", "is not JSON"),
                          ('{"root": "/d", "x": 1}', "unknown stream field")):
        with pytest.raises(UsageError, match=expected):
            stream.config_from(Settings({"PSJOB_DATA_STREAM": raw}))
