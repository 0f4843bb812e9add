"""`psjob compat` on the userland code (copied to a temporary directory; the shared folder is
read-only): it reads every file, resolves PaddleRec's and CTR-DNN's import forms, and what it
reports missing is what the runs stop at."""
import shutil

import pytest

from psjob.cli import compat
from psjob.cli.compat import notes


@pytest.fixture
def corpus(userland, tmp_path):
    shutil.copytree(userland / "paddlerec" / "vendor", tmp_path / "paddlerec")
    shutil.copy(userland / "paddlerec" / "run_dnn_ps.py", tmp_path / "paddlerec")
    shutil.copytree(userland / "models-ctr-dnn" / "vendor", tmp_path / "ctrdnn")
    return tmp_path


def test_compat_reads_every_userland_file_and_finds_their_paddle_names(corpus):
    uses, files, unparsed = compat.collect([str(corpus)])
    assert unparsed == [] and len(files) == len(list(corpus.rglob("*.py")))
    # PaddleRec's forms: `import paddle`, `import paddle.distributed.fleet as fleet`,
    # `from paddle.distributed.fleet.base import role_maker`, `import paddle.nn.functional as F`;
    # CTR-DNN's `import paddle.fluid as fluid` chains.
    for name in ("paddle.distributed.fleet.base.role_maker.PaddleCloudRoleMaker",
                 "paddle.distributed.fleet.MultiSlotDataGenerator", "paddle.static.nn.sparse_embedding",
                 "paddle.nn.functional.log_loss", "paddle.fluid.layers.embedding", "paddle.fluid.DistributeTranspiler"):
        assert name in uses, name
    # The documented surface (docs/user/paddle2.md's table) is every name this code uses.
    assert set(uses) <= set(notes.SURFACE), sorted(set(uses) - set(notes.SURFACE))


def test_what_compat_reports_missing_for_ctr_dnn_includes_where_its_run_stops(corpus):
    uses, _, _ = compat.collect([str(corpus / "ctrdnn")])
    verdicts = {v.name: v for v in compat.judge_all(uses, uses)}
    # The harness's first stop is fluid.require_version (utils.py): reported with its place,
    # unless psjob has gained it.
    v = verdicts["paddle.fluid.require_version"]
    assert v.where and v.where[0].endswith("utils.py:21")
    assert v.status in ("missing", "present")
