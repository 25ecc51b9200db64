"""The metric readers against real framework samples, the diagnosis case logs, and hostile input."""

from __future__ import annotations

import ast
import json
import math
import random
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.metrics import (LogReader, SeriesStore, TrainerStateReader, detect_format, make_reader,
                             parse_number, parse_text)
from advisor.diagnosis import diagnose_text
from rl_advisor.metric_files import read_points


def _samples(shared: Path) -> Path:
    return shared / "research" / "frameworks" / "samples"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


# ----------------------------------------------------------------------------- real samples


def test_trl_trainer_state_samples_match_json(shared_dir: Path) -> None:
    for name in ("trl-1.16.0-grpo-cpu-trainer_state.json", "trl-1.16.0-dpo-cpu-trainer_state.json"):
        path = _samples(shared_dir) / name
        text = _read(path)
        assert detect_format(text[:4096]) == "trl_trainer_state"
        points = parse_text(text)
        history = [h for h in json.loads(text)["log_history"] if "train_runtime" not in h]
        assert len(points) == len(history) > 0
        for point, entry in zip(points, history):
            assert point.step == entry["step"]
            for key, value in entry.items():
                if key != "step" and isinstance(value, (int, float)):
                    assert point.raw[key] == pytest.approx(float(value))
            assert point.values["loss"] == pytest.approx(entry["loss"])
            assert point.keys["loss"] == "loss"


def test_trl_trainer_state_streams_in_tiny_chunks(shared_dir: Path) -> None:
    text = _read(_samples(shared_dir) / "trl-1.16.0-grpo-cpu-trainer_state.json")
    whole = parse_text(text)
    reader = TrainerStateReader()
    pieces = []
    for i in range(0, len(text), 7):
        pieces.extend(reader.feed(text[i:i + 7]))
    assert [p.raw for p in pieces] == [p.raw for p in whole]


@pytest.mark.parametrize("name", ["trl-1.16.0-grpo-console-line.txt", "trl-1.16.0-dpo-console-line.txt"])
def test_trl_console_string_values(shared_dir: Path, name: str) -> None:
    text = _read(_samples(shared_dir) / name)
    assert detect_format(text) == "trl_console"
    points = parse_text(text)
    first = ast.literal_eval(text.splitlines()[0])
    assert len(points) == 1  # the train_runtime summary line is not a training step
    for key, value in first.items():
        assert points[0].raw[key] == pytest.approx(float(value))
    assert points[0].values["grad_norm"] == pytest.approx(float(first["grad_norm"]))


def test_verl_console_equals_file_logger(shared_dir: Path) -> None:
    text = _read(_samples(shared_dir) / "verl-0.9.1-console-and-file-logger.txt")
    points = parse_text(text)
    console = [p for p in points if p.source == "verl_console"]
    jsonl = [p for p in points if p.source == "verl_jsonl"]
    assert len(console) == 1 and len(jsonl) == 1
    assert console[0].raw == jsonl[0].raw  # np.float64(x) and True read like the JSON numbers
    assert console[0].step == jsonl[0].step == 1
    assert console[0].values["pg_clip_frac"] == pytest.approx(0.002)
    assert console[0].keys["reward_mean"] == "critic/score/mean"


def test_every_sample_file_is_read(shared_dir: Path) -> None:
    """Every real sample parses without error; every metric log yields points."""
    for path in sorted(_samples(shared_dir).iterdir()):
        points = list(read_points(path))
        if "smoke-results" in path.name:  # a timing summary, not a metric log
            assert points == []
        else:
            assert points, path.name
            assert all(p.values for p in points), path.name


# ----------------------------------------------------------------------------- diagnosis cases


def _case_metric_files(shared: Path) -> list[tuple[str, Path]]:
    import yaml

    index = yaml.safe_load((shared / "cases" / "diagnosis" / "index.yaml").read_text())
    out = []
    for case in index["cases"]:
        if case["input_kind"] != "metric":
            continue
        for raw in case["raw_files"]:
            out.append((case["id"], shared / "cases" / "diagnosis" / case["id"] / raw))
    return out


def test_case_metric_logs_parse(shared_dir: Path) -> None:
    files = _case_metric_files(shared_dir)
    assert len(files) >= 8
    for case_id, path in files:
        points = list(read_points(path))
        if case_id.startswith("nemorl-2100"):  # a metric rule with numbers in prose, no step log
            continue
        assert points, case_id
        names = {n for p in points for n in p.values}
        assert names & {"reward_mean", "loss", "entropy", "kl_seq", "dpo_margin"}, (case_id, names)


