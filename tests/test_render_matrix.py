"""Every supported method x framework pair renders and passes the framework's own parser or schema;
every unsupported pair is refused with the documented reason.

The validators are the real things (research/frameworks.md): veRL's Hydra config tree from the
installed verl 0.9.1 wheel plus verl's own validate_config; OpenRLHF 0.11.2's own argparse block
and post-parse asserts, executed from its source; TRL 1.16.0's TrlParser (strict) and config
classes; accelerate's config loader; Ray's JobSubmitRequest/RuntimeEnv; kubernetes-validate
(strict) and the KubeRay/Kueue CRD schemas; NeMo-RL's own example configs in struct mode.
"""

from __future__ import annotations

import copy

import pytest

from advisor.errors import AdvisorError
from advisor.plan import Framework, Method, Plan, plan_from_yaml
from advisor.render import render_config
from advisor.render.common import supported_pairs, unsupported_pairs
from rl_advisor.validators import validate_artifact, validate_rendered
from tests.conftest import example_plan_path

OFFLINE = {Method.DPO, Method.KTO, Method.ORPO, Method.SIMPO, Method.REWARD_MODEL, Method.SFT}


def plan_for(method: Method, framework: Framework) -> Plan:
    """The example GRPO plan, adapted the way a user would for ``method``."""
    data = plan_from_yaml(example_plan_path().read_text()).model_dump(mode="json", exclude_none=True)
    data["method"] = method.value
    data["framework"] = framework.value
    if method in OFFLINE:
        data.pop("reward_function", None)
        data["data"]["train_files"] = ["data/pairs/train.jsonl"]
        data["data"]["val_files"] = []
        data["algorithm"].pop("group_size", None)
        data["algorithm"]["kl_coef"] = 0.0
    if method == Method.PPO:
        data["reward"] = {"model": "Skywork-Reward-8B", "path": "/models/reward"}
        data["algorithm"]["group_size"] = 1
    if method == Method.REINFORCE_PP:
        data["algorithm"]["group_size"] = 1
    return Plan.model_validate(data)


SUPPORTED = supported_pairs()
UNSUPPORTED = unsupported_pairs()


def test_matrix_size():
    assert len(SUPPORTED) >= 25
    frameworks = {fw for fw, _ in SUPPORTED}
    assert frameworks == {Framework.VERL, Framework.OPENRLHF, Framework.TRL, Framework.NEMO_RL}


# Facts from research/frameworks.md §0 and §5 that the support matrix must agree with.
MUST_REFUSE = [(Framework.VERL, Method.DPO), (Framework.VERL, Method.KTO), (Framework.VERL, Method.ORPO),
               (Framework.VERL, Method.REWARD_MODEL), (Framework.OPENRLHF, Method.KTO),
               (Framework.OPENRLHF, Method.ORPO), (Framework.OPENRLHF, Method.SIMPO),
               (Framework.TRL, Method.PPO), (Framework.TRL, Method.REINFORCE_PP), (Framework.NEMO_RL, Method.KTO)]
MUST_RENDER = [(Framework.TRL, Method.ORPO), (Framework.TRL, Method.SIMPO), (Framework.TRL, Method.KTO),
               (Framework.OPENRLHF, Method.DPO), (Framework.OPENRLHF, Method.REWARD_MODEL),
               (Framework.VERL, Method.PPO), (Framework.VERL, Method.SFT), (Framework.OPENRLHF, Method.DR_GRPO)]


def test_matrix_agrees_with_framework_facts():
    refused = {(fw, m) for fw, m, _ in UNSUPPORTED}
    assert set(MUST_REFUSE) <= refused
    assert set(MUST_RENDER) <= set(SUPPORTED)
    assert not refused & set(SUPPORTED)


