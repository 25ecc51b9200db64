"""diagnose_run on the formats users paste, on short logs, on the frameworks' own warning strings,
and on long logs (the pre-filtered, sampled path must find what the line-by-line path finds)."""

from __future__ import annotations

import builtins
import json
import math
import random

import pytest

from advisor.diagnosis import DiagnosisSession, diagnose_text
from advisor.diagnosis import prefilter
from advisor.metrics import detect_format, parse_text


def _cats(d) -> list[str]:
    return [f.category for f in d.findings]


# ----------------------------------------------------------------------------- formats


def test_key_value_runs_on_one_line() -> None:
    text = ("completions/mean_length: 256   completions/clipped_ratio: 1   mean_terminated_length: 0\n"
            "reward: 0   reward_std: 0   frac_reward_zero_std: 1   loss: 0   grad_norm: 0\n")
    d = diagnose_text(text)
    assert d.points_read == 2 and "key_value" in d.formats
    assert {"response_truncation", "zero_variance_groups"} <= set(_cats(d)[:3])


def test_pipe_separated_key_values_keep_their_step() -> None:
    pts = parse_text("epoch: 0|step: 259|ppo_ep: 1|act_loss: 0.025|cri_loss: 0.21\n"
                     "epoch: 0|step: 260|ppo_ep: 1|act_loss: 0.19|cri_loss: 0.32\n")
    assert [p.step for p in pts] == [259, 260]


def _bar(n: int, total: int = 500) -> str:
    return f" {n * 100 // total:2d}%|##   | {n}/{total} [00:{n % 60:02d}<12:00,  3.10s/it]"


def test_trainer_dict_on_the_tqdm_bar_line() -> None:
    """The transformers Trainer prints its logged dict right after the bar, with no newline."""
    text = "".join(_bar(n) + "{'loss': nan, 'reward': 0.31, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
                   for n in (7, 14, 21))
    d = diagnose_text(text)
    assert d.points_read == 3 and "trl_console" in d.formats
    assert "grad_norm_nan" in _cats(d)
    assert [p.step for p in parse_text(text)] == [7, 14, 21]


def test_trainer_dict_after_carriage_return_redraws() -> None:
    """tqdm redraws the bar after carriage returns; the dict follows the last redraw."""
    text = "".join("\r".join(_bar(n) for n in range(k - 3, k + 1)) + "\r{'loss': 0.5, 'grad_norm': nan}\n"
                   for k in (10, 20))
    pts = parse_text(text)
    assert [p.step for p in pts] == [10, 20] and math.isnan(pts[0].values["grad_norm"])
    assert "grad_norm_nan" in _cats(diagnose_text(text))


