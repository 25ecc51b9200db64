"""Published time rows are read with each row's own setting, every row is scored or listed with
its reason, and every efficiency factor stays inside its published range."""

from __future__ import annotations

import pytest

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
    assert _row_mode("split sync") == "split" and _row_mode("split_async") == "one_step_off"


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


def test_a_case_without_use_for_is_read_not_dropped() -> None:
    """A hidden file written without ``use_for`` still has every row scored or listed; a case
    that names only other uses (a memory check) is not a time case."""
    doc = {"cases": [{"id": "bare", "model": "Qwen2.5-7B", "hardware": {"gpu": "H100", "count": 8},
                      "outcome": {"rows": [{"mode": "colocated", "gpus": 8, "step_s": 100.0}, {"odd": 1}]}},
                     {"id": "memory-only", "use_for": ["budget_memory"], "outcome": {"rows": [{"odd": 1}]}}]}
    cases = time_cases(doc)
    assert [c.case for c in cases] == ["bare", "bare"]
    assert cases[0].scored and cases[0].plan is not None and not cases[1].scored
    # a value the row cannot take ("100 s" for a number) is one readable line naming the field
    bad = time_cases({"cases": [{**doc["cases"][0], "outcome": {"rows": [{"mode": "colocated", "gpus": 8,
                                                                           "step_s": "100 s"}]}}]})
    assert not bad[0].scored and "\n" not in bad[0].skip_reason and "published" in bad[0].skip_reason


def test_every_factor_has_a_published_range_and_stays_inside_it() -> None:
    table = load_table()["factors"]
    ranges = factor_ranges()
    for name, row in table.items():
        assert name in ranges and row.get("range_source"), name
        lo, hi = ranges[name]
        assert lo <= default_factors()[name] <= hi, (name, default_factors()[name], ranges[name])


def _extra_models() -> dict:
    from pathlib import Path

    import yaml

    path = Path(__file__).resolve().parent / "cases" / "placement" / "models.yaml"
    return yaml.safe_load(path.read_text())["models"]


def test_dschat_rows_take_the_largest_batch_the_memory_model_fits() -> None:
    """DeepSpeed-Chat benchmarks "the largest training batch that does not OOM" (at most 1024
    pairs), and that per-device batch also generates: the adapter derives it from budget_memory,
    so a bigger GPU gets a bigger batch and fewer steps per epoch; a layout the memory model says
    cannot run at all is listed with the reason instead of scored on a made-up batch."""
    doc = {"cases": [{"id": "dschat", "use_for": ["time_model"],
                      "settings": {"prompt_tokens": 256, "generated_tokens": 256, "queries": 131900},
                      "outcome": {"rows": [{"gpus": "1x A100 40G", "OPT-1.3B": "15.4 hrs"},
                                           {"gpus": "1x A100 80G", "OPT-1.3B": "11.7 hrs"},
                                           {"gpus": "64x A100 80G", "OPT-1.3B": "31 minutes"},
                                           {"gpus": "8x A100 80G", "OPT-66B": "2.1 days"}]}}]}
    cases = time_cases(doc, _extra_models())
    small, big, many, huge = cases
    per_gpu = lambda c: c.plan.data.micro_batch_size_per_gpu  # noqa: E731
    assert 1 <= per_gpu(small) < per_gpu(big)
    assert per_gpu(many) == 1024 // 64  # the global cap, not memory, binds at 64 GPUs
    for c in (small, big, many):
        assert c.plan.rollout.max_num_seqs == per_gpu(c)
        assert c.scale == 131900 / (per_gpu(c) * c.plan.hardware.total_gpus)
    assert not huge.scored and "budget_memory" in huge.skip_reason


