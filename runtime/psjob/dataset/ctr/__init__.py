"""Synthetic Criteo-like click-through data: generator, text format, readers.

Shape: 13 dense features in [0, 1] and 26 sparse slots with Zipf-skewed
vocabularies of 10^2..10^5 ids (four slots carry 1..5 ids per example);
labels come from a hidden logistic model (see `_synth`). Typical use:

    from psjob.dataset import ctr
    ctr.generate("/data/ctr", num_examples=1_000_000, num_files=8, seed=0)
    for batch in ctr.batches("/data/ctr", 1024):          # fast, stacked
        batch.dense, batch.ids[s], batch.lod[s], batch.label
    reader = ctr.reader("/data/ctr")                      # Paddle-style, per example

In `id_mode="dense"` ids are unique across slots, slot s using
SLOT_OFFSETS[s] .. SLOT_OFFSETS[s]+SLOT_VOCAB[s]-1 (SPARSE_FEATURE_DIM in all);
in `id_mode="hash"` they are 64-bit hashes of (slot, id), for tables keyed by
arbitrary int64. Both modes hold the same examples and labels.
`batches(..., format="criteo" | "tsv40" | "parquet")` reads the Criteo TSV
logs, the anchor's 40-column TSV and Parquet into the same batches.
The format and the error policy are documented in docs/user/data.md.
"""
from psjob.dataset.ctr._errors import BadLine, DataError, Problem, ReaderStats
from psjob.dataset.ctr._generate import GeneratedSet, generate, shard_name
from psjob.dataset.ctr._layout import (
                                       DENSE_DECIMALS,
                                       ID_MODES,
                                       MAX_IDS_PER_SLOT,
                                       MULTI_ID_SLOTS,
                                       NUM_DENSE,
                                       NUM_SLOTS,
                                       SLOT_OFFSETS,
                                       SLOT_VOCAB,
                                       SPARSE_FEATURE_DIM,
                                       global_ids,
                                       hash_ids,
)
from psjob.dataset.ctr._metrics import expected_auc, roc_auc
from psjob.dataset.ctr._parquet import ColumnMap
from psjob.dataset.ctr._reader import FORMATS, CtrBatch, batches, list_files, reader
from psjob.dataset.ctr._synth import Examples, HiddenModel, sample

__all__ = [
    "BadLine", "ColumnMap", "CtrBatch", "FORMATS", "DENSE_DECIMALS", "DataError", "Examples", "GeneratedSet",
    "HiddenModel", "ID_MODES", "MAX_IDS_PER_SLOT", "MULTI_ID_SLOTS", "NUM_DENSE", "NUM_SLOTS",
    "Problem", "ReaderStats", "SLOT_OFFSETS", "SLOT_VOCAB", "SPARSE_FEATURE_DIM", "batches",
    "expected_auc", "generate", "global_ids", "hash_ids", "list_files", "reader", "roc_auc",
    "sample", "shard_name",
]
