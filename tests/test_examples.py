"""examples.md is real and current; every config key and flag the skill names exists in the pinned release.

1. examples.md is byte-identical to a fresh ``scripts/regenerate_examples.py`` run, and every
   artifact on it passes render_config's validators (veRL: Hydra compose against verl 0.9.1's own
   config + its validate_config; OpenRLHF: its 0.11.2 argparse parser and asserts; TRL: TrlParser
   in strict mode with the 1.16.0 config class; Kubernetes: the CRD schemas).
2. Every key or flag *named* in SKILL.md, guide/ and examples.md exists in the release, checked
   against the same framework machinery the validators use (the composed veRL config, OpenRLHF's
   parsers built from the installed source, TRL's config classes). Names written struck through
   (``~~`trainer.placement`~~``) are claims that a name does NOT exist, and are checked as such.

What counts as a name (explicit, so a reader can predict it):

* in prose, an inline code span whose text (before ``=`` or a space) is
  - a dotted key under a veRL top-level group (``actor_rollout_ref.``, ``algorithm.``, ``data.``,
    ``trainer.``, ``critic.``, ``reward.``, ...; the groups are read from the composed config),
  - a dotted OpenRLHF flag (``--ns.name``; flat ``--flags`` are other tools' unless struck through),
  - a TRL config field written ``GRPOConfig.beta`` (any ``<Name>Config.<field>`` of TRL);
* in ``bash``/``sh`` fenced blocks, every word of that form (``key=value`` overrides, flags);
* in generated tables, nothing is extracted from the text: the YAML rows they are generated from
  are checked directly, with the framework each key belongs to (tests below).

A leading ``+`` marks a veRL key that is outside the schema on purpose and is not checked; names
with ``*``, ``<``, ``/`` or ``{`` are patterns, not keys. NeMo-RL keys are not checked: there is no
installable NeMo-RL release to check them against (PyPI holds a placeholder).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

GUIDE = REPO / "guide"
DATA = REPO / "advisor" / "data"
EXAMPLES = REPO / "examples.md"

TRL_CLASSES = {
    "GRPOConfig": "trl.GRPOConfig", "RLOOConfig": "trl.RLOOConfig", "DPOConfig": "trl.DPOConfig",
    "KTOConfig": "trl.KTOConfig", "RewardConfig": "trl.RewardConfig", "SFTConfig": "trl.SFTConfig",
    "ModelConfig": "trl.ModelConfig", "ORPOConfig": "trl.experimental.orpo.ORPOConfig",
    "CPOConfig": "trl.experimental.cpo.CPOConfig",
    "OnlineDPOConfig": "trl.experimental.online_dpo.OnlineDPOConfig",
}
OPENRLHF_CLIS = ("openrlhf.cli.train_ppo_ray", "openrlhf.cli.train_dpo", "openrlhf.cli.train_rm",
                 "openrlhf.cli.train_sft")
VERL_CONFIGS = ("ppo_trainer", "ppo_megatron_trainer", "sft_trainer_engine")


def _load_script(name: str):
    """A script in scripts/ as a module (registered, so its dataclasses resolve their module)."""
    import sys

    qualified = f"rl_advisor_scripts_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- release schemas


@cache
def verl_tree() -> dict[str, Any]:
    """Union of veRL 0.9.1's composed configs (PPO, Megatron PPO, SFT) as nested dicts."""
    from omegaconf import OmegaConf

    from rl_advisor.validators.verl import compose, verl_dir

    if verl_dir() is None:
        pytest.fail("verl 0.9.1 is not installed (Makefile: pip install --no-deps verl==0.9.1)")
    merged: dict[str, Any] = {}

    def merge(dst: dict, src: dict) -> None:
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst.setdefault(k, v)

    for name in VERL_CONFIGS:
        cfg = compose(name, [])
        merge(merged, OmegaConf.to_container(cfg, resolve=False, throw_on_missing=False))
    return merged


def verl_has(key: str) -> bool:
    node: Any = verl_tree()
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


