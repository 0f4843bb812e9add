"""`paddle.dataset`: the data sets psjob ships or generates.

- `uci_housing`: the UCI housing regression file, shipped in `data/`.
- `common`: Paddle's download cache (`download`, `md5file`, `DATA_HOME`).
- `mnist`: Fluid 1.x's MNIST reader creators (`train`, `test`, `fetch`) over that cache.
- `ctr`: a deterministic synthetic Criteo-like click-through data set, its
  text format, and fast readers for it.
"""
from psjob.dataset import common, ctr, mnist, uci_housing

__all__ = ["common", "ctr", "mnist", "uci_housing"]
