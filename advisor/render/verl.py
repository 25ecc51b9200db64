"""Plan -> veRL 0.9.1 Hydra overrides (``python3 -m verl.trainer.main_ppo key=value ...``).

Keys, defaults and the method recipes are from research/frameworks.md §1 (read from the 0.9.1
wheel): adv_estimator / policy_loss.loss_mode select the algorithm, DAPO adds filter_groups, the
dapo reward manager and ``+reward.reward_kwargs.*`` (not in the schema, hence the ``+``).
"""

from __future__ import annotations

from typing import Any

from advisor.errors import AdvisorError, FieldProblem
from advisor.plan import Framework, Method, Plan
from advisor.render.common import Carry, Derived, pool_for
from advisor.resolve import resolve
from advisor.run_files import run_files

ESTIMATOR = {
    Method.PPO: "gae", Method.GRPO: "grpo", Method.DR_GRPO: "grpo", Method.GSPO: "grpo",
    Method.DAPO: "grpo", Method.RLOO: "rloo", Method.REINFORCE_PP: "reinforce_plus_plus",
}
KL_TYPE = {"k1": "kl", "k2": "mse", "k3": "low_var_kl"}
LOGGERS = {"console": "console", "file": "file", "jsonl": "file", "tensorboard": "tensorboard",
           "wandb": "wandb"}


def config_name(plan: Plan) -> str:
    if plan.method == Method.SFT:
        return "sft_trainer_engine"
    return "ppo_megatron_trainer" if plan.memory.train_backend == "megatron" else "ppo_trainer"


def _loggers(plan: Plan) -> list[str]:
    out: list[str] = []
    for b in plan.logging.backends:
        name = LOGGERS[b]
        if name not in out:
            out.append(name)
    return out


def overrides(plan: Plan, d: Derived, carry: Carry, notes: list[str]) -> list[tuple[str, Any]]:
    if plan.method == Method.SFT:
        return _sft(plan, d, carry)
    return _ppo(plan, d, carry, notes)


