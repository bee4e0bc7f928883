# P4Handoff — the README's commands: `make setup`, `make test`, `make run`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
P4C ?= p4c-bm2-ss
BUILD := build
P4_MAIN := p4src/bs.p4
P4_SOURCES := $(wildcard p4src/*.p4 p4src/include/*.p4)

.PHONY: setup toolchain toolchain-tofino protos wheel lint venv-ready build build-tofino tofino-resources test unit ptf clean fuzz chaos chaos-testbed bench-hosts bench-pipeline bench-pipeline-instructions run run-sim run-lab run-sweeps run-all bench-lab bench-controller bench-scale

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
	$(PY) -m p4handoff.controller.protogen

# The wheel (README, "Install as a package"): built, like a clean clone, from the tracked files only (with their
# uncommitted changes: `git stash create` records them without touching the tree); setup.py generates the
# P4Runtime modules into it. pip fetches the build requirements from PyPI (or its cache).
WHEEL_SRC := $(BUILD)/wheel-src
wheel: venv-ready ## dist/p4handoff-*.whl from the tracked files, P4Runtime modules generated inside
	@rm -rf $(WHEEL_SRC) && mkdir -p $(WHEEL_SRC) dist
	tree=$$(git stash create) && git archive "$${tree:-HEAD}" | tar -x -C $(WHEEL_SRC)
	$(PY) -m pip wheel --no-deps -w dist $(WHEEL_SRC)

build: $(BUILD)/bs.json ## compile the P4 program for BMv2 (v1model)

$(BUILD)/bs.json: $(P4_SOURCES)
	@command -v $(P4C) >/dev/null || { echo "make build: '$(P4C)' (p4c for BMv2) is not installed; see README, section 'P4 toolchain'." >&2; exit 2; }
	@mkdir -p $(BUILD)
	$(P4C) --arch v1model --std p4-16 -I p4src/include -o $@ \
	  --p4runtime-files $(BUILD)/bs.p4info.txtpb,$(BUILD)/bs.p4info.bin $(P4_MAIN)

# Tofino (issue 10): the open-source Tofino back end of p4c (backends/tofino);
# docs/tofino.md. The CPU port is a build-time constant of the TNA parser.
P4C_TOFINO ?= $(or $(shell command -v bf-p4c 2>/dev/null),$(shell command -v p4c-barefoot 2>/dev/null),bf-p4c)
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
	@command -v $(P4C_TOFINO) >/dev/null || { echo "make build-tofino: the Tofino compiler '$(P4C_TOFINO)' (bf-p4c / p4c-barefoot, p4c's backends/tofino) is not installed; set P4C_TOFINO=... or see README, section 'Tofino'." >&2; exit 2; }
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

test: lint ## lint, then every suite; BMv2, Tofino and namespace suites skip, by name and reason, where their tools are absent
	@if command -v $(P4C) >/dev/null; then $(MAKE) --no-print-directory build; fi
	@if command -v $(P4C_TOFINO) >/dev/null; then $(MAKE) --no-print-directory -k build-tofino \
	  || echo "make test: build-tofino failed (build/tofino/*.log); test_tna_program_compiles fails for it" >&2; fi
	$(PY) -m pytest tests; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests ran"; rc=0; fi; exit $$rc

venv-ready:
	@test -x $(PY) || { echo "make: $(VENV) is missing: run 'make setup' first (README, 'Set up and test')" >&2; exit 2; }

unit: venv-ready ## fast tests only (no BMv2, no namespaces)
	$(PY) -m pytest tests -m "not bmv2 and not netns"

ptf: build ## the PTF suite against BMv2 alone
	$(PY) -m pytest -v tests/test_ptf.py

bench-pipeline: build ## packets/s of p4src/bs.p4 vs bench/minimal.p4 on the same BMv2 (needs root)
	$(PY) bench/pipeline_pps.py

bench-pipeline-instructions: build ## the same comparison in instructions per packet under callgrind (load-independent)
	$(PY) bench/pipeline_instructions.py

bench-hosts: ## our TCP sender's goodput vs Linux TCP over one veth pair (needs root)
	$(PY) bench/hosts_goodput.py

bench-controller: build ## handoff completion time and handoff rate of the controller on BMv2 (needs root)
	$(PY) bench/controller.py

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
	$(PY) -m p4handoff.lab.fuzz_bmv2 --frames $(FUZZ_FRAMES) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) --json $(BUILD)/fuzz.json

CHAOS_LOCK ?=
chaos: build ## kill -9 a BS's BMv2, the gateway's and the controller before/during/after a WLAN->3G handoff with IPF, in the Mininet lab (needs root, Mininet; ~10 min; CHAOS_LOCK=FILE: flock it per run)
	$(PY) -m p4handoff.lab.chaos --where lab --workdir $(BUILD)/chaos --json $(BUILD)/chaos.json $(if $(CHAOS_LOCK),--lock $(CHAOS_LOCK))

chaos-testbed: build ## the same faults on the controller's BMv2 testbed, three UDP flows (needs root; ~2.5 min)
	$(PY) -m p4handoff.lab.chaos --where testbed --workdir $(BUILD)/chaos-testbed --json $(BUILD)/chaos-testbed.json

clean:
	rm -rf $(BUILD)
