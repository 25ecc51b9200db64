"""Every fix budget_memory's ladder or diagnose_run can emit is checked against the code that reads it.

advisor/data/fix_reads.yaml says, per framework and key, the pinned release's default, the scopes
(TRL config class, OpenRLHF entry) and the condition under which the release reads the key. Here:
- every config fix the ladder or the diagnosis tables can emit has a row;
- each row's key exists in the release and its default is the release's own (veRL's composed
  ppo_trainer config, OpenRLHF's parser, TRL's config dataclasses);
- for plans of every framework and method, each fix offered to the plan has its condition met and
  its value differs from the value in effect, both judged on the framework's own parse of the
  plan's rendered config (with the fix applied), not on our table;
- the corrected fixes of issue #15, one test each.
"""

from __future__ import annotations

import copy
import dataclasses
import shlex
from functools import cache
from typing import Any

import pytest

from advisor import fix_reads
from advisor.errors import AdvisorError
from advisor.diagnosis.tables import make_fixes, oom_table, rules, signatures
from advisor.memory.fixes import apply_fix, fix_table
from advisor.plan import Framework, Method, Plan, plan_from_yaml
from advisor.render import render_config
from advisor.render.common import supported_pairs
from tests.conftest import example_plan_path

FRAMEWORKS = ("verl", "openrlhf", "trl")


# ----------------------------------------------------------------------------- what can be emitted


def _diagnosis_tables() -> list[dict[str, list[dict[str, Any]]]]:
    return ([r.get("fixes") or {} for r in rules()] + [s.get("fixes") or {} for s in signatures()]
            + list(oom_table()["fixes"].values()))


def emitted() -> list[tuple[str, str, Any, str | None, str]]:
    """(framework, key, value, scope, where) for every config fix either emitter can produce."""
    out = []
    for table in _diagnosis_tables():
        for fw, rows in table.items():
            if fw not in FRAMEWORKS:
                continue
            for row in rows:
                if row.get("kind", "config") == "config":
                    out.append((fw, str(row["key"]), row.get("value"), row.get("scope"), "diagnosis"))
    for row in fix_table():
        for fw, keys in (row.get("keys") or {}).items():
            for key, value in keys.items():
                out.append((fw, key, value, None, f"memory:{row['id']}"))
    return out


def test_every_emitted_fix_has_a_row_with_a_source():
    missing = []
    for fw, key, _value, scope, where in emitted():
        row = fix_reads.entry(fw, key)
        if row is None:
            missing.append(f"{where}: {fw} {key}")
            continue
        assert row.get("source"), (fw, key)
        if scope and row.get("scopes"):
            assert scope in row["scopes"], f"{where}: {fw} {key} offered for {scope}, read by {row['scopes']}"
    assert not missing, missing
    assert len({(fw, k) for fw, k, *_ in emitted()}) > 100


# ----------------------------------------------------------------------------- the releases' own defaults


@cache
def verl_defaults():
    from rl_advisor.validators import verl as v

    return v.compose("ppo_trainer", [])


def _verl_get(cfg, key):
    from omegaconf import OmegaConf

    node = OmegaConf.select(cfg, key, throw_on_missing=False, default="<missing>")
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


OPENRLHF_MIN = {"train_ppo_ray": ["--actor.model_name_or_path", "m", "--reward.remote_url", "http://rm",
                                  "--data.prompt_dataset", "d"],
                "train_dpo": ["--model.model_name_or_path", "m", "--data.dataset", "d"]}


@cache
def openrlhf_defaults(entry: str):
    from rl_advisor.validators import openrlhf as v

    args, _ = v.parse(f"openrlhf.cli.{entry}", list(OPENRLHF_MIN[entry]))
    if entry == "train_ppo_ray":
        args.reward.remote_url = None  # set above only to satisfy the parser's own requirement
    return args


def _attr(ns, flag: str):
    cur = ns
    for part in flag.lstrip("-").split("."):
        if not hasattr(cur, part):
            return "<missing>"
        cur = getattr(cur, part)
    return list(cur) if isinstance(cur, tuple) else cur


def _trl_class(scope: str):
    import trl

    if hasattr(trl, scope):
        return getattr(trl, scope)
    from trl.experimental.online_dpo import OnlineDPOConfig  # noqa: F401 - only scope outside trl's top level

    return OnlineDPOConfig


def _trl_default(key: str, scope: str):
    from trl import ModelConfig

    for cls in (_trl_class(scope), ModelConfig):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if key in fields:
            if key in ("gradient_checkpointing", "activation_checkpointing"):
                # resolved in TrainingArguments.__post_init__ (the alias mirrors the new name)
                return getattr(cls(output_dir="/tmp/x", use_cpu=True, report_to=[]), key)
            f = fields[key]
            return f.default if f.default is not dataclasses.MISSING else f.default_factory()
    return "<missing>"


