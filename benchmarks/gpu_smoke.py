"""GPU smoke run (called by benchmarks/gpu_smoke.sh): a real tiny veRL GRPO and a real tiny OpenRLHF
GRPO-style run, each rendered from a Plan, launched with ``launch_run`` on the Ray backend against
a loopback Ray head with the machine's GPU, followed to the end, and read back with ``run_metrics``
and ``diagnose_run``.

The model is a random tiny Llama (hidden 256, 4 heads of 64, 2 layers; a head size vLLM's
attention kernels take) with a character tokenizer, built locally by rl_advisor.tinymodel; the data
are 64 generated prompts; the reward is the toy task's rule (fraction of one target character).
Nothing is downloaded.

    python benchmarks/gpu_smoke.py --dry-run   # render + validate both plans (CPU; used by the tests)
    python benchmarks/gpu_smoke.py             # the real runs (GPU)

Exit status: 0 when every framework that is installed ran and logged metrics, 1 when one failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

STEPS = 3


def workspace(root: Path) -> dict[str, Path]:
    from rl_advisor import tinymodel

    model = tinymodel.build_tiny_model(root / "tiny-llama-256", hidden_size=256, num_heads=4, num_kv_heads=2)
    prompts = tinymodel.write_prompt_dataset(root / "data" / "prompts.jsonl", n=64)
    rows = [json.loads(line) for line in prompts.read_text().splitlines()]
    # veRL's RLHFDataset reads parquet with chat-format prompts and a reward_model.ground_truth
    import pandas as pd

    pd.DataFrame([{"data_source": "toy", "prompt": [{"role": "user", "content": r["prompt"]}],
                   "ability": "toy", "reward_model": {"style": "rule", "ground_truth": ""},
                   "extra_info": {"index": i}} for i, r in enumerate(rows)]).to_parquet(root / "data" / "train.parquet")
    reward = tinymodel.write_reward_module(root / "rewards" / "toy_reward.py")
    # OpenRLHF calls reward_func(queries, prompts, labels) from the --reward.remote_url file
    (root / "rewards" / "toy_reward_openrlhf.py").write_text(
        "import torch\n"
        f"TARGET = {tinymodel.TARGET_CHAR!r}\n"
        "def reward_func(queries, prompts, labels, **kwargs):\n"
        "    r = [q.count(TARGET) / max(1, len(q)) for q in queries]\n"
        "    t = torch.tensor(r, dtype=torch.float)\n"
        "    return {'rewards': t, 'scores': t, 'extra_logs': {}}\n", encoding="utf-8")
    return {"model": model, "parquet": root / "data" / "train.parquet", "jsonl": prompts, "reward": reward,
            "reward_openrlhf": root / "rewards" / "toy_reward_openrlhf.py", "out": root / "outputs"}


def plan(framework: str, ws: dict[str, Path], gpu: str):
    from advisor.plan import plan_from_dict
    from rl_advisor.tinymodel import tiny_model_spec

    spec = tiny_model_spec(ws["model"]).model_dump(mode="json", exclude_none=True)
    verl = framework == "verl"
    return plan_from_dict({
        "schema_version": 2, "name": f"gpu-smoke-{framework}", "method": "grpo", "framework": framework,
        "objective": {"task": "other", "data": ["prompts_with_verifier"]},
        "hardware": {"gpu": gpu, "gpus_per_node": 1, "nodes": 1},
        "policy": {"model": "tiny-llama", "path": str(ws["model"]), "spec": spec, "dtype": "bf16"},
        "reward_function": ({"path": str(ws["reward"]), "name": "compute_score"} if verl else
                            {"path": str(ws["reward_openrlhf"]), "name": "reward_func"}),
        "algorithm": {"learning_rate": 1e-4, "kl_coef": 0.0, "group_size": 4},
        "data": {"train_files": [str(ws["parquet"] if verl else ws["jsonl"])], "max_prompt_length": 64,
                 "max_response_length": 32, "train_batch_size": 8, "mini_batch_size": 8,
                 "micro_batch_size_per_gpu": 4, "total_steps": STEPS},
        "rollout": {"engine": "vllm", "tp": 1},
        "memory": {"rollout_memory_fraction": 0.3, "recompute": "none"},
        "logging": {"backends": ["console", "file"], "project": "gpu-smoke", "experiment": framework,
                    "output_dir": str(ws["out"] / framework)},
    })


def installed(framework: str) -> bool:
    need = {"verl": ("verl", "vllm"), "openrlhf": ("openrlhf", "vllm", "deepspeed")}[framework]
    return all(importlib.util.find_spec(m) is not None for m in need)


def run_one(framework: str, ws: dict[str, Path], gpu: str, address: str, timeout_s: float) -> bool:
    import os

    from backends.job_python import env_var
    from rl_advisor import launch_tools

    # the job runs in the Python whose GPU stack installed() checked, not a CPU .venv-<framework>
    os.environ.setdefault(env_var(framework), sys.executable)
    from rl_advisor.diagnose_tool import diagnose_run

    p = plan(framework, ws, gpu)
    launched = launch_tools.launch_run(p, backend="ray", confirm=True, address=address)
    run_id = launched.run_id
    print(f"[{framework}] launched {run_id}")
    deadline = time.monotonic() + timeout_s
    status = launch_tools.run_status(run_id)
    while status.state.value in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(10)
        status = launch_tools.run_status(run_id)
    metrics = launch_tools.run_metrics(run_id)
    steps = sorted({int(s) for series in metrics.series.values() for s, _ in series}) if metrics.series else []
    print(f"[{framework}] state={status.state.value} steps={steps[-5:]} metrics={sorted(metrics.series)[:8]}")
    if status.state.value != "succeeded" or len(steps) < STEPS:
        print(launch_tools.run_logs(run_id, tail=80).text)
        print(json.dumps(diagnose_run(run_id=run_id).model_dump(mode="json"), indent=1)[:3000])
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="render and validate only (no GPU needed)")
    ap.add_argument("--gpu", default="H100", help="catalog GPU name for the plans (sizes only)")
    ap.add_argument("--timeout", type=float, default=1500.0, help="seconds per run")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rl-advisor-gpu-smoke-") as tmp:
        ws = workspace(Path(tmp))
        if args.dry_run:
            from advisor.render import render_config
            from rl_advisor.validators import validate_rendered

            ok = True
            for fw in ("verl", "openrlhf"):
                for res in validate_rendered(render_config(plan(fw, ws, args.gpu))):
                    print(f"[{fw}] {res.artifact}: {'ok' if res.ok else 'REJECTED'} ({res.validator})")
                    ok &= res.ok or res.skipped
            return 0 if ok else 1
        from backends.ray_head import LocalRayHead

        results = {}
        with LocalRayHead(num_cpus=8, num_gpus=1) as head:
            for fw in ("verl", "openrlhf"):
                if not installed(fw):
                    print(f"skipped: {fw} not installed (needs its GPU stack with vLLM)")
                    continue
                results[fw] = run_one(fw, ws, args.gpu, head.address, args.timeout)
        print(json.dumps(results))
        return 0 if all(results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
