"""The parameter-server side of paddle.distributed as Paddle documents it, on small programs of
our own: InMemoryDataset's input_type, _init_distributed_settings and set_date; a dataset
trained by a program that reads none of its slots; fleet.distributed_optimizer before
fleet.init; a non-distributed fleet's job calls; DistributedStrategy.fs_client_param and
save_to_prototxt / load_from_prototxt.

Paddle 3.0.0 (CPU build, legacy static graph: FLAGS_enable_pir_api=0) produced every pinned
value and behaviour here, on the same programs and files.
"""
import logging
import re

import pytest

import psjob as paddle
from psjob.distributed import InMemoryDataset, QueueDataset
from psjob.distributed.fleet import fleet_api
from psjob.distributed.fleet.base.role_maker import PaddleCloudRoleMaker
from psjob.distributed.fleet.strategy import DistributedStrategy
from psjob.fleet import Fleet

# Two ragged int64 slots a line: "count ids... count ids...".
LINES = "2 1 2 1 5\n1 3 1 6\n3 7 8 9 1 4\n"


@pytest.fixture
def static():
    paddle.enable_static()  # psjob runs static graphs only: there is no mode to go back to


def _slots():
    return [paddle.static.data(name=n, shape=[None, 1], dtype="int64", lod_level=1) for n in ("s1", "s2")]


def _sums_of_s1(tmp_path, capsys, input_type, batch_size):
    """What train_from_dataset prints for sum(s1) batch by batch."""
    path = tmp_path / "a.txt"
    path.write_text(LINES)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        slots = _slots()
        total = paddle.sum(paddle.cast(slots[0], "float32"))
    ds = InMemoryDataset()
    ds.init(batch_size=batch_size, thread_num=1, input_type=input_type, pipe_command="cat", use_var=slots)
    ds.set_filelist([str(path)])
    ds.load_into_memory()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    capsys.readouterr()
    exe.train_from_dataset(main, ds, fetch_list=[total], fetch_info=["o"], print_period=1)
    return [float(v) for v in re.findall(r"o: \[?([-\d.e+]+)", capsys.readouterr().out)]


def test_input_type_1_reads_a_line_as_a_batch_and_needs_batch_size_1(tmp_path, capsys, static):
    # Paddle 3.0.0 printed o[1]:[3], [3], [24] for both input types with batch_size=1, and
    # failed the pass of input_type=1, batch_size=2 ("the sparse tensor lod size must be 2").
    assert _sums_of_s1(tmp_path, capsys, 0, 1) == [3.0, 3.0, 24.0]
    assert _sums_of_s1(tmp_path, capsys, 1, 1) == [3.0, 3.0, 24.0]
    assert _sums_of_s1(tmp_path, capsys, 0, 2) == [6.0, 24.0]
    with pytest.raises(ValueError, match=r"input_type=1 reads each line as one whole batch, so batch_size must "
                                         r"be 1, got 2"):
        _sums_of_s1(tmp_path, capsys, 1, 2)
    for bad in (2, -1, True):
        with pytest.raises(ValueError, match=r"0 \(one example per line\) or 1 \(one batch per line\)"):
            QueueDataset().init(input_type=bad)
    ds = InMemoryDataset()
    ds.update_settings(input_type=1)  # settings only: the batch size is checked when a pass reads
    ds._set_input_type(0)
    assert ds.input_type == 0


def test_init_distributed_settings_takes_paddles_keys(static):
    ds = InMemoryDataset()
    ds._init_distributed_settings(parse_ins_id=True, parse_content=True, fea_eval=True, candidate_size=7,
                                  merge_size=-1, fleet_send_batch_size=1024, fleet_send_sleep_seconds=2)
    assert ds._parse_ins_id and ds._parse_content and ds._fea_eval_candidates == 7
    ds._init_distributed_settings(fea_eval=True)  # Paddle's default candidate size
    assert ds._fea_eval_candidates == 10000
    ds._init_distributed_settings()
    assert not ds._parse_ins_id and not ds._parse_content
    with pytest.raises(ValueError, match="does not merge examples by line id"):
        ds._init_distributed_settings(merge_size=2)
    with pytest.raises(TypeError, match=r"unknown setting\(s\) \['parse_insid'\]"):
        ds._init_distributed_settings(parse_insid=True)
    ds._set_batch_size(3), ds._set_thread(2), ds._set_pipe_command("cat")
    assert (ds.batch_size, ds.thread_num) == (3, 2)


