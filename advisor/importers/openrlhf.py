"""OpenRLHF 0.11.2 command lines (dotted flags) -> Plan; 0.9.5 flat flags are recognised, reported
as legacy and imported under their 0.11.2 spelling.

Semantics kept: roles run in their own Ray groups unless colocated (--train.colocate_all: one
hybrid-engine pool; --train.colocate_actor_ref / --train.colocate_critic_reward); DeepSpeed ZeRO
stage defaults to 2; --ds.adam_offload is CPU Adam; --train.batch_size counts samples (prompts x
n); --rollout.batch_size counts prompts; unset flags take OpenRLHF's defaults (no gradient
checkpointing, no packing, vLLM gpu_memory_utilization 0.95, no sleep)."""

from __future__ import annotations

import math
import re

from advisor.importers import shell
from advisor.importers.builder import PlanBuilder
from advisor.importers.models import ImportResult
from advisor.importers.tables import known_keys, maps
from advisor.plan import Framework

VERSION = "OpenRLHF 0.11.2"
_ENTRY = re.compile(r"openrlhf\.cli\.(\w+)")

DEFAULTS = {
    "memory.train_backend": "deepspeed",
    "memory.zero_stage": 2,
    "memory.recompute": "none",
    "memory.remove_padding": False,
    "memory.rollout_memory_fraction": 0.95,
    "rollout.sleep_level": 0,
    "rollout.tp": 1,
    "algorithm.group_size": 1,
    "data.micro_batch_size_per_gpu": 1,
    "data.train_batch_size": 1024,
    "algorithm.kl_coef": 0.01,
}


def looks_like(text: str) -> bool:
    return bool(_ENTRY.search(text)) or "--actor.model_name_or_path" in text or "--pretrain" in text


def import_openrlhf(text: str) -> ImportResult:
    b = PlanBuilder(Framework.OPENRLHF, VERSION)
    lines = shell.logical_lines(text)
    idx = next((i for i, line in enumerate(lines) if _ENTRY.search(line)), 0)
    env = shell.collect_env(lines, idx)
    words = [shell.expand(w, env) for line in lines[idx:] for w in shell.split_words(line)]
    # `ray job submit --address ... --runtime-env-json ... -- python3 -m openrlhf.cli.X ...`:
    # the flags before the module belong to Ray's job submission, not to OpenRLHF.
    start = next((j for j, w in enumerate(words) if _ENTRY.search(w)), None)
    if start is not None and any(c.isspace() for c in words[start].strip()):
        # `bash -c 'exec python3 -m openrlhf.cli.X ...'` (how a command that references secrets is
        # handed to a remote shell): the whole command is one word; read the words inside it.
        inner = shell.split_words(words[start])
        if inner and inner[0] == "exec":
            inner = inner[1:]
        b.notes.append("bash -c wrapper: read the command inside it")
        words = words[:start] + inner + words[start + 1:]
        start = next((j for j, w in enumerate(words) if _ENTRY.search(w)), None)
    if start is not None and start > 0:
        if any(w == "submit" for w in words[:start]):
            b.notes.append("ray job submit wrapper skipped: " + " ".join(words[:start])[:200])
        _launcher(b, words[:start])
        words = words[start + 1:]
    m = _ENTRY.search(" ".join(lines[idx:idx + 1])) if lines else None
    script = m.group(1) if m else "train_ppo_ray"
    if script not in ("train_ppo_ray",):
        b.notes.append(f"openrlhf.cli.{script}: offline trainer; method from the script name")
        b.set("method", {"train_dpo": "dpo", "train_sft": "sft", "train_rm": "reward_model",
                         "train_kto": "kto"}.get(script, "sft"))
    table = maps()["openrlhf"]
    legacy = maps()["openrlhf_legacy"]
    keys = known_keys()
    flags, store = keys["openrlhf_flags"], keys["openrlhf_store_true"] | keys["openrlhf_legacy_store_true"]
    legacy_flags = keys["openrlhf_legacy_flags"]
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if not w.startswith("--"):
            continue
        flag, _, inline = w.partition("=")
        takes_value = flag not in store and not (flag in legacy and legacy[flag] in store)
        value: str | bool = inline if inline else True
        if takes_value and not inline:
            if i < len(words) and not words[i].startswith("--"):
                value = words[i]
                i += 1
            row = table.get(legacy.get(flag, flag))
            if row and row["as"] == "float_pair" and i < len(words) and not words[i].startswith("--"):
                value = f"{value} {words[i]}"  # argparse nargs=2
                i += 1
        if flag in legacy and flag not in flags:
            new = legacy[flag]
            b.legacy.append(f"{flag} (OpenRLHF 0.9.5 flat flag; 0.11.2: {new})")
            if new == "legacy_prompt_max_len":
                b.extra["prompt_max_len"] = int(str(value))
                b.mapped[flag] = "data.max_prompt_length"
                continue
            flag = new
        elif flag in legacy_flags and flag not in flags:
            b.legacy.append(f"{flag} (OpenRLHF 0.9.5 flat flag with no 0.11.2 mapping here)")
            b.not_understood.append(f"{flag}={value} (legacy flag)")
            continue
        b.apply(flag, value, table.get(flag), flag in flags)
    if b.get("method") is None:
        b.set("method", "ppo" if b.get("critic.path") or "--algo.advantage.estimator" not in b.settings else "grpo")
    offline = b.get("method") in OFFLINE
    for path, value in DEFAULTS.items():
        if b.get(path) is None and not (offline and path in ONLINE_ONLY_DEFAULTS):
            b.set(path, value)
    if offline:
        _resolve_offline(b)
    else:
        _resolve(b)
    _common(b)
    return b.build()


