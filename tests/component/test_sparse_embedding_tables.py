"""Fleet 2.x makes a sparse embedding a pserver table (psjob.fleet.sparse_tables), as Paddle's
parameter-server mode does: real pservers and trainers under `psjob launch`, the script
tests/component/scripts/sparse_embedding_tables.py."""
import json

import numpy as np
import pytest


def results(log_dir):
    out = []
    for w in range(2):
        text = (log_dir / f"workerlog.{w}").read_text()
        out += [json.loads(line[len("RESULT "):]) for line in text.splitlines() if line.startswith("RESULT ")]
    return out


def test_async_trains_every_sparse_embedding_as_a_pserver_table(tmp_path, script, launch, read_logs):
    log = tmp_path / "log"
    r = launch(["--server_num", "2", "--worker_num", "2", "--mode", "async", "--log_dir", str(log),
                script("sparse_embedding_tables.py"), "--save", str(tmp_path / "model")])
    assert r.returncode == 0, r.stderr + read_logs(log)
    got = results(log)
    assert len(got) == 2, read_logs(log)
    for res in got:
        # BIG (1000 x 4) and SMALL (50 x 2) are each a pserver table, prefetched by id, never
        # pulled whole.
        assert res["prefetched"] == ["BIG", "SMALL"], res
        assert not any(n.startswith(("BIG", "SMALL")) for n in res["received"]), res
        # The trainer keeps the parameters, as Paddle's does, and after barrier_worker holds the
        # pservers' rows for every id it looked up, of both tables.
        assert res["local_big_shape"] == [1000, 4] and res["local_small_shape"] == [50, 2]
        assert res["local_equals_pserver_after_barrier"], res
        # The evaluation program cloned before minimize reads the rows on the pservers, trained
        # (ids < 200) or not.
        np.testing.assert_array_equal(np.array(res["eval_rows"]), np.array(res["pserver_rows"]))
        np.testing.assert_array_equal(np.array(res["eval_small_rows"]), np.array(res["pserver_small_rows"]))
        assert res["loss_last"] < 0.5 * res["loss_first"], res
    # fleet.save_inference_model holds both tables whole (pulled from the pservers): a fresh
    # process predicts what the trained job's evaluation program did.
    import psjob as paddle
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    program, feeds, targets = paddle.static.load_inference_model(str(tmp_path / "model"), exe,
                                                                 model_filename=None, params_filename=None)
    assert feeds == ["ids"]
    first = next(res for res in got if res["worker"] == 0)
    (pred,) = exe.run(program, feed={"ids": np.array(first["probe"], dtype="int64")}, fetch_list=targets)
    np.testing.assert_allclose(np.asarray(pred).reshape(-1), first["predictions"], rtol=1e-6, atol=1e-6)


def test_sync_training_keeps_sparse_embeddings_dense_parameters(tmp_path, script, launch, read_logs):
    log = tmp_path / "log"
    r = launch(["--server_num", "1", "--worker_num", "2", "--mode", "sync", "--log_dir", str(log),
                script("sparse_embedding_tables.py"), "--sync", "--steps", "20"])
    assert r.returncode == 0, r.stderr + read_logs(log)
    got = results(log)
    assert len(got) == 2, read_logs(log)
    for res in got:
        assert res["prefetched"] == [] and "BIG" in res["received"], res


@pytest.mark.parametrize("mode", ["async", "half_async", "sync", "geo"])
def test_which_modes_promote(mode):
    """Only the asynchronous modes make a table: sync keeps single-machine equality, geo
    trains local copies of every parameter."""
    import psjob as paddle
    from psjob.fleet.sparse_tables import promote_sparse_embedding
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        ids = paddle.static.data("ids", [None, 1], "int64")
        dense = paddle.nn.Embedding(10, 2, weight_attr=paddle.ParamAttr(name="DENSE"))(ids)
        sparse = paddle.nn.Embedding(10, 2, sparse=True, weight_attr=paddle.ParamAttr(name="SPARSE"))(ids)
        paddle.mean(dense + sparse)
    got = promote_sparse_embedding(main, mode)
    assert got == (["SPARSE"] if mode in ("async", "half_async") else [])
    flags = {op.input("W")[0]: op.attr("is_distributed") for op in main.global_block().ops if op.type == "lookup_table"}
    assert flags == {"DENSE": False, "SPARSE": bool(got)}


def test_every_sparse_embedding_is_promoted_in_first_lookup_order_beside_a_user_table():
    """Each sparse embedding only lookups read becomes its own table; one the user made
    distributed stays as it is, one another op reads stays dense."""
    import psjob as paddle
    from psjob.fleet.sparse_tables import promote_sparse_embedding
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        ids = paddle.static.data("ids", [None, 1], "int64")
        a = paddle.nn.Embedding(10, 2, sparse=True, weight_attr=paddle.ParamAttr(name="A"))(ids)
        user = paddle.static.nn.sparse_embedding(ids, [10, 2], param_attr=paddle.ParamAttr(name="USER"))
        shared = paddle.nn.Embedding(10, 2, sparse=True, weight_attr=paddle.ParamAttr(name="SHARED"))
        b = paddle.nn.Embedding(30, 3, sparse=True, weight_attr=paddle.ParamAttr(name="B"))(ids)
        paddle.mean(a + user + shared(ids)) + paddle.mean(b) + paddle.mean(shared.weight)
    assert promote_sparse_embedding(main, "async") == ["A", "B"]
    flags = {op.input("W")[0]: op.attr("is_distributed") for op in main.global_block().ops if op.type == "lookup_table"}
    assert flags == {"A": True, "USER": True, "SHARED": False, "B": True}
