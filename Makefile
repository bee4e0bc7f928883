# P4Handoff — the README's commands: `make setup`, `make test`, `make run`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
P4C ?= p4c-bm2-ss
BUILD := build
P4_MAIN := p4src/v1model/bs.p4
P4_SOURCES := $(wildcard p4src/v1model/*.p4 p4src/include/*.p4)

.PHONY: setup toolchain toolchain-tofino protos compile clean-compiled wheel wheel-compiled lint venv-ready build build-tofino tofino-resources testgen testgen-tofino test test-quick unit ptf clean fuzz security chaos chaos-testbed bench-hosts bench-pipeline bench-pipeline-instructions run run-sim run-lab run-sweeps run-all bench-lab bench-controller bench-punt-flood bench-scale

setup: ## install everything installable from apt and PyPI; report what is missing
	bash scripts/setup.sh

# The P4 toolchain from source (issue 21, README 'P4 toolchain'): pinned, resumable, ends with a smoke test.
# PREFIX=... (default /usr/local), P4HANDOFF_GIT_BASE=<mirror or dir>, JOBS=N, NICE=N;
# TOOLCHAIN_FLAGS=--dry-run (the plan) | --smoke (the smoke test again) | --no-smoke
TOOLCHAIN_FLAGS ?=
toolchain: ## build and install the pinned PI, BMv2 and p4c (BMv2 back end) from source (~1.5 h on 2 busy cores)
	bash scripts/toolchain.sh $(TOOLCHAIN_FLAGS)

toolchain-tofino: ## build p4c's Tofino back end (bf-p4c) and p4testgen beside it (own prefix, hours on 2 cores)
	bash scripts/toolchain.sh --tofino $(TOOLCHAIN_FLAGS)

protos: ## regenerate the P4Runtime modules for the installed protobuf (make setup does it)
	$(PY) controller/p4runtime/protogen.py   # by path: the package cannot import before its modules exist

# The wheel (README, "Install as a package"): built, like a clean clone, from the tracked files only (with their
# uncommitted changes: `git stash create` records them without touching the tree); setup.py generates the
# P4Runtime modules into it. pip fetches the build requirements from PyPI (or its cache).
WHEEL_SRC := $(BUILD)/wheel-src
wheel: venv-ready ## dist/p4handoff-*.whl from the tracked files, P4Runtime modules generated inside
	@rm -rf $(WHEEL_SRC) && mkdir -p $(WHEEL_SRC) dist
	tree=$$(git stash create) && git archive "$${tree:-HEAD}" | tar -x -C $(WHEEL_SRC)
	$(PY) -m pip wheel --no-deps -w dist $(WHEEL_SRC)

# The simulator's hot modules compiled with mypyc (issue 24, p4handoff/speedups.py): in place, next to their
# sources, which stay the fallback (a changed source makes the whole set run from source until recompiled).
compile: venv-ready ## compile the simulator's hot path with mypyc, in place (make setup does it; `make clean-compiled` undoes it)
	P4HANDOFF_MYPYC=1 $(PY) setup.py -q build_ext --inplace

clean-compiled: ## remove the compiled modules: the simulator runs as pure Python
	find p4handoff -name '*.so' -delete
	rm -f p4handoff/_compiled.json

# A platform wheel (cp3X-...-linux_x86_64) with the compiled modules and their sources; built without build
# isolation because mypyc comes from the dev extra's mypy (not a build requirement of the pure wheel).
wheel-compiled: venv-ready ## dist/p4handoff-*-cp3*.whl: the wheel with the simulator compiled for this platform
	@rm -rf $(WHEEL_SRC) && mkdir -p $(WHEEL_SRC) dist
	tree=$$(git stash create) && git archive "$${tree:-HEAD}" | tar -x -C $(WHEEL_SRC)
	P4HANDOFF_MYPYC=1 $(PY) -m pip wheel --no-deps --no-build-isolation -w dist $(WHEEL_SRC)

build: $(BUILD)/bs.json ## compile the P4 program for BMv2 (v1model)

$(BUILD)/bs.json: $(P4_SOURCES)
	@command -v $(P4C) >/dev/null || { echo "make build: '$(P4C)' (p4c for BMv2) is not installed; see README, section 'P4 toolchain'." >&2; exit 2; }
	@mkdir -p $(BUILD)
	$(P4C) --arch v1model --std p4-16 -I p4src/include -o $@ \
	  --p4runtime-files $(BUILD)/bs.p4info.txtpb,$(BUILD)/bs.p4info.bin $(P4_MAIN)

# Tofino (issue 10): the open-source Tofino back end of p4c (backends/tofino);
# docs/tofino.md. The CPU port is a build-time constant of the TNA parser.
P4C_TOFINO ?= bf-p4c
TOFINO_BUILD := $(BUILD)/tofino
TOFINO_CPU_PORT ?= 64
TOFINO2_CPU_PORT ?= 0
P4_TNA_MAIN := p4src/tna/bs_tna.p4
P4_TNA_SOURCES := $(wildcard p4src/tna/*.p4 p4src/include/*.p4)
TOFINO_TARGETS := tofino tofino2
tofino_arch = $(if $(filter tofino2,$(1)),t2na,tna)
tofino_cpu_port = $(if $(filter tofino2,$(1)),$(TOFINO2_CPU_PORT),$(TOFINO_CPU_PORT))
# -g: the resource logs `make tofino-resources` reads. Tofino-2: bf-p4c 1.2.5.16's
# assembler rejects the CLOTs it allocates for this program ("No length for clot"),
# so headers go through PHV instead (docs/tofino.md).
tofino_flags = -g $(if $(filter tofino2,$(1)),-Xp4c=--no-clot)

build-tofino: $(foreach t,$(TOFINO_TARGETS),$(TOFINO_BUILD)/$(t)/bs_tna.p4info.txtpb) ## compile p4src/tna for Tofino-1 and Tofino-2 into build/tofino/ (needs bf-p4c)

$(TOFINO_BUILD)/%/bs_tna.p4info.txtpb: $(P4_TNA_SOURCES)
	@command -v $(P4C_TOFINO) >/dev/null || { echo "make build-tofino: the Tofino compiler driver '$(P4C_TOFINO)' (bf-p4c: p4c's backends/tofino, make toolchain-tofino) is not installed; set P4C_TOFINO=... or see README, section 'Tofino'." >&2; exit 2; }
	@rm -rf $(TOFINO_BUILD)/$* && mkdir -p $(TOFINO_BUILD)/$*
	$(P4C_TOFINO) --target $* --arch $(call tofino_arch,$*) --std p4-16 -DTNA_CPU_PORT=$(call tofino_cpu_port,$*) $(call tofino_flags,$*) \
	  -o $(TOFINO_BUILD)/$* --p4runtime-force-std-externs \
	  --p4runtime-files $(TOFINO_BUILD)/$*/bs_tna.p4info.txtpb,$(TOFINO_BUILD)/$*/bs_tna.p4info.bin \
	  $(P4_TNA_MAIN) > $(TOFINO_BUILD)/$*.log 2>&1 || { cat $(TOFINO_BUILD)/$*.log >&2; rm -f $@; exit 1; }

# A target that does not fit still leaves its resource logs: report them ("(does not fit: N)").
tofino-resources: ## stages, SRAM, TCAM, PHV and hash units per Tofino target, from the compiler's resource logs
	@$(MAKE) --no-print-directory -k build-tofino || echo "make tofino-resources: build-tofino failed (build/tofino/*.log); reporting what the compiler laid out" >&2
	$(PY) -m p4handoff.tofino_resources $(foreach t,$(TOFINO_TARGETS),$(TOFINO_BUILD)/$(t))

lint: venv-ready ## ruff and mypy (configured in pyproject.toml)
	$(PY) -m ruff check .
	$(PY) -m mypy

# Tests run on TEST_JOBS pytest-xdist workers (default: one per core); the BMv2 and namespace tests keep to one
# worker, one after another (tests/conftest.py). docs/testing.md, "Test tiers, and how long they take".
TEST_JOBS ?= auto
QUICK_MARKS := not slow and not bmv2 and not netns

# lint and `make build` side by side (mypy and p4c use one core each; ~15 s each on a fresh clone), output kept per target
test: venv-ready ## lint, then every suite; BMv2, Tofino and namespace suites skip, by name and reason, where their tools are absent
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint $(if $(shell command -v $(P4C) 2>/dev/null),build)
	@if command -v $(P4C_TOFINO) >/dev/null; then $(MAKE) --no-print-directory -k -j2 build-tofino \
	  || echo "make test: build-tofino failed (build/tofino/*.log); test_tna_program_compiles fails for it" >&2; fi
	$(PY) -m pytest tests -n $(TEST_JOBS) --dist loadgroup --durations=25; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests ran"; rc=0; fi; exit $$rc

test-quick: venv-ready ## the edit loop (< 1 min): unit and fast simulator tests; no lint, BMv2, namespaces or slow tests
	$(PY) -m pytest tests -q -n $(TEST_JOBS) -m "$(QUICK_MARKS)"

venv-ready:
	@test -x $(PY) || { echo "make: $(VENV) is missing: run 'make setup' first (README, 'Set up and test')" >&2; exit 2; }

unit: venv-ready ## the tests that need neither BMv2 nor namespaces (slow ones included)
	$(PY) -m pytest tests -n $(TEST_JOBS) -m "not bmv2 and not netns"

ptf: build ## the PTF suite against BMv2 alone
	$(PY) -m pytest -v tests/test_ptf.py

# P4Testgen (issue 22, docs/testgen.md): tests generated from the P4 programs, replayed on BMv2 (needs p4testgen
# from `make toolchain-tofino`, root). Several p4testgen runs per target (path selection and seed; bmv2: three,
# tofino: two), at most TESTGEN_MAX_TESTS tests each (0: until P4Testgen finds no more paths); the coverage
# printed is the union over the runs, then each statement left uncovered with its reason from docs/testgen.md.
# TESTGEN_RUNS=RANDOM_BACKTRACK:2,GREEDY_STATEMENT_SEARCH:1:data-ports,... replaces the runs (data-ports: bmv2 only).
TESTGEN_MAX_TESTS ?= 100
TESTGEN_TOFINO_MAX_TESTS ?= 200
TESTGEN_RUN_FLAGS = $(if $(TESTGEN_RUNS),--runs $(TESTGEN_RUNS))
testgen: build ## P4Testgen (bmv2) on bs.p4, every test replayed on simple_switch_grpc; prints testgen_* and coverage
	$(PY) -m p4handoff.testgen bmv2 --max-tests $(TESTGEN_MAX_TESTS) $(TESTGEN_RUN_FLAGS)

testgen-tofino: build ## P4Testgen (tofino, tofino2) on bs_tna.p4, each test replayed through bs.p4 on BMv2; prints tofino_* figures
	$(PY) -m p4handoff.testgen tofino tofino2 --max-tests $(TESTGEN_TOFINO_MAX_TESTS) $(TESTGEN_RUN_FLAGS)

bench-pipeline: build ## packets/s of p4src/v1model/bs.p4 vs bench/minimal.p4 on the same BMv2 (needs root)
	$(PY) bench/pipeline_pps.py

bench-pipeline-instructions: build ## the same comparison in instructions per packet under callgrind (load-independent)
	$(PY) bench/pipeline_instructions.py

bench-hosts: ## our TCP sender's goodput vs Linux TCP over one veth pair (needs root)
	$(PY) bench/hosts_goodput.py

bench-controller: build ## handoff completion time and handoff rate of the controller on BMv2 (needs root); PROFILE=1: where the daemon's time goes per handoff instead (cProfile, per stage)
	$(PY) bench/controller.py $(if $(PROFILE),--profile)

bench-punt-flood: build ## where a punt flood's cost goes: bs2's registration p99 under a meter-dropped, parser-dropped and unswitched flood of bs1's cell (needs root; ~5 min); PUNT_ISOLATION=R: R repeats of the flood on shared and on split cores (~1 min each)
	$(PY) bench/punt_flood_cost.py $(if $(PUNT_BUDGET),--budget $(PUNT_BUDGET)) $(if $(PUNT_ISOLATION),--isolation $(PUNT_ISOLATION))

# The lab (issue 5): scenario files in traces/, results in results/<scenario>/<run-id>/.
BACKEND ?= auto
REPEAT ?= 1
RUN_SET ?= traces/vh-wlan-to-3g.yaml traces/vh-3g-to-lan.yaml traces/vh-switching.yaml
SWEEP_SET ?= traces/vh-wlan-to-3g-buffers.yaml traces/vh-3g-to-lan-buffers.yaml traces/vh-switching-buffers.yaml

run: ## the default experiment set: the three vertical-handoff cases beside the published table (lab when BMv2 and Mininet are here, ~12 min per repeat; else the simulator, ~1 min; BACKEND=sim|lab, REPEAT=K)
	@if command -v $(P4C) >/dev/null; then $(MAKE) --no-print-directory build; fi
	$(PY) -m p4handoff run $(RUN_SET) --backend $(BACKEND) --repeat $(REPEAT)

run-sim: ## the same set in the simulator only (~1 min)
	$(PY) -m p4handoff run $(RUN_SET) --backend sim

run-lab: build ## the same set in the Mininet lab: BMv2 + controller + host endpoints + emulators (needs root; ~12 min)
	$(PY) -m p4handoff run $(RUN_SET) --backend lab --repeat $(REPEAT)

run-sweeps: ## buffer / min-RTO sensitivity of the three vertical-handoff cases (simulator)
	$(PY) -m p4handoff run $(SWEEP_SET) --backend sim

run-all: ## every scenario file in traces/ (simulator; tens of minutes)
	$(PY) -m p4handoff run traces/*.yaml --backend sim

bench-scale: ## one simulator sweep with --jobs 1 and --jobs $(nproc): sweep_speedup and results_mb_per_run
	$(PY) bench/scale.py

bench-lab: ## simulator speed and the link emulator's rate/delay error (emulator part needs root)
	$(PY) bench/lab.py

# Reliability (issue 12, docs/reliability.md).
FUZZ_FRAMES ?= 10000
FUZZ_SEED ?=
fuzz: build ## fuzzed frames into every port role of a BS on BMv2, each accounted for (needs root; FUZZ_SEED=N to replay, FUZZ_FRAMES=N)
	$(PY) -m p4handoff.reliability.fuzz_bmv2 --frames $(FUZZ_FRAMES) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) --json $(BUILD)/fuzz.json

# Security (issue 23, docs/reliability.md): forged signalling in-process, floods and TLS on BMv2 where it is here.
SECURITY_PER_KIND ?= 10000
SECURITY_SEED ?=
security: venv-ready ## forged registrations (every kind, SECURITY_PER_KIND each), replays after a restart, forged notifications; punt flood and TLS refusals on BMv2 (SECURITY_SEED=N to replay)
	@if command -v $(P4C) >/dev/null; then $(MAKE) --no-print-directory build; fi
	@mkdir -p $(BUILD)
	$(PY) -m p4handoff.reliability.security --per-kind $(SECURITY_PER_KIND) $(if $(SECURITY_SEED),--seed $(SECURITY_SEED)) --json $(BUILD)/security.json

CHAOS_LOCK ?=
chaos: build ## kill -9 a BS's BMv2, the gateway's and the controller before/during/after a WLAN->3G handoff with IPF, in the Mininet lab (needs root, Mininet; ~10 min; CHAOS_LOCK=FILE: flock it per run)
	$(PY) -m p4handoff.reliability.chaos --where lab --workdir $(BUILD)/chaos --json $(BUILD)/chaos.json $(if $(CHAOS_LOCK),--lock $(CHAOS_LOCK))

chaos-testbed: build ## the same faults on the controller's BMv2 testbed, three UDP flows (needs root; ~2.5 min)
	$(PY) -m p4handoff.reliability.chaos --where testbed --workdir $(BUILD)/chaos-testbed --json $(BUILD)/chaos-testbed.json

clean: clean-compiled
	rm -rf $(BUILD)
