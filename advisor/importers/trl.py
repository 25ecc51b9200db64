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

from advisor import yamlio
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
        data = yamlio.load_untrusted(text)
    except yamlio.InputTooLarge:
        raise
    except AdvisorError:
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


_ACCELERATE_KEYS = {"distributed_type", "compute_environment", "num_processes", "mixed_precision"}


def _documents(text: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The TRL config and, when the text also holds one (a second YAML document), the accelerate
    config it is launched with: the distributed backend and process count live there."""
    docs = [d for d in yamlio.load_all_untrusted(text, field="text", allowed="a TRL config YAML")
            if d is not None]
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise AdvisorError("a TRL config must be a YAML mapping", field="text",
                           value=type(docs[0]).__name__ if docs else "empty")
    accel = [d for d in docs if len(_ACCELERATE_KEYS & set(d)) >= 2]
    trl_docs = [d for d in docs if d not in accel]
    if len(trl_docs) != 1 or len(accel) > 1:
        raise AdvisorError("expected one TRL config YAML, optionally followed by its accelerate config "
                           "(`---` between them)", field="text", value=f"{len(docs)} YAML documents")
    return trl_docs[0], (accel[0] if accel else None)


def _accelerate(b: PlanBuilder, cfg: dict[str, Any]) -> None:
    """accelerate config.yaml -> training backend, offload and process count."""
    kind = str(cfg.get("distributed_type", "NO")).upper()
    b.mapped["accelerate:distributed_type"] = "memory.train_backend"
    if kind == "FSDP":
        fsdp = cfg.get("fsdp_config") if isinstance(cfg.get("fsdp_config"), dict) else {}
        b.extra["fsdp"] = "accelerate"
        b.set("memory.train_backend", "fsdp2" if str(fsdp.get("fsdp_version", 1)) == "2" else "fsdp")
        b.set("memory.zero_stage", 3 if fsdp.get("fsdp_sharding_strategy", "FULL_SHARD") == "FULL_SHARD" else 2)
        if fsdp.get("fsdp_offload_params"):
            b.set("memory.param_offload", True)
            b.set("memory.optimizer_offload", True)
    elif kind == "DEEPSPEED":
        ds = cfg.get("deepspeed_config") if isinstance(cfg.get("deepspeed_config"), dict) else {}
        stage = ds.get("zero_stage", 2)
        if stage not in (0, 1, 2, 3):
            b.not_understood.append(f"accelerate deepspeed_config.zero_stage={stage} (not 0-3; assumed 2)")
            stage = 2
        b.extra["deepspeed_config"] = "accelerate"
        b.extra["accelerate_zero_stage"] = stage
        b.set("memory.param_offload", ds.get("offload_param_device", "none") not in ("none", None))
        b.set("memory.optimizer_offload", ds.get("offload_optimizer_device", "none") not in ("none", None))
    elif kind not in ("NO", "MULTI_GPU"):
        b.not_understood.append(f"accelerate distributed_type={kind} (no Plan backend)")
    procs, machines = cfg.get("num_processes"), cfg.get("num_machines", 1)
    if isinstance(procs, int) and isinstance(machines, int) and procs > 0 and machines > 0:
        b.set("hardware.nodes", machines)
        b.set("hardware.gpus_per_node", max(1, procs // machines))
        b.extra["processes"] = procs
        b.mapped["accelerate:num_processes"] = "hardware"


def import_trl(text: str) -> ImportResult:
    data, accel = _documents(text)
    b = PlanBuilder(Framework.TRL, VERSION)
    method, why = _method(data, text)
    b.set("method", method)
    b.notes.append(f"method {method}: {why}")
    if accel is not None:
        _accelerate(b, accel)
    table = {**maps()["trl"], **maps()["trl_script"]}
    fields = known_keys()["trl_fields"] | set(maps()["trl_script"])
    for key, value in data.items():
        if isinstance(value, (dict, list)) and key not in ("report_to", "dataset_name", "loss_type", "reward_funcs",
                                                           "datasets"):
            b.settings[key] = str(value)
            if key in table:
                b.apply(key, value, table[key], True)
            else:
                b.not_understood.append(f"{key}={value} ({'not a Plan setting' if key in fields else 'not a TRL 1.16.0 key'})")
            continue
        b.apply(key, value, table.get(key), key in fields)
    _resolve(b, method)
    return b.build()


def _variant(b: PlanBuilder, method: str) -> str:
    """GRPOConfig spells the GRPO variants as loss_type (dr_grpo, dapo) or
    importance_sampling_level=sequence (GSPO)."""
    ex = b.extra
    if method != "grpo":
        return method
    loss = ex.get("trl_loss_type")
    new = method
    if ex.get("importance_sampling_level") == "sequence":
        new = "gspo"
    elif loss in ("dr_grpo", "dapo"):
        new = loss
    if new != method:
        b.set("method", new)
        b.notes.append(f"GRPOConfig {'importance_sampling_level=sequence' if new == 'gspo' else 'loss_type=' + new}: "
                       f"{new}")
    return new


def _server_placement(b: PlanBuilder) -> int:
    """vllm_mode=server: training runs on the accelerate processes, generation on a separately
    started ``trl vllm-serve`` (its GPUs are not in the config: modelled as one engine of
    vllm_tensor_parallel_size GPUs). Returns the training process count."""
    ex = b.extra
    tp = b.get("rollout.tp") or 1
    roles = ["policy"] + (["reference"] if (ex.get("beta") or 0) > 0 else [])
    if "processes" in ex:
        train, machines = ex["processes"], b.get("hardware.nodes") or 1
        per_node = max(1, train // machines)
        b.set("hardware.gpus_per_node", max(per_node, tp) if machines > 1 else per_node + tp)
        b.set("hardware.nodes", machines + 1 if machines > 1 else 1)
        b.set("placement", {"mode": "split", "pools": [
            {"name": "train", "nodes": machines, "gpus_per_node": per_node, "roles": roles},
            {"name": "vllm", "nodes": 1, "gpus_per_node": tp, "roles": ["rollout"]}]})
        b.notes.append(f"vllm_mode server: {train} training processes (accelerate) + a vLLM server of "
                       f"{tp} GPU(s) (its data-parallel size is not in the config)")
        return train
    gpn = b.get("hardware.gpus_per_node") or 8
    if gpn <= tp:
        b.not_understood.append(f"vllm_mode=server with vllm_tensor_parallel_size {tp} and no accelerate config: "
                                "where the server runs is unknown (colocated pools assumed)")
        return gpn
    b.set("placement", {"mode": "split", "pools": [
        {"name": "train", "nodes": 1, "gpus_per_node": gpn - tp, "roles": roles},
        {"name": "vllm", "nodes": 1, "gpus_per_node": tp, "roles": ["rollout"]}]})
    b.notes.append(f"vllm_mode server without an accelerate config: modelled as {gpn - tp} training GPUs + "
                   f"a {tp}-GPU vLLM server on one node")
    return gpn - tp


_TRL_BUILTIN_REWARDS = ("accuracy_reward", "reasoning_accuracy_reward", "think_format_reward",
                        "get_soft_overlong_punishment")


def _reward_funcs(b: PlanBuilder) -> None:
    """``trl grpo``'s reward_funcs: a dotted import path ``pkg.module.func`` is the Plan's reward
    function (file pkg/module.py, function func); the Plan holds one, TRL's built-ins have no file."""
    funcs = b.extra.get("reward_funcs") or []
    for i, name in enumerate(funcs):
        if name in _TRL_BUILTIN_REWARDS:
            b.not_understood.append(f"reward_funcs: {name} (a TRL built-in reward; the Plan names a reward file)")
        elif "." not in name or i > 0 and b.get("reward_function") is not None:
            b.not_understood.append(f"reward_funcs: {name} (the Plan holds one reward function as module.function)")
        else:
            module, func = name.rsplit(".", 1)
            b.set("reward_function", {"path": module.replace(".", "/") + ".py", "name": func})
            b.notes.append(f"reward_funcs {name}: reward_function {module.replace('.', '/')}.py:{func}")


def _resolve(b: PlanBuilder, method: str) -> None:
    ex = b.extra
    method = _variant(b, method)
    _reward_funcs(b)
    online = method in ("grpo", "rloo", "dr_grpo", "gspo", "dapo")
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
    if ex.get("fp16") and b.get("policy.dtype") is None:
        b.set("policy.dtype", "fp16")
    dtype = b.get("policy.dtype")
    b.set("memory.master_weights_fp32", dtype in (None, "fp32"))
    if dtype is None:
        b.set("policy.dtype", "bf16")
        b.notes.append("dtype not set: TRL's ModelConfig default float32 weights (fp32 master), bf16 compute")
    if ex.get("deepspeed_config") == "accelerate":
        b.set("memory.train_backend", "deepspeed")
        b.set("memory.zero_stage", ex["accelerate_zero_stage"])
    elif ex.get("deepspeed_config"):
        b.set("memory.train_backend", "deepspeed")
        b.set("memory.zero_stage", 3)
        b.notes.append(f"deepspeed={ex['deepspeed_config']}: its ZeRO stage is in that JSON; assumed ZeRO-3")
    elif ex.get("fsdp") == "accelerate":
        pass
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
                gpus = _server_placement(b)
        else:
            b.set("rollout.engine", "hf")
            b.notes.append("use_vllm false: generation with the training model (HF generate)")
        n = b.get("algorithm.group_size") or 1
        per = b.get("data.micro_batch_size_per_gpu")
        accum = ex.get("grad_accum", 1)
        completions = per * gpus * accum
        prompts = max(1, completions // n)
        where = "from the accelerate config" if "processes" in ex else "assumed from hardware"
        gen = ex.get("generation_batch_size")
        if gen:
            b.set("data.train_batch_size", max(prompts, gen // n))
            b.notes.append(f"generation_batch_size {gen} completions = {gen // n} prompts x n={n} per generation round")
        else:
            b.set("data.train_batch_size", prompts)
        b.set("data.mini_batch_size", prompts)
        b.notes.append(f"optimizer step = {per} per device x {gpus} processes ({where}) x {accum} accumulation = "
                       f"{completions} completions = {prompts} prompts x n={n}")
    else:
        per = b.get("data.micro_batch_size_per_gpu")
        batch = per * gpus * ex.get("grad_accum", 1)
        b.set("data.train_batch_size", batch)
        b.set("data.mini_batch_size", batch)
    b.notes.append("GPU type and process count are not part of a TRL config: hardware keeps the Plan default")
    if b.get("policy.model") == "unknown":
        b.not_understood.append("model_name_or_path missing: policy model unknown")