def test_nemo_rows_read_the_recipe_settings() -> None:
    """Generations per prompt and activation checkpointing come from each model's recipe."""
    rows = [{"model": "DeepSeek-V3", "policy": True, "t_max_seq": 1536, "g_avg_seq": 745, "gpus": 256, "g_gbs": 512,
             "t_gbs": 512, "gen_tp_pp": "[32,1]", "train_tp_cp_ep_pp": "[1,1,16,16]", "tok_s_gpu": 11, "step_s": 154},
            {"model": "Qwen3-32B", "policy": True, "t_max_seq": 4096, "g_avg_seq": 3206, "gpus": 32, "g_gbs": 2048,
             "t_gbs": 512, "gen_tp_pp": "[4,1]", "train_tp_cp_ep_pp": "[4,1,1,4]", "tok_s_gpu": 540, "step_s": 393}]
    doc = {"cases": [{"id": "nemo", "use_for": ["time_model"], "hardware": {"gpu": "H100 (DGX-H100)"},
                      "outcome": {"rows": rows}}]}
    dsv3, q32 = time_cases(doc)
    assert dsv3.plan.algorithm.group_size == 16 and dsv3.plan.data.train_batch_size == 32
    assert dsv3.plan.memory.recompute == "full" and q32.plan.memory.recompute == "none"
    assert dsv3.plan.policy.parallel.ep == 16
    # the response may use the whole sequence budget left after the prompt
    assert q32.plan.data.max_prompt_length + q32.plan.data.max_response_length == 4096


def test_nemo_rows_read_their_own_system_and_recipe_overrides() -> None:
    """One source may publish tables of two systems: a row's ``system`` and ``gpus_per_node`` make
    its own hardware, a recipe's gpu_memory_utilization and generation GPUs are used and named in
    ``inferred``, and an algorithm the time model has no phases for is listed, not scored."""
    base = {"t_max_seq": 4096, "g_avg_seq": 3200, "g_gbs": 2048, "t_gbs": 512, "gen_tp_pp": "[1,1]",
            "train_tp_cp_ep_pp": "[1,1,16,1]", "tok_s_gpu": 1900, "step_s": 221}
    rows = [{**base, "model": "Qwen3-30B-A3B", "policy": True, "gpus": 16, "system": "GB200 (GB200-NVL72)",
             "gpus_per_node": 4, "gpu_memory_utilization": 0.4, "from_recipe": ["gpus_per_node", "gpu_memory_utilization"]},
            {**base, "model": "Qwen3-30B-A3B", "policy": "8-step-off", "gpus": 192, "train_tp_cp_ep_pp": "[1,1,8,1]",
             "generation_gpus": 64, "from_recipe": ["generation_gpus"], "tok_s_gpu": 1025, "step_s": 34.5},
            {**base, "model": "Qwen3-30B-A3B", "policy": "1-step-off", "gpus": 128, "algorithm": "SWE"}]
    doc = {"cases": [{"id": "nemo", "use_for": ["time_model"], "hardware": {"gpu": "H100 (DGX-H100)"},
                      "outcome": {"rows": rows}}]}
    gb200, off8, swe = time_cases(doc)
    assert gb200.plan.hardware.gpu == "GB200" and gb200.plan.hardware.gpus_per_node == 4
    assert gb200.plan.hardware.nodes == 4 and gb200.plan.memory.rollout_memory_fraction == 0.4
    assert any("gpu_memory_utilization from the row's performance recipe" in i for i in gb200.inferred)
    assert off8.plan.hardware.gpu == "H100" and off8.plan.placement.mode == "fully_async"
    assert sorted(p.gpus for p in pools_of(off8.plan)) == [64, 128]
    assert not swe.scored and "SWE" in swe.skip_reason


