"""Make the Paddle 1.8.5 references of tests/component/test_fluid1_models_zoo.py: for each
pinned model, run the vendored example with real Paddle on fluid1zoo_data's data, dump its
initial parameters (tests/data/fluid1zoo/<name>.npz) and record what it printed and saved
(<name>.json: the result lines' numbers, and per saved parameter its sum and sum of squares).

    git -C MODELS_REPO archive fa73c7f5e^ PaddleRec/ | tar -x -C SRC
    /tmp/probe/vpaddle185/bin/python tests/fluid1zoo_reference.py SRC/PaddleRec [NAME...]

(Paddle 1.8.5 in a Python 3.7 venv: pip install paddlepaddle==1.8.5 "numpy<1.22" pandas.)
SRC is PaddlePaddle/models at fa73c7f5e^, the parent of commit fa73c7f5e ("add enable_static()"):
the vendored tree (its child's child, afaf06e7) differs from it only by the Paddle 2.0 lines
`import paddle; paddle.enable_static()` that commit added to each script's __main__, which
Paddle 1.8.5 does not have (static graphs are its only mode).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fluid1zoo_data as zoo  # noqa: E402

VENDORED = os.path.join(HERE, "thirdparty", "models-fluid", "PaddleRec")
OUT = os.path.join(HERE, "data", "fluid1zoo")


def env_for(python, spec):
    env = dict(os.environ, PYTHONHASHSEED="0", CPU_NUM="1", OMP_NUM_THREADS="1", GLOG_v="0", **spec.get("env", {}))
    env["PATH"] = os.path.dirname(python) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    return env


def prepare(name, root, src=VENDORED):
    spec = zoo.MODELS[name]
    work = os.path.join(root, name)
    shutil.copytree(os.path.join(src, spec["dir"]), work)
    if spec["data"]:
        zoo.WRITERS[spec["data"]](work)
    return spec, work


def main(src, names):
    os.makedirs(OUT, exist_ok=True)
    for name in names or [n for n, s in zoo.MODELS.items() if s["pinned"] is True]:
        root = tempfile.mkdtemp(prefix="fluid1zoo-ref-")
        spec, work = prepare(name, root, src)
        init = os.path.join(OUT, name + ".npz")
        cmd = [sys.executable, "-u", os.path.join(HERE, "fluid1zoo_init.py"), "dump", init, spec["script"]]
        proc = subprocess.run(cmd + spec["args"], cwd=work, env=env_for(sys.executable, spec),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            sys.exit("%s: Paddle exited %d:\n%s" % (name, proc.returncode, proc.stdout[-3000:]))
        ref = {"lines": zoo.results(spec, proc.stdout),
               "params": {p: zoo.param_summary(os.path.join(work, p)) for p in spec["saved"]}}
        if spec.get("infer"):
            infer = spec["infer"]
            zoo.copy_inputs(work, infer)
            proc = subprocess.run([sys.executable, "-u", infer["script"]] + infer["args"], cwd=work,
                                  env=env_for(sys.executable, spec), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
            if proc.returncode != 0:
                sys.exit("%s: Paddle's infer exited %d:\n%s" % (name, proc.returncode, proc.stdout[-3000:]))
            ref["infer_lines"] = zoo.results(infer, proc.stdout)
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(ref, f, indent=1, sort_keys=True)
        print("%s: %d result lines, %d saves, init %d bytes" % (name, len(ref["lines"]), len(ref["params"]),
                                                                os.path.getsize(init)))
        shutil.rmtree(root)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
