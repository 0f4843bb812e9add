"""`paddle.dataset`: the data sets psjob ships or generates.

- `uci_housing`: the UCI housing regression file, shipped in `data/`.
- `ctr`: a deterministic synthetic Criteo-like click-through data set, its
  text format, and fast readers for it.
"""
from psjob.dataset import ctr, uci_housing

__all__ = ["ctr", "uci_housing"]