@cache
def openrlhf_flags(module: str) -> frozenset[str]:
    """Every option string of an OpenRLHF 0.11.2 CLI, read from its own parser code.

    The validator's compiled ``__main__`` block (``rl_advisor.validators.openrlhf.main_block``)
    builds the real parser; parse_args is intercepted to read the parser's option table.
    """
    from rl_advisor.validators import openrlhf as v

    if v.openrlhf_dir() is None:
        pytest.fail("openrlhf 0.11.2 is not installed (Makefile: pip install --no-deps openrlhf==0.11.2)")
    seen: set[str] = set()

    class _Stop(Exception):
        pass

    class _Recorder(argparse.ArgumentParser):
        def parse_args(self, *args: Any, **kwargs: Any):  # noqa: ANN201
            seen.update(self._option_string_actions)
            raise _Stop

    view = argparse.Namespace(**vars(argparse))
    view.ArgumentParser = _Recorder
    namespace = {"__name__": "__rl_advisor_flags__", "__argv__": [], "argparse": view,
                 "hierarchize": v._hierarchize()}
    with pytest.raises(_Stop):
        exec(v.main_block(module), namespace)  # noqa: S102 - OpenRLHF's own parser code
    return frozenset(seen)


def openrlhf_has(flag: str, module: str | None = None) -> bool:
    modules = [module] if module else OPENRLHF_CLIS
    return any(flag in openrlhf_flags(m) for m in modules)


@cache
def trl_fields(class_name: str) -> frozenset[str]:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    dotted = TRL_CLASSES[class_name]
    module, _, attr = dotted.rpartition(".")
    cls = getattr(importlib.import_module(module), attr)
    return frozenset(f.name for f in dataclasses.fields(cls))


def trl_has(name: str, class_name: str | None = None) -> bool:
    classes = [class_name] if class_name else list(TRL_CLASSES)
    return any(name in trl_fields(c) for c in classes)


# --------------------------------------------------------------------------- extraction


@cache
def verl_roots() -> frozenset[str]:
    return frozenset(verl_tree())


SPAN = re.compile(r"(?<!`)(?P<ticks>`{1,2})(?!`)(?P<text>[^\n]+?)(?<!`)(?P=ticks)(?!`)")
FENCE = re.compile(r"^(?P<ticks>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=ticks)[ \t]*$", re.S | re.M)
PATTERN_CHARS = set("*<>/{}$")


@dataclasses.dataclass(frozen=True)
class Name:
    kind: str          # verl | openrlhf | trl
    name: str          # key, flag or field
    scope: str | None  # TRL class
    stale: bool        # written struck through: must NOT exist
    where: str


def classify(token: str) -> tuple[str, str, str | None] | None:
    """(kind, name, scope) for a config key or flag, or None for anything else."""
    token = token.strip().strip("'\"")
    if token.startswith("--"):
        flag = token.split("=", 1)[0].split()[0]
        if re.fullmatch(r"--[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+", flag):
            return ("openrlhf", flag, None)
        if re.fullmatch(r"--[a-z][a-z0-9_]*", flag):
            return ("openrlhf-flat", flag, None)
        return None
    word = token.split()[0] if token.split() else token
    key = word.split("=", 1)[0]
    if key.startswith("+") or set(key) & PATTERN_CHARS:
        return None
    m = re.fullmatch(r"([A-Za-z]+Config)\.([a-z_][a-z0-9_]*)", key)
    if m and m.group(1) in TRL_CLASSES:
        return ("trl", m.group(2), m.group(1))
    if re.fullmatch(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z0-9_]+)+", key) and key.split(".", 1)[0] in verl_roots():
        return ("verl", key, None)
    return None


@cache
def _regen_docs():
    return _load_script("regenerate_docs")


def strip_generated(text: str) -> str:
    return _regen_docs().BLOCK.sub("", text)


