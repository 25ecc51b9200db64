"""Turn published time rows (the `cases:` of published-dev.yaml and its hidden twin) into Plans.

Pure: the caller loads the YAML and passes the parsed dicts. Each adapter recognises one row
shape by its fields (not by case id), so hidden rows of the same shape are read the same way:

- ``step_s`` + ``gpus`` + ``model`` rows (NeMo-RL performance tables): GRPO, colocated for
  on-policy rows, one-step-off on split pools for ``1-step-off`` rows;
- ``mode`` + ``step_s`` rows (veRL one-step-off doc): colocated sync vs a generation/training split;
- ``sync_s`` rows (veRL weight-sync ablation): the weight_sync phase alone;
- ``model_size`` + ``openrlhf_s``/``dschat_s`` rows: PPO with actor, critic, reward, reference;
- ``gpus: "Nx GPU"`` + ``OPT-*: duration`` rows (DeepSpeed-Chat step 3): epoch time, with the
  per-GPU batch the benchmark rule states ("the largest training batch that does not OOM", at
  most 1024 pairs) taken from budget_memory, the one memory model.

Every value that the source does not state is filled by a documented rule and listed in the
row's ``inferred`` so the benchmark can show which predictions rest on assumptions.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, Field

from advisor.plan import (Algorithm, DataSpec, Hardware, MemoryKnobs, Method, ModelSpec, Parallelism, Placement,
                          Plan, Pool, RoleModel, Rollout)


class TimeCase(BaseModel):
    """One published measurement and the Plan that reproduces its setting."""

    case: str
    row: str
    plan: Plan | None = None
    metric: str = Field(description="step_s | sync_s | epoch_s")
    published: float | None = None
    published_tok_s_gpu: float | None = None
    scale: float = Field(1.0, description="Multiply the predicted step by this (e.g. steps per epoch).")
    inferred: list[str] = Field(default_factory=list)
    scored: bool = True
    skip_reason: str = ""
    expert: bool = Field(False, description="The row is a published expert configuration.")
    sync_transport: str | None = Field(None, description="Weight-sync path the row measured (timemodel.TRANSPORTS); "
                                       "None = the layout's default.")
    actor_mfu: float | None = Field(None, gt=0, le=1, description=(
        "The row's own published actor MFU (veRL's perf/mfu/actor: 6N FLOPs of the update over the "
        "update_policy time); when given, the actor update takes that efficiency instead of the fitted one."))


def _gpu_name(text: str) -> str:
    tok = str(text).replace("(", " ").split()[0]
    return tok


def _role(name: str, extra: dict[str, ModelSpec], **kw: Any) -> RoleModel:
    spec = extra.get(name)
    return RoleModel(model=name, spec=spec, **kw)


def _find_gpu(name: str) -> str | None:
    from advisor.catalog import get_gpu
    from advisor.errors import AdvisorError

    for cand in (name, name.replace(" ", "-"), name.split()[0]):
        try:
            return get_gpu(cand).name
        except AdvisorError:
            continue
    return None


def gpu_catalog_node(name: str) -> int:
    """GPUs in the usual server of a catalog card (gpus.yaml gpus_per_node: 8 for HGX boards, 4 for
    GB200 trays), for a source that counts nodes but not GPUs per node."""
    from advisor.catalog import get_gpu

    return get_gpu(name).gpus_per_node


def _min_tp(params: float, hbm_gb: float, frac: float = 0.5) -> int:
    tp = 1
    while params * 2 / tp > frac * hbm_gb * 1e9 and tp < 8:
        tp *= 2
    return tp


def _hbm(gpu: str) -> float:
    from advisor.catalog import get_gpu

    return get_gpu(gpu).hbm_gib


def _params(name: str, extra: dict[str, ModelSpec]) -> float:
    from advisor.catalog import count_params, find_model

    spec = extra.get(name) or find_model(name)
    if spec is None:
        raise KeyError(name)
    return float(spec.params or count_params(spec))


# --------------------------------------------------------------------------- per-row settings

_GEN_KEYS = ("generation_gpus", "gen_gpus", "rollout_gpus", "inference_gpus")
_TRAIN_KEYS = ("training_gpus", "train_gpus", "trainer_gpus", "trainer_ranks")


def _row_split(row: dict[str, Any], default: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """(generation GPUs, training GPUs) a row states: separate keys, or ``split: "4:12"``
    (generation first; the order the veRL and NeMo-RL docs write it)."""
    gen = next((int(row[k]) for k in _GEN_KEYS if row.get(k) not in (None, "")), None)
    train = next((int(row[k]) for k in _TRAIN_KEYS if row.get(k) not in (None, "")), None)
    sp = row.get("split") or row.get("async_split")
    if isinstance(sp, dict):
        gen = gen or next((int(sp[k]) for k in _GEN_KEYS if k in sp), None)
        train = train or next((int(sp[k]) for k in _TRAIN_KEYS if k in sp), None)
    elif isinstance(sp, str):
        parts = [int(x) for x in re.findall(r"\d+", sp)]
        if len(parts) == 2:
            gen, train = parts
    if gen and train:
        return gen, train
    if gen and row.get("gpus"):
        return gen, int(row["gpus"]) - gen
    return default


def _row_mode(text: Any) -> str:
    """The layout a row's mode names: fully_async, one_step_off, split (synchronous, generation and
    training on disjoint GPUs in lock-step, e.g. AReaL v0.1/v0.2's ``vllm.dXmY+dZpW`` allocations)
    or colocated (sync)."""
    t = str(text or "").lower().replace("-", "_").replace(" ", "_")
    if "fully" in t or "stream" in t or "partial" in t:
        return "fully_async"
    if "async" in t or "off" in t or "overlap" in t:
        return "one_step_off"
    if "split" in t or "disjoint" in t:
        return "split"
    return "colocated"


def _pools_for(gen: int, train: int, train_roles: list[str], gpus_per_node: int = 8) -> list[Pool]:
    def pool(name: str, g: int, roles: list[str]) -> Pool:
        n = max(1, math.ceil(g / gpus_per_node))
        return Pool(name=name, nodes=n, gpus_per_node=g // n, roles=roles)

    return [pool("train", train, train_roles), pool("rollout", gen, ["rollout"])]


# --------------------------------------------------------------------------- NeMo-RL shape

_NEMO_RECIPES = {
    # model -> (generations per prompt, Megatron activation checkpointing), read in the performance
    # recipes the table links (NVIDIA-NeMo/RL examples/configs/recipes/llm/performance/grpo-*.yaml;
    # activation_checkpointing defaults to false in examples/configs/grpo_math_1B.yaml)
    "Llama-3.1-8B-Instruct": (32, True),   # grpo-llama3.1-8b-instruct-2n8g.yaml
    "Qwen3-32B": (32, False),              # grpo-qwen3-32b-4n8g.yaml (not set)
    "Qwen3-30B-A3B": (32, False),          # grpo-qwen3-30ba3b-4n8g.yaml (not set)
    "Qwen3-235B-A22B": (32, True),         # grpo-qwen3-235b-16n8g.yaml: 16 prompts x 32
    "DeepSeek-V3": (16, True),             # grpo-deepseek-v3-32n8g.yaml: 32 prompts x 16
}


def _nemo_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    out = []
    hw = case.get("hardware", {})
    gpu = _gpu_name(hw.get("gpu", "H100"))
    for i, row in enumerate(case["outcome"]["rows"]):
        system = str(row.get("system") or hw.get("gpu", ""))   # a table of another system in the same source
        gpu = _gpu_name(system or "H100")
        dgx = "DGX" in system or "NVL" in system
        label = f"{row['model']} {row.get('policy')} {row['gpus']} GPUs"
        if row.get("precision"):
            out.append(TimeCase(case=case["id"], row=label, metric="step_s", published=row["step_s"],
                                scored=False, skip_reason=f"precision {row['precision']} not modelled"))
            continue
        if str(row.get("algorithm", "GRPO")).upper() not in ("GRPO", "DAPO"):
            out.append(TimeCase(case=case["id"], row=label, metric="step_s", published=row["step_s"], scored=False,
                                skip_reason=f"algorithm {row['algorithm']} (agentic multi-turn rollouts with tool "
                                            "execution) not modelled"))
            continue
        inferred = ["mean prompt length = published tokens/step / g_gbs - g_avg_seq",
                    "max response = t_max_seq - mean prompt (the recipes set max_new_tokens = "
                    "max_total_sequence_length; vLLM max_model_len caps prompt + response)",
                    "generations per prompt and activation checkpointing from the model's performance "
                    "recipe (cases._NEMO_RECIPES)"]
        if row.get("from_recipe"):
            inferred.append(f"{', '.join(row['from_recipe'])} from the row's performance recipe "
                            f"({row.get('recipe', 'examples/configs/recipes/llm/performance/')})")
        gpus = int(row["gpus"])
        gpn = int(row.get("gpus_per_node", hw.get("gpus_per_node", 8)))
        gbs = int(row["g_gbs"])
        n, recompute = _NEMO_RECIPES.get(row["model"], (32, True))
        if row["model"] not in _NEMO_RECIPES:
            inferred.append("no recipe read for this model: 32 generations per prompt, activation checkpointing on")
        prompts = gbs // n
        resp = float(row["g_avg_seq"])
        if row.get("tok_s_gpu"):
            tokens_per_seq = row["tok_s_gpu"] * gpus * row["step_s"] / gbs
            prompt = max(1, round(tokens_per_seq - resp))
        else:
            prompt = 128
            inferred.append("mean prompt 128 tokens (no tokens/s/GPU to derive it from)")
        tmax = int(row["t_max_seq"])
        gen_tp = int(str(row.get("gen_tp_pp", "[1,1]")).strip("[]").split(",")[0])
        tp = pp = cp = ep = 1
        if "train_tp_cp_ep_pp" in row:
            tp, cp, ep, pp = (int(x) for x in str(row["train_tp_cp_ep_pp"]).strip("[]").split(","))
        elif "train_layout" in row:
            vals = str(row["train_layout"]).strip("[]").split(",")
            tp, cp, ep, pp = int(vals[0]), int(vals[1]), int(vals[2]), int(vals[5])
            inferred.append("train_layout read as [tp, cp, ep, ?, ?, pp, vpp] (notes: Megatron PP2 for 8B)")
        async_row = "off" in str(row.get("policy", "")) or _row_mode(row.get("mode")) != "colocated"
        nodes = max(1, gpus // gpn)
        if async_row:
            split = _row_split(row)
            if split is None:
                split = (gpus // 2, gpus - gpus // 2)
                inferred.append("1-step-off split: half the GPUs generate, half train (the async performance "
                                "recipes, e.g. async-grpo-llama3.1-8b-instruct-2n8g.yaml: 1T1G)")
            pools = _pools_for(split[0], split[1], ["policy", "reference"], gpn)
            placement = Placement(mode="fully_async", pools=pools)
            inferred.append("NeMo-RL async GRPO generates continuously into a replay buffer (age <= 1): streaming")
            inferred.append("dedicated rollout GPUs: gpu_memory_utilization 0.8 (the async performance recipes)")
        else:
            placement = Placement(mode="colocated", pools=[Pool(name="all", nodes=nodes, gpus_per_node=min(gpn, gpus),
                                                                roles=["policy", "reference", "rollout"])])
        if dgx:
            inferred.append(f"{system} network: one 400 Gb/s NIC per GPU ({gpn} per node)"
                            + ("; the 72-GPU NVLink domain is not modelled beyond the node" if "NVL" in system else ""))
        frac = float(row.get("gpu_memory_utilization", 0.8 if async_row else 0.6))
        plan = Plan(
            name=re.sub(r"[^a-z0-9-]", "-", f"{case['id']}-{i}".lower())[:60], method="grpo", framework="nemo_rl",
            hardware=Hardware(gpu=gpu, gpus_per_node=gpn, nodes=nodes, inter_node_gbps=400 * gpn if dgx else 400),
            policy=_role(row["model"], extra, parallel=Parallelism(tp=tp, pp=pp, cp=cp, ep=ep)),
            algorithm=Algorithm(group_size=n, kl_coef=0.01),
            data=DataSpec(train_batch_size=prompts, mini_batch_size=max(1, int(row.get("t_gbs", gbs)) // n),
                          max_prompt_length=prompt, max_response_length=tmax - prompt,
                          mean_prompt_length=prompt, mean_response_length=int(resp),
                          micro_batch_size_per_gpu=1),
            rollout=Rollout(tp=gen_tp, max_num_seqs=256), placement=placement,
            memory=MemoryKnobs(train_backend="megatron", rollout_memory_fraction=frac,
                               recompute="full" if recompute else "none"))
        out.append(TimeCase(case=case["id"], row=label, plan=plan, metric="step_s", published=row["step_s"],
                            published_tok_s_gpu=row.get("tok_s_gpu"), inferred=inferred, expert=True))
    return out


# --------------------------------------------------------------------------- veRL one-step-off shape


_VERL_OSO_SCRIPTS: dict[tuple[str, str], dict[str, Any]] = {
    # (engine, layout) -> the settings of the recipe script that row ran, read in the recipe as it was
    # committed with the doc (volcengine/verl 503ea75f5, 2025-07-17, recipe/one_step_off_policy/):
    # dapo_7b_math_{fsdp2,megatron}_{colocate,4_12}.sh. All four set gradient checkpointing, gen TP 2,
    # gpu_memory_utilization 0.8, 512 prompts, mini-batch 32; they differ in these keys.
    ("fsdp2", "colocated"): {"path": "dapo_7b_math_fsdp2_colocate.sh", "rollout_n": 12, "offload": True},
    ("fsdp2", "split"): {"path": "dapo_7b_math_fsdp2_4_12.sh", "rollout_n": 12, "offload": False},
    ("megatron", "colocated"): {"path": "dapo_7b_math_megatron_colocate.sh", "rollout_n": 16, "offload": True,
                                "tp": 2, "pp": 2, "micro": 2},
    ("megatron", "split"): {"path": "dapo_7b_math_megatron_4_12.sh", "rollout_n": 12, "offload": False,
                            "tp": 2, "pp": 2, "micro": 2},
}
"""Megatron rows recompute nothing although their scripts set model.enable_gradient_checkpointing=True: at
that commit the Megatron worker (verl/single_controller/base/megatron/worker.py) copies
gradient_checkpointing_kwargs.activations_checkpoint_{method,granularity} into Megatron-Core's
recompute_method / recompute_granularity with dict.get(key, "full"), and ppo_megatron_trainer.yaml sets
those keys to null, so the get returns None: no activation recompute (veRL #2651 later replaced the flag)."""


def _verl_mode_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    """veRL sync-vs-async rows. Settings the case states are used; the rest come from the
    recipe script the row ran and are listed in ``inferred``.

    Which script: a ``script:`` block the case (``settings.script``) or the row carries, with the
    keys of _VERL_OSO_SCRIPTS plus ``path``, ``rollout_tp``, ``sp``, ``fsdp_size``, ``cp``, ``ep``, ``etp``,
    ``gpu_memory_utilization``, ``dynamic_tokens`` (token budget per GPU as a multiple of prompt +
    response; 0 = fixed micro-batches), ``recompute``, ``kl`` (a reference model for a KL loss),
    ``ref_offload`` and ``max_num_seqs`` (the engine's concurrent sequences, 256 when absent); keys
    it does not give come from the one-step-off recipe (_VERL_OSO_SCRIPTS), the only script the doc
    of the first such case names. A row's mode may also name a synchronous ``split`` (generation
    and training on disjoint pools in lock-step), and a row or the case's hardware an
    ``inter_node_gbps`` (the per-node network the source states; 400 when absent).

    A row may carry its own ``gpu`` (a table that mixes GPU types in one source, e.g. EasyR1's
    baselines) and a ``label`` (rows that differ only in model or GPU would otherwise share one)."""
    out = []
    hw = case.get("hardware", {})
    st = case.get("settings", {}) or {}
    gpu = _gpu_name(hw.get("gpu", "H20"))
    gpus = int(hw.get("count", 16))
    split = st.get("async_split", {}) or {}
    gen_gpus = int(split.get("generation_gpus", gpus // 4))
    recipe = {"train_batch_size": 512, "ppo_mini_batch_size": 32, "max_prompt_length": 2048,
              "rollout_tp": 2, "gpu_memory_utilization": 0.8, "mean_prompt_length": 200, "mean_response_length": 1000}
    for i, row in enumerate(case["outcome"]["rows"]):
        if row.get("not_modelled") or row.get("repeats"):
            out.append(TimeCase(case=case["id"], row=row.get("label") or f"{row.get('mode')} {row.get('gpus', '')} GPUs".strip(),
                                metric="step_s", published=row.get("step_s"), scored=False,
                                skip_reason=(f"setting not modelled: {row['not_modelled']}" if row.get("not_modelled")
                                             else f"repeats {row['repeats']}")))
            continue
        own = {**(st.get("script") or {}), **(row.get("script") or {})}
        gpu = _gpu_name(row.get("gpu") or hw.get("gpu", "H20"))
        engine = str(row.get("engine", st.get("engine", "")))
        megatron = "megatron" in engine.lower()
        max_resp = st.get("max_response_length", own.get("max_response_length", 8192))
        resp_max = int(max_resp.get("megatron" if megatron else "fsdp2", 8192)) if isinstance(max_resp, dict) else int(max_resp)
        resp_max = int(row.get("max_response_length", resp_max))
        stated = {**st, **{k: row[k] for k in recipe if k in row}}
        used = {k: stated.get(k, own.get(k, v)) for k, v in recipe.items()}
        if "rollout_tp" not in stated and "rollout_tp" in own:
            used["rollout_tp"] = own["rollout_tp"]
        from_recipe = [k for k in recipe if k not in stated and k not in own]
        row_gpus = int(row.get("gpus", gpus))
        split = _row_split(row, (gen_gpus, gpus - gen_gpus) if row_gpus == gpus else None) or \
            (row_gpus // 4, row_gpus - row_gpus // 4)
        inferred = [f"{', '.join(from_recipe)} from the one-step-off recipe "
                    "(recipe/one_step_off_policy/dapo_7b_math_fsdp2_4_12.sh)"] if from_recipe else []
        if "mean_response_length" in from_recipe:
            inferred.append("mean prompt 200 / response 1000 tokens: not published (DAPO-Math-17k prompts, "
                            "early-training response length of Qwen2.5-Math-7B in the DAPO paper)")
        mode = _row_mode(row.get("mode"))
        script = {**_VERL_OSO_SCRIPTS[("megatron" if megatron else "fsdp2", "colocated" if mode == "colocated" else "split")],
                  **own}
        n = int(row.get("rollout_n", st.get("rollout_n", script["rollout_n"])))
        offload = bool(st.get("offload", script["offload"]))
        dyn = float(script.get("dynamic_tokens", 0 if megatron else 2))
        recompute = str(script.get("recompute", "none" if megatron else "full"))
        kl = bool(script.get("kl", False))
        where = (f"the row's script {script['path']}" if own else
                 f"the row's recipe script recipe/one_step_off_policy/{script['path']} (verl 503ea75f5, "
                 "committed with the doc)")
        inferred.append(f"rollout n={n}, actor offload {'on' if offload else 'off'}"
                        + (f", Megatron TP{script['tp']} PP{script['pp']} CP{script.get('cp', 1)} EP{script.get('ep', 1)}"
                           if megatron else f", Ulysses SP{script.get('sp', 4)} FSDP group {script.get('fsdp_size', 2)}")
                        + (f", dynamic batching with {dyn:g} x (prompt + response) tokens per GPU" if dyn else
                           f", micro-batch {script.get('micro', 1)} (no dynamic batching)")
                        + f", activation recompute {recompute}"
                        + (" (the null checkpointing kwargs: _VERL_OSO_SCRIPTS)" if megatron and recompute == "none" and not own else "")
                        + f", rollout TP{used['rollout_tp']}, gpu_memory_utilization {used['gpu_memory_utilization']}"
                        + f": {where}; " + ("KL loss against a reference model" if kl else "no KL (DAPO recipe)"))
        if own.get("note"):
            inferred.append(str(own["note"]))
        nodes = max(1, math.ceil(row_gpus / 8))
        gpn = row_gpus // nodes
        roles = ["policy", "reference"] if kl else ["policy"]
        if mode != "colocated":
            placement = Placement(mode=mode, pools=_pools_for(split[0], split[1], roles))
        else:
            placement = Placement(mode="colocated", pools=[Pool(name="all", nodes=nodes, gpus_per_node=gpn,
                                                                roles=[*roles, "rollout"])])
        prompt_max = int(used["max_prompt_length"])
        model = row.get("model") or case.get("model", "Qwen2.5-Math-7B")
        net = row.get("inter_node_gbps", hw.get("inter_node_gbps"))
        plan = Plan(
            name=f"verl-osoff-{i}", method=str(row.get("method", st.get("method", "dapo"))).lower(), framework="verl",
            hardware=Hardware(gpu=gpu, gpus_per_node=gpn, nodes=nodes,
                              **({"inter_node_gbps": float(net)} if net else {})),
            policy=_role(model, extra,
                         parallel=Parallelism(tp=script["tp"], pp=script["pp"], cp=int(script.get("cp", 1)),
                                              ep=int(script.get("ep", 1)),
                                              etp=int(script["etp"]) if script.get("etp") else None) if megatron
                         else Parallelism(sp=int(script.get("sp", 4)), fsdp_size=int(script.get("fsdp_size", 2)))),
            algorithm=Algorithm(group_size=n, kl_coef=float(script.get("kl_coef", 0.001)) if kl else 0.0),
            data=DataSpec(train_batch_size=int(used["train_batch_size"]), mini_batch_size=int(used["ppo_mini_batch_size"]),
                          max_prompt_length=prompt_max, max_response_length=resp_max,
                          mean_prompt_length=int(used["mean_prompt_length"]),
                          mean_response_length=min(int(used["mean_response_length"]), resp_max),
                          **({"use_dynamic_bsz": True, "max_token_len_per_gpu": int((prompt_max + resp_max) * dyn)}
                             if dyn else {"micro_batch_size_per_gpu": int(script.get("micro", 1))})),
            rollout=Rollout(tp=int(used["rollout_tp"]), max_num_seqs=int(script.get("max_num_seqs", 256))),
            placement=placement,
            memory=MemoryKnobs(train_backend="megatron" if megatron else "fsdp2", param_offload=offload,
                               optimizer_offload=offload,
                               rollout_memory_fraction=float(used["gpu_memory_utilization"]),
                               recompute=recompute))
        label = row.get("label") or (f"{row.get('mode')} {engine} {row_gpus} GPUs" if own else f"{row.get('mode')} {engine}")
        mfu = row.get("actor_mfu")
        if mfu:
            inferred.append(f"actor update at the row's published actor MFU {float(mfu):g} (veRL perf/mfu/actor), "
                            "not the fitted train efficiency")
        out.append(TimeCase(case=case["id"], row=label, plan=plan, metric="step_s",
                            published=row["step_s"], inferred=inferred, expert=True,
                            actor_mfu=float(mfu) if mfu else None))
        # the published phase breakdown identifies decode, forward and training efficiency separately
        for key, phases in PHASE_KEYS.items():
            if row.get(key):
                out.append(TimeCase(case=case["id"], row=f"{label} {key}", plan=plan, metric="phase:" + ",".join(phases),
                                    published=float(row[key]), inferred=inferred))
    return out


PHASE_KEYS = {
    "generate_sequences_s": ("rollout_prefill", "rollout_decode"),
    "old_log_prob_s": ("old_logprob_forward",),
    "ref_s": ("reference_forward",),
    "values_s": ("critic_forward",),
    "update_critic_s": ("critic_update",),
    "update_actor_s": ("actor_update", "offload_transfer"),
}
"""Published per-phase timings (veRL timing_s/* names) -> the time model's phases."""


# --------------------------------------------------------------------------- weight-sync shape


def _sync_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    out = []
    gpu = _gpu_name(case.get("hardware", {}).get("gpu", "H20"))
    for row in case["outcome"]["rows"]:
        label = f"{row['model']} {row['trainer_ranks']}->{row['rollout_ranks']} ckpt_engine={row.get('checkpoint_engine')}"
        t, r = int(row["trainer_ranks"]), int(row["rollout_ranks"])
        nodes = max(1, (t + r) // 8)

        def pool(name: str, g: int, roles: list[str]) -> Pool:
            return Pool(name=name, nodes=max(1, g // 8), gpus_per_node=min(8, g), roles=roles)

        plan = Plan(name="sync", method="grpo", framework="verl",
                    hardware=Hardware(gpu=gpu, gpus_per_node=8, nodes=nodes),
                    policy=_role(row["model"], extra), algorithm=Algorithm(group_size=8, kl_coef=0.0),
                    rollout=Rollout(tp=min(8, r)),
                    placement=Placement(mode="fully_async", pools=[pool("train", t, ["policy"]), pool("rollout", r, ["rollout"])]),
                    memory=MemoryKnobs(train_backend="megatron", rollout_memory_fraction=0.85))
        out.append(TimeCase(case=case["id"], row=label, plan=plan, metric="sync_s", published=row["sync_s"],
                            inferred=["network 400 Gb/s per node (not published)"],
                            sync_transport="checkpoint_engine" if row.get("checkpoint_engine") else "nccl_broadcast"))
    return out


# --------------------------------------------------------------------------- OpenRLHF vs DS-Chat shape

_SIZE_MODEL = {"7B": "Llama-2-7B", "13B": "Llama-2-13B", "34B": "CodeLlama-34B", "70B": "Llama-2-70B"}


def _source_month(case: dict[str, Any]) -> tuple[int, int] | None:
    """(year, month) a case's measurement dates from, read in its source: the arXiv identifier of
    the cited paper version (``YYMM.NNNNN``: the month of submission) or an ISO ``date``. None when
    the source states neither; the caller then models the framework as it is today."""
    src = case.get("source") or {}
    m = re.search(r"\b(\d{2})(\d{2})\.\d{4,5}\b", str(src.get("paper", "")))
    if m and 1 <= int(m.group(2)) <= 12:
        return 2000 + int(m.group(1)), int(m.group(2))
    d = re.match(r"(\d{4})-(\d{2})", str(src.get("date", "")))
    return (int(d.group(1)), int(d.group(2))) if d else None


_OPENRLHF_ERAS: dict[str, tuple[tuple[int, int], str]] = {
    # behaviour of OpenRLHF's Ray PPO code before the month given (read in OpenRLHF/OpenRLHF's history)
    "engine_per_rank": ((2024, 11), "each actor rank sends its prompts to vLLM engine rank % num_engines "
                        "(openrlhf/trainer/ppo_utils/experience_maker.py _generate_vllm, e.g. at 391e1de4, "
                        "2024-05-18, the commit that published the table; no check that engines <= actor ranks "
                        "until db99807d, 2024-10-30, and #511 769b1360, 2024-11-09, spread requests over all "
                        "engines): engines beyond the actor ranks receive nothing"),
    "vllm_default_memory": ((2025, 2), "create_vllm_engines passes no gpu_memory_utilization (until #677 "
                            "c10f02bd, 2025-02-07): vLLM's default 0.9"),
}
"""OpenRLHF code behaviour that changed after a time-row source measured it, with the change's commit."""


def _openrlhf_era(case: dict[str, Any], what: str) -> str | None:
    """The note of an ``_OPENRLHF_ERAS`` behaviour if the case's measurement predates its change."""
    when = _source_month(case)
    until, note = _OPENRLHF_ERAS[what]
    return note if when is not None and when < until else None


def _ppo_plan(name: str, model: str, gpu: str, gpus: int, *, framework: str, engine: str, pools: list[Pool],
              mode: str, rollout_tp: int, offload: bool, extra: dict[str, ModelSpec], prompt: int, resp_max: int,
              resp_mean: int, batch: int, mini: int, micro: int = 4, critic: str | None = None, reward: str | None = None,
              frozen_offload: bool = False) -> Plan:
    return Plan(
        name=name, method="ppo", framework=framework,
        hardware=Hardware(gpu=gpu, gpus_per_node=min(8, gpus), nodes=max(1, gpus // 8), inter_node_gbps=1600),
        policy=_role(model, extra), reference=_role(model, extra, param_offload=frozen_offload),
        critic=_role(critic or model, extra), reward=_role(reward or model, extra, param_offload=frozen_offload),
        algorithm=Algorithm(group_size=1, kl_coef=0.01),
        data=DataSpec(train_batch_size=batch, mini_batch_size=mini, max_prompt_length=prompt, max_response_length=resp_max,
                      mean_prompt_length=prompt, mean_response_length=resp_mean, micro_batch_size_per_gpu=micro),
        rollout=Rollout(engine=engine, tp=rollout_tp, max_num_seqs=256), placement=Placement(mode=mode, pools=pools),
        memory=MemoryKnobs(train_backend="deepspeed", zero_stage=3, optimizer_offload=offload,
                           rollout_memory_fraction=0.9 if engine == "hf" else 0.5, recompute="full"))


def _openrlhf_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    out = []
    gpu = _gpu_name(case.get("hardware", {}).get("gpu", "A800"))
    hbm = _hbm(gpu)
    for row in case["outcome"]["rows"]:
        model = _SIZE_MODEL.get(str(row["model_size"]))
        gpus = int(row["gpus"])
        if model is None:
            continue
        tp = _min_tp(_params(model, extra), hbm, 0.4)
        offload = _params(model, extra) > 30e9
        common = dict(extra=extra, prompt=1024, resp_max=1024, resp_mean=512, batch=1024, mini=128, offload=offload, micro=1)
        inferred = ["models Llama-2 7B/13B/70B, CodeLlama-34B; critic and reward the same size",
                    "prompt 1024, generate 1024, mean response 512 (not published)",
                    "rollout_batch 1024 prompts, train_batch 128 (8 optimizer steps)",
                    f"vLLM TP{tp}: smallest TP with weights <= 40% of HBM", "Adam offload above 30B",
                    "micro train batch 1 (the period's example scripts)", "network 8 x 200 Gb/s per node (A100-class cluster)"]
        # OpenRLHF: the same README's tuning guide for this table ("for the 70B model with 32 A100, allocate 16+
        # A100 to the vLLM engine, 8 to the actor and the last 8 to the critic, with --colocate_critic_reward,
        # --colocate_actor_ref and --ref_reward_offload"), scaled to the row's GPU count: vLLM 1/2,
        # actor+ref 1/4, critic+reward 1/4
        quarter = gpus // 4

        def pool(name: str, g: int, roles: list[str]) -> Pool:
            return Pool(name=name, nodes=max(1, g // 8), gpus_per_node=min(8, g), roles=roles)

        pools = [pool("actor", quarter, ["policy", "reference"]), pool("critic", quarter, ["critic", "reward"]),
                 pool("rollout", gpus - 2 * quarter, ["rollout"])]
        p = _ppo_plan(f"openrlhf-{row['model_size'].lower()}", model, gpu, gpus, framework="openrlhf", engine="vllm",
                      pools=pools, mode="split", rollout_tp=tp, frozen_offload=True, **common)
        era = []
        per_rank = _openrlhf_era(case, "engine_per_rank")
        if per_rank:
            engines = min((gpus - 2 * quarter) // tp, quarter)
            p = p.model_copy(update={"rollout": p.rollout.model_copy(update={"engines": engines})})
            era.append(f"{engines} vLLM engines generate: {per_rank}")
        mem = _openrlhf_era(case, "vllm_default_memory")
        if mem:
            p = p.model_copy(update={"memory": p.memory.model_copy(update={"rollout_memory_fraction": 0.9})})
            era.append(mem)
        out.append(TimeCase(case=case["id"], row=f"OpenRLHF {row['model_size']} {gpus} GPUs", plan=p, metric="step_s",
                            published=row["openrlhf_s"], expert=True,
                            inferred=inferred + ["roles split as the README's tuning guide for 70B on 32 GPUs, scaled: "
                                                 "vLLM 1/2, actor+ref 1/4, critic+reward 1/4, ref/reward offloaded"]
                            + [f"code of the source's time ({'-'.join(map(str, _source_month(case) or ()))}): {e}"
                               for e in era]))
        # "Optimized DSChat": the README states Adam offload and RM/Ref offload for every size
        pools = [Pool(name="all", nodes=max(1, gpus // 8), gpus_per_node=8,
                      roles=["policy", "reference", "critic", "reward", "rollout"])]
        p = _ppo_plan(f"dschat-{row['model_size'].lower()}", model, gpu, gpus, framework="openrlhf", engine="hf",
                      pools=pools, mode="colocated", rollout_tp=tp, frozen_offload=True,
                      **{**common, "offload": True})
        out.append(TimeCase(case=case["id"], row=f"DS-Chat {row['model_size']} {gpus} GPUs", plan=p, metric="step_s",
                            published=row["dschat_s"],
                            inferred=[i for i in inferred if i != "Adam offload above 30B"]
                            + ["DS-Chat hybrid engine = colocated, static-batch generation",
                               "Adam offload and RM/Ref offload for every size (the README's 'Optimized DSChat')"]))
    return out


# --------------------------------------------------------------------------- OpenRLHF early throughput shape


def _openrlhf_throughput_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    """Samples/s/GPU rows of OpenRLHF's early README (Ray, DeepSpeed ZeRO-2 + Adam offload, HF
    generate, 4 actor + 2 critic + 1 reward + 1 reference GPUs on 8 A100). The published
    throughput becomes the time of a 1024-prompt step, the same ratio to the prediction."""
    out = []
    hw = case.get("hardware", {})
    gpu = _find_gpu(_gpu_name(hw.get("gpu", "A100")) + "-80G") or _gpu_name(hw.get("gpu", "A100"))
    gpus = int(hw.get("count", 8))
    st = case.get("settings", {}) or {}
    for row in case["outcome"]["rows"]:
        model = row["model"]
        lo, _, hi = str(row.get("generation_length", "")).partition("-")
        resp_mean = int((float(lo) + float(hi or lo)) / 2)
        rollout_micro, _, train_micro = str(row.get("micro_batch_rollout_train", "8/4")).partition("/")
        batch = 1024
        max_seq = int(st.get("max_sequence_length", 2048))
        pools = [Pool(name="actor", nodes=1, gpus_per_node=4, roles=["policy", "rollout"]),
                 Pool(name="critic", nodes=1, gpus_per_node=2, roles=["critic"]),
                 Pool(name="reward", nodes=1, gpus_per_node=1, roles=["reward"]),
                 Pool(name="ref", nodes=1, gpus_per_node=1, roles=["reference"])]
        plan = Plan(
            name=re.sub(r"[^a-z0-9-]", "-", f"orlhf-early-{model}".lower())[:60], method="ppo", framework="openrlhf",
            hardware=Hardware(gpu=gpu, gpus_per_node=gpus, nodes=1),
            policy=_role(model, extra), reference=_role(model, extra), critic=_role(model, extra),
            reward=_role(model, extra), algorithm=Algorithm(group_size=1, kl_coef=0.01),
            data=DataSpec(train_batch_size=batch, mini_batch_size=128, max_prompt_length=max_seq // 2,
                          max_response_length=int(float(hi or lo)), mean_prompt_length=max_seq // 4,
                          mean_response_length=resp_mean, micro_batch_size_per_gpu=int(train_micro)),
            rollout=Rollout(engine="hf", tp=1, max_num_seqs=int(rollout_micro)),
            placement=Placement(mode="split", pools=pools),
            memory=MemoryKnobs(train_backend="deepspeed", zero_stage=int(st.get("zero_stage", 2)),
                               optimizer_offload=bool(st.get("adam_offload", True)), recompute="full",
                               rollout_memory_fraction=0.9))
        thr = float(row["throughput_samples_per_gpu_s"])
        out.append(TimeCase(case=case["id"], row=f"OpenRLHF early {model} 8 GPUs", plan=plan, metric="step_s",
                            published=batch / (thr * gpus),
                            inferred=["1024 prompts per step, 128 per optimizer step (the period's scripts)",
                                      "prompt 1024 + generate 1024 budget, mean prompt 512 (not published)",
                                      "mean response = middle of the published generation-length range, "
                                      "its upper end the longest response (the 1024 budget is not reached)",
                                      "HF generate on the actor GPUs, rollout micro-batch = concurrent sequences",
                                      "published samples/s/GPU turned into the seconds of a 1024-prompt step"]))
    return out


def _unscored_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    """Rows with no time of a setting the model can rebuild: each listed with its reason."""
    out = []
    gpu = str((case.get("hardware") or {}).get("gpu", "") or "")
    for i, row in enumerate(case["outcome"]["rows"]):
        label = str(row.get("model") or row.get("what") or i)[:60]
        if row.get("not_read"):
            why = f"not read: {row['not_read']}"
        elif "best_colocate_speedup" in row or "finding" in row:
            why = ("a speedup ratio between two modes" if "best_colocate_speedup" in row else "a qualitative finding")
            why += ("; the GPU type is not stated" if not gpu or "unspecified" in gpu else "")
        elif "result" in row:
            why = f"prose result, no step time: {str(row['result'])[:80]}"
        else:
            why = "row shape not understood: " + ", ".join(sorted(map(str, row)))[:160]
        out.append(TimeCase(case=case["id"], row=label, metric="step_s", scored=False, skip_reason=why))
    return out


# --------------------------------------------------------------------------- generic shape

STEP_KEYS = ("step_s", "step_time_s", "time_per_step_s", "seconds_per_step", "s_per_step",
             "step_time", "time_per_step", "step_min", "step_time_min", "minutes_per_step")
"""Row keys that carry one step's wall-clock time (the generic adapter reads the first present): in
seconds, unless the key says minutes (``_min``, ``minutes_``) or the value names its unit ("7 min",
"1.5 h", "850 ms"; ``_step_seconds``)."""

THROUGHPUT_KEYS = ("tokens_per_s_per_gpu", "tok_s_gpu", "tokens_per_gpu_per_s", "throughput_tokens_per_s_per_gpu",
                   "perf/throughput")
"""Row keys that carry tokens per second per GPU (veRL's perf/throughput: prompt and response tokens of the
step over its time and the GPUs), read as a step time when the row states prompts, group and mean lengths."""

_TIME_UNITS = (("ms", 0.001), ("millisecond", 0.001), ("msec", 0.001), ("s", 1.0), ("sec", 1.0), ("second", 1.0),
               ("m", 60.0), ("min", 60.0), ("minute", 60.0), ("h", 3600.0), ("hr", 3600.0), ("hour", 3600.0))


def _step_seconds(value: Any, key: str) -> float:
    """One step's time in seconds from what a source wrote: a number in the key's unit (seconds, or
    minutes for a ``_min``/``minutes_`` key), or text whose first number carries its own unit
    ("~420 (7 min)" is 420 s, "7 min" 420 s, "1.5 h" 5400 s, "850 ms" 0.85 s)."""
    minutes = key.endswith("_min") or key.startswith("minutes")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) * (60.0 if minutes else 1.0)
    m = re.match(r"\s*~?\s*([0-9][0-9,]*\.?[0-9]*)\s*([a-zA-Z]+)?", str(value))
    if not m:
        raise ValueError(f"{key}: {value!r} is not a time")
    number = float(m.group(1).replace(",", ""))
    word = (m.group(2) or "").lower()
    if not word:
        return number * (60.0 if minutes else 1.0)
    units = dict(_TIME_UNITS)
    scale = units.get(word, units.get(word.rstrip("s")))  # "mins", "hours", "secs"
    if scale is None:
        raise ValueError(f"{key}: {value!r} has a unit that is not a time ({m.group(2)!r}; use s, ms, min or h)")
    return number * scale

_ALIASES: dict[str, tuple[str, ...]] = {
    # Plan field <- the setting names sources write (veRL data.*/rollout.*, the veRL recipes' shell
    # variables, OpenRLHF flags, TRL GRPOConfig fields, NeMo-RL grpo.*); a framework-specific meaning
    # (OpenRLHF's prompts per step are its rollout_batch_size) is read in _generic_rows
    "train_batch_size": ("train_batch_size", "train_prompt_bsz", "num_prompts_per_step", "prompts_per_step",
                         "rollout_batch_size", "global_batch_prompts"),
    "mini_batch_size": ("ppo_mini_batch_size", "train_prompt_mini_bsz", "mini_batch_size"),
    "group_size": ("rollout_n", "n", "n_resp_per_prompt", "n_samples_per_prompt", "num_generations",
                   "num_generations_per_prompt", "group_size"),
    "max_prompt_length": ("max_prompt_length", "prompt_max_len", "max_input_length", "max_prompt_len"),
    "max_response_length": ("max_response_length", "generate_max_len", "max_completion_length",
                            "max_new_tokens", "max_generation_length", "response_length"),
    "mean_prompt_length": ("mean_prompt_length", "prompt_length_mean", "avg_prompt_length"),
    "mean_response_length": ("mean_response_length", "response_length_mean", "avg_response_length",
                             "mean_generation_length"),
    "rollout_tp": ("rollout_tp", "gen_tp", "vllm_tensor_parallel_size", "vllm_tp", "rollout_tensor_parallel_size"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "vllm_gpu_memory_utilization", "vllm_gpu_memory_util"),
}

_FRAMEWORKS = (("openrlhf", "openrlhf"), ("nemo", "nemo_rl"), ("trl", "trl"), ("verl", "verl"))


def _setting(merged: dict[str, Any], field: str) -> Any:
    return next((merged[k] for k in _ALIASES[field] if merged.get(k) not in (None, "")), None)


def _number(value: Any, field: str) -> float:
    """A number a source wrote, possibly as text ("~420 (7 min)", "8K", "4,096")."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.match(r"\s*~?\s*([0-9][0-9,]*\.?[0-9]*)\s*([kK])?", str(value))
    if not m:
        raise ValueError(f"{field}: {value!r} is not a number")
    return float(m.group(1).replace(",", "")) * (1024 if m.group(2) and "length" in field else
                                                 1000 if m.group(2) else 1)


def _generic_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    """Rows of any other shape that carry a step time (``STEP_KEYS``) of a setting the case or the
    row states: model, GPU type and count, batch and lengths under the names the frameworks use
    (``_ALIASES``), a ``mode`` or ``split`` for async layouts. What neither states is the Plan
    default and is listed in ``inferred``; a model or GPU type the catalog lacks lists the row with
    that reason (advisor.catalog), never a guess."""
    out = []
    hw = case.get("hardware") or {}
    st = case.get("settings") or {}
    fw_text = str(case.get("framework", "")).lower()
    framework = next((fw for word, fw in _FRAMEWORKS if word in fw_text), "verl")
    for i, row in enumerate(case["outcome"]["rows"]):
        merged = {**st, **row}
        key = next((k for k in STEP_KEYS if row.get(k) not in (None, "")), None)
        published = _step_seconds(row[key], key) if key else 0.0
        model = str(row.get("model") or case.get("model") or "")
        if not model or (extra.get(model) is None and _params_or_none(model) is None):
            raise ValueError(f"model {model or '(none)'!r} is not in the model catalog")
        gpu_text = row.get("gpu") or hw.get("gpu") or ""
        gpu = _find_gpu(_gpu_name(gpu_text)) if gpu_text else None
        if gpu is None:
            raise ValueError(f"GPU type {gpu_text or '(not stated)'!r} is not in the GPU catalog")
        per_node = row.get("gpus_per_node") or hw.get("gpus_per_node")
        nodes_stated = row.get("nodes") or row.get("num_nodes") or hw.get("nodes") or hw.get("num_nodes")
        gpus = int(_number(row.get("gpus") or row.get("gpu_count") or row.get("num_gpus") or hw.get("count")
                           or hw.get("num_gpus") or 0, "gpus"))
        if gpus <= 0 and nodes_stated:  # "4 nodes" of the catalog card's usual server when not stated
            gpus = int(_number(nodes_stated, "nodes")) * int(_number(per_node or gpu_catalog_node(gpu), "gpus_per_node"))
        if gpus <= 0:
            raise ValueError("the GPU count is not stated (row 'gpus' or 'nodes', or hardware.count or hardware.nodes)")
        method = str(row.get("method") or case.get("method") or "grpo").lower()
        method = next((m.value for m in Method if re.match(rf"{m.value}\b", method.replace("-", "_"))), "grpo")
        inferred = []
        n = _setting(merged, "group_size")
        batch = _setting(merged, "train_batch_size")
        mini = _setting(merged, "mini_batch_size")
        group = int(_number(n, "group_size")) if n is not None else (1 if method == "ppo" else 8)
        if n is None:
            inferred.append(f"group size {group} (not stated)")
        if batch is None:
            inferred.append("256 prompts per step (the Plan default; not stated)")
        data: dict[str, Any] = {}
        for field in ("max_prompt_length", "max_response_length", "mean_prompt_length", "mean_response_length"):
            v = _setting(merged, field)
            if v is not None:
                data[field] = int(_number(v, field))
            elif field.startswith("max_"):
                inferred.append(f"{field} {DataSpec.model_fields[field].default} (the Plan default; not stated)")
        if "mean_response_length" in data:
            data["mean_response_length"] = min(data["mean_response_length"], data.get("max_response_length", 1024))
        if batch is not None:
            prompts = int(_number(batch, "train_batch_size"))
            if framework == "openrlhf" and "rollout_batch_size" in merged:
                prompts = int(_number(merged["rollout_batch_size"], "rollout_batch_size"))
            data["train_batch_size"] = prompts
        if mini is not None:
            data["mini_batch_size"] = min(int(_number(mini, "mini_batch_size")), data.get("train_batch_size", 256))
        if key is None:  # a throughput row: its step time from veRL's perf/throughput definition
            tkey = next(k for k in THROUGHPUT_KEYS if row.get(k) not in (None, ""))
            need = [f for f in ("train_batch_size", "mean_prompt_length", "mean_response_length") if f not in data]
            if need:
                raise ValueError(f"{tkey} {row[tkey]!r} is tokens/s/GPU; its step time needs {', '.join(need)}, "
                                 "which the source does not state")
            published = (data["train_batch_size"] * group * (data["mean_prompt_length"] + data["mean_response_length"])
                         / (_number(row[tkey], tkey) * gpus))
            inferred.append(f"step time from {tkey}: prompts x group x (mean prompt + mean response) / "
                            "(tokens/s/GPU x GPUs), veRL's perf/throughput definition")
        tp = _setting(merged, "rollout_tp")
        util = _setting(merged, "gpu_memory_utilization")
        gpn = int(_number(per_node, "gpus_per_node")) if per_node else min(gpus, gpu_catalog_node(gpu))
        nodes = max(1, math.ceil(gpus / gpn))
        gpn = gpus // nodes
        mode = _row_mode(row.get("mode") or st.get("mode") or "")
        split = _row_split(row)
        if mode == "colocated" and split:
            mode = "split"
        if mode == "colocated":
            placement = Placement(mode="colocated")
        else:
            if not split:
                inferred.append("a quarter of the GPUs generate (the split is not stated)")
                split = (max(1, gpus // 4), gpus - max(1, gpus // 4))
            placement = Placement(mode=mode, pools=_pools_for(split[0], split[1], ["policy"]))
        plan = Plan(name=re.sub(r"[^a-z0-9-]", "-", f"{case['id']}-{i}".lower())[:60], method=method,
                    framework=framework, hardware=Hardware(gpu=gpu, gpus_per_node=gpn, nodes=nodes),
                    policy=_role(model, extra), algorithm=Algorithm(group_size=group),
                    data=DataSpec(**data), rollout=Rollout(tp=int(_number(tp, "rollout_tp")) if tp else 1),
                    placement=placement,
                    memory=MemoryKnobs(**({"rollout_memory_fraction": float(_number(util, "gpu_memory_utilization"))}
                                          if util is not None else {})))
        if tp is None:
            inferred.append("rollout TP 1 (not stated)")
        label = str(row.get("label") or " ".join(str(x) for x in (row.get("model"), row.get("mode"),
                                                                     f"{gpus} GPUs") if x))[:60]
        out.append(TimeCase(case=case["id"], row=label, plan=plan, metric="step_s", published=published,
                            inferred=inferred + ["read by the generic row adapter (no source-specific reading)"]))
    return out


def _params_or_none(name: str) -> float | None:
    try:
        return _params(name, {})
    except KeyError:
        return None


# --------------------------------------------------------------------------- DS-Chat e2e shape


def _duration_s(text: str) -> float:
    m = re.match(r"\s*([\d.]+)\s*(days?|hrs?|hours?|minutes?|mins?)", str(text))
    if not m:
        raise ValueError(text)
    v, unit = float(m.group(1)), m.group(2)
    return v * (86400 if unit.startswith("day") else 3600 if unit.startswith("h") else 60)


DSCHAT_SCRIPTS: dict[tuple[str, str], dict[str, Any]] = {
    # DeepSpeed-Chat's step-3 example scripts (microsoft/DeepSpeedExamples,
    # applications/DeepSpeed-Chat/training/step3_rlhf_finetuning/training_scripts/): the settings
    # the benchmark's model sizes run with where full fine-tuning would not fit the scope. All use
    # ZeRO-3 (ZeRO-0 on one GPU) and actor gradient checkpointing, as _ppo_plan assumes.
    ("OPT-1.3B", "single_gpu"): {"path": "opt/single_gpu/run_1.3b.sh"},
    ("OPT-1.3B", "single_node"): {"path": "opt/single_node/run_1.3b.sh"},
    ("OPT-6.7B", "single_node"): {"path": "opt/single_node/run_6.7b.sh"},
    ("OPT-6.7B", "single_gpu"): {"path": "opt/single_gpu/run_6.7b_lora.sh", "lora_dim": 128},
    ("OPT-13B", "single_node"): {"path": "opt/single_node/run_13b.sh", "lora_dim": 128, "inference_tp": 2},
    ("OPT-30B", "single_node"): {"path": "opt/single_node/run_30b_lora.sh", "lora_dim": 128},
    ("OPT-66B", "multi_node"): {"path": "opt/multi_node/run_66b.sh", "lora_dim": 128, "inference_tp": 8},
}


def _dschat_rows(case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    s = case.get("settings", {})
    prompt, gen = int(s.get("prompt_tokens", 256)), int(s.get("generated_tokens", 256))
    queries = int(s.get("queries", 131900))
    batch = 1024
    out = []
    for row in case["outcome"]["rows"]:
        m = re.match(r"(\d+)x\s+(.+)", str(row["gpus"]))
        if not m:
            continue
        count, gname = int(m.group(1)), m.group(2).strip()
        gpu = _find_gpu(gname)
        for key, val in row.items():
            if not key.startswith("OPT-"):
                continue
            label = f"DS-Chat {key} on {row['gpus']}"
            model = key.replace("13.2B", "13B")
            if gpu is None:
                out.append(TimeCase(case=case["id"], row=label, metric="epoch_s", published=_duration_s(val),
                                    scored=False, skip_reason=f"GPU {gname!r} not in the catalog"))
                continue
            if model not in extra and model != "OPT-13B":
                out.append(TimeCase(case=case["id"], row=label, metric="epoch_s", published=_duration_s(val),
                                    scored=False, skip_reason=f"no dimensions for {model}"))
                continue
            scope = "single_gpu" if count == 1 else "single_node" if count <= 8 else "multi_node"
            script = DSCHAT_SCRIPTS.get((model, scope), {})
            tp = int(script.get("inference_tp", 0)) or _min_tp(_params(model, extra), _hbm(gpu), 0.5)
            tp = min(tp, count)
            lora = int(script.get("lora_dim", 0))
            pools = [Pool(name="all", nodes=max(1, count // 8), gpus_per_node=min(8, count),
                          roles=["policy", "reference", "critic", "reward", "rollout"])]
            name = f"dschat-{model.lower().replace('.', '-')}-{count}"

            def plan_for(per_gpu: int) -> Plan:
                # BenckmarkSetting.md: per-device train batch = mini batch = generation batch, 1 PPO
                # epoch, 1 generation batch per step; the HE generates the per-device batch at once
                p = _ppo_plan(name, model, gpu, count, framework="openrlhf", engine="hf", pools=pools,
                              mode="colocated", rollout_tp=tp, offload=count == 1, extra=extra, prompt=prompt,
                              resp_max=gen, resp_mean=gen, batch=per_gpu * count, mini=per_gpu * count,
                              micro=per_gpu, critic="OPT-350M", reward="OPT-350M")
                upd = {"rollout": p.rollout.model_copy(update={"max_num_seqs": per_gpu})}
                if lora:
                    upd["memory"] = p.memory.model_copy(update={"lora_rank": lora})
                return p.model_copy(update=upd)

            per_gpu, why = _largest_fitting_batch(plan_for, max(1, batch // count))
            if not per_gpu:
                out.append(TimeCase(case=case["id"], row=label, metric="epoch_s", published=_duration_s(val),
                                    scored=False, skip_reason=why))
                continue
            p = plan_for(per_gpu)
            out.append(TimeCase(case=case["id"], row=label, plan=p, metric="epoch_s", published=_duration_s(val),
                                scale=queries / (per_gpu * count),
                                inferred=[f"{per_gpu} sequences per GPU per step: {why} (BenckmarkSetting.md: "
                                          "the largest training batch that fits, at most 1024 pairs; the same "
                                          "per-device batch generates, trains, 1 PPO epoch)",
                                          (f"hybrid-engine inference TP{tp}, actor LoRA dim {lora or 'none'} "
                                           f"(DeepSpeed-Chat's example script {script['path']})" if script else
                                           f"hybrid-engine inference TP{tp} (smallest with weights <= 50% of HBM); "
                                           "full fine-tuning (no example script for this size and scope)"),
                                          "optimizer offload on 1 GPU",
                                          "Azure NDm A100 v4 network: 8 x 200 Gb/s HDR per node"]))
    return out


def _largest_fitting_batch(plan_for: Any, cap: int) -> tuple[int, str]:
    """The largest power-of-two per-GPU batch up to ``cap`` that budget_memory (the one memory
    model) says fits: the rule a source states when it benchmarks "the largest batch that does not
    OOM". Returns (batch, how it was chosen)."""
    from advisor.errors import AdvisorError
    from advisor.memory import budget_memory

    best = 0
    b = 1
    while b <= cap:
        try:
            if not budget_memory(plan_for(b)).fits:
                break
        except AdvisorError:
            break
        best = b
        b *= 2
    if best == 0:
        return 0, ("budget_memory says even 1 sequence per GPU does not fit this layout, yet the source ran it: "
                   "the batch the benchmark used cannot be derived (the memory model's layout of this run is "
                   "wrong, e.g. offloads or ZeRO stages the table does not state)")
    return best, ("the global cap" if best * 2 > cap else "the largest power of two budget_memory fits")


# --------------------------------------------------------------------------- dispatch


def _rowwise(adapter: Any, case: dict[str, Any], extra: dict[str, ModelSpec]) -> list[TimeCase]:
    """Run an adapter one row at a time, so one row it cannot read skips only that row."""
    out: list[TimeCase] = []
    rows = case["outcome"]["rows"]
    for i, row in enumerate(rows):
        one = {**case, "outcome": {**case["outcome"], "rows": [row]}}
        try:
            got = adapter(one, extra)
        except Exception as exc:  # noqa: BLE001 - reported per row, never hidden
            label = str(row.get("label") or row.get("model") or row.get("mode") or row.get("model_size")
                        or row.get("gpus") or i)
            got = [TimeCase(case=case["id"], row=label, metric="step_s", scored=False,
                            skip_reason=f"row not understood: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")]
        for c in got:
            if c.plan is not None:
                c.plan = c.plan.model_copy(update={"name": f"{c.plan.name[:50]}-{i}"})
        out += got
    return out


def _no_rows_reason(case: dict[str, Any]) -> str:
    """Why a time/placement case without rows gives no time row (listed, never silently dropped)."""
    outcome = case.get("outcome") or {}
    timed = sorted(k for k in outcome if re.search(r"(_s|_time_s|^step\d*)$", str(k)))
    status = outcome.get("status", "?")
    if status in ("config_only", "fits", "oom") and not timed:
        return f"no published time (status {status}: a placement or memory check, not a time row)"
    gpu = str((case.get("hardware") or {}).get("gpu", ""))
    if timed and ("unspecified" in gpu or not gpu):
        return f"published {', '.join(timed)} but the GPU type is not stated"
    if timed:
        return (f"published {', '.join(timed)} for a single setting whose batch, lengths or model the source "
                "does not state")
    return f"no time rows in the outcome (status {status})"


def time_cases(doc: dict[str, Any], extra_models: dict[str, dict[str, Any]] | None = None) -> list[TimeCase]:
    """Every time row of a published-cases document, as TimeCase objects (shape-dispatched)."""
    extra = {name: ModelSpec(name=name, **dims) for name, dims in (extra_models or {}).items()}
    from advisor.errors import AdvisorError

    out: list[TimeCase] = []
    cases = doc.get("cases") if isinstance(doc, dict) else None
    if not isinstance(cases, list):
        raise AdvisorError("not a published-cases document", field="cases",
                           value=type(cases).__name__ if cases is not None else "missing",
                           allowed="a mapping with a 'cases' list (the schema of ../shared/cases/published-dev.yaml)")
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            out.append(TimeCase(case=f"(case {i + 1})", row="(case)", metric="step_s", scored=False,
                                skip_reason=f"not a case: a {type(case).__name__}, not a mapping with id, "
                                            "hardware and outcome.rows"))
            continue
        case = {**case, "id": str(case.get("id") or f"(case {i + 1}, no id)")}
        if not isinstance(case.get("outcome") or {}, dict):
            case["outcome"] = {}
        # a case that names its uses is read only for these two; one that names none (a hidden
        # file written without the field) is read, so its rows are scored or listed, never dropped
        uses = case.get("use_for") or []
        if "use_for" in case and not {"time_model", "plan_placement"} & set(uses if isinstance(uses, list) else [uses]):
            continue
        outcome = case.get("outcome") or {}
        rows = outcome.get("rows")
        if not (isinstance(rows, list) and rows and isinstance(rows[0], dict)) and any(
                outcome.get(k) not in (None, "") for k in (*STEP_KEYS, *THROUGHPUT_KEYS)):
            # one setting, one step time written on the outcome itself (a thread's "~420 s per
            # step"): read as the case's only row, scored when the case states its setting
            one = {k: v for k, v in outcome.items() if k not in ("rows", "status", "note")}
            out += _rowwise(_generic_rows, {**case, "outcome": {**outcome, "rows": [{"label": "(outcome)", **one}]}},
                            extra)
            continue
        if not (isinstance(rows, list) and rows and isinstance(rows[0], dict)):
            out.append(TimeCase(case=case["id"], row="(case)", metric="step_s", scored=False,
                                skip_reason=_no_rows_reason(case)))
            continue
        first = rows[0]
        if "sync_s" in first:
            adapter = _sync_rows
        elif "mode" in first and "step_s" in first:
            adapter = _verl_mode_rows
        elif "step_s" in first and "gpus" in first and "model" in first:
            adapter = _nemo_rows
        elif "model_size" in first and ("openrlhf_s" in first or "dschat_s" in first):
            adapter = _openrlhf_rows
        elif "gpus" in first and any(str(k).startswith("OPT-") for r in rows for k in r):
            adapter = _dschat_rows
        elif "throughput_samples_per_gpu_s" in first and "model" in first:
            adapter = _openrlhf_throughput_rows
        elif any(r.get(k) not in (None, "") for r in rows if isinstance(r, dict)
                 for k in (*STEP_KEYS, *THROUGHPUT_KEYS)) and not any(
                k in first for k in ("not_read", "finding", "best_colocate_speedup", "result")):
            adapter = _generic_rows
        else:
            adapter = _unscored_rows
        out += _rowwise(adapter, case, extra)
    return out

