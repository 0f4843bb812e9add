"""Write the synthetic CTR stream to sharded text files.

`generate` writes examples [0, num_examples) of the stream for `seed` into
`num_files` shards: shard k holds the contiguous range
[k*N//F, (k+1)*N//F), so concatenating the shards in order gives the same
lines whatever F is. Each shard is written to a temporary name and renamed
when complete; `meta.json` (layout, seed, counts, positive rate, Bayes AUC)
is written last, so a directory with meta.json is a finished data set.
"""
from __future__ import annotations

import dataclasses
import json
import operator
import os

import numpy as np

from psjob.dataset.ctr import _layout as layout
from psjob.dataset.ctr._format import render
from psjob.dataset.ctr._metrics import expected_auc
from psjob.dataset.ctr._synth import iter_examples

FORMAT_VERSION = 1
META_FILE = "meta.json"
BAYES_AUC_SAMPLE = 2_000_000  # true probabilities kept for the Bayes AUC, at most


@dataclasses.dataclass(frozen=True)
class GeneratedSet:
    files: tuple
    num_examples: int
    positive_rate: float
    bayes_auc: float   # expected AUC of the true probabilities over (the first 2M) examples
    meta_path: str


def shard_name(index):
    return f"part-{index:05d}.txt"


def generate(out_dir, num_examples, num_files=1, seed=0, id_mode="dense", overwrite=False):
    """Write the data set; return a GeneratedSet describing it.

    Refuses a directory that already holds shards or meta.json unless
    `overwrite`, in which case the old shards are removed first (stale shards
    from a larger earlier run would otherwise be read along with the new).
    """
    num_examples = operator.index(num_examples)
    num_files = operator.index(num_files)
    if num_examples < 0:
        raise ValueError(f"num_examples must be >= 0, got {num_examples}")
    if num_files < 1:
        raise ValueError(f"num_files must be >= 1, got {num_files}")
    layout.check_id_mode(id_mode)
    os.makedirs(out_dir, exist_ok=True)
    old = [n for n in os.listdir(out_dir) if n.startswith("part-") or n == META_FILE]
    if old and not overwrite:
        raise FileExistsError(f"{out_dir} already holds a data set ({sorted(old)[0]}, ...); "
                              "pass overwrite=True or use an empty directory")
    for name in old:
        os.remove(os.path.join(out_dir, name))

    files, positives, probs, kept = [], 0, [], 0
    for k in range(num_files):
        start = k * num_examples // num_files
        stop = (k + 1) * num_examples // num_files
        path = os.path.join(out_dir, shard_name(k))
        tmp = path + ".tmp"
        with open(tmp, "wb") as out:
            for part in iter_examples(seed, start, stop - start):
                text = render(part, id_mode)
                out.write(text)
                positives += int(part.label.sum())
                if kept < BAYES_AUC_SAMPLE:
                    probs.append(part.prob[:BAYES_AUC_SAMPLE - kept])
                    kept += len(probs[-1])
        os.replace(tmp, path)
        files.append(path)

    prob = np.concatenate(probs) if probs else np.zeros(0)
    bayes = expected_auc(prob) if len(prob) > 1 else float("nan")
    rate = positives / num_examples if num_examples else float("nan")
    meta = {
        "format_version": FORMAT_VERSION,
        "seed": int(seed),
        "id_mode": id_mode,
        "num_examples": num_examples,
        "files": [os.path.basename(f) for f in files],
        "num_dense": layout.NUM_DENSE,
        "num_slots": layout.NUM_SLOTS,
        "slot_vocab": list(layout.SLOT_VOCAB),
        "slot_offsets": list(layout.SLOT_OFFSETS),
        "sparse_feature_dim": layout.SPARSE_FEATURE_DIM,
        "multi_id_slots": list(layout.MULTI_ID_SLOTS),
        "positive_rate": rate,
        "bayes_auc": bayes,
        "bayes_auc_examples": len(prob),
    }
    meta_path = os.path.join(out_dir, META_FILE)
    with open(meta_path + ".tmp", "w") as out:
        json.dump(meta, out, indent=1)
    os.replace(meta_path + ".tmp", meta_path)
    return GeneratedSet(tuple(files), num_examples, rate, bayes, meta_path)
