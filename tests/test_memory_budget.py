"""budget_memory semantics: engine rules, sharding, offload, LoRA, fixes, host RAM, and the tool's
faces (CLI table, JSON, picture). Expected values come from the formulas' sources, not from the code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.catalog import get_model
from advisor.errors import AdvisorError
from advisor.memory import MemoryBudget, budget_memory
from advisor.constants import const
from advisor.memory.terms import GIB, kv_bytes_per_token
from advisor.plan import plan_from_dict

REPO = Path(__file__).resolve().parent.parent


def base(**over) -> dict:
    d = {
        "method": "grpo", "framework": "verl",
        "hardware": {"gpu": "H100", "gpus_per_node": 8, "nodes": 1},
        "policy": {"model": "Qwen2.5-7B-Instruct"},
        "reward_function": {"path": "r.py"},
        "algorithm": {"kl_coef": 0.001, "group_size": 5},
        "data": {"max_prompt_length": 512, "max_response_length": 1024, "train_batch_size": 256,
                 "mini_batch_size": 64, "micro_batch_size_per_gpu": 4},
        "rollout": {"engine": "vllm", "tp": 2},
        "memory": {"rollout_memory_fraction": 0.5},
    }
    for path, value in over.items():
        cur = d
        parts = path.split("__")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = value
    return d


def budget(**over) -> MemoryBudget:
    return budget_memory(plan_from_dict(base(**over)))


def phase(b: MemoryBudget, name: str):
    return next(p for p in b.phases if p.phase == name)


def term(ph, name: str) -> float:
    return sum(t.gib for t in ph.terms if t.name == name)


# ----------------------------------------------------------------------------- KV cache


def test_kv_bytes_match_perf_anchors():
    """perf-anchors section 1.6: Qwen2.5-7B 56 KiB, Llama-3.1-8B 128 KiB, Qwen2.5-72B 320 KiB per token."""
    assert kv_bytes_per_token(get_model("Qwen2.5-7B")) == 56 * 1024
    assert kv_bytes_per_token(get_model("Llama-3.1-8B")) == 128 * 1024
    assert kv_bytes_per_token(get_model("Qwen2.5-72B")) == 320 * 1024


def test_kv_heads_replicated_when_tp_exceeds_kv_heads():
    s = get_model("Qwen2.5-7B")  # 4 KV heads
    assert kv_bytes_per_token(s, tp=4) == kv_bytes_per_token(s) / 4
    assert kv_bytes_per_token(s, tp=8) == kv_bytes_per_token(s, tp=4)  # replicated, not split further


def test_mla_kv_is_latent_and_not_split_by_tp():
    s = get_model("DeepSeek-V3")
    assert kv_bytes_per_token(s) == s.num_layers * (s.kv_lora_rank + s.qk_rope_head_dim) * 2
    assert kv_bytes_per_token(s, tp=8) == kv_bytes_per_token(s)


# ----------------------------------------------------------------------------- engines


def test_vllm_budget_is_fraction_of_total_memory():
    b = budget()
    ph = phase(b, "rollout")
    cap = b.pools[0].capacity_gib
    assert term(ph, "rollout.engine_budget") == pytest.approx(0.5 * cap, rel=1e-6)
    # raising the fraction raises the rollout phase by exactly that share of total memory
    b2 = budget(memory__rollout_memory_fraction=0.7)
    assert phase(b2, "rollout").total_gib - ph.total_gib == pytest.approx(0.2 * cap, rel=1e-4)


def test_vllm_refuses_to_start_when_trainer_holds_memory():
    """No offload + a greedy fraction: the colocated trainer's states leave less free memory than
    the engine requests, so vLLM's startup check fails (the OOM the Search-R1 issue reports)."""
    b = budget(policy__model="Qwen2.5-14B-Instruct", hardware__gpus_per_node=4, rollout__tp=1,
               memory__rollout_memory_fraction=0.6)
    assert not b.fits
    ph = phase(b, "rollout")
    assert ph.check and "refuses" in ph.check
    assert b.pools[0].failed_check


def test_sglang_fraction_is_of_free_memory():
    """SGLang's static pool shrinks when the trainer keeps more resident; vLLM's does not."""
    kw = dict(policy__model="Qwen2.5-3B-Instruct")
    s_off = budget(rollout__engine="sglang", memory__param_offload=True, memory__optimizer_offload=True, **kw)
    s_on = budget(rollout__engine="sglang", **kw)
    v_off = budget(memory__param_offload=True, memory__optimizer_offload=True, **kw)
    v_on = budget(**kw)
    eng = lambda b: term(phase(b, "rollout"), "rollout.engine_budget")  # noqa: E731
    assert eng(s_on) < eng(s_off)
    assert eng(v_on) == pytest.approx(eng(v_off))


