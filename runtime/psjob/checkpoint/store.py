"""A checkpoint root: numbered checkpoints, which of them are good, retention.

    <root>/step-00000120/__manifest__.json    a checkpoint (complete: it has a manifest)
    <root>/step-00000130/                     being written, or abandoned: no manifest
    <root>/positions/trainer-<i>.json         each trainer's latest data position

Status of a checkpoint directory:

    ok          a valid manifest, and every file it lists exists with its
                recorded size (a stat, no reading)
    incomplete  no manifest (a save in progress, or one that crashed)
    damaged     a manifest, but a file is missing or has the wrong size, or a
                loader found a checksum mismatch and marked it (__corrupt__.txt)
    invalid     the manifest cannot be read or is not psjob's format

`candidates(root)` lists the ok ones newest first; loaders walk that list and
fall back to the next when reading a file reveals a checksum mismatch
(`verify` reads and hashes everything, for `psjob checkpoint verify`).

Retention keeps the `keep` newest ok checkpoints and removes older ones, and
removes incomplete or damaged directories older than the newest ok one. It
never removes the newest ok checkpoint, whatever `keep` says, and never
touches anything newer than it (that may be a save in progress).
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from .format import (CORRUPT_MARKER, MANIFEST, CheckpointError, manifest_files, quick_check, read_array,
                     read_manifest, read_var)

STEP_RE = re.compile(r"^step-(\d+)$")
OK, INCOMPLETE, DAMAGED, INVALID = "ok", "incomplete", "damaged", "invalid"


def step_dirname(step: int) -> str:
    return f"step-{int(step):08d}"


@dataclass(frozen=True)
class CheckpointInfo:
    path: str
    step: int
    status: str
    reason: str = ""
    manifest: dict | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK


def inspect_dir(path: str, step: int | None = None) -> CheckpointInfo:
    """Status of one saved directory (stat checks only)."""
    if step is None:
        m = STEP_RE.match(os.path.basename(os.path.normpath(path)))
        step = int(m.group(1)) if m else -1
    if not os.path.exists(os.path.join(path, MANIFEST)):
        return CheckpointInfo(path, step, INCOMPLETE, f"no {MANIFEST}")
    try:
        doc = read_manifest(path)
    except CheckpointError as exc:
        return CheckpointInfo(path, step, INVALID, str(exc))
    if doc.get("step") is not None:
        step = int(doc["step"])
    marker = os.path.join(path, CORRUPT_MARKER)
    if os.path.exists(marker):
        with open(marker, errors="replace") as f:
            return CheckpointInfo(path, step, DAMAGED, f"marked corrupt: {f.read().strip()[:300]}", doc)
    for rel, _what, entry in manifest_files(doc):
        problem = quick_check(os.path.join(path, rel), entry)
        if problem:
            return CheckpointInfo(path, step, DAMAGED, problem, doc)
    return CheckpointInfo(path, step, OK, "", doc)


def scan(root: str) -> list[CheckpointInfo]:
    """Every step-N directory under root, oldest first."""
    if not os.path.isdir(root):
        return []
    found = []
    for name in os.listdir(root):
        m = STEP_RE.match(name)
        if m and os.path.isdir(os.path.join(root, name)):
            found.append(inspect_dir(os.path.join(root, name), int(m.group(1))))
    return sorted(found, key=lambda c: (c.step, c.path))


def committed(root: str) -> list[CheckpointInfo]:
    """Checkpoints with a manifest (good or not), newest first; a save directory is its own list."""
    if os.path.exists(os.path.join(root, MANIFEST)):
        return [inspect_dir(root)]
    return [c for c in reversed(scan(root)) if c.status != INCOMPLETE]


def candidates(root: str) -> list[CheckpointInfo]:
    """Loadable checkpoints (status ok), newest first."""
    return [c for c in committed(root) if c.ok]


def newest_good(root: str) -> CheckpointInfo | None:
    found = candidates(root)
    return found[0] if found else None


def mark_corrupt(path: str, reason: str) -> None:
    """Record that a checkpoint failed its checksums (readers skip it from now on)."""
    try:
        with open(os.path.join(path, CORRUPT_MARKER), "w") as f:
            f.write(reason + "\n")
    except OSError:
        pass  # a read-only volume: every reader detects the corruption itself


def is_checkpoint_root(path: str) -> bool:
    return os.path.isdir(path) and not os.path.exists(os.path.join(path, MANIFEST)) and any(
        STEP_RE.match(n) for n in os.listdir(path))


def verify(path: str) -> list[str]:
    """Read every file of one saved directory and check its checksum; the problems found."""
    try:
        doc = read_manifest(path)
    except CheckpointError as exc:
        return [str(exc)]
    problems = []
    npz_cache: dict = {}
    for name, entry in sorted(doc["vars"].items()):
        try:
            read_var(path, name, entry, npz_cache)
        except CheckpointError as exc:
            problems.append(str(exc))
    for table, tdoc in sorted(doc.get("tables", {}).items()):
        for shard in tdoc.get("shards", []):
            for part, entry in sorted(shard.get("files", {}).items()):
                try:
                    read_array(os.path.join(path, entry["file"]), entry, f"{table} shard {shard.get('index')} {part}")
                except CheckpointError as exc:
                    problems.append(str(exc))
    for table, tdoc in doc.get("tables", {}).items():
        want = set(range(int(tdoc.get("num_shards", 0))))
        have = {int(s["index"]) for s in tdoc.get("shards", [])}
        if want != have:
            problems.append(f"table {table!r}: shards {sorted(have)} of {tdoc.get('num_shards')}")
    return problems


def apply_retention(root: str, keep: int) -> list[str]:
    """Remove old checkpoints beyond the `keep` newest good ones; the removed paths."""
    keep = max(1, int(keep))
    found = scan(root)
    good = [c for c in found if c.ok]
    if not good:
        return []
    newest = good[-1]
    doomed = [c for c in good[:-keep]]
    doomed += [c for c in found if not c.ok and c.step < newest.step]
    removed = []
    for c in doomed:
        if c.path == newest.path:
            continue
        # Rename first so a half-removed directory never looks like a checkpoint.
        trash = os.path.join(root, f".deleting-{os.path.basename(c.path)}")
        try:
            os.replace(c.path, trash)
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(c.path)
        except OSError:
            continue
    return removed
