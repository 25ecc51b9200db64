"""Calibrate budget_memory's terms against real tensors: build models from configs with
transformers (random weights, no downloads), run real forward / backward / optimizer steps, and put
the measured bytes per phase beside the ledger's prediction.

On a GPU (``--device cuda``) each phase is measured with torch.cuda.max_memory_allocated (reset
before the phase, baseline = memory allocated when it starts):
  weights          model.to(device)                                   vs params term
  logprob_forward  no-grad forward + fp32 log-softmax of T tokens     vs forward working set + logits
  train_step       forward + backward (full recompute or none)        vs activations + backward working + logits + grads
  optimizer_step   AdamW step (states created)                        vs optimizer term
On the CPU (``--device cpu``, the reduced form the test suite runs) there is no allocator peak, so
the same phases are measured from the tensors themselves: parameter / gradient / optimizer-state
bytes, and the bytes autograd saves for backward (torch.autograd.graph.saved_tensors_hooks).

    python benchmarks/gpu_memory_calibration.py --device cuda --models Qwen2.5-0.5B Qwen2.5-1.5B --tokens 4096
    python benchmarks/gpu_memory_calibration.py --device cpu --tiny --recompute none   # seconds, no GPU

Measured here (CPU, tiny Qwen2-shaped model, 128 tokens, bf16): weights, grads, AdamW states and
the logits buffer equal the ledger's terms exactly; saved activations / formula = 0.962. The peaks of
whole steps on the CPU (allocations tracked op by op) are in benchmarks/activation_calibration.py.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from advisor.constants import const  # noqa: E402
from advisor.memory.terms import (backward_working_bytes_per_token, forward_working_bytes_per_token,  # noqa: E402
                                  param_parts, stored_activation_bytes_per_token)
from advisor.plan import ModelSpec  # noqa: E402


@dataclass
class Row:
    model: str
    phase: str
    measured_bytes: float
    predicted_bytes: float

    @property
    def ratio(self) -> float:
        return self.measured_bytes / self.predicted_bytes if self.predicted_bytes else float("nan")


def tiny_spec() -> ModelSpec:
    """A Qwen2-shaped model small enough for the CPU suite (GQA, SwiGLU, untied head)."""
    return ModelSpec(name="tiny-qwen2", architecture="qwen2", hidden_size=128, num_layers=4, num_heads=4,
                     num_kv_heads=2, head_dim=32, intermediate_size=352, vocab_size=1024, qkv_bias=True,
                     tie_embeddings=False, max_position_embeddings=4096)


def build_model(spec: ModelSpec, dtype, device: str, attn: str):
    """A real transformers model of these dimensions with random weights (no hub access)."""
    import torch
    import transformers

    from advisor.catalog import hf_config_kwargs

    cfg = transformers.AutoConfig.for_model(spec.architecture, **hf_config_kwargs(spec))
    cfg._attn_implementation = attn
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    return model.to(device)


def _bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        if t is None:
            continue
        key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if key in seen:
            continue
        seen.add(key)
        total += t.untyped_storage().nbytes()
    return total


def _saved_bytes(fn, exclude) -> int:
    """Bytes autograd keeps for backward while ``fn`` runs (unique storages), not counting the
    tensors in ``exclude`` (the parameters, which matmuls save by reference, not by copy)."""
    import torch

    skip = {t.untyped_storage().data_ptr() for t in exclude}
    saved = []

    def pack(t):
        if t.untyped_storage().data_ptr() not in skip:
            saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return _bytes(saved), out


def calibrate(spec: ModelSpec, tokens: int, device: str = "cpu", dtype_name: str = "fp32",
              recompute: str = "full") -> list[Row]:
    """Measure one model's phases and pair each with the ledger's prediction (same formulas)."""
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    b = 4 if dtype_name == "fp32" else 2
    scale = b / 2  # the activation formulas are written for 16-bit tensors
    attn = "sdpa" if device == "cpu" else "flash_attention_2"
    cuda = device.startswith("cuda")
    rows: list[Row] = []
    n = param_parts(spec).total
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    try:
        model = build_model(spec, dtype, device, attn)
    except (ImportError, ValueError):
        model = build_model(spec, dtype, device, "sdpa")
    measured = (torch.cuda.max_memory_allocated() - base) if cuda else _bytes(model.parameters())
    rows.append(Row(spec.name, "weights", measured, n * b))

    ids = torch.randint(0, spec.vocab_size, (1, tokens), device=device)
    # no-grad log-prob forward
    model.eval()
    with torch.no_grad():
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        logits = model(ids).logits
        lp = torch.log_softmax(logits.float(), dim=-1)
        if cuda:
            torch.cuda.synchronize()
            measured = torch.cuda.max_memory_allocated() - base
        else:
            measured = _bytes([logits, lp])
        del logits, lp
    pred_fwd = forward_working_bytes_per_token(spec) * tokens * scale if cuda else 0.0
    pred_logits = tokens * spec.vocab_size * const("logits_bytes_per_element") if dtype_name == "bf16" else \
        tokens * spec.vocab_size * (b + 4)
    rows.append(Row(spec.name, "logprob_forward" + ("" if cuda else " (logits only)"), measured,
                    pred_fwd + pred_logits))

    # forward + backward
    model.train()
    if recompute == "full":
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()

    def fwd():
        out = model(ids).logits
        return torch.log_softmax(out.float(), dim=-1).gather(-1, ids.unsqueeze(-1)).mean()

    if cuda:
        loss = fwd()
        loss.backward()
        torch.cuda.synchronize()
        measured = torch.cuda.max_memory_allocated() - base
        # the logits buffers and one layer's backward working set are never alive together (ledger)
        pred = stored_activation_bytes_per_token(spec, recompute) * tokens * scale \
            + max(backward_working_bytes_per_token(spec, recompute) * tokens * scale, pred_logits) + n * b
        rows.append(Row(spec.name, f"train_step ({recompute} recompute)", measured, pred))
    else:
        saved, loss = _saved_bytes(fwd, list(model.parameters()))
        # layer inputs kept by checkpointing; the vocab-sized tensors (logits and their fp32
        # log-softmax) are counted apart, as the ledger's logits term
        vocab_saved = tokens * spec.vocab_size * (b + 4)
        if recompute == "none":  # checkpointed inputs are held by torch.utils.checkpoint, not by these hooks
            rows.append(Row(spec.name, f"saved activations ({recompute} recompute)", max(saved - vocab_saved, 0),
                            stored_activation_bytes_per_token(spec, recompute) * tokens * scale))
        loss.backward()
        rows.append(Row(spec.name, "grads", _bytes(p.grad for p in model.parameters()), n * b))

    # optimizer step: AdamW keeps two moments per parameter in the parameter's dtype
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if cuda:
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    opt.step()
    if cuda:
        torch.cuda.synchronize()
        measured = torch.cuda.memory_allocated() - base
    else:
        measured = _bytes(t for st in opt.state.values() for k, t in st.items() if k != "step")
    rows.append(Row(spec.name, "optimizer_states", measured, n * 2 * b))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--models", nargs="*", default=["Qwen2.5-0.5B", "Qwen2.5-1.5B"])
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--dtype", default=None, choices=["fp32", "bf16"])
    ap.add_argument("--recompute", default="full", choices=["full", "none"])
    ap.add_argument("--tiny", action="store_true", help="use the tiny Qwen2-shaped model (CPU suite)")
    args = ap.parse_args()
    dtype = args.dtype or "bf16"
    if args.tiny:
        specs = [tiny_spec()]
    else:
        from advisor.catalog import get_model

        specs = [get_model(m) for m in args.models]
    print(f"{'model':<16} {'phase':<38} {'measured MiB':>13} {'predicted MiB':>14} {'ratio':>7}")
    for spec in specs:
        for r in calibrate(spec, args.tokens if not args.tiny else min(args.tokens, 256), args.device, dtype,
                           args.recompute):
            print(f"{r.model:<16} {r.phase:<38} {r.measured_bytes / 2**20:13.2f} {r.predicted_bytes / 2**20:14.2f} "
                  f"{r.ratio:7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