def test_cuda_graphs_stay_while_engine_sleeps_and_vanish_with_enforce_eager():
    b = budget()
    upd = phase(b, "actor_update")
    assert upd.states["rollout"] == "asleep"
    assert term(upd, "rollout.cuda_graphs") == pytest.approx(const("cuda_graph_gib"))
    assert term(upd, "rollout.engine_budget") == 0
    eager = budget(rollout__enforce_eager=True)
    assert term(phase(eager, "actor_update"), "rollout.cuda_graphs") == 0


def test_engine_without_sleep_keeps_its_budget_in_training_phases():
    b = budget(rollout__sleep_level=0)
    assert term(phase(b, "actor_update"), "rollout.engine_budget") == pytest.approx(0.5 * b.pools[0].capacity_gib)


# ----------------------------------------------------------------------------- trainer states


def test_verl_fsdp_actor_is_fp32_16_bytes_per_param_sharded():
    b = budget()
    upd = phase(b, "actor_update")
    n = get_model("Qwen2.5-7B").params
    states = term(upd, "policy.params") + term(upd, "policy.grads") + term(upd, "policy.optimizer")
    assert states == pytest.approx(16 * n / 8 / GIB, rel=1e-6)
    ref = phase(b, "ref_log_prob")
    assert term(ref, "reference.params") == pytest.approx(2 * n / 8 / GIB, rel=1e-6)  # bf16 reference


def test_megatron_distributed_optimizer_divides_by_dp():
    b = budget(memory__train_backend="megatron", policy__parallel={"tp": 2, "pp": 2})
    upd = phase(b, "actor_update")
    n = get_model("Qwen2.5-7B").params
    assert term(upd, "policy.params") == pytest.approx(2 * n / 4 / GIB, rel=1e-3)
    assert term(upd, "policy.optimizer") == pytest.approx(12 * n / 4 / 2 / GIB, rel=1e-3)  # dp = 8/(2*2)


def test_lora_removes_grads_and_optimizer_and_shares_the_reference():
    full = budget()
    lora = budget(memory__lora_rank=32)
    u_full, u_lora = phase(full, "actor_update"), phase(lora, "actor_update")
    assert term(u_lora, "policy.optimizer") < 0.05 * term(u_full, "policy.optimizer")
    assert term(phase(lora, "ref_log_prob"), "reference.params") == 0
    assert u_lora.total_gib < u_full.total_gib


def test_offload_moves_states_to_host():
    on = budget()
    off = budget(memory__param_offload=True, memory__optimizer_offload=True, memory__ref_offload=True)
    r_on, r_off = phase(on, "rollout"), phase(off, "rollout")
    assert term(r_on, "policy.params") > 0 and term(r_off, "policy.params") == 0
    assert r_off.states["policy"] == "offloaded"
    assert off.host.peak_gib > on.host.peak_gib
    assert {t.name for t in off.host.terms} >= {"policy.params", "policy.optimizer"}


def test_logits_chunking_and_token_budget():
    b = budget(data__micro_batch_size_per_gpu=16)
    c = budget(data__micro_batch_size_per_gpu=16, memory__logits_chunking=True)
    v = get_model("Qwen2.5-7B").vocab_size
    fused = const("fused_logprob_bytes_per_element")  # veRL: flash-attn cross-entropy, in-place backward
    assert term(phase(c, "actor_update"), "policy.logits") == pytest.approx(
        const("logits_chunk_tokens") * v * fused / GIB)
    assert term(phase(c, "actor_update"), "policy.logits") < term(phase(b, "actor_update"), "policy.logits")
    d = budget(data__use_dynamic_bsz=True, data__max_token_len_per_gpu=24000)
    assert term(phase(d, "actor_update"), "policy.logits") == pytest.approx(24000 * v * fused / GIB)
    trl = budget(framework="trl", data__micro_batch_size_per_gpu=16, memory__train_backend="deepspeed")
    ratio = term(phase(trl, "actor_update"), "policy.logits") / term(phase(b, "actor_update"), "policy.logits")
    assert ratio == pytest.approx(const("logits_bytes_per_element") / fused)


def test_activation_offload_keeps_two_layers():
    on = budget(data__micro_batch_size_per_gpu=16)
    off = budget(data__micro_batch_size_per_gpu=16, memory__activation_offload=True)
    layers = get_model("Qwen2.5-7B").num_layers
    a_on = term(phase(on, "actor_update"), "policy.activations")
    assert term(phase(off, "actor_update"), "policy.activations") == pytest.approx(a_on * 2 / layers)


def test_remove_padding_uses_mean_lengths():
    worst = budget(data__micro_batch_size_per_gpu=8)
    typical = budget(data__micro_batch_size_per_gpu=8, data__mean_prompt_length=128, data__mean_response_length=256)
    ratio = term(phase(typical, "actor_update"), "policy.logits") / term(phase(worst, "actor_update"), "policy.logits")
    assert ratio == pytest.approx((128 + 256) / (512 + 1024))


