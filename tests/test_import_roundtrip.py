"""render -> import is a faithful round trip.

For every example Plan, every supported method x framework pair the importers read (veRL, OpenRLHF,
TRL; NeMo-RL has no importer) and the memory/placement variants of the render matrix, the main
artifact that render_config writes is imported back with import_config, and the Plan fields that
decide what the run is and what it costs in memory must come back equal: method, model paths,
lengths, batch sizes, group size, KL coefficient, learning rate, reward function, rollout TP and
memory fraction, LoRA rank, offloads, recompute, training backend and ZeRO stage.

A field is exempt only where the renderer itself reported it as not carried (RenderedConfig.
not_carried), or where the framework's config has no spelling for it (the tables below, each with
its reason). ``not_understood`` must be empty apart from an explicit allow-list of settings that
have no Plan field.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.importers import SUPPORTED as IMPORTABLE
from advisor.importers import import_config
from advisor.plan import Framework, Method, Plan, plan_from_yaml
from advisor.render import render_config
from advisor.render.common import supported_pairs
from tests.test_render_matrix import VARIANTS, _merge, plan_for

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples" / "plans").glob("*.yaml"))

MAIN_ARTIFACT = {Framework.VERL: "run_verl.sh", Framework.OPENRLHF: "run_openrlhf.sh",
                 Framework.TRL: "trl_config.yaml"}

# Where the framework has one max_length for prompt + response, only the sum can come back.
TOTAL_LENGTH_ONLY = {
    (Framework.VERL, Method.SFT): "veRL sft_trainer: data.max_length",
    (Framework.OPENRLHF, Method.DPO): "train_dpo: --data.max_len",
    (Framework.OPENRLHF, Method.REWARD_MODEL): "train_rm: --data.max_len",
    (Framework.OPENRLHF, Method.SFT): "train_sft: --data.max_len",
    (Framework.TRL, Method.DPO): "DPOConfig: max_length",
    (Framework.TRL, Method.KTO): "KTOConfig: max_length",
    (Framework.TRL, Method.REWARD_MODEL): "RewardConfig: max_length",
    (Framework.TRL, Method.SFT): "SFTConfig: max_length",
}

# Offline trainers have one batch per optimizer step. The renderers write the Plan's mini-batch
# there (OpenRLHF --train.batch_size, TRL per_device x processes x accumulation), except veRL's SFT
# trainer, whose data.train_batch_size is rendered from the Plan's train_batch_size.
OFFLINE_STEP_BATCH = {Framework.VERL: "train_batch_size", Framework.OPENRLHF: "mini_batch_size",
                      Framework.TRL: "mini_batch_size"}

# Online settings a framework's config has no key for (so the renderer leaves them at the framework's
# own behaviour); the importer then reports the framework's value.
NOT_SPELLED: set[tuple[Framework, str]] = {
    (Framework.TRL, "gamma"), (Framework.TRL, "lam"),  # no GAE in TRL 1.16 (its online trainers are critic-free)
    (Framework.TRL, "loss_agg_mode"),  # TRL's loss_type names the whole loss (grpo, dr_grpo, dapo, bnpo)
}

# The renderers write the aggregation a method is defined with, whatever the Plan says.
METHOD_DEFINED: dict[tuple[Method, str], str] = {
    (Method.DR_GRPO, "loss_agg_mode"): "Dr. GRPO is defined with seq-mean-token-sum-norm aggregation (Liu et al. 2025)",
    (Method.GSPO, "loss_agg_mode"): "GSPO's sequence-level ratio is averaged per sequence (seq-mean-token-mean)",
}

# Logging backends that are not a switch of the framework: TRL and OpenRLHF always print to the
# console, and the rendered JSONL/file metrics come from rl-advisor's callback or veRL's file logger.
LOGGER_NOT_SPELLED: dict[Framework, set[str]] = {
    Framework.OPENRLHF: {"file", "jsonl"},
    Framework.TRL: {"file", "jsonl"},
}

# Settings that may stay "not understood": they have no Plan field. Pattern -> reason.
ALLOWED_NOT_UNDERSTOOD: dict[str, str] = {
    r"^--ckpt\.path=": "checkpoint directory other than <output_dir>/checkpoints: the Plan only has logging.output_dir",
}


def _main_text(rendered, framework: Framework) -> str:
    """The main artifact; for TRL with the accelerate config it is launched with appended as a
    second YAML document (the backend, offload and process count live there)."""
    text = rendered.artifact(MAIN_ARTIFACT[framework]).content
    if framework == Framework.TRL:
        text += "\n---\n" + rendered.artifact("accelerate.yaml").content
    return text


def _not_carried(rendered) -> set[str]:
    return {n.field for n in rendered.not_carried}


def expected_fields(plan: Plan, rendered) -> dict[str, object]:
    """The fields a faithful import must give back, as the renderer wrote them."""
    fw, method = rendered.framework, plan.method
    dropped = _not_carried(rendered)
    online = plan.is_online
    a, d, m, r = plan.algorithm, plan.data, plan.memory, plan.rollout
    out: dict[str, object] = {"method": method.value, "policy.path": plan.policy.weights_path,
                              "algorithm.learning_rate": a.learning_rate}
    if online:  # offline methods have no KL-to-reference term (DPO's beta is their own field)
        out["algorithm.kl_coef"] = a.kl_coef or 0.0
    if plan.reward is not None and "reward" not in dropped:
        out["reward.path"] = plan.reward.weights_path
    if plan.critic is not None and method == Method.PPO:
        out["critic.path"] = plan.critic.weights_path
    # lengths
    if (fw, method) in TOTAL_LENGTH_ONLY:
        out["max_seq_len"] = d.max_seq_len
    else:
        if "data.max_prompt_length" not in dropped:
            out["data.max_prompt_length"] = d.max_prompt_length
        out["data.max_response_length"] = d.max_response_length
    # batches
    if online:
        out["data.train_batch_size"] = d.train_batch_size
        out["data.mini_batch_size"] = d.mini_batch_size or d.train_batch_size
        out["algorithm.group_size"] = a.group_size or 1
    else:
        field = OFFLINE_STEP_BATCH[fw]
        out["step_batch"] = getattr(d, field) or d.train_batch_size
    if not d.use_dynamic_bsz:
        out["data.micro_batch_size_per_gpu"] = d.micro_batch_size_per_gpu
    # reward function (online only; TRL puts it into train.py, not into the config YAML)
    if online and plan.reward_function is not None and "reward_function" not in dropped and fw != Framework.TRL:
        rf = plan.reward_function.model_dump()
        if fw == Framework.OPENRLHF:
            rf["name"] = "reward_func"  # OpenRLHF always calls reward_func in the file (render notes say so)
        out["reward_function"] = rf
    if online:  # the loss and sampling settings the importers used to report as not understood
        for name in ("clip_ratio_low", "temperature", "top_p", "entropy_coeff", "loss_agg_mode", "gamma", "lam"):
            if f"algorithm.{name}" not in dropped and (fw, name) not in NOT_SPELLED \
                    and (method, name) not in METHOD_DEFINED:
                out[f"algorithm.{name}"] = getattr(a, name)
    if online and "rollout.engine" not in dropped:  # no engine carried: its TP and memory share mean nothing
        out["rollout.engine"] = r.engine
        out["rollout.tp"] = r.tp
        out["memory.rollout_memory_fraction"] = m.rollout_memory_fraction
    # GPUs: TRL's vLLM server (split placement) is started apart from the config, so its GPUs are not in it
    if fw != Framework.TRL or plan.placement.mode == "colocated":
        out["hardware.total_gpus"] = plan.hardware.total_gpus
    if "logging.backends" not in dropped:
        out["logging.backends"] = sorted(set(plan.logging.backends) - LOGGER_NOT_SPELLED.get(fw, set()))
    # memory knobs
    for knob in ("lora_rank", "param_offload", "optimizer_offload", "ref_offload", "recompute"):
        if f"memory.{knob}" not in dropped:
            out[f"memory.{knob}"] = getattr(m, knob)
    if "memory.train_backend" not in dropped:
        out["memory.train_backend"] = m.train_backend
    if fw == Framework.VERL:  # the only framework here whose config spells the policy's model parallelism
        out["policy.parallel"] = plan.policy.parallel.model_dump(exclude={"dp"})
    if fw == Framework.OPENRLHF and m.train_backend in ("fsdp", "fsdp2", "deepspeed"):
        out["memory.zero_stage"] = m.zero_stage  # always DeepSpeed; FSDP full shard = ZeRO-3 (the Plan's convention)
    elif m.train_backend == "deepspeed" and "memory.train_backend" not in dropped:
        out["memory.zero_stage"] = m.zero_stage
    return out


def imported_fields(plan: Plan, expected: dict[str, object], framework: Framework) -> dict[str, object]:
    a, d, m = plan.algorithm, plan.data, plan.memory
    got: dict[str, object] = {}
    for key in expected:
        if key == "method":
            got[key] = plan.method.value
        elif key == "max_seq_len":
            got[key] = d.max_seq_len
        elif key == "step_batch":
            got[key] = getattr(d, OFFLINE_STEP_BATCH[framework]) or d.train_batch_size
        elif key == "policy.path":
            got[key] = plan.policy.weights_path
        elif key == "reward.path":
            got[key] = plan.reward.weights_path if plan.reward else None
        elif key == "critic.path":
            got[key] = (plan.critic or plan.policy).weights_path
        elif key == "reward_function":
            got[key] = plan.reward_function.model_dump() if plan.reward_function else None
        elif key == "algorithm.kl_coef":
            got[key] = a.kl_coef or 0.0
        elif key == "algorithm.group_size":
            got[key] = a.group_size or 1
        elif key == "policy.parallel":
            got[key] = plan.policy.parallel.model_dump(exclude={"dp"})
        elif key == "logging.backends":
            got[key] = sorted(set(plan.logging.backends) - LOGGER_NOT_SPELLED.get(framework, set()))
        elif key == "data.mini_batch_size":
            got[key] = d.mini_batch_size or d.train_batch_size
        else:
            section, name = key.split(".")
            got[key] = getattr(getattr(plan, section), name)
    return got


def _allowed(item: str) -> bool:
    return any(re.search(p, item) for p in ALLOWED_NOT_UNDERSTOOD)


def assert_round_trip(plan: Plan) -> None:
    rendered = render_config(plan)
    fw = rendered.framework
    imported = import_config(_main_text(rendered, fw), fw)
    assert imported.framework == fw
    expected = expected_fields(plan, rendered)
    got = imported_fields(imported.plan, expected, fw)
    diff = {k: (expected[k], got[k]) for k in expected if expected[k] != got[k]}
    assert not diff, f"render -> import changed (plan, imported): {diff}"
    stray = [x for x in imported.not_understood if not _allowed(x)]
    assert not stray, f"not understood, though the Plan has a field for it: {stray}"


# --------------------------------------------------------------------------- the cases

IMPORTABLE_PAIRS = [(fw, m) for fw, m in supported_pairs() if fw in IMPORTABLE]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_plans_round_trip(path: Path):
    plan = plan_from_yaml(path.read_text(encoding="utf-8"))
    assert plan.framework in IMPORTABLE, "an example for a framework without importer: extend this test"
    assert_round_trip(plan)


@pytest.mark.parametrize("framework,method", IMPORTABLE_PAIRS, ids=[f"{f.value}-{m.value}" for f, m in IMPORTABLE_PAIRS])
def test_matrix_round_trips(framework: Framework, method: Method):
    assert_round_trip(plan_for(method, framework))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("framework", list(IMPORTABLE), ids=lambda f: f.value)
def test_memory_and_placement_variants_round_trip(variant: str, framework: Framework):
    data = plan_for(Method.GRPO, framework).model_dump(mode="json", exclude_none=True)
    _merge(data, copy.deepcopy(VARIANTS[variant]))
    assert_round_trip(Plan.model_validate(data))


KNOB_VARIANTS = {
    "lora64-ref-offload-no-recompute": {"memory": {"lora_rank": 64, "ref_offload": True, "recompute": "none"}},
    "zero2-optimizer-offload": {"memory": {"train_backend": "deepspeed", "zero_stage": 2, "optimizer_offload": True}},
    "tp4-frac0.4-n16": {"rollout": {"tp": 4}, "memory": {"rollout_memory_fraction": 0.4},
                        "algorithm": {"group_size": 16, "kl_coef": 0.05, "learning_rate": 3e-6}},
}


@pytest.mark.parametrize("framework", [Framework.VERL, Framework.OPENRLHF], ids=lambda f: f.value)
def test_ppo_advantage_settings_round_trip(framework: Framework):
    """GAE's gamma/lambda and the loss aggregation, at values other than the defaults."""
    data = plan_for(Method.PPO, framework).model_dump(mode="json", exclude_none=True)
    _merge(data, {"algorithm": {"gamma": 0.99, "lam": 0.95, "loss_agg_mode": "seq-mean-token-mean",
                                "temperature": 0.7, "top_p": 0.9, "clip_ratio_low": 0.1, "clip_ratio_high": 0.1}})
    assert_round_trip(Plan.model_validate(data))