def test_verl_mode_rows_read_the_script_block_and_list_what_the_model_cannot_express() -> None:
    """A case (or row) names the script its rows ran: its layout, rollout TP, memory fraction,
    batching and KL replace the one-step-off recipe's; repeated, empty and not-modelled rows are
    listed with their reason."""
    script = {"path": "run_30b.sh", "tp": 2, "pp": 1, "cp": 2, "ep": 8, "rollout_tp": 4, "gpu_memory_utilization": 0.7,
              "dynamic_tokens": 1, "recompute": "none", "offload": True, "kl": True, "max_prompt_length": 2048}
    doc = {"cases": [{"id": "verl_async", "use_for": ["time_model"], "hardware": {"gpu": "H20"},
                      "settings": {"rollout_n": 16, "train_batch_size": 512, "max_response_length": 28672,
                                   "engine": "vLLM+FSDP2", "script": {"path": "run_7b.sh", "rollout_tp": 4, "sp": 4,
                                                                       "fsdp_size": 8, "max_prompt_length": 2048}},
                      "outcome": {"rows": [
                          {"mode": "fully_async_policy", "gpus": 32, "split": "16:16", "step_s": 295},
                          {"mode": "colocate sync", "gpus": 128, "model": "Qwen3-30B-A3B-Base", "method": "GRPO",
                           "engine": "vLLM+Megatron", "max_response_length": 8192, "ppo_mini_batch_size": 128,
                           "step_s": 498, "ref_s": 20.9, "script": script},
                          {"mode": "colocate sync", "gpus": 128, "step_s": 356.3, "repeats": "row 5"},
                          {"mode": "fully_async staleness 0.1", "gpus": 128, "step_s": 171.3,
                           "not_modelled": "staleness_threshold 0.1"}]}}]}
    cases = time_cases(doc)
    fsdp = cases[0]
    assert fsdp.plan.placement.mode == "fully_async" and sorted(p.gpus for p in pools_of(fsdp.plan)) == [16, 16]
    assert fsdp.plan.rollout.tp == 4 and fsdp.plan.policy.parallel.sp == 4 and fsdp.plan.policy.parallel.fsdp_size == 8
    assert fsdp.plan.data.max_response_length == 28672 and fsdp.plan.algorithm.group_size == 16
    assert any("run_7b.sh" in i for i in fsdp.inferred)
    mega = next(c for c in cases if c.metric == "step_s" and "Megatron" in c.row)
    par = mega.plan.policy.parallel
    assert (par.tp, par.pp, par.cp, par.ep) == (2, 1, 2, 8) and mega.plan.rollout.tp == 4
    assert mega.plan.method.value == "grpo" and mega.plan.algorithm.kl_coef > 0 and mega.plan.data.mini_batch_size == 128
    assert mega.plan.memory.rollout_memory_fraction == 0.7 and mega.plan.memory.param_offload
    assert mega.plan.data.max_token_len_per_gpu == 2048 + 8192
    assert any(c.metric == "phase:reference_forward" for c in cases)
    listed = [c for c in cases if not c.scored]
    assert [c.skip_reason.split(":")[0] for c in listed] == ["repeats row 5", "setting not modelled"]


def test_rows_a_source_does_not_state_enough_for_are_listed_with_the_reason() -> None:
    doc = {"cases": [{"id": "blog", "use_for": ["time_model"], "hardware": {"gpu": "unspecified"},
                      "outcome": {"rows": [{"model": "1.5B", "training_hours": 41.0,
                                            "not_read": "batch and lengths not stated"}]}}]}
    (c,) = time_cases(doc)
    assert not c.scored and c.skip_reason == "not read: batch and lengths not stated"


def test_table_cache_follows_the_file_and_decode_memo_matches_the_formula(tmp_path, monkeypatch) -> None:
    """The fit makes thousands of predictions, so the factor table is parsed once per text and the
    decode phase is memoised: a changed file is read again, and the memo returns exactly what the
    formula computes (a fit must not depend on which predictions ran before)."""
    from advisor.placement import timemodel as tm

    original = tm.DATA
    copy = tmp_path / "time_model.yaml"
    copy.write_text(original.read_text())
    monkeypatch.setattr(tm, "DATA", copy)
    before = default_factors()["step_overhead_s"]
    copy.write_text(copy.read_text().replace(f"  step_overhead_s:\n    value: {before:g}",
                                             "  step_overhead_s:\n    value: 7.25"))
    assert default_factors()["step_overhead_s"] == 7.25
    load_table()["factors"].clear()  # a caller's copy, not the cache
    assert default_factors()["step_overhead_s"] == 7.25

    monkeypatch.setattr(tm, "DATA", original)
    from advisor.plan import Plan

    plan = Plan.model_validate({"name": "memo", "method": "grpo", "framework": "verl",
                                "hardware": {"gpu": "H100", "gpus_per_node": 8, "nodes": 1},
                                "policy": {"model": "Qwen2.5-7B"},
                                "data": {"train_batch_size": 64, "max_prompt_length": 512,
                                         "max_response_length": 2048}})
    tm._DECODE_CACHE.clear()
    first = tm.predict_step(plan)
    again = tm.predict_step(plan)  # served by the memo
    assert first == again
    f = default_factors()
    slower = tm.predict_step(plan, {**f, "decode_hbm_efficiency": f["decode_hbm_efficiency"] * 1.5})
    decode = lambda st: next(p.seconds for p in st.phases if p.phase == "rollout_decode")  # noqa: E731
    assert decode(slower) < decode(first)
    key, value = next(iter(tm._DECODE_CACHE.items()))
    arch, dev, engines, tp, seqs, prompt, mean, max_len, sigma, clip, mns, kv_pool, kv_tok, eb, ec, st, sm, ov = key
    assert tm._decode_uncached(arch, dev, engines=engines, tp=tp, seqs=seqs, prompt=prompt,
                               dist=tm.LengthDist(mean, max_len, sigma, clip), max_num_seqs=mns, kv_pool=kv_pool,
                               kv_tok=kv_tok, eta_bw=eb, eta_c=ec, static_batch=st, streaming=sm,
                               step_overhead_s=ov) == value


