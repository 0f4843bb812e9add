"""Where the tests find third-party code this repository does not commit (tests/thirdparty/README.md).

PaddleRec's trainers and models, PaddlePaddle/models' Fluid 1.x examples and Paddle's own test
programs run under psjob exactly as their authors published them, from a copy under
tests/thirdparty/ that git ignores. A test module that needs one calls `require`, which skips
the whole module, naming the folder and how to provide it, when the copy is absent.

PaddleRec's copy can be made from any git clone of github.com/PaddlePaddle/PaddleRec that holds
`PADDLEREC_COMMIT`: `provide_paddlerec` (run once per session by tests/conftest.py) exports the
files the tests use from the clone named by $PSJOB_PADDLEREC_GIT, or from a
`.mirror/PaddlePaddle+PaddleRec/repo` git directory next to the checkout or above it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
THIRDPARTY = os.path.join(HERE, "thirdparty")
PADDLEREC = os.path.join(THIRDPARTY, "paddlerec")
PADDLEREC_COMMIT = "656326adf3c4117c11ec0eff5e8f61acd8191c2a"
PADDLEREC_GIT_ENV = "PSJOB_PADDLEREC_GIT"
# What the tests run of PaddleRec: its static trainers and their helpers, and these models.
PADDLEREC_MODELS = {
    "rank": ("autoint", "bst", "dcn", "deepfefm", "deepfm", "dien", "difm", "din", "dlrm", "dmr", "dnn",
             "dsin", "fm", "gatenet", "logistic_regression", "naml", "slot_dnn", "wide_deep", "xdeepfm"),
    "multitask": ("dselect_k", "escm2", "esmm", "mmoe", "ple", "share_bottom"),
    "recall": ("mind", "ncf", "tisas", "word2vec"),
    "match": ("dssm", "match-pyramid", "multiview-simnet"),
    "contentunderstanding": ("tagspace", "textcnn"),
}
PADDLEREC_TOOLS = ("tools/__init__.py", "tools/feature_importance.py", "tools/paddle_infer.py",
                   "tools/static_infer.py", "tools/static_ps_infer.py", "tools/static_ps_offline_infer.py",
                   "tools/static_ps_online_trainer.py", "tools/static_ps_trainer.py", "tools/static_trainer.py",
                   "tools/utils")

HOW = {
    "paddlerec": f"a git clone of github.com/PaddlePaddle/PaddleRec holding {PADDLEREC_COMMIT[:8]} named by "
                 f"${PADDLEREC_GIT_ENV} (the tests export what they run from it), or PaddleRec's files at that "
                 f"commit copied to tests/thirdparty/paddlerec",
    "models-fluid": "PaddlePaddle/models @afaf06e7's PaddleRec folder (Fluid 1.x) copied to "
                    "tests/thirdparty/models-fluid/PaddleRec",
    "paddle-ps": "Paddle's test/ps files copied to tests/thirdparty/paddle-ps/test/ps",
    "paddle18": "Paddle 1.8's distributed test programs (and test_dist_transpiler.py) copied to "
                "tests/thirdparty/paddle18",
    "paddle3-dist": "Paddle 2.x/3.x's fleet parameter-server test programs (test/legacy_test) copied to "
                    "tests/thirdparty/paddle3-dist",
}


def require(relative: str) -> str:
    """tests/thirdparty/<relative> (a file or folder); skips the calling module when it is absent."""
    path = os.path.join(THIRDPARTY, relative)
    if not os.path.exists(path):
        top = relative.split("/", 1)[0]
        pytest.skip(f"tests/thirdparty/{relative} is absent: third-party code is not in this repository's "
                    f"commits (tests/thirdparty/README.md); to run these tests provide {HOW.get(top, 'a copy')}",
                    allow_module_level=True)
    return path


def _paddlerec_git() -> str | None:
    named = os.environ.get(PADDLEREC_GIT_ENV)
    if named:
        return named
    directory = os.path.dirname(HERE)
    while True:
        candidate = os.path.join(directory, ".mirror", "PaddlePaddle+PaddleRec", "repo")
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def provide_paddlerec() -> str | None:
    """Export PaddleRec's files at PADDLEREC_COMMIT to tests/thirdparty/paddlerec when they are not
    there and a clone holds that commit; None when they are there or made, else why not."""
    if os.path.isdir(os.path.join(PADDLEREC, "tools")):
        return None
    git_dir = _paddlerec_git()
    if git_dir is None:
        return f"no PaddleRec clone (${PADDLEREC_GIT_ENV} unset)"
    paths = ["LICENSE", *PADDLEREC_TOOLS,
             *(f"models/{group}/{name}" for group, names in PADDLEREC_MODELS.items() for name in names)]
    staging = tempfile.mkdtemp(prefix=".paddlerec-", dir=THIRDPARTY)
    try:
        return _export(git_dir, paths, staging)
    except (OSError, subprocess.SubprocessError) as e:  # no git or tar, a broken clone: the tests skip
        return f"exporting PaddleRec from {git_dir} failed: {e}"
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _export(git_dir: str, paths: list[str], staging: str) -> str | None:
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", PADDLEREC_COMMIT, *paths],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        return f"git archive in {git_dir} failed: {archive.stderr.decode(errors='replace')[-300:]}"
    subprocess.run(["tar", "-x", "-C", staging], input=archive.stdout, check=True)
    if os.path.isdir(PADDLEREC):  # a partial copy (one model, say): complete it
        shutil.copytree(staging, PADDLEREC, dirs_exist_ok=True)
        return None
    try:
        os.rename(staging, PADDLEREC)  # whole or not at all
    except OSError:
        if not os.path.isdir(os.path.join(PADDLEREC, "tools")):  # not another session's copy
            raise
    return None


def run_unittest_as_paddle(name: str, source: str, tmp_path, timeout: float, pythonpath: str | None = None) -> tuple:
    """Paddle's own test `python -m unittest -v NAME`, as Paddle's CI runs it, in a copy of the
    folder `source` under tmp_path, inside `psjob as-paddle` (every process its harness starts
    imports psjob as paddle); → (exit status, output). The run has a session of its own:
    whatever the harness started and left (a pserver it could not stop) goes with it."""
    import signal
    import sys

    work = tmp_path / "work"
    shutil.copytree(source, work)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    env.pop("PADDLE_DIST_UT_PORT", None)
    # `python` (a dataset's pipe command) is this interpreter, with psjob.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable, "-m", "unittest", "-v", name]
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return proc.returncode, out.decode(errors="replace")
