"""`psjob checkpoint list|inspect|verify DIR`, `psjob checkpoint import`, `psjob export`.

DIR is a local directory or an object-store URI, `s3://BUCKET/PREFIX`
(configured by the standard AWS_* variables: docs/user/checkpoints.md).

    list DIR       the checkpoints under a root (or the one save DIR is): step, status,
                   kind (base or delta), time, size, variables, table shards, table rows
                   and tombstones; a delta's parent; `*` marks the newest good one
    inspect DIR    one save's manifest: step, position, every variable and table shard
                   (DIR is a save, or a root: its newest good checkpoint, or --step N)
    verify DIR     read every file and check its sha256 (a save, or every checkpoint of a
                   root); exit status 1 naming each bad file, 0 when all are good
    import DIR OUT [--pservers N]   a `psjob export` directory back into a checkpoint
                   (a save directory) for N pservers
    compact CKPT OUT [--pservers N]  fold the chain ending at CKPT (a delta, or a root's
                   newest good checkpoint, or --step N) into a new base at OUT

    psjob export CHECKPOINT OUT --format parquet [--with-optimizer-state] [--row-group-rows N]
                   the checkpoint's tables as Parquet and its dense variables as .npy (export.py)

Exit status 1 when a checkpoint or an export is refused (corrupt, incomplete, the output
exists), 2 for usage errors (no such directory, a bad URI, a store that
cannot be reached: no credentials, no such bucket).
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from typing import TextIO, cast

from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint import storage
from psjob.foundation.checkpoint.format import CheckpointError, read_manifest
from psjob.foundation.checkpoint.store import (
    INCOMPLETE,
    CheckpointInfo,
    has_manifest,
    inspect_dir,
    newest_good,
    scan,
    step_dirname,
    verify,
)


def _when(doc: dict | None) -> str:
    t = (doc or {}).get("time")
    if not t:
        return "-"
    return dt.datetime.fromtimestamp(float(t), tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _doc_bytes(doc: dict) -> int:
    total = sum(e.get("file_bytes", e.get("bytes", 0)) for e in doc.get("vars", {}).values())
    for tdoc in doc.get("tables", {}).values():
        for shard in tdoc.get("shards", []):
            total += sum(e.get("file_bytes", e.get("bytes", 0)) for e in shard.get("files", {}).values())
    return total


def _table_counts(doc: dict | None) -> tuple[int, int]:
    """(rows, tombstones) of every table shard of a save."""
    shards = [s for t in (doc or {}).get("tables", {}).values() for s in t.get("shards", [])]
    return sum(int(s.get("rows", 0)) for s in shards), sum(int(s.get("tombstones", 0)) for s in shards)


def _kind(doc: dict | None) -> str:
    return chains.DELTA if chains.is_delta_doc(doc) else chains.BASE


def _infos(path: str) -> list[CheckpointInfo]:
    if has_manifest(path):
        return [inspect_dir(path)]
    return scan(path)


def cmd_list(path: str, out: TextIO) -> int:
    infos = _infos(path)
    if not infos:
        print(f"no checkpoints under {path}", file=out)
        return 0
    best = newest_good(path)
    print(f"{'':1} {'STEP':>10}  {'STATUS':<10} {'KIND':<5} {'TIME':<20} {'SIZE':>10} {'VARS':>5} {'SHARDS':>6} "
          f"{'ROWS':>10} {'TOMBS':>8}  PATH", file=out)
    for c in infos:
        doc = c.manifest or {}
        shards = sum(len(t.get("shards", [])) for t in doc.get("tables", {}).values())
        rows, tombs = _table_counts(doc)
        mark = "*" if best is not None and c.path == best.path else ""
        print(f"{mark:1} {c.step:>10}  {c.status:<10} {_kind(doc) if doc else '-':<5} {_when(doc):<20} "
              f"{_size(_doc_bytes(doc)) if doc else '-':>10} {len(doc.get('vars', {})) if doc else '-':>5} "
              f"{shards if doc else '-':>6} {rows if doc else '-':>10} {tombs if chains.is_delta_doc(doc) else '-':>8}"
              f"  {c.path}", file=out)
        if chains.is_delta_doc(doc):
            link = cast(dict, chains.link_of(doc))  # a delta's manifest has its chain entry
            print(f"{'':14}delta {link.get('depth')} on {link['parent'].get('path')} (base "
                  f"{(link.get('base') or {}).get('path')})", file=out)
        if c.reason and c.status != INCOMPLETE:
            print(f"{'':14}{c.reason}", file=out)
    return 0


def cmd_inspect(path: str, step: int | None, out: TextIO) -> int:
    if step is not None:
        path = storage.join(path, step_dirname(step))
    elif not has_manifest(path):
        best = newest_good(path)
        if best is None:
            print(f"no complete checkpoint under {path}", file=sys.stderr)
            return 1
        path = best.path
    try:
        doc = read_manifest(path)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    info = inspect_dir(path)
    print(f"checkpoint {path}", file=out)
    print(f"  format   {doc['format']} version {doc['version']}", file=out)
    print(f"  status   {info.status}{': ' + info.reason if info.reason else ''}", file=out)
    for key in ("step", "kind"):
        if doc.get(key) is not None:
            print(f"  {key:<8} {doc[key]}", file=out)
    link = cast(dict, chains.link_of(doc))  # read only for a delta, which has one
    if chains.is_delta_doc(doc):
        parent, base = link.get("parent", {}), link.get("base") or {}
        print(f"  chain    delta, depth {link.get('depth')}, on {parent.get('path')} (id {parent.get('id')}, manifest "
              f"sha256 {str(parent.get('manifest_sha256'))[:16]}); base {base.get('path')}; id {link.get('id')}",
              file=out)
        if info.ok:
            print(f"  restore  {' + '.join(storage.basename(p) for p in info.links)}", file=out)
    elif link:
        print(f"  chain    base, id {link.get('id')}", file=out)
    print(f"  time     {_when(doc)}", file=out)
    print(f"  size     {_size(_doc_bytes(doc))}", file=out)
    if doc.get("job"):
        print(f"  job      {doc['job']}", file=out)
    if doc.get("position"):
        print(f"  position {doc['position']}", file=out)
    for tid, pos in sorted((doc.get("trainers") or {}).items()):
        print(f"  trainer {tid}: {pos}", file=out)
    print(f"  variables ({len(doc['vars'])}):", file=out)
    for name, e in sorted(doc["vars"].items()):
        print(f"    {name:<40} {e['dtype']:<8} {str(e['shape']):<16} {_size(e['bytes']):>10}  "
              f"sha256 {e['sha256'][:16]}  {e['file'] if e['file'] != name else ''}", file=out)
    for table, t in sorted(doc.get("tables", {}).items()):
        what = " (delta: the rows changed since the parent, and tombstones)" if t.get("delta") else ""
        print(f"  table {table}: {t['height']} x {t['width']} {t['dtype']}, {t['num_shards']} shard(s) by feature id"
              f"{what}", file=out)
        for shard in t.get("shards", []):
            files = ", ".join(f"{part} {_size(e['bytes'])} sha256 {e['sha256'][:16]}"
                              for part, e in sorted(shard["files"].items()))
            tombs = f", {shard['tombstones']} tombstones" if "tombstones" in shard else ""
            print(f"    shard {shard['index']}: {shard['rows']} rows{tombs} ({files})", file=out)
    return 0


def cmd_verify(path: str, out: TextIO) -> int:
    infos = _infos(path)
    if not infos:
        print(f"no checkpoints under {path}", file=sys.stderr)
        return 1
    failed = checked = 0
    for c in infos:
        if c.status == INCOMPLETE:
            print(f"SKIP    {c.path}: incomplete (no manifest): not a checkpoint", file=out)
            continue
        checked += 1
        problems = verify(c.path)
        if problems:
            failed += 1
            print(f"FAILED  {c.path}", file=out)
            for p in problems:
                print(f"        {p}", file=out)
        else:
            doc = c.manifest or {}
            files = len(doc.get("vars", {})) + sum(len(s.get("files", {})) for t in doc.get("tables", {}).values()
                                                   for s in t.get("shards", []))
            chain = (f"; delta on {cast(dict, chains.link_of(doc))['parent'].get('path')}, its chain intact"
                     if chains.is_delta_doc(doc) else "")
            print(f"OK      {c.path}: {files} file(s), {_size(_doc_bytes(doc))}, checksums match{chain}", file=out)
    print(f"{checked - failed} of {checked} checkpoint(s) verified"
          + (f"; {failed} FAILED" if failed else ""), file=out)
    return 1 if failed or not checked else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="psjob checkpoint", description="List, inspect or verify psjob checkpoints "
                                "in a directory or under s3://BUCKET/PREFIX.")
    sub = p.add_subparsers(dest="command", required=True)
    where = "a directory or s3://BUCKET/PREFIX"
    sub.add_parser("list", help="list the checkpoints under DIR").add_argument("dir", help=where)
    ins = sub.add_parser("inspect", help="show one checkpoint's contents")
    ins.add_argument("dir", help=where)
    ins.add_argument("--step", type=int, default=None, help="the checkpoint of this step (default: newest good)")
    sub.add_parser("verify", help="check every file's sha256").add_argument("dir", help=where)
    imp = sub.add_parser("import", help="turn a `psjob export` directory back into a checkpoint")
    imp.add_argument("dir", help="the export directory (manifest.json, tables/, dense/)")
    imp.add_argument("out", help="the new save directory (local, or s3://BUCKET/PREFIX); "
                                 "put it at ROOT/step-NNNNNNNN for a job to resume from it")
    imp.add_argument("--pservers", type=int, default=None,
                     help="split the tables for N pservers (default: as many as the exported checkpoint)")
    com = sub.add_parser("compact", help="fold a chain of a base and deltas into a new base")
    com.add_argument("dir", help="a delta (or any save), or a root: its newest good checkpoint; " + where)
    com.add_argument("out", help="the new base's directory (local, or s3://BUCKET/PREFIX); nothing may be there")
    com.add_argument("--step", type=int, default=None, help="DIR is a root: compact the chain of this step")
    com.add_argument("--pservers", type=int, default=None,
                     help="split the tables for N pservers (default: as many as the newest link)")
    return p


def cmd_compact(path: str, out: str, step: int | None, pservers: int | None, stdout: TextIO) -> int:
    if step is not None:
        path = storage.join(path, step_dirname(step))
    elif not has_manifest(path):
        best = newest_good(path)
        if best is None:
            print(f"psjob checkpoint compact: no complete checkpoint under {path}", file=sys.stderr)
            return 1
        path = best.path
    try:
        links = chains.resolve(path)
        doc = chains.compact(path, out, pservers)
    except CheckpointError as exc:
        print(f"psjob checkpoint compact: {exc}; no base was written at {out}", file=sys.stderr)
        return 1
    rows, _ = _table_counts(doc)
    print(f"compacted {len(links)} link(s) ({' + '.join(storage.basename(p) for p, _ in links)}) into the base {out}: "
          f"{rows} table rows, {len(doc['vars'])} dense variable(s)", file=stdout)
    return 0


def cmd_import(src: str, out: str, pservers: int | None, stdout: TextIO) -> int:
    from psjob.foundation.checkpoint.export import import_export  # pyarrow: loaded only by the commands that need it
    try:
        doc = import_export(src, out, pservers)
    except CheckpointError as exc:
        print(f"psjob checkpoint import: {exc}", file=sys.stderr)
        return 1
    for name, t in sorted(doc.get("tables", {}).items()):
        rows = sum(s["rows"] for s in t["shards"])
        print(f"table {name}: {rows} rows x {t['width']} in {t['num_shards']} shard(s)", file=stdout)
    print(f"{len(doc['vars'])} dense variable(s); checkpoint written to {out}", file=stdout)
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        if args.command == "import":
            if not (args.pservers is None or args.pservers >= 1):
                print(f"psjob checkpoint import: --pservers must be >= 1, got {args.pservers}", file=sys.stderr)
                return 2
            return cmd_import(args.dir, args.out, args.pservers, out)
        if args.command == "compact" and not (args.pservers is None or args.pservers >= 1):
            print(f"psjob checkpoint compact: --pservers must be >= 1, got {args.pservers}", file=sys.stderr)
            return 2
        if not storage.for_path(args.dir).is_dir(args.dir):
            print(f"psjob checkpoint: {args.dir!r} is not a directory"
                  + (" (nothing is stored under that prefix)" if storage.is_uri(args.dir) else ""), file=sys.stderr)
            return 2
        if args.command == "list":
            return cmd_list(args.dir, out)
        if args.command == "inspect":
            return cmd_inspect(args.dir, args.step, out)
        if args.command == "compact":
            return cmd_compact(args.dir, args.out, args.step, args.pservers, out)
        return cmd_verify(args.dir, out)
    except BrokenPipeError:  # `... | head`
        return 0
    except storage.StorageError as exc:
        print(f"psjob checkpoint: {exc}", file=sys.stderr)
        return 2


def build_export_parser() -> argparse.ArgumentParser:
    from psjob.foundation.checkpoint.export import DEFAULT_ROW_GROUP_ROWS
    p = argparse.ArgumentParser(prog="psjob export", description="Export a checkpoint's sparse tables as "
                                "Parquet and its dense variables as .npy, with manifest.json "
                                "(docs/user/checkpoints.md, \"Exported tables (Parquet)\").")
    p.add_argument("checkpoint", help="a save, or a root (its newest good checkpoint); a directory or "
                                      "s3://BUCKET/PREFIX")
    p.add_argument("out", help="a new local directory")
    p.add_argument("--format", required=True, choices=["parquet"], help="the table format (parquet)")
    p.add_argument("--with-optimizer-state", action="store_true",
                   help="add each table's per-row optimizer state columns (opt_<name>)")
    p.add_argument("--row-group-rows", type=int, default=DEFAULT_ROW_GROUP_ROWS,
                   help=f"rows per Parquet row group (default {DEFAULT_ROW_GROUP_ROWS})")
    p.add_argument("--step", type=int, default=None, help="CHECKPOINT is a root: export this step")
    return p


def export_main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    from psjob.foundation.checkpoint.export import export_checkpoint
    out = out or sys.stdout
    args = build_export_parser().parse_args(argv)
    if args.row_group_rows < 1:
        print(f"psjob export: --row-group-rows must be >= 1, got {args.row_group_rows}", file=sys.stderr)
        return 2
    try:
        if not storage.for_path(args.checkpoint).is_dir(args.checkpoint):
            print(f"psjob export: {args.checkpoint!r} is not a directory", file=sys.stderr)
            return 2
        man = export_checkpoint(args.checkpoint, args.out, with_optimizer_state=args.with_optimizer_state,
                                row_group_rows=args.row_group_rows, step=args.step)
    except CheckpointError as exc:
        print(f"psjob export: {exc}; nothing was written to {args.out}", file=sys.stderr)
        return 1
    except storage.StorageError as exc:
        print(f"psjob export: {exc}", file=sys.stderr)
        return 2
    for name, t in sorted(man["tables"].items()):
        cols = ", ".join(c["name"] for c in t["columns"])
        print(f"table {name}: {t['rows']} rows x {t['dim']} in {len(t['files'])} file(s) ({cols})", file=out)
    print(f"{len(man['dense'])} dense variable(s); export of step {man['source'].get('step', '-')} "
          f"written to {args.out}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