def _ppo(plan: Plan, d: Derived, carry: Carry, notes: list[str]) -> list[tuple[str, Any]]:
    a, data, m, r = plan.algorithm, plan.data, plan.memory, plan.rollout
    megatron = m.train_backend == "megatron"
    ar = "actor_rollout_ref"
    o: list[tuple[str, Any]] = []
    add = o.append
    res = resolve(plan)

    add(("algorithm.adv_estimator", ESTIMATOR[plan.method]))
    # data
    add(("data.train_files", list(data.train_files)))
    val = list(data.val_files) or list(data.train_files)
    if not data.val_files:
        notes.append("data.val_files empty: veRL builds a validation set anyway, so the train files "
                     "are passed and val_before_train is off")
        add(("trainer.val_before_train", False))
    add(("data.val_files", val))
    add(("data.prompt_key", data.prompt_key))
    add(("data.max_prompt_length", data.max_prompt_length))
    add(("data.max_response_length", data.max_response_length))
    add(("data.train_batch_size", d.train_batch))
    # model
    add((f"{ar}.model.path", plan.policy.weights_path))
    add((f"{ar}.model.enable_gradient_checkpointing", m.recompute != "none"))
    add((f"{ar}.model.enable_activation_offload", m.activation_offload))
    add((f"{ar}.model.use_remove_padding", m.remove_padding))
    if m.lora_rank:
        add((f"{ar}.model.lora_rank", m.lora_rank))
        add((f"{ar}.model.lora_alpha", m.lora_alpha))
    if m.qlora:
        carry.drop("memory.qlora", True, "veRL 0.9.1 has no 4-bit QLoRA path for the actor; LoRA is rendered in bf16")
    if m.recompute == "selective":
        notes.append("memory.recompute=selective: veRL's FSDP path only has full gradient checkpointing")
    # actor
    add((f"{ar}.actor.optim.lr", a.learning_rate if a.learning_rate is not None else 1e-6))
    add((f"{ar}.actor.ppo_mini_batch_size", d.mini_batch))
    if data.use_dynamic_bsz:
        add((f"{ar}.actor.use_dynamic_bsz", True))
        if data.max_token_len_per_gpu:
            add((f"{ar}.actor.ppo_max_token_len_per_gpu", data.max_token_len_per_gpu))
    else:
        add((f"{ar}.actor.ppo_micro_batch_size_per_gpu", d.micro))
    add((f"{ar}.actor.ppo_epochs", a.epochs_per_batch))
    add((f"{ar}.actor.clip_ratio_low", a.clip_ratio_low))
    add((f"{ar}.actor.clip_ratio_high", d.clip_high))
    add((f"{ar}.actor.entropy_coeff", a.entropy_coeff))
    agg = a.loss_agg_mode
    if plan.method == Method.DR_GRPO:
        agg = "seq-mean-token-sum-norm"
        add(("algorithm.norm_adv_by_std_in_grpo", False))
    elif plan.method == Method.GSPO:
        add((f"{ar}.actor.policy_loss.loss_mode", "gspo"))
        agg = "seq-mean-token-mean" if agg == "token-mean" else agg
    add((f"{ar}.actor.loss_agg_mode", agg))
    use_kl_loss = d.use_ref and not a.kl_in_reward
    add((f"{ar}.actor.use_kl_loss", use_kl_loss))
    if use_kl_loss:
        add((f"{ar}.actor.kl_loss_coef", d.kl_coef))
        add((f"{ar}.actor.kl_loss_type", KL_TYPE[a.kl_estimator]))
    if a.kl_in_reward:
        add(("algorithm.use_kl_in_reward", True))
        add(("algorithm.kl_penalty", KL_TYPE[a.kl_estimator]))
        add(("algorithm.kl_ctrl.kl_coef", d.kl_coef))
    if plan.method == Method.PPO:
        add(("algorithm.gamma", a.gamma))
        add(("algorithm.lam", a.lam))
    if megatron:
        par = plan.policy.parallel
        add((f"{ar}.actor.megatron.tensor_model_parallel_size", par.tp))
        add((f"{ar}.actor.megatron.pipeline_model_parallel_size", par.pp))
        add((f"{ar}.actor.megatron.context_parallel_size", par.cp))
        add((f"{ar}.actor.megatron.expert_model_parallel_size", par.ep))
        if par.etp:
            add((f"{ar}.actor.megatron.expert_tensor_parallel_size", par.etp))
        add((f"{ar}.actor.megatron.param_offload", res.offload("policy").param_offload))
        add((f"{ar}.actor.megatron.optimizer_offload", res.offload("policy").optimizer_offload))
        add((f"{ar}.ref.megatron.param_offload", res.offload("reference").param_offload))
    else:
        add((f"{ar}.actor.strategy", "fsdp2" if m.train_backend == "fsdp2" else "fsdp"))
        if m.train_backend == "deepspeed":
            carry.drop("memory.train_backend", "deepspeed", "veRL trains with FSDP or Megatron; rendered FSDP "
                       "(full shard, the ZeRO-3 equivalent)")
        add((f"{ar}.actor.fsdp_config.param_offload", res.offload("policy").param_offload))
        add((f"{ar}.actor.fsdp_config.optimizer_offload", res.offload("policy").optimizer_offload))
        add((f"{ar}.ref.fsdp_config.param_offload", res.offload("reference").param_offload))
        if plan.policy.parallel.fsdp_size != -1:
            add((f"{ar}.actor.fsdp_config.fsdp_size", plan.policy.parallel.fsdp_size))
        if plan.policy.parallel.sp > 1:
            add((f"{ar}.actor.ulysses_sequence_parallel_size", plan.policy.parallel.sp))
    if m.logits_chunking:
        add((f"{ar}.actor.entropy_from_logits_with_chunking", True))
    # rollout
    engine = r.engine
    if engine == "hf":
        carry.drop("rollout.engine", "hf", "veRL 0.9.1 rollout.name is vllm, sglang or trtllm; rendered vllm")
        engine = "vllm"
    add((f"{ar}.rollout.name", engine))
    add((f"{ar}.rollout.tensor_model_parallel_size", r.tp))
    add((f"{ar}.rollout.gpu_memory_utilization", m.rollout_memory_fraction))
    add((f"{ar}.rollout.n", d.n))
    add((f"{ar}.rollout.temperature", a.temperature))
    add((f"{ar}.rollout.top_p", a.top_p))
    add((f"{ar}.rollout.enforce_eager", r.enforce_eager))
    add((f"{ar}.rollout.free_cache_engine", r.sleep_level > 0))
    add((f"{ar}.rollout.max_num_seqs", r.max_num_seqs))
    add((f"{ar}.rollout.max_num_batched_tokens", r.max_num_batched_tokens))
    if not data.use_dynamic_bsz:
        add((f"{ar}.rollout.log_prob_micro_batch_size_per_gpu", d.micro))
        if d.use_ref:
            add((f"{ar}.ref.log_prob_micro_batch_size_per_gpu", d.micro))
    # placement: a separate rollout pool becomes veRL's standalone rollout resources
    if res.mode != "colocated":
        rp, tp_ = pool_for(plan, "rollout"), pool_for(plan, "policy")
        if rp.name != tp_.name:
            add((f"{ar}.hybrid_engine", False))
            add((f"{ar}.rollout.nnodes", rp.nodes))
            add((f"{ar}.rollout.n_gpus_per_node", rp.gpus_per_node))
            add(("trainer.v1.trainer_mode", "separate_async"))
            o += _separate_async(plan, d, notes)
        else:
            add(("trainer.v1.trainer_mode", "colocate_async"))
            o += _staleness(plan, notes)
    # critic (PPO)
    if plan.method == Method.PPO:
        critic = plan.critic or plan.policy
        add(("critic.model.path", critic.weights_path))
        add(("critic.optim.lr", a.critic_learning_rate if a.critic_learning_rate is not None else 1e-5))
        add(("critic.model.enable_gradient_checkpointing", m.recompute != "none"))
        if not data.use_dynamic_bsz:
            add(("critic.ppo_micro_batch_size_per_gpu", d.micro))
        else:
            add(("critic.use_dynamic_bsz", True))
        if not megatron:
            add(("critic.fsdp.param_offload", res.offload("critic").param_offload))
            add(("critic.fsdp.optimizer_offload", res.offload("critic").optimizer_offload))
    elif plan.critic is not None:
        carry.drop("critic", plan.critic.model, f"{plan.method.value} uses no critic in veRL")
    # reward
    if plan.reward_function is not None:
        add(("reward.custom_reward_function.path", plan.reward_function.path))
        add(("reward.custom_reward_function.name", plan.reward_function.name))
    if plan.reward is not None:
        add(("reward.reward_model.enable", True))
        add(("reward.reward_model.model_path", plan.reward.weights_path))
        add(("reward.reward_model.rollout.name", engine))
    if plan.method == Method.DAPO:
        add(("algorithm.filter_groups.enable", True))
        add(("algorithm.filter_groups.metric", "acc"))
        add(("reward.reward_manager.name", "dapo"))
        if a.overlong_buffer:
            add(("+reward.reward_kwargs.overlong_buffer_cfg.enable", True))
            add(("+reward.reward_kwargs.overlong_buffer_cfg.len", a.overlong_buffer))
            add(("+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor", 1.0))
            add(("+reward.reward_kwargs.overlong_buffer_cfg.log", False))
            add(("+reward.reward_kwargs.max_resp_len", data.max_response_length))
    elif a.dynamic_sampling:
        add(("algorithm.filter_groups.enable", True))
        add(("algorithm.filter_groups.metric", "acc"))
    # trainer: veRL's global resource pool is trainer.nnodes x n_gpus_per_node (trainer_base.py
    # resource_pool_spec); a standalone rollout pool comes on top of it, so this is the training pool
    train_pool = pool_for(plan, "policy")
    add(("trainer.n_gpus_per_node", train_pool.gpus_per_node))
    add(("trainer.nnodes", train_pool.nodes))
    add(("trainer.logger", _loggers(plan)))
    add(("trainer.project_name", plan.logging.project))
    add(("trainer.experiment_name", plan.logging.experiment))
    add(("trainer.default_local_dir", run_files(plan, Framework.VERL).checkpoint_dir))
    add(("trainer.save_freq", plan.logging.save_freq))
    add(("trainer.test_freq", plan.logging.test_freq))
    add(("trainer.total_epochs", data.epochs))
    if data.total_steps:
        add(("trainer.total_training_steps", data.total_steps))
    return o