def test_split_pools_have_their_own_phases():
    b = budget(placement={"mode": "split", "pools": [
        {"name": "train", "gpus_per_node": 4, "roles": ["policy", "reference"]},
        {"name": "gen", "gpus_per_node": 4, "roles": ["rollout"]}]})
    gen = [p.phase for p in b.phases if p.pool == "gen"]
    assert gen and "actor_update" not in gen
    assert {p.name for p in b.pools} == {"train", "gen"}


def test_host_ram_can_be_the_binding_limit():
    b = budget(policy__model="Qwen2.5-72B-Instruct", memory__param_offload=True, memory__optimizer_offload=True,
               hardware__host_memory_gb=64, rollout__tp=8)
    assert not b.host.fits and not b.fits


# ----------------------------------------------------------------------------- fixes


def test_fix_ladder_uses_framework_keys_and_reports_new_peaks():
    # 64 sequences per micro-batch and 160 per rank per mini-batch (gradient accumulation, so the
    # gradient shards coexist with the activations): far over 80 GB
    b = budget(data__micro_batch_size_per_gpu=64, data__mini_batch_size=256)
    assert not b.fits and b.fixes
    assert all(k.startswith(("actor_rollout_ref.", "trainer.")) for f in b.fixes for k in f.settings)
    first = b.fixes[0]
    assert first.new_peak_gib < b.peak_gib()
    # re-applying the first fix to the plan reproduces its new peak
    from advisor.memory.fixes import apply_fix, fix_table

    single = next(f for f in b.fixes if not f.id.startswith("combined:"))
    row = next(r for r in fix_table() if r["id"] == single.id)
    fixed, _ = apply_fix(plan_from_dict(base(data__micro_batch_size_per_gpu=64, data__mini_batch_size=256)), row)
    assert budget_memory(fixed).peak_gib() == pytest.approx(single.new_peak_gib, abs=0.01)


def test_fix_ladder_for_openrlhf_speaks_dotted_flags():
    b = budget(framework="openrlhf", policy__model="Qwen2.5-14B-Instruct", memory__zero_stage=2,
               memory__rollout_memory_fraction=0.9, data__micro_batch_size_per_gpu=8)
    assert not b.fits
    keys = {k for f in b.fixes for k in f.settings}
    assert keys and all(k.startswith("--") for k in keys)
    assert "--ds.zero_stage" in keys or "--ds.adam_offload" in keys


def test_fitting_plan_has_no_fixes_and_text_table():
    b = budget(memory__param_offload=True, memory__optimizer_offload=True)
    assert b.fits and b.fixes == []
    text = b.to_text()
    assert "FITS" in text and "actor_update" in text and "Host RAM" in text


def test_unknown_gpu_is_a_field_error():
    with pytest.raises(AdvisorError) as e:
        budget(hardware__gpu="H1000")
    assert e.value.problems[0].field == "hardware.gpu"


# ----------------------------------------------------------------------------- faces


