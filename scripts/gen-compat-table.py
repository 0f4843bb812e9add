#!/usr/bin/env python3
"""Rewrite docs/user/paddle2.md's generated compatibility table, or check it is current.

    .venv/bin/python scripts/gen-compat-table.py          # rewrite the section in place
    .venv/bin/python scripts/gen-compat-table.py --check  # exit 1 if the section is stale

The table is psjob.cli.compat.surface_table(): every name of psjob.cli.compat.notes (SURFACE and
NOTES) looked up on the psjob this interpreter imports, between the BEGIN/END markers.
tests/unit/test_compat.py fails when the doc and the generator disagree.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

from psjob.cli import compat

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "user" / "paddle2.md"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the section is stale; write nothing")
    args = p.parse_args(argv)
    text = DOC.read_text()
    fresh = compat.replace_section(text, compat.surface_table())
    if args.check:
        if fresh != text:
            print(f"{DOC} is stale: run .venv/bin/python scripts/gen-compat-table.py", file=sys.stderr)
            return 1
        return 0
    if fresh != text:
        DOC.write_text(fresh)
        print(f"rewrote the compatibility table in {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
