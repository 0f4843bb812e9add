"""The checkpoint format of psjob jobs: files, manifests, table shards, a root of steps.

Numpy and the stdlib only: the framework (fluid.io) builds on it, and so do the
runtime's two halves of the distributed protocol above it — the pserver's in
psjob.ps (checkpoint_protocol, checkpoint_service, checkpoint_restore) and
trainer 0's in psjob.fleet (checkpoint_save, checkpointer). Modules, lowest
first (docs/checkpoints.md describes the format and the protocol):

    storage       where the bytes live: a local directory or s3://BUCKET/PREFIX (stdlib only)
    s3, s3client  the S3 store and psjob's own small SigV4 client
    format        array files, manifests, atomic writes, checksums
    tables        distributed-table shards keyed by feature id, re-shardable N -> M
    store         a checkpoint root: step-N directories, status, retention
    cli           `psjob checkpoint list|inspect|verify DIR|s3://BUCKET/PREFIX`
"""
from .format import MANIFEST, CheckpointError, read_manifest  # noqa: F401
from .store import (CheckpointInfo, apply_retention, candidates, newest_good, scan, step_dirname,  # noqa: F401
                    verify)