def test_cli_json_and_plot(tmp_path):
    plan = tmp_path / "plan.yaml"
    import yaml

    plan.write_text(yaml.safe_dump(base()))
    out = subprocess.run([sys.executable, "-m", "rl_advisor", "budget-memory", "--plan", str(plan), "--json"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    parsed = MemoryBudget.model_validate(json.loads(out.stdout))
    assert parsed.pools[0].binding_phase
    prefix = tmp_path / "pic" / "mem"
    res = subprocess.run([sys.executable, "-m", "rl_advisor", "memory-check", "--plan", str(plan), "--plot", str(prefix)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert res.returncode in (0, 1), res.stderr
    png, svg = prefix.with_suffix(".png"), prefix.with_suffix(".svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert b"<svg" in svg.read_bytes()[:2000] and b"actor" in svg.read_bytes()


def test_mcp_tools_in_process():
    """budget_memory / import_config / budget_memory_from_config over the MCP protocol (in-process
    client): structured results that validate as the output models, field-named errors."""
    import asyncio

    from mcp import Client

    from advisor.plan import plan_from_yaml
    from rl_advisor.mcp_server import build_server

    async def run():
        async with Client(build_server()) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"budget_memory", "import_config", "budget_memory_from_config"} <= names
            r = await c.call_tool("budget_memory", {"plan": base(), "detail": True})
            assert not r.is_error
            MemoryBudget.model_validate(r.structured_content)
            cmd = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                   "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct trainer.n_gpus_per_node=1")
            r = await c.call_tool("import_config", {"text": cmd})
            assert not r.is_error
            imported = r.structured_content  # the Plan comes back as its YAML
            assert plan_from_yaml(imported["plan"]).policy.model == "Qwen2.5-0.5B-Instruct"
            assert imported["framework"] == "verl" and "mapped" in imported["omitted"]
            r = await c.call_tool("budget_memory_from_config", {"text": cmd, "gpu": "A100"})
            assert not r.is_error and r.structured_content["budget"]["gpu"].startswith("A100")
            r = await c.call_tool("budget_memory_from_config", {"text": cmd, "gpu": "Z9"})
            assert r.is_error and "hardware.gpu" in str(r.content)

    asyncio.run(run())


def test_fsdp_grads_overlap_activations_only_without_gradient_accumulation():
    """One micro-batch per optimizer step: FSDP's gradient shards build up while the checkpointed
    activations are freed, so the grads count only beyond activations + logits. With gradient
    accumulation the previous micro-batches' gradient shards are alive during backward."""
    one = phase(budget(data__micro_batch_size_per_gpu=40), "actor_update")  # 40 seqs per rank per mini-batch
    two = phase(budget(data__micro_batch_size_per_gpu=20), "actor_update")  # two micro-batches
    full = term(two, "policy.grads")
    assert full > 0
    freed = term(one, "policy.activations") + term(one, "policy.logits")
    assert term(one, "policy.grads") == pytest.approx(max(0.0, full - freed), abs=1e-6)
    # LoRA keeps its (tiny) adapter gradients whatever the batching
    lora = phase(budget(data__micro_batch_size_per_gpu=40, memory__lora_rank=32), "actor_update")
    assert term(lora, "policy.grads") > 0


def test_logits_and_backward_working_set_are_never_summed():
    """The vocab-sized buffers live around the lm_head, a layer's backward working set after them:
    the update phase holds stored activations + the larger of the two (measured on real steps by
    benchmarks/activation_calibration.py), whichever is larger."""
    for micro in (1, 16):  # working set larger, then logits larger
        ph = phase(budget(data__micro_batch_size_per_gpu=micro), "actor_update")
        logits, work = term(ph, "policy.logits"), term(ph, "policy.backward_working")
        full_work = float(next(t for t in ph.terms if t.name == "policy.backward_working")
                          .formula.split("; ")[1].split(" GiB")[0])
        assert logits + work == pytest.approx(max(logits, full_work), abs=0.01)


@pytest.mark.parametrize("framework,method,backend,constant", [
    ("verl", "grpo", "fsdp", "fused_logprob_bytes_per_element"),
    ("openrlhf", "grpo", "deepspeed", "openrlhf_logprob_bytes_per_element"),
    ("trl", "grpo", "deepspeed", "logits_bytes_per_element"),
    ("trl", "sft", "deepspeed", "hf_causal_lm_loss_bytes_per_element"),
])
def test_logits_bytes_follow_the_framework_code_path(framework, method, backend, constant):
    over = dict(framework=framework, method=method, memory__train_backend=backend, data__micro_batch_size_per_gpu=2,
                algorithm__entropy_coeff=0.0)
    if method == "sft":
        over.update(algorithm__kl_coef=0.0)
    plan = base(**over)
    if method == "sft":
        plan.pop("reward_function")
    b = budget_memory(plan_from_dict(plan))
    ph = phase(b, "actor_update")
    t = next(t for t in ph.terms if t.name == "policy.logits")
    assert f"x {const(constant):g} B" in t.formula


def test_verl_trained_entropy_adds_its_measured_bytes():
    off = phase(budget(algorithm__entropy_coeff=0.0), "actor_update")
    on = phase(budget(algorithm__entropy_coeff=0.001), "actor_update")
    ratio = term(on, "policy.logits") / term(off, "policy.logits")
    want = (const("fused_logprob_bytes_per_element") + const("entropy_bytes_per_element")) \
        / const("fused_logprob_bytes_per_element")
    assert ratio == pytest.approx(want)


def test_lora_base_keeps_fewer_activation_bytes_than_a_trained_model():
    """Frozen RMSNorm weights do not keep the normalised input (2h per norm): measured 19.06h + 12I
    vs 23.06h + 12I above the stored inputs with full recompute."""
    full = phase(budget(), "actor_update")
    lora = phase(budget(memory__lora_rank=32), "actor_update")
    f = next(t for t in full.terms if t.name == "policy.backward_working").formula
    g = next(t for t in lora.terms if t.name == "policy.backward_working").formula
    fw = float(f.split("; ")[1].split(" GiB")[0]) if "; " in f else term(full, "policy.backward_working")
    gw = float(g.split("; ")[1].split(" GiB")[0]) if "; " in g else term(lora, "policy.backward_working")
    h = get_model("Qwen2.5-7B").hidden_size
    inter = get_model("Qwen2.5-7B").intermediate_size
    assert gw / fw == pytest.approx((19.06 * h + 12 * inter) / (23.06 * h + 12 * inter), rel=0.01)