def test_wrapped_verl_lines_are_rejoined(shared_dir: Path) -> None:
    """Terminal-wrapped step lines (a key split across lines) read as one record."""
    path = shared_dir / "cases" / "diagnosis" / "verl-retool-32b-step60-genbound-longtail" / "raw.txt"
    text = _read(path)
    (point,) = parse_text(text)
    assert point.step == 60
    # 'actor\n/entropy:0.347...' in the file: check against the digits that follow the split key
    idx = text.index("/entropy:")
    expected = float(text[idx + len("/entropy:"):].split(" ")[0])
    assert point.raw["actor/entropy"] == pytest.approx(expected)
    assert point.values["timing_gen_s"] > 0 and point.values["timing_step_s"] > point.values["timing_gen_s"]


def test_trl_console_step_from_tqdm(shared_dir: Path) -> None:
    path = (shared_dir / "cases" / "diagnosis" / "trl-dapo-vl3b-181457-entropy-collapse-repetition"
            / "raw_run_terminal.md")
    points = parse_text(_read(path))
    assert [p.step for p in points] == sorted(p.step for p in points)
    assert all(p.total_steps == 43 for p in points)
    ent = [p.values["entropy"] for p in points]
    assert ent[0] > 0.5 > ent[-1]


def test_table_extract(shared_dir: Path) -> None:
    path = (shared_dir / "cases" / "diagnosis" / "trl-dapo-vl3b-120531-format-shortcut-zero-variance"
            / "raw_metrics_extract.txt")
    text = _read(path)
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    points = parse_text(text)
    assert len(points) == len(rows) - 1
    assert points[1].values["grad_norm"] == pytest.approx(float(rows[2][rows[0].index("grad_norm")]))
    assert "reward_component:think_format_reward" in points[0].values


def test_table_with_a_step_per_column() -> None:
    """A report's table turned on its side (round 14): a metric per row, a step per column header; a column
    without a step (a trend or note) is skipped, and a row whose first cell is no metric key is not read."""
    text = ("| metric | Step 10 (early) | **step 200** | Step 400 | trend |\n|---|---|---|---|---|\n"
            "| actor/entropy | 0.9 | 1.4 | 0.35 | falls |\n| critic/score/mean | 0.1 | 0.4 | 0.2 | - |\n"
            "| notes | a | b | c | d |\n")
    points = [p for p in parse_text(text) if p.values]
    assert [(p.step, p.values) for p in points if "entropy" in p.values] == [
        (10, {"entropy": 0.9}), (200, {"entropy": 1.4}), (400, {"entropy": 0.35})]
    assert [p.step for p in points if "entropy" not in p.values] == [10, 200, 400]
    # a plain per-metric summary table (no step in its header) still reads one value per metric
    summary = parse_text("| metric | value |\n|---|---|\n| actor/entropy | 0.5 |\n")
    assert [p.values for p in summary if p.values] == [{"entropy": 0.5}]


def test_whitespace_table_with_units_in_its_header() -> None:
    """A whitespace-aligned table (a DataFrame's to_string) whose header names carry a unit in parentheses, as
    ms-swift's ``memory(GiB)`` and ``train_speed(iter/s)`` do (round 17: such a header was not read as one, so
    none of its rows were)."""
    text = ("step  loss  grad_norm  memory(GiB)  train_speed(iter/s)  rewards/chosen\n"
            "   1  0.69        1.0        16.94               0.0728            0.31\n"
            "   2  0.0         1.0        29.28               0.1985             nan\n")
    points = [p for p in parse_text(text) if p.values]
    assert [p.step for p in points] == [1, 2]
    assert math.isnan(points[1].values["dpo_reward_chosen"])


