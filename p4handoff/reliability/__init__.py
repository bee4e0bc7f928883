"""Hostile inputs and faults: frames fuzzed into a BS on BMv2, and chaos runs that kill switches and the controller
mid-handoff (docs/reliability.md)."""
