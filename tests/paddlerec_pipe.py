"""A QueueDataset pipe_command for the PaddleRec models that ship no pipe reader of their own.

PaddleRec's tools/static_ps_trainer.py trains only from a QueueDataset or InmemoryDataset,
whose `runner.pipe_command` turns a data file on stdin into MultiSlot lines; of the zoo's
models only rank/dnn, rank/wide_deep and recall/ncf ship such a reader (queuedataset_reader.py).
For the others this script is that command: it runs the model's own DataLoader reader
(`runner.train_reader_path`'s RecDataset, the one static_trainer.py uses) over the file and
prints each example it yields as a MultiSlot line: per field, in order, its value count and
its values (integers as such, floats with repr, which reads back to the same float32).

    runner.pipe_command="python tests/paddlerec_pipe.py"   (static_ps_trainer.py appends
    the config path and its utils folder, as for PaddleRec's own pipe readers)
"""
import os
import sys
import tempfile

import numpy as np


def _line(example):
    fields = []
    for field in example:
        values = np.asarray(field).reshape(-1)
        if values.dtype.kind in "iub":
            text = " ".join(str(int(v)) for v in values)
        else:
            text = " ".join(repr(float(v)) for v in values)
        fields.append(f"{values.size} {text}".rstrip())
    return " ".join(fields)


def main(yaml_path, utils_path):
    sys.path.append(utils_path)
    import common_ps
    config = common_ps.YamlHelper().load_yaml(yaml_path)
    model_dir = os.path.dirname(os.path.abspath(yaml_path))
    config["config_abs_dir"] = model_dir
    sys.path.insert(0, model_dir)
    reader = __import__(config.get("runner.train_reader_path", "reader"))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "part")
        with open(path, "wb") as f:
            f.write(sys.stdin.buffer.read())
        out = sys.stdout
        for example in reader.RecDataset([path], config=config):
            out.write(_line(example) + "\n")
        out.flush()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: paddlerec_pipe.py CONFIG_YAML UTILS_DIR < DATA_FILE")
    main(sys.argv[1], sys.argv[2])