@pytest.mark.parametrize("variant", sorted(KNOB_VARIANTS))
@pytest.mark.parametrize("framework,method", [(Framework.VERL, Method.GRPO), (Framework.OPENRLHF, Method.GRPO),
                                              (Framework.TRL, Method.GRPO), (Framework.TRL, Method.DPO),
                                              (Framework.OPENRLHF, Method.DPO)],
                         ids=lambda x: x.value)
def test_memory_knobs_round_trip(variant: str, framework: Framework, method: Method):
    """Non-default knob values, so that a knob the importer ignored cannot pass by being the default."""
    data = plan_for(method, framework).model_dump(mode="json", exclude_none=True)
    _merge(data, copy.deepcopy(KNOB_VARIANTS[variant]))
    assert_round_trip(Plan.model_validate(data))


# --------------------------------------------------------------------------- the check can fail


def test_a_dropped_setting_is_caught():
    """Deleting a flag from the rendered command changes the imported Plan, and the comparison sees it."""
    plan = plan_for(Method.GRPO, Framework.OPENRLHF)
    rendered = render_config(plan)
    text = _main_text(rendered, Framework.OPENRLHF).replace("--vllm.gpu_memory_utilization 0.6", "")
    got = imported_fields(import_config(text, Framework.OPENRLHF).plan, expected_fields(plan, rendered),
                          Framework.OPENRLHF)
    assert got["memory.rollout_memory_fraction"] != plan.memory.rollout_memory_fraction