def names_in(path: Path, where: str | None = None) -> list[Name]:
    """Every checkable name in a Markdown file (see the module docstring for the rules)."""
    text = strip_generated(path.read_text(encoding="utf-8"))
    where = where or path.relative_to(REPO).as_posix()
    out: list[Name] = []
    for fence in FENCE.finditer(text):
        info = fence["info"].strip().split()[0] if fence["info"].strip() else ""
        if info not in {"bash", "sh", "shell"}:
            continue
        from rl_advisor.validators.shell import script_words

        for word in script_words(fence["body"]):
            hit = classify(word)
            if hit and hit[0] != "openrlhf-flat":
                out.append(Name(hit[0], hit[1], hit[2], False, where))
    prose = FENCE.sub("", text)
    for span in SPAN.finditer(prose):
        stale = prose[max(0, span.start() - 2):span.start()] == "~~" and \
            prose[span.end():span.end() + 2] == "~~"
        hit = classify(span["text"])
        if not hit:
            continue
        kind, name, scope = hit
        if kind == "openrlhf-flat":
            if not stale:
                continue  # a flat --flag of another tool (rl-advisor, ray, trl vllm-serve, accelerate)
            kind = "openrlhf"
        out.append(Name(kind, name, scope, stale, where))
    return out


def exists(n: Name) -> bool:
    if n.kind == "verl":
        return verl_has(n.name)
    if n.kind == "openrlhf":
        return openrlhf_has(n.name)
    return trl_has(n.name, n.scope)


SKILL_DOCS = [REPO / "SKILL.md", *sorted(GUIDE.rglob("*.md")), EXAMPLES]


def all_names() -> list[Name]:
    out = []
    for doc in SKILL_DOCS:
        out += names_in(doc)
    return out


# --------------------------------------------------------------------------- the extractor itself


@pytest.mark.parametrize("token,expected", [
    ("actor_rollout_ref.rollout.n", ("verl", "actor_rollout_ref.rollout.n", None)),
    ("algorithm.adv_estimator=grpo", ("verl", "algorithm.adv_estimator", None)),
    ("trainer.v1.trainer_mode=separate_async", ("verl", "trainer.v1.trainer_mode", None)),
    ("+reward.reward_kwargs.overlong_buffer_cfg.enable", None),
    ("reward.reward_model.*", None),
    ("critic/vf_explained_var", None),
    ("--actor.eps_clip_low_high 0.2 0.28", ("openrlhf", "--actor.eps_clip_low_high", None)),
    ("--zero_stage", ("openrlhf-flat", "--zero_stage", None)),
    ("GRPOConfig.beta", ("trl", "beta", "GRPOConfig")),
    ("CPOConfig.simpo_gamma", ("trl", "simpo_gamma", "CPOConfig")),
    ("loss_fn.reference_policy_kl_type", None),  # NeMo-RL: not checkable here
    ("rl-advisor diagnose FILE --json", None),
    ("objective.data", None),
])
def test_classify(token, expected):
    assert classify(token) == expected