def test_set_date_takes_eight_digits():
    ds = InMemoryDataset()
    ds.set_date("20211111")
    assert ds.date == (2021, 11, 11)
    for bad in ("2021111", "2021-11-11", None):
        with pytest.raises(ValueError, match="eight digits, YYYYMMDD"):
            ds.set_date(bad)


def test_a_program_without_the_datasets_slots_trains_over_it(tmp_path, static):
    # Paddle 3.0.0 trains a fresh, empty Program from a loaded dataset and returns None.
    path = tmp_path / "a.txt"
    path.write_text(LINES)
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        slots = _slots()
    ds = InMemoryDataset()
    ds.init(batch_size=1, thread_num=2, use_var=slots, pipe_command="cat")
    ds.set_filelist([str(path)])
    ds.load_into_memory()
    exe = paddle.static.Executor(paddle.CPUPlace())
    assert exe.train_from_dataset(paddle.static.Program(), ds) is None


@pytest.fixture
def local_fleet(monkeypatch):
    local = Fleet()
    monkeypatch.setattr(fleet_api, "_fleet", local)
    return local


def _loss():
    x = paddle.static.data("x", [None, 2], "float32")
    return paddle.mean(paddle.static.nn.fc(x, 1))


def test_distributed_optimizer_before_init_keeps_the_optimizer(local_fleet, static):
    # Paddle 3.0.0 returns from distributed_optimizer before fleet.init (the strategy kept) and
    # fails at minimize, where the fleet needs the role.
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        loss = _loss()
        opt = fleet_api.distributed_optimizer(paddle.optimizer.SGD(0.1), DistributedStrategy())
        assert opt._learning_rate == 0.1  # the optimizer's own attributes show through
        with pytest.raises(fleet_api.FleetError, match=r"minimize\(loss\): call fleet.init\(\)"):
            opt.minimize(loss)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        loss = _loss()
        opt = fleet_api.distributed_optimizer(paddle.optimizer.SGD(0.1))
        fleet_api.init(PaddleCloudRoleMaker(environ={}))  # after distributed_optimizer, before minimize
        opt.minimize(loss)
    assert [op.type for op in main.global_block().ops].count("sgd") == 2


def test_a_non_distributed_fleets_job_calls_do_nothing(local_fleet, static, caplog, tmp_path):
    # Paddle 3.0.0's fleet.init() without a launcher: these log "... function doesn't work when
    # use non_distributed fleet." and return None (its is_non_distributed_check).
    fleet_api.init(PaddleCloudRoleMaker(environ={}))
    exe = paddle.static.Executor(paddle.CPUPlace())
    calls = [("init_worker", ()), ("init_server", ()), ("run_server", ()), ("stop_worker", ()),
             ("save_persistables", (exe, str(tmp_path / "m"))), ("load_model", ("nowhere", 0)),
             ("save_one_table", (0, "nowhere", 0)), ("load_one_table", (0, "nowhere", 0)),
             ("load_inference_model", ("nowhere", 1)), ("shrink", ()),
             ("save_dense_params", (exe, "nowhere")), ("save_cache_model", ("nowhere",)),
             ("save_cache_table", (0, 0)), ("print_table_stat", (0, 0, 0.1)), ("set_date", (0, "20211111"))]
    with caplog.at_level(logging.WARNING, logger="psjob.distributed"):
        for name, args in calls:
            assert getattr(fleet_api, name)(*args) is None, name
    for name, _ in calls:
        assert f"{name}() function doesn't work when use non_distributed fleet" in caplog.text
    assert not (tmp_path / "m").exists()  # as in Paddle, nothing is saved


def test_what_psjobs_pservers_lack_is_refused_by_name_in_a_job(local_fleet, static):
    fleet_api.init(PaddleCloudRoleMaker(environ={"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": "0",
                                                 "PADDLE_TRAINERS_NUM": "1",
                                                 "PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:6170"}))
    exe = paddle.static.Executor(paddle.CPUPlace())
    for call, args, named in [("save_dense_params", (exe, "d"), "save_persistables"),
                              ("save_cache_model", ("d",), "no cache tier"),
                              ("save_cache_table", (0, 0), "no cache tier"),
                              ("print_table_stat", (0, 0, 0.1), "no per-pass table statistics"),
                              ("set_date", (0, "20211111"), "keep no date")]:
        with pytest.raises(fleet_api.FleetError, match=rf"fleet.{call}\(\): .*{named}"):
            getattr(fleet_api, call)(*args)


