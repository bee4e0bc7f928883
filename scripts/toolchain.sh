#!/usr/bin/env bash
# `make toolchain` / `make toolchain-tofino` (issue 21): build and install the pinned P4 toolchain
# (PI, BMv2, p4c; with --tofino: p4c's Tofino back end bf-p4c and p4testgen) on Debian/Ubuntu.
#
#   scripts/toolchain.sh [--tofino] [--dry-run] [--no-smoke | --smoke (run it again even if nothing changed)]
#
# Environment (all optional):
#   PREFIX                  install prefix of the BMv2 toolchain (default /usr/local)
#   TOFINO_PREFIX           install prefix of the Tofino toolchain (default $PREFIX/p4c-tofino: its own
#                           p4c, so the BMv2 one is not disturbed; put $TOFINO_PREFIX/bin on PATH or use
#                           the bf-p4c / p4testgen links the script makes in $PREFIX/bin)
#   P4HANDOFF_GIT_BASE      where sources come from: <base>/<owner>/<name> (default https://github.com);
#                           a URL or a local directory of git repositories (a mirror, an offline machine)
#   P4HANDOFF_TOOLCHAIN_DIR build directory, outside the repository (default /var/cache/p4handoff/toolchain
#                           as root, else ~/.cache/p4handoff/toolchain)
#   JOBS (default: nproc)   parallel compile jobs;  NICE (default 19)  niceness of every compile
#
# Every step has a stamp naming the pinned commit and its configuration: a rerun skips what is done and
# an interrupted build resumes (make/cmake continue incrementally). Each component logs to
# <build dir>/logs/<component>.log; on failure its path and last lines are printed.
#
# The pre-checks' inputs can be replaced (tests/test_toolchain.py simulates every failure with them):
#   P4HANDOFF_TC_OS_RELEASE (file, default /etc/os-release), P4HANDOFF_TC_UID (default: id -u),
#   P4HANDOFF_TC_SUDO (the sudo command, default sudo), P4HANDOFF_TC_DISK_KB (free KiB of the build dir),
#   P4HANDOFF_TC_MEM_KB (MemTotal KiB), P4HANDOFF_TC_APT_STATE (a command given package names that
#   prints "<name> installed|available|missing" per line; default dpkg-query + apt-cache policy).
set -uo pipefail

# ---- pins: the versions known to work together (README "P4 toolchain" table; tests/test_toolchain.py) ----
P4C_VERSION=1.2.4.8
P4C_COMMIT=32893b7e879db9e1c368d3568d41cb3d20c034d0          # tag v1.2.4.8
BMV2_VERSION=1.15.0
BMV2_COMMIT=4f84a09f217665f84471e8cef74c0b46b873bbe5         # BMv2 1.15.0 (simple_switch_grpc --version: 1.15.0-4f84a09f)
PI_COMMIT=2bb40f7ab800b91b26f3aed174bbbfc739a37ffa           # PI
P4C_TOFINO_VERSION=1.2.5.16
P4C_TOFINO_COMMIT=6b7ec98e77dfc71c6e1309d9a76183cb31f35a8a   # tag v1.2.5.16: backends/tofino (bf-p4c), backends/p4tools (p4testgen)
# p4c 1.2.5.16 takes these with CMake FetchContent; the script points FetchContent at local checkouts of the
# same versions (the versions p4c's cmake/*.cmake name are checked against these before configuring).
# z3: built from source (p4c's own default, static, with p4c's cmake/z3.patch), not Debian's 4.8.12
# (p4testgen needs >= 4.8.14) nor the z3-solver wheel (p4c's pre-installed path wants 4.8.14 <= z3 < 4.12).
Z3_VERSION=4.13.3;        Z3_COMMIT=54d30f26f72ce62f5dcb5a5258f632f84858714f          # Z3Prover/z3 tag z3-4.13.3
ABSEIL_VERSION=20240722.1; ABSEIL_COMMIT=dd4c89bd657f1e247ce5111a5c89ffe6ccfd0c92     # abseil/abseil-cpp
PROTOBUF_VERSION=25.3;    PROTOBUF_COMMIT=4a2aef570deb2bfb8927426558701e8bfc26f2a4    # protocolbuffers/protobuf tag v25.3
SPDLOG_VERSION=v1.8.3;    SPDLOG_COMMIT=53e1c9ab112aa97062ba3df8fede91c3acd248d5      # gabime/spdlog (bf-p4c)
BDWGC_COMMIT=7f1503dbfe254e77678666a0e09b735add064b57                                 # ivmai/bdwgc 8.2.6
INJA_COMMIT=3741c73ba78babd2ed88f2acf2fcd6dafdb878e8                                  # pantor/inja (p4testgen)

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PREFIX=${PREFIX:-/usr/local}
TOFINO_PREFIX=${TOFINO_PREFIX:-$PREFIX/p4c-tofino}
GIT_BASE=${P4HANDOFF_GIT_BASE:-https://github.com}
GIT_BASE=${GIT_BASE%/}
if [ "$(id -u)" -eq 0 ]; then DEFAULT_DIR=/var/cache/p4handoff/toolchain; else DEFAULT_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/p4handoff/toolchain; fi
TC_DIR=${P4HANDOFF_TOOLCHAIN_DIR:-$DEFAULT_DIR}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
NICE=${NICE:-19}
VENV_PY=${VENV_PY:-$REPO_DIR/.venv/bin/python}

TOFINO=0 DRY_RUN=0 SMOKE=1 FORCE_SMOKE=0
for arg in "$@"; do
  case $arg in
    --tofino) TOFINO=1 ;;
    --dry-run) DRY_RUN=1 ;;
    --no-smoke) SMOKE=0 ;;
    --smoke) FORCE_SMOKE=1 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "toolchain: unknown argument '$arg' (--tofino, --dry-run, --no-smoke, --smoke)" >&2; exit 2 ;;
  esac
