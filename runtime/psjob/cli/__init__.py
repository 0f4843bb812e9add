"""The `psjob` command.

    psjob launch ...            run a script as local pservers + trainers (fleetrun-style)
    psjob run JOB.yaml          run a ParameterServerJob on this machine
    psjob scale WORKDIR --workers N | --pservers M   resize a running `psjob run`
    psjob pserver / worker      the container entrypoints the operator's pods run
    psjob checkpoint list|inspect|verify DIR | import EXPORT OUT [--pservers N]
    psjob export CHECKPOINT OUT --format parquet   sparse tables as Parquet, dense as .npy
    psjob as-paddle COMMAND [ARGS...]   run COMMAND with `import paddle` giving psjob
    psjob compat PATH... [--json|--markdown]   the Paddle names code uses, judged on psjob
    psjob version

Sub-commands import their modules lazily so `psjob --help` stays fast and
the operator image never loads numpy kernels it does not need.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence


def _launch(argv: list[str]) -> int:
    from psjob.launcher import launch
    return launch.main(argv)


def _run(argv: list[str]) -> int:
    from psjob.launcher import run_job
    return run_job.main(argv)


def _scale(argv: list[str]) -> int:
    from psjob.launcher import scale
    return scale.main(argv)


def _pserver(argv: list[str]) -> int:
    from psjob.launcher import entrypoints
    return entrypoints.pserver_main(argv)


def _worker(argv: list[str]) -> int:
    from psjob.launcher import entrypoints
    return entrypoints.worker_main(argv)


def _heter_worker(argv: list[str]) -> int:
    from psjob.launcher import entrypoints
    return entrypoints.heter_worker_main(argv)


def _as_paddle(argv: list[str]) -> int:
    from psjob.launcher.aspaddle import exec_main
    return exec_main(argv)


def _compat(argv: list[str]) -> int:
    from psjob.cli.compat import main
    return main(argv)


def _checkpoint(argv: list[str]) -> int:
    from psjob.foundation.checkpoint import cli
    return cli.main(argv)


def _export(argv: list[str]) -> int:
    from psjob.foundation.checkpoint import cli
    return cli.export_main(argv)


COMMANDS = {
    "launch": (_launch, "run a script as local pservers and trainers"),
    "run": (_run, "run a ParameterServerJob YAML on this machine"),
    "scale": (_scale, "resize a running `psjob run`: its trainers (elastic) or its pservers"),
    "pserver": (_pserver, "start a parameter server (container entrypoint)"),
    "worker": (_worker, "start a trainer (container entrypoint)"),
    "heter-worker": (_heter_worker, "start a heterogeneous trainer"),
    "checkpoint": (_checkpoint, "list, inspect, verify or import checkpoints"),
    "export": (_export, "export a checkpoint's tables as Parquet (dense variables as .npy)"),
    "as-paddle": (_as_paddle, "run a command whose `import paddle` gives psjob (unmodified Paddle code)"),
    "compat": (_compat, "list the Paddle names some code uses and how psjob has each"),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: psjob COMMAND [ARGS...]\n\ncommands:")
        for name, (_, desc) in COMMANDS.items():
            print(f"  {name:<14}{desc}")
        print(f"  {'version':<14}print the psjob version")
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd in ("version", "--version"):
        from psjob import __version__
        print(__version__)
        return 0
    if cmd not in COMMANDS:
        print(f"psjob: unknown command {cmd!r} (try: {', '.join(COMMANDS)}, version)", file=sys.stderr)
        return 2
    command, _ = COMMANDS[cmd]
    return int(command(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
