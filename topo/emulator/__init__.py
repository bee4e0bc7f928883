"""The user-space wireless-link emulator: rate, delay, loss, bounded queue and outages on real frames.

`model.LinkModel` is the link without I/O (shared rules with the simulator's
links); `bridge.Bridge` moves frames between two interfaces through it;
`python -m p4handoff.topo.emulator` runs one link; `measure` checks it in namespaces.
"""
