"""The guide and the tools agree: one source of truth for rules, thresholds, facts and fixes.

1. Every generated block in guide/ equals a fresh rendering from the tools' data files
   (scripts/regenerate_docs.py), and every block has a generator.
2. Every guide section the tools cite (``guide/x.md#anchor`` in advisor/data/*.yaml and in the
   tools' outputs) exists, so an agent following a citation lands on the right heading.
3. The hand-written tables that summarise the same decisions agree with the tools: the method
   support matrix with render_config's support table, and the decision guide's "start with" table
   with choose_method's actual ranking.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.test_skill import anchors

GUIDE = REPO / "guide"
DATA = REPO / "advisor" / "data"


def _load_regenerate_docs():
    spec = importlib.util.spec_from_file_location("regenerate_docs", REPO / "scripts" / "regenerate_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


regen = _load_regenerate_docs()


# --------------------------------------------------------------------------- 1. generated blocks


@pytest.mark.parametrize("page", sorted(GUIDE.rglob("*.md")) + [REPO / "SKILL.md"],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_generated_blocks_equal_a_fresh_regeneration(page):
    text = page.read_text(encoding="utf-8")
    fresh = regen.regenerate_text(text)
    if text != fresh:
        stale = [n for n in regen.blocks_in(text)
                 if regen.BLOCK.search(text) and _block(text, n) != _block(fresh, n)]
        pytest.fail(f"{page.name}: stale generated blocks {stale}; run python scripts/regenerate_docs.py")


def _block(text: str, name: str) -> str:
    for m in regen.BLOCK.finditer(text):
        if m["name"] == name:
            return m["body"]
    raise AssertionError(f"no block {name}")


def test_every_block_has_a_generator_and_every_generator_is_used():
    used = set()
    for page in GUIDE.rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        names = regen.blocks_in(text)
        assert len(names) == len(set(names)), f"{page.name}: a block appears twice"
        assert text.count("<!-- BEGIN GENERATED") == len(names), f"{page.name}: unbalanced markers"
        used |= set(names)
    assert used == set(regen.GENERATORS), (used ^ set(regen.GENERATORS))


def test_regeneration_changes_only_generated_blocks_and_reflects_the_data(monkeypatch, tmp_path):
    """A changed rule in the data changes the guide (the sync is real, not a copy of itself)."""
    page = (GUIDE / "reference" / "method-rules.md").read_text(encoding="utf-8")
    data = yaml.safe_load((DATA / "method_rules.yaml").read_text(encoding="utf-8"))
    data["rules"][0]["rationale"] = "A rationale that exists only in this test."
    fake = tmp_path / "data"
    fake.mkdir()
    for f in DATA.iterdir():
        (fake / f.name).write_bytes(f.read_bytes())
    (fake / "method_rules.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.setattr(regen, "DATA", fake)
    from importlib import resources

    import advisor.choose_method as cm

    original = resources.files

    class _Files:
        def __init__(self, pkg):
            self._real = original(pkg)

        def joinpath(self, *parts):
            if parts[-1] == "method_rules.yaml" or parts == ("data/method_rules.yaml",):
                return fake / "method_rules.yaml"
            return self._real.joinpath(*parts)

    monkeypatch.setattr(resources, "files", _Files)
    try:
        fresh = regen.regenerate_text(page)
    finally:
        cm.load_method_rules.cache_clear()
    assert "A rationale that exists only in this test." in fresh
    outside = regen.BLOCK.sub("", page)
    assert regen.BLOCK.sub("", fresh) == outside, "regeneration touched prose outside the markers"


# --------------------------------------------------------------------------- 2. citations resolve


GUIDE_REF = re.compile(r"guide/([a-z0-9-]+\.md)(?:#([a-z0-9-]+))?")


def _cited_sections() -> list[tuple[str, str, str | None]]:
    out = []
    for f in sorted(DATA.glob("*.yaml")):
        for page, anchor in GUIDE_REF.findall(f.read_text(encoding="utf-8")):
            out.append((f.name, page, anchor or None))
    return out


def test_the_tools_data_cites_guide_sections():
    cited = _cited_sections()
    assert any(src == "method_rules.yaml" for src, _, _ in cited)


@pytest.mark.parametrize("source,page,anchor", sorted(set(_cited_sections())),
                         ids=lambda v: str(v))
def test_every_guide_section_cited_by_the_tools_exists(source, page, anchor):
    path = GUIDE / page
    assert path.is_file(), f"{source} cites guide/{page}, which does not exist"
    if anchor:
        assert anchor in anchors(path), f"{source} cites guide/{page}#{anchor}: no such heading"


# --------------------------------------------------------------------------- 3. hand-written summaries


ROW_TO_METHOD = {"PPO (critic, GAE)": "ppo", "GRPO": "grpo", "RLOO": "rloo", "REINFORCE++": "reinforce_pp",
                 "DAPO": "dapo", "Dr.GRPO": "dr_grpo", "GSPO": "gspo", "DPO": "dpo", "KTO": "kto",
                 "ORPO": "orpo", "SimPO": "simpo", "Reward model": "reward_model", "SFT": "sft"}
COLUMN_TO_FRAMEWORK = {"veRL 0.9.1": "verl", "OpenRLHF 0.11.2": "openrlhf", "TRL 1.16.0": "trl",
                       "NeMo-RL 0.6": "nemo_rl"}


def markdown_table_after(text: str, heading: str) -> list[list[str]]:
    """The first pipe table after a heading, as rows of stripped cells (header first)."""
    section = text[text.index(heading):]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows


def supported(cell: str) -> bool:
    return not (cell.startswith("✘") or cell in {"—", "-", ""})


def test_method_support_matrix_matches_render_support_table():
    from advisor.render.common import support_table

    support = support_table()
    rows = markdown_table_after((GUIDE / "frameworks.md").read_text(encoding="utf-8"),
                                "## 1. Method support matrix")
    header, body = rows[0], rows[1:]
    checked = 0
    for row in body:
        method = ROW_TO_METHOD.get(row[0])
        if method is None:
            continue
        for col, cellv in zip(header[1:], row[1:]):
            fw = COLUMN_TO_FRAMEWORK.get(col)
            if fw is None or method not in support["matrix"].get(fw, {}):
                continue
            tool_says = "entry" in support["matrix"][fw][method]
            assert supported(cellv) == tool_says, \
                f"guide says {row[0]} on {col} is {cellv!r}; the support table's render rows say supported={tool_says}"
            checked += 1
    assert checked >= 40, checked


START_WITH = {"Preference pairs": {"data": ["preference_pairs"], "task": "chat"},
              "Binary labels (unpaired)": {"data": ["binary_labels"], "task": "chat"},
              "Prompts + verifier": {"data": ["prompts_with_verifier"], "task": "math"},
              "Prompts + trusted RM": {"data": ["prompts_with_reward_model"], "task": "chat"},
              "Demonstrations only": {"data": ["demonstrations"], "task": "chat", "has_sft_model": False},
              "A judge + constitution, no labels": {"data": ["nothing"], "task": "safety",
                                                    "has_judge_model": True},
              }
METHOD_WORDS = {"dpo": "DPO", "kto": "KTO", "grpo": "GRPO", "rloo": "RLOO", "sft": "SFT",
                "rejection_sampling": "rejection sampling", "rlaif": "RLAIF", "ppo": "PPO",
                "simpo": "SimPO", "orpo": "ORPO", "dapo": "DAPO"}


def test_decision_table_start_with_matches_choose_method():
    """For each row of the guide's short decision table, choose_method's top pick is named in
    the row's "Start with" cell."""
    from advisor.choose_method import choose_method
    from advisor.plan import Objective

    rows = markdown_table_after((GUIDE / "decision-guides.md").read_text(encoding="utf-8"),
                                "The short version")
    by_row = {r[0]: r for r in rows[1:]}
    assert set(START_WITH) <= set(by_row), set(START_WITH) - set(by_row)
    for label, objective in START_WITH.items():
        best = choose_method(objective=Objective(**objective)).best.value
        start = by_row[label][1]
        assert METHOD_WORDS[best] in start, f"{label}: choose_method ranks {best} first; guide says {start!r}"


