"""`fluid.log_helper.get_logger`, Fluid 1.x's helper for a module's own logger.

Paddle's test programs and readers (dist_ctr_reader.py, ctr_dataset_reader.py) build their
logger with it. As Fluid 1.8 documents it: the logger of that name, at that level, with one
more stream handler (stderr) formatted by `fmt` when given, and no propagation to the root
logger, so a script that also calls logging.basicConfig does not print each record twice.
logging.basicConfig itself is left alone.
"""
from __future__ import annotations

import logging

__all__ = ["get_logger"]


def get_logger(name: str, level: int | str, fmt: str | None = None) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.setLevel(level)
    handler = logging.StreamHandler()
    if fmt:
        handler.setFormatter(logging.Formatter(fmt=fmt))
    logger.addHandler(handler)
    logger.propagate = False
    return logger
