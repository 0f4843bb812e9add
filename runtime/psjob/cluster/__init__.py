"""The distributed runtime: the processes of a job and the wires between them.

    protocol.py and checkpoint_protocol.py: the trainer ↔ pserver seam (typed Protocols
                and messages, stdlib only: the transports below implement it)
    rpc/        frames, codec, TLS, the per-job secret, the gRPC and data-plane transports
    pserver/    the pserver side: PserverState and the process serving it
    trainer/    the trainer side: communicators, geo-SGD, trainer-side checkpoints, telemetry
    heter/      the heterogeneous (CPU + device) trainer split
    inmemory.py a whole cluster in one process, no sockets (tests, the single-process driver)
    collective/ the collective (NCCL2-mode) trainers' ring

The pserver side and the trainer side do not import each other (tests/unit/test_layering.py):
they meet only through the seam.
"""
