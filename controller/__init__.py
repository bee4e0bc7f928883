"""P4Handoff control plane: the P4Runtime client (`controller.p4runtime`) and the handoff controller."""
