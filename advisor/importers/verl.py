"""veRL 0.9.1: Hydra overrides from a launch script or command line -> Plan.

Reads ``python3 -m verl.trainer.main_ppo key=value ...`` (also ``+key=value``), expanding the shell
variables the script defines. veRL semantics kept: batch sizes count prompts; the deprecated global
``ppo_micro_batch_size`` is normalised per data-parallel rank (// (world / sp)) like veRL does;
KL is a loss (use_kl_loss) or a reward penalty (use_kl_in_reward); unset keys take veRL 0.9.1's
defaults (rollout TP 2, gpu_memory_utilization 0.5, gradient checkpointing and remove-padding on,
free_cache_engine on)."""

from __future__ import annotations

import re

from advisor.importers import shell
from advisor.importers.builder import PlanBuilder
from advisor.importers.models import ImportResult
from advisor.importers.tables import known_keys, maps
from advisor.plan import Framework, Hardware

VERSION = "veRL 0.9.1"
_OVERRIDE = re.compile(r"^(\+{0,2}|~)([A-Za-z_][A-Za-z0-9_.\-]*)=(.*)$", re.S)
_ENTRY = re.compile(r"verl\.trainer\.main_\w+|main_ppo|verl\.trainer")

DEFAULTS = {  # veRL 0.9.1 ppo_trainer defaults that differ from the Plan's
    "rollout.tp": 2,
    "memory.rollout_memory_fraction": 0.5,
    "memory.recompute": "full",
    "memory.remove_padding": True,
    "rollout.sleep_level": 1,
    "algorithm.group_size": 1,
    "memory.train_backend": "fsdp",
}


def looks_like(text: str) -> bool:
    return bool(_ENTRY.search(text)) or "actor_rollout_ref." in text


def _command_words(text: str) -> tuple[list[str], dict[str, str]]:
    lines = shell.logical_lines(text)
    idx = next((i for i, line in enumerate(lines) if _ENTRY.search(line)), None)
    if idx is None:  # a bare list of overrides
        idx = next((i for i, line in enumerate(lines) if "actor_rollout_ref." in line or "data." in line), 0)
    env = shell.collect_env(lines, idx)
    words = []
    for line in lines[idx:]:
        ws = shell.split_words(line)
        for w in ws:
            if w in ("|", "2>&1", "&&", ";") or w.startswith(("|", ">")):
                return words, env
            words.append(w)
    return words, env


# Entries of the DAPO reward manager's ``+reward.reward_kwargs`` dict (free-form in veRL's schema, so
# not in the key dump): what each one means for the Plan.
_DAPO_REWARD_KWARGS = {
    "overlong_buffer_cfg.len": "algorithm.overlong_buffer",
    "overlong_buffer_cfg.enable": None,
    "overlong_buffer_cfg.penalty_factor": None,
    "overlong_buffer_cfg.log": None,
    "max_resp_len": None,
}


def _torchrun(b: PlanBuilder, w: str) -> None:
    """torchrun's --nnodes / --nproc_per_node: the GPUs of an SFT launch."""
    flag, _, value = w.partition("=")
    target = {"--nnodes": "hardware.nodes", "--nproc_per_node": "hardware.gpus_per_node",
              "--nproc-per-node": "hardware.gpus_per_node"}.get(flag)
    if target and value.isdigit():
        b.set(target, int(value))
        b.mapped[flag] = target


