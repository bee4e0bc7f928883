"""`p4handoff schema DOCUMENT`: the JSON Schema of a YAML file users write, so editors check and complete it.

An editor with a YAML language server reads the schema named on the file's
first line (docs/controller.md, docs/lab.md):

    # yaml-language-server: $schema=network.schema.json
    # yaml-language-server: $schema=scenario.schema.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

EXIT_OK = 0


def _network() -> dict[str, Any]:
    from p4handoff.controller.network import Network
    from p4handoff.docmodel import json_schema
    return json_schema(Network)


def _scenario() -> dict[str, Any]:
    from p4handoff.scenario.doc.schema import scenario_schema
    return scenario_schema()


DOCUMENTS: dict[str, Callable[[], dict[str, Any]]] = {"network": _network, "scenario": _scenario}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="write the JSON Schema of a network description or a scenario file",
                       description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("document", choices=DOCUMENTS,
                   help="network: a controller network description (`ctl --network`); "
                        "scenario: a scenario file (`p4handoff run`, traces/*.yaml)")
    p.add_argument("-o", "--output", type=Path, help="write the schema here (default: standard output)")
    p.set_defaults(func=_schema)


def _schema(args: argparse.Namespace) -> int:
    text = json.dumps(DOCUMENTS[args.document](), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text)
    return EXIT_OK
