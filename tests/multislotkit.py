"""A PaddleRec-style reader's examples through a `MultiSlotDataGenerator` and a
`MultiSlotStringDataGenerator`, for comparing the bytes psjob's writer prints with Paddle's.

Shared by tests/unit/test_data_generator_bytes.py, which pins the digest. Run as a script
with Paddle's interpreter (no psjob) it prints Paddle's own bytes:

    python tests/multislotkit.py | md5sum      # Paddle 3.0.0: DIGEST below

The examples: a label, a dense slot of 13 floats (random magnitudes from 1e-8 to 1e8 and
edge values: -0.0, 1e+16, inf, the smallest subnormal, the largest double; every 7th
example's as numpy.float64, a float subclass), 26 one-id slots (some ids near 2**63), a
multi-valued slot; and string slots.
"""
import io
import random
import sys

DIGEST = "a1efdee2a79b42e5c12642bb2263975b"  # md5 of write(fleet) with Paddle 3.0.0, 600 lines
EDGES = [0.0, -0.0, 1e16, 1e-7, 0.1, 1 / 3, 123456789.125, -2.5, float("inf"), 5e-324, 1.7976931348623157e308]


def examples(n=300, seed=7):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        dense = [rng.choice(EDGES) if rng.random() < 0.3 else rng.random() * 10 ** rng.randint(-8, 8)
                 for _ in range(13)]
        ids = [rng.randint(0, 2 ** 63 - 1) if rng.random() < 0.2 else rng.randint(0, 10 ** 6) for _ in range(26)]
        out.append((len(out) % 2, dense, ids, [rng.randint(0, 99) for _ in range(rng.randint(1, 4))]))
    return out


def write(fleet) -> str:
    """What the two generators of `fleet` (paddle.distributed.fleet or psjob's) print."""
    import numpy as np
    rows = examples()

    class Numbers(fleet.MultiSlotDataGenerator):
        def generate_sample(self, line):
            def reader():
                label, dense, ids, extra = rows[int(line)]
                if int(line) % 7 == 3:
                    dense = [np.float64(v) for v in dense]
                yield [("click", [label]), ("dense_feature", list(dense))] + \
                    [(str(k + 1), [v]) for k, v in enumerate(ids)] + [("multi", list(extra))]
            return reader

    class Strings(fleet.MultiSlotStringDataGenerator):
        def generate_sample(self, line):
            def reader():
                label, _, ids, extra = rows[int(line)]
                yield [("click", [str(label)]), ("words", [f"w{v}" for v in extra]),
                       ("ids", [str(v) for v in ids[:3]])]
            return reader

    written = []
    for generator in (Numbers(), Strings()):
        stdout, stdin = sys.stdout, sys.stdin
        sys.stdout, sys.stdin = io.StringIO(), io.StringIO("".join(f"{i}\n" for i in range(len(rows))))
        try:
            generator.run_from_stdin()
            written.append(sys.stdout.getvalue())
        finally:
            sys.stdout, sys.stdin = stdout, stdin
    return "".join(written)


if __name__ == "__main__":
    import paddle.distributed.fleet as paddle_fleet
    sys.stdout.write(write(paddle_fleet))
