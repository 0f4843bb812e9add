"""Checkpoints of psjob jobs: the on-disk format, distributed saves, restore and retention.

Modules, lowest first (docs/checkpoints.md describes the format and the protocol):

    storage       where the bytes live: a local directory or s3://BUCKET/PREFIX (stdlib only)
    s3, s3client  the S3 store and psjob's own small SigV4 client
    format        array files, manifests, atomic writes, checksums (numpy + stdlib only;
                  fluid.io builds on it)
    tables        distributed-table shards keyed by feature id, re-shardable N -> M
    store         a checkpoint root: step-N directories, status, retention
    protocol      the freeze / save / thaw commands over CheckpointNotify
    pserver_side  what a pserver does on those commands; restore at start-up
    pserver_load  loading a pserver's slices out of a whole-model save
    distributed   trainer 0's save: recv_save of the slices, table shards, manifest
    periodic      Checkpointer: every N steps / T seconds, positions, resume
    cli           `psjob checkpoint list|inspect|verify DIR|s3://BUCKET/PREFIX`

The public names below are imported lazily: fluid.io imports `format` while
the framework is still initializing, and `distributed` imports the framework.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "CheckpointError": "format",
    "MANIFEST": "format",
    "read_manifest": "format",
    "CheckpointInfo": "store",
    "scan": "store",
    "candidates": "store",
    "newest_good": "store",
    "verify": "store",
    "apply_retention": "store",
    "step_dirname": "store",
    "CheckpointAbandoned": "distributed",
    "DistInfo": "distributed",
    "SaveRequest": "distributed",
    "Checkpointer": "periodic",
    "CheckpointConfig": "periodic",
    "load_pserver_slices": "pserver_load",
    "restore_newest": "pserver_load",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'psjob.checkpoint' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