done

# apt packages (Debian 12 bookworm / Ubuntu): compilers, autotools, protobuf/gRPC/Thrift/nanomsg/Boost...
APT_BMV2=(
  git ca-certificates build-essential cmake autoconf automake libtool pkg-config python3 python3-thrift
  flex bison libfl-dev libgc-dev libgmp-dev libpcap-dev libjudy-dev libreadline-dev libssl-dev libevent-dev
  libboost-dev libboost-iostreams-dev libboost-graph-dev libboost-program-options-dev libboost-system-dev
  libboost-filesystem-dev libboost-thread-dev libboost-test-dev
  libprotobuf-dev libprotoc-dev protobuf-compiler libgrpc++-dev libgrpc-dev protobuf-compiler-grpc
  libthrift-dev thrift-compiler libnanomsg-dev
  python3-scapy   # p4c's CMake requires scapy once it finds BMv2's simple_switch
)
# z3, Abseil, protobuf 25 and bdwgc are built from source with p4c (below); bf-p4c's schema generators need
# jsonschema and jsl, and pyinstaller packs p4c-build-logs (jsl, pyinstaller: PyPI, into a build-time venv)
APT_TOFINO=(rapidjson-dev python3-jsonschema python3-packaging python3-venv python3-pip)  # packaging: the bf-p4c driver
JSL_VERSION=0.2.4
PYINSTALLER_VERSION=6.22.3
APT=("${APT_BMV2[@]}")
[ "$TOFINO" = 1 ] && APT+=("${APT_TOFINO[@]}")

# disk (GiB free in the build dir) and memory (GiB MemTotal) the build needs
if [ "$TOFINO" = 1 ]; then NEED_DISK_GB=30 NEED_MEM_GB=8; else NEED_DISK_GB=12 NEED_MEM_GB=4; fi

START=$(date +%s)
LOGS=$TC_DIR/logs STAMPS=$TC_DIR/stamps SRC=$TC_DIR/src
# build trees per install prefix: a scratch PREFIX does not throw away the /usr/local build
PREFIX_KEY=$(printf %s "$PREFIX" | sha1sum | cut -c1-8)
WORK=$TC_DIR/work/$PREFIX_KEY

fail() { echo "toolchain: $*" >&2; exit 2; }
hms() { local s=$1; printf '%dm%02ds' $((s / 60)) $((s % 60)); }
clock() { local s=$(( $(date +%s) - START )); printf '%02d:%02d:%02d' $((s / 3600)) $((s % 3600 / 60)) $((s % 60)); }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else "${P4HANDOFF_TC_SUDO:-sudo}" "$@"; fi
}
# install into $1 (a prefix) with root only when it is not writable
as_owner_of() {
  local dir=$1; shift
  local probe=$dir; while [ ! -e "$probe" ]; do probe=$(dirname "$probe"); done
  if [ -w "$probe" ]; then "$@"; else as_root "$@"; fi
}

# ---------------------------------------------------------------------------------------------------
# steps: `step <component> <name> <stamp-key> <function> [args]`: skipped when its stamp holds the key;
# otherwise runs the function with output appended to logs/<component>.log, one progress line.
# ---------------------------------------------------------------------------------------------------
# CPU seconds (user + system) of this shell's finished children, into CPU_NOW (no $(...): a subshell would
# count its own children only): the load-independent cost of a step
children_cpu() {
  local f=$TC_DIR/.times.$$ u s
  CPU_NOW=0
  times >"$f" 2>/dev/null || return 0
  read -r u s < <(sed -n 2p "$f"); rm -f "$f"
  CPU_NOW=$(awk -v u="$u" -v s="$s" 'function sec(t, m) { m = t; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", t); sub(/s$/, "", t); return m * 60 + t }
    BEGIN { printf "%d\n", sec(u) + sec(s) }')
}

step() {
  local comp=$1 name=$2 key=$3; shift 3
  local stamp=$STAMPS/$PREFIX_KEY.$comp.$name log=$LOGS/$comp.log t0 c0 rc
  # STEP_REQUIRES=<path>: the step's product; a stamp without it (deleted since) does not count
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] && { [ -z "${STEP_REQUIRES:-}" ] || [ -e "$STEP_REQUIRES" ]; }; then
    printf '[%s] %-10s %-10s done before (%s)\n' "$(clock)" "$comp" "$name" "${key:0:60}"
    return 0
  fi
  children_cpu; t0=$(date +%s) c0=$CPU_NOW
  printf '[%s] %-10s %-10s ... ' "$(clock)" "$comp" "$name"
  rm -f "$stamp"
  { echo; echo "=== $(date '+%F %T') $comp $name ($key)"; } >>"$log"
  "$@" >>"$log" 2>&1 </dev/null
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAILED after $(hms $(( $(date +%s) - t0 )))"
    echo "toolchain: $comp $name failed (exit $rc); full log: $log; its last lines:" >&2
    tail -n 25 "$log" | sed 's/^/    /' >&2
    exit 1
  fi
  mkdir -p "$STAMPS" && printf %s "$key" >"$stamp"
  children_cpu
  echo "ok $(hms $(( $(date +%s) - t0 ))) (cpu $(hms $(( CPU_NOW - c0 ))))"
}

