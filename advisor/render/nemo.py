"""Plan -> NeMo-RL (git HEAD 2026-08-22, 0.6.0) overrides on its example configs.

``uv run python examples/run_<algo>.py --config examples/configs/<base>.yaml key=value ...``
(research/frameworks.md §4). Overrides use NeMo-RL's own key paths in its example configs;
rl_advisor.validators checks them against copies of those configs in struct mode.
"""

from __future__ import annotations

from typing import Any

from advisor.plan import Framework, Method, Plan
from advisor.render.common import Carry, Derived, pool_for
from advisor.run_files import run_files

SCRIPTS: dict[Method, tuple[str, str]] = {
    Method.GRPO: ("examples/run_grpo.py", "examples/configs/grpo_math_1B.yaml"),
    Method.DAPO: ("examples/run_grpo.py", "examples/configs/grpo_math_1B.yaml"),
    Method.RLOO: ("examples/run_grpo.py", "examples/configs/grpo_math_1B.yaml"),
    Method.REINFORCE_PP: ("examples/run_grpo.py", "examples/configs/grpo_math_1B.yaml"),
    Method.PPO: ("examples/run_ppo.py", "examples/configs/ppo_math_1B.yaml"),
    Method.DPO: ("examples/run_dpo.py", "examples/configs/dpo.yaml"),
    Method.REWARD_MODEL: ("examples/run_rm.py", "examples/configs/rm.yaml"),
    Method.SFT: ("examples/run_sft.py", "examples/configs/sft.yaml"),
}
SECTION = {Method.PPO: "ppo", Method.DPO: "dpo", Method.REWARD_MODEL: "rm", Method.SFT: "sft"}
PRECISION = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def overrides(plan: Plan, d: Derived, carry: Carry, notes: list[str]) -> tuple[str, str, list[tuple[str, Any]]]:
    script, base = SCRIPTS[plan.method]
    a, data, m, r, lg = plan.algorithm, plan.data, plan.memory, plan.rollout, plan.logging
    online = plan.is_online
    o: list[tuple[str, Any]] = []
    add = o.append
    section = SECTION.get(plan.method, "grpo")
    # algorithm section
    if online:
        add((f"{section}.num_prompts_per_step", d.train_batch))
        add((f"{section}.num_generations_per_prompt", d.n))
    add((f"{section}.max_num_epochs", data.epochs))
    if data.total_steps:
        add((f"{section}.max_num_steps", data.total_steps))
    if section == "grpo":
        add(("grpo.use_leave_one_out_baseline", plan.method == Method.RLOO))
        add(("grpo.adv_estimator.name", "reinforce_plus_plus" if plan.method == Method.REINFORCE_PP else "grpo"))
        add(("grpo.use_dynamic_sampling", plan.method == Method.DAPO or a.dynamic_sampling))
        if a.overlong_buffer:
            add(("grpo.reward_shaping.enabled", True))
            add(("grpo.reward_shaping.overlong_buffer_length", a.overlong_buffer))
    if plan.method == Method.PPO:
        add(("ppo.ppo_epochs", a.epochs_per_batch))
    if online:
        add(("loss_fn.reference_policy_kl_penalty", d.kl_coef))
        add(("loss_fn.reference_policy_kl_type", a.kl_estimator))
        add(("loss_fn.ratio_clip_min", a.clip_ratio_low))
        add(("loss_fn.ratio_clip_max", d.clip_high))
        add(("loss_fn.use_kl_in_reward", a.kl_in_reward))
        add(("loss_fn.token_level_loss", a.loss_agg_mode in ("token-mean", "token-sum")))
    if plan.method == Method.DPO:
        add(("dpo.reference_policy_kl_penalty", a.beta if a.beta is not None else 0.05))
    # policy
    add(("policy.model_name", plan.policy.weights_path))
    add(("policy.train_global_batch_size", d.mini_batch * (d.n if online else 1)))
    add(("policy.train_micro_batch_size", d.micro))
    add(("policy.max_total_sequence_length", data.max_seq_len))
    add(("policy.precision", PRECISION[plan.policy.dtype]))
    add(("policy.optimizer.kwargs.lr", a.learning_rate if a.learning_rate is not None else
         (5e-6 if plan.method == Method.SFT else 1e-6)))
    if m.train_backend == "megatron":
        par = plan.policy.parallel
        add(("policy.dtensor_cfg.enabled", False))
        add(("policy.megatron_cfg.enabled", True))
        add(("policy.megatron_cfg.tensor_model_parallel_size", par.tp))
        add(("policy.megatron_cfg.pipeline_model_parallel_size", par.pp))
        add(("policy.megatron_cfg.context_parallel_size", par.cp))
        add(("policy.megatron_cfg.expert_model_parallel_size", par.ep))
        if par.etp:
            add(("policy.megatron_cfg.expert_tensor_parallel_size", par.etp))
        add(("policy.megatron_cfg.activation_checkpointing", m.recompute != "none"))
    else:
        add(("policy.dtensor_cfg.cpu_offload", m.param_offload or m.optimizer_offload))
        add(("policy.dtensor_cfg.activation_checkpointing", m.recompute != "none"))
        add(("policy.dtensor_cfg.tensor_parallel_size", plan.policy.parallel.tp))
        add(("policy.dtensor_cfg.context_parallel_size", plan.policy.parallel.cp))
    add(("policy.dynamic_batching.enabled", data.use_dynamic_bsz))
    if online:
        add(("policy.generation.max_new_tokens", data.max_response_length))
        add(("policy.generation.temperature", a.temperature))
        add(("policy.generation.top_p", a.top_p))
        if r.engine != "vllm":
            carry.drop("rollout.engine", r.engine, "rendered NeMo-RL's vLLM generation backend")
        add(("policy.generation.vllm_cfg.tensor_parallel_size", r.tp))
        add(("policy.generation.vllm_cfg.gpu_memory_utilization", m.rollout_memory_fraction))
        colocated = pool_for(plan, "rollout").name == pool_for(plan, "policy").name
        add(("policy.generation.colocated.enabled", colocated))
        if not colocated:
            rp = pool_for(plan, "rollout")
            add(("policy.generation.colocated.resources.gpus_per_node", rp.gpus_per_node))
            add(("policy.generation.colocated.resources.num_nodes", rp.nodes))
    if m.lora_rank:
        carry.drop("memory.lora_rank", m.lora_rank, "LoRA keys differ per NeMo-RL backend; not rendered")
    # cluster, logging, checkpoints
    add(("cluster.gpus_per_node", d.gpus_per_node))
    add(("cluster.num_nodes", d.nodes))
    add(("logger.log_dir", lg.output_dir.rstrip("/") + "/logs"))
    add(("logger.wandb_enabled", "wandb" in lg.backends))
    add(("logger.tensorboard_enabled", "tensorboard" in lg.backends))
    if "wandb" in lg.backends:
        add(("logger.wandb.project", lg.project))
        add(("logger.wandb.name", lg.experiment))
    add(("checkpointing.checkpoint_dir", run_files(plan, Framework.NEMO_RL).checkpoint_dir))
    if lg.save_freq > 0:
        add(("checkpointing.save_period", lg.save_freq))
    carry.drop("data.train_files", list(data.train_files),
               "NeMo-RL selects data by data.train.dataset_name and a processor; register the files as a "
               "NeMo-RL dataset and set data.train.dataset_name")
    if plan.reward_function is not None:
        carry.drop("reward_function", plan.reward_function.path,
                   "NeMo-RL rewards come from environments (env.<name>); wrap the verifier as an environment")
    return script, base, o
