"""`python -m psjob.cli`: the `psjob` command."""
import sys

from psjob.cli import main

if __name__ == "__main__":
    sys.exit(main())
