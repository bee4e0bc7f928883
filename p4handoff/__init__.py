"""P4Handoff: TCP across mobile handoffs (P4 pipeline, controller, host schemes, lab)."""