def test_unknown_settings_are_still_reported():
    plan = plan_for(Method.GRPO, Framework.VERL)
    text = render_config(plan).artifact("run_verl.sh").content.replace(
        "trainer.nnodes=1", "trainer.nnodes=1 \\\n  actor_rollout_ref.actor.made_up_knob=3 \\\n  +trainer.mystery=1")
    nu = import_config(text, Framework.VERL).not_understood
    assert any("made_up_knob" in x and "not a veRL 0.9.1 key" in x for x in nu)
    assert any("mystery" in x for x in nu)


def test_checkpoint_path_elsewhere_is_reported_not_dropped():
    plan = plan_for(Method.GRPO, Framework.OPENRLHF)
    text = render_config(plan).artifact("run_openrlhf.sh").content.replace(
        "--ckpt.path outputs/checkpoints", "--ckpt.path /mnt/ckpt")
    nu = import_config(text, Framework.OPENRLHF).not_understood
    assert nu == ["--ckpt.path=/mnt/ckpt (no Plan field: checkpoints go to <logging.output_dir>/checkpoints when rendered)"]
    assert _allowed(nu[0])


def test_nemo_rl_has_no_importer():
    rendered = render_config(plan_for(Method.GRPO, Framework.NEMO_RL))
    with pytest.raises(AdvisorError) as err:
        import_config(rendered.artifact("run_nemo_rl.sh").content, Framework.NEMO_RL)
    assert err.value.problems[0].field == "framework"


