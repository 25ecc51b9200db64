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
from advisor.plan import Framework

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


def import_verl(text: str) -> ImportResult:
    b = PlanBuilder(Framework.VERL, VERSION)
    words, env = _command_words(text)
    table = maps()["verl"]
    keys = known_keys()["verl_keys"]
    for word in words:
        w = shell.expand(word, env)
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
        b.apply(key, value, table.get(key), key in keys)
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


def _resolve(b: PlanBuilder) -> None:
    ex = b.extra
    if b.get("method") is None:
        b.set("method", "ppo")
        b.notes.append("algorithm.adv_estimator not set: veRL's default gae, i.e. PPO")
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
    if b.get("policy.model") == "unknown":
        b.not_understood.append("actor_rollout_ref.model.path missing: policy model unknown")
    b.notes.append("GPU type is not part of a veRL config: hardware.gpu keeps the Plan default (H100); "
                   "set it (budget_memory_from_config gpu=...)")
    mini = b.get("data.mini_batch_size")
    tb = b.get("data.train_batch_size")
    if mini and tb and mini > tb:
        b.set("data.mini_batch_size", tb)
        b.notes.append(f"ppo_mini_batch_size {mini} > train_batch_size {tb}: clipped to {tb}")
