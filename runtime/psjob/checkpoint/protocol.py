"""The checkpoint conversation between trainer 0 and the pservers, over CheckpointNotify.

The RPC carries (dirname, step, tag) and answers a list of strings. psjob
uses the tag as a command and answers one JSON document:

    psjob:freeze;lease=<s>   hold every update (pushes, geo deltas) until thawed or
                             until <s> seconds pass; answers the pserver's identity
                             and the persistable variables only it holds
    psjob:save               write this pserver's distributed-table shard under
                             dirname; answers the shard's manifest entries
    psjob:thaw               release the updates; answers whether the freeze had
                             expired meanwhile
    psjob:commit             after the manifest is written: the checkpoint of `step` in
                             dirname is complete (pservers export it as a metric)

Every answer carries the pserver's `incarnation`, a random id drawn when its
process started: if it differs between freeze and thaw, the pserver
restarted during the checkpoint and trainer 0 abandons it.

Any other tag (Fluid's `checkpoint_notify` op sends none) saves the table
shard and answers the relative file names, as Fluid did.
"""
from __future__ import annotations

import json

FREEZE, SAVE, THAW, COMMIT = "psjob:freeze", "psjob:save", "psjob:thaw", "psjob:commit"
COMMANDS = (FREEZE, SAVE, THAW, COMMIT)


def tag(command: str, **params) -> str:
    if command not in COMMANDS:
        raise ValueError(f"unknown checkpoint command {command!r}; expected one of {COMMANDS}")
    return ";".join([command] + [f"{k}={v}" for k, v in sorted(params.items())])


def parse_tag(text: str) -> tuple[str | None, dict]:
    """(command, params), or (None, {}) for a legacy free-form tag."""
    head, *rest = (text or "").split(";")
    if head not in COMMANDS:
        return None, {}
    params = {}
    for item in rest:
        key, sep, value = item.partition("=")
        if sep:
            params[key.strip()] = value.strip()
    return head, params


def encode_reply(doc: dict) -> list[str]:
    return [json.dumps(doc, sort_keys=True)]


def decode_reply(endpoint: str, files) -> dict:
    files = list(files)
    try:
        doc = json.loads(files[0]) if len(files) == 1 else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or "incarnation" not in doc:
        raise RuntimeError(f"pserver {endpoint} answered the checkpoint command with {files[:3]!r}; "
                           "is it an older psjob?")
    return doc