def test_extraction_finds_names_and_stale_markers(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("Use `actor_rollout_ref.rollout.n` and `--vllm.num_engines 2`, not "
                   "~~`trainer.placement`~~ or ~~`--colocate_all_models`~~; `GRPOConfig.beta` and "
                   "`--json`.\n\n```bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=8 \\\n"
                   "  'data.val_files=[a]'\n```\n\n```yaml\ndata.not_a_key: 1\n```\n")
    found = {(n.kind, n.name, n.stale) for n in names_in(doc, where="x.md")}
    assert found == {("verl", "actor_rollout_ref.rollout.n", False), ("openrlhf", "--vllm.num_engines", False),
                     ("verl", "trainer.placement", True), ("openrlhf", "--colocate_all_models", True),
                     ("trl", "beta", False), ("verl", "data.train_batch_size", False),
                     ("verl", "data.val_files", False)}


def test_the_checkers_reject_what_does_not_exist():
    assert verl_has("actor_rollout_ref.hybrid_engine") and not verl_has("trainer.placement")
    assert openrlhf_has("--vllm.num_engines") and not openrlhf_has("--vllm_num_engines")
    assert openrlhf_has("--model.beta", "openrlhf.cli.train_dpo")
    assert not openrlhf_has("--model.beta", "openrlhf.cli.train_ppo_ray")
    assert trl_has("beta", "GRPOConfig") and not trl_has("max_prompt_length", "GRPOConfig")
    assert not trl_has("max_prompt_length", "DPOConfig")


# --------------------------------------------------------------------------- 2. names in the skill


def test_the_skill_names_many_keys():
    names = all_names()
    kinds = {k: sum(1 for n in names if n.kind == k) for k in ("verl", "openrlhf", "trl")}
    assert kinds["verl"] >= 100 and kinds["openrlhf"] >= 60 and kinds["trl"] >= 40, kinds
    assert sum(n.stale for n in names) >= 8


@pytest.mark.parametrize("doc", SKILL_DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_named_key_exists_in_the_pinned_release(doc):
    wrong = []
    for n in names_in(doc):
        if exists(n) == n.stale:
            what = "is struck through but EXISTS" if n.stale else "does not exist"
            scope = f"{n.scope}." if n.scope else ""
            wrong.append(f"{n.kind} {scope}{n.name} {what}")
    assert not wrong, f"{doc.name}: " + "; ".join(sorted(set(wrong)))


# --------------------------------------------------------------------------- keys behind the generated tables


def _fix_rows() -> list[tuple[str, str, str, str | None]]:
    """(source, framework, key, scope) for every fix key in the data the guide's tables show."""
    rows: list[tuple[str, str, str, str | None]] = []

    def add(source: str, fw: str, fixes: list[dict] | None) -> None:
        for f in fixes or []:
            rows.append((source, fw, f["key"], f.get("scope")))

    rules = yaml.safe_load((DATA / "diagnosis_rules.yaml").read_text(encoding="utf-8"))
    for r in rules["rules"]:
        for fw, fixes in (r.get("fixes") or {}).items():
            add(f"diagnosis_rules:{r['id']}", fw, fixes)
    sigs = yaml.safe_load((DATA / "diagnosis_signatures.yaml").read_text(encoding="utf-8"))
    for cat, per_fw in ((sigs.get("oom") or {}).get("fixes") or {}).items():
        for fw, fixes in (per_fw or {}).items():
            add(f"diagnosis_signatures:oom.{cat}", fw, fixes)
    for s in sigs.get("signatures", []):
        for fw, fixes in (s.get("fixes") or {}).items():
            add(f"diagnosis_signatures:{s['id']}", fw, fixes)
    ladder = yaml.safe_load((DATA / "memory_fixes.yaml").read_text(encoding="utf-8"))
    for fix in ladder["fixes"]:
        for fw, mapping in (fix.get("keys") or {}).items():
            for key in mapping or {}:
                rows.append((f"memory_fixes:{fix['id']}", fw, key, None))
    return rows


OPENRLHF_SCOPES = {"train_ppo_ray", "train_dpo", "train_rm", "train_sft"}


def _fix_key_exists(fw: str, key: str, scope: str | None) -> bool | None:
    """True/False for a key-shaped fix, None for one that is not a framework key: an environment
    variable, a command to run (``ray logs``), or a NeMo-RL key (no release to check against)."""
    key = key.lstrip("+")
    if fw == "verl":
        hit = classify(key)
        return verl_has(key) if hit and hit[0] == "verl" and hit[1] == key else None
    if fw == "openrlhf":
        if not re.fullmatch(r"--[a-z][a-z0-9_.]*", key):
            return None
        module = f"openrlhf.cli.{scope}" if scope in OPENRLHF_SCOPES else None
        return openrlhf_has(key, module)
    if fw == "trl":
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", key):
            return None
        return trl_has(key, scope if scope in TRL_CLASSES else None)
    return None


def test_every_fix_key_in_the_generated_tables_exists():
    rows = _fix_rows()
    checked = [r for r in rows if _fix_key_exists(r[1], r[2], r[3]) is not None]
    assert len(checked) >= 50, len(checked)
    wrong = [f"{src} [{fw}] {scope + '.' if scope else ''}{key}" for src, fw, key, scope in rows
             if _fix_key_exists(fw, key, scope) is False]
    assert not wrong, "keys the guide shows that the pinned release does not have: " + "; ".join(wrong)


def test_every_entrypoint_in_the_decision_tables_uses_real_keys():
    """Entry points in framework_facts.yaml (shown in guide/frameworks.md) name real keys/flags."""
    facts = yaml.safe_load((DATA / "framework_facts.yaml").read_text(encoding="utf-8"))
    wrong = []
    checked = 0
    for fw in ("verl", "openrlhf"):
        for method, row in facts["frameworks"][fw]["methods"].items():
            entry = (row.get("entrypoint") or "").split("#", 1)[0]
            module = next((w for w in entry.split() if w.startswith("openrlhf.cli.")), None)
            for word in entry.split():
                hit = classify(word)
                if not hit or hit[0] == "openrlhf-flat":
                    continue
                checked += 1
                ok = verl_has(hit[1]) if hit[0] == "verl" else openrlhf_has(hit[1], module)
                if not ok:
                    wrong.append(f"{fw}.{method}: {hit[1]}")
    assert checked >= 10
    assert not wrong, wrong


# --------------------------------------------------------------------------- 1. examples.md


def test_examples_md_is_byte_identical_to_a_fresh_regeneration():
    regen = _load_script("regenerate_examples")
    fresh = regen.build()
    current = EXAMPLES.read_text(encoding="utf-8")
    assert current == fresh, "examples.md is stale: run python scripts/regenerate_examples.py (make examples)"


def test_examples_cover_the_six_required_artifacts():
    regen = _load_script("regenerate_examples")
    text = EXAMPLES.read_text(encoding="utf-8")
    assert "python3 \\\n  -m \\\n  verl.trainer.main_ppo" in text or "verl.trainer.main_ppo" in text
    assert "openrlhf.cli.train_ppo_ray" in text and "--algo.advantage.estimator" in text
    assert "openrlhf.cli.train_rm" in text
    assert "kind: RayJob" in text and "kueue.x-k8s.io/queue-name" in text
    assert "STRICT_PACK" in text or "PACK" in text
    kinds = {ex.anchor for ex in regen.EXAMPLES}
    assert kinds == {"grpo-on-verl", "grpo-on-trl", "ppo-on-openrlhf", "dpo-on-trl", "ray-placement",
                     "kuberay-rayjob-with-kueue", "reward-model-recipe"}
    assert "trl.scripts.grpo" in text or "trl grpo" in text or "GRPOConfig" in text
    # no repeated blocks: the memory-knob comments are folded, each Plan printed once
    assert "#   train_backend:" not in text
    assert text.count("<summary>The Plan</summary>") == len({ex.plan for ex in regen.EXAMPLES})
    for ex in regen.EXAMPLES:
        assert (REPO / "examples" / "plans" / ex.plan).is_file(), ex.plan


def _rendered_examples():
    regen = _load_script("regenerate_examples")
    return {f"{ex.anchor} ({ex.plan})": regen.rendered_for(ex)[2] for ex in regen.EXAMPLES}


def test_every_example_artifact_passes_the_release_validators():
    validators = pytest.importorskip("rl_advisor.validators")
    validate_rendered = getattr(validators, "validate_rendered", None)
    if validate_rendered is None:
        pytest.fail("rl_advisor.validators.validate_rendered is missing (H4's interface)")
    failures = []
    ran = 0
    for plan_file, rendered in _rendered_examples().items():
        for result in validate_rendered(rendered):
            if result.skipped:
                continue
            ran += 1
            if not result.ok:
                failures.append(f"{plan_file} {result.artifact} [{result.validator}]: {result.errors}")
    assert ran >= 10, ran
    assert not failures, "\n".join(failures)