def test_verl_rows_read_the_settings_of_their_own_recipe_script() -> None:
    """Each veRL one-step-off row takes the keys its recipe script sets (cases._VERL_OSO_SCRIPTS):
    the colocated Megatron run generates n=16 per prompt, the 4/12 runs n=12, so both Megatron runs
    train the same 512 sequences per GPU (the published 344 s vs 347 s update); Megatron runs TP2 PP2
    without recompute; the colocated runs offload the actor."""
    from advisor.placement.timemodel import predict_step

    cases = time_cases(_doc([
        {"mode": "colocate_sync", "engine": "vLLM+Megatron", "step_s": 699},
        {"mode": "one_step_overlap_async", "engine": "vLLM+Megatron", "step_s": 566},
        {"mode": "colocate_sync", "engine": "vLLM+FSDP2", "step_s": 749},
    ]))
    sync, asyn, fsdp = (next(c for c in cases if c.row.startswith(p) and c.metric == "step_s")
                        for p in ("colocate_sync vLLM+Megatron", "one_step_overlap_async vLLM+Megatron",
                                  "colocate_sync vLLM+FSDP2"))
    assert (sync.plan.algorithm.group_size, asyn.plan.algorithm.group_size, fsdp.plan.algorithm.group_size) == (16, 12, 12)
    for c in (sync, asyn):
        par = c.plan.policy.parallel
        assert (par.tp, par.pp, c.plan.memory.recompute, c.plan.data.use_dynamic_bsz) == (2, 2, "none", False)
    assert fsdp.plan.memory.recompute == "full" and fsdp.plan.data.use_dynamic_bsz
    assert sync.plan.memory.param_offload and fsdp.plan.memory.optimizer_offload and not asyn.plan.memory.param_offload
    per_gpu = lambda c: c.plan.data.train_batch_size * c.plan.algorithm.group_size / next(  # noqa: E731
        p.gpus for p in pools_of(c.plan) if "policy" in p.roles)
    assert per_gpu(sync) == per_gpu(asyn) == 512
    upd = [next(p.seconds for p in predict_step(c.plan).phases if p.phase == "actor_update") for c in (sync, asyn)]
    assert upd[0] == pytest.approx(upd[1], rel=0.02)


def test_openrlhf_rows_model_the_code_of_their_source_time() -> None:
    """A table measured in May 2024 (arXiv 2405.x) ran OpenRLHF code that sent each actor rank's prompts
    to engine rank % num_engines (extra engines idle) with vLLM's default memory fraction; the same
    rows dated after the changes run on every engine with the adapter's fraction."""
    def rows(source: dict) -> dict:
        doc = {"cases": [{"id": "orlhf", "use_for": ["time_model"], "source": source, "hardware": {"gpu": "A800"},
                          "outcome": {"rows": [{"model_size": "7B", "gpus": 16, "dschat_s": 855.0,
                                                "openrlhf_s": 471.0}]}}]}
        return {c.row: c for c in time_cases(doc)}

    old = rows({"paper": "OpenRLHF arXiv 2405.11143 (v1)"})["OpenRLHF 7B 16 GPUs"]
    assert old.plan.rollout.engines == 4  # 4 actor ranks, 8 TP1 engines in the rollout pool
    assert old.plan.memory.rollout_memory_fraction == 0.9
    assert any("rank % num_engines" in i for i in old.inferred)
    new = rows({"date": "2025-06-10"})["OpenRLHF 7B 16 GPUs"]
    assert new.plan.rollout.engines is None and new.plan.memory.rollout_memory_fraction == 0.5
    undated = rows({})["OpenRLHF 7B 16 GPUs"]
    assert undated.plan.rollout.engines is None