OFFLINE = ("dpo", "sft", "reward_model", "kto")
ONLINE_ONLY_DEFAULTS = ("algorithm.kl_coef", "data.train_batch_size")


def _launcher(b: PlanBuilder, words: list[str]) -> None:
    """``deepspeed --num_gpus N --num_nodes M --module openrlhf.cli.train_X``: the GPUs of an offline run."""
    for j, w in enumerate(words):
        flag, _, inline = w.partition("=")
        value = inline or (words[j + 1] if j + 1 < len(words) else "")
        target = {"--num_gpus": "pool.actor.gpus_per_node", "--num_nodes": "pool.actor.nodes"}.get(flag)
        if target and value.isdigit():
            b.extra[target] = int(value)
            b.mapped[flag] = target


def _resolve_offline(b: PlanBuilder) -> None:
    """OpenRLHF's DPO/RM/SFT trainers: --train.batch_size is the global batch (pairs or samples) of
    one optimizer step; --data.max_len bounds prompt + response together; no KL reference term."""
    ex = b.extra
    if "train_batch_samples" in ex:
        b.set("data.train_batch_size", ex["train_batch_samples"])
        b.set("data.mini_batch_size", ex["train_batch_samples"])
    else:
        b.set("data.train_batch_size", 128)  # train_dpo/train_rm/train_sft default --train.batch_size
        b.notes.append("--train.batch_size not set: OpenRLHF's default 128")
    b.split_total_length("--data.max_len")
    b.set("algorithm.kl_coef", 0.0)
    b.data.pop("critic", None)
    _pools(b)


def _common(b: PlanBuilder) -> None:
    ex = b.extra
    backends = ["console"]
    if any(k.startswith("--logger.wandb.") or k == "--use_wandb" for k in b.settings):
        backends.append("wandb")
    if ex.get("logging.tensorboard"):
        backends.append("tensorboard")
        out = b.get("logging.output_dir") or "outputs"
        if ex["logging.tensorboard"].rstrip("/") != f"{out.rstrip('/')}/tensorboard":
            b.notes.append(f"--logger.tensorboard_dir {ex['logging.tensorboard']}: rendered back as "
                           "<output_dir>/tensorboard")
    b.set("logging.backends", backends)
    ckpt = ex.get("ckpt_path")
    if ckpt is not None:
        out = b.get("logging.output_dir") or "outputs"
        if ckpt.rstrip("/") == f"{out.rstrip('/')}/checkpoints":
            b.notes.append(f"--ckpt.path {ckpt}: <output_dir>/checkpoints, follows logging.output_dir")
        else:
            b.not_understood.append(f"--ckpt.path={ckpt} (no Plan field: checkpoints go to "
                                    "<logging.output_dir>/checkpoints when rendered)")
    if b.get("policy.model") == "unknown":
        b.not_understood.append("--actor.model_name_or_path / --model.model_name_or_path missing: policy model unknown")
    b.notes.append("GPU type is not part of an OpenRLHF command line: hardware.gpu keeps the Plan default (H100)")


