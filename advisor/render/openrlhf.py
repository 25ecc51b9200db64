"""Plan -> OpenRLHF 0.11.2 command lines (dotted flags since 0.10.2).

PPO family: ``ray job submit ... -- python3 -m openrlhf.cli.train_ppo_ray <flags>``;
DPO / RM / SFT: ``deepspeed --module openrlhf.cli.train_{dpo,rm,sft} <flags>``.
Flags, estimators and the post-parse asserts: research/frameworks.md §2.1-2.2.
"""

from __future__ import annotations

from typing import Any

from advisor.plan import Framework, Method, Plan
from advisor.render.common import Carry, Derived, pool_for
from advisor.resolve import ASYNC_MODES, resolve
from advisor.run_files import run_files
from advisor.render.quoting import RefValue

ESTIMATOR = {
    Method.PPO: "gae", Method.GRPO: "group_norm", Method.DR_GRPO: "dr_grpo", Method.GSPO: "group_norm",
    Method.DAPO: "group_norm", Method.RLOO: "rloo", Method.REINFORCE_PP: "reinforce",
}
MODULES = {Method.DPO: "openrlhf.cli.train_dpo", Method.REWARD_MODEL: "openrlhf.cli.train_rm",
           Method.SFT: "openrlhf.cli.train_sft"}


class Flags:
    """An ordered argv builder: ``--flag value`` pairs, store_true switches, nargs lists."""

    def __init__(self) -> None:
        self.argv: list[str] = []

    def set(self, flag: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool):
            raise TypeError(f"{flag}: use switch() for booleans")
        self.argv.append(flag)
        if isinstance(value, (list, tuple)):
            self.argv.extend(_word(v) for v in value)
        else:
            self.argv.append(_word(value))

    def switch(self, flag: str, on: bool) -> None:
        if on:
            self.argv.append(flag)


