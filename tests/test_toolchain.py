"""`make toolchain` (issue 21, scripts/toolchain.sh) without building anything: the pins agree with the README's
version table and with `make setup`'s version checks, `--dry-run` prints the plan, and every pre-check fails
clearly (exit 2, one line saying what to do) on simulated inputs: OS, root/sudo, disk, memory, base, apt."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "toolchain.sh"
SETUP = ROOT / "scripts" / "setup.sh"
README = ROOT / "README.md"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("git") is None,
                                reason="scripts/toolchain.sh needs bash and git")


def shell_vars(path: Path) -> dict[str, str]:
    """NAME=value assignments at the start of a line or after `;` (the pins' form)."""
    return dict(re.findall(r"(?:^|;[ \t]*)([A-Z][A-Z0-9_]*)=([^\s;#]+)", path.read_text(), re.M))


PINS = shell_vars(SCRIPT)


def readme_table() -> dict[str, tuple[str, str]]:
    """README 'P4 toolchain' table: first cell -> (version, commit)."""
    rows = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[0-9a-f]{8}", cells[2]):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


# README row (its first cell starts with this) -> the script's version and commit variables
README_ROWS = {
    "p4c (BMv2": ("P4C_VERSION", "P4C_COMMIT"),
    "BMv2": ("BMV2_VERSION", "BMV2_COMMIT"),
    "PI": (None, "PI_COMMIT"),
    "p4c for Tofino": ("P4C_TOFINO_VERSION", "P4C_TOFINO_COMMIT"),
    "z3": ("Z3_VERSION", "Z3_COMMIT"),
    "Abseil": ("ABSEIL_VERSION", "ABSEIL_COMMIT"),
    "protobuf": ("PROTOBUF_VERSION", "PROTOBUF_COMMIT"),
}


def test_pins_are_full_commits() -> None:
    commits = {k: v for k, v in PINS.items() if k.endswith("_COMMIT")}
    assert set(commits) >= {v for _, v in README_ROWS.values()}
    for name, sha in commits.items():
        assert re.fullmatch(r"[0-9a-f]{40}", sha), f"{name}={sha} is not a full commit"


def test_readme_table_matches_the_script() -> None:
    table = readme_table()
    for prefix, (version_var, commit_var) in README_ROWS.items():
        rows = [cells for name, cells in table.items() if name.startswith(prefix)]
        assert len(rows) == 1, f"README: one version-table row starting {prefix!r}, found {len(rows)}"
        version, commit = rows[0]
        assert PINS[commit_var].startswith(commit), f"README {prefix}: commit {commit}, script {PINS[commit_var]}"
        if version_var is not None:
            assert version == PINS[version_var], f"README {prefix}: version {version}, script {PINS[version_var]}"


def test_setup_checks_the_pinned_versions() -> None:
    setup = shell_vars(SETUP)
    assert setup["P4C_VERSION"] == PINS["P4C_VERSION"]
    assert setup["BMV2_VERSION"] == PINS["BMV2_VERSION"]
    text = SETUP.read_text()
    assert 'version_check p4c-bm2-ss "$P4C_VERSION"' in text
    assert 'version_check simple_switch_grpc "$BMV2_VERSION"' in text


def test_readme_and_makefile_name_the_targets() -> None:
    readme, makefile = README.read_text(), (ROOT / "Makefile").read_text()
    for target in ("toolchain", "toolchain-tofino"):
        assert f"make {target}" in readme
        assert re.search(rf"^{target}:", makefile, re.M), target


# ---- running the script on simulated inputs ---------------------------------------------------------------

REPOS = ("p4lang/PI", "p4lang/behavioral-model", "p4lang/p4c", "p4lang/p4runtime", "abseil/abseil-cpp",
         "protocolbuffers/protobuf", "ivmai/bdwgc", "Z3Prover/z3", "pantor/inja", "gabime/spdlog")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git base with every repository the checks probe (one empty commit), os-release files, an apt stub."""
    root = tmp_path_factory.mktemp("toolchain")
    origin = root / "origin"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(origin)], check=True, env=env)
    subprocess.run(["git", "-C", str(origin), "commit", "-q", "--allow-empty", "-m", "empty"], check=True, env=env)
    for repo in REPOS:
        link = root / "base" / repo
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(origin / ".git")
    (root / "debian").write_text('ID=debian\nVERSION_ID="12"\n')
    (root / "fedora").write_text('ID=fedora\nID_LIKE="rhel centos"\n')
    stub = root / "apt-state"
    stub.write_text('#!/bin/sh\nfor p in "$@"; do\n  case " $APT_MISSING " in *" $p "*) echo "$p missing" ;;'
                    ' *) echo "$p installed" ;; esac\ndone\n')
    stub.chmod(0o755)
    return root


def run(sandbox: Path, *args: str, **overrides: str) -> subprocess.CompletedProcess[str]:
    """scripts/toolchain.sh with every check passing unless an override says otherwise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("P4HANDOFF_", "PREFIX", "TOFINO_PREFIX"))}
    env.update({
        "P4HANDOFF_GIT_BASE": str(sandbox / "base"),
        "P4HANDOFF_TOOLCHAIN_DIR": str(sandbox / "build"),
        "PREFIX": str(sandbox / "prefix"),
        "P4HANDOFF_TC_OS_RELEASE": str(sandbox / "debian"),
        "P4HANDOFF_TC_UID": "0",
        "P4HANDOFF_TC_DISK_KB": str(100 * 1024 * 1024),
        "P4HANDOFF_TC_MEM_KB": str(16 * 1024 * 1024),
        "P4HANDOFF_TC_APT_STATE": str(sandbox / "apt-state"),
        "APT_MISSING": "",
    })
    env.update(overrides)
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_dry_run_prints_the_plan(sandbox: Path) -> None:
    done = run(sandbox, "--dry-run")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for var in ("P4C_COMMIT", "BMV2_COMMIT", "PI_COMMIT", "P4C_VERSION", "BMV2_VERSION"):
        assert PINS[var] in out, var
    assert f"prefix:     {sandbox / 'prefix'}" in out
    assert str(sandbox / "build") in out
    assert "--with-pi --with-thrift --disable-logging-macros --disable-elogger" in out
    assert "checks: ok" in out and "dry run: nothing built" in out
    assert not (sandbox / "build").exists(), "a dry run creates nothing"


