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

# veRL's own environment (like its own image on a cluster): veRL 0.9.1 pins transformers<5.11,
# TRL 1.16 runs a newer one, so veRL jobs run with this interpreter (backends/job_python.py:
# <venv>-verl beside the project's venv). The CPU torch wheel first, then verl with its base
# dependencies (no CUDA wheels, no vLLM), the Ray of the project's venv (driver and head must
# match), and the pieces of veRL's `verl-core` extra that its v1 TaskRunner imports on the way to
# its first GPU need (TransferQueue, pyzmq, msgspec, cachetools, fastapi, uvicorn).
VERL_VENV ?= $(VENV)-verl
VERL_PIP := $(VERL_VENV)/bin/python -m pip --disable-pip-version-check -q

$(VERL_VENV)/.installed: $(VENV)/.installed
	test -x $(VERL_VENV)/bin/python || python3 -m venv $(VERL_VENV)
	$(VERL_PIP) install --upgrade pip
	$(VERL_PIP) install torch==2.13.0
	$(VERL_PIP) install torch==2.13.0 verl==0.9.1 "ray[default]==$$($(PY) -c 'import ray; print(ray.__version__)')" \
		"TransferQueue>=0.1.10" pyzmq msgspec cachetools fastapi uvicorn
	touch $@

setup: $(VENV)/.installed $(VERL_VENV)/.installed

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
	rm -rf $(VENV) $(VERL_VENV) .pytest_cache
