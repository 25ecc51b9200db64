"""Similar known cases (advisor/diagnosis/similar.py): retrieval over the packaged development cases."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from advisor.diagnosis import DiagnosisSession, diagnose_text
from advisor.diagnosis import similar

REPO = Path(__file__).resolve().parent.parent


def _load(name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


acc = _load("diagnose_accuracy")
known = _load("known_cases")

DRESSAGE = "https://github.com/Accio-Lab/Dressage/issues/1"
PARAPHRASE = """\
Our Megatron + SGLang GRPO run: the very first rollout, served from the HF checkpoint, reads fine.
After that the first update_weights call pushes the trained weights into sglang.
Then every rollout is multilingual gibberish (token salad) that never stops until max length, and the reward drops to 0.
"""
# two sentences on two lines, so no rule ties the gibberish to the weight update (round 32 reads a sentence wrapped
# over two lines across the break): only retrieval can name the category here


def test_tokens_keep_identifiers_and_drop_numbers_paths_hex() -> None:
    toks = similar.tokens('File "/opt/conda/lib/python3.10/site-packages/torch/nn/module.py", line 1130 '
                          "torch.OutOfMemoryError at 0x7f3a2b actor_rollout_ref.rollout.n=8 step 42 a3f9c2d1")
    assert "actor_rollout_ref.rollout.n" in toks and "rollout" in toks
    assert "torch.outofmemoryerror" in toks and "memory" in toks
    assert not [t for t in toks if any(ch.isdigit() for ch in t)], toks
    assert not [t for t in toks if "conda" in t or "site" in t], toks


def test_paraphrase_of_a_known_case_retrieves_it() -> None:
    votes = similar.similar_votes(PARAPHRASE)
    assert votes and votes[0].category == "vllm_weight_sync_failure"
    assert votes[0].neighbours[0].case["source"] == DRESSAGE
    res = diagnose_text(PARAPHRASE)
    hit = next(f for f in res.findings if f.rule == similar.RULE_ID)
    assert hit.category == "vllm_weight_sync_failure" and hit.severity == "warning"
    assert hit.source == DRESSAGE and hit.evidence[0].kind == "case" and DRESSAGE in hit.evidence[0].note
    assert hit.confidence <= 0.5 and "retrieval" in hit.summary


def test_the_same_thread_is_never_retrieved() -> None:
    votes = similar.similar_votes(PARAPHRASE, exclude_sources=[DRESSAGE])
    assert all(nb.case["source"] != DRESSAGE for v in votes for nb in v.neighbours)


@pytest.mark.parametrize("text", [
    "Training finished after 300 steps. Loss went down smoothly and the evaluation accuracy improved.\n",
    "step:1 - actor/entropy:0.61 - critic/score/mean:0.12 - response_length/mean:310\n"
    "step:2 - actor/entropy:0.60 - critic/score/mean:0.15 - response_length/mean:318\n",
    "The weather in Paris was sunny on Tuesday; we went for a walk along the river.\n",
])
def test_unrelated_or_healthy_text_gets_nothing(text: str) -> None:
    assert not similar.similar_votes(text)
    res = diagnose_text(text)
    assert not [f for f in res.findings if f.rule == similar.RULE_ID]


def test_similar_findings_rank_after_rule_findings_and_are_never_errors() -> None:
    text = "# the score stays at 0 for every batch since the start\n" + PARAPHRASE
    res = diagnose_text(text)
    rules = [i for i, f in enumerate(res.findings) if f.rule != similar.RULE_ID]
    sims = [i for i, f in enumerate(res.findings) if f.rule == similar.RULE_ID]
    assert rules and sims and max(rules) < min(sims)
    assert all(res.findings[i].severity != "error" for i in sims)
    scores = [f.score for f in res.findings]
    assert scores == sorted(scores, reverse=True)


def test_an_error_read_from_the_log_gets_no_other_similar_category() -> None:
    """The framework's message is the better evidence: retrieval adds no competing category."""
    res = diagnose_text(PARAPHRASE + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert res.findings[0].severity == "error" and res.findings[0].category.startswith("oom")
    assert not [f for f in res.findings if f.rule == similar.RULE_ID]


def test_a_log_without_a_sentence_is_left_to_the_rules() -> None:
    """Weight-update lines of a healthy run read like the log of a failed one: no sentence, no retrieval."""
    lines = ("(LLMRayActor pid=7, ip=10.0.0.2) update weight: model.layers.3.mlp.up_proj.weight, dtype: "
             "torch.bfloat16, shape: torch.Size([4864, 896])\n") * 3
    assert not similar.has_sentence(lines) and not similar.similar_votes(lines)
    assert similar.has_sentence("# NCCL reports an error at the end of the training epoch with Ray.")


def test_the_kept_text_is_bounded() -> None:
    session = DiagnosisSession()
    line = "# the reward stays at zero and nothing we try changes it, ActorRolloutRefWorker keeps waiting\n"
    session.feed(line * 20_000)
    assert len(session.sample.text()) <= similar.HEAD_CHARS + similar.TAIL_CHARS + similar.LINE_CHARS


def test_validation_batch_is_not_in_the_index() -> None:
    table = similar.packaged_table()
    ids = {c["id"] for c in table["cases"]}
    sources = {c["source"] for c in table["cases"]}
    cases = acc.load_cases(shared=None)
    for c in table["cases"]:
        if c["origin"] == "tests/cases":
            assert acc.case_split(int(c["batch"])) == "development", c["id"]
    for c in cases:
        if c["split"] == "validation":
            assert c["id"] not in ids and c["source"] not in sources, c["id"]


def test_index_is_up_to_date_with_its_generator() -> None:
    """Regenerated from the corpus (the shared curated cases only where ../shared is present)."""
    table = similar.packaged_table()
    shared = acc.SHARED if (acc.SHARED / "index.yaml").is_file() else None
    fresh = [known.entry(c) for c in known.development_cases(shared)]
    have = table["cases"] if shared is not None else [c for c in table["cases"] if c["origin"] == "tests/cases"]
    assert [c["id"] for c in have] == [c["id"] for c in fresh], "run python benchmarks/known_cases.py"
    assert have == fresh, "run python benchmarks/known_cases.py"
    assert set(table["params"]) == {"k", "threshold", "max_findings", "min_terms"}
    assert 0 < table["params"]["threshold"] < 1


def test_cli_json_shows_similar_case_findings(tmp_path: Path) -> None:
    from rl_advisor.cli import main as cli_main

    f = tmp_path / "issue.md"
    f.write_text(PARAPHRASE, encoding="utf-8")
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli_main(["diagnose", str(f), "--json"]) == 0
    found = [x for x in json.loads(buf.getvalue())["findings"] if x["rule"] == similar.RULE_ID]
    assert found and set(found[0]) >= {"category", "severity", "evidence", "likely_cause", "fixes", "confidence"}
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli_main(["diagnose", str(f), "--json", "--exclude-source", DRESSAGE]) == 0
    assert DRESSAGE not in buf.getvalue()


def test_metric_pair_matches_what_the_ignorecase_form_matches() -> None:
    """similar._METRIC_PAIR is written case by case (IGNORECASE made it four times slower on every
    kept line): the same spans as the IGNORECASE form on the corpus and on random text built from
    the characters that matter (case variants, the non-ASCII letters IGNORECASE folds)."""
    import random
    import re
    from pathlib import Path

    from advisor.diagnosis.similar import _METRIC_PAIR

    ref = re.compile(r"""['"]?[A-Za-z_][\w./@()-]*['"]?\s?:\s?[-+]?(?:\d[\d.]*(?:e[-+]?\d+)?|nan|inf)\b""", re.I)
    lines = [line for f in sorted((Path(__file__).parent / "cases" / "diagnosis").rglob("*.txt"))
             for line in f.read_text(encoding="utf-8", errors="replace").splitlines()]
    rng = random.Random(19)
    alphabet = "aAeEiInNfF_:.'\" \t-+0123456789/@()xyzK\u0130\u0131\u017f\u212a\u00e9\u4e2d,;"
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(20000)]
    for line in lines:
        assert [m.span() for m in _METRIC_PAIR.finditer(line)] == [m.span() for m in ref.finditer(line)], line