def test_dry_run_tofino(sandbox: Path) -> None:
    done = run(sandbox, "--tofino", "--dry-run")
    assert done.returncode == 0, done.stderr
    for var in ("P4C_TOFINO_COMMIT", "Z3_COMMIT", "ABSEIL_COMMIT", "PROTOBUF_COMMIT", "Z3_VERSION"):
        assert PINS[var] in done.stdout, var
    assert f"{sandbox / 'prefix'}/p4c-tofino" in done.stdout


def test_unknown_argument_is_refused(sandbox: Path) -> None:
    done = run(sandbox, "--frobnicate")
    assert done.returncode == 2 and "unknown argument" in done.stderr


@pytest.mark.parametrize("overrides, expected", [
    ({"P4HANDOFF_TC_OS_RELEASE": "fedora"}, "not Debian or Ubuntu"),
    ({"P4HANDOFF_TC_OS_RELEASE": "/nonexistent/os-release"}, "not Debian or Ubuntu"),
    ({"P4HANDOFF_TC_UID": "1000", "P4HANDOFF_TC_SUDO": "/nonexistent/sudo"}, "not root and no sudo"),
    ({"P4HANDOFF_TC_DISK_KB": str(2 * 1024 * 1024)}, "too little disk: 2 GiB free"),
    ({"P4HANDOFF_TC_MEM_KB": str(1024 * 1024)}, "too little memory: 1 GiB"),
    ({"P4HANDOFF_GIT_BASE": "/nonexistent/base"}, "base unreachable"),
    ({"APT_MISSING": "libthrift-dev"}, "apt packages not available: libthrift-dev"),
], ids=["os", "os-release-missing", "root-or-sudo", "disk", "memory", "base", "apt"])
def test_each_precheck_fails_clearly(sandbox: Path, overrides: dict[str, str], expected: str) -> None:
    resolved = {k: str(sandbox / v) if v in ("fedora",) else v for k, v in overrides.items()}
    for args in (("--dry-run",), ()):  # before anything is built, with or without --dry-run
        done = run(sandbox, *args, **resolved)
        assert done.returncode == 2, (done.stdout, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.startswith("toolchain: ")]
        assert len(lines) == 1, lines
        assert expected in lines[0] and ": " in lines[0].split(expected, 1)[1], lines[0]  # what, then what to do
        assert not (sandbox / "build").exists(), "a failed check builds nothing"


