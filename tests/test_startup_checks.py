"""Start-up validation beyond the parsers: the checks veRL and OpenRLHF run before their first GPU
work, executed from the installed releases' own source (rl_advisor.validators.source_checks).

A rendered config that would stop there says so, with the framework's own message and the key to
change; the result lists which checks ran."""

from __future__ import annotations

import pytest

from advisor.plan import plan_from_yaml
from advisor.render import render_config
from advisor.render.models import Artifact
from rl_advisor.validators import validate_artifact
from rl_advisor.validators.shell import argv_after
from tests.conftest import example_plan_path

DAPO = "dapo-qwen2.5-32b-verl-4x8xh100.yaml"
PPO = "ppo-llama3.1-8b-openrlhf-2x8xh100.yaml"


def _artifact(plan_file: str, name: str) -> Artifact:
    plan = plan_from_yaml(example_plan_path(plan_file).read_text())
    return next(a for a in render_config(plan).artifacts if a.name == name)


def _with_argv(art: Artifact, marker: list[str], edit) -> Artifact:
    """The same launch script with its framework argv edited (quoted like the renderer does)."""
    import shlex

    argv = argv_after(art.content, marker)
    new = edit(list(argv))
    content = "#!/usr/bin/env bash\n" + shlex.join(["python3", *marker, *new]) + "\n"
    return art.model_copy(update={"content": content})


def test_separate_async_render_passes_the_trainer_construction_checks():
    art = _artifact(DAPO, "run_verl.sh")
    assert "trainer.v1.trainer_mode=separate_async" in art.content
    assert "trainer.v1.separate_async.parameter_sync_step=16" in art.content  # 512 / 32
    assert "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl" in art.content
    assert "trainer.v1.sampler.max_off_policy_threshold=2" in art.content  # one-step-off plan
    res = validate_artifact(art)
    assert res.ok, res.errors
    ran = "\n".join(res.checks)
    assert "PPOTrainerSeparateAsync.__init__" in ran
    assert "train_batch_size == parameter_sync_step * ppo_mini_batch_size -> passed" in ran
    assert 'checkpoint_engine.backend != "naive" -> passed' in ran
    assert "ReplayBuffer.__init__" in ran


@pytest.mark.parametrize("drop,message,key", [
    ("trainer.v1.separate_async.parameter_sync_step=", "train_batch_size must equal parameter_sync_step",
     "trainer.v1.separate_async.parameter_sync_step"),
    ("actor_rollout_ref.rollout.checkpoint_engine.backend=", "please use nccl/nixl/mooncake",
     "actor_rollout_ref.rollout.checkpoint_engine.backend"),
])
def test_the_old_async_render_is_refused_with_verls_own_message(drop, message, key):
    """Without the sync step (default 4: 4 x 32 != 512) or with the default naive checkpoint engine,
    veRL's PPOTrainerSeparateAsync.__init__ asserts; validate_config alone passes both."""
    art = _with_argv(_artifact(DAPO, "run_verl.sh"), ["-m", "verl.trainer.main_ppo"],
                     lambda argv: [w for w in argv if not w.startswith(drop)])
    res = validate_artifact(art)
    assert not res.ok
    err = " ".join(res.errors)
    assert message in err and "trainer_separate_async.py" in err
    assert key in err  # the key to change


def test_a_bad_sampler_threshold_fails_in_the_replay_buffer_constructor():
    art = _with_argv(_artifact(DAPO, "run_verl.sh"), ["-m", "verl.trainer.main_ppo"],
                     lambda argv: [w.replace("max_off_policy_threshold=2", "max_off_policy_threshold=0")
                                   for w in argv])
    res = validate_artifact(art)
    assert not res.ok
    assert "Invalid max off policy threshold" in " ".join(res.errors)


def test_an_unknown_trainer_mode_is_refused():
    art = _with_argv(_artifact(DAPO, "run_verl.sh"), ["-m", "verl.trainer.main_ppo"],
                     lambda argv: [w.replace("trainer_mode=separate_async", "trainer_mode=one_step_off")
                                   for w in argv])
    res = validate_artifact(art)
    assert not res.ok and "no trainer class is registered" in " ".join(res.errors)