def test_prose_statements_of_a_metric() -> None:
    """A run report's sentences (round 15): a metric's value tied to a step, either order, and a change from one
    value to another, read as points (capitalised names as sentences write them); a setting, a value without a step
    and a change the writer made to a setting are not metrics."""
    text = ("In the first run KL = 3400 at step 180, then it recovered.\n"
            "At step 40, loss=nan and everything after was garbage\n"
            "Entropy dropped sharply from 0.9 to 0.02.\n"
            "the grad_norm of 0.8 around iteration 12 was fine\n")
    got = [(p.step, p.values) for p in parse_text(text) if p.values]
    assert got[0] == (180, {"kl": 3400.0})
    assert got[1][0] == 40 and math.isnan(got[1][1]["loss"])
    assert [v for _, v in got[2:4]] == [{"entropy": 0.9}, {"entropy": 0.02}]
    assert got[4] == (12, {"grad_norm": 0.8})
    for text in ("beta=0.04 at step 0\n", "I increased the kl_coef from 0.01 to 0.1\n",
                 "we trained 300 steps with a kl of 0.1 in the end\n", "the learning rate went from 1e-6 to 1e-5\n",
                 "the run moved from 8 to 16 GPUs at step 100\n"):
        assert [p.values for p in parse_text(text) if p.values] == [], text



def test_hand_written_markdown_table_cells() -> None:
    """A Markdown table typed by hand (round 35): bold or code cells, a unit word, a note in parentheses and thousands
    separators still give the cell's number (time units in seconds); a percentage or two numbers in one cell are not
    read, and a header naming sizes ("7B") is still a header."""
    text = ("| **step** | reward | kl | response_length |\n|---|---|---|---|\n"
            "| 10 | **0.12** | `0.01` | 512 tok |\n| 20 | 0.45 (best) | 0 / 0 | 1,024 |\n| 30 | 12% | 0.2 | 2048 |\n")
    got = [(p.step, p.values) for p in parse_text(text) if p.values]
    assert got == [(10, {"reward_mean": 0.12, "kl": 0.01, "response_length_mean": 512.0}),
                   (20, {"reward_mean": 0.45, "response_length_mean": 1024.0}),
                   (30, {"kl": 0.2, "response_length_mean": 2048.0})]
    from advisor.metrics.parsers import _cell_number
    assert _cell_number("800 ms") == 0.8 and _cell_number("1.5 min") == 90.0
    assert _cell_number("117.8 s（含 save 16.9）") == 117.8 and _cell_number("7B params and more") is None

def test_arrow_chains_and_inline_code_in_notes() -> None:
    """Run notes (round 35): a metric's values joined by arrows are its curve, in order, with the steps written beside
    them when every value has one (``s4`` / ``step 5``); Markdown's inline code and emphasis around a record do not
    hide it. A chain in percent, and a chain after a word that is not a metric or a verb, are not read."""
    got = [(p.step, p.values) for p in parse_text("- **VAL**: acc 0.31 → **0.37 (s4 peak)** → 0.29 → 0.13\n") if p.values]
    assert [v["dpo_accuracy"] for _, v in got] == [0.31, 0.37, 0.29, 0.13]
    assert [s for s, _ in got] == sorted(s for s, _ in got)  # the order is the curve (not every value has a step)
    got = [(p.step, p.values) for p in parse_text("the kl from 0.01 (step 1) -> 0.9 (step 5)\n") if p.values]
    assert got == [(1, {"kl": 0.01}), (5, {"kl": 0.9})]
    got = [p.values for p in parse_text("`sampling_logp_difference` mean grows 0.025 → 0.17 over 5 steps\n") if p.values]
    assert got == [{"logprob_diff_mean": 0.025}, {"logprob_diff_mean": 0.17}]
    got = [p.values for p in parse_text("Step 394: `grad_norm=983040`, `loss=140.87`, `kl=14087` (vs ~5)\n") if p.values]
    assert got == [{"grad_norm": 983040.0, "loss": 140.87, "kl": 14087.0}]
    for text in ("truncation rate 1.2% -> 47% -> 88%\n", "the entropy clip ratio 0.9 -> 0.1\n",
                 "reward 12% → 30%\n", "model size 7 → 14\n"):
        assert [p.values for p in parse_text(text) if p.values] == [], text

@pytest.mark.parametrize("text", [
    "In our first run the KL exploded: KL of 5200 at step 90.\n",
    "At step 90 the kl reached 5200 and the outputs were gibberish.\n",
    "the kl went from 0.05 to 5200 within 40 steps\n",
    "step 90: kl=5200 (it was 0.05 before)\n",
])
def test_a_narrated_kl_explosion_reads_the_same_in_every_phrasing(text: str) -> None:
    """The metric rules read a narrated run whatever its phrasing (round 15): each sentence gives the KL rule its
    points, and it fires as it does on a log; a KL the report states as small does not."""
    d = diagnose_text(text)
    assert [f.category for f in d.findings][:1] == ["kl_explosion"], d.findings
    assert d.findings[0].evidence[0].kind == "metric"


