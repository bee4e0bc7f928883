"""Switch processes and lab topologies: `topo.bmv2` starts and drives BMv2 simple_switch_grpc."""
