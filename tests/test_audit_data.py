"""audit_data on small real-format fixtures (tests/fixtures/audit, written by make_fixtures.py).

Each framework and method family has a clean file (no error-level finding, the framework's own
loader accepts a sample) and a seeded file whose problems sit at known rows. Token lengths use the
tiny char-level tokenizer of rl_advisor.tinymodel (a real HF tokenizer with a chat template).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.data_audit import AuditContext, AuditSession
from advisor.errors import AdvisorError
from advisor.plan import Framework, Method, plan_from_yaml
from rl_advisor.audit_tool import audit_data
from rl_advisor.cli import main as cli_main

FIX = Path(__file__).resolve().parent / "fixtures" / "audit"


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rl_advisor.tinymodel import build_tokenizer

    out = tmp_path_factory.mktemp("tok")
    build_tokenizer(out)
    return out


def _audit(name: str, method: str, framework: str, tok: Path | None, **kw):
    return audit_data(str(FIX / name), method=Method(method), framework=Framework(framework),
                      model=str(tok) if tok else None, detail=True, **kw)


def _by_check(audit) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in audit.findings:
        out.setdefault(f.check, []).append(f)
    return out


def _plan(framework: str, method: str, tok: Path, **data) -> object:
    d = {"max_prompt_length": 128, "max_response_length": 256, **data}
    text = json.dumps({"method": method, "framework": framework,
                       "policy": {"model": "Qwen2.5-0.5B-Instruct", "path": str(tok)}, "data": d})
    return plan_from_yaml(text)


@pytest.mark.parametrize("name,method,framework", [
    ("verl_gsm8k_clean.jsonl", "grpo", "verl"),
    ("trl_pref_clean.jsonl", "dpo", "trl"),
    ("kto_clean.jsonl", "kto", "trl"),
    ("openrlhf_pref_clean.jsonl", "dpo", "openrlhf"),
    ("openrlhf_prompts_clean.jsonl", "grpo", "openrlhf"),
])
def test_clean_fixtures_have_no_error_and_the_consumer_accepts_them(name, method, framework, tok_dir):
    a = _audit(name, method, framework, tok_dir)
    assert a.rows_read > 0
    assert not a.errors, [(f.check, f.summary) for f in a.errors]
    assert a.status == "clean", [(f.check, f.severity, f.summary) for f in a.findings]
    assert any(n.startswith("consumer:") and n.endswith("accepted") for n in a.notes), a.notes
    assert a.tokens.startswith("tokenizer:")
    checks = {c.check: c.status for c in a.checks}
    assert checks["consumer_rejected"] == "passed"
    assert checks["exact_duplicate"] == "passed" and checks["near_duplicate"] == "passed"


def test_verl_seeded_problems_at_their_rows(tok_dir):
    plan = _plan("verl", "grpo", tok_dir, max_prompt_length=512)  # char tokens: ~230 per prompt
    a = audit_data(str(FIX / "verl_gsm8k_seeded.jsonl"), plan=plan, eval_path=str(FIX / "gsm8k_eval.jsonl"),
                   detail=True)
    f = _by_check(a)
    assert f["eval_contamination"][0].evidence.rows == [3, 9]
    assert f["eval_contamination"][0].severity == "error"  # 2 of 10 eval items
    cov = f["reward_coverage"][0]
    assert cov.severity == "error" and cov.evidence.count == 2 and "my_org/arith_v2" in cov.summary
    assert any(fx.key == "reward.custom_reward_function.path" for fx in cov.fixes)
    assert f["exact_duplicate"][0].evidence.rows == [12]
    over = f["prompt_over_limit"][0]
    assert over.evidence.rows == [15] and over.evidence.values["limit"] == 512
    assert {fx.key for fx in over.fixes} >= {"data.filter_overlong_prompts", "data.max_prompt_length"}
    assert "left-truncates" in over.summary  # what veRL 0.9.1 does with it
    # ranking: errors first
    sev = [x.severity for x in a.findings]
    assert sev == sorted(sev, key=lambda s: {"error": 0, "warning": 1, "info": 2}[s])


def test_verl_flat_format_names_field_and_fix_and_verl_rejects_it(tok_dir):
    a = _audit("verl_gsm8k_flat.jsonl", "grpo", "verl", tok_dir)
    f = _by_check(a)
    missing = f["missing_field"][0]
    assert missing.evidence.field == "reward_model.ground_truth"
    assert "reward_model = {'ground_truth': row['answer']}" in [fx.key for fx in missing.fixes]
    shape = f["wrong_shape"][0]
    assert shape.evidence.field == "prompt" and shape.evidence.count == 12
    assert shape.fixes[0].key.startswith("prompt = [{'role': 'user'")
    rejected = f["consumer_rejected"][0]
    assert rejected.evidence.count == 12 and "Chat messages should be dicts" in rejected.summary


def test_trl_preference_seeded(tok_dir):
    a = _audit("trl_pref_seeded.jsonl", "dpo", "trl", tok_dir)
    f = _by_check(a)
    assert f["mixed_shapes"][0].evidence.rows == [35] and f["mixed_shapes"][0].severity == "error"
    assert f["null_value"][0].evidence.rows == [17]  # the empty chosen answer
    assert f["identical_pair"][0].evidence.rows == [10]
    assert f["exact_duplicate"][0].evidence.rows == [21]
    assert f["exact_duplicate"][0].evidence.examples[0].note == "same as row 4"
    assert f["near_duplicate"][0].evidence.rows == [31]
    bias = f["length_bias"][0]
    assert bias.evidence.values["share_chosen_longer"] > 0.8 and bias.evidence.values["p_value"] < 0.01
    assert "ld_alpha" in {fx.key for fx in bias.fixes}


def test_trl_preference_over_length_uses_the_plan(tok_dir):
    plan = _plan("trl", "dpo", tok_dir, max_prompt_length=32, max_response_length=32)
    a = audit_data(str(FIX / "trl_pref_clean.jsonl"), plan=plan, detail=True)
    over = _by_check(a)["sequence_over_limit"][0]
    assert over.evidence.values["limit"] == 64
    assert over.fixes[0].key == "max_length" and over.fixes[0].scope == "DPOConfig"
    assert int(over.fixes[0].value) >= over.evidence.values["p99"]
    stats = {s.name: s for s in a.lengths}
    assert stats["prompt+chosen"].limit == 64 and stats["prompt+chosen"].over_limit > 0


def test_kto_seeded(tok_dir):
    a = _audit("kto_seeded.jsonl", "kto", "trl", tok_dir)
    f = _by_check(a)
    assert f["label_type"][0].evidence.rows == [7]
    assert f["null_value"][0].evidence.rows == [13]
    bal = f["kto_label_balance"][0]
    assert bal.evidence.values["desirable"] == 29 and bal.evidence.values["undesirable"] == 6
    lo, hi = bal.evidence.values["desirable_weight_low"], bal.evidence.values["desirable_weight_high"]
    fix = {fx.key: fx.value for fx in bal.fixes}
    assert lo <= float(fix["desirable_weight"]) <= hi
    # the suggested weight brings the weighted ratio into [1, 4/3] (KTO Eq. 8)
    assert 1 <= float(fix["desirable_weight"]) * 29 / 6 <= 4 / 3 + 1e-9


def test_kto_single_label_is_an_error():
    ctx = AuditContext(framework="trl", method="kto", family="unpaired")
    s = AuditSession(ctx)
    s.feed([{"prompt": f"q{i}", "completion": f"answer {i}.", "label": True} for i in range(10)])
    a = s.finish()
    assert [f.check for f in a.errors] == ["kto_single_label"]


def test_openrlhf_seeded_names_the_key(tok_dir):
    a = _audit("openrlhf_pref_seeded.jsonl", "dpo", "openrlhf", tok_dir)
    f = _by_check(a)
    missing = f["missing_field"][0]
    assert missing.evidence.field == "rejected"
    assert (missing.fixes[0].key, missing.fixes[0].value) == ("--data.rejected_key", "response_rejected")
    shapes = {x.evidence.field for x in f["wrong_shape"]}
    assert shapes == {"prompt", "chosen"}
    assert any(fx.key == "--data.apply_chat_template" for x in f["wrong_shape"] for fx in x.fixes)
    assert f["consumer_rejected"][0].evidence.count == 16  # OpenRLHF's preprocess_data raises on every row


def test_reward_sources_for_a_custom_scorer(tok_dir):
    a = _audit("verl_gsm8k_seeded.jsonl", "grpo", "verl", None, reward_sources=["openai/gsm8k"],
               consumer_check=False)
    cov = _by_check(a)["reward_coverage"][0]
    assert "reward_sources" in cov.summary and cov.evidence.count == 2
    ok = _audit("verl_gsm8k_seeded.jsonl", "grpo", "verl", None, reward_sources=["openai/gsm8k", "my_org/arith_v2"],
                consumer_check=False)
    assert "reward_coverage" not in _by_check(ok)


def test_no_chat_template_is_named(tmp_path, tok_dir):
    bare = tmp_path / "bare-tok"
    shutil.copytree(tok_dir, bare)
    cfg = json.loads((bare / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(cfg))
    for extra in bare.glob("chat_template.*"):
        extra.unlink()
    a = _audit("trl_pref_clean.jsonl", "dpo", "trl", bare, consumer_check=False)
    assert "no_chat_template" in _by_check(a)
    assert "(no chat template)" in a.tokens


def test_estimated_tokens_are_stated():
    a = _audit("trl_pref_clean.jsonl", "dpo", "trl", None, consumer_check=False)
    est = _by_check(a)["tokens_estimated"][0]
    assert est.severity == "info" and "4" in est.summary
    assert a.tokens.startswith("estimate:")


@pytest.mark.parametrize("kind", ["parquet", "csv", "hf_disk", "json_array"])
def test_every_file_type_reads_the_same_rows(kind, tmp_path):
    import datasets

    src = FIX / "trl_pref_seeded.jsonl"
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    rows = [r for r in rows if isinstance(r["prompt"], str)]  # a single type per column (parquet/CSV)
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = tmp_path / "d.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=7)
    elif kind == "csv":
        path = tmp_path / "d.csv"
        datasets.Dataset.from_list(rows).to_csv(str(path), index=False)
    elif kind == "hf_disk":
        path = tmp_path / "saved"
        datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)}).save_to_disk(str(path))
    else:
        path = tmp_path / "d.json"
        path.write_text(json.dumps(rows))
    a = audit_data(str(path), method=Method.DPO, framework=Framework.TRL, consumer_check=False, detail=True)
    assert a.rows_read == len(rows)
    f = _by_check(a)
    assert f["identical_pair"][0].evidence.count == 1 and "length_bias" in f


def test_csv_message_lists_are_json_strings(tmp_path):
    path = tmp_path / "conv.csv"
    rows = [json.loads(line) for line in (FIX / "trl_pref_clean.jsonl").read_text().splitlines()]
    with open(path, "w", encoding="utf-8") as fh:
        import csv

        w = csv.DictWriter(fh, fieldnames=["prompt", "chosen", "rejected"])
        w.writeheader()
        for r in rows:
            w.writerow({k: json.dumps(v) for k, v in r.items()})
    a = audit_data(str(path), method=Method.DPO, framework=Framework.TRL, consumer_check=False, detail=True)
    shapes = [f for f in a.findings if f.check == "wrong_shape"]
    assert {f.evidence.field for f in shapes} == {"prompt", "chosen", "rejected"}
    assert "json.loads" in shapes[0].fixes[0].key


def test_verl_cannot_read_csv(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,data_source\nhi,openai/gsm8k\n")
    a = audit_data(str(path), method=Method.GRPO, framework=Framework.VERL, consumer_check=False)
    ft = [f for f in a.findings if f.check == "file_type"]
    assert ft and ft[0].severity == "error" and "parquet" in ft[0].fixes[0].key


def test_compact_default_is_bounded(tok_dir):
    big = audit_data(str(FIX / "trl_pref_seeded.jsonl"), method=Method.DPO, framework=Framework.TRL,
                     consumer_check=False)
    for f in big.findings:
        assert len(f.evidence.rows) <= 5 and len(f.evidence.examples) <= 2
        assert all(len(e.text) <= 160 for e in f.evidence.examples)
    assert all(not s.bin_counts for s in big.lengths)
    assert len(big.model_dump_json()) < 12_000


def test_bounded_memory_state_for_near_duplicates():
    ctx = AuditContext(framework="trl", method="grpo", family="prompt_verifier")
    s = AuditSession(ctx)
    s._nd["max_rows"] = 100  # noqa: SLF001 - shrink the bound to see it hold
    s.feed([{"prompt": f"question number {i} about the topic {i * 7919 % 104729}"} for i in range(300)])
    assert len(s._mh) <= 100  # noqa: SLF001
    a = s.finish()
    assert any("indexed the first 100 rows" in n for n in a.notes)


@pytest.mark.parametrize("kwargs,field", [
    ({"path": "/nonexistent/data.jsonl", "method": Method.DPO, "framework": Framework.TRL}, "path"),
    ({"path": str(FIX / "kto_clean.jsonl"), "method": Method.SFT, "framework": Framework.TRL}, "method"),
    ({"path": str(FIX / "kto_clean.jsonl")}, "plan|method,framework"),
    ({"path": str(FIX / "kto_clean.jsonl"), "method": Method.KTO, "framework": Framework.VERL}, "framework"),
    ({"path": str(FIX / "make_fixtures.py"), "method": Method.DPO, "framework": Framework.TRL}, "path"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(AdvisorError) as exc:
        audit_data(**kwargs)
    assert exc.value.problems[0].field == field


def test_bad_jsonl_line_is_named(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"prompt": "a", "chosen": "b", "rejected": "c"}\n{not json\n')
    with pytest.raises(AdvisorError) as exc:
        audit_data(str(p), method=Method.DPO, framework=Framework.TRL)
    assert "line 2" in exc.value.problems[0].message


def test_cli_audit_data(tmp_path, capsys):
    out = tmp_path / "r.html"
    rc = cli_main(["audit-data", "--path", str(FIX / "trl_pref_seeded.jsonl"), "--method", "dpo", "--framework",
                   "trl", "--no-consumer-check", "--html-report", str(out), "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "problems" and data["findings"][0]["severity"] == "error"
    assert out.exists() and "<svg" in out.read_text()
    rc = cli_main(["audit-data", "--path", str(FIX / "kto_clean.jsonl"), "--method", "sft", "--framework", "trl"])
    assert rc == 2
    assert "method" in capsys.readouterr().err


def test_html_report_path_must_be_a_file(tmp_path):
    with pytest.raises(AdvisorError) as exc:
        audit_data(str(FIX / "kto_clean.jsonl"), method=Method.KTO, framework=Framework.TRL,
                   consumer_check=False, html_report=str(tmp_path) + "/")
    assert exc.value.problems[0].field == "html_report"
