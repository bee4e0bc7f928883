"""The `p4handoff` command, above every part: `main` dispatches to one module per subcommand.

`host` (host.py), `ctl` (ctl.py), `run` (run.py) and `schema` (schema.py)
each register their subcommand with `add_parser(sub)`; nothing below this
package imports it.
"""