def test_openrlhf_lists_the_entry_checks_that_ran():
    res = validate_artifact(_artifact(PPO, "run_openrlhf.sh"))
    assert res.ok, res.errors
    ran = "\n".join(res.checks)
    assert "train_ppo_ray.py __main__:" in ran and "post-parse asserts" in ran
    assert "train_ppo_ray.py:train:" in ran
    assert "DeepspeedStrategy.__init__" in ran
    assert "-> passed" in ran


def test_openrlhf_async_with_sleep_fails_the_entrys_own_assert():
    """--train.async_enable with --vllm.enable_sleep (the PPO example sets sleep with colocate_all)."""
    art = _artifact(PPO, "run_openrlhf.sh")
    assert "--vllm.enable_sleep" in art.content and "--train.colocate_all" in art.content
    marker = ["-m", "openrlhf.cli.train_ppo_ray"]
    bad = _with_argv(art, marker, lambda argv: argv + ["--train.async_enable"])
    res = validate_artifact(bad)
    assert not res.ok
    assert "Async RLHF is not supported with --vllm.enable_sleep" in " ".join(res.errors)


def test_openrlhf_colocation_size_check_from_train_runs_before_any_gpu():
    """train() asserts actor GPUs == engines x TP when everything is colocated; the __main__ block
    does not check it. Drop one engine: only the entry's train() checks catch it."""
    marker = ["-m", "openrlhf.cli.train_ppo_ray"]
    art = _artifact(PPO, "run_openrlhf.sh")
    argv = argv_after(art.content, marker)
    i = argv.index("--vllm.num_engines")
    engines = int(argv[i + 1])
    bad = _with_argv(art, marker, lambda a: a[:i + 1] + [str(engines - 1)] + a[i + 2:])
    res = validate_artifact(bad)
    assert not res.ok
    err = " ".join(res.errors)
    assert "actor_num_nodes * actor_num_gpus_per_node must be equal to" in err
    assert "train_ppo_ray.py:train" in err and "--vllm.num_engines" in err


def test_every_example_lists_its_start_up_checks():
    for path in sorted(example_plan_path().parent.glob("*.yaml")):
        plan = plan_from_yaml(path.read_text())
        for art in render_config(plan).artifacts:
            if art.kind != "launch_script" or plan.framework.value not in ("verl", "openrlhf"):
                continue
            res = validate_artifact(art)
            assert res.ok, (path.name, res.errors)
            assert res.checks, (path.name, art.name)


