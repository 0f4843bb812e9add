"""Model definitions shared by examples, entrypoints, tests and benchmarks.

BUILT_IN is the built-in job's registry (`psjob worker --model NAME`): each name is a
CTRConfig the job completes with its options (table size, optimizer, devices).
"""
from psjob.training.models.ctr import CTRConfig

BUILT_IN = {
    "ctr": CTRConfig(),                  # the CTR DNN: embeddings + dense features -> MLP
    "wide_deep": CTRConfig(wide=True),   # the same deep part plus a linear (wide) part
}
