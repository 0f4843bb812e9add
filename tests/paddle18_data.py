"""Synthetic stand-ins for the downloads of Paddle 1.8's distributed test programs
(tests/thirdparty/paddle18), and the download cache that serves them.

Paddle's programs fetch their data through `paddle.dataset.common.download(url, module,
md5, save_name)`, which returns DATA_HOME/module/<name> when that file's MD5 is the one
given. This machine cannot reach their URLs, and no synthetic file can have the MD5 of the
real one, so `write_cache` writes files in the exact format the programs parse, and
`site_dir` writes a `sitecustomize.py` that the programs' processes import at start (it is
put on PYTHONPATH, which Paddle's harnesses pass to every process they start): it points
DATA_HOME at the synthetic cache and, for these two URLs only, makes `download` check the
synthetic file's MD5 instead of the real one. Everything else in `download` (the cache
path, the MD5 check, the retries) is psjob's own and runs unchanged.

- simnet (dist_simnet_bow.py): DATA_HOME/simnet/train, lines
  `<id>;<n_pos> <n_neg>;<query ids>;<pos title ids>...;<neg title ids>...;` (every field
  ends with `;`, ids space-separated, below the program's dict_dim 1500). The program pairs
  each line's first positive title with each negative one.
- avazu_ctr_data (ctr_dataset_reader.py): DATA_HOME/avazu_ctr_data/avazu_ctr_data.tgz
  holding avazu_ctr_data/{train.txt, test.txt, infer.txt, data.meta.txt}; train.txt lines
  `<dnn ids>\\t<lr id:1 ...>\\t<click>`, data.meta.txt the two lines `dnn_input_dim: N`
  and `lr_input_dim: M`. The archive is also unpacked beside it, as Paddle leaves it after
  the first run (its four processes would otherwise unpack it at once, over each other).
- text_classification (dist_text_classification.py): DATA_HOME/text_classification/imdb.vocab,
  one word a line, and text_classification.tar.gz holding {train,test}/{pos,neg}/<n>.txt,
  one short review each (words from the vocabulary, some punctuation the reader strips).

Generated from fixed seeds: the same bytes every run.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import random
import tarfile

SIMNET_URL = "http://paddle-dist-ce-data.bj.bcebos.com/simnet.train.1000"
CTR_URL = "http://paddle-ctr-data.bj.bcebos.com/avazu_ctr_data.tgz"
TEXT_VOCAB_URL = "http://paddle-dist-ce-data.bj.bcebos.com/imdb.vocab"
TEXT_DATA_URL = "http://paddle-dist-ce-data.bj.bcebos.com/text_classification.tar.gz"
SIMNET_LINES = 300
CTR_LINES = 300
DICT_DIM = 1500  # dist_simnet_bow.py's dict_dim
DNN_INPUT_DIM = 1000
LR_INPUT_DIM = 1000


def simnet_text(lines: int = SIMNET_LINES, seed: int = 1) -> str:
    rng = random.Random(seed)

    def ids() -> str:
        return " ".join(str(rng.randrange(DICT_DIM)) for _ in range(rng.randint(1, 8)))

    out = []
    for i in range(lines):
        n_pos, n_neg = 1, rng.randint(1, 3)
        fields = [str(i), f"{n_pos} {n_neg}", ids()] + [ids() for _ in range(n_pos + n_neg)]
        out.append("".join(f + ";" for f in fields))
    return "\n".join(out) + "\n"


def ctr_train_text(lines: int = CTR_LINES, seed: int = 2) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        dnn = " ".join(str(rng.randrange(DNN_INPUT_DIM)) for _ in range(rng.randint(3, 12)))
        lr = " ".join(f"{rng.randrange(LR_INPUT_DIM)}:1" for _ in range(rng.randint(3, 12)))
        out.append(f"{dnn}\t{lr}\t{rng.randint(0, 1)}")
    return "\n".join(out) + "\n"


def ctr_members() -> dict[str, bytes]:
    meta = f"dnn_input_dim: {DNN_INPUT_DIM}\nlr_input_dim: {LR_INPUT_DIM}\n"
    return {
        "avazu_ctr_data/train.txt": ctr_train_text().encode(),
        "avazu_ctr_data/test.txt": ctr_train_text(CTR_LINES // 3, seed=3).encode(),
        "avazu_ctr_data/infer.txt": ctr_train_text(CTR_LINES // 3, seed=4).encode(),
        "avazu_ctr_data/data.meta.txt": meta.encode(),
    }


def ctr_tgz() -> bytes:
    """The archive, byte-identical every time (fixed mtimes, owners and gzip header)."""
    return tar_gz(ctr_members())


TEXT_VOCAB = [f"word{i}" for i in range(200)]


def text_members(per_folder: int = 40, seed: int = 5) -> dict[str, bytes]:
    rng = random.Random(seed)
    members = {}
    for split in ("train", "test"):
        for label in ("pos", "neg"):
            for n in range(per_folder if split == "train" else per_folder // 4):
                words = [rng.choice(TEXT_VOCAB) for _ in range(rng.randint(4, 20))]
                text = " ".join(words).capitalize() + rng.choice([".", "!", "?"]) + "\n"
                members[f"{split}/{label}/{n}.txt"] = text.encode()
    return members


def tar_gz(members: dict[str, bytes]) -> bytes:
    """A gzipped tar of members, byte-identical every time (fixed mtimes, owners, header)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def write_cache(data_home: str) -> dict[str, str]:
    """Write the cached downloads under data_home; {url: md5 of the file written}."""
    simnet = os.path.join(data_home, "simnet", "train")
    os.makedirs(os.path.dirname(simnet), exist_ok=True)
    with open(simnet, "w") as f:
        f.write(simnet_text())
    ctr_dir = os.path.join(data_home, "avazu_ctr_data")
    os.makedirs(os.path.join(ctr_dir, "avazu_ctr_data"), exist_ok=True)
    tgz = ctr_tgz()
    with open(os.path.join(ctr_dir, "avazu_ctr_data.tgz"), "wb") as f:
        f.write(tgz)
    for name, data in ctr_members().items():
        with open(os.path.join(ctr_dir, name), "wb") as f:
            f.write(data)
    text_dir = os.path.join(data_home, "text_classification")
    os.makedirs(text_dir, exist_ok=True)
    vocab = ("\n".join(TEXT_VOCAB) + "\n").encode()
    text_tgz = tar_gz(text_members())
    with open(os.path.join(text_dir, "imdb.vocab"), "wb") as f:
        f.write(vocab)
    with open(os.path.join(text_dir, "text_classification.tar.gz"), "wb") as f:
        f.write(text_tgz)
    with open(simnet, "rb") as f:
        simnet_md5 = hashlib.md5(f.read()).hexdigest()
    return {SIMNET_URL: simnet_md5, CTR_URL: hashlib.md5(tgz).hexdigest(),
            TEXT_VOCAB_URL: hashlib.md5(vocab).hexdigest(), TEXT_DATA_URL: hashlib.md5(text_tgz).hexdigest()}


def install(data_home: str, md5s: dict[str, str]) -> None:
    """In a program's process (from sitecustomize): DATA_HOME is data_home, and `download` of
    the URLs in md5s checks the MD5 given there."""
    from psjob.dataset import common

    common.DATA_HOME = data_home
    download = common.download

    def synthetic_download(url, module_name, md5sum, save_name=None):
        return download(url, module_name, md5s.get(url, md5sum), save_name)

    common.download = synthetic_download


def site_dir(root: str) -> str:
    """Write the synthetic cache under root/dataset and root/site/sitecustomize.py that serves
    it; return root/site (for PYTHONPATH)."""
    data_home = os.path.join(root, "dataset")
    md5s = write_cache(data_home)
    site = os.path.join(root, "site")
    os.makedirs(site, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write("import sys\n"
                f"sys.path.append({here!r})\n"
                "import paddle18_data\n"
                f"paddle18_data.install({data_home!r}, {md5s!r})\n")
    return site
