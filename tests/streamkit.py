"""Streams of time-partitioned CTR folders whose every example carries its own number.

Shared by tests/unit/test_data_stream.py and tests/component/test_stream_job.py. Example n
is a valid line of psjob's CTR text format (docs/user/data.md) whose slot AUDIT_SLOT holds the
dense-mode id SLOT_OFFSETS[AUDIT_SLOT] + n, so the ids a trainer fed (its --audit_ids log)
say which examples it trained; labels alternate so the AUC op sees both classes.
"""
import os

from psjob.dataset import ctr

AUDIT_SLOT = 11   # psjob.training.stream.AUDIT_SLOT: 100,000 ids, one per example


def line(n: int) -> bytes:
    dense = ",".join(f"{((n * 7 + k) % 97) / 100:.4f}" for k in range(ctr.NUM_DENSE))
    ids = []
    for s in range(ctr.NUM_SLOTS):
        local = n if s == AUDIT_SLOT else (n * 31 + s) % ctr.SLOT_VOCAB[s]
        ids.append(str(ctr.SLOT_OFFSETS[s] + local))
    return f"{n % 2}\t{dense}\t{','.join(ids)}\n".encode()


def example_number(global_id: int) -> int:
    return int(global_id) - ctr.SLOT_OFFSETS[AUDIT_SLOT]


def folder_bytes(first: int, counts) -> dict:
    """{file name: bytes} of files holding examples first, first+1, ... (counts[i] in file i)."""
    out, n = {}, first
    for i, count in enumerate(counts):
        out[f"part-{i:05d}"] = b"".join(line(k) for k in range(n, n + count))
        n += count
    return out


def write_folder(root, folder: str, first: int, counts, *, done: bool = True, marker: str = "_SUCCESS",
                 extra: dict | None = None) -> int:
    """Write a local folder (files, then the done marker); the number after its last example."""
    path = os.path.join(root, folder)
    os.makedirs(path, exist_ok=True)
    for name, data in {**folder_bytes(first, counts), **(extra or {})}.items():
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)
    if done:
        mark(root, folder, marker)
    return first + sum(counts)


def mark(root, folder: str, marker: str = "_SUCCESS") -> None:
    with open(os.path.join(root, folder, marker), "wb"):
        pass
