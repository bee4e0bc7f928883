#!/usr/bin/env bash
# `make setup`: install every dependency that Debian's apt and PyPI provide,
# then say plainly which tools could not be installed from them.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

APT_PACKAGES=(
  python3 python3-venv python3-dev    # the project's virtualenv (system Python, so Mininet is importable)
  iproute2 ethtool tcpdump nftables   # namespaces, veth, qdiscs, offload control, captures, RST suppression
  mininet                             # the lab's topologies
  python3-thrift                      # BMv2's simple_switch_CLI (queue rates/depths over Thrift)
  valgrind                            # make bench-pipeline-instructions (callgrind)
  gcc                                 # make compile: the simulator's hot path through mypyc
  ns2                                 # make bench-lab: ns-2.35, the simulator's peer in sim_vs_ns2 (bench only)
)

missing=()
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

echo "== apt packages: ${APT_PACKAGES[*]}"
if command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq || echo "apt-get update failed; trying with the package lists at hand"
  if ! as_root apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null; then
    for p in "${APT_PACKAGES[@]}"; do
      as_root apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || missing+=("apt:$p")
    done
  fi
else
  missing+=("apt-get (not a Debian system: install ${APT_PACKAGES[*]} by hand)")
fi

echo "== Python virtualenv in $VENV (system site packages visible, for Mininet)"
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV" || missing+=("venv at $VENV")
fi
if [ -x "$VENV/bin/python" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  "$VENV/bin/python" -m pip install -q -e '.[dev,lab,cluster]' || { echo "setup: pip install failed; the tests cannot run" >&2; exit 1; }
  echo "== P4Runtime modules for the installed protobuf (controller/p4runtime/protogen.py)"
  "$VENV/bin/python" controller/p4runtime/protogen.py || {   # by path: p4handoff.controller.p4runtime imports what it makes
    echo "setup: FAILED to generate the P4Runtime modules (controller/p4runtime/generated); the controller cannot run" >&2; exit 1; }
  echo "== the simulator's hot path compiled with mypyc (make compile; ~1 min)"
  mkdir -p build
  if ! make --no-print-directory -s compile >build/compile.log 2>&1; then
    missing+=("compiled simulator (make compile failed, build/compile.log: it runs as pure Python, ~3x slower)")
  fi
fi

echo "== P4 toolchain (not in any package registry: 'make toolchain' builds it, see README 'P4 toolchain')"
# the versions scripts/toolchain.sh pins and the README's table names (tests/test_toolchain.py checks they agree)
P4C_VERSION=1.2.4.8
BMV2_VERSION=1.15.0
for tool in p4c-bm2-ss simple_switch_grpc simple_switch_CLI; do
  if path=$(command -v "$tool"); then echo "   found $tool at $path"; else missing+=("$tool (make toolchain)"); fi
done
version_check() { # <tool> <pinned version>
  local tool=$1 want=$2 got
  command -v "$tool" >/dev/null || return 0
  got=$("$tool" --version 2>&1 | grep -o -m1 '[0-9][0-9.]*[0-9]' | head -1)
  if [ "$got" = "$want" ]; then echo "   $tool $got: the pinned version"
  else echo "   $tool ${got:-(no version)}: NOT the pinned $want (make toolchain installs it); tests may differ"; fi
}
version_check p4c-bm2-ss "$P4C_VERSION"
version_check simple_switch_grpc "$BMV2_VERSION"
for tool in bf-p4c p4testgen; do  # optional: make toolchain-tofino
  if path=$(command -v "$tool"); then echo "   found $tool at $path"; else echo "   (optional) $tool not found: make toolchain-tofino"; fi
done

echo
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: everything is installed."
else
  echo "setup: NOT installed:"
  for m in "${missing[@]}"; do echo "  - $m"; done
  echo "Suites that need a missing tool are skipped by 'make test', each named with the reason."
fi
exit 0
