"""Every repository path the docs, the README and the code name exists: `docs/…`, `bench/…`,
`scripts/…`, `examples/…`, `charts/…`, `crds/…` and `tests/…` in prose and comments, and the
relative targets of Markdown links. A moved or renamed file fails here with every place that
still names the old path."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
# A path as prose names it; a trailing `*` (a glob: tests/unit/test_heter_*) or `<`
# (a placeholder) is not a file name.
PATH = re.compile(r"(?<![\w./-])((?:docs|bench|scripts|examples|charts|crds|tests)/[\w./-]*)([*<]?)")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
NOT_PATHS = {"examples/s"}  # the rate, examples per second


def scanned() -> list[pathlib.Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(ROOT.glob("docs/**/*.md")),
            *sorted(ROOT.glob("runtime/**/*.py")), *sorted(ROOT.glob("operator/**/*.py")),
            *sorted(ROOT.glob("bench/*.py")), *sorted(p for p in ROOT.glob("scripts/*") if p.is_file()),
            *sorted(p for p in ROOT.glob("charts/**/*") if p.is_file() and p.suffix != ".tgz")]


def missing_paths(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    out = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        for match in PATH.finditer(line):
            named = match.group(1).rstrip(".-")
            if match.group(2):
                continue
            if named not in NOT_PATHS and not (root / named).exists():
                out.append(f"{path.relative_to(root)}:{number}: {named}")
        if path.suffix == ".md":
            for match in MD_LINK.finditer(line):
                target = match.group(1)
                if "://" in target or target.startswith("mailto:"):
                    continue
                if not (path.parent / target).exists():
                    out.append(f"{path.relative_to(root)}:{number}: link {target}")
    return out


def test_every_path_the_docs_and_code_name_exists():
    missing = [m for path in scanned() for m in missing_paths(path)]
    assert not missing, "paths named but not in the repository:\n" + "\n".join(missing)


def test_the_check_finds_a_missing_path(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("")
    probe = tmp_path / "docs" / "probe.md"
    probe.write_text("see docs/here.md, docs/no-such-guide.md, [a](here.md) and [b](no-such.md); "
                     "examples/s is a rate, tests/unit/test_x_* a glob\n")
    assert missing_paths(probe, tmp_path) == ["docs/probe.md:1: docs/no-such-guide.md",
                                              "docs/probe.md:1: link no-such.md"]
