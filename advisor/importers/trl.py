"""TRL 1.16 config YAML (a GRPOConfig / DPOConfig / SFTConfig ... plus ModelConfig fields, the
form ``trl <cmd> --config FILE`` reads) -> Plan.

Semantics kept: per_device_train_batch_size counts completions per GPU; the generation batch of
one step is per_device x processes x gradient_accumulation_steps completions, i.e. / num_generations
prompts; beta 0.0 (GRPO default) loads no reference model; vLLM colocate mode never sleeps unless
vllm_enable_sleep_mode; server mode puts the engine on its own GPU; with PEFT the reference is the
base model with adapters disabled; without deepspeed/fsdp keys training is plain DDP."""

from __future__ import annotations

import re
from typing import Any

import yaml

from advisor.errors import AdvisorError
from advisor.importers.builder import PlanBuilder
from advisor.importers.models import ImportResult
from advisor.importers.tables import known_keys, maps
from advisor.plan import Framework

VERSION = "TRL 1.16.0"
_GRPO_HINTS = {"num_generations", "max_completion_length", "use_vllm", "vllm_mode", "epsilon",
               "num_iterations", "reward_funcs", "vllm_gpu_memory_utilization", "scale_rewards"}
_CLASS = re.compile(r"(GRPO|RLOO|DPO|KTO|SFT|ORPO|CPO|Reward|OnlineDPO)Config")


def looks_like(text: str) -> bool:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    if not isinstance(data, dict):
        return False
    fields = known_keys()["trl_fields"]
    return sum(1 for k in data if k in fields) >= max(1, len(data) // 2)


def _method(data: dict[str, Any], text: str) -> tuple[str, str]:
    m = _CLASS.search(text)
    if m:
        cls = m.group(1)
        return {"GRPO": "grpo", "RLOO": "rloo", "DPO": "dpo", "KTO": "kto", "SFT": "sft", "ORPO": "orpo",
                "CPO": "simpo", "Reward": "reward_model", "OnlineDPO": "dpo"}[cls], f"{cls}Config named in the file"
    if _GRPO_HINTS & set(data):
        return "grpo", "generation keys (num_generations/max_completion_length/vllm_*) -> GRPOConfig"
    if "loss_type" in data and isinstance(data["loss_type"], list) or "beta" in data:
        return "dpo", "beta/loss_type without generation keys -> DPOConfig"
    return "sft", "no RL or preference keys -> SFTConfig"


def import_trl(text: str) -> ImportResult:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AdvisorError(f"not valid YAML: {exc}", field="text", allowed="a TRL config YAML") from None
    if not isinstance(data, dict):
        raise AdvisorError("a TRL config must be a YAML mapping", field="text", value=type(data).__name__)
    b = PlanBuilder(Framework.TRL, VERSION)
    method, why = _method(data, text)
    b.set("method", method)
    b.notes.append(f"method {method}: {why}")
    table = maps()["trl"]
    fields = known_keys()["trl_fields"]
    for key, value in data.items():
        if isinstance(value, (dict, list)) and key not in ("report_to", "dataset_name", "loss_type", "reward_funcs"):
            b.settings[key] = str(value)
            if key in table:
                b.apply(key, value, table[key], True)
            else:
                b.not_understood.append(f"{key}={value} ({'not a Plan setting' if key in fields else 'not a TRL 1.16.0 key'})")
            continue
        b.apply(key, value, table.get(key), key in fields)
    _resolve(b, method)
    return b.build()


def _resolve(b: PlanBuilder, method: str) -> None:
    ex = b.extra
    online = method in ("grpo", "rloo")
    beta = ex.get("beta")
    if online:
        b.set("algorithm.kl_coef", beta if beta is not None else 0.0)
        if not beta:
            b.notes.append("beta 0.0 (GRPO default): no reference model is loaded")
    elif beta is not None:
        b.set("algorithm.beta", beta)
    if ex.get("use_peft"):
        b.set("memory.lora_rank", ex.get("lora_r", 16))
    elif "lora_r" in ex:
        b.notes.append("lora_r given but use_peft is false: full fine-tuning")
    dtype = b.get("policy.dtype")
    b.set("memory.master_weights_fp32", dtype in (None, "fp32"))
    if dtype is None:
        b.set("policy.dtype", "bf16")
        b.notes.append("dtype not set: TRL's ModelConfig default float32 weights (fp32 master), bf16 compute")
    if ex.get("deepspeed_config"):
        b.set("memory.train_backend", "deepspeed")
        b.set("memory.zero_stage", 3)
        b.notes.append(f"deepspeed={ex['deepspeed_config']}: its ZeRO stage is in that JSON; assumed ZeRO-3")
    elif ex.get("fsdp"):
        b.set("memory.train_backend", "fsdp")
    else:
        b.set("memory.train_backend", "deepspeed")
        b.set("memory.zero_stage", 0)
        b.notes.append("no deepspeed/fsdp key: plain DDP (every GPU holds full params, grads, optimizer)")
    b.default("memory.recompute", "full")  # TRL 1.16 gradient_checkpointing default True
    b.default("memory.remove_padding", False)
    b.default("algorithm.group_size", 8 if online else None)
    b.default("data.max_response_length", 512 if online else None)
    total = ex.get("max_total_len")
    if total and b.get("data.max_prompt_length") is None:
        resp = b.get("data.max_response_length")
        if resp and not online:
            b.set("data.max_prompt_length", max(1, total - resp))
        elif not online:
            b.set("data.max_prompt_length", total // 2)
            b.set("data.max_response_length", total - total // 2)
            b.notes.append(f"max_length {total}: split evenly between prompt and response")
    b.default("data.micro_batch_size_per_gpu", 8)
    gpus = (b.get("hardware.gpus_per_node") or 8) * (b.get("hardware.nodes") or 1)
    if online:
        if ex.get("use_vllm"):
            b.set("rollout.engine", "vllm")
            b.default("memory.rollout_memory_fraction", 0.3)  # TRL 1.16 vllm_gpu_memory_utilization
            b.default("rollout.sleep_level", 0)
            mode = ex.get("vllm_mode", "colocate")
            if mode == "server":
                b.set("placement", {"mode": "split", "pools": [
                    {"name": "train", "nodes": 1, "gpus_per_node": 7, "roles": ["policy", "reference"]},
                    {"name": "vllm", "nodes": 1, "gpus_per_node": 1, "roles": ["rollout"]}]})
                b.notes.append("vllm_mode server: modelled as 7 training GPUs + 1 vLLM GPU on one node")
                gpus = 7
        else:
            b.set("rollout.engine", "hf")
            b.notes.append("use_vllm false: generation with the training model (HF generate)")
        n = b.get("algorithm.group_size") or 1
        per = b.get("data.micro_batch_size_per_gpu")
        accum = ex.get("grad_accum", 1)
        completions = per * gpus * accum
        prompts = max(1, completions // n)
        b.set("data.train_batch_size", prompts)
        b.set("data.mini_batch_size", prompts)
        b.notes.append(f"generation batch = {per} per device x {gpus} processes x {accum} accumulation = "
                       f"{completions} completions = {prompts} prompts x n={n} (processes assumed from hardware)")
    else:
        per = b.get("data.micro_batch_size_per_gpu")
        b.set("data.train_batch_size", per * gpus * ex.get("grad_accum", 1))
    b.notes.append("GPU type and process count are not part of a TRL config: hardware keeps the Plan default")
    if b.get("policy.model") == "unknown":
        b.not_understood.append("model_name_or_path missing: policy model unknown")