# --------------------------------------------------------------------------- translation


TRANSLATIONS = [(src, dst, m) for src, m in IMPORTABLE_PAIRS for dst in IMPORTABLE
                if dst != src and (dst, m) in set(IMPORTABLE_PAIRS)]


@pytest.mark.parametrize("source,target,method", TRANSLATIONS,
                         ids=[f"{s.value}-to-{t.value}-{m.value}" for s, t, m in TRANSLATIONS])
def test_translation_reports_are_clean(source: Framework, target: Framework, method: Method):
    """A config rendered for one framework translates to another with nothing 'not understood', and
    the translated Plan keeps the method."""
    from rl_advisor.render_tool import translate_config

    text = _main_text(render_config(plan_for(method, source)), source)
    result = translate_config(text, target, source, validate=False)
    assert [x for x in result.not_understood if not _allowed(x)] == []
    assert result.plan.method == method
    assert result.result.rendered.framework == target


def test_wandb_key_comes_back_as_a_reference_and_a_literal_key_is_never_echoed():
    data = plan_for(Method.GRPO, Framework.OPENRLHF).model_dump(mode="json", exclude_none=True)
    data["logging"].update({"backends": ["console", "wandb", "tensorboard"], "wandb_api_key_env": "MY_WANDB"})
    plan = Plan.model_validate(data)
    text = render_config(plan).artifact("run_openrlhf.sh").content
    imported = import_config(text, Framework.OPENRLHF)
    assert imported.plan.logging.wandb_api_key_env == "MY_WANDB"
    assert imported.plan.logging.backends == ["console", "wandb", "tensorboard"]
    assert (imported.plan.logging.project, imported.plan.logging.experiment) == (plan.logging.project, plan.logging.experiment)
    literal = re.sub(r"--logger\.wandb\.key \S+", "--logger.wandb.key abc123secretvalue", text)
    assert "abc123secretvalue" in literal
    leaked = import_config(literal, Framework.OPENRLHF)
    assert "abc123secretvalue" not in leaked.model_dump_json()
    assert any(x.startswith("--logger.wandb.key=<redacted>") for x in leaked.not_understood)