def test_gpu_smoke_skips_cleanly_without_a_gpu():
    import subprocess
    import sys
    from pathlib import Path

    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: benchmarks/gpu_smoke.sh would run the real thing")
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run(["bash", str(repo / "benchmarks" / "gpu_smoke.sh")], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("skipped: no GPU")


def test_gpu_smoke_plans_render_and_pass_the_framework_checks():
    """The smoke script's two plans (veRL GRPO, OpenRLHF) pass start-up validation here, so the
    script is ready when a GPU is lent."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, str(repo / "benchmarks" / "gpu_smoke.py"), "--dry-run"],
                          capture_output=True, text=True, timeout=600, cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[verl] run_verl.sh: ok" in proc.stdout and "[openrlhf] run_openrlhf.sh: ok" in proc.stdout


def test_trl_trainer_is_constructed_and_its_own_checks_reject_a_bad_config():
    """TRL: the rendered config builds the real trainer on a tiny local model; a setting only the
    trainer checks (reward_weights vs the number of reward functions) is refused with TRL's message."""
    from advisor.plan import Framework, Method
    from rl_advisor.validators import trl as trl_validator
    from rl_advisor.validators import validate_rendered
    from tests.test_render_matrix import plan_for

    rendered = render_config(plan_for(Method.GRPO, Framework.TRL))
    entry = next(r for r in validate_rendered(rendered) if r.artifact == "train.py")
    assert entry.ok, entry.errors
    assert any("trl.GRPOTrainer(...) constructed" in c and c.endswith("-> passed") for c in entry.checks)
    config = next(a for a in rendered.artifacts if a.kind == "framework_config")
    bad = config.model_copy(update={"data": {**config.data, "reward_weights": [1.0, 2.0]}})
    errors, _, _ = trl_validator.validate_construction(bad, next(a for a in rendered.artifacts if a.kind == "entry_script"))
    assert errors and "reward" in errors[0].lower() and "weights" in errors[0].lower()


@pytest.mark.parametrize("line", [
    "ValueError: Total available GPUs 0 is less than total desired GPUs 2.",
    "AssertionError: Torch not compiled with CUDA enabled",
    "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU",
])
def test_a_run_that_stops_at_its_first_cuda_need_is_diagnosed_as_needing_a_gpu(line):
    """The stops the CPU launch path of veRL 0.9.1 reaches (research: verl-openrlhf-cpu-launch.md)
    are a clear 'needs a GPU' finding, not an unknown failure."""
    from advisor.diagnosis.engine import diagnose_text

    text = "\n".join(["All configuration checks passed successfully!", "ray init kwargs: {}",
                      "(TaskRunner pid=1) Traceback (most recent call last):", f"(TaskRunner pid=1) {line}"])
    result = diagnose_text(text, framework="verl")
    assert result.findings and result.findings[0].category == "needs_gpu"
    assert "Needs a GPU" in result.findings[0].title


def test_hydras_override_echo_is_not_a_batch_size_error():
    """Every failed veRL launch ends with Hydra's one-line list of the overrides, where batch-size keys
    stand side by side; the stop it reports (here the CPU launch's NCCL stop) is the finding."""
    from advisor.diagnosis.engine import diagnose_text

    text = "\n".join([
        "[validate_config] All configuration checks passed successfully!",
        "ray init kwargs: {'num_cpus': None, 'runtime_env': {'env_vars': {'TOKENIZERS_PARALLELISM': 'true'}}}",
        "Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'data.train_batch_size=8', "
        "'actor_rollout_ref.actor.ppo_mini_batch_size=8', 'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4']",
        "Traceback (most recent call last):",
        "(WorkerDict pid=6719)   File \"torch/distributed/distributed_c10d.py\", line 2181, in _new_process_group_helper",
        "RuntimeError: Distributed package doesn't have NCCL built in",
    ])
    result = diagnose_text(text, framework="verl")
    assert [f.category for f in result.findings] == ["needs_gpu"], result.findings
    # the same batch-size words in an error line still fire
    bad = diagnose_text("AssertionError: ppo_mini_batch_size 8 must be divisible by ppo_micro_batch_size 3",
                        framework="verl")
    assert bad.findings and bad.findings[0].category == "batch_size_misconfig"


@pytest.mark.parametrize("mode,threshold", [("split", "1"), ("one_step_off", "2"), ("fully_async", None)])
def test_a_separate_rollout_pool_bounds_staleness_by_the_plans_mode(mode, threshold):
    """veRL 0.9.1 serves a standalone rollout pool only with its separate_async trainer (the v1 sync
    trainer is colocated only): a split (lock-step) plan renders it with the tightest staleness bound,
    1; one-step-off 2; fully-async keeps veRL's default (8). veRL's own constructors accept each."""
    import copy

    from advisor.plan import Framework, Method, Plan
    from tests.test_render_matrix import VARIANTS, _merge, plan_for

    data = plan_for(Method.GRPO, Framework.VERL).model_dump(mode="json", exclude_none=True)
    _merge(data, copy.deepcopy(VARIANTS["split-pools"]))
    data["placement"]["mode"] = mode
    art = next(a for a in render_config(Plan.model_validate(data)).artifacts if a.name == "run_verl.sh")
    assert "trainer.v1.trainer_mode=separate_async" in art.content
    key = "trainer.v1.sampler.max_off_policy_threshold="
    assert (key + threshold in art.content) if threshold else (key not in art.content)
    res = validate_artifact(art)
    assert res.ok, res.errors
    assert any("max_off_policy_threshold > 0 -> passed" in c for c in res.checks), res.checks
