"""fleet.load_model (Paddle 2.x Fleet): the pservers load a whole-model save in place while
the workers wait, as PaddleRec's online trainer does when it resumes from its last saved pass.
tests/component/scripts/fleet_load_model.py trains, saves, tries a folder that is not a save,
trains on, loads the save and trains the same batches again."""
import json
import re

import pytest


def _results(read_logs, log_dir, workers):
    results = [json.loads(m) for m in re.findall(r"^RESULT (.*)$", read_logs(log_dir), re.M)]
    assert sorted(r["worker"] for r in results) == list(range(workers)), read_logs(log_dir)[-3000:]
    return results


def _refused_everywhere(results, not_a_save):
    for r in results:
        assert r["refused"].startswith(f"FleetError: fleet.load_model({str(not_a_save)!r}): worker 0's load failed")
        assert "has no __manifest__.json" in r["refused"]


@pytest.mark.timeout(240)
def test_sync_training_after_a_load_repeats_training_after_the_save(tmp_path, launch, script, read_logs):
    not_a_save = tmp_path / "notasave"
    not_a_save.mkdir()
    (not_a_save / "junk").write_text("x")
    r = launch(["--server_num", "2", "--worker_num", "1", "--log_dir", str(tmp_path / "log"),
                script("fleet_load_model.py"), "--save", str(tmp_path / "saved"), "--not-a-save", str(not_a_save),
                "--sync"])
    assert r.returncode == 0, r.stdout[-2000:] + read_logs(tmp_path / "log")[-3000:]
    [result] = _results(read_logs, tmp_path / "log", 1)
    _refused_everywhere([result], not_a_save)
    # Parameters, table rows and Adam's moments and beta powers come back: the same ten losses.
    assert result["after_load"] == result["after_save"]
    assert result["after_save"] != result["first"]
    assert result["table_restored"]  # load_one_table put the trained-on rows back
    assert "table_id 1 names no sparse table: the job's sparse tables are 0 (TABLE)" in result["bad_id"]
    # load_inference_model: the saved parameters and rows (the first loss repeats), Adam's
    # accumulators as trained on (the following ones do not)
    infer_save, infer_load = result["after_infer_save"], result["after_infer_load"]
    assert infer_load[0] == infer_save[0] and infer_load[1:] != infer_save[1:], (infer_save, infer_load)
    whole = result["after_whole_as_infer"]  # the whole save, whose accumulators it leaves
    assert whole[0] == result["after_save"][0] and whole[1:] != result["after_save"][1:], whole
    assert "mode=1): psjob loads mode 0, the whole save fleet.save_inference_model writes" in result["infer_mode"]


@pytest.mark.timeout(240)
def test_async_workers_load_together_and_all_see_a_refused_load(tmp_path, launch, script, read_logs):
    not_a_save = tmp_path / "notasave"
    not_a_save.mkdir()
    r = launch(["--server_num", "2", "--worker_num", "2", "--log_dir", str(tmp_path / "log"),
                script("fleet_load_model.py"), "--save", str(tmp_path / "saved"), "--not-a-save", str(not_a_save)])
    assert r.returncode == 0, r.stdout[-2000:] + read_logs(tmp_path / "log")[-3000:]
    results = _results(read_logs, tmp_path / "log", 2)
    _refused_everywhere(results, not_a_save)
    for res in results:
        assert len(res["after_load"]) == 10 and all(v == v for v in res["after_load"])