def _targets(plan: Plan) -> list[Framework]:
    return [fw for fw in IMPORTABLE if fw != plan.framework and (fw, plan.method) in set(IMPORTABLE_PAIRS)]


EXAMPLE_TRANSLATIONS = [(p, t) for p in EXAMPLES for t in _targets(plan_from_yaml(p.read_text(encoding="utf-8")))]


@pytest.mark.integration
@pytest.mark.parametrize("path,target", EXAMPLE_TRANSLATIONS,
                         ids=[f"{p.stem}-to-{t.value}" for p, t in EXAMPLE_TRANSLATIONS])
def test_example_translations_validate(path: Path, target: Framework):
    """Each example's rendered config, translated to every other framework that runs its method,
    passes that framework's own validator, and the translated Plan keeps the fields both frameworks
    can spell."""
    from rl_advisor.render_tool import translate_config

    plan = plan_from_yaml(path.read_text(encoding="utf-8"))
    text = _main_text(render_config(plan), plan.framework)
    result = translate_config(text, target, plan.framework, validate=True)
    assert result.not_understood == []
    assert result.result.valid, [(v.artifact, v.errors) for v in result.result.validation if not v.ok]
    p = result.plan
    assert (p.method, p.policy.weights_path, p.algorithm.learning_rate) == \
        (plan.method, plan.policy.weights_path, plan.algorithm.learning_rate)
    assert p.memory.lora_rank == plan.memory.lora_rank and p.memory.recompute == plan.memory.recompute


def test_translation_to_a_framework_without_the_method_is_refused_with_the_reason():
    """KTO has no veRL equivalent: translating a TRL KTO config to veRL says so."""
    from rl_advisor.render_tool import translate_config

    text = _main_text(render_config(plan_for(Method.KTO, Framework.TRL)), Framework.TRL)
    with pytest.raises(AdvisorError) as err:
        translate_config(text, Framework.VERL, Framework.TRL, validate=False)
    problem = err.value.problems[0]
    assert problem.field == "method" and "no KTO trainer" in problem.message