def test_easyr1_and_skyrl_rows_are_read_with_each_rows_model_gpu_and_batching() -> None:
    """EasyR1's baselines mix GPU types, models, micro-batches and rollout TP in one table: each
    row is read with its own (the row's ``gpu``, ``model``, ``rollout_tp``, ``script``), the VLMs
    carry their vision tower, and rows the model cannot express are listed with the reason."""
    from pathlib import Path

    import yaml

    path = Path(__file__).resolve().parent / "cases" / "placement" / "published-extra.yaml"
    doc = yaml.safe_load(path.read_text())
    keep = {"easyr1_baselines_geo3k", "easyr1_baselines_geo3k_v0.3.0", "skyrl_spec_decode_qwen3.5-9b_8xh100"}
    doc["cases"] = [c for c in doc["cases"] if c["id"] in keep]
    cases = time_cases(doc, _extra_models())
    by_case: dict[str, list] = {}
    for c in cases:
        by_case.setdefault(c.case, []).append(c)
    assert [len(by_case[k]) for k in sorted(keep)] == [8, 6, 2]
    assert [sum(c.scored for c in by_case[k]) for k in sorted(keep)] == [7, 5, 0]
    rows = {c.row: c for c in by_case["easyr1_baselines_geo3k"]}
    moe = rows["Qwen3-VL-30B-A3B-Thinking H800 BF16 1/2"].plan
    assert moe.hardware.gpu == "H800" and moe.hardware.total_gpus == 8 and moe.rollout.tp == 8
    assert moe.policy.spec.num_experts == 128 and moe.policy.spec.vision_params > 0
    assert moe.data.mean_prompt_length == 326 and moe.data.mean_response_length == 1299
    big = rows["Qwen2.5-VL-7B H100 AMP 4/8"].plan
    assert big.hardware.gpu == "H100" and big.data.use_dynamic_bsz and big.data.max_token_len_per_gpu == 4 * 4096
    assert (big.data.train_batch_size, big.algorithm.group_size, big.data.mini_batch_size) == (512, 5, 128)
    assert big.memory.param_offload and big.algorithm.kl_coef == 0.01 and big.placement.mode == "colocated"
    assert "L20" in rows["Qwen2.5-VL-7B L20 AMP 1/2"].skip_reason
    old = {c.row: c for c in by_case["easyr1_baselines_geo3k_v0.3.0"]}["Qwen2.5-VL-7B H100 AMP 10/20"].plan
    assert not old.data.use_dynamic_bsz and old.data.micro_batch_size_per_gpu == 10
    assert all("not modelled" in c.skip_reason for c in by_case["skyrl_spec_decode_qwen3.5-9b_8xh100"])


def test_a_rows_published_actor_mfu_sets_its_update_and_nothing_else() -> None:
    """A row that publishes its actor MFU (veRL's perf/mfu/actor: 6N FLOPs over the update time) is
    read as that row's own setting: the actor update runs at it, whatever the fitted train_mfu, and
    every other phase is the model's."""
    from advisor.placement.timemodel import predict_step

    row = {"mode": "colocated sync", "model": "Qwen2.5-7B", "gpus": 8, "step_s": 100.0, "actor_mfu": 0.2}
    doc = {"cases": [{"id": "mfu", "use_for": ["time_model"], "hardware": {"gpu": "H100", "count": 8},
                      "outcome": {"rows": [row, {**row, "actor_mfu": None}]}}]}
    with_mfu, without = time_cases(doc)
    assert with_mfu.actor_mfu == 0.2 and without.actor_mfu is None
    assert any("actor MFU 0.2" in note for note in with_mfu.inferred)

    def phases(mfu: float | None, train_mfu: float) -> dict[str, float]:
        f = {**default_factors(), "train_mfu": train_mfu, **({"observed_actor_mfu": mfu} if mfu else {})}
        return {p.phase: p.seconds for p in predict_step(with_mfu.plan, f).phases}

    a, b, c = phases(0.2, 0.5), phases(0.1, 0.5), phases(0.2, 0.25)
    assert b["actor_update"] == pytest.approx(2 * a["actor_update"], rel=1e-3)
    assert c["actor_update"] == pytest.approx(a["actor_update"], rel=1e-3)
    assert {k: v for k, v in a.items() if k != "actor_update"} == {k: v for k, v in c.items() if k != "actor_update"}
    assert phases(None, 0.25)["actor_update"] != pytest.approx(phases(None, 0.5)["actor_update"], rel=1e-3)


