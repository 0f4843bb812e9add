"""Regenerates psjob_pb2.py from psjob.proto (needs grpcio-tools).

`python -m psjob.rpc.codegen [OUT_DIR]`. Only the messages are generated:
the client and the server build their method tables themselves
(client._method_callables, server._method_handlers), because the data-plane
methods carry frames (frames.py), not the messages as protobuf encodes them.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def generate(out_dir: str = HERE) -> list[str]:
    from grpc_tools import protoc
    import grpc_tools
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{HERE}", f"-I{include}", f"--python_out={out_dir}",
                      os.path.join(HERE, "psjob.proto")])
    if rc != 0:
        raise RuntimeError(f"protoc failed with status {rc}")
    return [os.path.join(out_dir, "psjob_pb2.py")]


if __name__ == "__main__":
    print("\n".join(generate(sys.argv[1] if len(sys.argv) > 1 else HERE)))
