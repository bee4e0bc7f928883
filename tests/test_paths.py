"""Where the product finds the compiled P4 program: ./build of the working directory, or $P4HANDOFF_BUILD."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from p4handoff.controller.network import parse_network
from p4handoff.paths import BUILD_ENV, build_dir, pipeline_files

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"


def test_the_build_directory_is_that_of_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUILD_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert build_dir() == tmp_path / "build"
    assert pipeline_files() == (tmp_path / "build" / "bs.p4info.txtpb", tmp_path / "build" / "bs.json")


def test_the_environment_names_another_build_directory_made_absolute(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(BUILD_ENV, "elsewhere")
    assert build_dir() == tmp_path / "elsewhere"
    p4info, config = pipeline_files("tofino2")
    assert p4info == tmp_path / "elsewhere" / "tofino" / "tofino2" / "bs_tna.p4info.txtpb"
    assert config == tmp_path / "elsewhere" / "tofino" / "tofino2" / "pipe" / "tofino2.bin"


def test_an_unknown_target_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown target 'tofino3'.*v1model, tofino, tofino2"):
        pipeline_files("tofino3")


def test_a_network_without_pipeline_files_takes_the_build_output(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BUILD_ENV, str(tmp_path / "out"))
    raw = yaml.safe_load(EXAMPLE.read_text())
    for key in ("p4info", "device_config"):
        raw.get("controller", {}).pop(key, None)
    raw.setdefault("controller", {})["target"] = "tofino"
    ctl = parse_network(raw).controller
    assert Path(ctl.p4info) == tmp_path / "out" / "tofino" / "tofino" / "bs_tna.p4info.txtpb"
    assert Path(ctl.device_config) == tmp_path / "out" / "tofino" / "tofino" / "pipe" / "tofino.bin"
