"""Plan -> TRL 1.16.0: a config YAML (ScriptArguments + <X>Config + ModelConfig +
DatasetMixtureConfig, what ``TrlParser`` and ``trl <cmd> --config`` read), an accelerate config,
and an entry script that adds the JSONL metrics callback and the plan's reward functions.

Field names and defaults: research/frameworks.md §3 (GRPOConfig has no max_prompt_length,
beta defaults to 0.0, loss_type to dapo; ORPO/CPO live in trl.experimental).
"""

from __future__ import annotations

from typing import Any

from advisor.plan import Method, Plan
from advisor.render.common import Carry, Derived, is_cpu, pool_for

TRAINERS: dict[Method, tuple[str, str, str | None]] = {
    # method: (trainer, config class, `trl` CLI subcommand or None for experimental)
    Method.GRPO: ("trl.GRPOTrainer", "trl.GRPOConfig", "grpo"),
    Method.DR_GRPO: ("trl.GRPOTrainer", "trl.GRPOConfig", "grpo"),
    Method.GSPO: ("trl.GRPOTrainer", "trl.GRPOConfig", "grpo"),
    Method.DAPO: ("trl.GRPOTrainer", "trl.GRPOConfig", "grpo"),
    Method.RLOO: ("trl.RLOOTrainer", "trl.RLOOConfig", "rloo"),
    Method.DPO: ("trl.DPOTrainer", "trl.DPOConfig", "dpo"),
    Method.KTO: ("trl.KTOTrainer", "trl.KTOConfig", "kto"),
    Method.REWARD_MODEL: ("trl.RewardTrainer", "trl.RewardConfig", "reward"),
    Method.SFT: ("trl.SFTTrainer", "trl.SFTConfig", "sft"),
    Method.ORPO: ("trl.experimental.orpo.ORPOTrainer", "trl.experimental.orpo.ORPOConfig", None),
    Method.SIMPO: ("trl.experimental.cpo.CPOTrainer", "trl.experimental.cpo.CPOConfig", None),
}
ONLINE = {Method.GRPO, Method.DR_GRPO, Method.GSPO, Method.DAPO, Method.RLOO}
OPTIM = {"adamw": "adamw_torch", "adamw_8bit": "adamw_bnb_8bit", "adafactor": "adafactor", "sgd": "sgd"}
LOADERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv", ".arrow": "arrow"}


def world_size(plan: Plan) -> int:
    return 1 if is_cpu(plan) else pool_for(plan, "policy").gpus


def _datasets(files: list[str]) -> list[dict[str, Any]]:
    """TRL DatasetMixtureConfig entries: local files by loader, anything else as a hub id."""
    by_loader: dict[str, list[str]] = {}
    hub: list[str] = []
    for f in files:
        ext = "." + f.rsplit(".", 1)[-1].lower() if "." in f.rsplit("/", 1)[-1] else ""
        if ext in LOADERS:
            by_loader.setdefault(LOADERS[ext], []).append(f)
        else:
            hub.append(f)
    out: list[dict[str, Any]] = [{"path": loader, "data_files": fs, "split": "train"}
                                 for loader, fs in by_loader.items()]
    out += [{"path": h, "split": "train"} for h in hub]
    return out