@pytest.mark.parametrize("text", ["KL was 0.02 at step 300, entropy 0.6 at step 300\n",
                                  "the kl went from 0.01 to 0.03 over training\n"])
def test_a_narrated_healthy_kl_does_not_fire(text: str) -> None:
    assert "kl_explosion" not in [f.category for f in diagnose_text(text).findings]


# ----------------------------------------------------------------------------- formats and edge cases


def test_openrlhf_and_nemo_lines() -> None:
    text = ("INFO 05-01 10:00:00 ppo_trainer.py:500] ✨ Global step 3: {'policy_loss': 0.12, 'kl': 0.003, "
            "'reward': 0.5, 'response_length': 300.0, 'truncated': 0.02, 'actor_grad_norm': 0.8}\n")
    (p,) = parse_text(text)
    assert detect_format(text) == "openrlhf_console"
    assert p.step == 3 and p.values["kl"] == pytest.approx(0.003) and p.values["response_clip_ratio"] == 0.02
    nemo = ("========================= Step 2/10 =========================\n"
            "📊 Training Results:\n  • Loss: 0.0123\n  • Avg Reward: 0.4500\n"
            "  • Mean Generation Length: 350.2000\n\n⏱️  Timing:\n  • Total step time: 45.23s\n"
            "  • generation: 20.1s (44.4%)\n"
            "========================= Step 3/10 =========================\n  • Loss: 0.01\n")
    assert detect_format(nemo) == "nemo_rl_console"
    pts = parse_text(nemo)
    assert [p.step for p in pts] == [2, 3]
    assert pts[0].values["reward_mean"] == 0.45 and pts[0].values["timing_step_s"] == 45.23
    assert pts[0].values["timing_gen_s"] == 20.1 and pts[0].total_steps == 10


def test_numpy_and_bool_values() -> None:
    assert parse_number("np.float64(0.5)") == 0.5
    assert parse_number("np.float32(-1e-3)") == -1e-3
    assert parse_number("np.int64(7)") == 7.0
    assert parse_number("True") == 1.0 and parse_number("False") == 0.0
    assert math.isnan(parse_number("nan"))
    assert parse_number("'0.25'") == 0.25
    assert parse_number("abc") is None


def test_partial_last_line_and_finish() -> None:
    reader = make_reader("verl_console")
    out = reader.feed("step:1 - actor/grad_norm:0.5 - critic/score/mean:0.1\nstep:2 - actor/grad")
    assert [p.step for p in out] == [1]
    assert reader.feed("_norm:0.6 - critic/score/mean:0.2") == []
    out = reader.finish()
    assert [(p.step, p.values["grad_norm"]) for p in out] == [(2, 0.6)]


def test_garbage_and_binary_input_is_ignored() -> None:
    rng = random.Random(0)
    garbage = "".join(chr(rng.randrange(0, 0x3000)) for _ in range(20000))
    text = garbage + "\nstep:5 - actor/grad_norm:1.5\n" + "\x00\xff\ufffd" * 100 + "\n"
    points = parse_text(text)
    assert [(p.step, p.values["grad_norm"]) for p in points] == [(5, 1.5)]


def test_buffer_is_bounded_without_newlines() -> None:
    reader = LogReader()
    for _ in range(12):
        reader.feed("x" * (1 << 20))
    assert len(reader._buf) <= (4 << 20)


_LINES = [
    "step:{s} - actor/entropy:np.float64({v}) - critic/score/mean:{v} - actor/grad_norm:1.0",
    "{{'loss': '{v}', 'grad_norm': '0.5', 'reward': '{v}', 'epoch': '0.1'}}",
    '{{"step": {s}, "data": {{"actor/kl_loss": {v}, "critic/score/mean": 0.5}}}}',
    '{{"step": {s}, "reward": {v}, "kl": 0.01}}',
    "Traceback (most recent call last): something {v}",
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_LINES) - 1), st.floats(-1e3, 1e3, allow_nan=False)),
                min_size=1, max_size=30),
       st.lists(st.integers(1, 400), min_size=1, max_size=20))
