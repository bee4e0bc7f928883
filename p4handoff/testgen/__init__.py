"""P4Testgen (p4c's backends/p4tools) against our programs: generated tests replayed on BMv2.

`cases` reads what P4Testgen writes (its PROTOBUF back end for bmv2, its STF
back end for tofino), `tool` runs p4testgen and reads its coverage report,
`replay` plays a test on simple_switch_grpc through the project's P4Runtime
client, `differential` replays the Tofino program's tests through the v1model
program and classifies each disagreement against docs/tofino.md.
docs/testgen.md says what P4Testgen models of our externs and what it skips.
"""