def _rows():
    for fw in FRAMEWORKS:
        for key, row in fix_reads.table()[fw]["keys"].items():
            yield fw, key, row


@pytest.mark.parametrize("fw,key,row", list(_rows()), ids=[f"{f}:{k}" for f, k, _ in _rows()])
def test_row_key_exists_and_default_is_the_releases(fw, key, row):
    scopes = row.get("scopes")
    if fw == "verl":
        real = _verl_get(verl_defaults(), key)
        assert real != "<missing>", f"{key} is not a veRL 0.9.1 key"
        assert fix_reads.normalise(real) == fix_reads.normalise(row["default"]), (key, real)
    elif fw == "openrlhf":
        for entry in scopes or ["train_ppo_ray"]:
            real = _attr(openrlhf_defaults(entry), key)
            assert real != "<missing>", f"{key} is not a flag of {entry}"
            assert fix_reads.normalise(real) == fix_reads.normalise(row["default"]), (key, entry, real)
    else:
        for scope in scopes or ["GRPOConfig", "DPOConfig"]:
            real = _trl_default(key, scope)
            assert real != "<missing>", f"{key} is not a field of {scope}"
            want = fix_reads.default("trl", key, scope)
            assert fix_reads.normalise(real) == fix_reads.normalise(want), (key, scope, real)


def test_condition_defaults_are_the_releases():
    cfg = verl_defaults()
    for key, want in fix_reads.table()["verl"]["condition_defaults"].items():
        assert fix_reads.normalise(_verl_get(cfg, key)) == fix_reads.normalise(want), key
    args = openrlhf_defaults("train_ppo_ray")
    for key, want in fix_reads.table()["openrlhf"]["condition_defaults"].items():
        assert fix_reads.normalise(_attr(args, key)) == fix_reads.normalise(want), key
    for key, want in fix_reads.table()["trl"]["condition_defaults"].items():
        assert fix_reads.normalise(_trl_default(key, "GRPOConfig")) == fix_reads.normalise(want), key


# ----------------------------------------------------------------------------- the framework's own view of a plan


def framework_view(plan: Plan, extra: dict[str, Any] | None = None):
    """A getter over the framework's own parse of the plan's rendered config, with ``extra``
    settings applied the way a user would (Hydra override, flag, YAML field)."""
    return _view(plan.model_dump_json(), tuple(sorted((k, str(v)) for k, v in (extra or {}).items())))


@cache
def _view(plan_json: str, extra_items: tuple[tuple[str, str], ...]):
    plan = Plan.model_validate_json(plan_json)
    extra = dict(extra_items)
    rendered = render_config(plan)
    fw = plan.framework.value
    if fw == "verl":
        from rl_advisor.validators import verl as v

        art = next(a for a in rendered.artifacts if a.kind == "launch_script")
        argv = [w for w in art.argv if not any(w.lstrip("+").startswith(k + "=") for k in extra)]
        argv += [f"{k}={_hydra(val)}" for k, val in extra.items()]
        cfg = v.compose(art.data["config_name"], argv)
        return lambda key: _verl_get(cfg, key)
    if fw == "openrlhf":
        from rl_advisor.validators import openrlhf as v

        art = next(a for a in rendered.artifacts if a.kind == "launch_script")
        argv = list(art.argv)
        for flag, val in extra.items():
            if flag in argv:
                i = argv.index(flag)
                j = i + 1
                while j < len(argv) and not argv[j].startswith("--"):
                    j += 1
                del argv[i:j]
            argv += [flag] + ([] if val in (None, "", True, "true", "True", "None") else shlex.split(str(val)))
        args, _ = v.parse(art.entrypoint, argv)
        return lambda key: _attr(args, key)
    art = next(a for a in rendered.artifacts if a.kind == "framework_config")
    data = copy.deepcopy(art.data)
    data.update({k: fix_reads.normalise(val) if not isinstance(fix_reads.normalise(val), float) or "." in str(val)
                 or "e" in str(val).lower() else int(fix_reads.normalise(val)) for k, val in extra.items()})
    objs = _trl_parse(art.entrypoint, data)

    def get(key):
        if key == "use_cpu":  # the parse above adds --use_cpu true so bf16 configs load on this CPU
            return data.get("use_cpu", False)
        for obj in objs:
            if hasattr(obj, key):
                return getattr(obj, key)
        return "<missing>"
    return get


def _hydra(value: Any) -> str:
    return str(value).lower() if str(value) in ("True", "False") else str(value)


