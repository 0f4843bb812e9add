"""Synthetic stand-ins, in the exact text format, for the data Paddle 1.8's distributed test
programs download (tests/component/test_paddle18_dist_programs.py), written into a
DATA_HOME in the layout paddle.dataset.common.download leaves (DATA_HOME/<module>/<file>)."""
import io
import os
import random
import tarfile

AVAZU_URL = "http://paddle-ctr-data.bj.bcebos.com/avazu_ctr_data.tgz"
SIMNET_URL = "http://paddle-dist-ce-data.bj.bcebos.com/simnet.train.1000"


def _add(tar, name, text):
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def avazu_ctr(data_home, lines=1000, dnn_dim=1000, lr_dim=1000, seed=7):
    """avazu_ctr_data.tgz as ctr_dataset_reader.py reads it: per line `dnn ids<TAB>lr id:1
    ...<TAB>click`, and data.meta.txt with the two input sizes; also extracted beside it (the
    reader extracts it there on first use: done once here so that four processes do not race)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(lines):
        dnn = " ".join(str(rng.randrange(dnn_dim)) for _ in range(rng.randint(1, 8)))
        lr = " ".join("%d:1" % rng.randrange(lr_dim) for _ in range(rng.randint(1, 8)))
        rows.append("%s\t%s\t%d\n" % (dnn, lr, rng.randint(0, 1)))
    train = "".join(rows)
    meta = "dnn_input_dim: %d\nlr_input_dim: %d\n" % (dnn_dim, lr_dim)
    files = {"train.txt": train, "test.txt": train, "infer.txt": train, "data.meta.txt": meta}
    directory = os.path.join(data_home, "avazu_ctr_data")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "avazu_ctr_data.tgz")
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            _add(tar, "avazu_ctr_data/" + name, text)
    with tarfile.open(path, "r:gz") as tar:
        tar.extractall(directory)
    return path


def simnet(data_home, lines=40, dict_dim=1500, seed=11):
    """simnet/train as dist_simnet_bow.py reads it: per line `id;npos nneg;query ids;pos title
    ids...;neg title ids...;` (space-separated ids below the program's dict_dim 1500)."""
    rng = random.Random(seed)

    def ids():
        return " ".join(str(rng.randrange(dict_dim)) for _ in range(rng.randint(1, 6)))

    rows = []
    for i in range(lines):
        nneg = rng.randint(1, 2)
        titles = [ids() for _ in range(1 + nneg)]
        rows.append("%d;1 %d;%s;%s;\n" % (i, nneg, ids(), ";".join(titles)))
    directory = os.path.join(data_home, "simnet")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "train")
    with open(path, "w") as f:
        f.write("".join(rows))
    return path


def all_data(data_home):
    """Every data set above in `data_home`; the URLs whose download they stand for."""
    avazu_ctr(data_home)
    simnet(data_home)
    return [AVAZU_URL, SIMNET_URL]