def import_verl(text: str) -> ImportResult:
    b = PlanBuilder(Framework.VERL, VERSION)
    words, env = _command_words(text)
    sft = any("sft_trainer" in w for w in words)
    table = maps()["verl_sft" if sft else "verl"]
    keys = known_keys()["verl_sft_keys" if sft else "verl_keys"]
    if sft:
        b.set("method", "sft")
        b.notes.append("verl.trainer.sft_trainer: SFT (config sft_trainer_engine)")
    for word in words:
        w = shell.expand(word, env)
        if w.startswith("--") and not w.startswith("--config"):
            _torchrun(b, w)
            continue
        if w.startswith("--config-name"):
            name = w.split("=", 1)[1] if "=" in w else ""
            if "megatron" in name:
                b.set("memory.train_backend", "megatron")
                b.mapped["--config-name"] = "memory.train_backend"
            continue
        m = _OVERRIDE.match(w)
        if not m:
            continue
        prefix, key, value = m.groups()
        if prefix == "~":
            b.not_understood.append(f"~{key} (deletion override)")
            continue
        if key.startswith("reward.reward_kwargs.") and not sft:
            _reward_kwarg(b, key, value)
            continue
        b.apply(key, value, table.get(key), key in keys)
    if sft:
        _resolve_sft(b)
        return b.build()
    for path, value in DEFAULTS.items():
        if b.get(path) is None:
            b.set(path, value)
            if path == "rollout.tp" and (b.get("hardware.gpus_per_node") or 8) < value:
                gpn = b.get("hardware.gpus_per_node")
                b.set(path, gpn)
                b.notes.append(f"rollout tensor_model_parallel_size unset: veRL's default {value} exceeds the "
                               f"{gpn} GPU(s) per node (veRL would refuse); imported as {gpn}")
    _resolve(b)
    return b.build()


def _reward_kwarg(b: PlanBuilder, key: str, value: str) -> None:
    sub = key.removeprefix("reward.reward_kwargs.")
    b.settings[key] = value
    if sub not in _DAPO_REWARD_KWARGS:
        b.not_understood.append(f"{key}={value} (a reward_kwargs entry rl-advisor does not know)")
        return
    to = _DAPO_REWARD_KWARGS[sub]
    if to is None:
        b.notes.append(f"{key}={value}: DAPO reward-manager detail, follows the Plan's lengths/overlong_buffer")
        b.mapped[key] = "ignore_dapo_reward_manager_detail"
        return
    b.apply(key, value, {"to": to, "as": "int"}, True)


def _resolve_sft(b: PlanBuilder) -> None:
    """veRL's SFT trainer: data.train_batch_size is the global batch of one optimizer step;
    data.max_length bounds prompt + response together."""
    ex = b.extra
    b.default("memory.train_backend", "fsdp")
    b.default("memory.recompute", "full")
    b.default("memory.remove_padding", True)
    tb = b.get("data.train_batch_size")
    if tb:
        b.set("data.mini_batch_size", tb)
    b.split_total_length("data.max_length")
    b.set("algorithm.kl_coef", 0.0)
    b.set("placement", {"mode": "colocated", "pools": []})
    if b.get("policy.model") == "unknown":
        b.not_understood.append("model.path missing: policy model unknown")
    b.notes.append("GPU type is not part of a veRL config: hardware.gpu keeps the Plan default (H100)")


def _method_variant(b: PlanBuilder) -> None:
    """veRL renders GRPO variants as adv_estimator=grpo plus one switch each: GSPO is
    policy_loss.loss_mode=gspo, DAPO is the dapo reward manager / filter_groups, Dr. GRPO is
    norm_adv_by_std_in_grpo=false."""
    ex = b.extra
    if b.get("method") != "grpo":
        return
    if ex.get("loss_mode") == "gspo":
        b.set("method", "gspo")
        b.notes.append("adv_estimator=grpo with policy_loss.loss_mode=gspo: GSPO")
    elif ex.get("reward_manager") == "dapo" or b.get("algorithm.dynamic_sampling"):
        b.set("method", "dapo")
        b.notes.append("adv_estimator=grpo with the dapo reward manager / filter_groups: DAPO")
    elif ex.get("norm_adv_by_std") is False:
        b.set("method", "dr_grpo")
        b.notes.append("adv_estimator=grpo with norm_adv_by_std_in_grpo=false: Dr. GRPO")
    for key, known in (("loss_mode", ("vanilla", "gspo")), ("reward_manager", ("naive", "dapo"))):
        if ex.get(key) not in (None,) + known:
            b.not_understood.append(f"{key}={ex[key]} (no Plan method for it; imported as {b.get('method')})")