def _trl_parse(config_class: str, data: dict[str, Any]):
    import os
    import tempfile
    from pathlib import Path

    import yaml
    from trl import DatasetMixtureConfig, ModelConfig, ScriptArguments, TrlParser

    from rl_advisor.validators.trl import _load

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.yaml"
        path.write_text(yaml.safe_dump(data))
        parser = TrlParser((ScriptArguments, _load(config_class), ModelConfig, DatasetMixtureConfig))
        out = parser.parse_args_and_config(args=["--config", str(path), "--use_cpu", "true"])
    return out[1], out[2]


def _holds_in_view(when: dict[str, Any] | None, get) -> bool:
    for key, test in (when or {}).items():
        if key == "any":
            if not any(_holds_in_view(alt, get) for alt in test):
                return False
        elif not fix_reads._holds(test, get(key)):
            return False
    return True


# ----------------------------------------------------------------------------- plans the fixes are offered to


def _matrix_plan(method: Method, framework: Framework) -> Plan:
    from tests.test_render_matrix import plan_for

    return plan_for(method, framework)


def plans() -> list[Plan]:
    out = [plan_from_yaml(p.read_text()) for p in sorted(example_plan_path().parent.glob("*.yaml"))]
    for fw, method in supported_pairs():
        if fw.value in FRAMEWORKS:
            out.append(_matrix_plan(method, fw))
    return out


LADDER_METHODS = {Method.GRPO, Method.PPO, Method.DPO, Method.REWARD_MODEL, Method.SFT}


def _variants(plan: Plan) -> list[Plan]:
    """The plan on a 24 GB GPU with recompute off, so that it does not fit and most rungs apply."""
    data = plan.model_dump(mode="json", exclude_none=True)
    data["hardware"]["gpu"] = "L4"
    data.setdefault("memory", {})["recompute"] = "none"
    try:
        return [Plan.model_validate(data)]
    except Exception:  # noqa: BLE001 - a variant the Plan refuses is simply not used
        return []


def _scope(plan: Plan) -> str | None:
    return fix_reads.plan_settings(plan)[1]


def test_memory_ladder_fixes_are_read_and_change_something_for_the_plan():
    """Each setting of each rung offered to a non-fitting plan: its condition holds in the
    framework's own parse of the plan after the fix, and its value differs from the framework's
    parse of the plan before."""
    from advisor.memory import budget_memory

    checked = 0
    for base in plans():
        if base.framework.value not in FRAMEWORKS or base.method not in LADDER_METHODS:
            continue
        for plan in _variants(base):
            try:
                budget = budget_memory(plan)
            except AdvisorError:
                continue  # e.g. a reward model outside the catalog: no ledger, no ladder
            if budget.fits:
                continue
            before = framework_view(plan)
            for fix in budget.fixes:
                after = framework_view(plan, fix.settings)
                for key, value in fix.settings.items():
                    row = fix_reads.entry(plan.framework.value, key)
                    assert row is not None, (fix.id, key)
                    assert _holds_in_view(row.get("when"), after), (plan.name, fix.id, key, row.get("when"))
                    assert fix_reads.normalise(before(key)) != fix_reads.normalise(after(key)), \
                        (plan.name, plan.hardware.gpu, fix.id, key, value, before(key))
                    checked += 1
    assert checked >= 40


def test_diagnosis_fixes_offered_to_a_plan_are_read_and_change_something():
    """Each config fix diagnose_run offers for a plan: its condition holds on the framework's own
    parse of the plan's rendered config (with the finding's enabling fixes, e.g. use_kl_loss=true,
    applied) and its value differs from the parsed value in effect."""
    checked = 0
    tables = _diagnosis_tables()
    for plan in plans():
        fw = plan.framework.value
        if fw not in FRAMEWORKS:
            continue
        view = framework_view(plan)
        for table in tables:
            fixes = [f for f in make_fixes(table, fw, plan) if f.kind == "config"]
            enabling = {f.key: f.value for f in fixes if f.value is not None}
            for fx in fixes:
                row = fix_reads.entry(fw, fx.key)
                assert row is not None, (fw, fx.key)
                others = {k: v for k, v in enabling.items() if k != fx.key}

                def get(key, others=others):
                    return others[key] if key in others else view(key)

                assert _holds_in_view(row.get("when"), get), (plan.name, fx.key, row.get("when"))
                if fx.value is not None:
                    assert fix_reads.normalise(view(fx.key)) != fix_reads.normalise(fx.value), \
                        (plan.name, fx.key, fx.value, view(fx.key))
                checked += 1
    assert checked >= 100


# ----------------------------------------------------------------------------- the corrected fixes (#15)


def _example(name: str) -> Plan:
    return plan_from_yaml(example_plan_path(name).read_text())


