"""`psjob compat`: the paddle names a tree of code uses (read with ast, aliases resolved),
judged on psjob itself with the hand-kept notes; and docs/user/paddle2.md's table, generated from
the same source."""
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

from psjob.cli import compat
from psjob.cli.compat import notes

ROOT = pathlib.Path(__file__).resolve().parents[2]

TRAIN = '''\
import numpy as np
import paddle
import paddle.fluid as fluid
from paddle.distributed import fleet
from paddle.static import nn as snn
from paddle.fluid.layers import fc as dense

x = paddle.static.data("x", [None, 13], "float32")
h = fluid.layers.fc(x, 8)
h = fluid.layers.no_such_layer(h)
exe = fluid.Executor(fluid.CPUPlace()).run(fluid.default_startup_program())
y = snn.fc(dense(h, 4), 1)
fleet.util.all_reduce(np.zeros(1))
paddle.Model(None)


def build():
    import paddle.distributed.fleet.base.role_maker as rm
    return rm.PaddleCloudRoleMaker()
'''
READER = '''\
import psjob as paddle
import psjob.distributed.fleet as fleet
loader = paddle.io.DataLoader
'''


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)
    (tmp_path / "pkg" / "sub" / "reader.py").write_text(READER)
    (tmp_path / "pkg" / "py2.py").write_text('print "hello"\n')
    (tmp_path / "pkg" / ".hidden").mkdir()
    (tmp_path / "pkg" / ".hidden" / "x.py").write_text("import paddle.nothing\n")
    (tmp_path / "pkg" / "notes.txt").write_text("import paddle.nothing\n")
    return tmp_path / "pkg"


def test_collect_resolves_aliases_and_records_each_use(tree):
    uses, files, unparsed = compat.collect([str(tree)])
    assert [pathlib.Path(f).name for f in files] == ["py2.py", "train.py", "reader.py"]
    assert len(unparsed) == 1 and unparsed[0].startswith(f"{tree / 'py2.py'}:1: SyntaxError")
    assert sorted(uses) == [
        "paddle.Model",
        "paddle.distributed.fleet",
        "paddle.distributed.fleet.base.role_maker",
        "paddle.distributed.fleet.base.role_maker.PaddleCloudRoleMaker",
        "paddle.distributed.fleet.util.all_reduce",
        "paddle.fluid",
        "paddle.fluid.CPUPlace", "paddle.fluid.Executor", "paddle.fluid.default_startup_program",
        "paddle.fluid.layers.fc", "paddle.fluid.layers.no_such_layer",
        "paddle.io.DataLoader",
        "paddle.static.data", "paddle.static.nn", "paddle.static.nn.fc",
    ]
    train = str(tree / "train.py")
    assert uses["paddle.fluid.layers.fc"].where == [f"{train}:6", f"{train}:9"]  # `dense` is fc too
    assert uses["paddle.distributed.fleet"].where == [f"{train}:4", f"{tree / 'sub' / 'reader.py'}:2"]
    assert uses["paddle.distributed.fleet.base.role_maker.PaddleCloudRoleMaker"].where == [f"{train}:19"]


def test_each_name_is_judged_on_psjob(tree):
    uses, _, _ = compat.collect([str(tree)])
    verdicts = {v.name: v for v in compat.judge_all(uses, uses)}
    assert verdicts["paddle.fluid.layers.no_such_layer"].status == "missing"
    assert verdicts["paddle.fluid.layers.no_such_layer"].note == "psjob has no psjob.fluid.layers.no_such_layer"
    assert verdicts["paddle.Model"].status == "refused"
    assert verdicts["paddle.distributed.fleet.util.all_reduce"].status == "differs"
    assert verdicts["paddle.io.DataLoader"].status == "differs"
    assert verdicts["paddle.fluid.layers.fc"].status == "present" and verdicts["paddle.fluid.layers.fc"].uses == 2
    assert verdicts["paddle.distributed.fleet.base.role_maker.PaddleCloudRoleMaker"].status == "present"
    order = [v.status for v in compat.judge_all(uses, uses)]
    assert order == sorted(order, key=compat.STATUSES.index)  # worst first


