"""The Mininet/BMv2 backend of a lab run (`--backend lab`): plays a resolved run on the rig `p4handoff.topo.rig`
brings up (flows, mobility timeline, observation, faults)."""
