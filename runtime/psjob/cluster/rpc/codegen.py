"""Regenerates psjob_pb2.py and heter_pb2.py from psjob.proto and heter.proto (needs grpcio-tools).

`python -m psjob.cluster.rpc.codegen [OUT_DIR]`. Only the messages are generated: the
clients and servers build their method tables from a ServiceSpec
(base_client.method_callables, base_server.RpcServer), because the pserver's
data-plane methods carry frames (frames.py), not the messages as protobuf
encodes them. heter.proto imports psjob.proto (for Tensor); the generated
module's import of psjob_pb2 is rewritten to be package-relative.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = ("psjob.proto", "heter.proto")
_RELATIVE = {"import psjob_pb2 as psjob__pb2": "from . import psjob_pb2 as psjob__pb2"}


def generate(out_dir: str = HERE) -> list[str]:
    import grpc_tools
    from grpc_tools import protoc
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    files = []
    for proto in PROTOS:
        rc = protoc.main(["protoc", f"-I{HERE}", f"-I{include}", f"--python_out={out_dir}",
                          os.path.join(HERE, proto)])
        if rc != 0:
            raise RuntimeError(f"protoc failed on {proto} with status {rc}")
        path = os.path.join(out_dir, proto.replace(".proto", "_pb2.py"))
        with open(path) as f:
            text = f.read()
        for old, new in _RELATIVE.items():
            text = text.replace(old, new)
        with open(path, "w") as f:
            f.write(text)
        files.append(path)
    return files


if __name__ == "__main__":
    print("\n".join(generate(sys.argv[1] if len(sys.argv) > 1 else HERE)))