def test_a_note_on_a_function_applies_to_every_name_reaching_it(monkeypatch):
    import psjob.fluid.io
    # One function under a second name (as psjob binds many): the note follows the function.
    monkeypatch.setattr(psjob.fluid, "save_persistables_under_another_name",
                        psjob.fluid.io.save_persistables, raising=False)
    noted = compat.judge("paddle.fluid.io.save_persistables")
    other = compat.judge("paddle.fluid.save_persistables_under_another_name")
    assert noted.status == other.status == "differs"
    assert other.note == noted.note + " (as paddle.fluid.io.save_persistables)"
    # fleet.util.all_reduce is a bound method, a new object on each lookup: it still matches.
    import psjob.distributed.fleet as fleet
    monkeypatch.setattr(fleet, "all_reduce_under_another_name", fleet.util.all_reduce, raising=False)
    method = compat.judge("paddle.distributed.fleet.all_reduce_under_another_name")
    assert method.status == "differs" and method.note.endswith("(as paddle.distributed.fleet.util.all_reduce)")
    # A note does not spread to a different function.
    assert compat.judge("paddle.fluid.layers.fc").status == "present"


def test_every_note_names_something_psjob_has():
    stale = [v for v in compat.judge_all(notes.NOTES) if v.status == "missing"]
    assert stale == [], "notes on names psjob no longer has: remove or rename them"
    assert set(s for s, _ in notes.NOTES.values()) <= {notes.DIFFERS, notes.REFUSED}


def test_the_command_prints_a_table_json_and_markdown_and_exits_1_on_missing_names(tree):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "psjob.cli", "compat", *args], capture_output=True,
                              text=True, timeout=120)
    text = cli(str(tree))
    assert text.returncode == 1, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == ("psjob compat: 3 file(s), 15 paddle name(s): 11 present, 2 differs, 1 refused, "
                        "1 missing")
    assert lines[1].split() == ["STATUS", "NAME", "USES", "FIRST", "USE", "NOTE"]
    assert lines[2].split()[:3] == ["missing", "paddle.fluid.layers.no_such_layer", "1"]
    assert "(11 present name(s) not listed: --all lists them)" in lines
    assert lines[-1].startswith(f"not read: {tree / 'py2.py'}:1: SyntaxError")
    data = json.loads(cli("--json", str(tree)).stdout)
    assert data["files"] == 3 and data["counts"] == {"present": 11, "differs": 2, "refused": 1, "missing": 1}
    assert {n["name"]: n["status"] for n in data["names"]}["paddle.Model"] == "refused"
    markdown = cli("--markdown", str(tree)).stdout
    assert "| `paddle.Model` | refused | hapi: build a static Program and run it with paddle.static.Executor |" \
        in markdown
    assert "| `paddle.fluid.layers`: `fc` | present | |" in markdown
    ok = tree / "sub"
    assert cli(str(ok)).returncode == 0
    gone = cli(str(tree / "nowhere"))
    assert gone.returncode == 2 and "nowhere: no such file or directory" in gone.stderr


def test_docs_paddle2_table_is_what_the_generator_writes():
    doc = (ROOT / "docs" / "user" / "paddle2.md").read_text()
    assert compat.replace_section(doc, compat.surface_table()) == doc, (
        "docs/user/paddle2.md's compatibility table is stale: run .venv/bin/python scripts/gen-compat-table.py")
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-compat-table.py"), "--check"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr


def test_replace_section_needs_both_markers():
    with pytest.raises(ValueError, match="no section"):
        compat.replace_section("no markers here", "x")
    text = textwrap.dedent(f"""\
        before
        {compat.DOC_BEGIN}
        old
        {compat.DOC_END}
        after
    """)
    assert compat.replace_section(text, "new") == "before\nnew\nafter\n"
