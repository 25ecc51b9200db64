"""Measure what a training step really holds per token, on the frameworks' real code, and fit the
coefficients budget_memory's activation and logits terms use (advisor/memory/terms.py,
advisor/data/memory_constants.yaml).

Everything runs on the CPU: real transformers models built from configs (random weights, no
downloads), PEFT LoRA, TRL's and veRL's own log-prob / entropy functions. The peak of the tensors a
step allocates is taken with torch's MemTracker (a dispatch mode that sees every allocation and
free), so the numbers are allocator-independent bytes, the same quantity as
torch.cuda.max_memory_allocated minus the model. Parameter gradients are dropped as soon as they are
accumulated, as FSDP's reduce-scatter does, so they do not hide the activations.

    python benchmarks/activation_calibration.py            # all tables (about 2 minutes)
    python benchmarks/activation_calibration.py --quick    # one shape per row (seconds)

Tables:
1. per-token bytes of a training step (bf16, HF Qwen2 modelling code, q = h, kv = h/4), fitted over
   h in {256, 512, 1024}, I/h in {2.5, 5.5}, layers in {2, 3} (an exact linear fit: residual 0):
   peak = stored_per_layer x layers + working; full-parameter vs LoRA (frozen base), full
   recompute vs none; no-grad forward.
2. bytes per (token x vocab) element at the log-prob peak, by framework code path (veRL's
   torch.compile'd entropy is derived from what it saves: compiled code allocates outside the
   dispatcher). Each row is printed beside the value budget_memory uses.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


# --------------------------------------------------------------------------- measuring


def _tracker():
    """MemTracker that does not install gradient hooks (they fail on PEFT's frozen parameters)."""
    from torch.distributed._tools.mem_tracker import MemTracker

    class Tracker(MemTracker):
        def _track_module_params_and_buffers(self, module, install_grad_hooks=True):
            return super()._track_module_params_and_buffers(module, install_grad_hooks=False)

    return Tracker()


def _peak_without_model(run, *modules) -> float:
    """Peak bytes allocated while ``run()`` executes, not counting the modules' parameters/buffers."""
    import torch
    from torch.distributed._tools.mem_tracker import _MemRefType

    mt = _tracker()
    for m in modules:
        mt.track_external(m)
    with mt:
        run()
    snap = mt.get_tracker_snapshot("peak")[torch.device("cpu")]
    return snap["Total"] - snap.get(_MemRefType.PARAM, 0) - snap.get(_MemRefType.BUFFER, 0)


def build_model(h: int, inter: int, layers: int, vocab: int, *, lora: bool, recompute: bool):
    """A Qwen2-shaped bf16 model (q = h, kv = h/4, head_dim 64), optionally with LoRA adapters on every
    linear layer computed in bf16 (veRL's FSDP mixed precision casts adapters to bf16 too)."""
    import torch
    import transformers

    cfg = transformers.Qwen2Config(hidden_size=h, num_hidden_layers=layers, num_attention_heads=h // 64,
                                   num_key_value_heads=max(1, h // 256), intermediate_size=inter,
                                   vocab_size=vocab, tie_word_embeddings=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    if recompute:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora:
        import peft

        model = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules="all-linear"),
                                    autocast_adapter_dtype=False)
        if recompute:
            model.enable_input_require_grads()
    for p in model.parameters():
        if p.requires_grad:  # FSDP reduce-scatters and frees the unsharded gradient right away
            p.register_post_accumulate_grad_hook(lambda q: setattr(q, "grad", None))
    return model.train()


def train_step_bytes_per_token(h: int, inter: int, layers: int, tokens: int = 1024, *, lora: bool = False,
                               recompute: bool = True, vocab: int = 256) -> float:
    """Peak bytes per token of one forward + backward (log-softmax loss), above the model."""
    import torch

    model = build_model(h, inter, layers, vocab, lora=lora, recompute=recompute)
    ids = torch.randint(0, vocab, (1, tokens))

    def step():
        logits = model(input_ids=ids).logits
        logp = torch.log_softmax(logits.float(), -1)
        loss = -logp.gather(-1, ids[..., None]).mean()
        del logits, logp
        loss.backward()

    return _peak_without_model(step, model) / tokens


def forward_bytes_per_token(h: int, inter: int, layers: int, tokens: int = 1024, vocab: int = 256) -> float:
    """Peak bytes per token of a no-grad forward (log-prob / reference / reward phases)."""
    import torch

    model = build_model(h, inter, layers, vocab, lora=False, recompute=False).eval()
    ids = torch.randint(0, vocab, (1, tokens))

    def fwd():
        with torch.no_grad():
            model(input_ids=ids, use_cache=False)

    return _peak_without_model(fwd, model) / tokens


SHAPES_FULL = list(itertools.product((256, 512, 1024), (2.5, 5.5), (2, 3)))
SHAPES_QUICK = [(256, 2.5, 2), (512, 5.5, 3), (1024, 2.5, 3)]


def _fit(shapes, value) -> dict[str, float]:
    """Least-squares fit of value(h, I, L)/token = a*L*h + b*L*I + c*h + d*I + e over the shapes."""
    import numpy as np

    rows, ys = [], []
    for h, ratio, layers in shapes:
        inter = int(h * ratio)
        rows.append([layers * h, layers * inter, h, inter, 1.0])
        ys.append(value(h, inter, layers))
    x, y = np.array(rows), np.array(ys)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = float(np.max(np.abs(x @ coef - y)))
    return dict(zip(("per_layer_h", "per_layer_I", "h", "I", "const"), map(float, coef)), resid=resid)


def fit_training(shapes, *, lora: bool, recompute: bool, tokens: int = 1024) -> dict[str, float]:
    """The fit on measured training steps."""
    return _fit(shapes, lambda h, i, n: train_step_bytes_per_token(h, i, n, tokens, lora=lora, recompute=recompute))


def formula_training(shapes, *, lora: bool, recompute: bool) -> dict[str, float]:
    """The same fit on the formulas of advisor/memory/terms.py (what budget_memory predicts)."""
    return _fit(shapes, lambda h, i, n: training_formula(h, i, n, lora=lora, recompute=recompute))


def _spec(h: int, inter: int, layers: int):
    from advisor.plan import ModelSpec

    return ModelSpec(name="t", architecture="qwen2", hidden_size=h, num_layers=layers, num_heads=h // 64,
                     num_kv_heads=max(1, h // 256), head_dim=64, intermediate_size=inter, vocab_size=256,
                     qkv_bias=True, tie_embeddings=False, max_position_embeddings=4096)


def training_formula(h: int, inter: int, layers: int, *, lora: bool, recompute: bool) -> float:
    """budget_memory's bytes per token for the same step: stored activations + one layer's working set
    (the 256-word vocabulary's logits are smaller than the working set, which excludes them)."""
    from advisor.memory.terms import backward_working_bytes_per_token, stored_activation_bytes_per_token

    spec, mode = _spec(h, inter, layers), ("full" if recompute else "none")
    return (stored_activation_bytes_per_token(spec, mode, trainable_norms=not lora)
            + backward_working_bytes_per_token(spec, mode, trainable_norms=not lora))


def forward_formula(h: int, inter: int, layers: int) -> float:
    from advisor.memory.terms import forward_working_bytes_per_token

    return forward_working_bytes_per_token(_spec(h, inter, layers))


# --------------------------------------------------------------------------- logits paths


class _FlashCrossEntropy:
    """The memory semantics of flash_attn.ops.triton.cross_entropy (veRL's and OpenRLHF's log-probs on
    CUDA): forward keeps the logits (no copy) and a fp32 log-sum-exp per row; backward writes the
    gradient into the logits (inplace_backward) or into torch.empty_like(logits). The row blocks are
    small so that, like the Triton kernel, it adds no vocab-sized temporaries."""

    @staticmethod
    def apply(logits, labels, inplace: bool):
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                lse = torch.cat([torch.logsumexp(x[i:i + 16].float(), -1) for i in range(0, x.shape[0], 16)])
                loss = lse - x.gather(-1, y[:, None]).squeeze(-1).float()
                ctx.save_for_backward(x, lse, y)
                return loss

            @staticmethod
            def backward(ctx, g):
                x, lse, y = ctx.saved_tensors
                d = x if inplace else torch.empty_like(x)
                for i in range(0, x.shape[0], 16):
                    blk = torch.exp(x[i:i + 16].float() - lse[i:i + 16, None])
                    blk[torch.arange(blk.shape[0]), y[i:i + 16]] -= 1
                    d[i:i + 16] = (blk * g[i:i + 16, None]).to(d.dtype)
                return d, None

        return Fn.apply(logits, labels)


def logits_bytes_per_element(path: str, vocab_sizes=(8192, 32768), tokens: int = 1024, h: int = 256) -> float:
    """Bytes per (token x vocab) element at the peak of one loss path: the slope of the step's
    peak between two vocabulary sizes (the lm_head weight and its gradient are taken out)."""
    import torch

    peaks = []
    for vocab in vocab_sizes:
        torch.manual_seed(0)
        head = torch.nn.Linear(h, vocab, bias=False, dtype=torch.bfloat16)
        head.weight.register_post_accumulate_grad_hook(lambda q: setattr(q, "grad", None))
        x = torch.randn(tokens, h, dtype=torch.bfloat16, requires_grad=True)
        labels = torch.randint(0, vocab, (tokens,))

        def step():
            logits = head(x)
            if path == "hf_causal_lm_loss":
                loss = torch.nn.functional.cross_entropy(logits.float(), labels)
            elif path == "trl_selective_log_softmax":
                from trl.trainer.utils import selective_log_softmax

                loss = -selective_log_softmax(logits[None], labels[None]).mean()
            elif path == "verl_fused_logprob":
                loss = _FlashCrossEntropy.apply(logits, labels, inplace=True).mean()
            elif path == "verl_fused_logprob_entropy_eager":
                from verl.utils.torch_functional import entropy_from_logits

                loss = _FlashCrossEntropy.apply(logits, labels, inplace=False).mean() \
                    - 0.001 * entropy_from_logits(logits).mean()
            else:
                raise ValueError(path)
            del logits
            loss.backward()

        peaks.append(_peak_without_model(step, head))
    # The lm_head weight gradient (vocab x h, bf16) exists for an instant in the fused path; it is a
    # parameter gradient (FSDP reduce-scatters it), not a logits buffer, so it is taken out.
    weight_grad = 2 * h / tokens if path.startswith("verl") else 0.0
    return (peaks[1] - peaks[0]) / (tokens * (vocab_sizes[1] - vocab_sizes[0])) - weight_grad


def compiled_entropy_saved_bytes_per_element(tokens: int = 512, vocab: int = 8192) -> float:
    """What torch.compile(entropy_from_logits) (veRL's default, use_torch_compile=True) keeps for
    backward beyond the logits themselves, per (token x vocab) element. Compiled code allocates
    outside the dispatcher, so its peak cannot be tracked op by op; what it saves can
    (saved_tensors_hooks). Its backward is one fused kernel that writes a bf16 gradient (2 B)."""
    import torch
    from verl.utils.torch_functional import entropy_from_logits

    ent = torch.compile(entropy_from_logits, dynamic=True)
    ent(torch.randn(16, 64, dtype=torch.bfloat16, requires_grad=True)).sum().backward()  # compile
    logits = torch.randn(tokens, vocab, dtype=torch.bfloat16, requires_grad=True)
    own = logits.untyped_storage().data_ptr()
    saved: list[int] = []

    def pack(t):
        if t.untyped_storage().data_ptr() != own:
            saved.append(t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        ent(logits)
    return sum(saved) / (tokens * vocab)


# --------------------------------------------------------------------------- report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three shapes per fit, no compiled-entropy run")
    args = ap.parse_args(argv)

    from advisor.constants import const

    shapes = SHAPES_QUICK if args.quick else SHAPES_FULL
    print("1. training step and no-grad forward, bytes per token (peak above the model)")
    print(f"{'case':32s} {'h':>5s} {'I':>5s} {'L':>2s} {'measured':>9s} {'formula':>9s} {'ratio':>6s}")
    for lora, recompute in ((False, True), (True, True), (False, False), (True, False)):
        name = f"{'LoRA' if lora else 'full-parameter'}, {'full recompute' if recompute else 'no recompute'}"
        for h, ratio, layers in shapes:
            inter = int(h * ratio)
            got = train_step_bytes_per_token(h, inter, layers, lora=lora, recompute=recompute)
            want = training_formula(h, inter, layers, lora=lora, recompute=recompute)
            print(f"{name:32s} {h:5d} {inter:5d} {layers:2d} {got:9,.0f} {want:9,.0f} {got / want:6.3f}")
    for h, ratio, layers in shapes:
        inter = int(h * ratio)
        got = forward_bytes_per_token(h, inter, layers)
        want = forward_formula(h, inter, layers)
        print(f"{'no-grad forward':32s} {h:5d} {inter:5d} {layers:2d} {got:9,.0f} {want:9,.0f} {got / want:6.3f}")
    if not args.quick:
        print("\n   exact linear fit over the shapes: bytes/token = a*L*h + b*L*I + c*h + d*I + e")
        print(f"   {'case':32s} {'':9s} {'a':>6s} {'b':>6s} {'c':>6s} {'d':>6s} {'e':>6s} {'resid':>6s}")
        for lora, recompute in ((False, True), (True, True), (False, False), (True, False)):
            name = f"{'LoRA' if lora else 'full-parameter'}, {'full recompute' if recompute else 'no recompute'}"
            m = fit_training(shapes, lora=lora, recompute=recompute)
            f = formula_training(shapes, lora=lora, recompute=recompute)
            for label, r in (("measured", m), ("formula", f)):
                print(f"   {name if label == 'measured' else '':32s} {label:9s} {r['per_layer_h']:6.2f} "
                      f"{r['per_layer_I']:6.2f} {r['h']:6.2f} {r['I']:6.2f} {r['const']:6.0f} "
                      f"{r.get('resid', 0):6.0f}")

    print("\n2. bytes per (token x vocab) element at the log-prob peak")
    rows = [("hf_causal_lm_loss", const("hf_causal_lm_loss_bytes_per_element")),
            ("trl_selective_log_softmax", const("logits_bytes_per_element")),
            ("verl_fused_logprob", const("fused_logprob_bytes_per_element")),
            ("verl_fused_logprob_entropy_eager", None)]
    for path, used in rows:
        got = logits_bytes_per_element(path)
        print(f"  {path:36s} measured {got:6.2f}   budget_memory uses {used if used is not None else '-'}")
    saved = compiled_entropy_saved_bytes_per_element()
    used = const("fused_logprob_bytes_per_element") + const("entropy_bytes_per_element")
    # logits 2 B + the log-prob's bf16 gradient (not in place once the entropy is on) 2 B + the
    # compiled entropy's bf16 gradient 2 B + whatever it saves beyond the logits
    print(f"  {'verl_fused_logprob_entropy_compiled':36s} derived  {6 + saved:6.2f}   budget_memory uses {used:g}"
          f"   (torch.compile saves {saved:.3f} B/element beyond the logits)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