ONE_STEP_OFF_SPAN = 2
"""``trainer.v1.sampler.max_off_policy_threshold`` for a one-step-off plan: the most weight versions
one trajectory may span (veRL 0.9.1 ``ReplayBufferAsync`` drops a sample when
``global_steps - prompt_step + 1 > threshold``), so 2 = at most one step stale. veRL's default, 8,
is what a fully-async plan gets."""

LOCK_STEP_SPAN = 1
"""The same threshold for a split (lock-step) plan: a trajectory spans one weight version."""


def _separate_async(plan: Plan, d: Derived, notes: list[str]) -> list[tuple[str, Any]]:
    """veRL 0.9.1 ``PPOTrainerSeparateAsync.__init__`` (verl/trainer/ppo/v1/trainer_separate_async.py)
    asserts ``data.train_batch_size == parameter_sync_step * actor.ppo_mini_batch_size`` and a
    checkpoint engine other than ``naive`` (weights go from the training pool to the standalone
    rollout pool over the network). The weights are pushed once per training step: the sync step is
    the number of mini-batches per step."""
    if d.train_batch % d.mini_batch:
        raise AdvisorError([FieldProblem(
            field="data.mini_batch_size", value=d.mini_batch,
            message=(f"veRL's separate_async trainer needs data.train_batch_size ({d.train_batch}) to be a "
                     "multiple of the mini-batch (train_batch_size == parameter_sync_step * ppo_mini_batch_size)"),
            allowed=f"a divisor of {d.train_batch}")])
    sync_step = d.train_batch // d.mini_batch
    notes.append(f"veRL separate_async: weights pushed to the rollout pool every {sync_step} mini-batches "
                 "(one training step) over the NCCL checkpoint engine")
    return [("trainer.v1.separate_async.parameter_sync_step", sync_step),
            ("actor_rollout_ref.rollout.checkpoint_engine.backend", "nccl")] + _staleness(plan, notes)


