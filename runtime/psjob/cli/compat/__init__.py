"""`psjob compat PATH...`: which Paddle names a body of code uses, and how psjob has each.

    psjob compat PATH... [--json | --markdown] [--all]

Reads every `*.py` under each PATH (never runs it) and collects the `paddle`
names the code reaches: the modules it imports (`import paddle.fluid as fluid`,
`from paddle.distributed import fleet`, `from paddle.static import nn`), the
names it imports from them, and every attribute chain on such an alias
(`fluid.layers.fc`, `paddle.static.nn.embedding`, `fleet.util.all_reduce`),
with import aliases resolved. `import psjob as paddle` (psjob's own import
form) counts as `paddle`.

Each name is then looked up on psjob itself (psjob.launcher.aspaddle.lookup: attribute
by attribute, importing submodules), so the answer is what this psjob has:

- present  psjob has the name (and no note says it differs);
- differs  psjob has it, but behaves differently in a way psjob.cli.compat.notes
           records, with the reason;
- refused  psjob has it only to raise an error naming the alternative (notes);
- missing  psjob has no such name: the part it stops at is named.

Exit status: 0 when every name is present or differs, 1 when one is refused or
missing, 2 for a PATH that does not exist. docs/user/paddle2.md's compatibility
table is this module's output for psjob.cli.compat.notes.SURFACE
(scripts/gen-compat-table.py rewrites it; a test checks it is current).
"""
from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from psjob.cli.compat import notes
from psjob.launcher.aspaddle import MissingName, lookup

PRESENT, DIFFERS, REFUSED, MISSING = "present", notes.DIFFERS, notes.REFUSED, "missing"
STATUSES = (MISSING, REFUSED, DIFFERS, PRESENT)  # worst first: the order of the report
ROOTS = {"paddle": "paddle", "psjob": "paddle"}   # psjob's import form counts as paddle
SKIP_DIRS = ("__pycache__", "node_modules", "site-packages")


@dataclass
class Use:
    """One paddle name and where the code uses it."""
    name: str
    where: list[str] = field(default_factory=list)  # "path:line", in reading order


@dataclass
class Verdict:
    name: str
    status: str
    note: str = ""
    uses: int = 0
    where: tuple[str, ...] = ()


# --- reading code ---------------------------------------------------------------

def python_files(paths: Iterable[str]) -> list[str]:
    """Every *.py file under `paths` (a file is taken as given), sorted; hidden and cache
    directories are skipped. FileNotFoundError for a path that does not exist."""
    out = []
    for path in paths:
        if os.path.isfile(path):
            out.append(path)
            continue
        if not os.path.isdir(path):
            raise FileNotFoundError(path)
        for dirpath, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
            out.extend(os.path.join(dirpath, f) for f in sorted(files) if f.endswith(".py"))
    return out


def _canonical(module: str) -> str | None:
    """`paddle.x` for an import of paddle.x or psjob.x; None for other modules."""
    head, _, rest = module.partition(".")
    if head not in ROOTS:
        return None
    return ROOTS[head] + ("." + rest if rest else "")


