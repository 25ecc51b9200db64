"""budget_memory's activation and logits formulas against the peak of real steps.

benchmarks/activation_calibration.py runs real transformers (Qwen2) models, PEFT LoRA and the
frameworks' own log-prob functions on the CPU and takes the peak of the bytes the step allocates
(torch's MemTracker). Here a few of its shapes are re-measured and must agree with the formulas in
advisor/memory/terms.py within 4% (measured: 0.975-1.03), and the log-prob paths with the bytes per
(token x vocab) element in advisor/data/memory_constants.yaml within 0.3 B. A change to either
side that breaks the agreement fails here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "activation_calibration.py"

pytestmark = pytest.mark.integration  # builds real models; about 10 s on 2 cores


def _bench():
    spec = importlib.util.spec_from_file_location("activation_calibration", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    return _bench()


@pytest.mark.parametrize("lora", [False, True], ids=["full-parameter", "lora"])
@pytest.mark.parametrize("recompute", [True, False], ids=["full-recompute", "no-recompute"])
@pytest.mark.parametrize("shape", [(256, 2.5, 2), (512, 5.5, 3)], ids=["narrow-mlp", "wide-mlp"])
def test_training_step_peak_matches_formula(bench, lora, recompute, shape):
    h, ratio, layers = shape
    inter = int(h * ratio)
    got = bench.train_step_bytes_per_token(h, inter, layers, lora=lora, recompute=recompute)
    want = bench.training_formula(h, inter, layers, lora=lora, recompute=recompute)
    assert abs(got / want - 1) <= 0.04, f"measured {got:,.0f} B/token, formula {want:,.0f}"


def test_forward_peak_matches_formula(bench):
    got = bench.forward_bytes_per_token(512, 2816, 3)
    want = bench.forward_formula(512, 2816, 3)
    assert abs(got / want - 1) <= 0.04, f"measured {got:,.0f} B/token, formula {want:,.0f}"


@pytest.mark.parametrize("path,constant", [
    ("hf_causal_lm_loss", "hf_causal_lm_loss_bytes_per_element"),
    ("trl_selective_log_softmax", "logits_bytes_per_element"),
    ("verl_fused_logprob", "fused_logprob_bytes_per_element"),
])
def test_logprob_path_bytes_match_constants(bench, path, constant):
    pytest.importorskip("trl")
    from advisor.constants import const

    got = bench.logits_bytes_per_element(path)
    assert abs(got - const(constant)) <= 0.3, f"{path}: measured {got:.2f} B/element, table {const(constant)}"
