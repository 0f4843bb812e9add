"""`paddle.dataset.mnist`: Fluid 1.x's MNIST reader creators over the download cache.

As Paddle 1.8 documents it: `train()` and `test()` download (into
`paddle.dataset.common.DATA_HOME`/mnist, checked by MD5) the four gzipped IDX files of
MNIST and return reader creators whose samples are `(image, label)`: the 784 pixels as a
float32 vector scaled from [0, 255] to [-1, 1], and the digit as an int. `fetch()` only
downloads. psjob ships no copy of MNIST: without the network or a cached copy, `download`
raises as Paddle's does.

The files are read in blocks of `buffer_size` images, as Paddle 1.8 reads them (100 at a
time); the counts in the files' headers are taken as multiples of it.
"""
from __future__ import annotations

import gzip
import struct
from collections.abc import Callable, Iterator

import numpy as np

from psjob.dataset import common

__all__ = ["train", "test", "fetch"]

URL_PREFIX = "https://dataset.bj.bcebos.com/mnist/"
TEST_IMAGE_URL = URL_PREFIX + "t10k-images-idx3-ubyte.gz"
TEST_IMAGE_MD5 = "9fb629c4189551a2d022fa330f9573f3"
TEST_LABEL_URL = URL_PREFIX + "t10k-labels-idx1-ubyte.gz"
TEST_LABEL_MD5 = "ec29112dd5afa0611ce80d1b7f02629c"
TRAIN_IMAGE_URL = URL_PREFIX + "train-images-idx3-ubyte.gz"
TRAIN_IMAGE_MD5 = "f68b3c2dcbeaaa9fbdd348bbdeb94873"
TRAIN_LABEL_URL = URL_PREFIX + "train-labels-idx1-ubyte.gz"
TRAIN_LABEL_MD5 = "d53e105ee54ea40749a09fcbcd1e9432"


def reader_creator(image_filename: str, label_filename: str,
                   buffer_size: int) -> Callable[[], Iterator[tuple[np.ndarray, int]]]:
    def reader() -> Iterator[tuple[np.ndarray, int]]:
        with gzip.open(image_filename, "rb") as f:
            images = f.read()
        with gzip.open(label_filename, "rb") as f:
            labels = f.read()
        _, _, rows, cols = struct.unpack_from(">IIII", images, 0)
        _, count = struct.unpack_from(">II", labels, 0)
        pixels = rows * cols
        for start in range(0, count, buffer_size):
            raw = np.frombuffer(images, np.uint8, buffer_size * pixels, 16 + start * pixels)
            block = raw.reshape(buffer_size, pixels).astype("float32") / 255.0 * 2.0 - 1.0
            digits = np.frombuffer(labels, np.uint8, buffer_size, 8 + start)
            for i in range(buffer_size):
                yield block[i, :], int(digits[i])

    return reader


def train() -> Callable[[], Iterator[tuple[np.ndarray, int]]]:
    return reader_creator(common.download(TRAIN_IMAGE_URL, "mnist", TRAIN_IMAGE_MD5),
                          common.download(TRAIN_LABEL_URL, "mnist", TRAIN_LABEL_MD5), 100)


def test() -> Callable[[], Iterator[tuple[np.ndarray, int]]]:
    return reader_creator(common.download(TEST_IMAGE_URL, "mnist", TEST_IMAGE_MD5),
                          common.download(TEST_LABEL_URL, "mnist", TEST_LABEL_MD5), 100)


def fetch() -> None:
    common.download(TRAIN_IMAGE_URL, "mnist", TRAIN_IMAGE_MD5)
    common.download(TRAIN_LABEL_URL, "mnist", TRAIN_LABEL_MD5)
    common.download(TEST_IMAGE_URL, "mnist", TEST_IMAGE_MD5)
    common.download(TEST_LABEL_URL, "mnist", TEST_LABEL_MD5)