def test_rows_of_a_shape_no_adapter_knows_are_read_by_the_generic_adapter() -> None:
    """A hidden source written as case-level settings (under the names the frameworks use) and rows
    of GPU counts and step times is scored with each row's own setting; a model or GPU type the
    catalog lacks, or a row without a GPU count, is listed with that reason."""
    doc = {"cases": [
        {"id": "generic", "model": "Qwen2.5-7B-Instruct", "framework": "veRL (FSDP + vLLM)", "method": "GRPO",
         "hardware": {"gpu": "H100 SXM"},
         "settings": {"train_prompt_bsz": 128, "n_resp_per_prompt": 16, "max_response_length": "8K",
                      "ppo_mini_batch_size": 32, "rollout_tp": 2, "gpu_memory_utilization": 0.7},
         "outcome": {"status": "measured", "rows": [
             {"gpus": 8, "step_s": 300},
             {"gpus": 16, "step_time_s": "~170 s", "mean_response_length": 3000},
             {"gpus": 16, "mode": "one-step-off", "split": "4:12", "step_s": 150},
             {"gpus": 8, "model": "Mystery-9B", "step_s": 100},
             {"step_s": 90}]}},
        {"id": "generic_trl", "model": "Qwen2.5-1.5B-Instruct", "framework": "TRL GRPOTrainer",
         "hardware": {"gpu": "A100-80G", "count": 8}, "settings": {"num_generations": 8},
         "outcome": {"rows": [{"step_time_s": 30}]}},
        "a stray string"]}
    cases = time_cases(doc)
    scored = [c for c in cases if c.scored and c.plan is not None]
    listed = {c.row: c.skip_reason for c in cases if not c.scored}
    assert len(scored) == 4 and len(listed) == 3
    first, longer, async_row, trl = scored
    assert first.plan.hardware.total_gpus == 8 and first.plan.algorithm.group_size == 16
    assert first.plan.data.train_batch_size == 128 and first.plan.data.mini_batch_size == 32
    assert first.plan.data.max_response_length == 8192 and first.plan.rollout.tp == 2
    assert first.plan.memory.rollout_memory_fraction == 0.7 and first.plan.framework == "verl"
    assert longer.published == 170 and longer.plan.data.mean_response_length == 3000
    assert longer.plan.hardware.total_gpus == 16
    assert async_row.plan.placement.mode == "one_step_off"
    assert sorted(p.gpus for p in pools_of(async_row.plan)) == [4, 12]
    assert trl.plan.framework == "trl" and trl.plan.algorithm.group_size == 8
    assert any("max_response_length" in i for i in trl.inferred)  # what is not stated is listed
    reasons = " | ".join(listed.values())
    assert "'Mystery-9B' is not in the model catalog" in reasons
    assert "GPU count is not stated" in reasons and "not a case: a str" in reasons


def test_a_step_time_written_on_the_outcome_is_read_as_the_cases_one_row() -> None:
    """A source that publishes one setting's step time on the outcome itself, with no rows, is scored
    by the generic adapter when the case states its setting, and listed with the generic adapter's
    reason when it does not (a model the catalog lacks); an outcome with no step time keeps its reason."""
    base = {"framework": "TRL GRPOTrainer", "hardware": {"gpu": "A800", "count": 8},
            "settings": {"num_generations": 7, "max_completion_length": 1024}}
    doc = {"cases": [
        {**base, "id": "named", "model": "Qwen2.5-7B-Instruct", "outcome": {"status": "mixed", "step_time_s": "~420 (7 min)"}},
        {**base, "id": "unnamed", "model": "13B (unnamed)", "outcome": {"step_time_s": 420}},
        {**base, "id": "untimed", "model": "Qwen2.5-7B-Instruct", "outcome": {"status": "fits"}}]}
    named, unnamed, untimed = time_cases(doc)
    assert named.scored and named.published == 420 and named.row == "(outcome)"
    assert named.plan.hardware.total_gpus == 8 and named.plan.algorithm.group_size == 7
    assert named.plan.data.max_response_length == 1024 and named.plan.framework == "trl"
    assert not unnamed.scored and "'13B (unnamed)' is not in the model catalog" in unnamed.skip_reason
    assert unnamed.row == "(outcome)"
    assert not untimed.scored and "no published time" in untimed.skip_reason


@pytest.mark.parametrize(("key", "value", "seconds"), [
    ("step_s", 300, 300.0), ("step_time_s", "~420 (7 min)", 420.0), ("step_time", "7 min", 420.0),
    ("step_time", "1.5 h", 5400.0), ("step_s", "850 ms", 0.85), ("step_min", 7, 420.0), ("step_time", "3 mins", 180.0),
    ("time_per_step", "12 secs", 12.0)])
