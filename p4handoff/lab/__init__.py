"""The lab and the experiment runner: scenario files, the simulator and Mininet/BMv2 backends, reports, plots."""
