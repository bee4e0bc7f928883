"""The `p4handoff` command line: one entry point, one subcommand per part.

Each subcommand has its own module in this package (`add_parser(sub)`
registers it and sets `func`); this file only dispatches and turns errors
into exit codes a script can rely on.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from p4handoff.cli.host import add_parser as add_host_parser
from p4handoff.cli.ctl import add_parser as add_ctl_parser
from p4handoff.cli.run import add_parser as add_run_parser
from p4handoff.cli.schema import add_parser as add_schema_parser

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p4handoff", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_host_parser(sub)
    add_ctl_parser(sub)
    add_run_parser(sub)
    add_schema_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or EXIT_OK)
    except BrokenPipeError:
        # the reader went away (`p4handoff ctl status | head`): not an error; stop writing to the pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (ValueError, OSError) as exc:
        print(f"p4handoff {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