def config(plan: Plan, d: Derived, carry: Carry, notes: list[str]) -> dict[str, Any]:
    a, data, m, r, lg = plan.algorithm, plan.data, plan.memory, plan.rollout, plan.logging
    method = plan.method
    world = world_size(plan)
    cpu = is_cpu(plan)
    cfg: dict[str, Any] = {}
    # ModelConfig
    cfg["model_name_or_path"] = plan.policy.weights_path
    cfg["dtype"] = "float32" if cpu else {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[plan.policy.dtype]
    if m.lora_rank:
        cfg["use_peft"] = True
        cfg["lora_r"] = m.lora_rank
        cfg["lora_alpha"] = m.lora_alpha
        if m.qlora:
            cfg["load_in_4bit"] = True
    # DatasetMixtureConfig
    cfg["datasets"] = _datasets(list(data.train_files))
    if data.val_files:
        carry.drop("data.val_files", list(data.val_files), "the TRL dataset mixture takes one file set; "
                   "evaluation files are not wired (set eval_strategy and a test split by hand)")
    # TrainingArguments
    cfg["output_dir"] = lg.output_dir
    cfg["run_name"] = lg.experiment
    default_lr = {Method.SFT: 2e-5, Method.REWARD_MODEL: 1e-4}.get(method, 1e-6 if method in ONLINE else 5e-7)
    cfg["learning_rate"] = a.learning_rate if a.learning_rate is not None else default_lr
    per_step = d.mini_batch * (d.n if method in ONLINE else 1)  # sequences per optimizer step
    grad_accum = max(1, per_step // (d.micro * world))
    if d.micro * world * grad_accum != per_step:
        notes.append(f"TRL batch: {per_step} sequences per optimizer step is not a multiple of "
                     f"micro {d.micro} x {world} processes; rendered gradient_accumulation_steps={grad_accum}")
    cfg["per_device_train_batch_size"] = d.micro
    cfg["gradient_accumulation_steps"] = grad_accum
    cfg["num_train_epochs"] = data.epochs
    if data.total_steps:
        cfg["max_steps"] = data.total_steps
    cfg["logging_steps"] = 1
    if lg.save_freq > 0:
        cfg["save_strategy"] = "steps"
        cfg["save_steps"] = lg.save_freq
    else:
        cfg["save_strategy"] = "no"
    report = [b for b in lg.backends if b in ("tensorboard", "wandb")]
    cfg["report_to"] = report or ["none"]
    cfg["activation_checkpointing"] = m.recompute != "none"  # transformers 5: gradient_checkpointing is deprecated
    cfg["optim"] = OPTIM[m.optimizer]
    if cpu:
        cfg["use_cpu"] = True
        cfg["bf16"] = False
    else:
        cfg["bf16"] = plan.policy.dtype == "bf16"
        cfg["fp16"] = plan.policy.dtype == "fp16"
    if data.use_dynamic_bsz:
        carry.drop("data.use_dynamic_bsz", True, "TRL batches by sequence count (padding_free exists for DPO/SFT only)")
    if m.logits_chunking:
        carry.drop("memory.logits_chunking", True, "no chunked log-prob switch in TRL 1.16 configs")
    if m.ref_offload:
        carry.drop("memory.ref_offload", True, "TRL 1.16 has no switch to offload the reference model alone "
                   "(with PEFT the reference is the base model with adapters disabled)")
    # method fields
    if method in ONLINE:
        cfg["num_generations"] = d.n
        cfg["max_completion_length"] = data.max_response_length
        carry.drop("data.max_prompt_length", data.max_prompt_length,
                   "TRL 1.16 GRPOConfig/RLOOConfig removed max_prompt_length; truncate prompts in the data")
        gen_batch = d.train_batch * d.n
        if gen_batch != per_step:
            cfg["generation_batch_size"] = gen_batch
        cfg["num_iterations"] = a.epochs_per_batch
        cfg["temperature"] = a.temperature
        cfg["top_p"] = a.top_p
        cfg["beta"] = d.kl_coef if method != Method.RLOO or a.kl_coef is not None else 0.05
        cfg["epsilon"] = a.clip_ratio_low
        if d.clip_high != a.clip_ratio_low:
            cfg["epsilon_high"] = d.clip_high
        if a.kl_in_reward:
            carry.drop("algorithm.kl_in_reward", True, "TRL applies KL as a loss term (beta), not as a reward penalty")
        if data.prompt_key != "prompt":
            carry.drop("data.prompt_key", data.prompt_key, "TRL online trainers read the `prompt` column; rename it")
        if method != Method.RLOO:
            cfg["loss_type"] = {Method.DR_GRPO: "dr_grpo", Method.DAPO: "dapo"}.get(method, "grpo")
            if method == Method.DR_GRPO:
                cfg["scale_rewards"] = "none"
            if method == Method.DAPO:
                cfg["mask_truncated_completions"] = True
                if a.dynamic_sampling:
                    carry.drop("algorithm.dynamic_sampling", True, "TRL has no dynamic sampling (DAPO group filtering)")
                if a.overlong_buffer:
                    carry.drop("algorithm.overlong_buffer", a.overlong_buffer,
                               "TRL's soft overlong punishment is a reward function (get_soft_overlong_punishment), not a config key")
            if method == Method.GSPO:
                cfg["importance_sampling_level"] = "sequence"
            if a.entropy_coeff:
                carry.drop("algorithm.entropy_coeff", a.entropy_coeff, "TRL GRPO has no entropy bonus term")
        if r.engine == "vllm" and not cpu:
            cfg["use_vllm"] = True
            rp, pp = pool_for(plan, "rollout"), pool_for(plan, "policy")
            cfg["vllm_mode"] = "server" if rp.name != pp.name else "colocate"
            cfg["vllm_gpu_memory_utilization"] = m.rollout_memory_fraction
            cfg["vllm_tensor_parallel_size"] = r.tp
            if cfg["vllm_mode"] == "colocate" and r.sleep_level > 0:
                cfg["vllm_enable_sleep_mode"] = True
            if cfg["vllm_mode"] == "server":
                notes.append(f"TRL vllm_mode=server: start `trl vllm-serve --model {plan.policy.weights_path} "
                             f"--tensor_parallel_size {r.tp} --data_parallel_size {max(1, rp.gpus // r.tp)}` on the "
                             f"{rp.name} pool's GPUs before run_trl.sh, and give the trainer only the {pp.name} pool's GPUs "
                             "(CUDA_VISIBLE_DEVICES)")
        elif r.engine == "sglang":
            carry.drop("rollout.engine", "sglang", "TRL generates with vLLM or transformers only")
    else:
        seq = data.max_seq_len
        cfg["max_length"] = seq
        if method in (Method.DPO, Method.KTO, Method.ORPO, Method.SIMPO):
            cfg["beta"] = a.beta if a.beta is not None else (2.0 if method == Method.SIMPO else 0.1)
        if method == Method.ORPO:
            cfg["max_completion_length"] = data.max_response_length
        if method == Method.SIMPO:
            cfg["loss_type"] = "simpo"
            cfg["cpo_alpha"] = 0.0
            cfg["simpo_gamma"] = a.simpo_gamma
            cfg["max_completion_length"] = data.max_response_length
    if plan.critic is not None:
        carry.drop("critic", plan.critic.model, "TRL 1.16 has no critic-based trainer (PPO was removed)")
    if method not in ONLINE and plan.reward_function is not None:
        carry.drop("reward_function", plan.reward_function.path, f"{method.value} trains on fixed data; no reward function")
    return cfg


def accelerate_config(plan: Plan, carry: Carry) -> dict[str, Any]:
    """An accelerate ``config.yaml`` (what ``accelerate launch --config_file`` reads)."""
    m = plan.memory
    cpu = is_cpu(plan)
    world = world_size(plan)
    pool = pool_for(plan, "policy")
    mixed = "no" if cpu or plan.policy.dtype == "fp32" else plan.policy.dtype
    cfg: dict[str, Any] = {"compute_environment": "LOCAL_MACHINE", "debug": False}
    if cpu or world == 1:
        cfg["distributed_type"] = "NO"
    elif m.train_backend == "deepspeed" or m.train_backend == "megatron":
        if m.train_backend == "megatron":
            carry.drop("memory.train_backend", "megatron", "TRL trains through accelerate (DeepSpeed or FSDP); rendered DeepSpeed")
        cfg["distributed_type"] = "DEEPSPEED"
        cfg["deepspeed_config"] = {
            "zero_stage": m.zero_stage,
            "offload_optimizer_device": "cpu" if m.optimizer_offload else "none",
            "offload_param_device": "cpu" if m.param_offload else "none",
            "zero3_init_flag": m.zero_stage == 3,
        }
    else:
        cfg["distributed_type"] = "FSDP"
        cfg["fsdp_config"] = {
            "fsdp_version": 2 if m.train_backend == "fsdp2" else 1,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_offload_params": m.param_offload,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_sync_module_states": True,
        }
        if m.train_backend != "fsdp2":
            cfg["fsdp_config"]["fsdp_sharding_strategy"] = "FULL_SHARD"
        if m.optimizer_offload and not m.param_offload:
            carry.drop("memory.optimizer_offload", True, "accelerate FSDP offloads params and optimizer together "
                       "(fsdp_offload_params); use DeepSpeed to offload only the optimizer")
    cfg.update({
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": mixed,
        "num_machines": 1 if cpu else pool.nodes,
        "num_processes": world,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": cpu,
    })
    return cfg


def entry_context(plan: Plan) -> dict[str, Any]:
    trainer, config_class, cli = TRAINERS[plan.method]
    reward_functions = []
    reward_models = []
    if plan.method in ONLINE:
        if plan.reward_function is not None:
            reward_functions.append({"path": plan.reward_function.path, "name": plan.reward_function.name})
        if plan.reward is not None:
            reward_models.append(plan.reward.weights_path)
    return {
        "trainer": trainer,
        "config_class": config_class,
        "cli": cli,
        "reward_functions": reward_functions,
        "reward_models": reward_models,
        "needs_tokenizer": plan.method in (Method.ORPO, Method.SIMPO),
        "online": plan.method in ONLINE,
    }
