"""Reading the YAML files users write (scenario files, network descriptions): one reader, one error shape.

Both kinds of file are hand-written, so both are read the same way: a file
that is not a YAML document at all (missing, a directory, empty, binary,
broken YAML, a key given twice) is one line naming the file and the
problem, and a document with mistakes lists every (field path, problem) at
once. YAML itself keeps the last of two equal keys without a word; here a
duplicate key is an error, since the first value would be silently lost.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: The field path of a problem with the file itself rather than a field in it.
FILE = "(file)"


class DocumentError(ValueError):
    """A file that cannot be used; `errors` lists every (field path, problem).

    A problem with the file itself (path FILE) is the only problem reported
    and prints as one line: `FILE.yaml: no such file`.
    """

    kind = "document"

    def __init__(self, source: str, errors: list[tuple[str, str]]) -> None:
        self.source = source
        self.errors = list(errors)
        if len(self.errors) == 1 and self.errors[0][0] == FILE:
            message = f"{source}: {self.errors[0][1]}"
        else:
            lines = [f"{source}: {len(self.errors)} error(s) in {self.kind}"]
            lines += [f"  {path}: {problem}" for path, problem in self.errors]
            message = "\n".join(lines)
        super().__init__(message)


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (YAML silently keeps the last)."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _file_problem(path: Path) -> tuple[str | None, str]:
    """(the file's text, None) or (None, what is wrong with the file)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "no such file"
    except IsADirectoryError:
        return None, "is a directory, not a file"
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    if b"\0" in data:
        return None, "not a text file (binary data)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not a text file (not UTF-8 at byte {exc.start})"
    return text, ""


def parse_yaml(text: str) -> Any:
    """The document in `text`, rejecting duplicate keys (yaml.YAMLError otherwise)."""
    return yaml.load(text, Loader=UniqueKeyLoader)


def read_yaml(path: str | Path, error: type[DocumentError]) -> Any:
    """The YAML document in `path`; `error(path, [(FILE, problem)])` if the file holds none."""
    text, problem = _file_problem(Path(path))
    if text is None:
        raise error(str(path), [(FILE, problem)])
    try:
        doc = parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise error(str(path), [(FILE, f"not valid YAML{where}: {getattr(exc, 'problem', None) or exc}")]) from None
    if doc is None:
        raise error(str(path), [(FILE, "is empty (no YAML document in it)")])
    return doc
