"""The `p4handoff` command line: one entry point, one subcommand per part.

Each subcommand has its own module in this package (`add_parser(sub)`
registers it and sets `func`); this file only dispatches and turns errors
into exit codes a script can rely on.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def _host(sub: argparse._SubParsersAction) -> None:
    from p4handoff.cli.host import add_parser
    add_parser(sub)


def _ctl(sub: argparse._SubParsersAction) -> None:
    from p4handoff.cli.ctl import add_parser
    add_parser(sub)


def _run(sub: argparse._SubParsersAction) -> None:
    from p4handoff.cli.run import add_parser
    add_parser(sub)


def _agree(sub: argparse._SubParsersAction) -> None:
    from p4handoff.cli.agree import add_parser
    add_parser(sub)


def _schema(sub: argparse._SubParsersAction) -> None:
    from p4handoff.cli.schema import add_parser
    add_parser(sub)


# Each subcommand's module is imported only when it runs (or for --help): `p4handoff host`, started for
# every endpoint of a lab or test, does not load the scenario models and the controller (~0.5 s of CPU).
SUBCOMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "host": _host, "ctl": _ctl, "run": _run, "agree": _agree, "schema": _schema}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `command` alone if it is one."""
    parser = argparse.ArgumentParser(prog="p4handoff", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, add in SUBCOMMANDS.items():
        if command not in SUBCOMMANDS or name == command:
            add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
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