def _with(plan: Plan, **changes: Any) -> Plan:
    data = plan.model_dump(mode="json", exclude_none=True)
    for path, value in changes.items():
        cur = data
        parts = path.split("__")
        for part in parts[:-1]:
            cur = cur.setdefault(part, {})
        cur[parts[-1]] = value
    return Plan.model_validate(data)


def _reward_hacking_fixes(plan: Plan):
    row = next(r for r in rules() if r["id"] == "reward_hacking_kl_length")
    return {f.key: f.value for f in make_fixes(row["fixes"], plan.framework.value, plan)}


def test_verl_kl_ctrl_coef_only_with_kl_in_reward_grpo_gets_kl_loss_coef():
    grpo = _example("grpo-qwen2.5-7b-8xh100.yaml")  # KL as a loss (use_kl_loss=true)
    fixes = _reward_hacking_fixes(grpo)
    assert "algorithm.kl_ctrl.kl_coef" not in fixes
    assert fixes.get("actor_rollout_ref.actor.kl_loss_coef") == "0.05"
    in_reward = _with(grpo, algorithm__kl_in_reward=True)
    fixes = _reward_hacking_fixes(in_reward)
    assert fixes.get("algorithm.kl_ctrl.kl_coef") == "0.05"
    ok, why = fix_reads.offered("verl", "algorithm.kl_ctrl.kl_coef", "0.05", {})
    assert not ok and "use_kl_in_reward" in why


def test_verl_calculate_log_probs_is_not_a_fix():
    assert all(k != "actor_rollout_ref.rollout.calculate_log_probs" for _, k, *_ in emitted())
    assert verl_defaults().actor_rollout_ref.rollout.calculate_log_probs is True  # already on


def test_trl_liger_kernel_is_never_offered():
    assert all(k != "use_liger_kernel" for fw, k, *_ in emitted() if fw == "trl")
    assert not fix_reads.offered("trl", "use_liger_kernel", "true", {})[0]
    ladder = next(r for r in fix_table() if r["id"] == "logits_chunking")
    assert "trl" not in ladder["keys"]


def test_trl_checkpointing_fix_uses_the_current_name_and_only_when_turned_off():
    assert all(k != "gradient_checkpointing" for fw, k, *_ in emitted() if fw == "trl")
    assert _trl_default("activation_checkpointing", "GRPOConfig") is True  # TRL's default
    ok, why = fix_reads.offered("trl", "activation_checkpointing", "true", {})
    assert not ok and "already" in why
    assert fix_reads.offered("trl", "activation_checkpointing", "true", {"activation_checkpointing": False})[0]


def test_trl_truncation_fix_for_grpo_is_mask_truncated_completions():
    assert all(k != "missing_eos_penalty" for fw, k, *_ in emitted() if fw == "trl")
    sig = next(s for s in signatures() if any(f.get("key") == "mask_truncated_completions"
                                               for f in (s.get("fixes") or {}).get("trl", [])))
    grpo = _matrix_plan(Method.GRPO, Framework.TRL)
    keys = {f.key for f in make_fixes(sig["fixes"], "trl", grpo)}
    assert "mask_truncated_completions" in keys
    assert "mask_truncated_completions" in {f.name for f in dataclasses.fields(_trl_class("GRPOConfig"))}


def test_openrlhf_async_is_not_offered_with_engine_sleep():
    ppo = _example("ppo-llama3.1-8b-openrlhf-2x8xh100.yaml")  # colocate_all + --vllm.enable_sleep
    settings, scope = fix_reads.plan_settings(ppo)
    assert settings.get("--vllm.enable_sleep") is True and settings.get("--train.colocate_all") is True
    ok, why = fix_reads.offered("openrlhf", "--train.async_enable", None, settings, scope)
    assert not ok and "enable_sleep" in why
    # and OpenRLHF's own check agrees: the two together fail its assert
    from rl_advisor.validators import openrlhf as v

    art = next(a for a in render_config(ppo).artifacts if a.kind == "launch_script")
    with pytest.raises(AssertionError, match="enable_sleep"):
        v.parse(art.entrypoint, list(art.argv) + ["--train.async_enable"])
    awake = _with(ppo, rollout__sleep_level=0)
    settings, scope = fix_reads.plan_settings(awake)
    assert fix_reads.offered("openrlhf", "--train.async_enable", None, settings, scope)[0]


def test_a_fix_already_in_effect_is_not_offered():
    grpo = _example("grpo-qwen2.5-7b-8xh100.yaml")
    settings, _ = fix_reads.plan_settings(grpo)
    ok, why = fix_reads.offered("verl", "actor_rollout_ref.actor.kl_loss_type", "low_var_kl", settings)
    assert not ok and "already" in why
