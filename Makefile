# P4Handoff — the README's commands: `make setup`, `make test`, `make run`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
P4C ?= p4c-bm2-ss
BUILD := build
P4_MAIN := p4src/bs.p4
P4_SOURCES := $(wildcard p4src/*.p4 p4src/include/*.p4)
# The p4runtime wheel ships code generated for protobuf 3.x; with a current
# protobuf it only loads with the pure-Python implementation.
export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION := python

.PHONY: setup build test unit ptf clean fuzz chaos bench-hosts bench-pipeline bench-pipeline-instructions run run-sim run-lab run-sweeps run-all bench-lab bench-controller bench-scale

setup: ## install everything installable from apt and PyPI; report what is missing
	bash scripts/setup.sh

build: $(BUILD)/bs.json ## compile the P4 program for BMv2 (v1model)

$(BUILD)/bs.json: $(P4_SOURCES)
	@command -v $(P4C) >/dev/null || { echo "make build: '$(P4C)' (p4c for BMv2) is not installed; see README, section 'P4 toolchain'." >&2; exit 2; }
	@mkdir -p $(BUILD)
	$(P4C) --arch v1model --std p4-16 -I p4src/include -o $@ \
	  --p4runtime-files $(BUILD)/bs.p4info.txtpb,$(BUILD)/bs.p4info.bin $(P4_MAIN)

test: ## every suite; BMv2 and namespace suites skip, by name and reason, where their tools are absent
	@if command -v $(P4C) >/dev/null; then $(MAKE) --no-print-directory build; fi
	$(PY) -m pytest tests; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests ran"; rc=0; fi; exit $$rc

unit: ## fast tests only (no BMv2, no namespaces)
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
	$(PY) -m topo.fuzz_bmv2 --frames $(FUZZ_FRAMES) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) --json $(BUILD)/fuzz.json

chaos: build ## kill -9 a BS's BMv2, the gateway's and the controller before/during/after a WLAN->3G handoff (needs root; ~5 min)
	$(PY) -m topo.chaos --json $(BUILD)/chaos.json

clean:
	rm -rf $(BUILD)