class _Reader(ast.NodeVisitor):
    """The paddle names of one module: imports first (any scope binds for the whole file,
    as a reader of the code would take them), then attribute chains on the aliases."""

    def __init__(self, path: str, uses: dict[str, Use]) -> None:
        self.path, self.uses = path, uses
        self.aliases: dict[str, str] = {}

    def record(self, name: str, node: ast.stmt | ast.expr) -> None:
        self.uses.setdefault(name, Use(name)).where.append(f"{self.path}:{node.lineno}")

    def read(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                self._import(node)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                self._import_from(node)
        self.visit(tree)

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            name = _canonical(alias.name)
            if name is None:
                continue
            if alias.asname:
                self.aliases[alias.asname] = name
            else:  # `import paddle.fluid` binds `paddle`
                self.aliases[alias.name.partition(".")[0]] = "paddle"
            if name != "paddle":
                self.record(name, node)

    def _import_from(self, node: ast.ImportFrom) -> None:
        base = _canonical(cast(str, node.module))  # read() calls this only with a module
        if base is None:
            return
        for alias in node.names:
            if alias.name == "*":
                if base != "paddle":
                    self.record(base, node)
                continue
            name = f"{base}.{alias.name}"
            self.aliases[alias.asname or alias.name] = name
            self.record(name, node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id in self.aliases:
            self.record(".".join([self.aliases[base.id], *reversed(parts)]), node)
            return  # the chain's prefixes are not uses of their own
        self.generic_visit(node)


def collect(paths: Iterable[str]) -> tuple[dict[str, Use], list[str], list[str]]:
    """(name -> Use, files read, files that could not be parsed with the reason)."""
    uses: dict[str, Use] = {}
    files, unparsed = python_files(paths), []
    for path in files:
        try:
            with open(path, "rb") as f:
                tree = ast.parse(f.read(), path)
        except (SyntaxError, ValueError) as exc:  # e.g. Python 2 code
            line = getattr(exc, "lineno", None)
            unparsed.append(f"{path}{':' + str(line) if line else ''}: {type(exc).__name__}: "
                            f"{getattr(exc, 'msg', exc)}")
            continue
        _Reader(path, uses).read(tree)
    return uses, files, unparsed


# --- judging names on psjob -----------------------------------------------------

def _noted_objects() -> list[tuple[object, str, str, str]]:
    """(function, status, reason, noted name) for every note naming a function: such a note
    applies to every name of that function (fluid.io.save_persistables whichever path reaches
    it; a bound method of fleet's singleton, fetched anew on each lookup, compares equal)."""
    out: list[tuple[object, str, str, str]] = []
    for name, (status, reason) in notes.NOTES.items():
        try:
            obj = lookup(name)
        except Exception:  # a stale note is reported by judge(name) itself
            continue
        if inspect.isroutine(obj):
            out.append((obj, status, reason, name))
    return out


def judge(name: str, noted: list | None = None) -> Verdict:
    """How psjob has `name` (paddle.a.b)."""
    if name in notes.NOTES:
        status, reason = notes.NOTES[name]
        try:
            lookup(name)
        except MissingName as exc:
            return Verdict(name, MISSING, f"psjob has no {exc.missing} (a note says: {reason})")
        return Verdict(name, status, reason)
    try:
        obj = lookup(name)
    except MissingName as exc:
        return Verdict(name, MISSING, _missing_note(exc))
    except Exception as exc:  # psjob raised while resolving it: say so rather than guess
        return Verdict(name, MISSING, f"looking it up on psjob raised {type(exc).__name__}: {exc}")
    if inspect.isroutine(obj):
        for other, status, reason, noted_name in (_noted_objects() if noted is None else noted):
            if obj is other or obj == other:
                return Verdict(name, status, f"{reason} (as {noted_name})")
    return Verdict(name, PRESENT)


def _missing_note(exc: MissingName) -> str:
    owner = exc.found
    if owner is None or inspect.ismodule(owner):
        return f"psjob has no {exc.missing}"
    parent = exc.missing.rsplit(".", 1)[0]
    return f"psjob has no {exc.missing} ({parent} is a {type(owner).__name__})"


def judge_all(names: Iterable[str], uses: dict[str, Use] | None = None) -> list[Verdict]:
    """Verdicts for `names`, worst status first, then by name."""
    noted = _noted_objects()
    out = []
    for name in sorted(set(names)):
        v = judge(name, noted)
        if uses and name in uses:
            v.uses, v.where = len(uses[name].where), tuple(uses[name].where)
        out.append(v)
    return sorted(out, key=lambda v: (STATUSES.index(v.status), v.name))


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    return {s: sum(v.status == s for v in verdicts) for s in reversed(STATUSES)}


# --- output ---------------------------------------------------------------------

def render_text(verdicts: list[Verdict], files: int, unparsed: list[str], show_all: bool) -> str:
    c = counts(verdicts)
    lines = [f"psjob compat: {files} file(s), {len(verdicts)} paddle name(s): "
             + ", ".join(f"{n} {s}" for s, n in c.items())]
    shown = verdicts if show_all else [v for v in verdicts if v.status != PRESENT]
    if shown:
        width = max(len(v.name) for v in shown)
        lines.append(f"{'STATUS':<8} {'NAME':<{width}} {'USES':>4}  FIRST USE  NOTE")
        for v in shown:
            first = v.where[0] if v.where else "-"
            lines.append(f"{v.status:<8} {v.name:<{width}} {v.uses:>4}  {first}  {v.note}".rstrip())
    if c[PRESENT] and not show_all:
        lines.append(f"({c[PRESENT]} present name(s) not listed: --all lists them)")
    for item in unparsed:
        lines.append(f"not read: {item}")
    return "\n".join(lines)


def render_json(verdicts: list[Verdict], files: int, unparsed: list[str]) -> str:
    return json.dumps({"files": files, "counts": counts(verdicts), "unparsed": unparsed,
                       "names": [{"name": v.name, "status": v.status, "note": v.note,
                                  "uses": v.uses, "where": list(v.where)} for v in verdicts]},
                      indent=1)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(verdicts: list[Verdict]) -> str:
    """A Markdown table: names that differ, are refused or missing one row each with the
    reason; present names grouped by the module (or class) they belong to."""
    rows = ["| name | psjob | note |", "|---|---|---|"]
    for v in verdicts:
        if v.status != PRESENT or v.note:
            rows.append(f"| `{v.name}` | {v.status} | {_cell(v.note)} |")
    groups: dict[str, list[str]] = {}
    for v in verdicts:
        if v.status == PRESENT and not v.note:
            parent, _, leaf = v.name.rpartition(".")
            groups.setdefault(parent or v.name, []).append(leaf)
    for parent in sorted(groups):
        leaves = ", ".join(f"`{leaf}`" for leaf in sorted(groups[parent], key=str.lower))
        rows.append(f"| `{parent}`: {leaves} | present | |")
    return "\n".join(rows)


# --- the documented surface -----------------------------------------------------

DOC_BEGIN = "<!-- BEGIN psjob compat table: generated by scripts/gen-compat-table.py, do not edit -->"
DOC_END = "<!-- END psjob compat table -->"


def surface_table() -> str:
    """docs/user/paddle2.md's generated section: every name of notes.SURFACE and notes.NOTES, judged."""
    verdicts = judge_all([*notes.SURFACE, *notes.NOTES])
    c = counts(verdicts)
    head = (f"{len(verdicts)} Paddle names ({', '.join(f'{n} {s}' for s, n in c.items())}), "
            "looked up on psjob by `psjob compat`; the notes are psjob.cli.compat.notes.")
    return "\n".join([DOC_BEGIN, head, "", render_markdown(verdicts), DOC_END])


def replace_section(text: str, section: str) -> str:
    """`text` with its generated section (DOC_BEGIN..DOC_END) replaced by `section`."""
    start, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if start < 0 or end < start:
        raise ValueError(f"no section between {DOC_BEGIN!r} and {DOC_END!r}")
    return text[:start] + section + text[end + len(DOC_END):]


# --- the command ----------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="psjob compat", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or directories to read")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object: counts and every name")
    out.add_argument("--markdown", action="store_true", help="a Markdown table of every name")
    p.add_argument("--all", action="store_true", help="list present names too (the table lists "
                   "only what is not simply present)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        uses, files, unparsed = collect(args.paths)
    except FileNotFoundError as exc:
        print(f"psjob compat: {exc}: no such file or directory", file=sys.stderr)
        return 2
    verdicts = judge_all(uses, uses)
    if args.json:
        print(render_json(verdicts, len(files), unparsed))
    elif args.markdown:
        print(render_markdown(verdicts))
    else:
        print(render_text(verdicts, len(files), unparsed, args.all))
    return 1 if any(v.status in (MISSING, REFUSED) for v in verdicts) else 0