def test_chunking_does_not_change_the_result(lines: list, cuts: list) -> None:
    text = "\n".join(_LINES[i].format(s=n, v=round(v, 6)) for n, (i, v) in enumerate(lines)) + "\n"
    whole = parse_text(text)
    reader = make_reader(detect_format(text))
    got, pos = [], 0
    for cut in cuts:
        got.extend(reader.feed(text[pos:pos + cut]))
        pos += cut
    got.extend(reader.feed(text[pos:]))
    got.extend(reader.finish())
    assert [(p.step, p.raw) for p in got] == [(p.step, p.raw) for p in whole]


def test_tensorboard_event_files(tmp_path: Path) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path))
    for step in range(1, 6):
        values = [Summary.Value(tag="train/reward", simple_value=0.1 * step),
                  Summary.Value(tag="train/completions/clipped_ratio", simple_value=0.5)]
        writer.add_event(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))
    writer.close()
    points = list(read_points(tmp_path))
    assert [p.step for p in points] == [1, 2, 3, 4, 5]
    assert points[2].values["reward_mean"] == pytest.approx(0.3)
    assert points[2].keys["response_clip_ratio"] == "train/completions/clipped_ratio"


def test_series_store_is_bounded_and_keeps_spikes() -> None:
    store = SeriesStore(capacity=64)
    from advisor.metrics import make_point

    for step in range(10000):
        value = 1000.0 if step == 7777 else 1.0
        store.add(make_point({"actor/grad_norm": value}, step=step, line=step, source="t"))
    store.add(make_point({"actor/grad_norm": float("nan")}, step=10000, line=1, source="t"))
    series = store.get("grad_norm")
    steps, means, maxs, _ = series.buckets()
    assert len(means) <= 64
    assert max(maxs) == 1000.0
    assert series.nonfinite == 1 and series.first_nonfinite_step == 10000
    assert series.first_value == 1.0 and series.count == 10001


def test_tqdm_postfix_points() -> None:
    """OpenRLHF's DPO/RM/SFT trainers log only a tqdm postfix."""
    bar = ("Train epoch:  10%|#         | {n}/1000 [01:00<09:00,  1.66it/s, loss={loss}, acc=0.5, "
           "chosen_reward=0.1, reject_reward=-0.1, lr=5e-07]")
    text = "\r".join(bar.format(n=n, loss=0.69 - n / 1000) for n in (100, 101, 102)) + "\n"
    points = parse_text(text)
    assert [p.step for p in points] == [100, 101, 102]
    assert points[0].values["loss"] == pytest.approx(0.59) and points[0].values["dpo_reward_rejected"] == -0.1
    assert all(p.total_steps == 1000 and p.source == "tqdm_postfix" for p in points)
    plain = "  5%|5         | 50/1000 [00:10<03:10,  5.00it/s]\n"
    assert parse_text(plain) == []


def test_multiline_records_stay_bounded() -> None:
    reader = LogReader()
    reader.feed("step:1 - actor/grad_norm:0.5 - critic/score/me\n")
    for _ in range(200):
        reader.feed("an:0.1 - " * 5000 + "\n")  # endless 'continuations' of a wrapped step line
        assert len(reader._pending or "") <= (4 << 20) + 50_000
    block = "".join(f" - k{i}/x:{i}\n" for i in range(25_000))
    points = reader.feed(block) + reader.finish()
    assert len(reader._block) == 0 and all(len(p.raw) <= 10_000 for p in points)


def test_record_after_a_bar_or_a_bracketed_prefix() -> None:
    """A Python-dict or JSON record printed right after a tqdm bar (or a ``[...]`` prefix) is a record;
    the dict takes the bar's step, the JSON its own."""
    text = (" 12%|#2        | 12/100 [00:30<03:40,  2.50s/it]{'loss': 0.25, 'epoch': 0.12}\n"
            "[2026-12-01 10:00:00] {\"step\": 13, \"loss\": 0.24}\n"
            " 14%|#4        | 14/100 [00:35<03:35,  2.50s/it] [not a record] {x}\n")
    points = parse_text(text)
    assert [(p.step, p.values["loss"]) for p in points] == [(12, 0.25), (13, 0.24)]
    assert points[0].source == "trl_console" and points[0].total_steps == 100


