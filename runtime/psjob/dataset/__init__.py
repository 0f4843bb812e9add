"""`paddle.dataset`: the data sets psjob ships or generates.

- `uci_housing`: the UCI housing regression file, shipped in `data/`.
- `common`: Paddle's download cache (`download`, `md5file`, `DATA_HOME`).
- `ctr`: a deterministic synthetic Criteo-like click-through data set, its
  text format, and fast readers for it.
"""
from psjob.dataset import common, ctr, uci_housing

__all__ = ["common", "ctr", "uci_housing"]
