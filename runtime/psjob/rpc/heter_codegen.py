"""Regenerates heter_pb2.py and heter_pb2_grpc.py from heter.proto (needs grpcio-tools).

`python -m psjob.rpc.heter_codegen [OUT_DIR]`. heter.proto imports
psjob.proto (for Tensor); the generated modules' imports of psjob_pb2 and
heter_pb2 are rewritten to be package-relative.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_RELATIVE = {
    "import psjob_pb2 as psjob__pb2": "from . import psjob_pb2 as psjob__pb2",
    "import heter_pb2 as heter__pb2": "from . import heter_pb2 as heter__pb2",
}


def generate(out_dir: str = HERE) -> list[str]:
    from grpc_tools import protoc
    import grpc_tools
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{HERE}", f"-I{include}", f"--python_out={out_dir}",
                      f"--grpc_python_out={out_dir}", os.path.join(HERE, "heter.proto")])
    if rc != 0:
        raise RuntimeError(f"protoc failed with status {rc}")
    files = [os.path.join(out_dir, "heter_pb2.py"), os.path.join(out_dir, "heter_pb2_grpc.py")]
    for path in files:
        with open(path) as f:
            text = f.read()
        for old, new in _RELATIVE.items():
            text = text.replace(old, new)
        with open(path, "w") as f:
            f.write(text)
    return files


if __name__ == "__main__":
    print("\n".join(generate(sys.argv[1] if len(sys.argv) > 1 else HERE)))
