"""`p4handoff schema DOCUMENT`: the JSON Schema of a YAML file users write, so editors check and complete it.

An editor with a YAML language server reads the schema named on the file's
first line (docs/controller.md):

    # yaml-language-server: $schema=network.schema.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from p4handoff.docmodel import json_schema

EXIT_OK, EXIT_USAGE = 0, 2
DOCUMENTS = ("network", "scenario")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="write the JSON Schema of a network description (or scenario file)",
                       description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("document", choices=DOCUMENTS,
                   help="network: a controller network description (`ctl --network`); scenario: not yet")
    p.add_argument("-o", "--output", type=Path, help="write the schema here (default: standard output)")
    p.set_defaults(func=_schema)


def _schema(args: argparse.Namespace) -> int:
    if args.document == "scenario":
        print("p4handoff schema: no schema for scenario files yet (they are not pydantic models yet); "
              "`p4handoff schema network` works", file=sys.stderr)
        return EXIT_USAGE
    from p4handoff.controller.network import Network

    text = json.dumps(json_schema(Network), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text)
    return EXIT_OK
