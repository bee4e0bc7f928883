"""The hygiene tests see every real file of the product, once (tests/source_tree.py)."""
from __future__ import annotations

import os
from pathlib import Path

from tests.source_tree import REPO, package_dirs, product_modules


def test_the_design_cards_top_level_packages_are_linked_into_p4handoff() -> None:
    dirs = package_dirs()
    assert dirs["p4handoff.controller"] == REPO / "controller"
    assert dirs["p4handoff.topo"] == REPO / "topo"


def test_every_real_python_file_is_walked_once() -> None:
    walked = sorted(product_modules().values())
    on_disk = sorted(Path(d, f) for top in ("p4handoff", "controller", "topo")
                     for d, _, files in os.walk(REPO / top) for f in files
                     if f.endswith(".py") and "generated" not in Path(d).relative_to(REPO).parts)
    assert walked == on_disk
    assert len(walked) == len(set(walked)) > 140          # 146 files when the layout moved (issue 19)


def test_a_linked_subpackage_is_named_under_the_top_package(tmp_path: Path) -> None:
    (tmp_path / "top").mkdir()
    (tmp_path / "top" / "__init__.py").write_text("")
    (tmp_path / "ctl" / "sub").mkdir(parents=True)
    for f in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py"):
        (tmp_path / "ctl" / f).write_text("")
    (tmp_path / "top" / "ctl").symlink_to("../ctl")
    assert set(product_modules(tmp_path, "top")) == {"top", "top.ctl", "top.ctl.a", "top.ctl.sub", "top.ctl.sub.b"}
