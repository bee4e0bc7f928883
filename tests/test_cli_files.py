"""Files users hand to `p4handoff run` and `p4handoff ctl`: an unusable file is one line naming it, exit 3.

Also the options that used to be accepted silently: `--schemes ""`, and
`--repeat` on a scenario whose simulator runs draw nothing at random.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.cli.main import main

REPO = Path(__file__).resolve().parent.parent
VH = REPO / "traces" / "vh-wlan-to-3g.yaml"
NETWORK = REPO / "topo" / "three-switch.yaml"
EXIT_INVALID = 3

#: name -> (how to make it in a directory, what the one line says after "<file>: ")
BAD_FILES = {
    "missing": (lambda p: None, "no such file"),
    "directory": (lambda p: p.mkdir(), "is a directory, not a file"),
    "empty": (lambda p: p.write_text(""), "is empty (no YAML document in it)"),
    "comments-only": (lambda p: p.write_text("# nothing yet\n\n"), "is empty (no YAML document in it)"),
    "binary": (lambda p: p.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256))), "not a text file"),
    "latin-1": (lambda p: p.write_bytes("title: caf\xe9\n".encode("latin-1")), "not a text file (not UTF-8"),
    "bad-yaml": (lambda p: p.write_text("a: [1,\n"), "not valid YAML at line 2, column 1"),
    "duplicate-key": (lambda p: p.write_text("a: 1\nb: 2\na: 3\n"),
                      "not valid YAML at line 3, column 1: duplicate key 'a' (first at line 1)"),
}

COMMANDS = {
    "run": lambda f: ["run", str(f), "--check"],
    "ctl validate": lambda f: ["ctl", "validate", "--network", str(f)],
    "ctl run": lambda f: ["ctl", "run", "--network", str(f)],
    "ctl status": lambda f: ["ctl", "status", "--network", str(f)],
}


@pytest.mark.parametrize("command", COMMANDS, ids=str)
@pytest.mark.parametrize("kind", BAD_FILES, ids=str)
def test_an_unusable_file_is_one_line_naming_it_and_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                           kind: str, command: str) -> None:
    make, problem = BAD_FILES[kind]
    path = tmp_path / f"{kind}.yaml"
    make(path)
    assert main(COMMANDS[command](path)) == EXIT_INVALID
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.count("\n") == 1, out.err
    assert out.err.startswith(f"{path}: {problem}"), out.err


def test_a_duplicate_key_in_a_real_scenario_file_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = VH.read_text().replace("  min_rto: 1s\n", "  min_rto: 1s\n  min_rto: 200ms\n")
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    assert main(["run", str(path), "--check"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: not valid YAML at line ") and "duplicate key 'min_rto'" in err


def test_extends_naming_an_unusable_file_names_that_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "base.yaml").write_text("")
    (tmp_path / "case.yaml").write_text("extends: base.yaml\nseed: 1\n")
    assert main(["run", str(tmp_path / "case.yaml"), "--check"]) == EXIT_INVALID
    assert capsys.readouterr().err == f"{tmp_path / 'base.yaml'}: is empty (no YAML document in it)\n"


def test_good_files_still_validate(capsys: pytest.CaptureFixture) -> None:
    assert main(["run", str(VH), "--check"]) == 0
    assert main(["ctl", "validate", "--network", str(NETWORK)]) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["", " , ", ","])
def test_empty_schemes_is_a_usage_error(capsys: pytest.CaptureFixture, value: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", str(VH), "--check", "--schemes", value])
    assert info.value.code == 2
    assert "--schemes: give at least one scheme (known: newreno," in capsys.readouterr().err


def test_unknown_scheme_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", str(VH), "--check", "--schemes", "newreno,tahoe"])
    assert info.value.code == 2
    assert "unknown scheme 'tahoe'; known: newreno" in capsys.readouterr().err


def test_run_help_explains_the_backends_and_lists_every_scheme(capsys: pytest.CaptureFixture) -> None:
    from p4handoff.hosts.cc import SCHEMES, scheme_summary
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "sim: the deterministic simulator" in help_text and "lab: Mininet with BMv2" in help_text
    assert "auto: lab when it can run here, else sim" in help_text
    for name in SCHEMES:
        assert f"{name} {' '.join(scheme_summary(name).split())}" in help_text


def _short_run(tmp_path: Path, *extra: str) -> list[str]:
    """A 12 s, one-scheme vh-wlan-to-3g run, three simulator repeats (the WLAN at 2 Mb/s: a tenth of its packets)."""
    return ["run", str(VH), "--backend", "sim", "--repeat", "3", "--jobs", "1", "--schemes", "bwaware",
            "--set", "duration=12", "--set", "measure.windows.0.to=11.5", "--set", "measure.plot_range=[8, 12]",
            "--set", "topology.cells.wlan.rate=2Mbps",
            "--results", str(tmp_path), "--no-plots", "--quiet", *extra]


def test_repeats_without_a_random_element_are_announced_as_identical(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    assert main(_short_run(tmp_path)) == 0
    out = capsys.readouterr()
    warnings = [line for line in out.err.splitlines() if "warning" in line]
    assert warnings == [f"p4handoff run: warning: {VH} has no random element (random loss, RED/M-RED queue or "
                        "randomised scheme): the simulator's 3 repeats will be identical"]
    assert "± 0.000" in out.out          # the warning is true: the three repeats agree exactly


def test_repeats_with_random_loss_are_not_warned_about(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(_short_run(tmp_path, "--set", "topology.cells.g3.loss=0.02")) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err
    assert "± 0.000 |" not in out.out.split("Bandwidth-Aware", 1)[1].splitlines()[0]


@pytest.mark.slow
def test_a_reader_that_stops_early_is_not_an_error():
    """`p4handoff schema network | true` (as `ctl status | head`): the closed pipe ends the command quietly, exit 0."""
    import subprocess
    import sys

    proc = subprocess.run(["bash", "-c", f"'{sys.executable}' -m p4handoff schema network | true; "
                           "echo ${PIPESTATUS[0]} >&2"], capture_output=True, text=True, timeout=60)
    status = proc.stderr.strip().splitlines()[-1]
    assert status == "0", proc.stderr
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