def test_fs_client_param_merges_and_answers_as_attributes():
    # Paddle 3.0.0: each assignment sets the fields it names, an unknown key fails, and the
    # getter's message answers .uri/.user/...; str() shows the fields set.
    s = DistributedStrategy()
    assert s.fs_client_param.uri == "" and not s.fs_client_param
    s.fs_client_param = {"uri": "u"}
    s.fs_client_param = {"user": "v"}
    assert (s.fs_client_param.uri, s.fs_client_param.user, s.fs_client_param["passwd"]) == ("u", "v", "")
    assert dict(s.fs_client_param) == {"uri": "u", "user": "v"}
    assert str(s.fs_client_param) == 'uri: "u"\nuser: "v"\n'
    with pytest.raises(ValueError, match=r"unknown fs_client_param key\(s\) \['bogus'\]"):
        s.fs_client_param = {"uri": "w", "bogus": "1"}
    assert s.fs_client_param.uri == "u"
    with pytest.raises(TypeError, match="values are strings"):
        s.fs_client_param = {"uri": 3}


# What Paddle 3.0.0 wrote for a strategy with a_sync False, a_sync_configs max_merge_var_num 3,
# trainer_desc_configs dump_fields_path "x" and dump_fields a, b, fs_client_param uri/user,
# adam_d2sum, dgc and recompute_configs checkpoints x, y.
PADDLE_PROTOTXT = """dgc: true
a_sync: false
adam_d2sum: true
recompute_configs {
  checkpoints: "x"
  checkpoints: "y"
}
a_sync_configs {
  k_steps: 0
  max_merge_var_num: 3
}
trainer_desc_configs {
  dump_fields_path: "x"
  dump_fields: "a"
  dump_fields: "b"
}
fs_client_param {
  uri: "u"
  user: "me"
}
"""


def _check_loaded(t):
    assert t.a_sync is False and t.a_sync_configs["max_merge_var_num"] == 3
    assert t.trainer_desc_configs["dump_fields"] == ["a", "b"] and t.trainer_desc_configs["dump_fields_path"] == "x"
    assert t.adam_d2sum is True and t.dgc is True and t.recompute_configs == {"checkpoints": ["x", "y"]}
    assert (t.fs_client_param.uri, t.fs_client_param.user) == ("u", "me")


def test_a_strategy_goes_to_a_prototxt_and_back(tmp_path):
    src = tmp_path / "paddle.prototxt"
    src.write_text(PADDLE_PROTOTXT)
    t = DistributedStrategy()
    t.load_from_prototxt(str(src))
    _check_loaded(t)
    out = tmp_path / "psjob.prototxt"
    t.save_to_prototxt(str(out))
    text = out.read_text()
    assert "a_sync: false" in text and 'dump_fields: "a"\n  dump_fields: "b"' in text
    u = DistributedStrategy()
    u.load_from_prototxt(str(out))
    _check_loaded(u)
    DistributedStrategy().save_to_prototxt(str(out))
    assert out.read_text() == ""  # nothing set, nothing written (Paddle's default strategy writes no field)


def test_a_bad_prototxt_names_the_problem(tmp_path):
    bad = tmp_path / "bad.prototxt"
    for text, message in [("a_sync_configs {\n  k_steps: 1\n", "not closed"),
                          ("a_sync:\n", "line 1: field 'a_sync' has no value"),
                          ("}\n", "line 1: '}' closes no message"),
                          ("a_sync_configs {\n  bogus_key: 1\n}\n", r"unknown a_sync_configs key\(s\) \['bogus_key'\]")]:
        bad.write_text(text)
        with pytest.raises(ValueError, match=message):
            DistributedStrategy().load_from_prototxt(str(bad))
    s = DistributedStrategy()
    s._sparse_table_configs = {"emb": {}}  # as the setter keeps a checked entry
    with pytest.raises(ValueError, match="does not write sparse_table_configs"):
        s.save_to_prototxt(str(bad))
