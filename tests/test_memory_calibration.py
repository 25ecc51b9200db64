"""The reduced CPU form of benchmarks/gpu_memory_calibration.py: a real transformers model built
from a config (random weights), a real forward/backward/AdamW step, and the bytes of the real
tensors against the ledger's terms, in bf16 (the dtype the formulas are written for: HF's RMSNorm
keeps a fp32 upcast of its input, which an fp32 run does not copy). Weights, gradients, optimizer
states and the logits buffer must match exactly; the activations autograd saves (parameters
excluded) must match the per-layer formula within 10% (measured: 0.962 on this model).
tests/test_activation_calibration.py checks the peaks of whole steps the same way."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_memory_calibration.py"


def _bench():
    spec = importlib.util.spec_from_file_location("gpu_memory_calibration", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.integration  # builds and trains a real (tiny) transformers model: ~10-20 s on 2 cores
def test_cpu_calibration_matches_ledger_terms():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    bench = _bench()
    spec = bench.tiny_spec()
    from advisor.catalog import count_params
    from advisor.memory.terms import param_parts

    assert param_parts(spec).total == count_params(spec)
    rows = {r.phase: r for r in bench.calibrate(spec, tokens=128, device="cpu", dtype_name="bf16", recompute="none")}
    for name in ("weights", "grads", "optimizer_states", "logprob_forward (logits only)"):
        assert rows[name].measured_bytes == rows[name].predicted_bytes, (name, rows[name])
    act = rows["saved activations (none recompute)"]
    assert 0.9 <= act.ratio <= 1.1, act