def _resolve(b: PlanBuilder) -> None:
    ex = b.extra
    if ex.get("algorithm.use_kl_loss"):
        b.set("algorithm.kl_in_reward", False)
    elif b.get("method") in ("ppo", "grpo", "rloo", "reinforce_pp", "dr_grpo"):
        b.set("algorithm.kl_in_reward", True)
    n = b.get("algorithm.group_size") or 1
    if "train_batch_samples" in ex:
        mini = max(1, ex["train_batch_samples"] // n)
        b.set("data.mini_batch_size", min(mini, b.get("data.train_batch_size")))
        b.notes.append(f"--train.batch_size {ex['train_batch_samples']} samples = {mini} prompts x n={n} per optimizer step")
    total = ex.get("max_total_len")
    gen = b.get("data.max_response_length")
    if "prompt_max_len" in ex:
        b.set("data.max_prompt_length", ex["prompt_max_len"])
    elif total and gen:
        b.set("data.max_prompt_length", max(1, total - gen))
    elif total:
        b.set("data.max_prompt_length", total // 2)
        b.set("data.max_response_length", total - total // 2)
        b.notes.append(f"--data.max_len {total} without --rollout.max_new_tokens: split evenly prompt/response")
    if b.get("method") != "ppo":
        b.data.pop("critic", None)
    _pools(b)
    remote = ex.get("reward_remote")
    if remote and remote.endswith(".py"):
        b.set("reward_function", {"path": remote, "name": "reward_func"})
        b.notes.append(f"--reward.remote_url {remote}: a reward function file; OpenRLHF calls its `reward_func`")
    elif remote:
        b.set("reward_function", {"path": remote, "name": "remote"})
        b.notes.append("--reward.remote_url: a remote reward service (no reward model on GPUs)")
    _variant(b)
    if "eps_clip_low_high" in ex:
        low, high = ex["eps_clip_low_high"]
        b.set("algorithm.clip_ratio_low", low)
        b.set("algorithm.clip_ratio_high", high)
    if ex.get("ds_sleep"):
        b.notes.append("--ds.enable_sleep: DeepSpeed states leave the GPU while vLLM generates (colocate_all); "
                       "the colocated ledger already keeps training and generation phases apart")


def _variant(b: PlanBuilder) -> None:
    """GRPO variants OpenRLHF renders as group_norm plus a switch: GSPO is
    --actor.policy_loss_type gspo, DAPO is --algo.dynamic_filtering_enable."""
    ex = b.extra
    loss = ex.get("loss_mode")
    if b.get("method") == "grpo" and loss == "gspo":
        b.set("method", "gspo")
        b.notes.append("group_norm with --actor.policy_loss_type gspo: GSPO")
    elif b.get("method") == "grpo" and b.get("algorithm.dynamic_sampling"):
        b.set("method", "dapo")
        b.notes.append("group_norm with --algo.dynamic_filtering_enable: DAPO")
    elif loss not in (None, "ppo"):
        b.not_understood.append(f"--actor.policy_loss_type={loss} (no Plan method for it; imported as {b.get('method')})")


def _pool(name: str, gpus: int, gpn: int, roles: list[str]) -> dict:
    nodes = max(1, math.ceil(gpus / gpn))
    return {"name": name, "nodes": nodes, "gpus_per_node": max(1, min(gpus, gpn) if nodes == 1 else gpn),
            "roles": roles}


def _pools(b: PlanBuilder) -> None:
    ex = b.extra

    def size(role: str, dflt: int = 8) -> tuple[int, int]:
        return ex.get(f"pool.{role}.nodes", 1), ex.get(f"pool.{role}.gpus_per_node", dflt)

    an, ag = size("actor")
    gpn = max(ag, 1)
    online = b.get("method") not in ("dpo", "sft", "reward_model", "kto")
    has_critic = b.get("critic.path") is not None and b.get("method") == "ppo"
    has_reward = b.get("reward.path") is not None
    kl = (b.get("algorithm.kl_coef") or 0) > 0
    async_mode = b.get("placement.mode") if b.get("placement.mode") in ("one_step_off", "fully_async") else None
    if ex.get("colocate.all") or not online:
        roles = ["policy"] + (["reference"] if kl else []) + (["critic"] if has_critic else []) + \
            (["reward"] if has_reward else []) + (["rollout"] if online else [])
        b.set("placement", {"mode": async_mode or "colocated", "pools": [_pool("all", an * ag, gpn, roles)]})
        b.set("hardware.gpus_per_node", gpn)
        b.set("hardware.nodes", an)
        return
    pools = []
    actor_roles = ["policy"] + (["reference"] if kl and ex.get("colocate.actor_ref") else [])
    pools.append(_pool("actor", an * ag, gpn, actor_roles))
    if kl and not ex.get("colocate.actor_ref"):
        rn, rg = size("ref")
        pools.append(_pool("ref", rn * rg, gpn, ["reference"]))
    if has_critic:
        cn, cg = size("critic")
        pools.append(_pool("critic", cn * cg, gpn, ["critic"] + (["reward"] if has_reward and ex.get("colocate.critic_reward") else [])))
    if has_reward and not (has_critic and ex.get("colocate.critic_reward")):
        wn, wg = size("reward")
        pools.append(_pool("reward", wn * wg, gpn, ["reward"]))
    engines = ex.get("pool.vllm.engines")
    tp = b.get("rollout.tp") or 1
    if engines:
        pools.append(_pool("vllm", engines * tp, gpn, ["rollout"]))
        b.set("rollout.engines", engines)
    else:
        b.notes.append("--vllm.num_engines not set: generation runs in the actor group (HF generate)")
        b.set("rollout.engine", "hf")
    total = sum(p["nodes"] * p["gpus_per_node"] for p in pools)
    b.set("hardware.gpus_per_node", gpn)
    b.set("hardware.nodes", max(1, math.ceil(total / gpn)))
    b.set("placement", {"mode": async_mode or "split", "pools": pools})
