"""DistributedStrategy.sparse_table_configs on real pservers: a sparse_embedding trained by
the accessor and SGD rules the configuration names (psjob.foundation.tables.accessor), under
`psjob launch` with one pserver and one trainer (tests/component/scripts/sparse_table_accessor.py).
The expected rows are Paddle 3.0.0's for the same program, batches and configuration
(tests/unit/test_sparse_sgd_rules.py says how they were made)."""
import json

import numpy as np

A = "accessor."
# The batches of tests/unit/test_sparse_sgd_rules.py: rows of [id, w0, w1, w2, w3].
BATCHES = [
    [[1, 0.1, -0.2, 0.3, 0.4], [2, 0.5, 0.6, -0.7, 0.8], [1, 0.9, 1.0, 1.1, -1.2], [3, 1.3, 1.4, 1.5, 1.6]],
    [[2, -0.3, 0.2, 0.1, 0.4], [2, 0.5, -0.6, 0.7, 0.2], [5, 0.1, 0.1, 0.1, 0.1], [1, 1.0, -1.0, 0.5, 0.25]],
    [[1, 0.2, 0.3, -0.4, 0.5], [2, -0.1, 0.9, 0.3, -0.2], [3, 0.7, -0.5, 0.2, 0.1]],
]


def rules(name, sub, embed, embedx):
    out = {A + "embed_sgd_param.name": name, A + "embedx_sgd_param.name": name}
    for side, fields in (("embed", embed), ("embedx", embedx)):
        out.update({f"{A}{side}_sgd_param.{sub}.{k}": v for k, v in fields.items()})
    return out


def run(tmp_path, launch, script, read_logs, config, batches, shrink=0):
    log = tmp_path / "log"
    r = launch(["--server_num", "1", "--worker_num", "1", "--mode", "async", "--log_dir", str(log),
                script("sparse_table_accessor.py"), "--config", json.dumps(config),
                "--batches", json.dumps(batches), "--shrink", str(shrink)])
    text = (log / "workerlog.0").read_text() if (log / "workerlog.0").exists() else ""
    got = [json.loads(line[len("RESULT "):]) for line in text.splitlines() if line.startswith("RESULT ")]
    return r, got, read_logs(log) if log.exists() else r.stderr


def test_the_pserver_trains_the_table_as_paddles_does(tmp_path, launch, script, read_logs):
    config = rules("SparseAdaGradSGDRule", "adagrad", {"learning_rate": 0.1, "initial_range": 0.0},
                   {"learning_rate": 0.1, "initial_range": 0.0})
    r, got, logs = run(tmp_path, launch, script, read_logs, config, BATCHES[:2])
    assert r.returncode == 0 and len(got) == 1, r.stderr + logs
    assert got[0]["ids"] == [1, 2, 3, 5, 7]
    # Paddle 3.0.0's rows; the trainer pushed its gradients times the batch size, and the
    # pserver divided them by the shows. Id 7 was only read: a new row, embed 0 (zero_init),
    # embedx not created yet.
    want = [[-0.146077, 0.1, -0.05, -0.025], [-0.0596077, 0.02, -0.04, -0.03], [-0.13, 0, 0, 0],
            [-0.01, 0, 0, 0], [0, 0, 0, 0]]
    np.testing.assert_allclose(np.array(got[0]["rows"]), want, rtol=2e-5, atol=2e-6)


def test_embedx_threshold_and_weight_bounds_on_the_pserver(tmp_path, launch, script, read_logs):
    config = rules("SparseAdaGradSGDRule", "adagrad", {"learning_rate": 0.1, "initial_range": 0.0},
                   {"learning_rate": 0.1, "initial_range": 0.0, "weight_bounds": [-0.03, 0.05]})
    config.update({A + "embedx_threshold": 1, A + "ctr_accessor_param.nonclk_coeff": 0.5})
    r, got, logs = run(tmp_path, launch, script, read_logs, config, BATCHES)
    assert r.returncode == 0 and len(got) == 1, r.stderr + logs
    want = [[-0.16288, 0.021974, 0.00736795, -0.03], [-0.0500147, -0.03, -0.03, 0.02], [-0.185985, 0, 0, 0],
            [-0.01, 0, 0, 0], [0, 0, 0, 0]]
    np.testing.assert_allclose(np.array(got[0]["rows"]), want, rtol=2e-5, atol=2e-6)


def test_fleet_shrink_drops_the_rows_the_accessor_judges_stale(tmp_path, launch, script, read_logs):
    config = rules("SparseAdaGradSGDRule", "adagrad", {"learning_rate": 0.1, "initial_range": 0.0},
                   {"learning_rate": 0.1, "initial_range": 0.0})
    config.update({A + "ctr_accessor_param.show_click_decay_rate": 0.5,
                   A + "ctr_accessor_param.delete_threshold": 0.1})
    r, got, logs = run(tmp_path, launch, script, read_logs, config, BATCHES[:2], shrink=1)
    assert r.returncode == 0 and len(got) == 1, r.stderr + logs
    # Scores after the decay: ids 1, 2: 0.15 (kept, trained); ids 3, 5: 0.05 (dropped: read
    # again, they are new rows).
    want = [[-0.146077, 0.1, -0.05, -0.025], [-0.0596077, 0.02, -0.04, -0.03], [0, 0, 0, 0],
            [0, 0, 0, 0], [0, 0, 0, 0]]
    np.testing.assert_allclose(np.array(got[0]["rows"]), want, rtol=2e-5, atol=2e-6)


def test_dims_that_do_not_add_up_stop_the_job_with_the_reason(tmp_path, launch, script, read_logs):
    r, got, logs = run(tmp_path, launch, script, read_logs, {A + "fea_dim": 4}, BATCHES[:1])
    assert r.returncode != 0 and not got
    assert "fea_dim is 4, but the embedding 'embedding' has 4 columns, so a SparseAccessor's fea_dim must be 6" \
        in logs + r.stderr
