"""The network description: one YAML file, validated before any switch is touched.

The description is a tree of frozen pydantic models (`p4handoff.docmodel`)
the rest of the controller reads and never mutates. Every problem is
reported at once, each with its field path (`switches[1].ports[0].peer`) and
what is wrong; checks across objects (peers, hosts' switches, unique names
and addresses) run even when some objects failed, against the names the
file declares, so a typo in one switch is not reported again by everything
that names it. Everything derived (cell ids, defaults taken from other
sections, paths relative to the file) is resolved here, so later layers need
no second look at the raw file. `p4handoff schema network` writes the JSON
Schema of `Network` for editors.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, PlainSerializer, TypeAdapter, ValidationError, ValidationInfo, \
    ValidatorFunctionWrapHandler, field_validator, model_validator
from pydantic.functional_validators import ModelWrapValidatorHandler

from p4handoff.controller.network_aqm import AqmConfig
from p4handoff.controller.network_bufsvc import PORT_BUFFER, BufferService
from p4handoff.docmodel import IPv4, MAC, NAME_PATTERN, Checked, DocModel, Loc, Name, PathText, Problem, fail, \
    field_path, hidden_default, kind, message, no_default, validate_all, whole
from p4handoff.controller.network_security import PuntBudget, TlsConfig, beside
from p4handoff.controller.release_credit import WINDOW as CREDIT_WINDOW
from p4handoff.wire import DSCP_BEST_EFFORT, DSCP_IPF_PRIORITY_DEFAULT, DSCP_LE, PORT_MAX
from p4handoff.paths import V1MODEL, pipeline_files
from p4handoff.yamlfile import DocumentError, read_yaml

DEFAULT_SOCKET = "/run/p4handoff/ctl.sock"
DEFAULT_CONTROLLER_ADDRESS = "192.0.2.1"   # RFC 5737 TEST-NET-1: never a real host

ROLE_GATEWAY, ROLE_BS = "gateway", "bs"
PORT_ACCESS, PORT_PEER, PORT_CORE = "access", "peer", "core"


class NetworkError(DocumentError):
    """A description that cannot be used; `errors` lists every (path, problem)."""

    kind = "network description"


# --------------------------------------------------------------------------- field types

def _grpc(value: Any) -> str:
    """host:port, or unix:/absolute/path (a switch in another namespace, e.g. in the Mininet lab)."""
    if isinstance(value, str) and value.startswith("unix:"):
        if not value[5:].startswith("/") or "\0" in value:
            raise ValueError(f"a Unix socket address must be unix:/absolute/path, got {value!r}")
        return value
    host, sep, port = value.rpartition(":") if isinstance(value, str) else ("", "", "")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"must be host:port (e.g. 127.0.0.1:50051) or unix:/path, got {value!r}")
    return value


_CELL_MAP = TypeAdapter(dict[Name, IPv4])


def _cell_pairs(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ValueError(f"must be a mapping bs-name: address, got {kind(value)}")
    return tuple(sorted(_CELL_MAP.validate_python(value).items()))


Grpc = Annotated[str, Checked(_grpc, {"type": "string", "pattern": r"^(unix:/.+|.+:[0-9]{1,5})$"})]
CellAddresses = Annotated[
    tuple[tuple[str, str], ...],
    Checked(_cell_pairs, {"type": "object", "propertyNames": {"pattern": NAME_PATTERN},
                          "additionalProperties": {"type": "string", "format": "ipv4"}}),
    PlainSerializer(dict)]


# --------------------------------------------------------------------------- the models

class Port(DocModel):
    number: Annotated[int, whole(0, PORT_MAX)]
    role: Literal["access", "peer", "core", "buffer"]
    peer: Name | None = Field(default=None, validate_default=True,
                              description="peer ports: the neighbour switch's name")
    aqm: AqmConfig | None = Field(default=None, validate_default=True,
                                  description="access ports only (default: droptail)")

    @field_validator("peer", mode="wrap")
    @classmethod
    def _peer_ports_only(cls, peer: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> str | None:
        role = info.data.get("role")
        if role == PORT_PEER and peer is None:
            raise ValueError("peer ports must name the neighbour switch")
        if role not in (None, PORT_PEER) and peer is not None:
            raise ValueError(f"only peer ports have a peer ({role} port)")
        return handler(peer)

    @field_validator("aqm", mode="wrap")
    @classmethod
    def _access_ports_only(cls, aqm: Any, handler: ValidatorFunctionWrapHandler,
                           info: ValidationInfo) -> AqmConfig | None:
        role = info.data.get("role")
        if role not in (None, PORT_ACCESS) and aqm is not None:
            raise ValueError(f"AQM is configured on access ports only ({role} port)")
        return AqmConfig() if role == PORT_ACCESS and aqm is None else handler(aqm)


class Switch(DocModel):
    name: Name
    role: Literal["gateway", "bs"]
    grpc: Grpc
    device_id: Annotated[int, whole(0, 2**64 - 1)]
    address: IPv4 = Field(description="router/tunnel endpoint address")
    mac: MAC = Field(description="source MAC on non-access ports")
    cell_id: Annotated[int, whole(1, 65535)] = hidden_default(0, "BSs: cell id used in notifications "
                                                          "(default: the lowest free ids in file order)")
    signal_forwarding: bool = Field(default=True, strict=True,
                                    description="BSs: a HANDOFF after the flush of what this BS held for the MH "
                                                "says so (notification revision 2, flags bit 0); false: "
                                                "revision-1 HANDOFFs, the network before issue 20 (comparisons)")
    ports: tuple[Port, ...]

    def port(self, number: int) -> Port | None:
        return next((p for p in self.ports if p.number == number), None)

    def peer_port(self, peer: str) -> Port | None:
        return next((p for p in self.ports if p.role == PORT_PEER and p.peer == peer), None)

    @property
    def buffer_port(self) -> Port | None:
        return next((p for p in self.ports if p.role == PORT_BUFFER), None)

    @property
    def is_bs(self) -> bool:
        return self.role == ROLE_BS

    @field_validator("cell_id")
    @classmethod
    def _bs_only(cls, cell_id: int, info: ValidationInfo) -> int:
        if info.data.get("role") == ROLE_GATEWAY:
            raise ValueError("only base stations have a cell id")
        return cell_id

    @field_validator("signal_forwarding")
    @classmethod
    def _bs_signals(cls, signal: bool, info: ValidationInfo) -> bool:
        if info.data.get("role") == ROLE_GATEWAY and not signal:
            raise ValueError("only base stations flush for their MHs (the gateway's value is true)")
        return signal

    @field_validator("ports")
    @classmethod
    def _port_rules(cls, ports: tuple[Port, ...], info: ValidationInfo) -> tuple[Port, ...]:
        """Access ports on BSs only (and at least one there), one port per number and per neighbour."""
        role, name = info.data.get("role"), info.data.get("name")
        problems: list[Problem] = []
        for i, p in enumerate(ports):
            if p.role == PORT_ACCESS and role == ROLE_GATEWAY:
                problems.append(((i, "role"), "the gateway has no access ports (mobile hosts attach to base stations)"))
            if p.role == PORT_PEER and p.peer == name:
                problems.append(((i, "peer"), "a switch cannot peer with itself"))
        if role == ROLE_BS and not any(p.role == PORT_ACCESS for p in ports):
            who = f"base station {name!r}" if name else "this base station"
            problems.append(((), f"{who} has no access port"))
        problems += _unique((((i, "number"), p.number) for i, p in enumerate(ports)), "port number", ("ports",))
        problems += _unique((((i, "peer"), p.peer) for i, p in enumerate(ports) if p.role == PORT_PEER),
                            "peer (one port per neighbour)", ("ports",))
        if problems:
            fail(cls, [], problems)
        return ports


class FixedHost(DocModel):
    name: Name
    address: IPv4
    mac: MAC
    switch: Name
    port: Annotated[int, whole(0, PORT_MAX)]
    gateway: IPv4 | None = Field(default=None,
                                 description="the host's default gateway address: its switch answers ARP for it")


class MobileHost(DocModel):
    name: Name
    address: IPv4 = Field(description="home address, kept in every cell")
    mac: MAC | None = Field(default=None, description="learned from the registration if absent")
    correspondents: tuple[Name, ...] = hidden_default((), "fixed host names told about handoffs (default: all)")
    cell_addresses: CellAddresses = Field(default=(), description="bs: address, DSBP's second path")
    buffer_packets: Annotated[int, whole(1, 100_000_000)] = hidden_default(64, "default: buffer.per_mh_packets")

    def cell_address(self, bs: str) -> str | None:
        return dict(self.cell_addresses).get(bs)

    @field_validator("cell_addresses")
    @classmethod
    def _not_home(cls, cells: tuple[tuple[str, str], ...], info: ValidationInfo) -> tuple[tuple[str, str], ...]:
        problems: list[Problem] = [((bs,), "must differ from the home address")
                                   for bs, addr in cells if addr == info.data.get("address")]
        if problems:
            fail(cls, [], problems)
        return cells


class ControllerConfig(DocModel):
    election_id: Annotated[int, whole(1, 2**128 - 1)] = 1
    socket: PathText = Field(default=DEFAULT_SOCKET, description="the control socket")
    hold_time_ms: Annotated[int, whole(0, 600_000)] = Field(
        default=500, description="old BS keeps tunnelling to the new one this long")
    marker_timeout_ms: Annotated[int, whole(1, 60_000)] = Field(
        default=200, description="drain marker not back by then: proceed without it")
    flush_timeout_ms: Annotated[int, whole(1, 600_000)] = Field(
        default=2000, description="a handoff that has not drained by then is completed anyway")
    packet_out_window: Annotated[int, whole(1, 65_536)] = Field(
        default=CREDIT_WINDOW, description="packet-outs per switch not yet seen read by its ingress (release_credit.py): at "
                                "most half the switches' egress queue depth (BMv2's default 64: 32); measure "
                                "before raising it: a burst that fits a deeper egress queue can still overflow "
                                "the next switch (docs/controller.md, 'Big flushes')")
    target: Literal["v1model", "tofino", "tofino2"] = Field(
        default=V1MODEL, description="the program the switches run: p4src/v1model/bs.p4 on BMv2 (v1model) or p4src/tna "
                                     "on Tofino-1/-2 (docs/tofino.md); sets the default p4info and device_config")
    p4info: PathText = Field(default="", validate_default=True, json_schema_extra=no_default,
                             description="relative to the description's directory (default: the target's build "
                                         "output, build/bs.p4info.txtpb for v1model)")
    device_config: PathText = Field(default="", validate_default=True, json_schema_extra=no_default,
                                    description="relative to the description's directory (default: the target's "
                                                "build output, build/bs.json for v1model)")
    address: IPv4 = Field(default=DEFAULT_CONTROLLER_ADDRESS,
                          description="the controller in the data plane: source of notifications and markers; "
                                      "every switch punts packets sent to it")
    spool: str | None = Field(default="", validate_default=True,
                              description="buffered packets journaled here (outlive a controller restart); "
                                          "default: beside the socket; null: off",
                              json_schema_extra=no_default)
    spool_fsync: bool = Field(default=False, strict=True,
                              description="fsync every spool record (survives power loss, not only a crash)")
    tls: TlsConfig | None = Field(default=None,
                                  description="P4Runtime over TLS with mutual authentication, each switch "
                                              "authenticated by its name; absent: plaintext")
    auth: Literal["keys", "none"] = Field(
        default="keys", description="keys: registrations and notifications are authenticated with the key file "
                                    "`keys` (required); none: neither is, and any host in a cell can move another "
                                    "MH's traffic (an explicit opt-out, logged as a warning at start)")
    keys: PathText | None = Field(default=None,
                                  description="the key file (p4handoff.keyfile, mode 0600; relative to the "
                                              "description; `p4handoff ctl keys` writes one): registrations and "
                                              "notifications are authenticated with its keys (docs/reliability.md)")

    _keys_file = field_validator("keys", mode="before")(beside)

    @model_validator(mode="after")
    def _authenticated(self) -> Self:
        """Whoever can reach a port is a stranger until authenticated: no key file is an error, not a default."""
        if self.auth == "keys" and self.keys is None:
            fail(type(self), [], [(("keys",), "required: registrations and notifications are authenticated "
                                   "(`p4handoff ctl keys --network FILE` writes a key file); to run without, "
                                   "say so with controller.auth: none")])
        if self.auth == "none" and self.keys is not None:
            fail(type(self), [], [(("auth",), "is none but a key file is named: remove one of the two")])
        return self

    @field_validator("p4info", "device_config", mode="before")
    @classmethod
    def _pipeline_file(cls, value: Any, info: ValidationInfo) -> Any:
        """Not given: the target's build output (p4handoff.paths); given: relative to the description."""
        if value == "":
            p4info, device_config = pipeline_files(info.data.get("target", V1MODEL))   # absent: target was invalid
            return str(p4info if info.field_name == "p4info" else device_config)
        return cls._beside_file(value, info) if isinstance(value, str) and value else value

    @staticmethod
    def _beside_file(value: str, info: ValidationInfo) -> str:
        base_dir = (info.context or {}).get("base_dir")
        return str((Path(base_dir) / value).resolve()) if base_dir is not None else value

    @field_validator("spool", mode="before")
    @classmethod
    def _spool(cls, value: Any, info: ValidationInfo) -> str | None:
        if value is not None and not isinstance(value, str):
            raise ValueError(f"must be a path or null, got {value!r}")
        if value == "":
            return str(Path(info.data.get("socket", DEFAULT_SOCKET)).with_suffix(".spool"))
        return cls._beside_file(value, info) if value is not None else None


