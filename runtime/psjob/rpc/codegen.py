"""Regenerates psjob_pb2.py and psjob_pb2_grpc.py from psjob.proto (needs grpcio-tools).

`python -m psjob.rpc.codegen [OUT_DIR]`; imports inside the generated grpc
module are rewritten to be package-relative.
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
                      f"--grpc_python_out={out_dir}", os.path.join(HERE, "psjob.proto")])
    if rc != 0:
        raise RuntimeError(f"protoc failed with status {rc}")
    grpc_file = os.path.join(out_dir, "psjob_pb2_grpc.py")
    with open(grpc_file) as f:
        text = f.read()
    text = text.replace("import psjob_pb2 as psjob__pb2", "from . import psjob_pb2 as psjob__pb2")
    with open(grpc_file, "w") as f:
        f.write(text)
    return [os.path.join(out_dir, "psjob_pb2.py"), grpc_file]


if __name__ == "__main__":
    print("\n".join(generate(sys.argv[1] if len(sys.argv) > 1 else HERE)))