def test_categories_named_in_the_prose_exist_in_diagnose_runs_taxonomy():
    """Red flags and troubleshooting name diagnose_run categories in parentheses: `(`name`)`."""
    taxonomy = yaml.safe_load((DATA / "diagnosis_taxonomy.yaml").read_text(encoding="utf-8"))["categories"]
    named = set()
    for page in ("red-flags.md", "troubleshooting.md", "SKILL.md"):
        path = GUIDE / page if page != "SKILL.md" else REPO / page
        text = regen.BLOCK.sub("", path.read_text(encoding="utf-8"))
        named |= set(re.findall(r"\(`([a-z_]+)`\)", text))
    assert len(named) >= 10, named
    unknown = sorted(named - set(taxonomy))
    assert not unknown, f"not diagnose_run categories: {unknown}"


def test_framework_support_matrix_agrees_with_choose_framework_facts():
    """The hand-written matrix in frameworks.md §1 and choose_framework's facts say the same."""
    facts = yaml.safe_load((DATA / "framework_facts.yaml").read_text(encoding="utf-8"))["frameworks"]
    rows = markdown_table_after((GUIDE / "frameworks.md").read_text(encoding="utf-8"),
                                "## 1. Method support matrix")
    header, body = rows[0], rows[1:]
    checked = 0
    for row in body:
        method = ROW_TO_METHOD.get(row[0])
        if method is None:
            continue
        for col, cellv in zip(header[1:], row[1:]):
            fw = COLUMN_TO_FRAMEWORK.get(col)
            if fw is None:
                continue
            level = facts[fw]["methods"].get(method, {}).get("support", "none")
            assert supported(cellv) == (level != "none"), \
                f"guide: {row[0]} on {col} = {cellv!r}; framework_facts.yaml: {level}"
            checked += 1
    assert checked >= 50, checked


