"""Every variable of a Fleet program stays fetchable, with what op-by-op execution gives.

tests/unit/test_fetch_every_variable.py's check through Fleet (sync, one or two trainers,
two pservers, as real processes under `psjob launch`): each model runs once with the
executor's embedding fusion (the default) and once with PSJOB_EMBEDDING_FUSION=0, and
trainer 0 fetches every variable of the program the user built from fleet.main_program
— an embedding's output among them, as users fetch it to inspect embeddings — each
value equal in both runs (tests/fetchkit.py).
"""
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fetchkit


def run(tmp_path, launch, script, read_logs, model, workers, fused):
    out = tmp_path / ("fused" if fused else "op_by_op")
    out.mkdir()
    r = launch(["--server_num", "2", "--worker_num", str(workers), "--log_dir", str(out / "log"),
                script("fetch_every_variable.py"), "--model", model, "--out", str(out)],
               env={"PSJOB_EMBEDDING_FUSION": "1" if fused else "0"})
    assert r.returncode == 0, r.stderr + read_logs(out / "log")
    return dict(np.load(out / "trainer0.npz")), json.loads((out / "trainer0.json").read_text())


# The Fluid 1.x CTR-DNN with its table distributed (embedding(is_distributed=True)), also with two
# trainers (whose gradients travel under per-trainer names), PaddleRec's DNN over sparse_embedding,
# and examples/paddle2's wide&deep (an nn.Embedding(sparse=True) table the trainer holds).
@pytest.mark.parametrize("model, workers", [("ctr", 1), ("ctr", 2), ("sparse_embedding_dnn", 1), ("wide_deep", 1)])
def test_every_variable_of_a_fleet_program_is_fetched_as_op_by_op_execution_gives(tmp_path, launch, script,
                                                                                 read_logs, model, workers):
    fused, fused_info = run(tmp_path, launch, script, read_logs, model, workers, True)
    plain, plain_info = run(tmp_path, launch, script, read_logs, model, workers, False)
    names = fused_info["names"]
    assert names == plain_info["names"] and any(n.startswith("embedding_") for n in names), names
    table_in_process = model == "wide_deep"
    assert ({"embedding_pool"} if table_in_process else {"merge_ids_pool"}) <= set(fused_info["warmup_kernels"])
    assert not fetchkit.FUSED_OPS & set(plain_info["warmup_kernels"])
    fetchkit.assert_same(fused, plain)
