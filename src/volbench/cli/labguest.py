"""`python -m volbench.cli.labguest --outdir OUT -- run FILE …`: volbench run in the lab guest.

The entry point lives in cli (above lab) so that lab never imports the command line:
lab/guest.py does the guest's work and is handed cli.main.main to call.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from volbench.cli import main as cli
from volbench.lab.guest import run_in_guest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m volbench.cli.labguest")
    parser.add_argument("--outdir", type=Path, required=True)
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then volbench's arguments")
    args = parser.parse_args(argv)
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    return run_in_guest(args.outdir, rest, cli.main)


if __name__ == "__main__":
    sys.exit(main())