def test_a_step_time_is_read_in_the_unit_it_is_written_in(key: str, value: object, seconds: float) -> None:
    """A row's step time in minutes or hours (by its key or its text) is not read as seconds."""
    doc = {"cases": [{"id": "u", "model": "Qwen2.5-7B-Instruct", "framework": "veRL", "hardware": {"gpu": "H100", "count": 8},
                      "outcome": {"rows": [{key: value}]}}]}
    (case,) = time_cases(doc)
    assert case.scored and case.published == pytest.approx(seconds)


def test_a_gpu_count_written_as_nodes_is_read_with_the_nodes_gpus() -> None:
    """A source that counts nodes (row 'nodes', hardware.nodes) is read as nodes x GPUs per node: the
    stated per-node count, else the catalog card's usual server (8 for an HGX H100 board)."""
    doc = {"cases": [{"id": "n", "model": "Qwen2.5-7B-Instruct", "framework": "veRL", "hardware": {"gpu": "H100"},
                      "outcome": {"rows": [{"nodes": 4, "step_s": 100}, {"nodes": 2, "gpus_per_node": 4, "step_s": 100},
                                           {"step_s": 100}]}}]}
    four, two, none = time_cases(doc)
    assert (four.plan.hardware.nodes, four.plan.hardware.gpus_per_node) == (4, 8)
    assert (two.plan.hardware.nodes, two.plan.hardware.gpus_per_node) == (2, 4)
    assert not none.scored and "GPU count is not stated" in none.skip_reason


def test_a_throughput_row_is_read_as_a_step_time_when_its_setting_gives_the_tokens() -> None:
    """A row that publishes tokens/s/GPU (veRL's perf/throughput) and no step time is scored as the step
    that moves prompts x group x (mean prompt + mean response) tokens at that rate on its GPUs; a row
    whose setting lacks the mean lengths is listed naming them."""
    settings = {"train_batch_size": 256, "rollout_n": 8, "mean_prompt_length": 512, "max_response_length": 4096}
    doc = {"cases": [{"id": "t", "model": "Qwen2.5-7B-Instruct", "framework": "veRL", "settings": settings,
                      "hardware": {"gpu": "H100", "count": 16},
                      "outcome": {"rows": [{"perf/throughput": 1024, "mean_response_length": 1536},
                                           {"tokens_per_s_per_gpu": 2048}]}}]}
    read, unread = time_cases(doc)
    assert read.scored and read.published == pytest.approx(256 * 8 * (512 + 1536) / (1024 * 16))
    assert any("perf/throughput" in note for note in read.inferred)
    assert not unread.scored and "mean_response_length" in unread.skip_reason


def test_a_step_time_in_a_unit_that_is_not_a_time_is_listed_with_the_reason() -> None:
    doc = {"cases": [{"id": "u", "model": "Qwen2.5-7B-Instruct", "hardware": {"gpu": "H100", "count": 8},
                      "outcome": {"rows": [{"step_s": "7 GB"}]}}]}
    (case,) = time_cases(doc)
    assert not case.scored and "not a time" in case.skip_reason and "'7 GB'" in case.skip_reason


def test_a_document_that_is_not_a_cases_file_is_refused_with_the_field() -> None:
    from advisor.errors import AdvisorError

    for bad in ([], {"cases": "x"}, None):
        with pytest.raises(AdvisorError) as err:
            time_cases(bad)
        assert err.value.problems[0].field == "cases"