# ---- sources --------------------------------------------------------------------------------------
is_local_base() { case $GIT_BASE in /*|./*|../*) return 0 ;; *) return 1 ;; esac; }
repo_url() { echo "$GIT_BASE/$1"; }   # $1 = owner/name

# owner/name of a GitHub URL (https://github.com/owner/name(.git))
url_repo() { local u=${1%.git}; u=${u%/}; echo "${u#*github.com/}"; }

# checkout <owner/name> <commit> <dir>: the commit's tree in dir, without files too big for a mirror
# (p4c's docs/compiler-design.pptx); its submodules, recursively, at the commits it pins, from the same base.
checkout() {
  local repo=$1 commit=$2 dir=$3 url
  url=$(repo_url "$repo")
  echo "checkout $repo $commit from $url into $dir"
  rm -rf "$dir" && mkdir -p "$(dirname "$dir")" || return 1
  if is_local_base; then
    # a local clone borrowing the objects (no repack: mirrors may lack large blobs)
    git clone -q --shared --no-checkout "$url" "$dir" || return 1
  else
    git init -q "$dir" && git -C "$dir" remote add origin "$url" || return 1
    git -C "$dir" fetch -q --depth 1 --filter=blob:limit=4m origin "$commit" \
      || git -C "$dir" fetch -q --tags origin '+refs/heads/*:refs/remotes/origin/*' || return 1
  fi
  git -C "$dir" sparse-checkout set --no-cone '/*' '!/docs/compiler-design.pptx' || return 1
  git -C "$dir" -c advice.detachedHead=false checkout -q --detach "$commit" 2>&1 | grep -v 'invalid object' || true
  [ "$(git -C "$dir" rev-parse HEAD)" = "$commit" ] || { echo "checkout of $commit failed"; return 1; }
  [ -f "$dir/.gitmodules" ] && [ -z "${NO_SUBMODULES:-}" ] || return 0
  local path sub_url sub_commit subs
  subs=$(git -C "$dir" config -f .gitmodules --get-regexp '^submodule\..*\.path$') || return 0  # none
  echo "$subs" | while read -r key path; do
    sub_url=$(git -C "$dir" config -f .gitmodules --get "${key%.path}.url")
    sub_commit=$(git -C "$dir" ls-tree HEAD "$path" | awk '$2 == "commit" {print $3}')
    [ -n "$sub_commit" ] || { echo "no pinned commit for submodule $path"; exit 1; }
    checkout "$(url_repo "$sub_url")" "$sub_commit" "$dir/$path" || exit 1
  done
}

# the commit a FetchContent_Declare(<name> ... GIT_TAG <sha>) in a checked-out tree pins
fetchcontent_pin() { # <file> <name>
  awk -v n="$2" 'tolower($0) ~ "fetchcontent_declare\\(" {want=0} $0 ~ "^ *"n"( |$)" {want=1}
                 want && $1 == "GIT_TAG" {print $2; exit}' "$1"
}

# ---- pre-checks -----------------------------------------------------------------------------------
apt_state() { # prints "<pkg> installed|available|missing" for each argument
  if [ -n "${P4HANDOFF_TC_APT_STATE:-}" ]; then $P4HANDOFF_TC_APT_STATE "$@"; return; fi
  local p cand
  for p in "$@"; do
    if dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed'; then echo "$p installed"; continue; fi
    cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    if [ -n "$cand" ] && [ "$cand" != "(none)" ]; then echo "$p available"; else echo "$p missing"; fi
  done
}

base_repos() {
  if [ "$TOFINO" = 1 ]; then
    echo p4lang/p4c p4lang/p4runtime abseil/abseil-cpp protocolbuffers/protobuf ivmai/bdwgc Z3Prover/z3 pantor/inja gabime/spdlog
  else
    echo p4lang/PI p4lang/behavioral-model p4lang/p4c p4lang/p4runtime
  fi
}

PROBLEMS=()
problem() { PROBLEMS+=("$*"); }

precheck() {
  local osr=${P4HANDOFF_TC_OS_RELEASE:-/etc/os-release} id="" like=""
  if [ -r "$osr" ]; then
    id=$(. "$osr" 2>/dev/null; echo "${ID:-}"); like=$(. "$osr" 2>/dev/null; echo "${ID_LIKE:-}")
  fi
  case " $id $like " in
    *" debian "*|*" ubuntu "*) ;;
    *) problem "not Debian or Ubuntu (${id:-unknown OS} per $osr): install the packages and build by hand, see README 'P4 toolchain'" ;;
  esac
  local uid=${P4HANDOFF_TC_UID:-$(id -u)}
  if [ "$uid" != 0 ] && ! command -v "${P4HANDOFF_TC_SUDO:-sudo}" >/dev/null 2>&1; then
    problem "not root and no sudo: run it as root, or install sudo and allow this user to use it"
  fi
  local probe=$TC_DIR; while [ ! -e "$probe" ]; do probe=$(dirname "$probe"); done
  local disk_kb=${P4HANDOFF_TC_DISK_KB:-$(df -Pk "$probe" | awk 'NR == 2 {print $4}')}
  if [ "$disk_kb" -lt $((NEED_DISK_GB * 1024 * 1024)) ]; then
    problem "too little disk: $((disk_kb / 1024 / 1024)) GiB free at $probe, the build needs $NEED_DISK_GB GiB: free space or set P4HANDOFF_TOOLCHAIN_DIR to a larger disk"
  fi
  local mem_kb=${P4HANDOFF_TC_MEM_KB:-$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)}
  if [ "$mem_kb" -lt $((NEED_MEM_GB * 1024 * 1024)) ]; then
    problem "too little memory: $((mem_kb / 1024 / 1024)) GiB, the build needs $NEED_MEM_GB GiB: add memory or swap"
  fi
  local repo
  for repo in $(base_repos); do
    if is_local_base; then
      git --git-dir="$(repo_url "$repo")" rev-parse -q --verify HEAD >/dev/null 2>&1 \
        || { problem "base unreachable: $(repo_url "$repo") is not a git repository: set P4HANDOFF_GIT_BASE to a directory laid out as <base>/<owner>/<name>"; break; }
    else
      timeout 30 git ls-remote -q "$(repo_url "$repo")" HEAD >/dev/null 2>&1 \
        || { problem "base unreachable: cannot reach $(repo_url "$repo"): check the network, or set P4HANDOFF_GIT_BASE to a mirror or a local directory"; break; }
    fi
  done
  local missing
  missing=$(apt_state "${APT[@]}" | awk '$2 == "missing" {printf "%s ", $1}')
  if [ -n "$missing" ]; then
    problem "apt packages not available: ${missing% }: run 'apt-get update' (bookworm main must be enabled)"
  fi
  if [ ${#PROBLEMS[@]} -gt 0 ]; then
    local p; for p in "${PROBLEMS[@]}"; do echo "toolchain: $p" >&2; done
    exit 2
  fi
}

# ---- the plan -------------------------------------------------------------------------------------
plan() {
  echo "toolchain plan ($([ "$TOFINO" = 1 ] && echo "Tofino: bf-p4c + p4testgen" || echo "BMv2: PI, BMv2, p4c"))"
  echo "  prefix:     $PREFIX"
  [ "$TOFINO" = 1 ] && echo "  tofino:     $TOFINO_PREFIX (own p4c; links bf-p4c, p4testgen in $PREFIX/bin)"
  echo "  sources:    $GIT_BASE/<owner>/<name>; submodules from the same base at the commits their superproject pins"
  echo "  build dir:  $TC_DIR (logs/, stamps/, src/, work/$PREFIX_KEY/)"
  echo "  jobs:       $JOBS, nice $NICE"
  echo "  apt:        ${APT[*]}"
  if [ "$TOFINO" = 1 ]; then
    echo "  p4c-tofino  $P4C_TOFINO_VERSION  $P4C_TOFINO_COMMIT  (p4lang/p4c: backends/tofino bf-p4c + backends/p4tools p4testgen bmv2/tofino; driver patch)"
    echo "  z3          $Z3_VERSION  $Z3_COMMIT  (Z3Prover/z3 from source, static, p4c's cmake/z3.patch)"
    echo "  abseil      $ABSEIL_VERSION  $ABSEIL_COMMIT  (abseil/abseil-cpp)"
    echo "  protobuf    $PROTOBUF_VERSION  $PROTOBUF_COMMIT  (protocolbuffers/protobuf, static, for p4c only)"
    echo "  bdwgc       $BDWGC_COMMIT  inja $INJA_COMMIT  spdlog $SPDLOG_VERSION $SPDLOG_COMMIT"
  else
    echo "  pi          $PI_COMMIT  (p4lang/PI: --with-proto)"
    echo "  bmv2        $BMV2_VERSION  $BMV2_COMMIT  (p4lang/behavioral-model: --with-pi --with-thrift --disable-logging-macros --disable-elogger)"
    echo "  p4c         $P4C_VERSION  $P4C_COMMIT  (p4lang/p4c: BMv2 back end only)"
  fi
  if [ "$TOFINO" = 1 ]; then
    echo "  smoke:      p4testgen and bf-p4c answer; make build-tofino with them (p4src/tna for tofino and tofino2)"
  else
    echo "  smoke:      compile p4src with p4c-bm2-ss, simple_switch_grpc on loopback, the project's P4Runtime client pushes the pipeline and reads a table"
  fi
}

# ---- components -----------------------------------------------------------------------------------
env_for_prefix() {
  export PATH="$PREFIX/bin:$PATH"
  export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib -Wl,-rpath,$PREFIX/lib"
}

apt_install() {
  local todo
  todo=$(apt_state "${APT[@]}" | awk '$2 != "installed" {printf "%s ", $1}')
  [ -n "$todo" ] || { echo "all installed"; return 0; }
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends $todo
}

copy_tree() { rm -rf "$2" && mkdir -p "$(dirname "$2")" && cp -a "$1" "$2"; }

N() { nice -n "$NICE" "$@"; }

pi_configure() {
  copy_tree "$SRC/PI" "$WORK/PI" && cd "$WORK/PI" && N ./autogen.sh \
    && N ./configure --prefix="$PREFIX" --with-proto --without-internal-rpc --without-cli --without-bmv2 \
      PYTHON=/usr/bin/python3 CXXFLAGS="-O2 -g0"
}
pi_build() { cd "$WORK/PI" && N make -j"$JOBS"; }
pi_install() { cd "$WORK/PI" && as_owner_of "$PREFIX" make install && ldconfig_prefix; }

bmv2_configure() {
  copy_tree "$SRC/behavioral-model" "$WORK/behavioral-model" && cd "$WORK/behavioral-model" && N ./autogen.sh \
    && N ./configure --prefix="$PREFIX" --with-pi --with-thrift --disable-logging-macros --disable-elogger \
      --disable-static PYTHON=/usr/bin/python3 CXXFLAGS="-O2 -g0"
}
bmv2_build() { cd "$WORK/behavioral-model" && N make -j"$JOBS"; }
bmv2_install() {
  cd "$WORK/behavioral-model" && as_owner_of "$PREFIX" make install && ldconfig_prefix || return 1
  # the Thrift CLI wrappers run under Debian's python3 (python3-thrift), not whichever python3 is first on PATH
  local f
  for f in "$PREFIX"/bin/*_CLI; do
    [ -f "$f" ] && head -1 "$f" | grep -q '^#!.*python' || continue
    as_owner_of "$PREFIX" sed -i '1s|^#!.*|#!/usr/bin/python3|' "$f"
  done
  # (each wrapper appends BMv2's pythondir to sys.path itself: nothing to add to Debian's python path)
}
ldconfig_prefix() {
  if [ "$PREFIX" = /usr/local ] || [ "$PREFIX" = /usr ]; then as_root ldconfig; else true; fi
}

# CMAKE_UNITY_BUILD=ON: as p4c's own CI builds it (tools/ci-build.sh); far fewer compiler runs on 2 cores.
# -O1 instead of Release's -O3: the compiler's own speed hardly matters here (seconds per P4 program),
# its build time does.
P4C_CMAKE_BMV2=(
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -DENABLE_BMV2=ON -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF
  -DENABLE_P4TC=OFF -DENABLE_P4TEST=OFF -DENABLE_P4C_GRAPHS=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_GTESTS=OFF
  -DENABLE_DOCS=OFF -DENABLE_LTO=OFF -DP4C_USE_PREINSTALLED_PROTOBUF=ON -DENABLE_PROTOBUF_STATIC=OFF
)
p4c_configure() {
  local p4rt
  p4rt=$(fetchcontent_pin "$SRC/p4c/CMakeLists.txt" p4runtime)
  [ -n "$p4rt" ] || { echo "no p4runtime pin in p4c's CMakeLists.txt"; return 1; }
  checkout p4lang/p4runtime "$p4rt" "$SRC/p4c-deps/p4runtime" || return 1
  rm -rf "$WORK/p4c-build" && mkdir -p "$WORK/p4c-build" && cd "$WORK/p4c-build" \
    && N cmake "$SRC/p4c" -DCMAKE_INSTALL_PREFIX="$PREFIX" "${P4C_CMAKE_BMV2[@]}" \
      -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$SRC/p4c-deps/p4runtime"
}
p4c_build() { cd "$WORK/p4c-build" && N make -j"$JOBS"; }
p4c_install() { cd "$WORK/p4c-build" && as_owner_of "$PREFIX" make install; }

smoke() {
  [ -x "$VENV_PY" ] || { echo "no project virtualenv at $VENV_PY: run 'make setup' first"; return 1; }
  PATH="$PREFIX/bin:$PATH" nice -n "$NICE" "$VENV_PY" "$REPO_DIR/scripts/toolchain_smoke.py" --prefix "$PREFIX"
}

versions() {
  echo "versions:"
  echo "  p4c-bm2-ss:         $("$PREFIX/bin/p4c-bm2-ss" --version 2>&1 | tail -1)"
  echo "  simple_switch_grpc: $("$PREFIX/bin/simple_switch_grpc" --version 2>&1 | head -1)"
  echo "  PI:                 ${PI_COMMIT:0:8}"
}

bmv2_toolchain() {
  local key
  step sources PI "$PI_COMMIT" checkout p4lang/PI "$PI_COMMIT" "$SRC/PI"
  step sources bmv2 "$BMV2_COMMIT" checkout p4lang/behavioral-model "$BMV2_COMMIT" "$SRC/behavioral-model"
  step sources p4c "$P4C_COMMIT" checkout p4lang/p4c "$P4C_COMMIT" "$SRC/p4c"
  env_for_prefix
  key="$PI_COMMIT $PREFIX --with-proto"
  step pi configure "$key" pi_configure
  step pi build "$key" pi_build
  STEP_REQUIRES=$PREFIX/lib/libpi.so step pi install "$key" pi_install
  # --disable-static: libtool compiles every file once instead of twice
  key="$BMV2_COMMIT $PREFIX --with-pi --with-thrift --disable-logging-macros --disable-elogger --disable-static (PI $PI_COMMIT)"
  step bmv2 configure "$key" bmv2_configure
  step bmv2 build "$key" bmv2_build
  STEP_REQUIRES=$PREFIX/bin/simple_switch_grpc step bmv2 install "$key" bmv2_install
  key="$P4C_COMMIT $PREFIX ${P4C_CMAKE_BMV2[*]}"
  step p4c configure "$key" p4c_configure
  step p4c build "$key" p4c_build
  STEP_REQUIRES=$PREFIX/bin/p4c-bm2-ss step p4c install "$key" p4c_install
}

# ---- Tofino: p4c 1.2.5.16 with backends/tofino and backends/p4tools, in its own prefix ---------------
P4C_CMAKE_TOFINO=(
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DENABLE_TOFINO=ON -DENABLE_BMV2=ON -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF
  -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF -DENABLE_P4FMT=OFF -DENABLE_P4TEST=OFF -DENABLE_P4C_GRAPHS=OFF
  -DENABLE_GTESTS=OFF -DENABLE_DOCS=OFF -DENABLE_LTO=OFF -DENABLE_TEST_TOOLS=ON -DENABLE_TOOLS_MODULE_SMITH=OFF
  -DENABLE_TOOLS_TARGET_BMV2=ON -DENABLE_TOOLS_TARGET_TOFINO=ON -DENABLE_TOOLS_TARGET_EBPF=OFF
  -DENABLE_TOOLS_TARGET_PNA=OFF -DP4C_USE_PREINSTALLED_PROTOBUF=OFF -DP4C_USE_PREINSTALLED_ABSEIL=OFF
  -DP4C_USE_PREINSTALLED_BDWGC=OFF -DUSE_PREINSTALLED_Z3=OFF
)
TSRC=$SRC/p4c-tofino DEPS=$SRC/p4c-tofino-deps

# the versions p4c's cmake files name must be the ones pinned above
tofino_check_pins() {
  local bad=0
  grep -q "GIT_TAG z3-$Z3_VERSION" "$TSRC/cmake/Z3.cmake" || { echo "cmake/Z3.cmake does not pin z3-$Z3_VERSION"; bad=1; }
  grep -q "P4C_ABSEIL_VERSION \"$ABSEIL_VERSION\"" "$TSRC/cmake/Abseil.cmake" || { echo "cmake/Abseil.cmake: not $ABSEIL_VERSION"; bad=1; }
  grep -q "P4C_PROTOBUF_VERSION $PROTOBUF_VERSION)" "$TSRC/cmake/Protobuf.cmake" || { echo "cmake/Protobuf.cmake: not $PROTOBUF_VERSION"; bad=1; }
  grep -q "GIT_TAG $SPDLOG_VERSION" "$TSRC/backends/tofino/cmake/spdlog.cmake" || { echo "spdlog.cmake: not $SPDLOG_VERSION"; bad=1; }
  grep -q "$BDWGC_COMMIT" "$TSRC/cmake/BDWGC.cmake" || { echo "cmake/BDWGC.cmake: not $BDWGC_COMMIT"; bad=1; }
  grep -q "$INJA_COMMIT" "$TSRC/backends/p4tools/modules/testgen/CMakeLists.txt" || { echo "testgen: inja not $INJA_COMMIT"; bad=1; }
  return $bad
}

tofino_checkout_p4c() {
  rm -f "$STAMPS/$PREFIX_KEY.sources.tofino-deps"   # the dependencies and the patch live in this tree too
  checkout p4lang/p4c "$P4C_TOFINO_COMMIT" "$TSRC"
}

tofino_sources() {
  local p4rt
  tofino_check_pins || return 1
  p4rt=$(fetchcontent_pin "$TSRC/CMakeLists.txt" p4runtime)
  [ -n "$p4rt" ] || { echo "no p4runtime pin in p4c's CMakeLists.txt"; return 1; }
  checkout p4lang/p4runtime "$p4rt" "$DEPS/p4runtime" \
    && checkout abseil/abseil-cpp "$ABSEIL_COMMIT" "$DEPS/abseil" \
    && NO_SUBMODULES=1 checkout protocolbuffers/protobuf "$PROTOBUF_COMMIT" "$DEPS/protobuf" \
    && checkout ivmai/bdwgc "$BDWGC_COMMIT" "$DEPS/bdwgc" \
    && checkout Z3Prover/z3 "$Z3_COMMIT" "$DEPS/z3" \
    && checkout pantor/inja "$INJA_COMMIT" "$DEPS/inja" \
    && checkout gabime/spdlog "$SPDLOG_COMMIT" "$TSRC/backends/tofino/third_party/spdlog" || return 1
  # what FetchContent's PATCH_COMMAND would have done (it is skipped for a local source dir)
  git -C "$DEPS/z3" apply "$TSRC/cmake/z3.patch" || return 1
  tofino_patch_driver
}

# bf-p4c 1.2.5.16's driver hands a pathlib.Path to code expecting a str, so the assembler never runs
# ("'PosixPath' object has no attribute 'find'", docs/tofino.md): commands are stored as strings.
tofino_patch_driver() {
  local f=$TSRC/tools/driver/p4c_src/driver.py
  grep -q 'self._commands\[cmd_name\].append(str(cmd))' "$f" && return 0
  sed -i 's/self\._commands\[cmd_name\]\.append(cmd)$/self._commands[cmd_name].append(str(cmd))/' "$f"
  grep -q 'self._commands\[cmd_name\].append(str(cmd))' "$f" || { echo "driver patch did not apply to $f"; return 1; }
}

# bf-p4c's build runs Python generators that import jsl (PyPI only) and jsonschema, and packs its
# p4c-build-logs tool with pyinstaller (PyPI): both into a build-time venv, first on PATH while building
tofino_pyenv() {
  rm -rf "$TC_DIR/pyenv" && /usr/bin/python3 -m venv --system-site-packages "$TC_DIR/pyenv" \
    && "$TC_DIR/pyenv/bin/python" -m pip install -q "jsl==$JSL_VERSION" "pyinstaller==$PYINSTALLER_VERSION" \
    && "$TC_DIR/pyenv/bin/python" -c 'import jsl, jsonschema' && "$TC_DIR/pyenv/bin/pyinstaller" --version
}

tofino_configure() {
  rm -rf "$WORK/p4c-tofino-build" && mkdir -p "$WORK/p4c-tofino-build" && cd "$WORK/p4c-tofino-build" \
    && N cmake "$TSRC" -DCMAKE_INSTALL_PREFIX="$TOFINO_PREFIX" "${P4C_CMAKE_TOFINO[@]}" \
      -DPYTHON_EXECUTABLE="$TC_DIR/pyenv/bin/python" -DPython3_EXECUTABLE="$TC_DIR/pyenv/bin/python" \
      -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$DEPS/p4runtime" \
      -DFETCHCONTENT_SOURCE_DIR_ABSEIL="$DEPS/abseil" -DFETCHCONTENT_SOURCE_DIR_PROTOBUF="$DEPS/protobuf" \
      -DFETCHCONTENT_SOURCE_DIR_BDWGC="$DEPS/bdwgc" -DFETCHCONTENT_SOURCE_DIR_Z3="$DEPS/z3" \
      -DFETCHCONTENT_SOURCE_DIR_INJA="$DEPS/inja"
}
# p4c 1.2.5.16 builds as C++20, where ADL picks std::erase_if for a std::map; GCC 12's libstdc++ calls the
# predicate with a const element, and ir/visitor.cpp's lambdas take a non-const one ("binding reference ...
# discards qualifiers"). They only read the element: take it const. Idempotent, applied before every build
# attempt (a tree checked out before this patch existed gets it too, without a reconfigure).
tofino_patch_gcc12() {
  local f=$TSRC/ir/visitor.cpp
  sed -i 's/\[this\](flow_join_points_t::value_type &el)/[this](const flow_join_points_t::value_type \&el)/' "$f"
  ! grep -q '\[this\](flow_join_points_t::value_type &el)' "$f" || { echo "GCC 12 patch did not apply to $f"; return 1; }
}
tofino_build() {
  tofino_patch_gcc12 && cd "$WORK/p4c-tofino-build" && PATH="$TC_DIR/pyenv/bin:$PATH" N make -j"$JOBS"
}
tofino_install() {
  cd "$WORK/p4c-tofino-build" && as_owner_of "$TOFINO_PREFIX" make install || return 1
  # links beside the BMv2 toolchain, under names the BMv2 p4c does not use. This build's driver is
  # $TOFINO_PREFIX/bin/p4c (its default target set to tofino): it runs the back end (p4c-barefoot) and the
  # assembler (bfas), as Intel's bf-p4c does, so it is linked as bf-p4c. It finds its parts by its real path.
  [ -x "$TOFINO_PREFIX/bin/p4c" ] && [ -x "$TOFINO_PREFIX/bin/p4c-barefoot" ] || { echo "the Tofino driver or back end was not installed"; return 1; }
  [ -x "$TOFINO_PREFIX/bin/p4testgen" ] || { echo "p4testgen was not installed"; return 1; }
  as_owner_of "$PREFIX" mkdir -p "$PREFIX/bin" \
    && as_owner_of "$PREFIX" ln -sfn "$TOFINO_PREFIX/bin/p4c" "$PREFIX/bin/bf-p4c" \
    && as_owner_of "$PREFIX" ln -sfn "$TOFINO_PREFIX/bin/p4testgen" "$PREFIX/bin/p4testgen"
}
# the tools answer, and bf-p4c compiles the project's TNA program for both targets the way `make build-tofino`
# does (same flags, into a scratch build dir): a program that no longer fits a target fails here too
tofino_smoke() {
  # p4testgen wants a target even for --version (alone it stops with "Missing --target and --arch arguments")
  "$PREFIX/bin/p4testgen" --target bmv2 --arch v1model --version || return 1
  "$PREFIX/bin/p4testgen" --target tofino --arch tna --version || return 1
  "$PREFIX/bin/bf-p4c" --version || return 1
  rm -rf "$TC_DIR/tofino-smoke" && make -C "$REPO_DIR" --no-print-directory build-tofino \
    BUILD="$TC_DIR/tofino-smoke" P4C_TOFINO="$PREFIX/bin/bf-p4c" || return 1
  ls "$TC_DIR"/tofino-smoke/tofino/tofino{,2}/pipe/*.bin
}

tofino_toolchain() {
  local key="$P4C_TOFINO_COMMIT z3 $Z3_COMMIT abseil $ABSEIL_COMMIT protobuf $PROTOBUF_COMMIT driver-patch 1"
  step sources p4c-tofino "$P4C_TOFINO_COMMIT" tofino_checkout_p4c
  step sources tofino-deps "$key" tofino_sources
  step p4c-tofino pyenv "jsl==$JSL_VERSION pyinstaller==$PYINSTALLER_VERSION" tofino_pyenv
  key="$key $TOFINO_PREFIX ${P4C_CMAKE_TOFINO[*]}"
  step p4c-tofino configure "$key" tofino_configure
  step p4c-tofino build "$key" tofino_build
  STEP_REQUIRES=$PREFIX/bin/bf-p4c step p4c-tofino install "$key" tofino_install
  if [ "$SMOKE" = 1 ]; then step p4c-tofino smoke "$key" tofino_smoke; fi
  echo "versions:"
  echo "  bf-p4c:    $("$PREFIX/bin/bf-p4c" --version 2>&1 | tail -1)"
  echo "  p4testgen: $("$PREFIX/bin/p4testgen" --target bmv2 --arch v1model --version 2>&1 | tail -1)"
}

# one build per build directory: two runs would share its sources, logs and stamps. The lock is held until
# this script and every compiler it started have exited (they inherit the descriptor).
lock_build_dir() {
  exec 9>>"$TC_DIR/lock" || fail "cannot open $TC_DIR/lock"
  flock -n 9 || fail "another toolchain build (pid $(cat "$TC_DIR/lock.pid" 2>/dev/null || echo unknown)) is using $TC_DIR: wait for it to finish, or set P4HANDOFF_TOOLCHAIN_DIR to another directory"
  echo $$ >"$TC_DIR/lock.pid"
}

# ---- main (one function, called on the last line: bash has parsed all of it before running any of it, so
# editing this file while a build runs cannot derail that build) ---------------------------------------
main() {
  plan
  precheck
  echo "checks: ok (OS, root/sudo, $NEED_DISK_GB GiB disk, $NEED_MEM_GB GiB memory, base $GIT_BASE, ${#APT[@]} apt packages)"
  [ "$DRY_RUN" = 1 ] && { echo "dry run: nothing built"; exit 0; }

  mkdir -p "$LOGS" "$STAMPS" "$SRC" "$WORK" || fail "cannot create the build directory $TC_DIR"
  lock_build_dir
  step apt "$([ "$TOFINO" = 1 ] && echo tofino || echo bmv2)" "$(printf '%s ' "${APT[@]}" | sha1sum | cut -c1-12)" apt_install
  if [ "$TOFINO" = 1 ]; then
    tofino_toolchain
  else
    bmv2_toolchain
    if [ "$SMOKE" = 1 ]; then
      # again whenever a component, the program (p4src/) or the smoke test changed, or with --smoke
      local key
      key="$(cat "$STAMPS/$PREFIX_KEY".{pi,bmv2,p4c}.install 2>/dev/null | sha1sum | cut -c1-12) p4src $(
        find "$REPO_DIR/p4src" "$REPO_DIR/scripts/toolchain_smoke.py" -type f -print0 | sort -z | xargs -0 cat | sha1sum | cut -c1-12)"
      [ "$FORCE_SMOKE" = 1 ] && rm -f "$STAMPS/$PREFIX_KEY.smoke.test"
      step smoke test "$key" smoke
      if [ "$(stat -c %Y "$LOGS/smoke.log")" -ge "$START" ]; then sed -n '/^smoke:/p' "$LOGS/smoke.log" | tail -n 7
      else echo "smoke test: passed before with these tools and this p4src/ (make toolchain TOOLCHAIN_FLAGS=--smoke: again)"; fi
    fi
    versions
  fi
  echo "toolchain: done in $(hms $(( $(date +%s) - START ))) (prefix $PREFIX, build dir $TC_DIR)"
}

# P4HANDOFF_TC_LIBRARY=1: define everything, run nothing (tests/test_toolchain.py sources it to drive `step`)
if [ -z "${P4HANDOFF_TC_LIBRARY:-}" ]; then main "$@"; exit $?; fi