# Numbers the hand-written prose states about diagnose_run's thresholds, and the rule parameter
# each one restates. If a threshold changes in diagnosis_rules.yaml, this names the sentence to fix.
PROSE_THRESHOLDS = [
    ("red-flags.md", "more than 80% from its start", "entropy_collapse", "drop", 0.8),
    ("red-flags.md", "or below 0.05", "entropy_collapse", "floor", 0.05),
    ("reward-hacking-and-eval.md", "> 1.5 and rising", "entropy_explosion", "level", 1.5),
    ("red-flags.md", "KL above 1.0 per token", "kl_spike", "kl_level", 1.0),
    ("red-flags.md", "×10 between two logs", "kl_spike", "factor", 10.0),
    ("red-flags.md", "KL above 0.1 and still", "kl_drift", "kl_level", 0.1),
    ("red-flags.md", "length grows more than 2×", "reward_hacking_kl_length", "length_ratio", 2.0),
    ("red-flags.md", "below half their length", "reward_shortcut", "length_ratio", 0.5),
    ("red-flags.md", "`frac_reward_zero_std` above 0.7", "zero_variance_groups", "frac_warn", 0.7),
    ("red-flags.md", "clip ratio above 0.05", "response_truncation", "warn", 0.05),
    ("troubleshooting.md", "Clip ratio of response length > 0.2", "response_truncation", "error", 0.2),
    ("red-flags.md", "margins above 10", "dpo_overoptimization", "margin_above", 10.0),
    ("red-flags.md", "loss\n  below 0.05", "dpo_overoptimization", "loss_below", 0.05),
    ("reward-hacking-and-eval.md", "spikes ≥ 10× the running median", "grad_norm_spikes", "factor", 10.0),
    ("performance.md", "above 0.5, with a long tail", "generation_bound", "share", 0.5),
    ("performance.md", "above ~1.3", "generation_bound", "tail_ratio", 1.3),
    ("systems-architecture.md", "alarming above 1.05", "logprob_mismatch", "tme_warn", 1.05),
]


@pytest.mark.parametrize("page,phrase,rule,param,value", PROSE_THRESHOLDS,
                         ids=[f"{r}.{p}" for _, _, r, p, _ in PROSE_THRESHOLDS])
def test_prose_thresholds_are_diagnose_runs_thresholds(page, phrase, rule, param, value):
    rules = {r["id"]: r for r in yaml.safe_load((DATA / "diagnosis_rules.yaml").read_text(encoding="utf-8"))["rules"]}
    text = regen.BLOCK.sub("", (GUIDE / page).read_text(encoding="utf-8"))
    assert phrase in text, f"guide/{page} no longer says {phrase!r}"
    assert rule in rules, f"diagnosis_rules.yaml has no rule {rule}"
    actual = rules[rule]["params"][param]
    assert actual == value, f"guide/{page} says {phrase!r} but {rule}.{param} = {actual}"


