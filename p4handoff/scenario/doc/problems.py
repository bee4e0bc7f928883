"""Pydantic's errors about a scenario document in the project's words, each at the path a user reads.

Paths name list items by their `name` where they have one
(`topology.cells[g3].queue.limit`, else `topology.links[0].rate`), and a
top-level field as `(top).duration`. A misspelt key is one error, "unknown
field (did you mean rate? ...)", not also "rate: required"; a required field
missing says what it is for (its description).
"""
from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Iterator, NoReturn, Sequence

from pydantic import BaseModel, Tag, ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError, core_schema

from p4handoff.docmodel import Loc, Problem, message

TOP = "(top)"


def tag(kind: str) -> Tag:
    """The tag of one member of a union chosen by a key (a move's kind); `strip_tags` drops it from paths."""
    return Tag(f"<{kind}>")


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and part.startswith("<") and part.endswith(">")


def strip_tags(loc: Loc) -> Loc:
    """The location without the union tags pydantic puts after a list index."""
    return tuple(p for k, p in enumerate(loc) if not (k and isinstance(loc[k - 1], int) and _is_tag(p)))


def display_path(loc: Loc, raw: Any) -> str:
    """`topology.cells[g3].rate` for ("topology", "cells", 1, "rate"), naming items from the raw document."""
    loc = strip_tags(loc)
    if len(loc) <= 1:
        return f"{TOP}.{loc[0]}" if loc else TOP
    out, node = "", raw
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            out += f"[{name}]" if isinstance(name, str) and name else f"[{part}]"
            node = item
        elif part != "[key]":
            out += f".{part}" if out else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def _raw_at(raw: Any, loc: Loc) -> Any:
    for part in strip_tags(loc):
        if isinstance(part, int):
            raw = raw[part] if isinstance(raw, list) and 0 <= part < len(raw) else None
        else:
            raw = raw.get(part) if isinstance(raw, dict) else None
    return raw


def _unwrap(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _member_tag(annotation: Any) -> str | None:
    if typing.get_origin(annotation) is typing.Annotated:
        return next((m.tag for m in typing.get_args(annotation)[1:] if isinstance(m, Tag)), None)
    return None


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """The model's fields by the key a document writes (the alias where there is one)."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def _step(annotation: Any, part: str | int) -> Any:
    """The type of `part` inside a value of type `annotation` (None: unknown)."""
    annotation = _unwrap(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        tagged = next((m for m in args if _member_tag(m) == part), None)
        if tagged is not None:
            return _unwrap(tagged)
        return next((s for s in (_step(m, part) for m in args if m is not type(None)) if s is not None), None)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = _fields(annotation).get(part) if isinstance(part, str) else None
        return field.annotation if field else None
    if origin in (tuple, list) and isinstance(part, int):
        return args[0]
    if origin is dict and isinstance(part, str):
        return args[1]
    return None


def model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model of the object at `loc` (pydantic's, tags included) below `root`."""
    annotation: Any = root
    for part in loc:
        annotation = _step(annotation, part)
    annotation = _unwrap(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _wording(err: ErrorDetails, root: type[BaseModel], raw: Any) -> str:
    loc = err["loc"]
    parent = model_at(root, loc[:-1]) if loc else None
    if err["type"] == "missing":
        field = _fields(parent).get(str(loc[-1])) if parent else None
        return f"required: {field.description}" if field is not None and field.description else "required"
    if err["type"] == "extra_forbidden" and parent is not None:
        known = list(_fields(parent))
        close = _close_match(err, parent, raw)
        return f"unknown field ({f'did you mean {close}? ' if close else ''}known: {', '.join(known)})"
    return message(err, root)


def _close_match(err: ErrorDetails, parent: type[BaseModel], raw: Any) -> str | None:
    """The known key an unknown one is a close spelling of (one the object does not have)."""
    given = _raw_at(raw, err["loc"][:-1])
    given = given if isinstance(given, dict) else {}
    close = difflib.get_close_matches(str(err["loc"][-1]), [k for k in _fields(parent) if k not in given], n=1)
    return close[0] if close else None


def in_words(errors: list[ErrorDetails], root: type[BaseModel], raw: Any) -> Iterator[tuple[str, str]]:
    """(path, problem) of every error, leaving out "required" for a key the document misspelt."""
    misspelt: set[Loc] = set()
    for err in errors:
        parent = model_at(root, err["loc"][:-1]) if err["type"] == "extra_forbidden" else None
        close = _close_match(err, parent, raw) if parent is not None else None
        if close is not None:
            misspelt.add(strip_tags(err["loc"][:-1]) + (close,))
    for err in errors:
        if not (err["type"] == "missing" and strip_tags(err["loc"]) in misspelt):
            yield display_path(err["loc"], raw), _wording(err, root, raw)


_PYDANTIC_TYPES = frozenset(typing.get_args(core_schema.ErrorType))


def reraise(model: type[BaseModel], errors: Sequence[ErrorDetails], problems: Sequence[Problem] = ()) -> NoReturn:
    """One ValidationError with pydantic's errors as they are (their wording is chosen at the top, `in_words`)
    and our own problems."""
    line: list[InitErrorDetails] = []
    for err in errors:
        if err["type"] in _PYDANTIC_TYPES:
            line.append({"type": err["type"], "loc": err["loc"], "input": err["input"],
                         **({"ctx": err["ctx"]} if "ctx" in err else {})})   # type: ignore[typeddict-item]
        else:
            line.append({"type": PydanticCustomError(err["type"], "{message}", {"message": err["msg"]}),
                         "loc": err["loc"], "input": err["input"]})
    line += [{"type": PydanticCustomError("document", "{message}", {"message": text}), "loc": loc, "input": None}
             for loc, text in problems]
    raise ValidationError.from_exception_data(model.__name__, line)
