"""diagnose_run's rules, tables and interfaces beyond the real cases.

* every fix key exists in the framework's real schema (../shared/research/frameworks/*.tsv);
* noisy healthy runs raise no warning or error (several seeds, two formats);
* each metric rule fires on a run that has its failure, and reads the evidence right;
* streaming in chunks gives the same diagnosis as reading whole;
* the MCP tool (inline metrics) and a registry run id work end to end.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from advisor.diagnosis import DiagnosisSession, diagnose_text
from advisor.diagnosis.tables import load_table, oom_table, rules, signatures, taxonomy
from advisor.errors import AdvisorError
from rl_advisor.diagnose_tool import InlineMetricPoint, diagnose_path, diagnose_run

# ----------------------------------------------------------------------------- fix keys


def _framework_keys(shared: Path) -> dict[str, set[str]]:
    fw = shared / "research" / "frameworks"
    verl = set()
    for name in ("verl-0.9.1-ppo_trainer.keys.tsv", "verl-0.9.1-ppo_megatron_trainer.keys.tsv"):
        for line in (fw / name).read_text().splitlines():
            if line and not line.startswith("#"):
                verl.add(line.split("\t")[0])
    scoped: dict[str, set[str]] = {}
    for path in fw.glob("openrlhf-0.11.2-*.flags.tsv"):
        cli = path.name.removeprefix("openrlhf-0.11.2-").removesuffix(".flags.tsv")
        scoped[f"openrlhf:{cli}"] = {ln.split("\t")[0] for ln in path.read_text().splitlines()
                                     if ln.startswith("--")}
    for path in fw.glob("trl-1.16.0-*Config.fields.tsv"):
        cls = path.name.removeprefix("trl-1.16.0-").removesuffix(".fields.tsv")
        fields = set()
        for ln in path.read_text().splitlines():
            if ln.startswith("# section 3"):
                fields.update(x.strip() for x in ln.split(":", 1)[1].split(","))
            elif ln and not ln.startswith("#"):
                fields.add(ln.split("\t")[0])
        scoped[f"trl:{cls}"] = fields
    scoped["verl"] = verl
    return scoped


def _all_fix_rows() -> list[tuple[str, str, dict]]:
    rows = []
    for table in [r.get("fixes") or {} for r in rules()] + [s.get("fixes") or {} for s in signatures()] \
            + list(oom_table()["fixes"].values()):
        for fw, fixes in table.items():
            for fx in fixes:
                rows.append((fw, fx["key"], fx))
    return rows


def test_every_fix_key_exists_in_the_framework_schema(shared_dir: Path) -> None:
    keys = _framework_keys(shared_dir)
    nemo_text = (shared_dir / "research" / "frameworks.md").read_text()
    nemo_text = nemo_text[nemo_text.index("## 4. NeMo-RL"):nemo_text.index("## 5.")]
    nemo_text = re.sub(r"(\w+)_min/max", r"\1_min \1_max", nemo_text)  # "ratio_clip_min/max"
    checked = 0
    missing = []
    for fw, key, fx in _all_fix_rows():
        if fx.get("kind", "config") != "config":
            continue
        checked += 1
        if fw == "verl":
            ok = key in keys["verl"]
        elif fw in ("openrlhf", "trl"):
            ok = key in keys.get(f"{fw}:{fx.get('scope')}", set())  # the scope names the CLI / config class
        elif fw == "nemo_rl":
            ok = all(part in nemo_text for part in key.split("."))
        else:
            ok = False
        if not ok:
            missing.append(f"{fw}:{fx.get('scope') or ''}:{key}")
    assert not missing, f"fix keys not in the frameworks' schemas: {missing}"
    assert checked > 80


def test_rules_and_signatures_are_documented() -> None:
    cats = set(taxonomy())
    for row in rules() + signatures():
        assert row["category"] in cats, row["id"]
        assert row.get("source"), row["id"]
        assert row["severity"] in ("error", "warning", "info")
    for row in rules():
        assert row.get("rationale") and row.get("likely_cause"), row["id"]
    for sig in signatures():
        for pat in sig.get("patterns", []):
            re.compile(pat)
    assert set(oom_table()["causes"]) <= cats
    load_table.cache_clear()


# ----------------------------------------------------------------------------- synthetic runs


def _healthy_verl(seed: int, steps: int = 300) -> str:
    rng = random.Random(seed)
    lines = ["(TaskRunner pid=1) Training Progress starting", "INFO: using vLLM rollout"]
    for t in range(1, steps + 1):
        reward = 0.3 + 0.35 * (1 - math.exp(-t / 90)) + rng.gauss(0, 0.05)
        ent = 0.6 * (0.6 + 0.4 * math.exp(-t / 150)) * math.exp(rng.gauss(0, 0.05))
        kl = 0.001 + 0.03 * t / steps + abs(rng.gauss(0, 0.002))
        length = 400 + 200 * t / steps + rng.gauss(0, 20)
        gen, step = 30 + rng.gauss(0, 3), 100 + rng.gauss(0, 5)
        m = {
            "actor/entropy": ent, "actor/kl_loss": kl, "actor/ppo_kl": rng.gauss(0, 1e-4),
            "actor/pg_clipfrac": abs(rng.gauss(0.002, 0.001)), "actor/pg_loss": rng.gauss(0, 0.05),
            "actor/grad_norm": math.exp(rng.gauss(math.log(0.3), 0.35)), "actor/lr": 1e-6,
            "critic/score/mean": reward, "critic/score/max": 1.0, "critic/score/min": 0.0,
            "critic/advantages/max": 2.0 + rng.random(), "critic/advantages/min": -2.0 - rng.random(),
            "response_length/mean": length, "response_length/max": 1024.0,
            "response_length/clip_ratio": abs(rng.gauss(0.01, 0.005)),
            "timing_s/gen": gen, "timing_s/step": step, "perf/throughput": 2500 + rng.gauss(0, 100),
            "perf/mfu/actor": 0.35 + rng.gauss(0, 0.01), "training/global_step": t,
        }
        if t % 20 == 0:
            m["val-core/openai/gsm8k/acc/mean@1"] = 0.4 + 0.3 * (1 - math.exp(-t / 100)) + rng.gauss(0, 0.01)
        body = " - ".join(f"{k}:np.float64({v!r})" if k.startswith("actor") else f"{k}:{v!r}" for k, v in m.items())
        lines.append(f"(TaskRunner pid=1) step:{t} - {body}")
        if t % 50 == 0:
            lines.append("(WorkerDict pid=2) INFO: saved checkpoint")
    return "\n".join(lines) + "\n"


def _healthy_trl_jsonl(seed: int, steps: int = 200) -> str:
    rng = random.Random(seed)
    out = []
    for t in range(1, steps + 1):
        out.append(json.dumps({
            "step": t, "loss": rng.gauss(0, 0.02), "grad_norm": math.exp(rng.gauss(math.log(0.5), 0.3)),
            "learning_rate": 1e-6, "reward": 0.4 + 0.3 * t / steps + rng.gauss(0, 0.06),
            "reward_std": 0.4 + rng.gauss(0, 0.03), "frac_reward_zero_std": min(1, abs(rng.gauss(0.2, 0.08))),
            "kl": 0.002 + 0.02 * t / steps, "entropy": 0.7 - 0.2 * t / steps + rng.gauss(0, 0.02),
            "completions/mean_length": 200 + rng.gauss(0, 15), "completions/clipped_ratio": abs(rng.gauss(0.01, 0.01)),
            "clip_ratio/region_mean": abs(rng.gauss(0.001, 0.001)), "step_time": 5 + rng.gauss(0, 0.3)}))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("seed", range(6))
def test_healthy_noisy_runs_raise_no_alarm(seed: int) -> None:
    for text in (_healthy_verl(seed), _healthy_trl_jsonl(seed)):
        diag = diagnose_text(text)
        loud = [(f.category, f.summary) for f in diag.findings if f.severity in ("error", "warning")]
        assert not loud, loud
        assert diag.status == "healthy"
        assert sum(c.status == "passed" for c in diag.checks) >= 8


def _verl_lines(rows: list[dict]) -> str:
    return "\n".join(f"step:{i} - " + " - ".join(f"{k}:{v}" for k, v in r.items()) for i, r in enumerate(rows, 1)) + "\n"


def _categories(text: str, plan=None) -> dict[str, str]:
    return {f.category: f.severity for f in diagnose_text(text, plan).findings}


def test_entropy_collapse_and_kl_spike_fire() -> None:
    rng = random.Random(1)
    rows = [{"actor/entropy": 0.8 * math.exp(-t / 15) + 0.002, "actor/kl_loss": 0.01 + abs(rng.gauss(0, 0.002)),
             "critic/score/mean": 0.5} for t in range(60)]
    rows[40]["actor/kl_loss"] = 3.5
    cats = _categories(_verl_lines(rows))
    assert cats.get("entropy_collapse") == "error"
    # round 37: one spike that falls back at the next log is a warning (the k3 estimator's heavy tail); a second is an error
    assert cats.get("kl_explosion") == "warning"
    rows[50]["actor/kl_loss"] = 4.0
    assert _categories(_verl_lines(rows)).get("kl_explosion") == "error"


def test_entropy_spent_on_a_rising_reward_is_no_collapse_error() -> None:
    """Round 18: veRL's published GSM8K baselines (docs/algo/baseline.md) lose 87-94% of their entropy, down to 0.02,
    while the score climbs; Cui et al. (arXiv 2505.22617) fit R = -a*exp(H) + b on such healthy runs. An entropy fall
    while the reward rises is a warning (the trade-off, named), not an error; the same fall with the reward flat, or
    rising and then falling over the last third, stays an error."""
    rng = random.Random(3)
    n = 60

    def rows(score) -> list[dict]:
        return [{"actor/entropy": 0.45 * math.exp(-t / 8) + 0.02 + abs(rng.gauss(0, 0.002)),
                 "critic/score/mean": score(t) + rng.gauss(0, 0.01)} for t in range(n)]

    rising = _categories(_verl_lines(rows(lambda t: 0.25 + 0.7 * (1 - math.exp(-t / 10)))))
    assert rising.get("entropy_collapse") == "warning", rising
    flat = _categories(_verl_lines(rows(lambda t: 0.3)))
    assert flat.get("entropy_collapse") == "error", flat
    late_fall = _categories(_verl_lines(rows(lambda t: 0.2 + 0.02 * t if t < 35 else 0.9 - 0.03 * (t - 35))))
    assert late_fall.get("entropy_collapse") == "error", late_fall


def test_a_kl_rising_from_its_zero_start_is_no_spike() -> None:
    """Round 19: the KL to the reference is exactly 0 at the first step (the policy is the reference before its first
    update); logged every few steps, a healthy run's steady rise (0, 0.014, 0.069, 0.149, 0.217) read as a tenfold spike
    against a median dragged down by that 0. The spike is judged against the KL's non-zero values; a jump against
    them, or one after a KL that stayed exactly 0, is still an error."""
    def kl(values: list[float]) -> dict[str, str]:
        return _categories(_verl_lines([{"actor/kl_loss": v, "critic/score/mean": 0.3 + 0.01 * i}
                                        for i, v in enumerate(values)]))

    assert "kl_explosion" not in kl([0.0, 0.014, 0.069, 0.149, 0.217])
    assert kl([0.0, 0.011, 0.012, 0.010, 0.013, 0.5]).get("kl_explosion") == "error"
    assert kl([0.0, 0.0, 0.0, 0.0, 0.5]).get("kl_explosion") == "error"


def test_nan_grad_norm_fires_with_the_first_bad_step() -> None:
    rows = [{"actor/grad_norm": 0.5, "critic/score/mean": 0.3} for _ in range(10)]
    rows[6]["actor/grad_norm"] = "np.float64(nan)"
    diag = diagnose_text(_verl_lines(rows))
    f = next(f for f in diag.findings if f.category == "grad_norm_nan")
    assert f.severity == "error" and "step 7" in f.summary


def test_truncation_uses_the_plan_cap() -> None:
    from advisor.plan import Plan, RoleModel

    rows = [{"response_length/mean": 1000 + i, "response_length/max": 1024, "critic/score/mean": 0.4}
            for i in range(10)]
    assert "response_truncation" not in _categories(_verl_lines(rows))
    plan = Plan(policy=RoleModel(model="Qwen2.5-7B-Instruct"))
    plan.data.max_response_length = 1024
    assert _categories(_verl_lines(rows), plan).get("response_truncation") == "error"


def test_clip_ratio_metric_bug_detected_with_plan() -> None:
    from advisor.plan import Plan, RoleModel

    rows = [{"response_length/clip_ratio": 0.3, "response_length/max": 700, "response_length/mean": 300}
            for _ in range(5)]
    plan = Plan(policy=RoleModel(model="Qwen2.5-7B-Instruct"))
    plan.data.max_response_length = 2048
    cats = _categories(_verl_lines(rows), plan)
    assert cats.get("metric_artifact_check_first") == "warning"


def test_dpo_stuck_at_ln2_and_overoptimisation() -> None:
    stuck = "\n".join(str({"loss": "0.6931", "rewards/chosen": "0", "rewards/margins": "0",
                           "rewards/accuracies": "0", "learning_rate": "1e-06", "epoch": f"{i / 10}"})
                      for i in range(6)) + "\n"
    assert _categories(stuck).get("no_learning_signal_config") == "error"
    over = "\n".join(str({"loss": 0.001, "rewards/margins": 15.0 + i, "rewards/accuracies": 1.0,
                          "learning_rate": 6e-5, "logps/chosen": -300 - 50 * i}) for i in range(5)) + "\n"
    diag = diagnose_text(over)
    f = next(f for f in diag.findings if f.category == "dpo_overoptimization_high_lr")
    assert "learning rate" in f.likely_cause


def test_generation_bound_and_logprob_trend() -> None:
    rows = [{"timing_s/gen": 70.0, "timing_s/step": 100.0, "critic/score/mean": 0.4} for _ in range(5)]
    assert _categories(_verl_lines(rows)).get("generation_bound") == "warning"
    nemo = "".join(f"===== Step {t}/20 =====\n  • Token Mult Prob Error: {1.0 + 0.01 * t:.3f}\n  • Loss: 0.1\n"
                   for t in range(1, 21))
    assert _categories(nemo).get("rollout_train_logprob_mismatch") == "error"


def test_critic_divergence_fires_on_rising_value_loss() -> None:
    rows = [{"critic/vf_loss": 1.0 * 1.2 ** t, "critic/score/mean": 0.3} for t in range(20)]
    assert _categories(_verl_lines(rows)).get("critic_divergence") == "warning"


def test_oom_phase_from_traceback_frames() -> None:
    trace = ("Traceback (most recent call last):\n"
             '  File "/x/verl/workers/fsdp_workers.py", line 900, in update_actor\n'
             '  File "/x/verl/workers/actor/dp_actor.py", line 400, in update_policy\n'
             '  File "/x/torch/autograd/__init__.py", line 200, in backward\n'
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    diag = diagnose_text(trace)
    assert diag.findings[0].category == "oom_actor_train"
    assert diag.findings[0].evidence[0].lines[0].line == 5
    wake = "INFO vllm wake_up(tags=['weights'])\nRuntimeError: CUDA error: out of memory (cumem_allocator.cpp:145)\n"
    assert diagnose_text(wake).findings[0].category == "oom_rollout_wakeup"


# ----------------------------------------------------------------------------- streaming and interfaces


def test_streaming_chunks_give_the_same_diagnosis() -> None:
    text = _healthy_verl(3, steps=120) + "ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    whole = diagnose_text(text)
    session = DiagnosisSession()
    rng = random.Random(0)
    pos = 0
    while pos < len(text):
        step = rng.randint(1, 5000)
        session.feed(text[pos:pos + step])
        pos += step
    chunked = session.finish()
    assert [(f.category, f.severity, f.summary) for f in chunked.findings] == \
        [(f.category, f.severity, f.summary) for f in whole.findings]
    assert chunked.lines_read == whole.lines_read and chunked.points_read == whole.points_read == 120


def test_bad_input_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(AdvisorError) as exc:
        diagnose_run(path=str(tmp_path / "missing.log"))
    assert exc.value.problems[0].field == "path"
    with pytest.raises(AdvisorError):
        diagnose_run()
    with pytest.raises(AdvisorError):
        diagnose_run(path=str(tmp_path), log_text="x")


def test_binary_file_is_read_without_error(tmp_path: Path) -> None:
    p = tmp_path / "garbage.bin"
    p.write_bytes(bytes(random.Random(2).randrange(256) for _ in range(300_000)))
    diag = diagnose_path(p)
    assert diag.status in ("healthy", "no_data", "problems")
    assert not [f for f in diag.findings if f.severity == "error"]


async def test_mcp_tool_with_inline_metrics() -> None:
    import jsonschema
    from mcp import Client

    from rl_advisor.mcp_server import build_server

    metrics = [{"step": t, "values": {"entropy": 1.0 * 0.6 ** t, "reward": 0.5}} for t in range(8)]
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "diagnose_run" in tools
        result = await client.call_tool("diagnose_run", {"metrics": metrics, "framework": "trl"})
        assert not result.is_error, result.content
        jsonschema.validate(result.structured_content, tools["diagnose_run"].output_schema)
        data = result.structured_content
        assert data["findings"][0]["category"] == "entropy_collapse"
        assert all(fx["framework"] == "trl" for fx in data["findings"][0]["fixes"])
        bad = await client.call_tool("diagnose_run", {"path": "/nonexistent/run.log"})
        assert bad.is_error
        nan = [{"step": t, "values": {"actor/grad_norm": None if t == 3 else 0.5}} for t in range(5)]
        result = await client.call_tool("diagnose_run", {"metrics": nan})
        assert result.structured_content["findings"][0]["category"] == "grad_norm_nan"


def test_registry_run_id(tmp_path: Path) -> None:
    registry = pytest.importorskip("backends.registry")
    from backends.protocol import RunRecord, RunState

    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps({"step": t, "reward": 0.0, "reward_std": 0.0,
                                           "frac_reward_zero_std": 1.0, "grad_norm": 0.0,
                                           "completions/mean_length": 30.0}) + "\n" for t in range(1, 6)))
    stderr = tmp_path / "stderr.log"
    stderr.write_text("Traceback (most recent call last):\nZeroDivisionError: division by zero in micro_batch split\n")
    now = "2026-01-01T00:00:00Z"
    record = RunRecord(run_id="diag-test-1", name="t", created_at=now, updated_at=now, backend="local",
                       framework="trl", state=RunState.FAILED, run_dir=str(tmp_path),
                       log_paths={"stderr": str(stderr)}, metrics_paths=[str(metrics)], metrics_format="trl_jsonl")
    reg = registry.RunRegistry()
    reg.create(record)
    diag = diagnose_run(run_id="diag-test-1")
    cats = [f.category for f in diag.findings]
    assert "batch_size_misconfig" in cats and "zero_variance_groups" in cats
    assert diag.framework == "trl" and diag.points_read == 5
    with pytest.raises(AdvisorError):
        diagnose_run(run_id="no-such-run")


SIGNATURE_TABLE = [
    # (log excerpt, expected first category) — message formats of the frameworks' own code paths
    ("RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n  in wake_up\n",
     "oom_rollout_wakeup"),
    ('  File "/x/verl/workers/fsdp_workers.py", line 1, in compute_ref_log_prob\n'
     '  File "/x/verl/workers/actor/dp_actor.py", line 2, in compute_log_prob\n'
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.00 GiB\n", "oom_ref_logprob"),
    ('  File "/x/transformers/trainer.py", line 1, in training_step\n'
     '  File "/x/trl/trainer/grpo_trainer.py", line 3, in _generate_and_score_completions\n'
     "    old_per_token_logps, _ = self._get_per_token_logps_and_entropies(\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB\n", "oom_actor_logprob"),
    ('  File "/x/transformers/trainer.py", line 1, in training_step\n'
     '  File "/x/trl/trainer/grpo_trainer.py", line 2, in compute_loss\n'
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB\n", "oom_actor_train"),
    ("(TaskRunner pid=1) dataset len: 10000\n(TaskRunner pid=1) filter dataset len: 2000\n", "data_filter_misconfig"),
    ("ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)\n", "batch_size_misconfig"),
    ("AssertionError: only support equal chunk. Got size of DataProto 6 and chunk 4.\n", "batch_size_misconfig"),
    ("ValueError: The global train batch size (1 x 4) must be evenly divisible by the number of generations "
     "per prompt (8).\n", "batch_size_misconfig"),
    ("omegaconf.errors.ConfigAttributeError: Key 'foo' not in 'PPOActorConfig'\n", "config_key_error"),
    ("train_ppo_ray.py: error: unrecognized arguments: --actor_learning_rate 1e-6\n", "config_key_error"),
    ("AttributeError: 'LLMEngine' object has no attribute 'update_weights'\n", "vllm_weight_sync_failure"),
    ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=_ALLGATHER_BASE, "
     "Timeout(ms)=600000)\nray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n",
     "nccl_timeout"),
    ("Workers (tasks / actors) killed due to memory pressure (OOM): 3\n", "oom_host_cpu"),
    ('  File "/x/verl/workers/rollout/vllm_rollout.py", line 10, in update_weights\n'
     "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, "
     "Timeout(ms)=600000)\n", "vllm_weight_sync_failure"),
    ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, "
     'Timeout(ms)=600000)\nTraceback (most recent call last):\n  File "/x/openrlhf/trainer/ray/ppo_actor.py", '
     "line 10, in _broadcast_to_vllm\n", "vllm_weight_sync_failure"),
    ("AssertionError: max_prompt_length + max_response_length exceeds max_position_embeddings 4096\n",
     "sequence_length_exceeds_model"),
    ("(A) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force\n"
     "ray.exceptions.RayActorError: The actor died unexpectedly\n", "ray_actor_death"),
]


@pytest.mark.parametrize("text,expected", SIGNATURE_TABLE, ids=[e for _, e in SIGNATURE_TABLE])
def test_log_signatures(text: str, expected: str) -> None:
    diag = diagnose_text(text)
    assert diag.findings and diag.findings[0].category == expected, [f.category for f in diag.findings]
    assert diag.findings[0].evidence[0].kind == "log"
    assert not any(f.category.startswith("oom_gpu") for f in diag.findings)


PROSE_TABLE = [
    # descriptions (issue text, post-mortems): '#' lines are prose — weaker evidence, still named
    ("# The response length keeps increasing until it hits the cap", "response_length_explosion"),
    ("# reward keeps increasing but the eval accuracy drops after step 300", "reward_hacking"),
    ("# all rewards in each group are identical for most prompts", "zero_variance_groups"),
    ("# generation takes 70% of the step time", "generation_bound"),
    ("# the value loss explodes after 50 steps", "critic_divergence"),
    ("# grad_norm spikes to 300 every few steps", "grad_norm_spike"),
    ("# 85% of the prompts were filtered out by max_prompt_length", "data_filter_misconfig"),
    ("# KL blows up after step 120", "kl_explosion"),
    ("# entropy quickly goes to near zero", "entropy_collapse"),
    ("# weight sync hangs after upgrading vllm", "vllm_weight_sync_failure"),
    ("# DPO loss remains 0.6931 from the first step", "no_learning_signal_config"),
    ("# the model suddenly outputs !!!!!!!!!!!! and grad_norm is nan", "grad_norm_nan"),
    ("# entropy stays around 0.3, reward rises steadily, clip ratio 2%, KL about 0.01", None),
    # wording classes (not the cases' own sentences)
    ("# looks like a bug in the response_length/mean metric when use_dynamic_bsz is on", "metric_artifact_check_first"),
    ("# the reported entropy is wrong for packed sequences", "metric_artifact_check_first"),
    ("# pg_clipfrac is incorrectly logged as 0 on every rank but rank 0", "metric_artifact_check_first"),
    ("# after step 200 the kl loss gets very high and the reward drops", "kl_explosion"),
    ("# inf shows up in the loss at step 12", "grad_norm_nan"),
    ("# Failed to sync the weights to the rollout engines after the upgrade", "vllm_weight_sync_failure"),
    ("# the answers are wrong on 30% of prompts; reward 0.7 and rising", None),
    ("# the KL is a bit high at the start but settles at 0.02", None),
]


@pytest.mark.parametrize("text,expected", PROSE_TABLE, ids=[str(e) for _, e in PROSE_TABLE])
def test_prose_descriptions(text: str, expected: str | None) -> None:
    diag = diagnose_text(text + "\n")
    cats = [f.category for f in diag.findings]
    if expected is None:
        assert not [f for f in diag.findings if f.severity == "error"], cats
    else:
        assert expected in cats[:2], cats
        f = next(f for f in diag.findings if f.category == expected)
        assert f.evidence[0].kind == "prose"


def test_run_directory_reads_metrics_once_and_scans_logs(tmp_path: Path) -> None:
    rows = [{"step": t, "loss": 0.0, "reward": 0.5, "reward_std": 0.3, "entropy": 0.9 * 0.5 ** t,
             "completions/mean_length": 100.0} for t in range(1, 9)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    console = "".join(str({k: str(v) for k, v in r.items() if k != "step"}) + "\n" for r in rows)
    (tmp_path / "stdout.log").write_text(console + "torch.OutOfMemoryError: CUDA out of memory.\n")
    diag = diagnose_path(tmp_path)
    assert diag.points_read == len(rows)  # the console dicts are not counted twice
    cats = [f.category for f in diag.findings]
    assert "entropy_collapse" in cats and "oom_gpu" in cats


def test_description_calling_it_normal_is_not_an_alarm() -> None:
    diag = diagnose_text("# KL spikes in the first steps are expected with a fresh reference\n")
    assert [(f.category, f.severity) for f in diag.findings] == [("kl_explosion", "info")]
    assert diag.status == "healthy"


def test_normal_in_another_clause_does_not_soften_the_finding() -> None:
    diag = diagnose_text("# after 40 steps NaN shows up in grad_norm, while the other losses are normal\n")
    assert [(f.category, f.severity) for f in diag.findings] == [("grad_norm_nan", "error")]


def test_on_policy_clipping_means_logprob_mismatch() -> None:
    from advisor.plan import Plan, RoleModel

    rows = [{"actor/pg_clipfrac": 0.03, "actor/ppo_kl": 0.02, "critic/score/mean": 0.4} for _ in range(6)]
    text = _verl_lines(rows)
    assert "rollout_train_logprob_mismatch" not in _categories(text)  # off-policy epochs are possible
    plan = Plan(policy=RoleModel(model="Qwen2.5-7B-Instruct"))
    plan.algorithm.epochs_per_batch = 1
    assert _categories(text, plan).get("rollout_train_logprob_mismatch") == "warning"
    plan.algorithm.epochs_per_batch = 2
    assert "rollout_train_logprob_mismatch" not in _categories(text, plan)


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps({"step": i, **r}) + "\n" for i, r in enumerate(rows, 1))


def _ramp(a: float, b: float, n: int, i: int) -> float:
    return a + (b - a) * i / (n - 1)


RULE_RUNS = {
    # category: a run that has exactly that failure (TRL keys, one JSON object per log)
    "reward_hacking": [{"reward": _ramp(0.2, 0.9, 30, i), "kl": _ramp(0.01, 0.4, 30, i),
                        "eval/reward": _ramp(0.5, 0.3, 30, i), "entropy": 0.5} for i in range(30)],
    "entropy_explosion": [{"entropy": _ramp(0.8, 2.4, 12, i), "reward": _ramp(0.6, 0.2, 12, i)} for i in range(12)],
    "response_length_explosion": [{"completions/mean_length": _ramp(200, 900, 12, i),
                                   "completions/clipped_ratio": _ramp(0.0, 0.15, 12, i), "reward": 0.5}
                                  for i in range(12)],
    "agent_format_protocol_failure": [{"tools/failure_frequency": 0.8, "reward": 0.05} for _ in range(6)],
    "reward_function_misconfig": [{"reward": 0.0, "reward_std": 0.0, "completions/mean_length": 300.0}
                                  for _ in range(5)],
    "low_throughput": [{"perf/mfu/actor": 0.03, "reward": 0.4} for _ in range(5)],
}


@pytest.mark.parametrize("category", sorted(RULE_RUNS))
def test_each_rule_fires_on_its_failure(category: str) -> None:
    diag = diagnose_text(_jsonl(RULE_RUNS[category]))
    cats = {f.category: f for f in diag.findings}
    assert category in cats, [(f.category, f.summary) for f in diag.findings]
    f = cats[category]
    assert f.evidence and f.evidence[0].kind == "metric" and f.evidence[0].values
    assert f.fixes and all(fx.framework == "trl" for fx in f.fixes if category != "low_throughput")


def _random_healthy(seed: int) -> str:
    """A healthy run with random length, noise, trends and format (veRL, TRL JSONL/console, OpenRLHF)."""
    rng = random.Random(seed)
    n = rng.choice([3, 5, 8, 15, 40, 120, 400])
    r0 = rng.uniform(0, 0.5)
    r1 = r0 + rng.uniform(-0.05, 0.4)
    e0, edrop = rng.uniform(0.2, 1.2), rng.uniform(0, 0.6)
    kl1, l0, lg = rng.uniform(0, 0.06), rng.uniform(50, 2000), rng.uniform(0.8, 1.8)
    clip, gsig, gmed = rng.uniform(0, 0.03), rng.uniform(0.1, 0.4), rng.uniform(0.05, 2.0)
    noise, fz, gshare = rng.uniform(0.01, 0.1), rng.uniform(0.05, 0.45), rng.uniform(0.15, 0.45)
    out = []
    for i in range(n):
        f = i / max(1, n - 1)
        m = {"entropy": e0 * (1 - edrop * f) * math.exp(rng.gauss(0, noise)),
             "kl": max(0.0, kl1 * f + rng.gauss(0, 0.002)), "grad_norm": gmed * math.exp(rng.gauss(0, gsig)),
             "reward": r0 + (r1 - r0) * f + rng.gauss(0, noise), "reward_std": abs(rng.gauss(0.3, 0.05)),
             "frac_reward_zero_std": min(1.0, abs(rng.gauss(fz, 0.05))), "loss": rng.gauss(0, 0.01),
             "completions/mean_length": l0 * (1 + (lg - 1) * f) * math.exp(rng.gauss(0, noise)),
             "completions/clipped_ratio": abs(rng.gauss(clip, clip / 4 + 1e-4)), "learning_rate": 1e-6}
        kind = seed % 4
        if kind == 0:
            out.append(json.dumps({"step": i + 1, **m}))
        elif kind == 1:
            out.append(str({k: f"{v:.4g}" for k, v in m.items()}))
        elif kind == 2:
            out.append(f"INFO 01-01 00:00:00 ppo_trainer.py:1] Global step {i + 1}: {m}")
        else:
            verl = {"actor/entropy": m["entropy"], "actor/kl_loss": m["kl"], "actor/grad_norm": m["grad_norm"],
                    "critic/score/mean": m["reward"], "critic/score/max": 1.0, "critic/score/min": 0.0,
                    "critic/advantages/max": 1.5, "critic/advantages/min": -1.5,
                    "response_length/mean": m["completions/mean_length"],
                    "response_length/clip_ratio": m["completions/clipped_ratio"],
                    "timing_s/gen": 100 * gshare, "timing_s/step": 100.0}
            out.append(f"step:{i + 1} - " + " - ".join(f"{k}:np.float64({v})" for k, v in verl.items()))
    return "\n".join(out) + "\n"


def test_random_healthy_runs_get_no_error() -> None:
    loud = {}
    for seed in range(80):
        diag = diagnose_text(_random_healthy(seed))
        errors = [(f.category, f.summary) for f in diag.findings if f.severity == "error"]
        if errors:
            loud[seed] = errors
    assert not loud, loud


def test_routine_metric_lines_hold_no_signal_word() -> None:
    """The pre-filter hands a line past the prose zone to the signature scanner and the metric reader when it holds a
    signal word (advisor/diagnosis/prefilter.py signal_words: the log signatures' triggers and requires_triggers). A
    word that every step line of a run holds makes each of them a full read (round 18: a requires_trigger 'update_',
    in veRL's timing_s/update_actor, made the 1M-line diagnose_scale log 7x slower)."""
    from advisor.diagnosis.prefilter import signal_words

    verl = ("(TaskRunner pid=4242) step:7 - actor/entropy:np.float64(0.41) - actor/kl_loss:np.float64(0.002) - "
            "actor/pg_loss:np.float64(0.01) - actor/pg_clipfrac:np.float64(0.002) - actor/ppo_kl:np.float64(1e-05) - "
            "actor/grad_norm:np.float64(0.3) - actor/lr:1e-06 - critic/score/mean:0.5 - critic/advantages/max:2.1 - "
            "response_length/mean:420 - response_length/clip_ratio:0.01 - timing_s/gen:30 - timing_s/old_log_prob:8 - "
            "timing_s/ref:7.5 - timing_s/update_actor:40 - timing_s/step:95 - perf/throughput:2500 - "
            "perf/max_memory_allocated_gb:61.2 - training/global_step:7")
    trl = ("{'loss': 0.01, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'num_tokens': 81920.0, 'completions/mean_length': 210.0, "
           "'completions/clipped_ratio': 0.01, 'rewards/accuracy_reward/mean': 0.4, 'reward': 0.4, 'reward_std': 0.3, "
           "'frac_reward_zero_std': 0.2, 'kl': 0.002, 'entropy': 0.6, 'clip_ratio/region_mean': 0.001, 'epoch': 0.1}")
    for line in (verl, trl):
        held = [w for w in signal_words() if w in line.lower()]
        assert not held, held
