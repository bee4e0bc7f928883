"""The description's `buffer_service`: where buffered packets live when they live outside the controller.

One choice per network (docs/controller.md, "The buffer service"): without
`buffer_service` the switches punt an MH's diverted packets to the controller
over P4Runtime (packet-in) and the controller releases them by packet-out;
with it, every switch has one port of role `buffer` wired to the service
(`p4handoff ctl bufsvc`), diverts into it as an IPv4-in-IPv4 tunnel, and the
service releases into the new BS's buffer port. The controller keeps every
decision either way.
"""
from __future__ import annotations

from typing import Annotated

from pydantic import Field

from p4handoff.docmodel import IPv4, MAC, DocModel, Name, whole

PORT_BUFFER = "buffer"
DEFAULT_WINDOW = 32      # half BMv2's default egress depth (64): docs/controller.md, 'The buffer service'
DEFAULT_KEY_NAME = "bufsvc"


class BufferService(DocModel):
    address: IPv4 = Field(description="the service's address in the data plane: diverted packets are tunnelled "
                                      "to it, its releases come from it (trusted on buffer ports only)")
    mac: MAC = Field(description="the service's MAC on every buffer port")
    control: str = Field(pattern=r"^.+:[0-9]{1,5}$",
                         description="host:port where the service listens for the controller (TCP, "
                                     "authenticated with the key `key_name` of controller.keys)")
    key_name: Name = Field(default=DEFAULT_KEY_NAME, description="the key file entry both ends authenticate with")
    window: Annotated[int, whole(1, 1024)] = Field(
        default=DEFAULT_WINDOW, description="releases per BS not yet echoed back through that BS's ingress")
    spool: str | None = Field(default=None, description="the service's journal of packets the controller has "
                                                        "not acknowledged (survives a service restart); "
                                                        "null: beside nothing, in memory only")
    interfaces: dict[str, str] = Field(default_factory=dict,
                                       description="the service's interface toward each switch's buffer port "
                                                   "(switch name: interface), for `p4handoff ctl bufsvc`")
