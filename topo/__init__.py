"""The topologies P4Handoff runs on (installed as `p4handoff.topo`): the controller's BMv2 testbed, the Mininet
network of a scenario and its plan, the user-space link emulator, and the launchers that bring a rig up."""
