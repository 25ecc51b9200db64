# rl-advisor: two commands do all set-up on a fresh machine.
#   make demo   the main job: plan -> budget -> place -> render -> launch -> read back -> diagnose
#   make test   the test suite (fast unit tests and the integration tests: Ray, real TRL training)
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# Launched runs (local, Ray on loopback) call the venv's own tools (trl, accelerate, ray).
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup demo test test-fast examples clean

$(VENV)/.installed: pyproject.toml scripts/setup-system.sh
	bash scripts/setup-system.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install --upgrade pip
	# torch first, pinned to the CPU wheel on disk, so no resolver ever pulls a CUDA build
	$(PIP) install torch==2.13.0
	$(PIP) install -e ".[dev,train,ray,k8s,validate,plot,fast,data]"
	# the frameworks' released packages, only to read their config schemas and parsers
	$(PIP) install --no-deps verl==0.9.1 openrlhf==0.11.2
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/rl-advisor demo

test: setup
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not integration"

# Regenerate the generated parts: guide tables from advisor/data, examples.md from examples/plans,
# the MCP tool definitions served at start-up (rl_advisor/tool_listing.json).
examples: setup
	$(PY) scripts/regenerate_docs.py
	$(PY) scripts/regenerate_examples.py
	$(PY) scripts/regenerate_tool_listing.py
	$(PY) scripts/regenerate_skill_folder.py

clean:
	rm -rf $(VENV) .pytest_cache