def test_tofino_needs_more_disk(sandbox: Path) -> None:
    done = run(sandbox, "--tofino", "--dry-run", P4HANDOFF_TC_DISK_KB=str(20 * 1024 * 1024))
    assert done.returncode == 2 and "too little disk: 20 GiB free" in done.stderr
    assert run(sandbox, "--dry-run", P4HANDOFF_TC_DISK_KB=str(20 * 1024 * 1024)).returncode == 0


# ---- steps: stamps, resumption, logs ----------------------------------------------------------------------

def steps(sandbox: Path, body: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Source the script as a library and run `body` (bash) with its `step` function."""
    script = f'P4HANDOFF_TC_LIBRARY=1 source "{SCRIPT}"\nmkdir -p "$LOGS" "$STAMPS"\n{body}\n'
    full_env = {**os.environ, "P4HANDOFF_TOOLCHAIN_DIR": str(sandbox / "steps"), "PREFIX": str(sandbox / "prefix"),
                **env}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=full_env, timeout=60)


def test_a_step_runs_once_per_key_and_logs(sandbox: Path, tmp_path: Path) -> None:
    count = tmp_path / "count"
    body = f'work() {{ echo ran >> "{count}"; echo "compiler output"; }}\nstep demo1 build key1 work'
    first = steps(sandbox, body)
    assert first.returncode == 0, first.stderr
    assert re.search(r"^\[\d\d:\d\d:\d\d\] demo1 +build +\.\.\. ok 0m0\ds \(cpu 0m0\ds\)$", first.stdout, re.M), first.stdout
    again = steps(sandbox, body)
    assert "done before (key1)" in again.stdout and count.read_text().count("ran") == 1
    changed = steps(sandbox, body.replace("key1", "key2"))
    assert "ok" in changed.stdout and count.read_text().count("ran") == 2, "a new pin or flag reruns the step"
    assert "compiler output" in (sandbox / "steps" / "logs" / "demo1.log").read_text()


def test_a_stamp_without_its_product_does_not_count(sandbox: Path, tmp_path: Path) -> None:
    product = tmp_path / "simple_switch_grpc"
    body = f'work() {{ touch "{product}"; }}\nSTEP_REQUIRES="{product}" step demo2 install k work'
    assert steps(sandbox, body).returncode == 0 and product.exists()
    assert "done before" in steps(sandbox, body).stdout
    product.unlink()
    assert "done before" not in steps(sandbox, body).stdout and product.exists()


def test_a_failed_step_names_its_log_and_resumes(sandbox: Path, tmp_path: Path) -> None:
    marker = tmp_path / "interrupted"
    body = (f'work() {{ echo "line $RANDOM"; if [ ! -e "{marker}" ]; then touch "{marker}"; '
            f'echo "error: out of luck"; return 3; fi; echo finished; }}\nstep demo3 build k work')
    failed = steps(sandbox, body)
    log = sandbox / "steps" / "logs" / "demo3.log"
    assert failed.returncode == 1
    assert f"demo3 build failed (exit 3); full log: {log}; its last lines:" in failed.stderr
    assert "error: out of luck" in failed.stderr, "the log's last lines are printed"
    assert "FAILED after" in failed.stdout
    resumed = steps(sandbox, body)
    assert resumed.returncode == 0 and "ok" in resumed.stdout, "no stamp was written: the rerun does the step"
    assert "done before" in steps(sandbox, body).stdout


def test_a_second_build_in_the_same_directory_is_refused(sandbox: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    (build / "lock.pid").write_text("4242\n")
    # its own process group: flock's child (the sleep) goes with it, not only flock
    with subprocess.Popen(["flock", str(build / "lock"), "sleep", "60"], start_new_session=True) as holder:
        try:
            deadline = time.monotonic() + 10
            while subprocess.run(["flock", "-n", str(build / "lock"), "true"]).returncode == 0:
                assert time.monotonic() < deadline, "the holder never took the lock"
                time.sleep(0.05)
            done = run(sandbox, P4HANDOFF_TOOLCHAIN_DIR=str(build))
        finally:
            os.killpg(holder.pid, signal.SIGKILL)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "another toolchain build (pid 4242) is using" in done.stderr and "P4HANDOFF_TOOLCHAIN_DIR" in done.stderr
    assert "checks: ok" in done.stdout and not re.search(r"^\[\d\d:", done.stdout, re.M), "no step was started"
