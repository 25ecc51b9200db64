"""One resolved Plan: memory, the time model, placement and render see the same roles, pools and
batch numbers (issue: five modules used to decide the default pool five ways)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.memory import budget_memory
from advisor.placement import ray_resources
from advisor.placement.planner import evaluate_given
from advisor.placement.rules import context_for
from advisor.placement.timemodel import predict_step
from advisor.plan import Framework, Method, Plan, Pool, Role, plan_from_yaml
from advisor.plan_check import validate_plan
from advisor.render.common import supported_pairs
from advisor.render.renderer import render_config
from advisor.resolve import resolve
from tests.conftest import REPO

EXAMPLES = sorted((REPO / "examples" / "plans").glob("*.yaml"))


def _plan(**kw) -> Plan:
    base = {"name": "t", "hardware": {"gpu": "H100", "gpus_per_node": 8, "nodes": 1},
            "policy": {"model": "Qwen2.5-7B-Instruct"},
            "data": {"train_batch_size": 64, "mini_batch_size": 32, "micro_batch_size_per_gpu": 2,
                     "max_prompt_length": 512, "max_response_length": 512}}
    base.update(kw)
    return Plan.model_validate(base)


# The three plans of the issue (empty placement.pools).
ISSUE_PLANS = {
    "ppo": _plan(method="ppo", framework="verl", reward={"model": "Qwen2.5-7B-Instruct"},
                 algorithm={"kl_coef": 0.01}),
    "grpo-kl0": _plan(method="grpo", framework="verl", algorithm={"kl_coef": 0.0, "group_size": 4},
                      reward_function={"path": "r.py"}),
    "dpo": _plan(method="dpo", framework="trl"),
}


def _all_plans() -> list[tuple[str, Plan]]:
    out = [(k, p) for k, p in ISSUE_PLANS.items()]
    out += [(p.stem, plan_from_yaml(p.read_text())) for p in EXAMPLES]
    return out


PLANS = _all_plans()


def test_the_issue_plans_resolve_to_the_guide_role_table() -> None:
    roles = {k: [r.value for r in resolve(p).roles] for k, p in ISSUE_PLANS.items()}
    assert roles == {"ppo": ["policy", "reference", "reward", "critic", "rollout"],
                     "grpo-kl0": ["policy", "rollout"],
                     "dpo": ["policy", "reference"]}
    for p in ISSUE_PLANS.values():
        rp = resolve(p)
        assert len(rp.pools) == 1 and rp.pools[0].gpus == 8
        assert set(rp.pools[0].roles) == {r.value for r in rp.roles}


def _pool_view(pools) -> dict[str, tuple[int, frozenset[str]]]:
    return {p.name: (p.gpus, frozenset(p.roles)) for p in pools}


@pytest.mark.parametrize("name,plan", PLANS, ids=[n for n, _ in PLANS])
def test_memory_time_placement_render_see_the_same_run(name: str, plan: Plan) -> None:
    rp = resolve(plan)
    want_pools = _pool_view(rp.pools)
    roles = {r.value for r in rp.roles}
    b = rp.batch

    # validate_plan
    assert set(validate_plan(plan).resident_roles) == roles - {"rollout"}

    # memory: one budget per pool with a role, holding the same roles
    mem = budget_memory(plan)
    assert {p.name: (p.gpus, frozenset(p.roles)) for p in mem.pools} == \
        {k: v for k, v in want_pools.items() if v[1]}
    mem_phases = {ph.phase for ph in mem.phases}
    assert ("ref_log_prob" in mem_phases) == ("reference" in roles)
    assert ("critic_update" in mem_phases) == ("critic" in roles)
    assert ("rollout" in mem_phases) == ("rollout" in roles)

    # time model: phases on the same pools, the same roles, the same tokens
    t = predict_step(plan)
    phases = {ph.phase: ph.pool for ph in t.phases}
    assert t.total_gpus == rp.total_gpus
    assert ("reference_forward" in phases) == ("reference" in roles)
    assert ("critic_update" in phases) == ("critic" in roles)
    assert ("rollout_decode" in phases) == ("rollout" in roles)
    for phase, role in (("actor_update", "policy"), ("critic_update", "critic"),
                        ("reference_forward", "reference"), ("rollout_decode", "rollout"),
                        ("reward_forward", "reward")):
        if phase in phases:
            assert phases[phase] == rp.role_pool[Role(role)], phase

    # placement: the rules, the candidate and the Ray resource plan
    ctx = context_for(plan)
    assert set(ctx.roles) == roles
    cand, _ = evaluate_given(plan)
    assert cand is not None
    assert _pool_view(cand.pools) == want_pools
    assert {m.name: frozenset(m.roles) for m in cand.memory} == {k: v[1] for k, v in want_pools.items() if v[1]}
    assert _pool_view(ray_resources(plan).pools) == want_pools

    # render, for every framework that renders this method
    for fw, method in supported_pairs():
        if method != plan.method or fw == Framework.NEMO_RL:
            continue
        p = plan if plan.framework == fw else plan.model_copy(update={"framework": fw})
        out = render_config(p, fw)
        _check_render(fw, out, rp)


def _argv(out, kind: str = "launch_script") -> list[str]:
    return next(a.argv for a in out.artifacts if a.kind == kind and a.argv)


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def _check_render(fw: Framework, out, rp) -> None:
    b, plan = rp.batch, rp.plan
    roles = {r.value for r in rp.roles}
    k8s = next(a for a in out.artifacts if a.kind == "k8s_manifest")
    flavors = [d for d in k8s.data if d.get("kind") == "ResourceFlavor"]
    assert {f["spec"]["nodeLabels"]["rl-advisor/pool"] for f in flavors} == {p.name for p in rp.pools}
    if fw == Framework.VERL:
        argv = _argv(out)
        kv = dict(a.split("=", 1) for a in argv if "=" in a)
        assert kv["data.train_batch_size"] == str(b.prompts)
        assert kv["actor_rollout_ref.actor.ppo_mini_batch_size"] == str(b.mini_batch)
        if rp.online:
            assert kv["actor_rollout_ref.rollout.n"] == str(b.n)
        if not b.dynamic:
            assert kv["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == str(b.micro_per_gpu)
        kl_used = kv.get("actor_rollout_ref.actor.use_kl_loss") == "true" or \
            kv.get("algorithm.use_kl_in_reward") == "true"
        assert kl_used == ("reference" in roles)
        assert (kv.get("algorithm.adv_estimator") == "gae") == ("critic" in roles)
        pol = rp.pool_of("policy")
        assert kv["trainer.n_gpus_per_node"] == str(pol.gpus_per_node)
        assert kv["trainer.nnodes"] == str(pol.nodes)
    elif fw == Framework.OPENRLHF:
        argv = _argv(out)
        for role, flag in (("reference", "--ref.num_nodes"), ("critic", "--critic.num_nodes"),
                           ("reward", "--reward.num_nodes")):
            if plan.method in (Method.PPO, Method.GRPO, Method.DAPO, Method.RLOO, Method.REINFORCE_PP):
                assert (flag in argv) == (role in roles), flag
            if flag in argv:
                assert _flag(argv, flag) == str(rp.pool_of(role).nodes)
                assert _flag(argv, flag.replace("num_nodes", "num_gpus_per_node")) == \
                    str(rp.pool_of(role).gpus_per_node)
        if rp.online:
            assert _flag(argv, "--rollout.batch_size") == str(b.prompts)
            assert _flag(argv, "--rollout.n_samples_per_prompt") == str(b.n)
            assert _flag(argv, "--train.batch_size") == str(b.mini_batch * b.n)
        else:
            assert _flag(argv, "--train.batch_size") == str(b.mini_batch)
        if not b.dynamic:
            assert _flag(argv, "--train.micro_batch_size") == str(b.micro_per_gpu)
    elif fw == Framework.TRL:
        cfg = next(a.data for a in out.artifacts if a.kind == "framework_config")
        assert cfg["per_device_train_batch_size"] == b.micro_per_gpu
        if rp.online:
            assert cfg["num_generations"] == b.n
        acc = next(a.data for a in out.artifacts if a.kind == "accelerate_config")
        assert acc["num_processes"] == (1 if rp.is_cpu else rp.pool_of("policy").gpus)


def test_explicit_pools_missing_a_role_place_it_with_the_policy_and_say_so() -> None:
    plan = _plan(method="grpo", framework="verl", algorithm={"kl_coef": 0.001, "group_size": 4},
                 reward_function={"path": "r.py"},
                 placement={"mode": "split", "pools": [
                     {"name": "train", "nodes": 1, "gpus_per_node": 6, "roles": ["policy"]},
                     {"name": "gen", "nodes": 1, "gpus_per_node": 2, "roles": ["rollout"]}]})
    rp = resolve(plan)
    assert rp.role_pool[Role.REFERENCE] == "train"
    assert any("reference" in n and "train" in n for n in rp.notes)
    mem = budget_memory(plan)
    assert {p.name: set(p.roles) for p in mem.pools} == {"train": {"policy", "reference"}, "gen": {"rollout"}}
    t = predict_step(plan)
    assert {ph.phase: ph.pool for ph in t.phases}["reference_forward"] == "train"
    # the rule still reports the plan's own omission
    from advisor.placement import check_plan
    assert any(v.rule == "pools_cover_roles" and "reference" in v.message for v in check_plan(plan))


def test_a_listed_role_that_is_not_in_play_is_not_counted() -> None:
    plan = _plan(method="grpo", framework="verl", algorithm={"kl_coef": 0.0, "group_size": 4},
                 reward_function={"path": "r.py"},
                 placement={"pools": [Pool(name="all", nodes=1, gpus_per_node=8,
                                           roles=["policy", "reference", "rollout"])]})
    rp = resolve(plan)
    assert rp.pools[0].roles == ("policy", "rollout")
    assert any("reference" in n for n in rp.notes)
    assert {p.name: set(p.roles) for p in budget_memory(plan).pools} == {"all": {"policy", "rollout"}}


def test_batch_numbers_are_derived_once() -> None:
    rp = resolve(_plan(method="grpo", framework="verl", reward_function={"path": "r.py"}))
    b = rp.batch
    assert (b.n, b.prompts, b.sequences, b.mini_batch, b.micro_per_gpu) == (8, 64, 512, 32, 2)
    assert b.kl_coef == 0.001 and rp.uses_reference
    assert b.optimizer_steps == 2 and b.dp == 8 and b.micro_steps == 32 * 8 // 8 // 2
    assert any("group_size not set" in n for n in rp.notes)
    dpo = resolve(ISSUE_PLANS["dpo"]).batch
    assert (dpo.n, dpo.pair, dpo.sequences) == (1, 2, 128)


def test_resolve_is_computed_once_per_plan() -> None:
    p = ISSUE_PLANS["ppo"]
    assert resolve(p) is resolve(p.model_copy(deep=True))
    assert resolve(resolve(p)) is resolve(p)
    with pytest.raises(Exception):
        resolve(p).mode = "split"  # frozen


def test_specs_come_through_the_catalog_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.catalog as catalog

    seen: list[str] = []
    real = catalog.resolve_role_model

    def spy(rm, field):
        seen.append(field)
        return real(rm, field)

    monkeypatch.setattr(catalog, "resolve_role_model", spy)
    plan = _plan(method="ppo", framework="verl", name="spy-plan", algorithm={"kl_coef": 0.02})
    rp = resolve(plan)
    assert rp.specs[Role.POLICY].hidden_size == 3584
    assert rp.specs[Role.ROLLOUT] is rp.specs[Role.POLICY]
    budget_memory(plan)
    predict_step(plan)
    assert sorted(seen) == ["plan.policy", "plan.policy", "plan.policy"]  # policy, reference, critic: once each


# --------------------------------------------------------------------------- one artifact path


def _exported(script: str, name: str) -> str:
    import shlex

    for line in script.splitlines():
        if line.startswith("export "):
            key, _, value = shlex.split(line[len("export "):])[0].partition("=")
            if key == name:
                return value
    raise AssertionError(f"{name} is not exported by the launch script")


@pytest.mark.parametrize("fw,method", [("verl", "grpo"), ("openrlhf", "grpo"), ("trl", "grpo"),
                                       ("trl", "dpo"), ("openrlhf", "dpo")])
def test_the_launch_script_writes_the_metrics_file_the_adapter_follows(fw: str, method: str) -> None:
    import yaml

    from rl_advisor.launch_tools import launch_run

    plan = _plan(method=method, framework=fw, reward_function={"path": "r.py"} if method == "grpo" else None,
                 algorithm={"group_size": 4})
    res = launch_run(plan, backend="local")  # a dry run: renders and adapts, launches nothing
    assert res.dry_run and len(res.metrics_paths) == 1
    followed = Path(res.metrics_paths[0])
    work = Path(res.working_dir)
    if fw == "verl":
        written = Path(_exported(res.launch_script, "VERL_FILE_LOGGER_PATH"))
        assert written.is_absolute() and written == followed
        assert written.is_relative_to(work)
    elif fw == "trl":
        from rl_advisor.launch_tools import prepare_launch

        rendered, spec, _ = prepare_launch(plan, "local", "r1", Path(res.run_dir), {})
        cfg = next(a for a in rendered.artifacts if a.kind == "framework_config")
        entry = next(a for a in rendered.artifacts if a.kind == "entry_script")
        name = next(ln.split("=", 1)[1].strip().strip("'\"") for ln in entry.content.splitlines()
                    if ln.startswith("METRICS_FILE ="))
        written = Path(yaml.safe_load(cfg.content)["output_dir"]) / name
        assert written == Path(spec.metrics_files[0])
    else:  # OpenRLHF writes no metric file: the console the backend captures is the source
        from backends.protocol import CONSOLE_LOG

        assert followed == Path(res.run_dir) / CONSOLE_LOG  # where backends.local sends stdout


def test_the_remote_launch_keeps_the_output_dir_relative_and_the_same_file() -> None:
    from rl_advisor.launch_tools import prepare_launch

    plan = _plan(method="grpo", framework="verl", reward_function={"path": "r.py"})
    run_dir = Path("/tmp/nonexistent-run")
    rendered, spec, _ = prepare_launch(plan, "ray", "r2", run_dir, {"address": "http://10.0.0.1:8265"})
    script = next(a for a in rendered.artifacts if a.kind == "launch_script").content
    assert _exported(script, "VERL_FILE_LOGGER_PATH") == "outputs/metrics.jsonl"
    assert spec.metrics_files == [str(run_dir / "work" / "outputs" / "metrics.jsonl")]
    assert "VERL_FILE_LOGGER_PATH" not in spec.env  # the script owns it; no second value


# --------------------------------------------------------------------------- schema 2


V1 = """schema_version: 1
name: old
method: grpo
framework: verl
policy: {model: Qwen2.5-7B-Instruct}
reward_function: {path: r.py}
rollout: {tp: 2, async_mode: one_step_off}
placement:
  mode: split
  pools:
    - {name: train, nodes: 1, gpus_per_node: 6, roles: [policy, reference]}
    - {name: gen, nodes: 1, gpus_per_node: 2, roles: [rollout]}
