"""The checkpoint conversation between trainer 0 and the pservers, over CheckpointNotify.

The RPC carries (dirname, step, tag) and answers a list of strings. psjob
uses the tag as a command and answers one JSON document:

    psjob:freeze;id=<f>;lease=<s>
                             hold every update (pushes, geo deltas) until thawed or
                             until <s> seconds pass; answers the pserver's identity
                             and the persistable variables only it holds. <f> names
                             this freeze (one save); a newer freeze replaces it
    psjob:renew;id=<f>;lease=<s>
                             trainer 0 is still saving: extend freeze <f> by <s>
                             seconds from now. Never freezes anew: a freeze that
                             expired or was replaced or released answers expired
    psjob:save[;link=<l>;kind=base|delta;parent=<p>;track=1]
                             write this pserver's distributed-table shard under
                             dirname; answers the shard's manifest entries. With
                             link=<l> (a periodic checkpoint, chain link <l>): hand
                             the table's tracked changes to that save; kind=delta
                             writes only the rows changed since link <p> (which must be
                             what the pserver tracks from: the freeze answers it as
                             delta_base) and the ids evicted since; track=1 starts
                             tracking changes if it has not
    psjob:thaw;id=<f>        release freeze <f>; answers whether it had expired (or
                             had been released or replaced) meanwhile — then the
                             save is not a consistent cut and is abandoned
    psjob:thaw               (no id) release whatever freeze is held: a restarted
                             trainer 0 clears the freeze its dead predecessor left
    psjob:commit[;link=<l>]  after the manifest is written: the checkpoint of `step` in
                             dirname is complete (pservers export it as a metric); with
                             link=<l>, the next delta may be written on top of it
    psjob:load[;table=<t>][;params=1]
                             fleet.load_model: load this pserver's part of the whole-model
                             save in dirname into its live variables and tables, under
                             the state's lock; answers the variables loaded and missing.
                             With table=<t> (fleet.load_one_table): that table's rows only;
                             with params=1 (fleet.load_inference_model): the parameters
                             and the tables' rows, no optimizer accumulators
    psjob:shrink             Paddle's fleet.shrink(): every table trained by Paddle's
                             accessor (sparse_table_configs) drops the rows its rules
                             judge stale; answers {table: rows removed}
    psjob:failed;error=<e>   the save of `step` into dirname failed with error <e> (no
                             manifest): pservers count it and export it as metrics, which
                             the operator's status reports (a failing save is otherwise
                             only in trainer 0's log)

Every answer carries the pserver's `incarnation`, a random id drawn when its
process started: if it differs between freeze and thaw, the pserver
restarted during the checkpoint and trainer 0 abandons it.

Any other tag (Fluid's `checkpoint_notify` op sends none) saves the table
shard and answers the relative file names, as Fluid did.
"""
from __future__ import annotations

import json

# The freeze lease (how long a freeze holds without trainer 0 renewing it: trainer 0
# renews every lease/4 while it saves, so a long save is never cut short; a trainer 0 that
# dies inside the freeze stalls updates for at most this long, docs/user/checkpoints.md)
# and delta checkpoints (PSJOB_CHECKPOINT_INCREMENTAL, _BASE_EVERY: read by trainer 0 and
# by the pservers) are settings: psjob.foundation.settings.CheckpointSettings.
from psjob.foundation.settings import DEFAULT_BASE_EVERY, DEFAULT_FREEZE_LEASE_S, MAX_FREEZE_LEASE_S  # noqa: F401

FREEZE, RENEW, SAVE, THAW, COMMIT = "psjob:freeze", "psjob:renew", "psjob:save", "psjob:thaw", "psjob:commit"
FAILED, LOAD, SHRINK = "psjob:failed", "psjob:load", "psjob:shrink"
COMMANDS = (FREEZE, RENEW, SAVE, THAW, COMMIT, FAILED, LOAD, SHRINK)
MAX_ERROR_CHARS = 300  # of a failed save's error in a FAILED command


def error_param(error: str) -> str:
    """`error` as a tag parameter: one line, no ';' (it separates parameters), bounded."""
    text = " ".join(str(error).split()).replace(";", ",")
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


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
