"""P4Handoff control plane: the P4Runtime client (`p4handoff.controller.p4runtime`) and the handoff controller."""
