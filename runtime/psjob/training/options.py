"""Arguments of psjob's built-in training job (`psjob pserver|worker ARGS`).

Every process of a job gets the same ARGS (the job's `spec.args`): pservers
need them too, because they build the same model and transpile it to find
their share of the parameters. Bad arguments are a `UsageError` naming the
flag and the fix; the entrypoints print it and exit 2.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from psjob.training.models import BUILT_IN

MODELS = tuple(BUILT_IN)  # psjob.training.models' registry
OPTIMIZERS = ("adam", "adagrad", "sgd", "momentum")
TABLE_OPTIMIZERS = ("same", "sgd")  # psjob.fluid.optimizer.TABLE_OPTIMIZERS
ID_MODES = ("dense", "hash")
SYNTHETIC = "synthetic"


class UsageError(ValueError):
    """A bad training argument; the message names the flag and the fix."""


@dataclass(frozen=True)
class TrainOptions:
    model: str = "ctr"
    data: str = SYNTHETIC          # "synthetic" or a directory / file of CTR text data
    examples: int = 200_000        # synthetic: examples in the whole job (split over trainers)
    epochs: int = 1
    batch: int = 512               # examples per step, per trainer
    optimizer: str = "adam"
    learning_rate: float = 1e-3
    id_mode: str = ""              # "" = from the data set's meta.json, else dense
    distributed_table: bool = False
    table_optimizer: str = "same"  # the distributed table's rule: "same" as --optimizer, or "sgd"
    seed: int = 0                  # synthetic data stream
    log_every_s: float = 5.0       # progress line period
    max_steps: int = 0             # 0 = no limit (per trainer)
    audit_ids: str = ""            # stream jobs: a directory for per-step records of the trained ids


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit; raise with the message instead
        raise UsageError(message)


def build_parser(prog: str = "psjob worker") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="psjob's built-in CTR training job (pserver or trainer, "
                "by PADDLE_TRAINING_ROLE); every process of a job gets the same arguments.")
    d = TrainOptions()
    p.add_argument("--model", default=d.model, choices=MODELS,
                   help="built-in model to train: ctr (the CTR DNN) or wide_deep (plus a linear part)")
    p.add_argument("--data", default=d.data,
                   help="'synthetic' (generated in memory, deterministic) or a directory of "
                        "part-* CTR text files (docs/user/data.md)")
    p.add_argument("--examples", type=int, default=d.examples,
                   help="synthetic data: examples in the whole job, split evenly over trainers")
    p.add_argument("--epochs", type=int, default=d.epochs, help="passes over each trainer's share")
    p.add_argument("--batch", type=int, default=d.batch, help="examples per step, per trainer")
    p.add_argument("--optimizer", default=d.optimizer, choices=OPTIMIZERS)
    p.add_argument("--lr", "--learning_rate", dest="learning_rate", type=float,
                   default=d.learning_rate)
    p.add_argument("--id_mode", default=d.id_mode, choices=("",) + ID_MODES,
                   help="feature id encoding (default: the data set's, else dense)")
    p.add_argument("--distributed_table", action="store_true",
                   help="keep the embedding table on the pservers, looked up by prefetch")
    p.add_argument("--table_optimizer", default=d.table_optimizer, choices=TABLE_OPTIMIZERS,
                   help="how the pservers update the distributed table: 'same' rule as --optimizer, "
                        "per row, or plain 'sgd' (Fluid 1.x)")
    p.add_argument("--seed", type=int, default=d.seed, help="synthetic data stream seed")
    p.add_argument("--log_every", dest="log_every_s", type=float, default=d.log_every_s,
                   help="seconds between progress lines")
    p.add_argument("--max_steps", type=int, default=d.max_steps,
                   help="stop each trainer after this many steps (0: no limit)")
    p.add_argument("--audit_ids", default=d.audit_ids,
                   help="stream jobs: append each step's trained example ids (slot 11) to "
                        "DIR/trainer-<i>.jsonl (docs/user/online-learning.md)")
    return p


def parse(argv, prog: str = "psjob worker") -> TrainOptions:
    """ARGS → TrainOptions, or UsageError naming the problem."""
    ns = build_parser(prog).parse_args(list(argv))
    opts = TrainOptions(**vars(ns))
    _check(opts)
    return opts


def _check(o: TrainOptions) -> None:
    positive = {"--examples": o.examples, "--epochs": o.epochs, "--batch": o.batch}
    for flag, value in positive.items():
        if value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
    if o.max_steps < 0:
        raise UsageError(f"--max_steps must be >= 0 (0: no limit), got {o.max_steps}")
    if not o.learning_rate > 0:
        raise UsageError(f"--lr must be > 0, got {o.learning_rate}")
    if not o.log_every_s > 0:
        raise UsageError(f"--log_every must be > 0 seconds, got {o.log_every_s}")
    if o.id_mode == "hash" and o.model == "wide_deep":
        raise UsageError("--model wide_deep keeps its wide weights in an ordinary [ids, 1] parameter "
                         "(not a distributed table), which 64-bit hashed ids do not fit: "
                         "use --id_mode dense or --model ctr")
    if o.id_mode == "hash" and not o.distributed_table:
        raise UsageError("--id_mode hash gives 64-bit feature ids that only a table on the "
                         "pservers can hold: add --distributed_table")
