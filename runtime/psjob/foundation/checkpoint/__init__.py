"""The checkpoint format of psjob jobs: files, manifests, table shards, a root of steps.

Numpy and the stdlib only: the framework (fluid.io) builds on it, and so do the
runtime's two halves of the distributed protocol above it — the pserver's in
psjob.cluster (checkpoint_protocol, checkpoint_service, checkpoint_restore) and
trainer 0's in psjob.fleet (checkpoint_save, checkpointer). Modules, lowest
first (docs/user/checkpoints.md describes the format and the protocol):

    backend       the interface of a store (where the bytes live), StorageError
    s3client      psjob's own small S3 client: AWS_* configuration, SigV4, HTTP (stdlib only)
    s3            the store on s3://BUCKET/PREFIX: multipart streaming, listings, deletes
    storage       a path's store: a local directory, or s3:// (for_path, join)
    format        array files, manifests, atomic writes, checksums
    tables        distributed-table shards keyed by feature id, re-shardable N -> M
    chain         incremental checkpoints: a base and its deltas, restore order, compact
    store         a checkpoint root: step-N directories, status (chains included), retention
    export        a checkpoint's tables as Parquet and back (pyarrow): `psjob export`, `checkpoint import`
    cli           `psjob checkpoint list|inspect|verify|import|compact`, `psjob export`
"""
from psjob.foundation.checkpoint.format import MANIFEST, CheckpointError, read_manifest
from psjob.foundation.checkpoint.store import (
    CheckpointInfo,
    apply_retention,
    candidates,
    newest_good,
    scan,
    step_dirname,
    verify,
)