@pytest.mark.parametrize("framework,method", SUPPORTED, ids=[f"{f.value}-{m.value}" for f, m in SUPPORTED])
def test_supported_pair_renders_and_validates(framework: Framework, method: Method):
    rendered = render_config(plan_for(method, framework))
    assert rendered.framework == framework and rendered.method == method
    assert rendered.stamp.framework_version and rendered.stamp.rl_advisor_version
    kinds = {a.kind for a in rendered.artifacts}
    assert {"launch_script", "ray_job", "k8s_manifest"} <= kinds
    results = validate_rendered(rendered)
    assert len(results) == len(rendered.artifacts)
    failed = [(r.artifact, r.validator, r.errors, r.warnings) for r in results if not r.ok or r.skipped]
    assert not failed
    # every artifact carries the version stamp (JSON in its metadata, the others in comments)
    for art in rendered.artifacts:
        if art.format == "json":
            assert rendered.stamp.framework_version in art.content
        else:
            assert f"for {framework.value} {rendered.stamp.framework_version}" in art.content
            assert "Memory knobs:" in art.content


@pytest.mark.parametrize("framework,method,reason", UNSUPPORTED,
                         ids=[f"{f.value}-{m.value}" for f, m, _ in UNSUPPORTED])
def test_unsupported_pair_is_refused_with_reason(framework: Framework, method: Method, reason: str):
    with pytest.raises(AdvisorError) as err:
        render_config(plan_for(method, framework))
    problem = err.value.problems[0]
    assert problem.field == "method"
    assert reason in problem.message
    assert framework.value in problem.allowed


def test_unrenderable_framework_is_refused():
    with pytest.raises(AdvisorError) as err:
        render_config(plan_for(Method.GRPO, Framework.VERL), Framework.RLLIB)
    assert err.value.problems[0].field == "framework"


def test_verl_ppo_critic_rules_run_against_a_local_model(tmp_path):
    """veRL's critic check loads the critic's HF config; with a local model dir it runs for real."""
    from rl_advisor.tinymodel import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny")
    plan = plan_for(Method.PPO, Framework.VERL)
    plan = plan.model_copy(update={"critic": plan.policy.model_copy(update={"path": str(model_dir)})})
    art = render_config(plan).artifact("run_verl.sh")
    result = validate_artifact(art)
    assert result.ok, result.errors
    assert not result.warnings  # the critic rules were not skipped
    # and they bite: a critic mini-batch above the train batch is rejected by veRL itself
    bad = art.model_copy(update={"content": art.content.replace(
        "critic.ppo_micro_batch_size_per_gpu=8", "critic.ppo_micro_batch_size_per_gpu=8 critic.ppo_mini_batch_size=4096")})
    assert not validate_artifact(bad).ok


# --------------------------------------------------------------------------- the validators can fail


def _broken(rendered, name, old, new):
    art = rendered.artifact(name)
    assert old in art.content, (old, art.content[:2000])
    return art.model_copy(update={"content": art.content.replace(old, new, 1)})


def test_verl_rejects_unknown_key_and_bad_batch():
    r = render_config(plan_for(Method.GRPO, Framework.VERL))
    res = validate_artifact(_broken(r, "run_verl.sh", "trainer.nnodes=1", "trainer.nnode=1"))
    assert not res.ok and "nnode" in " ".join(res.errors)
    res = validate_artifact(_broken(r, "run_verl.sh", "data.train_batch_size=256", "data.train_batch_size=25"))
    assert not res.ok and "must be >= actor.ppo_mini_batch_size" in " ".join(res.errors)
    res = validate_artifact(_broken(r, "run_verl.sh", "trainer.n_gpus_per_node=8", "trainer.n_gpus_per_node=7"))
    assert not res.ok and "divisible" in " ".join(res.errors)


def test_openrlhf_rejects_flat_flags_and_failed_asserts():
    r = render_config(plan_for(Method.GRPO, Framework.OPENRLHF))
    res = validate_artifact(_broken(r, "run_openrlhf.sh", "--vllm.num_engines", "--vllm_num_engines"))
    assert not res.ok and "unrecognized arguments" in " ".join(res.errors)
    res = validate_artifact(_broken(r, "run_openrlhf.sh", "--rollout.n_samples_per_prompt 8",
                                    "--rollout.n_samples_per_prompt 1"))
    assert not res.ok and "n_samples_per_prompt > 1" in " ".join(res.errors)


