"""tests/thirdparty_code.py: a test module without its third-party copy skips, naming what to
provide, and a PaddleRec clone that cannot give the pinned commit leaves the suite as it was
(a reason, no exception, no half-written folder). Real git, in tmp_path."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import thirdparty_code  # noqa: E402


def test_require_skips_naming_the_folder_and_how_to_provide_it(monkeypatch, tmp_path):
    monkeypatch.setattr(thirdparty_code, "THIRDPARTY", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=r"tests/thirdparty/paddlerec is absent.*PSJOB_PADDLEREC_GIT"):
        thirdparty_code.require("paddlerec")
    (tmp_path / "paddle18").mkdir()
    assert thirdparty_code.require("paddle18") == str(tmp_path / "paddle18")


def test_a_clone_without_the_commit_gives_a_reason_and_writes_nothing(monkeypatch, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    folder = tmp_path / "thirdparty"
    folder.mkdir()
    monkeypatch.setattr(thirdparty_code, "THIRDPARTY", str(folder))
    monkeypatch.setattr(thirdparty_code, "PADDLEREC", str(folder / "paddlerec"))
    monkeypatch.setenv(thirdparty_code.PADDLEREC_GIT_ENV, str(clone / ".git"))
    reason = thirdparty_code.provide_paddlerec()
    assert reason is not None and "git archive" in reason
    assert os.listdir(folder) == []          # no partial copy, no staging folder left
    monkeypatch.setenv(thirdparty_code.PADDLEREC_GIT_ENV, str(tmp_path / "no-such-clone"))
    assert thirdparty_code.provide_paddlerec() is not None
    assert os.listdir(folder) == []
