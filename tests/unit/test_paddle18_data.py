"""tests/paddle18_data.py: the synthetic downloads of Paddle 1.8's distributed test programs
(tests/component/test_paddle18_dist_programs.py) are the same bytes every run, in the format
those programs parse, and the cache it installs serves them for the two URLs only."""
import io
import os
import sys
import tarfile

import pytest

from psjob.dataset import common

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import paddle18_data as data  # noqa: E402


def test_the_files_are_the_same_bytes_every_run(tmp_path):
    assert data.write_cache(str(tmp_path / "a")) == data.write_cache(str(tmp_path / "b"))


def test_simnet_lines_parse_as_dist_simnet_bow_reads_them():
    lines = data.simnet_text().splitlines()
    assert len(lines) == data.SIMNET_LINES
    for line in lines:
        assert line.endswith(";")
        fields = [[int(j) for j in f.split(" ")] for f in line.split(";")[:-1]]
        n_pos, n_neg = fields[1]
        assert n_pos + n_neg == len(fields) - 3  # else the program skips the line
        assert all(0 <= i < data.DICT_DIM for f in fields[2:] for i in f)


def test_the_ctr_archive_holds_the_four_files_and_its_meta():
    with tarfile.open(fileobj=io.BytesIO(data.ctr_tgz()), mode="r:gz") as tar:
        names = tar.getnames()
        meta = tar.extractfile("avazu_ctr_data/data.meta.txt").read().decode().splitlines()
        first = tar.extractfile("avazu_ctr_data/train.txt").read().decode().splitlines()[0]
    assert sorted(names) == ["avazu_ctr_data/data.meta.txt", "avazu_ctr_data/infer.txt",
                             "avazu_ctr_data/test.txt", "avazu_ctr_data/train.txt"]
    assert meta == [f"dnn_input_dim: {data.DNN_INPUT_DIM}", f"lr_input_dim: {data.LR_INPUT_DIM}"]
    dnn, lr, click = first.split("\t")
    assert all(0 <= int(i) < data.DNN_INPUT_DIM for i in dnn.split())
    assert all(int(i) < data.LR_INPUT_DIM and v == "1" for i, v in (x.split(":") for x in lr.split()))
    assert click in ("0", "1")


def test_install_serves_the_synthetic_files_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "DATA_HOME", common.DATA_HOME)
    monkeypatch.setattr(common, "download", common.download)
    home = str(tmp_path / "dataset")
    data.install(home, data.write_cache(home))
    assert common.download(data.SIMNET_URL, "simnet", "24e49366eb0611c552667989de2f57d5", "train") == \
        os.path.join(home, "simnet", "train")
    assert common.download(data.CTR_URL, "avazu_ctr_data", "c11df99fbd14e53cd4bfa6567344b26e") == \
        os.path.join(home, "avazu_ctr_data", "avazu_ctr_data.tgz")
    with pytest.raises(RuntimeError, match="within retry limit 3"):  # any other URL: psjob's download as is
        common.download((tmp_path / "absent.txt").as_uri(), "m", "0" * 32)
