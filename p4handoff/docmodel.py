"""Pydantic models of the YAML documents users write: field types, and every problem in words, at once.

A document (a network description, next a scenario file) is a tree of frozen
models that refuse unknown fields. Its field types check what YAML leaves
ambiguous (`port: "1"` is not a port, `mac: 02:00:...` unquoted is not a
MAC) and say what was expected; each carries its JSON Schema, so
`p4handoff schema` lets editors check and complete the file. Checks that
span several objects run even when some objects failed (`validate_all`), and
every problem, pydantic's own included, becomes (field path, message) in the
project's words (`message`, `field_path`).
"""
from __future__ import annotations

import ipaddress
import math
import re
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Callable, NoReturn, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.json_schema import JsonDict
from pydantic_core import ErrorDetails, PydanticCustomError, core_schema

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]      # (location inside the document, what is wrong)

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"
MAC_PATTERN = r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"
_NAME_RE, _MAC_RE = re.compile(NAME_PATTERN), re.compile(MAC_PATTERN)


class DocModel(BaseModel):
    """One object of a document: immutable once read, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, eq=False)     # hashed by identity: typing hashes Annotated metadata
class Checked:
    """Annotated metadata: `check` validates and converts (a ValueError carries the user's message);
    `schema` is what the JSON Schema says about the field."""

    check: Callable[[Any], Any]
    schema: dict[str, Any]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self.check)

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return dict(self.schema)


def hidden_default(default: Any, description: str | None = None) -> Any:
    """A field whose default the schema does not show: one worked out from the rest of the document,
    or one that means nothing unless given (RED parameters of a droptail port)."""
    return Field(default, description=description, json_schema_extra=no_default)


def no_default(schema: JsonDict) -> None:
    """json_schema_extra that leaves the default out of a field's schema."""
    schema.pop("default", None)


def kind(value: Any) -> str:
    """What a YAML value is, for messages ("got list")."""
    return "nothing" if value is None else type(value).__name__


def whole(lo: int, hi: int) -> Checked:
    """An integer in [lo, hi]; YAML's true/false and "1" are not integers."""
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, got {kind(value)}")
        if not lo <= value <= hi:
            raise ValueError(f"{value} is out of range [{lo}, {hi}]")
        return value
    return Checked(check, {"type": "integer", "minimum": lo, "maximum": hi})


def real(lo: float, hi: float, lo_open: bool = False) -> Checked:
    """A finite number in [lo, hi] (lo excluded if lo_open); integers are accepted."""
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"must be a number, got {kind(value)}")
        if value < lo or value > hi or (lo_open and value == lo):
            raise ValueError(f"{value} is out of range {'(' if lo_open else '['}{lo}, {hi}]")
        return float(value)
    bound = {"exclusiveMinimum": lo} if lo_open else {"minimum": lo}
    return Checked(check, {"type": "number", **bound, "maximum": hi})


def check_name(value: Any) -> str:
    """A name as every YAML document of the project spells one (network and scenario files)."""
    if not isinstance(value, str) or not _NAME_RE.match(value):
        raise ValueError(f"must be a name (letter, then letters/digits/_/-, at most 32), got {value!r}")
    return value


def _ipv4(value: Any) -> str:
    try:
        addr = ipaddress.IPv4Address(value) if isinstance(value, str) else None
    except ValueError:
        addr = None
    if addr is None:
        raise ValueError(f"must be an IPv4 address like 10.0.1.1, got {value!r}")
    if addr.is_multicast or addr.is_unspecified or addr == ipaddress.IPv4Address("255.255.255.255"):
        raise ValueError(f"{value} is not a unicast host address")
    return str(addr)


def _mac(value: Any) -> str:
    if not isinstance(value, str) or not _MAC_RE.match(value):
        raise ValueError(f"must be a MAC address like 02:00:00:00:00:01, got {value!r}")
    if int(value[:2], 16) & 1:
        raise ValueError(f"{value} is a multicast MAC address")
    return value.lower()


def _path_text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"must be a path, got {value!r}")
    return value


Name = Annotated[str, Checked(check_name, {"type": "string", "pattern": NAME_PATTERN})]
IPv4 = Annotated[str, Checked(_ipv4, {"type": "string", "format": "ipv4"})]   # a unicast host address
MAC = Annotated[str, Checked(_mac, {"type": "string", "pattern": MAC_PATTERN})]   # unicast, kept lower-case
PathText = Annotated[str, Checked(_path_text, {"type": "string", "minLength": 1})]


# --------------------------------------------------------------------------- problems in words

def field_path(loc: Loc) -> str:
    """`switches[1].ports[0].peer` for ("switches", 1, "ports", 0, "peer"); the root is ""."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part != "[key]":          # pydantic's marker for a mapping key's own problem
            out += f".{part}" if out else part
    return out


def message(err: ErrorDetails, model: type[BaseModel]) -> str:
    """The project's wording of one pydantic error; `model` is the document the error's loc starts at."""
    typ, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if typ == "missing":
        return "missing required field"
    if typ == "extra_forbidden":
        parent = _model_at(model, err["loc"][:-1])
        allowed = f" (allowed: {', '.join(sorted(parent.model_fields))})" if parent else ""
        return f"unknown field{allowed}"
    if typ in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a mapping, got {kind(value)}"
    if typ in ("tuple_type", "list_type"):
        return f"must be a list, got {kind(value)}"
    if typ == "bool_type":
        return f"must be true or false, got {value!r}"
    if typ == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        if len(choices) == 2:
            return f"must be '{choices[0]}' or '{choices[1]}', got {value!r}"
        return f"must be one of {', '.join(choices)}; got {value!r}"
    if typ in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    return err["msg"]


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class of the object at `loc` below `model` (list indices are skipped)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if current else None
        current = _model_in(field.annotation) if field else None
    return current


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (tuple, list, typing.Union, types.UnionType):
        return next((m for m in map(_model_in, typing.get_args(annotation)) if m), None)
    return None


def fail(model: type[BaseModel], errors: Sequence[ErrorDetails], problems: Sequence[Problem] = ()) -> NoReturn:
    """Raise one ValidationError holding pydantic's errors (in words) and our own problems."""
    details = [(err["loc"], message(err, model), err.get("input")) for err in errors]
    details += [(loc, text, None) for loc, text in problems]
    raise ValidationError.from_exception_data(model.__name__, [
        {"type": PydanticCustomError("document", "{message}", {"message": text}), "loc": loc, "input": value}
        for loc, text, value in details])


def validate_all(handler: Callable[[Any], Any], data: Any) -> tuple[Any, list[ErrorDetails]]:
    """(the validated object, []) or (None, every error): so checks across objects can still run."""
    try:
        return handler(data), []
    except ValidationError as exc:
        return None, exc.errors()


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a document, for editors (`# yaml-language-server: $schema=...`)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **model.model_json_schema()}