ROLE_ROWS = {"PPO": ["ppo"], "GRPO, DAPO, Dr.GRPO, GSPO, RLOO, REINFORCE++":
             ["grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp"],
             "DPO, KTO": ["dpo", "kto"], "ORPO, SimPO": ["orpo", "simpo"],
             "Reward-model training": ["reward_model"], "Rejection sampling / best-of-n": ["rejection_sampling"],
             "RLAIF / Constitutional AI": ["rlaif"]}


def test_role_table_agrees_with_choose_methods_resident_roles():
    """loop-and-roles.md §3 and method_rules.yaml agree on the critic, on whether a reference can be
    resident, and on online (rollout engine) vs offline. Conditional cells ("when KL > 0") allow
    either."""
    methods = yaml.safe_load((DATA / "method_rules.yaml").read_text(encoding="utf-8"))["methods"]
    rows = markdown_table_after((GUIDE / "loop-and-roles.md").read_text(encoding="utf-8"),
                                "## 3. Which roles each method keeps resident")
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    assert set(ROLE_ROWS) == {r[0] for r in body}, {r[0] for r in body} ^ set(ROLE_ROWS)
    for row in body:
        for m in ROLE_ROWS[row[0]]:
            facts = methods[m]
            roles = set(facts["roles"]) | set(facts.get("roles_if_learned_reward", []))
            critic, reference = row[col["critic"]], row[col["reference"]]
            if critic.startswith(("✔", "✘")):
                assert critic.startswith("✔") == ("critic" in roles), (row[0], m, "critic")
            if reference.startswith("✘"):
                assert "reference" not in roles, (row[0], m, "reference")
            if reference.startswith("✔"):
                assert "reference" in roles, (row[0], m, "reference")
            # RLAIF and rejection sampling generate as an offline batch stage, not per step
            if row[col["rollout engine"]] in ("✔", "✘") and m not in ("rlaif", "rejection_sampling"):
                assert (row[col["rollout engine"]] == "✔") == facts["on_policy"], (row[0], m, "on_policy")


def test_constants_named_in_the_memory_prose_exist():
    constants = yaml.safe_load((DATA / "memory_constants.yaml").read_text(encoding="utf-8"))["constants"]
    prose = regen.BLOCK.sub("", (GUIDE / "memory-budgeting.md").read_text(encoding="utf-8"))
    named = {n for n in re.findall(r"`([a-z]+(?:_[a-z0-9]+)+)`", prose)
             if re.search(r"_(per_element|tokens|gib|fraction|factor|per_param)$", n)}
    assert len(named) >= 4, named
    assert named <= set(constants), f"not in memory_constants.yaml: {sorted(named - set(constants))}"


# --------------------------------------------------------------------------- 4. openable sources

# Files a user of the package cannot open: the project's research notes and its dev cases.
UNSHIPPED = re.compile(r"(?<![\w/-])(?:diagnosis-rules\.md|perf-anchors\.md|research/[\w./-]+|frameworks\.md §|"
                       r"cases? (?:verl|trl|nemorl|openrlhf|simplerl|easyr1|rllm|sglang|tinyzero)-[\w-]+)")


def _source_fields(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("source", "sources") and isinstance(value, (str, list)):
                yield f"{path}.{key}", " ".join(value) if isinstance(value, list) else value
            else:
                yield from _source_fields(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _source_fields(value, f"{path}[{i}]")


@pytest.mark.parametrize("name", ["diagnosis_rules.yaml", "diagnosis_signatures.yaml",
                                  "diagnosis_taxonomy.yaml", "method_rules.yaml", "framework_facts.yaml"])
def test_diagnosis_and_method_sources_are_openable(name):
    """A finding's or a method's source is a paper, framework doc/code or issue, never a file that
    does not ship (the project's research notes, its dev cases)."""
    data = yaml.safe_load((DATA / name).read_text(encoding="utf-8"))
    bad = [(where, text) for where, text in _source_fields(data) if UNSHIPPED.search(text)]
    assert not bad, bad


@pytest.mark.parametrize("page", sorted(GUIDE.glob("*.md")) + [REPO / "SKILL.md"] +
                         [GUIDE / "reference" / f"{n}.md" for n in ("diagnosis-rules", "diagnosis-signatures",
                                                                     "diagnosis-taxonomy", "method-rules",
                                                                     "framework-facts", "framework-rules")],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_guide_pages_cite_nothing_unshipped(page):
    found = UNSHIPPED.findall(page.read_text(encoding="utf-8"))
    assert not found, f"{page.name} cites files a user cannot open: {found}"