def test_trl_rejects_unknown_and_removed_keys():
    r = render_config(plan_for(Method.GRPO, Framework.TRL))
    res = validate_artifact(_broken(r, "trl_config.yaml", "num_generations: 8", "num_generations: 8\nmax_prompt_length: 512"))
    assert not res.ok and "max_prompt_length" in " ".join(res.errors)
    res = validate_artifact(_broken(r, "trl_config.yaml", "num_generations: 8", "num_generations: 3"))
    assert not res.ok  # GRPOConfig.__post_init__: generation batch not divisible by num_generations


def test_k8s_rejects_unknown_fields_and_kinds_without_schema():
    r = render_config(plan_for(Method.GRPO, Framework.VERL))
    res = validate_artifact(_broken(r, "k8s.yaml", "shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: 'yes'"))
    assert not res.ok and "boolean" in " ".join(res.errors)
    res = validate_artifact(_broken(r, "k8s.yaml", "kind: LocalQueue", "kind: LocalQueueX"))
    assert not res.ok and "no schema" in " ".join(res.errors)
    t = render_config(plan_for(Method.DPO, Framework.TRL))
    res = validate_artifact(_broken(t, "k8s.yaml", "restartPolicy: Never", "restartPolicy: Never\n        restartPolicyz: 1"))
    assert not res.ok


def test_nemo_and_ray_reject_bad_input():
    r = render_config(plan_for(Method.GRPO, Framework.NEMO_RL))
    res = validate_artifact(_broken(r, "run_nemo_rl.sh", "cluster.num_nodes=1", "cluster.num_nodez=1"))
    assert not res.ok and "num_nodez" in " ".join(res.errors)
    res = validate_artifact(_broken(r, "ray_job.json", '"entrypoint_num_cpus": 1', '"entrypoint_num_cpus": "one"'))
    assert not res.ok


def test_deterministic():
    """The same Plan gives byte-identical artifacts (speed is measured in benchmarks/render_speed.py)."""
    plans = [plan_for(m, fw) for fw, m in SUPPORTED]
    first = [render_config(p) for p in plans]
    second = [render_config(copy.deepcopy(p)) for p in plans]
    for a, b in zip(first, second):
        assert [x.content for x in a.artifacts] == [x.content for x in b.artifacts]


# --------------------------------------------------------------------------- memory / placement variants

VARIANTS = {
    "megatron-tp2-pp2": {"memory": {"train_backend": "megatron"}, "policy": {"parallel": {"tp": 2, "pp": 2}}},
    "fsdp2-lora-offload": {"memory": {"train_backend": "fsdp2", "lora_rank": 32, "param_offload": True,
                                      "optimizer_offload": True, "ref_offload": True}},
    "dynamic-bsz": {"data": {"use_dynamic_bsz": True, "max_token_len_per_gpu": 16384}},
    "split-pools": {"placement": {"mode": "split", "pools": [
        {"name": "train", "nodes": 1, "gpus_per_node": 4, "roles": ["policy", "reference"]},
        {"name": "gen", "nodes": 1, "gpus_per_node": 4, "roles": ["rollout"]}]}},
    "two-nodes-zero2": {"hardware": {"nodes": 2}, "memory": {"train_backend": "deepspeed", "zero_stage": 2}},
    "kl-in-reward-sglang": {"algorithm": {"kl_in_reward": True, "kl_estimator": "k1"}, "rollout": {"engine": "sglang"}},
}


def _merge(a: dict, b: dict) -> None:
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(a.get(k), dict):
            _merge(a[k], v)
        else:
            a[k] = v


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("framework", [Framework.VERL, Framework.OPENRLHF, Framework.TRL, Framework.NEMO_RL],
                         ids=lambda f: f.value)
def test_variants_validate(variant: str, framework: Framework):
    data = plan_for(Method.GRPO, framework).model_dump(mode="json", exclude_none=True)
    _merge(data, copy.deepcopy(VARIANTS[variant]))
    rendered = render_config(Plan.model_validate(data))
    failed = [(r.artifact, r.errors) for r in validate_rendered(rendered) if not r.ok or r.skipped]
    assert not failed