def _staleness(plan: Plan, notes: list[str]) -> list[tuple[str, Any]]:
    """veRL's v1 async trainers are bounded-staleness async with partial rollouts, not one-step-off:
    a trajectory may span up to ``trainer.v1.sampler.max_off_policy_threshold`` weight versions.

    A split plan (the rollout on its own pool, in lock-step) has no lock-step trainer in veRL 0.9.1:
    its ``sync`` trainer is colocated only (verl/trainer/ppo/v1/trainer_sync.py), and only
    ``separate_async`` serves rollouts from a standalone pool. So split renders separate_async with
    the tightest bound, 1: only samples of prompts issued at the current step are trained, older
    ones are dropped (``ReplayBufferAsync`` drops when ``global_steps - prompt_step + 1 > 1``)."""
    if resolve(plan).mode == "split":
        notes.append(f"split: veRL 0.9.1 has no lock-step trainer for a separate rollout pool; rendered "
                     f"separate_async with trainer.v1.sampler.max_off_policy_threshold={LOCK_STEP_SPAN} "
                     "(samples of earlier steps' prompts are dropped, none is trained stale)")
        return [("trainer.v1.sampler.max_off_policy_threshold", LOCK_STEP_SPAN)]
    if resolve(plan).mode == "one_step_off":
        notes.append(f"one-step-off: trainer.v1.sampler.max_off_policy_threshold={ONE_STEP_OFF_SPAN} (a "
                     "trajectory spans at most two weight versions; older samples are dropped)")
        return [("trainer.v1.sampler.max_off_policy_threshold", ONE_STEP_OFF_SPAN)]
    notes.append("veRL async: samples may span up to 8 weight versions (trainer.v1.sampler."
                 "max_off_policy_threshold, veRL's default)")
    return []


def _sft(plan: Plan, d: Derived, carry: Carry) -> list[tuple[str, Any]]:
    data, m, a = plan.data, plan.memory, plan.algorithm
    o: list[tuple[str, Any]] = [
        ("data.train_files", list(data.train_files)),
        ("data.max_length", data.max_seq_len),
        ("data.train_batch_size", d.train_batch),
        ("data.micro_batch_size_per_gpu", d.micro),
        ("data.use_dynamic_bsz", data.use_dynamic_bsz),
    ]
    if data.val_files:
        o.append(("data.val_files", list(data.val_files)))
    if data.max_token_len_per_gpu:
        o.append(("data.max_token_len_per_gpu", data.max_token_len_per_gpu))
    if data.prompt_key != "prompt":
        o.append(("data.messages_key", data.prompt_key))
    o += [
        ("model.path", plan.policy.weights_path),
        ("model.enable_gradient_checkpointing", m.recompute != "none"),
        ("model.enable_activation_offload", m.activation_offload),
        ("model.use_remove_padding", m.remove_padding),
    ]
    if m.lora_rank:
        o += [("model.lora_rank", m.lora_rank), ("model.lora_alpha", m.lora_alpha)]
    o += [
        ("optim.lr", a.learning_rate if a.learning_rate is not None else 1e-5),
        ("engine.param_offload", m.param_offload),
        ("engine.optimizer_offload", m.optimizer_offload),
        ("engine.strategy", "fsdp2" if m.train_backend == "fsdp2" else "fsdp"),
        ("trainer.logger", _loggers(plan)),
        ("trainer.project_name", plan.logging.project),
        ("trainer.experiment_name", plan.logging.experiment),
        ("trainer.default_local_dir", run_files(plan, Framework.VERL).checkpoint_dir),
        ("trainer.save_freq", plan.logging.save_freq),
        ("trainer.total_epochs", data.epochs),
    ]
    if data.total_steps:
        o.append(("trainer.total_training_steps", data.total_steps))
    if m.train_backend in ("megatron", "deepspeed"):
        carry.drop("memory.train_backend", m.train_backend, "rendered veRL SFT with the FSDP engine")
    return o
