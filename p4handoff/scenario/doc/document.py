"""A scenario file as written (after `extends:` and `count:` expansion): `ScenarioDoc` and its top-level parts.

Values the papers leave open (buffer sizes, receiver window, minimum RTO,
initial window, delayed ACKs) are required fields, so every file states
them and every report prints them. docs/lab.md has the schema with an
example; `p4handoff schema scenario` writes it as JSON Schema.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from p4handoff.docmodel import Checked, DocModel, Name, Problem, fail, real, whole
from p4handoff.hosts.net.timescale import MAX_TIME_SCALE
from p4handoff.scenario.rawdoc import get_path, split_path
from p4handoff.scenario.doc.measure import MeasureDoc
from p4handoff.scenario.doc.names import declared, refers_to
from p4handoff.scenario.doc.published import PublishedDoc
from p4handoff.scenario.doc.topology import TopologyDoc
from p4handoff.scenario.doc.values import Flag, FlowScheme, PositiveTime, Scheme, Text, Time, one_of
from p4handoff.scenario.model import PAPERS, SCENARIO_RE, SweepAxis, TcpSpec, Variant

PacketSize = Annotated[int, whole(1, 1460)]
Segments = Annotated[int, whole(1, 1 << 14)]
InitialWindow = Annotated[int, whole(1, 64)]
TCP_KEYS = ("packet_size", "window", "iw", "min_rto", "delayed_ack", "initial_rto", "sack", "timestamps")


def _scenario_name(value: Any) -> str:
    if not isinstance(value, str) or not SCENARIO_RE.match(value):
        raise ValueError(f"must be lower-case letters, digits, - and _ (a directory name), got {value!r}")
    return value


class TcpDoc(DocModel):
    """The TCP settings of every flow (a flow may change any of them)."""

    packet_size: PacketSize = Field(description="TCP payload bytes of a full segment (+52 header bytes on the wire)")
    window: Segments = Field(description="receiver window = cwnd cap, segments")
    iw: InitialWindow = Field(description="initial window, segments")
    min_rto: PositiveTime = Field(description="minimum retransmission timeout")
    delayed_ack: Flag = Field(description="the receiver delays ACKs (RFC 1122)")
    initial_rto: PositiveTime = 1.0
    sack: Flag = True
    timestamps: Flag = True

    def spec(self) -> TcpSpec:
        return TcpSpec(**dict(self))


_host = refers_to(("correspondents", "mobile_hosts", "background_hosts"), "host", "hosts")


class TcpChanges(DocModel):
    """TCP settings that replace the file's `tcp:` ones where given (a flow's own, a variant's)."""

    packet_size: PacketSize | None = None
    window: Segments | None = None
    iw: InitialWindow | None = None
    min_rto: PositiveTime | None = None
    delayed_ack: Flag | None = None
    initial_rto: PositiveTime | None = None
    sack: Flag | None = None
    timestamps: Flag | None = None

    def given(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in TCP_KEYS if getattr(self, key) is not None}


def with_changes(base: TcpSpec, changes: dict[str, Any]) -> TcpSpec:
    """`base` with some of its settings replaced."""
    return TcpSpec(**{**{key: getattr(base, key) for key in TCP_KEYS}, **changes}) if changes else base


class FlowDoc(TcpChanges):
    """One bulk TCP transfer; any tcp key here changes that flow's setting."""

    name: Name
    src: Name = Field(alias="from", description="the sending host")
    dst: Name = Field(alias="to", description="the receiving host")
    scheme: FlowScheme = Field(description="a congestion-control scheme, or 'compared': the variant's scheme")
    start: Time = 0.0
    start_jitter: Time = Field(default=0.0, description=(
        "each run starts the flow at start + a draw in [0, start_jitter) from its seed and the flow's name "
        "(both backends the same): repeats then differ in the flow's phase, e.g. one RTT for a window-limited flow"))
    stop: PositiveTime | None = Field(default=None, description="default: runs to the end")

    @field_validator("src", "dst")
    @classmethod
    def _known_host(cls, host: str, info: ValidationInfo) -> str:
        _host(host, info)
        if info.field_name == "dst" and host == info.data.get("src"):
            raise ValueError("a flow needs two different hosts")
        return host

    @field_validator("stop")
    @classmethod
    def _after_start(cls, stop: float | None, info: ValidationInfo) -> float | None:
        start = info.data.get("start")
        if start is not None:
            start += info.data.get("start_jitter") or 0.0
        if stop is not None and start is not None and stop <= start:
            raise ValueError(f"must be after start + start_jitter ({start:g} s), got {stop:g}")
        return stop

    def tcp(self, base: TcpSpec) -> TcpSpec:
        """The flow's TCP settings: `base` with the flow's own."""
        return with_changes(base, self.given())