def test_a_split_sync_row_reads_its_pools_engine_concurrency_and_network() -> None:
    """A synchronous run on disjoint pools (AReaL v0.1/v0.2: the engines on one half of the GPUs, the
    trainer on the other, in lock-step) is read as the Plan's split placement with the row's own
    pools, the script's engine concurrency (max_num_seqs) and the network the source states; a row
    without these keys keeps the defaults (256 concurrent sequences, 400 Gb/s)."""
    script = {"path": "s.sh", "tp": 1, "pp": 2, "max_num_seqs": 128, "dynamic_tokens": 1, "recompute": "full",
              "offload": False}
    row = {"mode": "split sync", "model": "Qwen2.5-7B", "gpus": 32, "split": "16:16", "step_s": 100.0}
    doc = {"cases": [{"id": "split", "hardware": {"gpu": "H800", "inter_node_gbps": 3200},
                      "settings": {"engine": "vLLM+Megatron", "rollout_tp": 4, "script": script},
                      "outcome": {"rows": [row]}},
                     {"id": "plain", "hardware": {"gpu": "H100", "count": 8},
                      "outcome": {"rows": [{"mode": "colocated sync", "model": "Qwen2.5-7B", "gpus": 8,
                                            "step_s": 100.0}]}}]}
    split, plain = (c.plan for c in time_cases(doc))
    assert split.placement.mode == "split" and sorted(p.gpus for p in pools_of(split)) == [16, 16]
    assert split.rollout.max_num_seqs == 128 and split.rollout.tp == 4 and split.hardware.inter_node_gbps == 3200
    assert (split.policy.parallel.tp, split.policy.parallel.pp) == (1, 2) and split.memory.train_backend == "megatron"
    assert plain.placement.mode == "colocated"
    assert plain.rollout.max_num_seqs == 256 and plain.hardware.inter_node_gbps == 400


def test_areal_tutorial_rows_are_read_as_split_sync_runs_or_listed() -> None:
    """AReaL v0.1/v0.2's tutorial rows (synchronous, engines and trainer on disjoint halves) are read
    with the settings of the scripts they ran; rows without a published mean length are listed with
    the reason, not guessed."""
    from pathlib import Path

    import yaml

    path = Path(__file__).resolve().parent / "cases" / "placement" / "published-extra.yaml"
    doc = yaml.safe_load(path.read_text())
    keep = {"areal_v0.1_tutorial_h800", "areal_v0.2_tutorial_h800"}
    doc["cases"] = [c for c in doc["cases"] if c["id"] in keep]
    cases = time_cases(doc, _extra_models())
    scored = {c.row: c for c in cases if c.scored}
    assert sorted(scored) == ["AReaL v0.1 7B 16 nodes", "AReaL v0.1 7B 4 nodes"]
    assert sum(not c.scored for c in cases) == 9
    assert all("mean response length not published" in c.skip_reason for c in cases if not c.scored)
    big = scored["AReaL v0.1 7B 16 nodes"].plan
    assert big.placement.mode == "split" and sorted(p.gpus for p in pools_of(big)) == [64, 64]
    assert big.rollout.max_num_seqs == 128 and big.rollout.tp == 4 and big.hardware.inter_node_gbps == 3200
    assert (big.policy.parallel.tp, big.policy.parallel.pp) == (1, 2) and big.memory.train_backend == "megatron"
    assert (big.data.train_batch_size, big.algorithm.group_size, big.data.mini_batch_size) == (1024, 16, 256)
    assert big.data.mean_response_length == 7834 and big.algorithm.kl_coef == 0.01
    small = scored["AReaL v0.1 7B 4 nodes"].plan
    assert sorted(p.gpus for p in pools_of(small)) == [16, 16] and scored["AReaL v0.1 7B 4 nodes"].published == 7380


def test_miles_rocm_row_is_read_with_the_script_the_blog_pins() -> None:
    """The Miles ROCm blog's Qwen3-30B-A3B row runs on 8 MI300X with the settings of the script at the
    commit the blog pins: TP4/EP8 Megatron, one TP8 SGLang engine, colocated, no KL; its published
    phase times are scored beside the step."""
    from pathlib import Path

    import yaml

    path = Path(__file__).resolve().parent / "cases" / "placement" / "published-extra.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["cases"] = [c for c in doc["cases"] if c["id"] == "miles_rocm_qwen3-30b-a3b_8xmi300x"]
    cases = time_cases(doc, _extra_models())
    assert [c.metric for c in cases] == ["step_s", "phase:rollout_prefill,rollout_decode",
                                         "phase:old_logprob_forward", "phase:actor_update,offload_transfer"]
    plan = cases[0].plan
    assert plan.hardware.gpu == "MI300X" and plan.hardware.total_gpus == 8 and plan.placement.mode == "colocated"
    assert (plan.policy.parallel.tp, plan.policy.parallel.ep, plan.policy.parallel.etp) == (4, 8, 1)
    assert plan.rollout.tp == 8 and plan.algorithm.kl_coef == 0.0 and plan.algorithm.group_size == 8
    assert plan.data.max_token_len_per_gpu == 20480 and plan.data.mean_response_length == 5730
