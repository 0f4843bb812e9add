"""`paddle.distributed.ps.utils.public`: the debugging helpers of Paddle's parameter-server
code that its test programs import.

- `ps_log_root_dir`: `'./ps_log/'`, the folder (relative to the working directory) Paddle's
  test programs write their program dumps and descriptors under.
- `logger`: the `ps_usr_print_log` logger, at WARNING, to the console and, from its first
  record on, to the file `./ps_usr_print_log`, as in Paddle.
- `debug_program(file, program)`: creates `file`'s folder and writes `str(program)` there.
  The text is psjob's program listing (a block's variables, then its ops), not Paddle's
  `Program.__str__` format.
- `is_distributed_env()`: whether TRAINING_ROLE is set (a launcher started the process).
- `new_pass(name, attrs)`: refused. Paddle's IR passes (`paddle.distributed.passes`) rewrite
  programs for its brpc runtime; psjob has none (`fleet.distributed_optimizer(...).minimize`
  builds its parameter-server programs).
"""
from __future__ import annotations

import logging
import os
from typing import Any

from psjob.foundation.settings import process_environment

__all__ = ["ps_log_root_dir", "logger", "debug_program", "is_distributed_env", "new_pass"]

ps_log_root_dir = "./ps_log/"


def logger_config(log_path: str, logging_name: str) -> logging.Logger:
    """A logger at WARNING that writes to the console and (lazily: the file appears with its
    first record) to `log_path`, formatted as Paddle's."""
    log = logging.getLogger(logging_name)
    log.setLevel(logging.WARNING)
    if not log.handlers:
        to_file = logging.FileHandler(log_path, mode="a", encoding="UTF-8", delay=True)
        to_file.setLevel(logging.INFO)
        to_file.setFormatter(logging.Formatter(
            "%(levelname)s - %(asctime)s - %(pathname)s: %(lineno)s - %(message)s"))
        console = logging.StreamHandler()
        console.setLevel(logging.DEBUG)
        log.addHandler(to_file)
        log.addHandler(console)
    return log


logger = logger_config(log_path="./ps_usr_print_log", logging_name="ps_usr_print_log")


def debug_program(file: str, program: object) -> None:
    """Write `str(program)` to `file`, creating its folder."""
    folder = os.path.dirname(file)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(file, "w+") as f:
        f.write(str(program))


def is_distributed_env() -> bool:
    """Whether TRAINING_ROLE is set, as Paddle's helper reads it."""
    return "TRAINING_ROLE" in process_environment()


def new_pass(name: str, pass_attrs: dict[str, Any] | None = None) -> Any:
    """Refused: Paddle's IR passes have no counterpart in psjob."""
    raise NotImplementedError(
        f"paddle.distributed.passes.new_pass({name!r}): Paddle's program passes for its brpc "
        "parameter servers are not supported by psjob; build the parameter-server programs with "
        "fleet.distributed_optimizer(optimizer, strategy).minimize(loss)")