def _word(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def command(plan: Plan, d: Derived, carry: Carry, notes: list[str]) -> tuple[str, list[str], list[str]]:
    """(module, launcher words, flags). The PPO family is submitted to Ray by the renderer."""
    if plan.method in MODULES:
        module = MODULES[plan.method]
        f = _offline(plan, d, carry)
        launcher = ["deepspeed"]
        if plan.hardware.nodes > 1:
            launcher += ["--num_nodes", str(plan.hardware.nodes), "--hostfile", "hostfile"]
            notes.append("multi-node DeepSpeed: write a hostfile (one `host slots=N` line per node)")
        launcher += ["--num_gpus", str(plan.hardware.gpus_per_node), "--module", module]
        return module, launcher, f.argv
    module = "openrlhf.cli.train_ppo_ray"
    f = _ppo(plan, d, carry, notes)
    return module, ["python3", "-m", module], f.argv


def _common_ds(f: Flags, plan: Plan, carry: Carry, gc_flag: str) -> None:
    m = plan.memory
    if m.train_backend != "deepspeed":
        carry.drop("memory.train_backend", m.train_backend,
                   "OpenRLHF trains with DeepSpeed; rendered the matching ZeRO stage")
    f.set("--ds.zero_stage", m.zero_stage)
    f.switch("--ds.adam_offload", resolve(plan).offload("policy").optimizer_offload)
    f.set("--ds.param_dtype", "fp16" if plan.policy.dtype == "fp16" else "bf16")
    f.switch(gc_flag, m.recompute != "none")
    if m.lora_rank:
        f.set("--ds.lora.rank", m.lora_rank)
        f.set("--ds.lora.alpha", m.lora_alpha)
    f.switch("--ds.load_in_4bit", m.qlora)
    if plan.policy.parallel.cp > 1:
        f.set("--ds.ring_attn_size", plan.policy.parallel.cp)
    if m.param_offload:
        carry.drop("memory.param_offload", True, "OpenRLHF offloads parameters only via ZeRO-3 settings it does "
                   "not expose as a flag; use --ds.adam_offload and ZeRO-3")
    if m.activation_offload:
        carry.drop("memory.activation_offload", True, "no activation offload flag in OpenRLHF 0.11.2")


def _logging(f: Flags, plan: Plan) -> None:
    lg = plan.logging
    if "wandb" in lg.backends:
        # the key is a reference expanded by the shell at launch, never written into the file
        f.argv += ["--logger.wandb.key", RefValue(lg.wandb_api_key_env)]
        f.set("--logger.wandb.project", lg.project)
        f.set("--logger.wandb.run_name", lg.experiment)
    if "tensorboard" in lg.backends:
        f.set("--logger.tensorboard_dir", run_files(plan, Framework.OPENRLHF).tensorboard_dir)


def _ppo(plan: Plan, d: Derived, carry: Carry, notes: list[str]) -> Flags:
    a, data, m, r = plan.algorithm, plan.data, plan.memory, plan.rollout
    f = Flags()
    method = plan.method
    est = ESTIMATOR[method]
    if method == Method.REINFORCE_PP and d.n > 1:
        est = "reinforce_baseline"
    actor = pool_for(plan, "policy")
    rollout = pool_for(plan, "rollout")
    mode = resolve(plan).mode
    colocated = rollout.name == actor.name and mode == "colocated"
    # placement
    f.set("--actor.num_nodes", actor.nodes)
    f.set("--actor.num_gpus_per_node", actor.gpus_per_node)
    if d.use_ref:
        ref = pool_for(plan, "reference")
        f.set("--ref.num_nodes", ref.nodes)
        f.set("--ref.num_gpus_per_node", ref.gpus_per_node)
    if plan.reward is not None:
        rw = pool_for(plan, "reward")
        f.set("--reward.num_nodes", rw.nodes)
        f.set("--reward.num_gpus_per_node", rw.gpus_per_node)
    if method == Method.PPO:
        cr = pool_for(plan, "critic")
        f.set("--critic.num_nodes", cr.nodes)
        f.set("--critic.num_gpus_per_node", cr.gpus_per_node)
    f.switch("--train.colocate_all", colocated)
    # roles that share a pool without colocate_all share its GPUs only with these switches; otherwise
    # OpenRLHF gives each role group GPUs of its own (more GPUs than the pool has)
    f.switch("--train.colocate_actor_ref", not colocated and d.use_ref
             and pool_for(plan, "reference").name == actor.name)
    f.switch("--train.colocate_critic_reward", not colocated and method == Method.PPO and plan.reward is not None
             and pool_for(plan, "critic").name == pool_for(plan, "reward").name)
    engines = r.engines or max(1, rollout.gpus // r.tp)
    if r.engine != "vllm":
        carry.drop("rollout.engine", r.engine, "OpenRLHF 0.11.2 generates with vLLM only")
    f.set("--vllm.num_engines", engines)
    f.set("--vllm.tensor_parallel_size", r.tp)
    f.set("--vllm.gpu_memory_utilization", m.rollout_memory_fraction)
    f.switch("--vllm.enable_sleep", colocated and r.sleep_level > 0)
    f.switch("--ds.enable_sleep", colocated)
    f.switch("--vllm.enforce_eager", r.enforce_eager)
    f.switch("--train.async_enable", mode in ASYNC_MODES)
    # models
    f.set("--actor.model_name_or_path", plan.policy.weights_path)
    if plan.reference is not None and plan.reference.weights_path != plan.policy.weights_path:
        carry.drop("reference", plan.reference.weights_path, "OpenRLHF loads the reference from the actor weights")
    if plan.reward is not None:
        f.set("--reward.model_name_or_path", plan.reward.weights_path)
        if plan.reward_function is not None:
            carry.drop("reward_function", plan.reward_function.path,
                       "OpenRLHF 0.11.2 scores with the reward model or a remote reward, not both; the reward model is used")
    elif plan.reward_function is not None:
        f.set("--reward.remote_url", plan.reward_function.path)
        if plan.reward_function.name != "reward_func":
            notes.append(f"OpenRLHF calls `reward_func` in {plan.reward_function.path}; "
                         f"define it (e.g. reward_func = {plan.reward_function.name})")
    if method == Method.PPO:
        f.set("--critic.model_name_or_path", (plan.critic or plan.reward or plan.policy).weights_path)
        f.set("--critic.adam.lr", a.critic_learning_rate if a.critic_learning_rate is not None else 9e-6)
    f.switch("--ref.offload", resolve(plan).offload("reference").param_offload)
    # data and batches
    f.set("--data.prompt_dataset", ",".join(data.train_files))
    f.set("--data.input_key", data.prompt_key)
    f.switch("--data.apply_chat_template", True)
    f.set("--data.max_len", data.max_seq_len)
    f.set("--rollout.max_new_tokens", data.max_response_length)
    f.set("--rollout.batch_size", d.train_batch)
    f.set("--rollout.n_samples_per_prompt", d.n)
    f.set("--train.batch_size", d.mini_batch * d.n)
    f.set("--train.micro_batch_size", d.micro)
    f.set("--rollout.micro_batch_size", d.micro)
    if data.use_dynamic_bsz:
        f.switch("--train.dynamic_batch_enable", True)
        if data.max_token_len_per_gpu:
            f.set("--train.max_tokens_per_gpu", data.max_token_len_per_gpu)
    f.switch("--ds.packing_samples", m.remove_padding)
    f.set("--train.max_epochs", a.epochs_per_batch)
    f.set("--train.num_episodes", data.epochs)
    if data.total_steps:
        carry.drop("data.total_steps", data.total_steps, "OpenRLHF stops by --train.num_episodes, not by a step count")
    f.set("--rollout.temperature", a.temperature)
    f.set("--rollout.top_p", a.top_p)
    # algorithm
    f.set("--algo.advantage.estimator", est)
    f.set("--actor.adam.lr", a.learning_rate if a.learning_rate is not None else 1e-6)
    f.set("--algo.kl.init_coef", d.kl_coef)
    f.switch("--algo.kl.use_loss", d.use_ref and not a.kl_in_reward)
    f.set("--algo.kl.estimator", a.kl_estimator)
    if a.clip_ratio_low != d.clip_high:
        f.set("--actor.eps_clip_low_high", [a.clip_ratio_low, d.clip_high])
    else:
        f.set("--actor.eps_clip", a.clip_ratio_low)
    if a.entropy_coeff:
        f.set("--actor.entropy_coef", a.entropy_coeff)
    if a.loss_agg_mode in ("token-mean", "seq-mean-token-mean"):
        f.set("--actor.loss_agg_mode", "seq-mean-token-mean" if method == Method.GSPO and a.loss_agg_mode == "token-mean" else a.loss_agg_mode)
    else:
        carry.drop("algorithm.loss_agg_mode", a.loss_agg_mode, "OpenRLHF supports token-mean and seq-mean-token-mean")
    if method == Method.GSPO:
        f.set("--actor.policy_loss_type", "gspo")
    if method == Method.PPO:
        f.set("--algo.advantage.gamma", a.gamma)
        f.set("--algo.advantage.lambd", a.lam)
    if method == Method.DAPO or a.dynamic_sampling:
        if plan.reward_function is not None and plan.reward is None:
            f.switch("--algo.dynamic_filtering_enable", True)
            f.set("--algo.dynamic_filtering_range", [0, 1])
        else:  # OpenRLHF asserts remote_rm_url or agent_func_path for dynamic filtering
            carry.drop("algorithm.dynamic_sampling", True, "OpenRLHF's dynamic filtering needs a rule-based reward "
                       "(--reward.remote_url with a reward_func file); not enabled with a reward model")
    if a.overlong_buffer:
        f.set("--reward.overlong_buffer_len", a.overlong_buffer)
    # parallel / memory
    _common_ds(f, plan, carry, "--actor.gradient_checkpointing_enable")
    # checkpoints and logs
    f.set("--ckpt.output_dir", plan.logging.output_dir)
    f.set("--ckpt.path", run_files(plan, Framework.OPENRLHF).checkpoint_dir)
    if plan.logging.save_freq > 0:
        f.set("--ckpt.save_steps", plan.logging.save_freq)
    if plan.logging.test_freq > 0:
        f.set("--eval.steps", plan.logging.test_freq)
    _logging(f, plan)
    return f


def _offline(plan: Plan, d: Derived, carry: Carry) -> Flags:
    a, data, m = plan.algorithm, plan.data, plan.memory
    f = Flags()
    f.set("--model.model_name_or_path", plan.policy.weights_path)
    if plan.method == Method.DPO:
        ref = plan.reference.weights_path if plan.reference is not None else None
        f.set("--ref.model_name_or_path", ref)
        f.set("--model.beta", a.beta if a.beta is not None else 0.1)
        f.switch("--ref.offload", m.ref_offload)
    f.set("--data.dataset", ",".join(data.train_files))
    if data.val_files:
        f.set("--eval.dataset", ",".join(data.val_files))
    if plan.method == Method.SFT:
        f.set("--data.input_key", data.prompt_key)
    else:
        f.set("--data.prompt_key", data.prompt_key)
    f.switch("--data.apply_chat_template", True)
    f.set("--data.max_len", data.max_seq_len)
    f.set("--train.batch_size", d.mini_batch)
    f.set("--train.micro_batch_size", d.micro)
    f.set("--train.max_epochs", data.epochs)
    default_lr = {Method.DPO: 5e-7, Method.REWARD_MODEL: 9e-6, Method.SFT: 5e-6}[plan.method]
    f.set("--adam.lr", a.learning_rate if a.learning_rate is not None else default_lr)
    f.switch("--ds.packing_samples", m.remove_padding and data.use_dynamic_bsz)
    _common_ds(f, plan, carry, "--model.gradient_checkpointing_enable")
    f.set("--ckpt.output_dir", plan.logging.output_dir)
    f.set("--ckpt.path", run_files(plan, Framework.OPENRLHF).checkpoint_dir)
    if plan.logging.save_freq > 0:
        f.set("--ckpt.save_steps", plan.logging.save_freq)
    _logging(f, plan)
    if data.total_steps:
        carry.drop("data.total_steps", data.total_steps, "OpenRLHF stops by --train.max_epochs")
    return f
