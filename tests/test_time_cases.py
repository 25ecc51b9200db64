"""Published time rows are read with each row's own setting, every row is scored or listed with
its reason, and every efficiency factor stays inside its published range."""

from __future__ import annotations

from advisor.placement.cases import _row_mode, _row_split, time_cases
from advisor.placement.timemodel import default_factors, factor_ranges, load_table, pools_of


def test_row_split_and_mode_are_read_per_row() -> None:
    assert _row_split({"generation_gpus": 4, "training_gpus": 12}) == (4, 12)
    assert _row_split({"split": "8:24"}) == (8, 24)
    assert _row_split({"gen_gpus": 4, "gpus": 16}) == (4, 12)
    assert _row_split({"async_split": {"generation_gpus": 2, "training_gpus": 6}}) == (2, 6)
    assert _row_split({}, (1, 3)) == (1, 3)
    assert _row_mode("fully_async") == "fully_async" and _row_mode("stream") == "fully_async"
    assert _row_mode("one_step_overlap_async") == "one_step_off"
    assert _row_mode("colocate_sync") == "colocated"


def _doc(rows: list[dict]) -> dict:
    return {"cases": [{"id": "verl_modes", "use_for": ["time_model"], "model": "Qwen2.5-7B",
                       "hardware": {"gpu": "H20", "count": 16},
                       "settings": {"async_split": {"generation_gpus": 4, "training_gpus": 12}},
                       "outcome": {"rows": rows}},
                      {"id": "no_rows", "use_for": ["plan_placement"], "outcome": {"status": "config_only"}}]}


def test_rows_carry_their_own_gpus_split_and_mode() -> None:
    cases = time_cases(_doc([
        {"mode": "colocate_sync", "engine": "vLLM+FSDP2", "step_s": 700},
        {"mode": "fully_async", "engine": "vLLM+FSDP2", "gpus": 32, "split": "8:24", "step_s": 300},
        {"mode": "one_step_overlap_async", "engine": "vLLM+FSDP2", "step_s": 500},
    ]))
    by_row = {c.row: c for c in cases}
    full = next(c for c in cases if c.row.startswith("fully_async"))
    assert full.plan.placement.mode == "fully_async"
    assert sorted(p.gpus for p in pools_of(full.plan)) == [8, 24]
    osoff = next(c for c in cases if c.row.startswith("one_step") and c.metric == "step_s")
    assert osoff.plan.placement.mode == "one_step_off" and sorted(p.gpus for p in pools_of(osoff.plan)) == [4, 12]
    sync = next(c for c in cases if c.row.startswith("colocate") and c.metric == "step_s")
    assert sync.plan.placement.mode == "colocated" and sync.plan.hardware.total_gpus == 16
    listed = by_row["(case)"]
    assert not listed.scored and "config_only" in listed.skip_reason


def test_unreadable_rows_are_listed_one_by_one() -> None:
    doc = {"cases": [{"id": "ratios", "use_for": ["time_model"], "hardware": {"count": 8},
                      "outcome": {"rows": [{"model": "7B", "best_colocate_speedup": 1.3},
                                           {"model": "1.5B", "finding": "TP hurts"},
                                           {"odd": 1}]}}]}
    cases = time_cases(doc)
    assert len(cases) == 3 and not any(c.scored for c in cases)
    assert "speedup ratio" in cases[0].skip_reason and "GPU type is not stated" in cases[0].skip_reason
    assert "shape not understood" in cases[2].skip_reason


def test_every_factor_has_a_published_range_and_stays_inside_it() -> None:
    table = load_table()["factors"]
    ranges = factor_ranges()
    for name, row in table.items():
        assert name in ranges and row.get("range_source"), name
        lo, hi = ranges[name]
        assert lo <= default_factors()[name] <= hi, (name, default_factors()[name], ranges[name])
