"""Where the product's Python files really are, for the hygiene tests (issue 19).

`p4handoff` is one installed package, but two of its subpackages live at the repository's top level, as the design
card names them: `controller/` is `p4handoff.controller` and `topo/` is `p4handoff.topo`, reached in a checkout
through the links `p4handoff/controller` and `p4handoff/topo` (the wheel copies them in). `Path.rglob` does not
follow links to directories, so walking `p4handoff/` alone would miss them: every walk starts from `package_dirs`.
"""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GENERATED = "generated"          # protoc's output under controller/p4runtime/, made at setup


def package_dirs(repo: Path = REPO, top: str = "p4handoff") -> dict[str, Path]:
    """Dotted package name -> its real directory: the top package and every linked subpackage in it."""
    root = repo / top
    out = {top: root}
    for link in sorted(root.iterdir()):
        if link.is_symlink() and link.is_dir() and (link / "__init__.py").is_file():
            out[f"{top}.{link.name}"] = link.resolve()
    return out


def product_modules(repo: Path = REPO, top: str = "p4handoff") -> dict[str, Path]:
    """Dotted module name -> its file, for every real .py file of the product (generated code left out)."""
    out: dict[str, Path] = {}
    for package, directory in package_dirs(repo, top).items():
        for path in sorted(directory.rglob("*.py")):
            rel = path.relative_to(directory)
            if GENERATED in rel.parts:
                continue
            parts = package.split(".") + list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out