def _placement(b: PlanBuilder) -> None:
    """A standalone rollout (hybrid_engine=false with rollout.nnodes / n_gpus_per_node) is a split
    placement; trainer.v1.trainer_mode says whether generation runs one step ahead."""
    ex = b.extra
    mode = ex.get("trainer_mode")
    if mode in ("separate_async", "colocate_async"):
        b.set("placement.mode", "one_step_off")
        b.notes.append(f"trainer.v1.trainer_mode={mode}: generation overlaps training (one_step_off)")
    elif mode is not None:
        b.not_understood.append(f"trainer.v1.trainer_mode={mode} (no Plan equivalent)")
    if ex.get("hybrid_engine") is False:
        # veRL's global pool is trainer.nnodes x n_gpus_per_node; the standalone rollout pool
        # (rollout.nnodes x n_gpus_per_node) comes on top of it (trainer_base.py resource_pool_spec)
        tg = b.get("hardware.gpus_per_node") or 8
        tn = b.get("hardware.nodes") or 1
        rn, rg = ex.get("pool.rollout.nodes", 1), ex.get("pool.rollout.gpus_per_node", tg)
        node = Hardware.model_fields["gpus_per_node"].default
        if tn == rn and tg + rg <= node:
            b.set("hardware.gpus_per_node", tg + rg)
            b.set("hardware.nodes", tn)
            b.notes.append(f"standalone rollout: {rn} x {rg} rollout GPUs beside {tn} x {tg} training GPUs "
                           f"on the same {tn} node(s) of {tg + rg}")
        else:
            b.set("hardware.gpus_per_node", max(tg, rg))
            b.set("hardware.nodes", tn + rn)
            b.notes.append(f"standalone rollout: {rn} node(s) x {rg} rollout GPUs and {tn} node(s) x {tg} "
                           "training GPUs on separate nodes")
        b.set("placement", {"mode": "one_step_off" if mode == "separate_async" else "split", "pools": [
            {"name": "rollout", "nodes": rn, "gpus_per_node": rg, "roles": ["rollout"]},
            {"name": "train", "nodes": tn, "gpus_per_node": tg,
             "roles": ["policy"] + (["reference"] if (b.get("algorithm.kl_coef") or 0) > 0 else [])}]})


def _resolve(b: PlanBuilder) -> None:
    ex = b.extra
    if b.get("method") is None:
        b.set("method", "ppo")
        b.notes.append("algorithm.adv_estimator not set: veRL's default gae, i.e. PPO")
    _method_variant(b)
    # KL: a loss term or a reward penalty
    if ex.get("algorithm.use_kl_loss"):
        b.set("algorithm.kl_coef", ex.get("algorithm.kl_coef_loss", 0.001))
        b.set("algorithm.kl_in_reward", False)
    elif b.get("algorithm.kl_in_reward"):
        b.set("algorithm.kl_coef", ex.get("algorithm.kl_coef_reward", 0.001))
    else:
        b.set("algorithm.kl_coef", 0.0)
        b.notes.append("no KL (use_kl_loss and use_kl_in_reward both off): no reference model")
    # deprecated global micro batch: veRL divides by world / sp
    if "data.micro_batch_size_global" in ex and b.get("data.micro_batch_size_per_gpu") is None:
        world = (b.get("hardware.gpus_per_node") or 8) * (b.get("hardware.nodes") or 1)
        sp = b.get("policy.parallel.sp") or 1
        per = max(1, ex["data.micro_batch_size_global"] // max(1, world // sp))
        b.set("data.micro_batch_size_per_gpu", per)
        b.notes.append(f"ppo_micro_batch_size={ex['data.micro_batch_size_global']} (global, deprecated) -> "
                       f"{per} sequences per data-parallel rank (veRL divides by world/sp = {world // sp})")
    if ex.get("reward_model_enable") is False:
        b.data.pop("reward", None)
    elif b.get("reward.path") is None:
        b.data.pop("reward", None)
    if b.get("method") != "ppo":
        b.data.pop("critic", None)
    for role in ("critic", "reward"):
        rm = b.get(role)
        if isinstance(rm, dict) and "model" not in rm:
            b.data.pop(role, None)
    _placement(b)
    if b.get("policy.model") == "unknown":
        b.not_understood.append("actor_rollout_ref.model.path missing: policy model unknown")
    b.notes.append("GPU type is not part of a veRL config: hardware.gpu keeps the Plan default (H100); "
                   "set it (budget_memory_from_config gpu=...)")
    mini = b.get("data.mini_batch_size")
    tb = b.get("data.train_batch_size")
    if mini and tb and mini > tb:
        b.set("data.mini_batch_size", tb)
        b.notes.append(f"ppo_mini_batch_size {mini} > train_batch_size {tb}: clipped to {tb}")