"""


def test_a_schema_1_plan_loads_with_a_note_per_moved_field() -> None:
    from advisor.plan import PLAN_SCHEMA_VERSION, plan_to_yaml

    plan = plan_from_yaml(V1)
    assert PLAN_SCHEMA_VERSION == 2 and plan.schema_version == 2
    assert plan.placement.mode == "one_step_off" and resolve(plan).mode == "one_step_off"
    assert len(plan.migration_notes) == 1 and "rollout.async_mode" in plan.migration_notes[0] \
        and "placement.mode" in plan.migration_notes[0]
    assert plan.migration_notes[0] in validate_plan(plan).warnings
    again = plan_from_yaml(plan_to_yaml(plan))
    assert "async_mode" not in plan_to_yaml(plan) and "schema_version: 2" in plan_to_yaml(plan)
    assert again.migration_notes == [] and again.model_dump() == plan.model_dump()
    # the veRL render reads the one mode: a separate rollout pool running one step ahead
    argv = next(a.argv for a in render_config(plan).artifacts if a.kind == "launch_script")
    assert "trainer.v1.trainer_mode=separate_async" in argv


def test_a_schema_1_plan_whose_modes_agree_loads_with_its_note() -> None:
    plan = plan_from_yaml(V1.replace("mode: split", "mode: one_step_off"))
    assert plan.placement.mode == "one_step_off"
    assert plan.migration_notes == ["rollout.async_mode (schema 1) moved to placement.mode: one_step_off "
                                    "(async_mode was one_step_off)"]
    sync = plan_from_yaml(V1.replace("async_mode: one_step_off", "async_mode: sync"))
    assert sync.placement.mode == "split" and "async_mode was sync" in sync.migration_notes[0]


def test_a_schema_2_plan_with_the_old_field_is_refused_naming_it() -> None:
    from advisor.errors import AdvisorError

    with pytest.raises(AdvisorError) as err:
        plan_from_yaml(V1.replace("schema_version: 1", "schema_version: 2"))
    assert any("async_mode" in p.field for p in err.value.problems)


def test_offload_switches_are_resolved_once_for_memory_and_render() -> None:
    """A per-role switch (reference.param_offload) is honoured by the ledger and by the veRL and
    OpenRLHF renders alike (the renders used to read only memory.ref_offload)."""
    plan = _plan(method="ppo", framework="verl", algorithm={"kl_coef": 0.01},
                 reference={"model": "Qwen2.5-7B-Instruct", "param_offload": True},
                 critic={"model": "Qwen2.5-7B-Instruct", "optimizer_offload": True})
    rp = resolve(plan)
    assert rp.offloaded == (Role.REFERENCE,) and rp.role_info[Role.CRITIC].optimizer_offload
    states = [ph.states.get("reference") for ph in budget_memory(plan).phases]
    assert "offloaded" in states
    kv = dict(a.split("=", 1) for a in _argv(render_config(plan)) if "=" in a)
    assert kv["actor_rollout_ref.ref.fsdp_config.param_offload"] == "true"
    assert kv["critic.fsdp.optimizer_offload"] == "true"
    assert kv["actor_rollout_ref.actor.fsdp_config.param_offload"] == "false"
    orl = _argv(render_config(plan.model_copy(update={"framework": Framework.OPENRLHF}), Framework.OPENRLHF))
    assert "--ref.offload" in orl
