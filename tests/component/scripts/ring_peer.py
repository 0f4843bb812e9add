"""A ring member for tests/component/test_collective.py: joins the ring as RANK, then
all-reduces ROUNDS arrays (arange(SIZE) * (rank + 1), DTYPE) and prints each sum's checksum.

    ring_peer.py RANK ENDPOINTS TOKEN ROUNDS SIZE DTYPE
After the rounds it prints "idle" and blocks reading stdin (the test kills it or closes stdin).
TLS as the process's PSJOB_TLS_* variables say (its settings.rpc.tls), as a trainer's ring takes it.
"""
import sys

import numpy as np

from psjob.cluster.collective.ring import CollectiveError, Ring
from psjob.foundation.settings import process_settings


def main():
    rank, endpoints, token, rounds, size, dtype = sys.argv[1:7]
    ring = Ring(int(rank), endpoints.split(","), token, timeout_s=30, connect_timeout_s=30,
                tls=process_settings().rpc.tls)
    try:
        ring.connect()
        print("joined", flush=True)
        for i in range(int(rounds)):
            out = ring.allreduce(np.arange(int(size), dtype=dtype) * (int(rank) + 1))
            if int(rounds) <= 10 or i < 3:  # many rounds: the first few show the ring works
                print(f"sum {out.dtype} {float(out.astype(np.float64).sum())!r}", flush=True)
    except CollectiveError as exc:
        print(f"CollectiveError: {exc}", flush=True)
        return 3
    print("idle", flush=True)
    sys.stdin.read()
    ring.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
