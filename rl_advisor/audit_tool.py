"""audit_data: the I/O around the pure audit core (advisor/data_audit).

Opens the data set (rl_advisor/data_readers.py, streaming), counts tokens with the model's tokenizer
when the Plan's model is a local folder (else the core's stated estimate), runs a sample through the
framework's own loader (rl_advisor/data_consumers.py), and optionally writes the HTML report.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from advisor.data_audit import AuditContext, AuditFinding, AuditSession, DataAudit, RowEvidence, RowExample, family_of
from advisor.data_audit.model import rank_score
from advisor.data_audit.tables import fixes_for, rules
from advisor.data_audit.text import as_text
from advisor.errors import AdvisorError
from advisor.plan import Framework, Method, Plan

CONSUMER_SAMPLE = 16
DETAIL_LIMITS = {"rows": 50, "examples": 10, "chars": 500}


class HFCounter:
    """Token counts with a local Hugging Face tokenizer (chat template applied to message lists)."""

    exact = True

    def __init__(self, tokenizer: Any, where: str):
        self.tok = tokenizer
        self.has_chat_template = bool(getattr(tokenizer, "chat_template", None))
        self.label = f"tokenizer: {where}" + ("" if self.has_chat_template else " (no chat template)")

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        return [len(ids) for ids in self.tok(list(texts), add_special_tokens=False)["input_ids"]]

    def count_chats(self, chats: Sequence[list[dict[str, Any]]], generation_prompt: bool) -> list[int]:
        if not self.has_chat_template:  # rendered text unknown: contents + 4 per message (stated estimate)
            return [n + 4 * len(c) for n, c in zip(self.count_texts([as_text(c) for c in chats]), chats)]
        rendered = []
        for c in chats:
            try:
                rendered.append(self.tok.apply_chat_template(c, add_generation_prompt=generation_prompt,
                                                             tokenize=False))
            except Exception:  # noqa: BLE001 - a malformed chat: the format checks name it; count its text
                rendered.append(as_text(c))
        return self.count_texts(rendered)


def load_tokenizer(model: str | None) -> tuple[Any | None, str]:
    """(tokenizer, why not) for a local model folder; never touches the network."""
    from rl_advisor.safe_paths import check_input_path

    if not model:
        return None, "no model given"
    try:  # under an MCP call confined to the allowed folders, like every path a client names
        p = check_input_path(model, field="model")
        if not p.is_dir():
            return None, f"{model} is not a local folder"
        if not any((p / n).exists() for n in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
            return None, f"no tokenizer files in {model}"
    except (AdvisorError, OSError):
        return None, f"{model[:80]} is not a local folder this process may read"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(p), local_files_only=True), ""
    except Exception as exc:  # noqa: BLE001
        return None, f"tokenizer in {model} did not load ({type(exc).__name__})"


def _context(plan: Plan | None, method: Method | None, framework: Framework | None,
             reward_sources: list[str] | None, file_type: str, path: str) -> tuple[AuditContext, str | None]:
    if plan is None and (method is None or framework is None):
        raise AdvisorError("give a Plan, or both method and framework", field="plan|method,framework",
                           allowed="plan=..., or method=dpo framework=trl (model= for the tokenizer)")
    m = (method or plan.method).value  # type: ignore[union-attr]
    fw = (framework or plan.framework).value  # type: ignore[union-attr]
    family = family_of(m)
    if family is None:
        raise AdvisorError(f"audit_data checks preference, KTO and prompt-only RL data, not {m}", field="method",
                           value=m, allowed="dpo, orpo, simpo, reward_model, kto, ppo, grpo, dr_grpo, gspo, dapo, "
                           "rloo, reinforce_pp, rlaif")
    kw: dict[str, Any] = {}
    model = None
    if plan is not None:
        d = plan.data
        kw = {"prompt_key": d.prompt_key, "max_prompt_length": d.max_prompt_length,
              "max_response_length": d.max_response_length,
              "reward_function": plan.reward_function.path if plan.reward_function else None}
        model = plan.policy.weights_path
    ctx = AuditContext(framework=fw, method=m, family=family, reward_sources=reward_sources, file_type=file_type,
                       path=path, **kw)
    return ctx, model


def audit_data(path: str, plan: Plan | None = None, method: Method | None = None,
               framework: Framework | None = None, model: str | None = None, eval_path: str | None = None,
               reward_sources: list[str] | None = None, split: str = "train", max_rows: int | None = None,
               consumer_check: bool = True, detail: bool = False, html_report: str | None = None) -> DataAudit:
    """Check a preference / KTO / prompt-only data set against the framework and method that will read it.

    ``path``: parquet, JSON/JSONL, CSV, or a saved datasets folder. Give a ``plan`` (method, framework,
    model, lengths, reward function), or ``method`` + ``framework`` (+ ``model``: a local folder with the
    tokenizer; without one token lengths are estimated). ``eval_path`` (default: the Plan's
    data.val_files[0]) enables the n-gram contamination check; ``reward_sources`` lists the data_source
    values a custom scorer handles. The result is compact (5 rows, 2 short examples per finding);
    ``detail=true`` returns up to 50 rows, 10 examples and the length histograms. ``html_report``
    writes a self-contained report with length histograms.
    """
    from rl_advisor.data_readers import file_type, first_rows, iter_batches
    from rl_advisor.safe_paths import check_input_path

    if html_report is not None and not Path(html_report).name.lower().endswith((".html", ".htm")):
        raise AdvisorError("must name an .html file", field="html_report", value=html_report,
                           allowed="a path ending in .html, e.g. out/audit.html")
    src = check_input_path(path, field="path")
    kind = file_type(src)
    ctx, plan_model = _context(plan, method, framework, reward_sources, kind, str(path))
    if max_rows is not None and max_rows <= 0:
        raise AdvisorError("must be positive", field="max_rows", value=max_rows)
    tokenizer, why = load_tokenizer(model or plan_model)
    counter = HFCounter(tokenizer, model or plan_model or "") if tokenizer is not None else None
    eval_texts = _eval_texts(eval_path or (plan.data.val_files[0] if plan is not None and plan.data.val_files
                                           else None), ctx, split)
    session = AuditSession(ctx, counter, eval_texts=eval_texts)
    if tokenizer is None:
        session.notes.append(f"token lengths estimated: {why}")
    for batch in iter_batches(src, kind, max_rows=max_rows, split=split):
        session.feed(batch)
    if consumer_check and session.row:
        _consumer(session, ctx, src, kind, split, tokenizer)
    result = session.finish()
    if html_report:
        from advisor.secrets import scrub_obj
        from rl_advisor.audit_html import render_audit_html
        from rl_advisor.safe_paths import open_output_dir

        out = Path(html_report)
        page = render_audit_html(scrub_obj(result))  # rows quoted as evidence may carry tokens
        with open_output_dir(str(out.parent) or ".", field="html_report") as folder:
            try:
                written = folder.write(out.name, page)
            except OSError as exc:
                raise AdvisorError(f"cannot write the report: {exc.strerror}", field="html_report",
                                   value=html_report) from None
        result.notes.append(f"HTML report: {written}")
    return result if detail else result.compact()


def _eval_texts(eval_path: str | None, ctx: AuditContext, split: str) -> list[str] | None:
    if not eval_path:
        return None
    from rl_advisor.data_readers import file_type, iter_batches
    from rl_advisor.safe_paths import check_input_path

    src = check_input_path(eval_path, field="eval_path")
    limit = rules()["eval_contamination"]["params"]["max_eval_rows"]
    texts: list[str] = []
    for batch in iter_batches(src, file_type(src), max_rows=limit, split=split):
        for row in batch:
            value = row.get(ctx.prompt_key, row.get("prompt", row.get("question", row.get("problem"))))
            if value is not None:
                texts.append(as_text(value))
    return texts


def _consumer(session: AuditSession, ctx: AuditContext, src: Path, kind: str, split: str, tokenizer: Any) -> None:
    from rl_advisor.data_consumers import run_consumer
    from rl_advisor.data_readers import first_rows

    sample = first_rows(src, kind, CONSUMER_SAMPLE, split)
    try:
        ran = run_consumer(ctx, sample, tokenizer, parquet_source=src if kind == "parquet" and src.is_file() else None)
    except ImportError as exc:
        session.notes.append(f"the framework's loader could not be imported on this machine ({exc.name})")
        return
    if ran is None:
        why = "needs the model's tokenizer" if ctx.framework == "openrlhf" else "not installed"
        session.notes.append(f"the {ctx.framework} loader was not run ({why})")
        return
    what, problems = ran
    session.notes.append(f"consumer: {what} on the first {len(sample)} rows: "
                         + ("accepted" if not problems else f"{len(problems)} rejected"))
    if problems:
        rule = rules()["consumer_rejected"]
        ev = RowEvidence(count=len(problems), total=len(sample), rows=[r for r, _ in problems[:50]],
                         examples=[RowExample(row=r, text=msg) for r, msg in problems[:10]], note=what)
        session.add_finding(AuditFinding(
            check="consumer_rejected", title=rule["title"], severity="error",
            summary=f"{what} rejected {len(problems)} of the first {len(sample)} rows: {problems[0][1][:200]}",
            evidence=ev, cause=rule["cause"], fixes=fixes_for("consumer_rejected", ctx.framework),
            source=rule["source"], score=rank_score("error", 1.0)))