class AccessGateway(DocModel):
    """The anycast gateway every BS presents on its access ports (same IP and MAC)."""

    address: IPv4
    mac: MAC


class BufferLimits(DocModel):
    per_mh_packets: Annotated[int, whole(1, 1_000_000)] = 64
    total_packets: Annotated[int, whole(1, 100_000_000)] = 4096

    @field_validator("total_packets")
    @classmethod
    def _room_for_one(cls, total: int, info: ValidationInfo) -> int:
        per = info.data.get("per_mh_packets")
        if per is not None and total < per:
            raise ValueError(f"{total} is below per_mh_packets ({per})")
        return total


class Network(DocModel):
    controller: ControllerConfig = Field(default_factory=dict, validate_default=True)   # validated: keys are required
    priority_dscp: Annotated[int, whole(0, 63)] = Field(default=DSCP_IPF_PRIORITY_DEFAULT,
                                                        description="the IPF codepoint (0 and LE are reserved)")
    buffer: BufferLimits = Field(default_factory=lambda: BufferLimits())
    punt_budget: PuntBudget = Field(default_factory=lambda: PuntBudget())
    access_gateway: AccessGateway
    switches: tuple[Switch, ...]
    fixed_hosts: tuple[FixedHost, ...] = ()
    mobile_hosts: tuple[MobileHost, ...]
    buffer_service: BufferService | None = Field(default=None, description="a buffer service on a `buffer` port "
                                                 "of every switch (docs/controller.md); absent: the controller "
                                                 "buffers (packet-in / packet-out)")

    def switch(self, name: str) -> Switch | None:
        for s in self.switches:         # a plain loop: asked a dozen times per handoff, of a handful of switches
            if s.name == name:
                return s
        return None

    @property
    def gateway(self) -> Switch:
        return next(s for s in self.switches if s.role == ROLE_GATEWAY)

    @property
    def base_stations(self) -> tuple[Switch, ...]:
        return tuple(s for s in self.switches if s.is_bs)

    def mobile(self, name_or_address: str) -> MobileHost | None:
        return next((m for m in self.mobile_hosts
                     if name_or_address in (m.name, m.address)), None)

    def fixed(self, name: str) -> FixedHost | None:
        return next((h for h in self.fixed_hosts if h.name == name), None)

    def peered(self, a: str, b: str) -> bool:
        sw = self.switch(a)
        return sw is not None and sw.peer_port(b) is not None

    @field_validator("priority_dscp")
    @classmethod
    def _not_reserved(cls, dscp: int) -> int:
        if dscp in (DSCP_BEST_EFFORT, DSCP_LE):
            raise ValueError(f"{dscp} is reserved (best effort / DSBP lower-effort)")
        return dscp

    @field_validator("switches")
    @classmethod
    def _cell_ids(cls, switches: tuple[Switch, ...]) -> tuple[Switch, ...]:
        """BSs without a cell id take the lowest ids not taken, in file order."""
        if not switches:
            raise ValueError("at least a gateway and one base station are needed")
        used = {s.cell_id for s in switches if s.is_bs and "cell_id" in s.model_fields_set}
        free = (n for n in range(1, 65536) if n not in used)
        return tuple(s.model_copy(update={"cell_id": next(free)}) if s.is_bs and "cell_id" not in s.model_fields_set
                     else s for s in switches)

    @field_validator("mobile_hosts")
    @classmethod
    def _host_defaults(cls, mobiles: tuple[MobileHost, ...], info: ValidationInfo) -> tuple[MobileHost, ...]:
        """Correspondents default to every fixed host, the buffer to buffer.per_mh_packets."""
        if "fixed_hosts" not in info.data or "buffer" not in info.data:
            return mobiles            # their own errors are reported
        defaults = {"correspondents": tuple(sorted(h.name for h in info.data["fixed_hosts"])),
                    "buffer_packets": info.data["buffer"].per_mh_packets}
        return tuple(m.model_copy(update={k: v for k, v in defaults.items() if k not in m.model_fields_set})
                     for m in mobiles)

    @model_validator(mode="wrap")
    @classmethod
    def _across_objects(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Checks between objects, run on every object that is valid even when others are not."""
        net, errors = validate_all(handler, data)
        parts = _Parts.of(net, data) if net is not None else _Parts.partial(data)
        problems = [*_switch_checks(parts), *_host_checks(parts), *_address_clashes(parts)]
        if net is not None:
            problems += _buffer_ports(net)
        if errors or problems:
            fail(cls, errors, problems)
        return net


# --------------------------------------------------------------------------- loading

def load_network(path: str | Path) -> Network:
    """Read and validate a description file; raise NetworkError listing every problem."""
    path = Path(path)
    raw = read_yaml(path, NetworkError)
    return parse_network(raw, source=str(path), base_dir=path.parent)


def parse_network(raw: Any, source: str = "<description>", base_dir: Path | None = None) -> Network:
    """Validate an already-parsed description (a dict); paths in it are relative to `base_dir`."""
    try:
        return Network.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise NetworkError(source, [(field_path(e["loc"]), message(e, Network)) for e in exc.errors()]) from None


# --------------------------------------------------------------------------- checks across objects

@dataclass(frozen=True)
class _Parts:
    """What a description's cross-object checks look at: the valid objects by index, and every name the
    file declares (even by an entry with errors: it is reported there, not again by what names it)."""

    switches: list[tuple[int, Switch]]
    fixed: list[tuple[int, FixedHost]]
    mobiles: list[tuple[int, MobileHost]]
    controller: ControllerConfig | None
    buffer: BufferLimits | None
    access_gateway: AccessGateway | None
    declared: dict[str, list[tuple[int, Any, Any]]]    # section: (index, name, role) of entries naming themselves
    switch_roles: list[Any]                            # of every switch entry (None: not a mapping)
    switches_listed: bool                              # `switches` is a list: its names are known (else: its error)

    @classmethod
    def of(cls, net: Network, data: Any) -> _Parts:
        return cls(list(enumerate(net.switches)), list(enumerate(net.fixed_hosts)), list(enumerate(net.mobile_hosts)),
                   net.controller, net.buffer, net.access_gateway, _declared(data), [s.role for s in net.switches],
                   True)

    @classmethod
    def partial(cls, data: Any) -> _Parts:
        doc = data if isinstance(data, dict) else {}

        def valid(model: type[DocModel], raw: Any) -> Any:
            try:
                return model.model_validate(raw)     # paths are not resolved: no check looks at them
            except ValidationError:
                return None

        def items(key: str, model: type[DocModel]) -> list[tuple[int, Any]]:
            raw = doc.get(key)
            found = ((i, valid(model, item)) for i, item in enumerate(raw)) if isinstance(raw, list) else ()
            return [(i, obj) for i, obj in found if obj is not None]

        gw = doc.get("access_gateway")
        switches = doc["switches"] if isinstance(doc.get("switches"), list) else []
        return cls(items("switches", Switch), items("fixed_hosts", FixedHost), items("mobile_hosts", MobileHost),
                   valid(ControllerConfig, doc.get("controller", {})), valid(BufferLimits, doc.get("buffer", {})),
                   valid(AccessGateway, gw) if gw is not None else None, _declared(data),
                   [s.get("role") if isinstance(s, dict) else None for s in switches],
                   isinstance(doc.get("switches"), list))

    def names(self, section: str, role: str | None = None) -> set[str]:
        return {name for _, name, r in self.declared[section] if role is None or r == role}


def _declared(data: Any) -> dict[str, list[tuple[int, Any, Any]]]:
    def field(item: Any, key: str) -> Any:
        return item.get(key) if isinstance(item, dict) else getattr(item, key, None)

    out: dict[str, list[tuple[int, Any, Any]]] = {}
    for section in ("switches", "fixed_hosts", "mobile_hosts"):
        raw = data.get(section) if isinstance(data, dict) else None
        out[section] = [(i, field(item, "name"), field(item, "role")) for i, item in enumerate(raw)
                        if isinstance(field(item, "name"), str)] if isinstance(raw, (list, tuple)) else []
    return out


def _unique(items: Iterable[tuple[Loc, Any]], what: str, prefix: Loc = ()) -> Iterator[Problem]:
    """A problem for every value seen before (`prefix` + loc of the first in the message)."""
    first: dict[Any, Loc] = {}
    for loc, value in items:
        if value in first:
            yield loc, f"duplicate {what} {value!r} (also at {field_path(prefix + first[value])})"
        else:
            first.setdefault(value, loc)


def _switch_checks(p: _Parts) -> Iterator[Problem]:
    """One gateway, at least one BS, unique names and ids, symmetric peering starred on the gateway."""
    raw = p.declared["switches"]
    roles = p.switch_roles
    roles_known = all(role in (ROLE_GATEWAY, ROLE_BS) for role in roles)   # else: that role's own error
    if roles and roles_known and roles.count(ROLE_GATEWAY) != 1:
        yield ("switches",), "exactly one switch must have role 'gateway'"
    if roles and roles_known and ROLE_BS not in roles:
        yield ("switches",), "at least one switch must have role 'bs'"
    yield from _unique(((("switches", i, "name"), name) for i, name, _ in raw), "switch name")
    yield from _unique(((("switches", i, "grpc"), (s.grpc, s.device_id)) for i, s in p.switches), "(grpc, device_id)")
    yield from _unique(((("switches", i, "mac"), s.mac) for i, s in p.switches), "switch MAC")
    yield from _unique(((("switches", i, "cell_id"), s.cell_id) for i, s in p.switches
                        if s.is_bs and "cell_id" in s.model_fields_set), "cell id")
    declared = p.names("switches")
    by_name = {s.name: s for _, s in p.switches}
    for i, sw in p.switches:
        for j, port in enumerate(sw.ports):
            if port.role != PORT_PEER or port.peer == sw.name or port.peer is None:
                continue            # self-peering is the switch's own error
            loc: Loc = ("switches", i, "ports", j, "peer")
            if port.peer not in declared:
                yield loc, f"unknown switch {port.peer!r}"
            elif port.peer in by_name and by_name[port.peer].peer_port(sw.name) is None:
                yield loc, f"{port.peer!r} has no peer port back to {sw.name!r} (peering must be symmetric)"
    gateways = [s for _, s in p.switches if s.role == ROLE_GATEWAY]
    if roles_known and roles.count(ROLE_GATEWAY) == 1 and gateways:
        gw = gateways[0]
        for i, sw in p.switches:
            if sw.is_bs and gw.peer_port(sw.name) is None:
                yield ("switches", i), f"base station {sw.name!r} is not peered with the gateway {gw.name!r}"


def _buffer_ports(net: Network) -> Iterator[Problem]:
    """With a buffer service, one `buffer` port on every switch; without, none; its address is its own."""
    for i, sw in enumerate(net.switches):
        n = sum(p.role == PORT_BUFFER for p in sw.ports)
        if net.buffer_service is None and n:
            yield ("switches", i, "ports"), "a buffer port needs a buffer_service"
        elif net.buffer_service is not None and n != 1:
            yield ("switches", i, "ports"), f"needs exactly one buffer port (buffer_service is set), has {n}"
    svc = net.buffer_service
    if svc is not None:
        taken = {net.controller.address, net.access_gateway.address, *(s.address for s in net.switches),
                 *(h.address for h in net.fixed_hosts), *(m.address for m in net.mobile_hosts)}
        if svc.address in taken:
            yield ("buffer_service", "address"), f"{svc.address} is already another host's or switch's address"
        if net.controller.keys is None:
            yield ("buffer_service",), "needs controller.keys: the controller and the service authenticate " \
                                       "each other with its key `key_name`"
        for name in svc.interfaces:
            if net.switch(name) is None:
                yield ("buffer_service", "interfaces", name), f"unknown switch {name!r}"


def _host_checks(p: _Parts) -> Iterator[Problem]:
    """Hosts name switches, ports, base stations and fixed hosts that exist; their names are unique."""
    yield from _unique(((("fixed_hosts", i, "name"), n) for i, n, _ in p.declared["fixed_hosts"]), "host name")
    yield from _unique(((("mobile_hosts", i, "name"), n) for i, n, _ in p.declared["mobile_hosts"]),
                       "mobile host name")
    switches, by_name = p.names("switches"), {s.name: s for _, s in p.switches}
    for i, h in p.fixed:
        sw = by_name.get(h.switch)
        if not p.switches_listed:
            continue                # no switch list (missing or misspelt): that is the error, not each name
        if h.switch not in switches:
            yield ("fixed_hosts", i, "switch"), f"unknown switch {h.switch!r}"
        elif sw is None:
            continue                # declared but invalid: its own errors are reported
        elif (port := sw.port(h.port)) is None:
            yield ("fixed_hosts", i, "port"), f"switch {sw.name!r} has no port {h.port}"
        elif port.role == PORT_PEER:
            yield ("fixed_hosts", i, "port"), (f"port {h.port} of {sw.name!r} is a peer port (hosts attach to core "
                                               f"or access ports)")
    fixed = p.names("fixed_hosts")
    not_gateways = p.names("switches") - p.names("switches", ROLE_GATEWAY)    # a bad role is its own error
    for i, m in p.mobiles:
        for j, name in enumerate(m.correspondents):
            if name not in fixed:
                yield ("mobile_hosts", i, "correspondents", j), f"unknown fixed host {name!r}"
        for bs, _ in m.cell_addresses:
            if p.switches_listed and bs not in not_gateways:
                yield ("mobile_hosts", i, "cell_addresses", bs), "not a base station"
        if p.buffer is not None and m.buffer_packets > p.buffer.total_packets:
            yield ("mobile_hosts", i, "buffer_packets"), (f"{m.buffer_packets} is out of range "
                                                          f"[1, {p.buffer.total_packets}] (buffer.total_packets)")


def _address_clashes(p: _Parts) -> Iterator[Problem]:
    """Every address routes to exactly one place; switches and hosts share one namespace."""
    items: list[tuple[Loc, str]] = []
    if p.controller is not None:
        items.append((("controller", "address"), p.controller.address))
    items += [(("switches", i, "address"), s.address) for i, s in p.switches]
    items += [(("fixed_hosts", i, "address"), h.address) for i, h in p.fixed]
    gateways: dict[str, Loc] = {}
    for i, h in p.fixed:
        if h.gateway:
            gateways.setdefault(h.gateway, ("fixed_hosts", i, "gateway"))    # hosts may share their gateway
    items += [(loc, addr) for addr, loc in gateways.items()]
    for i, m in p.mobiles:
        items.append((("mobile_hosts", i, "address"), m.address))
        items += [(("mobile_hosts", i, "cell_addresses", bs), a) for bs, a in m.cell_addresses]
    if p.access_gateway is not None:
        items.append((("access_gateway", "address"), p.access_gateway.address))
    yield from _unique(items, "address")
    first: dict[str, tuple[str, Loc]] = {}
    for section in ("switches", "fixed_hosts", "mobile_hosts"):
        for i, name, _ in p.declared[section]:
            seen = first.setdefault(name, (section, (section, i, "name")))
            if seen[0] != section:           # duplicates within a section are reported there
                yield (section, i, "name"), (f"duplicate name (switches and hosts share one namespace) {name!r} "
                                             f"(also at {field_path(seen[1])})")