def _path_syntax(sets: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for path in sets:
        try:
            split_path(str(path))
        except ValueError as exc:
            problems.append(((), str(exc)))
    return problems


class VariantDoc(DocModel):
    """One column of the comparison: a scheme for the `compared` flows and/or changed fields."""

    label: Text
    scheme: Scheme | None = None
    tcp: TcpChanges | None = Field(default=None, description="TCP settings of this variant's `compared` flows "
                                   "(over the file's tcp: and the flow's own), e.g. {window: 20}: a scheme-specific "
                                   "receiver window")
    set: dict[str, Any] = Field(default_factory=dict, description="field path -> value, e.g. "
                                                                  "{topology.cells.new.queue.aqm: mred}")

    @field_validator("set")
    @classmethod
    def _paths(cls, sets: dict[str, Any]) -> dict[str, Any]:
        if problems := _path_syntax(sets):
            fail(cls, [], problems)
        return sets


def _sweep_path(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(p, str) for p in value):
        return ",".join(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a field path or a list of them, got {value!r}")
    return value


class SweepDoc(DocModel):
    """One axis: values for one field, or for several fields that move together."""

    path: Annotated[str, Checked(_sweep_path, {"anyOf": [{"type": "string", "minLength": 1},
                                                         {"type": "array", "items": {"type": "string"},
                                                          "minItems": 1}]})] = Field(
        description="dotted path (a list segment is an index or an item's name), or a list of paths")
    label: Text | None = Field(default=None, description="default: the path's last segment")
    values: tuple[Any, ...] = Field(description="the values swept (at least one)")

    @field_validator("path")
    @classmethod
    def _existing(cls, path: str, info: ValidationInfo) -> str:
        names = declared(info)
        for one in path.split(","):
            split_path(one.strip())
            if names is not None:
                get_path(names.source, one.strip())
        return path

    @field_validator("values")
    @classmethod
    def _some(cls, values: tuple[Any, ...]) -> tuple[Any, ...]:
        if not values:
            raise ValueError("must list at least one value")
        return values

    def axis(self) -> SweepAxis:
        return SweepAxis(self.path, self.label or self.path.split(".")[-1], self.values)


def _once(labels: list[str]) -> None:
    """The comparison's columns have distinct labels."""
    twice = next((label for k, label in enumerate(labels) if label in labels[:k]), None)
    if twice is not None:
        raise ValueError(f"label {twice!r} is used twice")


class LabDoc(DocModel):
    """How the lab backend plays the scenario; the simulator ignores it (it has no machine to keep up with)."""

    time_scale: Annotated[float, real(1.0, MAX_TIME_SCALE)] = Field(default=1.0, description=(
        "time dilation: the lab's network runs this many times slower (rates divided, delays, the timeline and "
        "the windows stretched) and its endpoints on a clock as much slower, so a machine too small to play "
        "the scenario in real time plays it at 1/S speed; the controller and the switches are not slowed "
        "(docs/lab.md, 'Time dilation')"))


class ScenarioDoc(DocModel):
    """A scenario: topology, mobility timeline, flows, what to measure, and the paper's numbers to compare with."""

    scenario: Annotated[str, Checked(_scenario_name, {"type": "string", "pattern": SCENARIO_RE.pattern})] = Field(
        description="the name of its results directory (results/<scenario>/...): lower case, digits, - and _")
    title: Text
    paper: Annotated[str, one_of(PAPERS)] = Field(
        description="the paper the experiment is from: its section of docs/papers.md (none: beyond the four)")
    description: str = Field(default="", description="printed in the report")
    duration: PositiveTime
    seed: Annotated[int, whole(0, 2**64 - 1)] = Field(default=0, description="the first repeat's seed")
    tcp: TcpDoc = Field(description="packet_size, window, iw, min_rto, delayed_ack (the papers leave them open)")
    assumptions: tuple[Text, ...] = Field(default=(), description="what the file chose where the paper is vague")
    topology: TopologyDoc
    flows: tuple[FlowDoc, ...] = Field(description="at least one flow")
    labels: dict[str, Text] = Field(default_factory=dict, description="scheme -> the paper's name for it")
    variants: tuple[VariantDoc, ...] | None = Field(default=None, description="the compared columns (or schemes)")
    schemes: tuple[Scheme, ...] | None = Field(default=None, description="the compared columns, one per scheme")
    sweep: tuple[SweepDoc, ...] = Field(default=(), description="axes; several: their cartesian product")
    measure: MeasureDoc
    published: PublishedDoc | None = None
    lab: LabDoc = Field(default_factory=LabDoc, description="the lab backend's settings (time_scale)")

    @field_validator("flows")
    @classmethod
    def _named_once(cls, flows: tuple[FlowDoc, ...]) -> tuple[FlowDoc, ...]:
        if not flows:
            raise ValueError("required: at least one flow")
        seen: set[str] = set()
        problems: list[Problem] = []
        for k, flow in enumerate(flows):
            if flow.name in seen:
                problems.append(((k, "name"), f"{flow.name!r} is already used by another flow"))
            seen.add(flow.name)
        if problems:
            fail(cls, [], problems)
        return flows

    @field_validator("variants")
    @classmethod
    def _variant_labels(cls, variants: tuple[VariantDoc, ...] | None) -> tuple[VariantDoc, ...] | None:
        _once([v.label for v in variants or ()])
        return variants

    @field_validator("schemes")
    @classmethod
    def _schemes(cls, schemes: tuple[str, ...] | None, info: ValidationInfo) -> tuple[str, ...] | None:
        if schemes is not None and info.data.get("variants") is not None:
            raise ValueError("give schemes or variants, not both (a variant may set a scheme)")
        _once([info.data.get("labels", {}).get(s, s) for s in schemes or ()])
        return schemes

    def variant_list(self) -> list[Variant]:
        return variant_list(self.schemes, self.labels, self.variants)


def variant_list(schemes: tuple[str, ...] | None, labels: dict[str, str],
                 variants: tuple[VariantDoc, ...] | None) -> list[Variant]:
    """The comparison's columns: the schemes (named by `labels`), or the variants; else one, `default`."""
    out = ([Variant(labels.get(s, s), s) for s in schemes] if schemes is not None
           else [Variant(v.label, v.scheme, tuple(v.set.items()), tuple(v.tcp.given().items()) if v.tcp else ())
                 for v in variants or ()])
    return out or [Variant("default", None)]
