"""Real-network driver: our sans-IO TCP on raw sockets inside a Linux network namespace.

`rawio` (AF_PACKET capture, raw IP send), `guard` (keeps the kernel's TCP
silent), `driver` (the event loop), `linkwatch` (our own link's carrier as
DETACH/HANDOFF), `transfer` (sender/receiver used by
`p4handoff host`), `timescale` (their clock in a time-dilated lab run), `data` and `tracefile` (what is sent, kept and traced).
See docs/hosts-driver.md.
"""
