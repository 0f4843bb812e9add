"""The trainers' ring all-reduce (psjob.cluster.collective.ring) against a plain loopback TCP copy.

    python bench/allreduce.py [--trainers 2] [--sizes 1,4,16,64] [--reps 3]

Starts --trainers processes on 127.0.0.1 that form a ring and all-reduce a float32
array of each size (MB) --reps times; prints, per size, the best time and the
bytes per second per trainer (the array's size over the time: what one trainer's
gradient gets through). Beside it, the same bytes sent once through one loopback
socket between two processes — the transport's ceiling on this machine. A ring of
N sends 2(N-1)/N of the array per trainer and adds as it goes, so at N=2 an
all-reduce at about the copy's rate is as fast as the wire allows. Figures from a
shared, loaded machine are noisy: compare the two columns, not runs.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import socket
import time

import numpy as np


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _ring_member(rank, endpoints, sizes, reps, out):
    from psjob.cluster.collective.ring import Ring
    ring = Ring(rank, endpoints, "bench-token").connect()
    for mb in sizes:
        arr = np.ones(mb * (1 << 20) // 4, dtype=np.float32)
        ring.barrier()
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            ring.allreduce(arr)
            best = min(best, time.perf_counter() - t0)
        if rank == 0:
            out.put((mb, best))
    ring.close()


def _copy_receiver(port, total, ready):
    srv = socket.create_server(("127.0.0.1", port))
    ready.set()
    conn, _ = srv.accept()
    buf = bytearray(4 << 20)
    got = 0
    while got < total:
        n = conn.recv_into(buf)
        if not n:
            break
        got += n
    conn.sendall(b"k")
    conn.close()
    srv.close()


def loopback_copy(mb, reps):
    """Best seconds to send `mb` MB through one loopback socket and hear it arrived."""
    payload = memoryview(bytes(mb << 20))
    best = float("inf")
    for _ in range(reps):
        port = _free_ports(1)[0]
        ready = mp.Event()
        proc = mp.Process(target=_copy_receiver, args=(port, len(payload), ready))
        proc.start()
        ready.wait(30)
        sock = socket.create_connection(("127.0.0.1", port))
        t0 = time.perf_counter()
        sock.sendall(payload)
        sock.recv(1)
        best = min(best, time.perf_counter() - t0)
        sock.close()
        proc.join()
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--sizes", default="1,4,16,64", help="array sizes in MB")
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    endpoints = [f"127.0.0.1:{port}" for port in _free_ports(args.trainers)]
    out = mp.Queue()
    members = [mp.Process(target=_ring_member, args=(r, endpoints, sizes, args.reps, out))
               for r in range(args.trainers)]
    for m in members:
        m.start()
    ring = dict(out.get(timeout=600) for _ in sizes)
    for m in members:
        m.join()
    print(f"{'MB':>4} {'ring s':>8} {'ring MB/s/trainer':>18} {'copy s':>8} {'copy MB/s':>10}  "
          f"({args.trainers} trainers, best of {args.reps})")
    for mb in sizes:
        copy = loopback_copy(mb, args.reps)
        print(f"{mb:>4} {ring[mb]:>8.4f} {mb / ring[mb]:>18.0f} {copy:>8.4f} {mb / copy:>10.0f}")


if __name__ == "__main__":
    main()
