"""The fixed shape of the synthetic CTR data: slots, vocabularies, id modes.

These numbers are part of the file format (readers check dense-mode ids
against them), so they are constants, not options: changing one changes
every generated file. Only the hidden model's weights and the examples
depend on the seed.
"""
from __future__ import annotations

import numpy as np

NUM_DENSE = 13
NUM_SLOTS = 26
DENSE_DECIMALS = 4  # dense values are written with exactly this many decimals

# Vocabulary size of each sparse slot, 10^2..10^5 like Criteo's mix of small
# categorical columns and huge id columns.
SLOT_VOCAB = (1000, 500, 80000, 30000, 200, 100, 12000, 600, 300, 9000, 5000,
              100000, 3000, 150, 15000, 60000, 100, 4000, 2000, 400, 50000,
              120, 250, 40000, 800, 25000)

# Zipf-like skew per slot (exponent of the rank-frequency power law): higher
# means a few ids dominate; lower leaves a long tail of rarely seen ids.
SLOT_ZIPF = (1.3, 1.2, 1.05, 1.1, 1.4, 1.5, 1.1, 1.25, 1.3, 1.1, 1.15, 1.05,
             1.2, 1.4, 1.1, 1.05, 1.5, 1.2, 1.2, 1.3, 1.05, 1.4, 1.3, 1.1,
             1.25, 1.1)

# Slots that carry a variable number of ids (1..MAX_IDS_PER_SLOT) per example,
# so models need sequence pooling; every other slot carries exactly one id.
MULTI_ID_SLOTS = (2, 8, 14, 20)
MAX_IDS_PER_SLOT = 5

# Dense id mode: slot s uses global ids SLOT_OFFSETS[s] .. SLOT_OFFSETS[s]+SLOT_VOCAB[s]-1,
# so one embedding table of SPARSE_FEATURE_DIM rows serves all slots.
SLOT_OFFSETS = tuple(int(x) for x in np.concatenate([[0], np.cumsum(SLOT_VOCAB)[:-1]]))
SPARSE_FEATURE_DIM = int(sum(SLOT_VOCAB))

ID_MODES = ("dense", "hash")

_HASH_SALT = np.uint64(0x5EED_C7A0_0000_0001)


def _splitmix64(z):
    """SplitMix64 finaliser on a uint64 array, in place (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z += np.uint64(0x9E3779B97F4A7C15)
        t = z >> np.uint64(30)
        z ^= t
        z *= np.uint64(0xBF58476D1CE4E5B9)
        np.right_shift(z, np.uint64(27), out=t)
        z ^= t
        z *= np.uint64(0x94D049BB133111EB)
        np.right_shift(z, np.uint64(31), out=t)
        z ^= t
    return z


def hash_ids(slot, local_ids):
    """Hash-mode id of (slot, local id): a fixed, random-looking int64.

    SplitMix64 is a bijection on 64-bit words, so distinct (slot, id) pairs
    never collide; the result spans all of int64, negatives included.
    `slot` may be an array that broadcasts against `local_ids` (a column of
    slot numbers for rows of ids).
    """
    key = np.asarray(local_ids).astype(np.uint64)  # a copy: hashed in place
    key |= np.uint64(np.asarray(slot) + 1) << np.uint64(40)
    key ^= _HASH_SALT
    return _splitmix64(key).view(np.int64)


def global_ids(slot, local_ids, id_mode):
    """Ids as written to files for slot `slot` in `id_mode`."""
    local_ids = np.asarray(local_ids, dtype=np.int64)
    if id_mode == "dense":
        return local_ids + SLOT_OFFSETS[slot]
    if id_mode == "hash":
        return hash_ids(slot, local_ids)
    raise ValueError(f"id_mode must be one of {ID_MODES}, got {id_mode!r}")


def check_id_mode(id_mode):
    if id_mode not in ID_MODES:
        raise ValueError(f"id_mode must be one of {ID_MODES}, got {id_mode!r}")
    return id_mode