def test_vertical_record_is_read_and_a_tqdm_echo_takes_its_step() -> None:
    """A dash-less vertical record (one namespaced key per line) is a record of its own when the log has no step
    counter; printed under a tqdm bar it is held at the bar's step and superseded by the step's own dict record, or
    emitted at that step when none follows (it took the next ordinal before: steps 1, 2, 10, 4, ...)."""
    alone = parse_text("timing_s/step:   43.64\ntiming_s/gen:    31.27   (72%)\n")
    assert len(alone) == 1 and alone[0].raw["timing_s/gen"] == 31.27
    bar = " 23%|##3       | 10/43 [14:12<44:45, 81.39s/it]\n"
    echo = "   rewards/acc/mean: 0.5750\n   completions/mean_length: 142.7\n"
    record = "{'loss': -0.04, 'entropy': 1.02, 'reward': 1.8}\n"
    superseded = parse_text(bar + echo + record)
    assert [(p.step, "entropy" in p.values) for p in superseded] == [(10, True)]
    kept = parse_text(bar + echo + bar.replace("10/43", "11/43") + record)
    assert [p.step for p in kept] == [10, 11] and "entropy" not in kept[0].values


def test_names_written_without_the_role_prefix() -> None:
    """Round 35: veRL's names written without their role prefix ("score/mean", "pg_clipfrac", "vf_loss") are the
    prefixed keys' metrics; an exact key keeps its own metric (bare grad_norm is the policy's, not the critic's),
    TRL's older completion_length is the response length, and plain held-out names are evaluation scores."""
    from advisor.metrics.vocabulary import normalize_key

    assert normalize_key("score/mean").name == "reward_mean"
    assert normalize_key("pg_clipfrac").name == "pg_clip_frac"
    assert normalize_key("vf_loss").name == "critic_value_loss"
    assert normalize_key("grad_norm").name == "grad_norm"
    assert normalize_key("completion_length").name == "response_length_mean"
    assert normalize_key("val_acc").name == "eval_reward:val_acc"
    assert normalize_key("score/median") is None



def test_step_and_generation_times_told_in_one_sentence() -> None:
    """Round 36: a step time and a generation time in one sentence are veRL's timing_s/step and timing_s/gen in seconds;
    one duration read twice ("generation takes 30s per step") or a generation longer than the step is not."""
    got = [p.values for p in parse_text("it takes about 7 min per step, and generating the completions is 4 min\n")
           if p.values]
    assert got == [{"timing_step_s": 420.0, "timing_gen_s": 240.0}]
    for text in ("generation takes 30s per step\n", "each step takes 2 min and the rollout takes 5 min\n"):
        assert [p.values for p in parse_text(text) if p.values] == [], text


def test_llamafactory_trainer_log_records() -> None:
    """Round 36: LLaMA-Factory's trainer_log.jsonl (LogCallback.on_log) gives its step as current_steps and the
    Trainer's rewards/accuracies as "accuracy"."""
    line = ('{"current_steps": 5, "total_steps": 275, "loss": 0.0, "accuracy": 1.0, "lr": 3.6e-06, "epoch": 0.09, '
            '"percentage": 1.82, "elapsed_time": "0:00:47"}\n')
    got = [(p.step, p.values) for p in parse_text(line) if p.values]
    assert got == [(5, {"loss": 0.0, "dpo_accuracy": 1.0, "lr": 3.6e-06, "epoch": 0.09})]


def test_a_typed_table_row_without_a_step_is_no_record() -> None:
    """Round 36: under a header with a step column, a row whose step cell is a word is no step of that table."""
    text = "| step | entropy |\n|---|---|\n| 1 | 0.29 |\n| raw_grad_norm | ~3.6e-5 |\n"
    assert [(p.step, p.values) for p in parse_text(text) if p.values] == [(1, {"entropy": 0.29})]

def test_dpo_saturation_from_loss_and_accuracy_alone() -> None:
    """Round 36: a DPO log of loss and accuracy only (no margins) is saturated when the loss is below the rule's
    loss_below with accuracy 1.0 on two logs (the sigmoid loss that low needs every pair's scaled margin above ~3);
    a loss that is not that low is not."""
    rec = ('{{"current_steps": {s}, "total_steps": 275, "loss": {l}, "accuracy": 1.0, "lr": 3e-06, "epoch": 0.1, '
           '"percentage": 2.0}}\n')
    sat = rec.format(s=5, l=0.0) + rec.format(s=10, l=0.0)
    assert [f.category for f in diagnose_text(sat).findings][:1] == ["dpo_overoptimization_high_lr"]
    fine = rec.format(s=5, l=0.45) + rec.format(s=10, l=0.41)
    assert "dpo_overoptimization_high_lr" not in [f.category for f in diagnose_text(fine).findings]
