#!/usr/bin/env bash
# GPU smoke test: a real tiny veRL GRPO run and a real tiny OpenRLHF run, launched through
# rl-advisor's Ray backend on a loopback Ray head, with their metrics read back.
#
#   bash benchmarks/gpu_smoke.sh            # exits 0 with "skipped: no GPU" on a machine without one
#
# On a GPU machine it needs the frameworks' GPU stacks in the Python it runs (PYTHON, default the
# project's .venv): verl 0.9.1 with vLLM, and openrlhf 0.11.2 with vLLM/DeepSpeed/flash-attn.
# A missing stack is reported per framework ("skipped: <framework> not installed") and is not a
# failure of the other; a run that starts and fails is (exit 1). See benchmarks/gpu_smoke.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo "skipped: no GPU"
    exit 0
fi
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "skipped: no GPU (nvidia-smi sees one, but $PYTHON's torch is a CPU build)"
    exit 0
fi
exec "$PYTHON" benchmarks/gpu_smoke.py "$@"
