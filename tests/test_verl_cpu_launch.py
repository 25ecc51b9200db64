"""The real veRL launch path on CPU: a rendered tiny veRL GRPO run submitted with ``launch_run`` to a
real Ray head on 127.0.0.1 with logical GPUs, in veRL's own environment (``.venv-verl``, built by
``make setup``; backends/job_python.py).

The real ``verl.trainer.main_ppo`` (0.9.1, unpatched) runs Hydra composition and ``validate_config``,
``ray.init``, its v1 TaskRunner (TransferQueue, trainer construction), loads the rendered parquet
files with its own ``RLHFDataset``, creates the actor worker group, and stops where a worker first
needs a CUDA device: ``torch.distributed.init_process_group`` with NCCL
(research/verl-openrlhf-cpu-launch.md). The test asserts how far it got from veRL's own log lines,
and that the registry, ``run_status``, ``run_logs`` and ``diagnose_run`` report the stop as a
"needs a GPU" finding.

veRL 0.9.1 loads a custom reward function only in its reward loop manager, after the actor's model
init, i.e. after this stop; the reward function the launch names is loaded here with veRL's own
loader (``verl.trainer.ppo.reward.get_custom_reward_fn``) in the job's environment instead.

A missing veRL environment fails the test (``make setup`` builds it; CI runs ``make test``).
Runtime: about 2 minutes on 2 cores (head start ~20 s, the job ~100 s).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from backends.job_python import env_var, framework_python, sibling_venv

STOP_TIMEOUT_S = 480

# veRL's own log lines, in the order the launch reaches them (verl 0.9.1 sources).
MARKERS = [
    ("config checks", "[validate_config] All configuration checks passed successfully!"),  # trainer/main_ppo.py
    ("ray.init", "ray init kwargs:"),  # trainer/main_ppo.py run_ppo
    ("dataset class", "Using dataset class: RLHFDataset"),  # utils/dataset/rl_dataset.py
    ("dataset rows", "dataset len: 64"),  # RLHFDataset reads the rendered parquet (64 prompts)
    ("dataloader", "train and validate dataloader initialized, train dataset size: 64"),  # v1 trainer_base
    ("total steps", "Total training steps: 3"),
    ("worker group", "create worker group"),
    ("first CUDA need", "Distributed package doesn't have NCCL built in"),  # worker init_process_group
]


def _verl_python() -> str:
    python = framework_python("verl")
    if python is None:
        pytest.fail(f"veRL's environment is missing: no {sibling_venv('verl')} and no ${env_var('verl')}; "
                    "`make setup` builds it (CI runs `make test`, which does)")
    return python


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from benchmarks.gpu_smoke import workspace as smoke_workspace

    return smoke_workspace(tmp_path_factory.mktemp("verl-cpu"))


def _plan(ws: dict[str, Path]):
    """The GPU smoke test's veRL plan (tiny Llama, 64 parquet prompts, rule reward, 3 steps), on a
    node description whose CPUs the loopback head can hold."""
    from benchmarks.gpu_smoke import plan as smoke_plan

    p = smoke_plan("verl", ws, "H100")
    return p.model_copy(update={"hardware": p.hardware.model_copy(update={"cpus_per_node": 8})})


def _wait_terminal(run_id: str) -> object:
    from rl_advisor.launch_tools import run_status

    deadline = time.monotonic() + STOP_TIMEOUT_S
    status = run_status(run_id)
    while not status.state.terminal and time.monotonic() < deadline:
        time.sleep(3)
        status = run_status(run_id)
    return status


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_verl_launch_on_ray_runs_to_its_first_cuda_need(workspace) -> None:
    python = _verl_python()
    from backends.protocol import RunState
    from backends.ray_head import LocalRayHead
    from backends.registry import RunRegistry
    from rl_advisor.diagnose_tool import diagnose_run
    from rl_advisor.launch_tools import launch_run, run_logs

    plan = _plan(workspace)
    started = time.monotonic()
    # Logical GPUs get veRL past its GPU count check; 16 logical CPUs hold TransferQueue's 8 storage
    # units (one CPU each), the TaskRunner and the job's driver.
    with LocalRayHead(num_cpus=16, num_gpus=2) as head:
        dry = launch_run(plan, backend="ray", address=head.address)
        assert dry.dry_run and dry.entrypoint.endswith(
            f"ray_kwargs.ray_init.runtime_env.py_executable={python}")
        launched = launch_run(plan, backend="ray", confirm=True, address=head.address)
        run_id = launched.run_id
        status = _wait_terminal(run_id)
        logs = run_logs(run_id, tail=10_000).text
        diagnosis = diagnose_run(run_id=run_id)
    elapsed = time.monotonic() - started
    print(f"veRL CPU launch: {status.state.value} after {elapsed:.0f} s (head start included)")

    # how far veRL got, from its own log lines
    positions = {}
    for name, marker in MARKERS:
        assert marker in logs, f"veRL did not reach {name!r} ({marker!r}); log tail:\n{logs[-4000:]}"
        positions[name] = logs.index(marker)
    # The driver's lines come in the launch's order, but inside Ray its actors' print()s and logger
    # lines are separately buffered streams that Ray interleaves as they flush (CI once showed
    # 'dataset len' after 'Total training steps'), so the TaskRunner's stages are checked as a set:
    # config checks, then ray.init, then everything else; the CUDA stop after the TaskRunner started.
    assert positions["config checks"] < positions["ray.init"] < min(
        v for k, v in positions.items() if k not in ("config checks", "ray.init")), positions
    assert positions["first CUDA need"] > positions["dataset class"], positions
    # the job and the Ray workers veRL started ran in veRL's environment
    assert f"'py_executable': '{python}'" in logs
    venv_site = str(Path(python).parent.parent / "lib")
    assert "(TaskRunnerV1 pid=" in logs and venv_site in logs
    assert "Error executing job" in logs  # Hydra's report of the exception: nothing ran past it

    # registry, run_status, diagnose_run
    assert status.state == RunState.FAILED
    assert "exit code 1" in status.message
    record = RunRegistry().get(run_id)
    assert record.state == RunState.FAILED and record.backend == "ray"
    assert [e.state for e in record.history][-1] == RunState.FAILED
    assert diagnosis.findings, diagnosis.notes
    top = diagnosis.findings[0]
    assert top.category == "needs_gpu" and "Needs a GPU" in top.title, top
    assert any("NCCL built in" in ln.text for ev in top.evidence for ln in ev.lines), top.evidence
    assert any("job's log" in n for n in diagnosis.notes)

    # the reward function the launch names loads with veRL's own loader in the job's environment
    script = (Path(launched.working_dir) / "run_verl.sh").read_text()
    from rl_advisor.validators.shell import argv_after

    overrides = dict(w.split("=", 1) for w in argv_after(script, ["-m", "verl.trainer.main_ppo"]) if "=" in w)
    reward_cfg = {"reward": {"custom_reward_function": {
        "path": overrides["reward.custom_reward_function.path"],
        "name": overrides["reward.custom_reward_function.name"], "reward_kwargs": {}}}}
    probe = ("import json, sys; from omegaconf import OmegaConf; "
             "from verl.trainer.ppo.reward import get_custom_reward_fn; "
             "fn = get_custom_reward_fn(OmegaConf.create(json.loads(sys.argv[1]))); "
             "print(json.dumps(fn(data_source='toy', solution_str='aab', ground_truth='')))")
    out = subprocess.run([python, "-c", probe, json.dumps(reward_cfg)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- fast: which Python a job runs


def test_a_frameworks_own_python_goes_to_the_job_and_to_verls_workers(monkeypatch, tmp_path) -> None:
    """$RL_ADVISOR_VERL_PYTHON (or .venv-verl beside the venv) reaches a local or loopback-Ray launch
    as the veRL override its workers read; a remote head's image provides veRL (nothing appended)."""
    import sys

    from advisor.plan import Framework, plan_from_yaml
    from rl_advisor.launch_tools import launch_run
    from tests.conftest import example_plan_path

    plan = plan_from_yaml(example_plan_path().read_text())
    assert plan.framework == Framework.VERL
    monkeypatch.setenv(env_var("verl"), sys.executable)
    key = "ray_kwargs.ray_init.runtime_env.py_executable="
    local = launch_run(plan, backend="ray", address="http://127.0.0.1:1")  # dry run: nothing contacted
    assert local.entrypoint == f"bash run_verl.sh {key}{sys.executable}"
    remote = launch_run(plan, backend="ray", address="http://10.1.2.3:8265")
    assert remote.entrypoint == "bash run_verl.sh"
    trl = launch_run(plan.model_copy(update={"framework": Framework.TRL}), backend="local")
    assert key not in trl.entrypoint


def test_a_bad_framework_python_is_a_clear_error(monkeypatch, tmp_path) -> None:
    from advisor.errors import AdvisorError

    monkeypatch.setenv(env_var("verl"), str(tmp_path / "nope" / "python"))
    with pytest.raises(AdvisorError) as err:
        framework_python("verl")
    assert err.value.problems[0].field == "RL_ADVISOR_VERL_PYTHON" and "make setup" in str(err.value)
    monkeypatch.delenv(env_var("verl"))
    assert sibling_venv("verl", "/repo/.venv") == Path("/repo/.venv-verl")