def test_bar_prefixed_records_past_the_prose_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the prose zone only pre-filtered lines are read: a dict after a bar is a record there too."""
    monkeypatch.setattr("advisor.diagnosis.engine.prose_scan_lines", lambda: 5)
    lines = [f"INFO filler line {i}" for i in range(40)]
    lines[30] = _bar(30) + "{'loss': 0.4, 'reward': 0.2}"
    lines[35] = _bar(31) + "\r" + _bar(32) + "\r{'loss': nan, 'reward': 0.2}"
    d = diagnose_text("\n".join(lines) + "\n")
    assert d.points_read == 2 and "grad_norm_nan" in _cats(d)


def test_a_bracket_without_a_dict_is_not_a_record() -> None:
    assert parse_text(_bar(3) + " {not a dict}\n[INFO] {x} done\n") == []


def test_markdown_table() -> None:
    text = ("| step | reward | entropy |\n|---:|---:|---:|\n" + "".join(
        f"| {i} | {0.1 * i:.2f} | {0.6 * 0.5 ** i:.4f} |\n" for i in range(1, 9)))
    d = diagnose_text(text)
    assert d.points_read == 8 and d.formats.get("table") == 8
    assert "entropy_collapse" in _cats(d)[:3]
    ent = next(s for s in d.series if s.name == "entropy")
    assert ent.steps == list(range(1, 9))


def test_per_metric_summary_table() -> None:
    """A table of one metric per row (a run's summary pasted into an issue): one point per metric."""
    text = ("| metric | last value | note |\n|---|---|---|\n"
            "| `response_length/clip_ratio` | **0.93** | most steps |\n"
            "| response_length/mean | 1021 | |\n| critic/score/mean | 0.41 | |\n")
    d = diagnose_text(text)
    assert d.points_read == 3 and d.formats == {"table": 3}
    assert _cats(d)[:1] == ["response_truncation"] and d.findings[0].confidence < 0.9  # one point: less sure
    healthy = diagnose_text(text.replace("**0.93**", "0.01"))
    assert not [f for f in healthy.findings if f.severity == "error"]


def test_whitespace_table_transcribed_from_a_screenshot() -> None:
    pts = parse_text("step  reward  kl\n1  0.10  0.001\n2  0.12  0.002\n3  0.15  0.002\n")
    assert [(p.step, p.values["reward_mean"]) for p in pts] == [(1, 0.10), (2, 0.12), (3, 0.15)]


def test_wandb_csv_export_drops_min_max_bands() -> None:
    text = ("Step,run-a - train/reward,run-a - train/reward__MIN,run-a - train/reward__MAX,run-a - train/kl\n"
            "1,0.1,0.0,0.2,0.001\n2,0.2,0.1,0.3,0.002\n")
    assert detect_format(text) == "csv"
    pts = parse_text(text)
    assert [(p.step, p.values) for p in pts] == [(1, {"reward_mean": 0.1, "kl": 0.001}),
                                                 (2, {"reward_mean": 0.2, "kl": 0.002})]


def test_csv_pasted_after_comment_lines_and_a_second_table() -> None:
    """A CSV a user pastes below their own notes (not on the first line), then a second CSV with other columns:
    both read, each row keeps its step; a sentence with commas is not taken for a header."""
    text = ("# my GRPO run, exported from the notebook\n"
            "Reward and KL below, one row per 50 steps.\n"
            "step,reward,kl\n50,0.10,0.001\n100,0.20,0.002\n"
            "# entropy, from a second export:\n"
            "step,entropy,grad_norm\n50,0.9,0.3\n100,0.8,0.2\n")
    pts = parse_text(text)
    assert [(p.step, p.values) for p in pts] == [(50, {"reward_mean": 0.10, "kl": 0.001}),
                                                 (100, {"reward_mean": 0.20, "kl": 0.002}),
                                                 (50, {"entropy": 0.9, "grad_norm": 0.3}),
                                                 (100, {"entropy": 0.8, "grad_norm": 0.2})]
    assert parse_text("Well, the reward, the kl and the entropy all look fine.\n") == []


def test_wandb_json_exports() -> None:
    rows = [{"_step": i, "_runtime": 3.0 * i, "train/reward": 0.1 * i, "train/kl": 0.01} for i in range(1, 4)]
    arr = json.dumps(rows)
    assert detect_format(arr) == "json_array"
    assert [p.step for p in parse_text(arr)] == [1, 2, 3]
    jsonl = "".join(json.dumps(r) + "\n" for r in rows)
    pts = parse_text(jsonl)
    assert [p.step for p in pts] == [1, 2, 3] and "_runtime" not in pts[0].raw


def test_ray_prefixed_vllm_traceback_during_weight_update() -> None:
    text = "\n".join(f"(WorkerDict pid=123, ip=10.0.0.2) {ln}" for ln in (
        "Traceback (most recent call last):",
        '  File "/verl/workers/fsdp_workers.py", line 612, in update_weights',
        "    self.rollout.update_weights(params)",
        '  File "/verl/workers/rollout/vllm_rollout/vllm_rollout.py", line 201, in update_weights',
        "torch.distributed.DistBackendError: [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=12, OpType=BROADCAST, Timeout(ms)=600000) ran for 600012 milliseconds before timing out."))
    d = diagnose_text(text)
    assert _cats(d)[0] == "vllm_weight_sync_failure"
    assert d.findings[0].evidence[0].lines


# ----------------------------------------------------------------------------- short logs


def test_two_steps_all_groups_uniform_and_zero_gradient() -> None:
    line = ("{'loss': 0.0, 'grad_norm': 0.0, 'learning_rate': 1e-06, 'reward': 3.0, 'reward_std': 0.0, "
            "'frac_reward_zero_std': 1.0, 'completions/clipped_ratio': 0.0, 'epoch': %s}\n")
    d = diagnose_text(line % 0.1 + line % 0.2)
    top = d.findings[0]
    assert top.category == "zero_variance_groups" and top.severity == "error" and top.confidence >= 0.85


def test_one_step_uniform_groups_but_moving_gradient_is_not_an_error() -> None:
    d = diagnose_text("{'loss': 0.0, 'grad_norm': 0.3, 'reward': 1.0, 'reward_std': 0.4, "
                      "'frac_reward_zero_std': 1.0, 'epoch': 0.1}\n")
    assert not [f for f in d.findings if f.severity == "error"]


def test_one_dpo_log_with_empty_log_probs() -> None:
    d = diagnose_text("{'loss': 0.6931, 'rewards/chosen': 0.0, 'rewards/rejected': 0.0, 'rewards/margins': 0.0, "
                      "'logps/rejected': 0.0, 'logps/chosen': 0.0, 'epoch': 0.59}\n")
    assert _cats(d)[0] == "no_learning_signal_config" and d.findings[0].confidence >= 0.85


def test_every_response_clipped_on_one_step() -> None:
    d = diagnose_text("step:1 - response_length/mean:1024.0 - response_length/max:1024.0 - "
                      "response_length/clip_ratio:1.0 - critic/score/mean:0.0\n")
    assert "response_truncation" in _cats(d)[:2]


def test_nan_on_one_step() -> None:
    d = diagnose_text("step:3 - actor/grad_norm:nan - actor/pg_loss:nan - critic/score/mean:0.0\n")
    assert _cats(d)[0] == "grad_norm_nan" and d.findings[0].confidence >= 0.9


def test_trends_still_need_points_on_healthy_short_logs() -> None:
    """Three noisy healthy steps: no level or trend rule may raise an error."""
    rows = [(0.41, 0.62, 0.021, 0.30), (0.44, 0.60, 0.019, 0.28), (0.43, 0.61, 0.024, 0.33)]
    text = "".join(f"step:{i} - critic/score/mean:{r} - actor/entropy:{e} - actor/kl_loss:{k} - "
                   f"actor/grad_norm:{g} - response_length/clip_ratio:0.01\n"
                   for i, (r, e, k, g) in enumerate(rows, 1))
    d = diagnose_text(text)
    assert d.status == "healthy", [(f.category, f.summary) for f in d.findings]


def test_confidence_is_lower_on_few_points() -> None:
    few = diagnose_text("".join(f"step:{i} - actor/entropy:{v}\n" for i, v in enumerate([0.8, 0.3, 0.02], 1)))
    many = diagnose_text("".join(f"step:{i} - actor/entropy:{0.8 * 0.7 ** i:.4f}\n" for i in range(1, 21)))
    c_few = next(f for f in few.findings if f.category == "entropy_collapse").confidence
    c_many = next(f for f in many.findings if f.category == "entropy_collapse").confidence
    assert c_few < c_many


def test_task_reward_falls_while_format_reward_rises() -> None:
    rows = [(0.16, 0.48), (0.12, 0.55), (0.06, 0.86)]
    text = "".join(f"{{'rewards/accuracy_reward': {a}, 'rewards/format_reward': {f}, 'reward': {a + f}, "
                   f"'grad_norm': 0.8, 'epoch': {i}}}\n" for i, (a, f) in enumerate(rows))
    assert "reward_hacking_shortcut" in _cats(diagnose_text(text))[:3]


# ----------------------------------------------------------------------------- framework strings


@pytest.mark.parametrize("line, category", [
    ("WARNING 03-30 00:24:16 [scheduler.py:72] Input prompt (8128 tokens) is too long and exceeds limit of 6000",
     "sequence_length_exceeds_model"),
    ("ValueError: The decoder prompt (length 322) is longer than the maximum model length of 256.",
     "sequence_length_exceeds_model"),
    ("UserWarning: KL divergence is starting to become negative: -5.27 - this might be a precursor for failed "
     "training.", "rollout_train_logprob_mismatch"),
    ("UserWarning: The average ratio of batch (14.93) exceeds threshold 10.00. Skipping batch.", "kl_explosion"),
    ("All reward functions returned None for the following kwargs:", "reward_function_misconfig"),
    ("AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization", "batch_size_misconfig"),
    ("ValueError: Prompt length (9000) exceeds the model's maximum context length (8192).",
     "sequence_length_exceeds_model"),
    ("ValueError: Input sequence exceeds model's max position embeddings (32768)", "sequence_length_exceeds_model"),
])
def test_framework_warning_strings(line: str, category: str) -> None:
    d = diagnose_text(line + "\n")
    assert _cats(d)[:1] == [category]
    assert d.findings[0].evidence[0].lines[0].line == 1


def test_traceback_cut_inside_vllm_input_validation_is_named_with_less_confidence() -> None:
    text = ("(Runner pid=1) ERROR   File \"/x/vllm/v1/engine/processor.py\", line 300, in process_inputs\n"
            "(Runner pid=1) ERROR     self._validate_model_inputs(processed_inputs, lora_request)\n")
    d = diagnose_text(text)
    assert _cats(d)[:1] == ["sequence_length_exceeds_model"] and d.findings[0].confidence == 0.6
    full = diagnose_text(text + "(Runner pid=1) ERROR ValueError: The decoder prompt (length 5000) is longer than "
                                "the maximum model length of 4096.\n")
    assert _cats(full)[:1] == ["sequence_length_exceeds_model"] and full.findings[0].confidence == 0.9


# ----------------------------------------------------------------------------- long logs


def _long_log(n_lines: int, nan_at: int, oom_at: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    out = []
    step = 0
    for i in range(1, n_lines + 1):
        if i == oom_at:
            out.append("(WorkerDict pid=7) File \"/verl/workers/actor/dp_actor.py\", line 332, in compute_log_prob")
            continue
        if i == oom_at + 1:
            out.append("(WorkerDict pid=7) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB.")
            continue
        if i % 5 == 0:
            step += 1
            g = "nan" if i == nan_at else f"{abs(rng.gauss(0.3, 0.05)):.4f}"
            out.append(f"(TaskRunner pid=1) step:{step} - actor/grad_norm:{g} - actor/entropy:{0.6 + rng.gauss(0, .01):.4f}"
                       f" - critic/score/mean:{0.5 + rng.gauss(0, .02):.4f} - timing_s/update_actor:40.1")
        else:
            out.append(f"(WorkerDict pid=9) INFO 11-30 10:00:00 vllm_engine.py:212] Avg prompt throughput: "
                       f"{rng.random() * 90:.1f} tokens/s")
    return "\n".join(out) + "\n"


def test_long_log_finds_what_a_short_one_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the prose zone only pre-filtered lines are read and records are sampled; a NaN record
    in the sampled region and an OOM deep in the log are still found, with exact line numbers."""
    text = _long_log(60_000, nan_at=52_345 - 52_345 % 5, oom_at=55_001)
    session = DiagnosisSession()
    for i in range(0, len(text), 65_536):  # chunk edges fall mid-line
        session.feed(text[i:i + 65_536])
    d = session.finish()
    assert d.lines_read == 60_000
    cats = _cats(d)
    assert cats[0] == "oom_actor_logprob" and "grad_norm_nan" in cats
    oom = d.findings[0]
    assert {ln.line for e in oom.evidence for ln in e.lines} >= {55_001, 55_002}
    nan = next(f for f in d.findings if f.category == "grad_norm_nan")
    assert f"line {52_345 - 52_345 % 5}" in nan.evidence[0].note
    assert any("one in" in n for n in d.notes)  # sampling is reported
    assert d.points_read < 12_000 / 2


def _context_log() -> str:
    """3,000 lines: an OOM at line 2,700 whose phase frame is 60 lines before it, and an NCCL
    timeout at line 2,900 with a weight-sync frame 30 lines after it (past the prose zone)."""
    lines = [f"(WorkerDict pid=9) INFO vllm_engine.py:212] Avg prompt throughput: {i % 97}.0 tokens/s"
             for i in range(1, 3001)]
    lines[2640 - 1] = '(WorkerDict pid=7)   File "/verl/workers/fsdp_workers.py", line 900, in compute_ref_log_prob'
    lines[2700 - 1] = "(WorkerDict pid=7) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.1 GiB."
    lines[2900 - 1] = "(WorkerDict pid=7) [rank0]: Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST)"
    lines[2930 - 1] = '(WorkerDict pid=7)   File "/verl/workers/sharding_manager.py", line 120, in sync_model_weights'
    return "\n".join(lines) + "\n"


# chunk edges: between the OOM's frame and the OOM (the window reads the previous chunk's tail),
# between the timeout and the frame after it (the window continues into the next chunk), elsewhere
@pytest.mark.parametrize("edge_line", [2670, 2915, 2600, 2705, 2990])
def test_context_markers_across_chunk_edges(monkeypatch: pytest.MonkeyPatch, edge_line: int) -> None:
    """Markers are read only near error lines; the result must not depend on where chunks end,
    and must equal reading every line in full."""
    text = _context_log()
    edge = 0
    for _ in range(edge_line):
        edge = text.index("\n", edge) + 1
    edge += 7  # mid-line

    def summary(d) -> list:
        return [(f.category, sorted({ln.line for e in f.evidence for ln in e.lines})) for f in d.findings]

    session = DiagnosisSession()
    session.feed(text[:edge])
    session.feed(text[edge:])
    chunked = summary(session.finish())
    monkeypatch.setattr("advisor.diagnosis.engine.prose_scan_lines", lambda: 1 << 40)
    monkeypatch.setattr("advisor.diagnosis.engine.prose_scan_chars", lambda: 1 << 40)
    full = summary(diagnose_text(text))
    assert chunked == full
    cats = [c for c, _ in full]
    assert "oom_ref_logprob" in cats and "vllm_weight_sync_failure" in cats
    assert 2640 in dict(full)["oom_ref_logprob"]


def test_python_fallback_picks_the_same_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _long_log(3_000, nan_at=2_500, oom_at=2_800).encode()
    data += b"# a description: the reward stays at 0\n| step | reward |\n\tnot a table\n{'loss': 0.1}\n"
    fast = prefilter.line_ends(data)
    fast_markers = prefilter.marker_ends(data, 0, len(data))
    assert fast_markers  # the frame line of the OOM
    fast_split = prefilter.record_and_line_ends(data, 0, len(data))
    records, others = fast_split
    assert records and others  # the step lines; the NaN record, the OOM, the table, the prose
    assert sorted([(end, prefilter.RECORD) for end in records] + others) == fast
    prefilter.engine.cache_clear()
    real_import = builtins.__import__

    def no_hyperscan(name, *a, **k):
        if name == "hyperscan":
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_hyperscan)
    try:
        assert prefilter.engine().kind == "python"
        assert prefilter.line_ends(data) == fast
        assert prefilter.marker_ends(data, 0, len(data)) == fast_markers
        assert prefilter.record_and_line_ends(data, 0, len(data)) == fast_split
    finally:
        monkeypatch.undo()
        prefilter.engine.cache_clear()


def test_memory_does_not_grow_with_the_log() -> None:
    """The store keeps a bounded number of buckets however many records are read."""
    session = DiagnosisSession()
    for chunk in range(20):
        session.feed("".join(f"step:{chunk * 5000 + i} - actor/grad_norm:{0.3 + math.sin(i) / 10:.3f}\n"
                             for i in range(5000)))
    d = session.finish()
    s = session.store.get("grad_norm")
    assert s is not None and len(s.mean) <= s.capacity
    assert d.lines_read == 100_000


# ---------------------------------------------------------------- round 9 (batches 9 and 10's misses read)
def test_pipe_joined_key_values_after_a_pipe_led_timing_line() -> None:
    """DeepSpeed-Chat prints a ``|E2E latency=...|`` timing line (pipe-led, so it looks like a table) before each
    ``epoch: 0|step: N|act_loss: ...`` record; the record is read, not taken for a row of that table."""
    timing = "|E2E latency=1.90s |Gather latency=0.00s (0.00%) |Generate time=1.20s (63.1%) |CurSamplesPerSec=2.1\n"
    text = "".join(timing + f"epoch: 1|step: {s}|ppo_ep: 1|act_loss: {a}|cri_loss: {c}|unsuper_loss: 0.0\n"
                   "average reward score: 1.5\n" for s, a, c in ((40, 0.12, 0.3), (41, "nan", "nan"), (42, "nan", "inf")))
    pts = parse_text(text)
    assert [p.step for p in pts] == [40, 41, 42]
    d = diagnose_text(text)
    assert _cats(d)[:1] == ["grad_norm_nan"] and d.findings[0].severity == "error"
    # a Markdown table before the same records, and a shorter variant of the record
    md = "| step | act_loss |\n|---|---|\n| 1 | 0.5 |\n" + "epoch: 0|step: 7|act_loss: 0.4|cri_loss: inf\n"
    assert [p.step for p in parse_text(md)][-1] == 7
    # a healthy run of the same format gives no error
    ok = "".join(timing + f"epoch: 0|step: {s}|ppo_ep: 1|act_loss: 0.{s}|cri_loss: 0.3|unsuper_loss: 0.0\n"
                 for s in range(10, 16))
    assert not [f for f in diagnose_text(ok).findings if f.severity == "error"]


@pytest.mark.parametrize("text", [
    # TRL DPOTrainer console dict: loss hidden as 0.0, log-probs NaN
    "{'loss': 0.6931, 'rewards/chosen': 0.0, 'rewards/rejected': 0.0, 'logps/chosen': -80.1, 'epoch': 0.01}\n"
    "{'loss': 0.0, 'rewards/chosen': nan, 'rewards/rejected': nan, 'rewards/margins': nan, 'epoch': 0.02}\n",
    # JSONL with a NaN margin only
    '{"step": 1, "loss": 0.69, "rewards/margins": 0.01}\n{"step": 2, "loss": 0.0, "rewards/margins": NaN}\n',
    # a key: value run with NaN log-probs
    "step: 3  loss: 0.0  logps/chosen: nan  logps/rejected: nan\n",
])
def test_preference_log_prob_metrics_that_go_nan(text: str) -> None:
    d = diagnose_text(text)
    assert "grad_norm_nan" in [f.category for f in d.findings if f.severity == "error"], _cats(d)


def test_finite_preference_metrics_raise_nothing() -> None:
    text = "".join(f"{{'loss': 0.{69 - s}, 'rewards/chosen': 0.{s}, 'rewards/rejected': -0.{s}, "
                   f"'rewards/margins': 0.{2 * s}, 'logps/chosen': -8{s}.0, 'epoch': 0.0{s}}}\n" for s in range(1, 6))
    assert not [f for f in diagnose_text(text).findings if f.severity == "error"]
