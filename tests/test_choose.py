"""Table-driven tests for choose_method and choose_framework.

Every row states the inputs, the expected answer, and the reason: the guide rule (seed guide §
numbers, guide/*.md) or the framework fact (research/frameworks.md, checked against the current
releases) that makes it the right answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from advisor.choose_framework import (choose_framework, load_framework_facts, rules_markdown as fw_rules_md,
                                      support_matrix_markdown)
from advisor.choose_method import choose_method, load_method_rules, rules_markdown as method_rules_md
from advisor.errors import AdvisorError
from advisor.plan import (Algorithm, DataSpec, Ecosystem, Framework, Hardware, Method, Objective, Plan, Role,
                          RoleModel)

REPO = Path(__file__).resolve().parent.parent


def obj(task: str = "chat", data: tuple[str, ...] = ("nothing",), **kw: Any) -> Objective:
    return Objective(task=task, data=list(data), **kw)


def plan_with(objective: Objective | None = None, model: str = "Qwen2.5-7B-Instruct", **kw: Any) -> Plan:
    return Plan(policy=RoleModel(model=model), objective=objective, **kw)


# --------------------------------------------------------------------------- choose_method table


@dataclass
class MethodCase:
    id: str
    kwargs: dict[str, Any]
    best: set[str] | None  # None = no feasible method
    reason: str
    excluded: set[str] = field(default_factory=set)  # must be in not_recommended
    fired: tuple[str, str] | None = None  # (method, rule id) that must appear in its rationale
    below: tuple[str, str] | None = None  # (a, b): a must rank below b


METHOD_CASES = [
    MethodCase("pairs-dpo", {"objective": obj("chat", ("preference_pairs",))}, {"dpo"},
               "seed §10: DPO/ORPO/KTO first if preference data exists; §3 DPO is the pragmatic default",
               excluded={"grpo", "ppo", "dapo"}),
    MethodCase("binary-kto", {"objective": obj("chat", ("binary_labels",))}, {"kto"},
               "seed §10: KTO for binary labels (arXiv 2402.01306)", excluded={"dpo", "orpo", "simpo"}),
    MethodCase("pairs-no-sft-orpo", {"objective": obj("chat", ("preference_pairs",), has_sft_model=False)}, {"orpo"},
               "seed §10: choose ORPO to fold preference alignment into SFT (no reference)",
               fired=("dpo", "base-model-offline")),
    MethodCase("verifier-math-grpo", {"objective": obj("math", ("prompts_with_verifier",))}, {"grpo"},
               "seed §10: GRPO/RLOO for verifiable reasoning tasks, the current default for reasoning RL",
               excluded={"dpo", "kto", "orpo", "simpo", "reward_model"}, below=("ppo", "rloo")),
    MethodCase("verifier-code-grpo", {"objective": obj("code", ("prompts_with_verifier",))}, {"grpo"},
               "seed §3: GRPO best for verifiable sparse rewards (unit tests)", below=("ppo", "grpo")),
    MethodCase("verifier-baseline-second", {"objective": obj("math", ("prompts_with_verifier",), priority="stability")},
               {"grpo"}, "seed §10: rejection sampling is the stable baseline before any policy-gradient method",
               fired=("rejection_sampling", "stability-baseline"), below=("dapo", "rejection_sampling")),
    MethodCase("long-cot-dapo",
               {"objective": obj("math", ("prompts_with_verifier",)),
                "plan": plan_with(data=DataSpec(max_response_length=16384))},
               {"dapo"}, "DAPO (arXiv 2503.14476): clip-higher + token-level loss + overlong shaping for long CoT",
               fired=("dapo", "long-cot-dapo")),
    MethodCase("moe-gspo", {"objective": obj("math", ("prompts_with_verifier",)), "model": "Qwen3-30B-A3B"}, {"gspo"},
               "GSPO (arXiv 2507.18071): sequence-level ratios stabilise MoE RL", fired=("gspo", "moe-gspo")),
    MethodCase("trusted-rm-grpo-rloo", {"objective": obj("chat", ("prompts_with_reward_model",))}, {"grpo", "rloo"},
               "guide decision table: prompts + trusted RM -> GRPO or RLOO with KL", excluded={"dpo"},
               fired=("grpo", "trusted-rm-online")),
    MethodCase("rm-no-dapo", {"objective": obj("chat", ("prompts_with_reward_model",))}, {"grpo", "rloo"},
               "DAPO's accuracy-based dynamic sampling needs a verifiable reward", excluded={"dapo"}),
    MethodCase("value-function-ppo",
               {"objective": obj("tool_use", ("prompts_with_verifier",), needs_value_function=True)}, {"ppo"},
               "seed §10: PPO only when you need a learned value function / dense token-level advantages",
               fired=("ppo", "value-function-ppo")),
    MethodCase("no-value-function-no-ppo", {"objective": obj("math", ("prompts_with_verifier",))}, {"grpo"},
               "seed §10: 'most teams now reach for GRPO first'; critic doubles the trained footprint (§2)",
               fired=("ppo", "no-value-function-skip-ppo"), below=("ppo", "grpo")),
    MethodCase("nothing", {"objective": obj("chat", ("nothing",))}, None,
               "no training signal: every method needs pairs, labels, a verifier, an RM, demonstrations or a judge",
               excluded={"dpo", "grpo", "ppo", "rlaif"}),
    MethodCase("judge-only-rlaif", {"objective": obj("chat", ("nothing",), has_judge_model=True)}, {"rlaif"},
               "seed §3 RLAIF/CAI: an AI labeler replaces human preference labels", excluded={"dpo"}),
    MethodCase("safety-constitution", {"objective": obj("safety", ("prompts_only",), has_judge_model=True)}, {"rlaif"},
               "Constitutional AI (arXiv 2212.08073): critique -> revise -> AI preference labels",
               fired=("rlaif", "safety-constitution")),
    MethodCase("demos-base-sft", {"objective": obj("chat", ("demonstrations",), has_sft_model=False)}, {"sft"},
               "guide table: demonstrations only -> SFT; every preference/RL method assumes an SFT policy",
               excluded={"dpo", "grpo"}),
    MethodCase("non-llm-ppo", {"objective": obj("non_llm", ("nothing",))}, {"ppo"},
               "seed §5/§10: non-LLM RL -> RLlib PPO; LLM post-training methods do not apply",
               excluded={"dpo", "grpo", "rlaif", "sft"}),
    MethodCase("plentiful-pairs-explore-rm", {"objective": obj("chat", ("preference_pairs",), needs_exploration=True,
                                                              dataset_size=200_000)}, {"reward_model"},
               "guide table: upgrade to RM + PPO/GRPO when pairs are plentiful and exploration matters",
               fired=("dpo", "exploration-online")),
    MethodCase("tiny-pairs-still-dpo", {"objective": obj("chat", ("preference_pairs",), dataset_size=500)}, {"dpo"},
               "DPO stays the default but small sets overfit (diagnosis case trl-1236)",
               fired=("dpo", "tiny-preference-set")),
    MethodCase("ppo-does-not-fit",
               {"objective": obj("math", ("prompts_with_verifier",)), "model": "Qwen2.5-72B",
                "hardware": Hardware(gpu="A100-80G", gpus_per_node=8, nodes=1)}, {"grpo"},
               "seed §2: PPO keeps four models resident (~4x SFT); 72B full FT x2 exceeds 8x80 GB",
               fired=("ppo", "ppo-does-not-fit")),
    MethodCase("cost-pairs-orpo-or-dpo", {"objective": obj("chat", ("preference_pairs",), priority="cost")},
               {"dpo", "orpo"}, "seed §3: ORPO cheapest of all; DPO about SFT cost",
               fired=("orpo", "cost-cheapest")),
    MethodCase("pairs-and-labels-dpo", {"objective": obj("chat", ("preference_pairs", "binary_labels"))}, {"dpo"},
               "pairs present: DPO first; KTO stays feasible (pairs can be split)",
               below=("kto", "dpo")),
    MethodCase("exploration-verifier-online",
               {"objective": obj("reasoning", ("prompts_with_verifier", "preference_pairs"), needs_exploration=True)},
               {"grpo"}, "seed §10: online methods can discover new behaviour; DPO cannot (§3)",
               below=("dpo", "grpo")),
    MethodCase("objective-from-plan", {"plan": plan_with(obj("math", ("prompts_with_verifier",)))}, {"grpo"},
               "the objective comes from plan.objective when not given"),
]


@pytest.mark.parametrize("case", METHOD_CASES, ids=[c.id for c in METHOD_CASES])
def test_choose_method_table(case: MethodCase) -> None:
    rec = choose_method(**case.kwargs)
    ranked = [c.method.value for c in rec.ranked]
    if case.best is None:
        assert rec.best is None and ranked == [], f"{case.reason}: got {ranked}"
    else:
        assert rec.best is not None and rec.best.value in case.best, \
            f"expected {case.best} ({case.reason}); got ranking {[(c.method.value, c.score) for c in rec.ranked]}"
    out = {n.method.value for n in rec.not_recommended}
    assert case.excluded <= out, f"{case.excluded - out} should be not_recommended ({case.reason})"
    assert not set(ranked) & out
    assert set(ranked) | out == {m.value for m in Method}
    if case.fired:
        m, rule = case.fired
        choice = next(c for c in rec.ranked if c.method.value == m)
        assert any(f"[{rule}]" in r for r in choice.rationale), f"{rule} should score {m}: {choice.rationale}"
    if case.below:
        low, high = case.below
        assert ranked.index(low) > ranked.index(high), f"{low} should rank below {high}: {ranked}"
    for c in rec.ranked:
        assert c.guide_section.startswith("guide/") and c.watch
        assert all(r.startswith(("+", "-")) for r in c.rationale)
    text = rec.to_text()
    assert (rec.best.value in text) if rec.best else "No method is feasible" in text


def test_resident_roles_and_policy_follow_the_role_table() -> None:
    """seed §2 role table: PPO holds policy, reference, reward (when learned) and critic; GRPO drops
    the critic; DPO/KTO keep the reference implicitly; ORPO/SimPO drop it."""
    rec = choose_method(obj("chat", ("prompts_with_reward_model", "preference_pairs")))
    by = {c.method: c for c in rec.ranked}
    assert by[Method.PPO].resident_roles == [Role.POLICY, Role.REFERENCE, Role.CRITIC, Role.REWARD]
    assert Role.CRITIC not in by[Method.GRPO].resident_roles and Role.REWARD in by[Method.GRPO].resident_roles
    assert by[Method.DPO].resident_roles == [Role.POLICY, Role.REFERENCE]
    assert by[Method.ORPO].resident_roles == [Role.POLICY] and by[Method.SIMPO].resident_roles == [Role.POLICY]
    assert by[Method.GRPO].on_policy and not by[Method.DPO].on_policy
    verifier = {c.method: c for c in choose_method(obj("math", ("prompts_with_verifier",))).ranked}
    assert Role.REWARD not in verifier[Method.GRPO].resident_roles  # a verifier is code, not a model
    assert Role.REFERENCE not in verifier[Method.DAPO].resident_roles  # DAPO drops the KL term


def test_kl_off_in_plan_drops_the_reference() -> None:
    plan = plan_with(obj("math", ("prompts_with_verifier",)), algorithm=Algorithm(kl_coef=0.0))
    grpo = next(c for c in choose_method(plan=plan).ranked if c.method == Method.GRPO)
    assert grpo.resident_roles == [Role.POLICY]


def test_choose_method_bad_input_names_the_field() -> None:
    with pytest.raises(AdvisorError) as exc:
        choose_method()
    assert exc.value.problems[0].field == "objective"
    with pytest.raises(AdvisorError) as exc:
        choose_method(obj("math", ("prompts_with_verifier",)), model="Qwen2.5-7B-Instrukt")
    assert exc.value.problems[0].field == "model" and "Qwen2.5-7B" in exc.value.problems[0].allowed
    with pytest.raises(AdvisorError) as exc:
        choose_method(obj("math", ("prompts_with_verifier",)), hardware=Hardware(gpu="H1000"))
    assert exc.value.problems[0].field == "hardware.gpu"


# --------------------------------------------------------------------------- choose_framework table


@dataclass
class FrameworkCase:
    id: str
    kwargs: dict[str, Any]
    best: set[str] | None
    reason: str
    why_not: dict[str, str] = field(default_factory=dict)  # framework -> regex its why-not must match
    support: str | None = None  # support level of the winner


def hw(gpu: str = "H100", nodes: int = 1, per_node: int = 8) -> Hardware:
    return Hardware(gpu=gpu, nodes=nodes, gpus_per_node=per_node)


FRAMEWORK_CASES = [
    FrameworkCase("ppo-not-trl", {"method": "ppo"}, {"verl"},
                  "TRL 1.16 has no PPO (deleted in PR #7020, 2026-09); veRL gae is the reference PPO",
                  why_not={"trl": r"no ppo.*1\.16\.0.*deleted"}),
    FrameworkCase("kto-trl-only", {"method": "kto"}, {"trl"}, "OpenRLHF dropped KTO after 0.9.5; veRL never had it",
                  why_not={"openrlhf": r"0\.9\.5", "verl": "no kto", "nemo_rl": "no kto"}, support="full"),
    FrameworkCase("orpo-trl-experimental", {"method": "orpo"}, {"trl"},
                  "ORPO exists only in trl.experimental (Python API, no CLI)",
                  why_not={"openrlhf": "never had ORPO", "verl": "no orpo"}, support="experimental"),
    FrameworkCase("simpo-trl-experimental", {"method": "simpo"}, {"trl"},
                  "SimPO = experimental CPOTrainer loss_type=simpo", why_not={"openrlhf": "never had SimPO"},
                  support="experimental"),
    FrameworkCase("dpo-single-node-trl", {"method": "dpo", "hardware": hw()}, {"trl"},
                  "seed §5: any offline DPO-family method -> TRL; veRL has no DPO",
                  why_not={"verl": r"no dpo.*0\.9\.1"}),
    FrameworkCase("dpo-multinode", {"method": "dpo", "hardware": hw(nodes=4)}, {"trl"},
                  "seed §5: DPO family -> TRL; OpenRLHF train_dpo is the multi-node runner-up",
                  why_not={"openrlhf": "scored"}),
    FrameworkCase("grpo-one-node-trl", {"method": "grpo", "hardware": hw(), "model": "Qwen2.5-7B"}, {"trl"},
                  "seed §5: PyTorch on 1-8 GPUs -> TRL (trl grpo)"),
    FrameworkCase("grpo-multinode-verl", {"method": "grpo", "hardware": hw(nodes=4), "model": "Qwen2.5-32B"},
                  {"verl"}, "seed §5: large multi-node on-policy GRPO, maximum performance -> veRL",
                  why_not={"trl": r"multinode-online"}),
    FrameworkCase("grpo-big-one-node-verl", {"method": "grpo", "hardware": hw(), "model": "Qwen2.5-32B"}, {"verl"},
                  "32B on-policy needs FSDP sharding + rollout TP resharded each step (perf-anchors §5 cases)"),
    FrameworkCase("tpu-maxtext", {"method": "grpo", "hardware": hw("TPU-v5p", per_node=4)}, {"maxtext_rl"},
                  "seed §10: PyTorch vs JAX is the first fork; TPUs -> MaxText-RL",
                  why_not={"verl": "CUDA/ROCm", "trl": "CUDA/ROCm", "openrlhf": "CUDA/ROCm"}),
    FrameworkCase("jax-shop-gpu", {"method": "dpo", "hardware": hw(), "ecosystem": "jax"}, {"maxtext_rl"},
                  "seed §5: JAX shop -> MaxText-RL"),
    FrameworkCase("megatron-moe-nemo", {"method": "grpo", "hardware": hw(nodes=8), "model": "Qwen3-235B-A22B",
                                        "ecosystem": "megatron"}, {"nemo_rl"},
                  "seed §5: Megatron/NeMo ecosystem, biggest models -> NeMo-RL",
                  why_not={"verl": "megatron-shop", "openrlhf": "scored"}),
    FrameworkCase("megatron-ppo-70b", {"method": "ppo", "hardware": hw(nodes=4), "model": "Llama-3.1-70B",
                                       "ecosystem": "megatron"}, {"nemo_rl"},
                  "seed §5: Megatron shop -> NeMo-RL (veRL Megatron backend second)"),
    FrameworkCase("rocm-no-nemo", {"method": "grpo", "hardware": hw("MI300X", nodes=2), "model": "Qwen2.5-14B"},
                  {"verl"}, "NeMo-RL needs CUDA builds (transformer-engine); veRL/OpenRLHF run vLLM on ROCm",
                  why_not={"nemo_rl": "NVIDIA-only"}),
    FrameworkCase("non-llm-rllib", {"method": "ppo", "plan": plan_with(obj("non_llm", ("nothing",)), method="ppo")},
                  {"rllib"}, "seed §5: non-LLM RL -> RLlib",
                  why_not={"verl": "non-LLM", "trl": "no ppo"}),
    FrameworkCase("trlx-unmaintained", {"method": "ppo", "hardware": hw()}, {"verl", "openrlhf"},
                  "seed §5: TRLX superseded; check maintenance", why_not={"trlx": "unmaintained", "rllib": "not LLM-first"}),
    FrameworkCase("reinforce-pp-not-trl", {"method": "reinforce_pp", "hardware": hw(nodes=2)}, {"verl"},
                  "REINFORCE++ is in veRL/OpenRLHF/NeMo-RL, not TRL 1.16", why_not={"trl": "no reinforce_pp"}),
    FrameworkCase("rm-training", {"method": "reward_model", "hardware": hw()}, {"trl"},
                  "veRL has no RM trainer; TRL trl reward on one node",
                  why_not={"verl": "no reward-model trainer"}),
    FrameworkCase("dapo-one-node-verl", {"method": "dapo", "hardware": hw(), "model": "Qwen2.5-7B"}, {"verl"},
                  "TRL has only DAPO's loss and clip-higher, no dynamic sampling (frameworks.md §5)",
                  why_not={"trl": "partial support"}),
    FrameworkCase("method-from-plan", {"plan": plan_with(obj("chat", ("preference_pairs",)), method="kto",
                                                         framework="openrlhf")}, {"trl"},
                  "the method comes from plan.method; the plan's framework cannot run KTO"),
]


@pytest.mark.parametrize("case", FRAMEWORK_CASES, ids=[c.id for c in FRAMEWORK_CASES])
def test_choose_framework_table(case: FrameworkCase) -> None:
    rec = choose_framework(**case.kwargs)
    assert rec.best is not None and rec.best.value in case.best, \
        f"expected {case.best} ({case.reason}); got {[(c.framework.value, c.score) for c in rec.ranked]}"
    top = rec.ranked[0]
    # A clear "why not" for EACH of the others, and no why-not for the winner.
    assert {w.framework for w in rec.why_not} == set(Framework) - {top.framework}
    why = {w.framework.value: w.reason for w in rec.why_not}
    for fw, pattern in case.why_not.items():
        assert re.search(pattern, why[fw], re.IGNORECASE), f"why_not[{fw}] = {why[fw]!r}; wanted /{pattern}/"
    if case.support:
        assert top.support == case.support
    assert top.release_checked and top.reasons[0].startswith("+")
    assert top.entrypoint or not top.renderable
    assert top.label in rec.to_text()


def test_framework_plan_note_and_bad_input() -> None:
    rec = choose_framework(plan=plan_with(obj("math", ("prompts_with_verifier",)), method="ppo", framework="trl"))
    assert any("plan.framework is trl" in n and "cannot" in n for n in rec.notes)
    with pytest.raises(AdvisorError) as exc:
        choose_framework()
    assert exc.value.problems[0].field == "method"
    with pytest.raises(AdvisorError) as exc:
        choose_framework(method="grpoo")
    assert exc.value.problems[0].field == "method" and "grpo" in exc.value.problems[0].allowed
    with pytest.raises(AdvisorError) as exc:
        choose_framework(method=Method.GRPO, hardware=Hardware(gpu="B900"))
    assert exc.value.problems[0].field == "hardware.gpu"


def test_one_support_table_serves_choose_and_render() -> None:
    """Render's matrix is the render rows of framework_facts.yaml; a pair render_config writes is
    never one choose_framework calls unsupported, and every renderable framework has a row for
    every method."""
    from advisor.plan import Framework, Method
    from advisor.render.common import renderable_frameworks, supported_pairs

    facts = load_framework_facts()
    assert {f for f, ff in facts.frameworks.items() if ff.renderable} == set(renderable_frameworks()) \
        == {Framework.VERL, Framework.OPENRLHF, Framework.TRL, Framework.NEMO_RL}
    for fw in renderable_frameworks():
        assert set(facts.frameworks[fw].render) == set(Method), fw
    for fw, method in supported_pairs():
        assert facts.support(fw, method).support != "none", (fw, method)


# --------------------------------------------------------------------------- the data files


def test_support_matrix_matches_research(shared_dir) -> None:
    """The YAML support matrix agrees with research/frameworks.md §5 for the four checked frameworks."""
    text = (shared_dir / "research" / "frameworks.md").read_text(encoding="utf-8")
    section = text.split("## 5. Method support matrix", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and not r.startswith("| Method") and "---" not in r]
    names = {"PPO (critic)": Method.PPO, "GRPO": Method.GRPO, "RLOO": Method.RLOO, "REINFORCE++": Method.REINFORCE_PP,
             "DAPO": Method.DAPO, "DPO": Method.DPO, "KTO": Method.KTO, "ORPO": Method.ORPO, "SimPO": Method.SIMPO,
             "RM training": Method.REWARD_MODEL, "SFT": Method.SFT}
    cols = [Framework.VERL, Framework.OPENRLHF, Framework.TRL, Framework.NEMO_RL]
    facts = load_framework_facts()
    checked = 0
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        method = names.get(cells[0])
        if method is None:
            continue
        for fw, cell in zip(cols, cells[1:]):
            ours = facts.support(fw, method).support
            if cell.startswith("✘"):
                assert ours == "none", f"{fw.value} {method.value}: research says ✘, yaml says {ours}"
            elif cell.startswith("✔"):
                assert ours == "full", f"{fw.value} {method.value}: research says ✔, yaml says {ours}"
            else:
                assert ours in ("partial", "experimental"), f"{fw.value} {method.value}: research {cell!r}, yaml {ours}"
            checked += 1
    assert checked >= 40


def _slugs(markdown: str) -> set[str]:
    """GitHub heading anchors."""
    out = set()
    for line in markdown.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            s = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(s.replace(" ", "-"))
    return out


def test_guide_sections_exist() -> None:
    """Every guide_section and rule source points at a guide file (and heading) that exists."""
    if not (REPO / "guide").is_dir():
        pytest.skip("guide/ not present")
    refs = {mf.guide_section for mf in load_method_rules().methods.values()}
    refs |= {r.source.split(" ", 1)[0] for r in load_method_rules().rules if r.source.startswith("guide/")}
    refs |= {r.source.split(" ", 1)[0] for r in load_framework_facts().rules if r.source.startswith("guide/")}
    for ref in sorted(refs):
        path, _, anchor = ref.partition("#")
        file = REPO / path
        assert file.is_file(), f"{ref}: {path} does not exist"
        if anchor:
            assert anchor in _slugs(file.read_text(encoding="utf-8")), f"{ref}: no heading with anchor #{anchor}"


def test_every_rule_has_rationale_and_source() -> None:
    mr, ff = load_method_rules(), load_framework_facts()
    for r in [*mr.rules, *ff.rules]:
        assert r.rationale.strip() and r.source.strip() and (r.scores), r.id
    for e in [*mr.exclusions, *ff.exclusions]:
        assert e.reason.strip() and e.source.strip(), e.id
    assert "| `pairs-offline-first` |" in method_rules_md()
    assert "| `megatron-shop` |" in fw_rules_md()
    assert "| kto | ✔ | ✘ | ✘ | ✘ |" in support_matrix_markdown()  # TRL, veRL, OpenRLHF, NeMo-RL


def test_rulebook_rejects_bad_tables() -> None:
    from advisor import rulebook

    with pytest.raises(ValueError, match="unknown fact"):
        rulebook.check_when({"colour": "red"}, ["task"], "rules.x")
    with pytest.raises(ValueError, match="unknown operator"):
        rulebook.check_when({"task": {"approx": 1}}, ["task"], "rules.x")
    assert rulebook.holds({"data": {"any_of": ["a"], "none_of": ["b"]}}, {"data": ["a", "c"]})
    assert not rulebook.holds({"data": {"any_of": ["a"], "none_of": ["b"]}}, {"data": ["a", "b"]})
    assert not rulebook.holds({"total_gpus": {"lte": 8}}, {"total_gpus": None})  # unknown facts never fire


def test_cli_choose_method_text_and_json(capsys) -> None:
    """The lead's generic CLI: flags from Objective fields, readable table, --json structured output."""
    import json

    from rl_advisor.cli import main

    assert main(["choose-method", "--task", "math", "--data", "prompts_with_verifier"]) == 0
    out = capsys.readouterr().out
    assert "Recommended: GRPO" in out and "Not recommended:" in out
    assert main(["choose-method", "--task", "math", "--data", "prompts_with_verifier", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best"] == "grpo" and data["ranked"][0]["guide_section"].startswith("guide/algorithms.md")
    assert main(["choose-framework", "--method", "kto", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best"] == "trl" and len(data["why_not"]) == len(Framework) - 1
    with pytest.raises(SystemExit) as exc:  # argparse rejects values outside the DataKind choices
        main(["choose-method", "--task", "math", "--data", "verifier"])
    assert exc.value.code == 2
    assert "prompts_with_verifier" in capsys.readouterr().err
