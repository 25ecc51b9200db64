"""What audit_data returns: ranked findings with row evidence, a summary table and length statistics.

The shape follows diagnose_run (status, ranked findings with severity, evidence, cause and fixes, a
table of checks); the fix rows are diagnose_run's ``Fix`` so an agent reads both the same way.
Evidence here points at rows of the data set instead of metric steps or log lines.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from advisor.diagnosis.model import SEVERITY_RANK, Fix, Severity

Family = Literal["preference", "unpaired", "prompt_verifier"]

KEEP_ROWS = 50      # first rows kept per problem (evidence, detail=true)
KEEP_EXAMPLES = 10  # examples kept per problem
EXAMPLE_CHARS = 500
ANSWER_ROLES = ("chosen", "rejected", "completion")


class RowExample(BaseModel):
    row: int = Field(..., description="0-based row index in the data set (as datasets/pandas number them).")
    field: str | None = None
    text: str = Field("", description="The value, shortened.")
    note: str = ""


class RowEvidence(BaseModel):
    """Which rows a finding is about: a count out of the rows checked, the first rows, examples."""

    field: str | None = Field(None, description="The field (column, or dotted path) concerned.")
    count: int = Field(0, description="Rows (or pairs, groups) that show the problem.")
    total: int = Field(0, description="Rows the check looked at.")
    rows: list[int] = Field(default_factory=list, description="The first rows concerned (0-based).")
    examples: list[RowExample] = Field(default_factory=list)
    values: dict[str, float] = Field(default_factory=dict, description="Statistics behind the finding.")
    note: str = ""

    @property
    def share(self) -> float:
        return self.count / self.total if self.total else 0.0


class AuditFinding(BaseModel):
    check: str = Field(..., description="Id of the check (advisor/data/data_audit_rules.yaml).")
    title: str
    severity: Severity
    summary: str = Field(..., description="One sentence: what was seen.")
    evidence: RowEvidence = Field(default_factory=RowEvidence)
    cause: str = ""
    fixes: list[Fix] = Field(default_factory=list)
    source: str = Field("", description="Where the check and its thresholds come from.")
    score: float = Field(0.0, description="Ranking score (higher first).")


class CheckRow(BaseModel):
    """One line of the summary table."""

    check: str
    status: Literal["passed", "fired", "skipped"]
    severity: Severity | None = None
    count: int = 0
    detail: str = ""


class LengthStats(BaseModel):
    """Token lengths of one field (or prompt+answer), with a histogram for the report."""

    name: str
    count: int = 0
    mean: float = 0.0
    p50: float = 0.0
    p95: float = 0.0
    p99: float = 0.0
    max: int = 0
    limit: int | None = Field(None, description="The Plan's limit for this length, if any.")
    over_limit: int = 0
    bin_edges: list[float] = Field(default_factory=list)
    bin_counts: list[int] = Field(default_factory=list)


class DataAudit(BaseModel):
    status: Literal["problems", "clean", "no_data"] = Field(
        ..., description="problems: an error or warning finding; clean: none; no_data: no rows read.")
    framework: str
    method: str
    family: Family
    data_format: str = Field("", description="What the rows look like: standard/conversational, paired/unpaired.")
    consumer: str = Field("", description="The framework's data loader the format was checked against.")
    path: str = ""
    rows_read: int = 0
    columns: list[str] = Field(default_factory=list)
    tokens: str = Field("", description="How token lengths were counted (tokenizer or estimate).")
    findings: list[AuditFinding] = Field(default_factory=list, description="Ranked, most important first.")
    checks: list[CheckRow] = Field(default_factory=list, description="Summary table: every check and its result.")
    lengths: list[LengthStats] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def errors(self) -> list[AuditFinding]:
        return [f for f in self.findings if f.severity == "error"]

    def compact(self, rows: int = 5, examples: int = 2, chars: int = 160) -> "DataAudit":
        """The default tool result: bounded lists, short texts, no histograms."""
        out = self.model_copy(deep=True)
        for f in out.findings:
            ev = f.evidence
            ev.rows = ev.rows[:rows]
            ev.examples = [e.model_copy(update={"text": _short(e.text, chars)}) for e in ev.examples[:examples]]
            f.fixes = f.fixes[:3]
        for ls in out.lengths:
            ls.bin_edges, ls.bin_counts = [], []
        out.checks = [c for c in out.checks if c.status != "passed"] + \
            ([CheckRow(check="(passed)", status="passed",
                       count=sum(1 for c in self.checks if c.status == "passed"),
                       detail=", ".join(c.check for c in self.checks if c.status == "passed"))]
             if any(c.status == "passed" for c in self.checks) else [])
        out.notes = out.notes[:6]
        return out

    def to_text(self) -> str:
        head = {"problems": "PROBLEMS FOUND", "clean": "CLEAN", "no_data": "NO DATA"}[self.status]
        out = [f"Data audit: {head}   {self.method} on {self.framework} ({self.family})   rows: {self.rows_read}"
               f"   format: {self.data_format or 'unknown'}",
               f"  consumer: {self.consumer}", f"  tokens: {self.tokens}"]
        for note in self.notes:
            out.append(f"  note: {note}")
        for i, f in enumerate(self.findings, 1):
            ev = f.evidence
            out.append("")
            out.append(f"{i}. [{f.severity.upper()}] {f.check} — {f.title}")
            out.append(f"   {f.summary}")
            where = f"field {ev.field}: " if ev.field else ""
            rows = ", ".join(str(r) for r in ev.rows[:8])
            out.append(f"   evidence: {where}{ev.count} of {ev.total}" + (f"; rows {rows}" if rows else ""))
            for ex in ev.examples[:3]:
                out.append(f"     row {ex.row}{' ' + ex.field if ex.field else ''}: {_short(ex.text, 120)}"
                           + (f"  ({ex.note})" if ex.note else ""))
            if f.cause:
                out.append(f"   likely cause: {f.cause}")
            for fx in f.fixes[:4]:
                val = f"={fx.value}" if fx.value is not None else ""
                scope = f" ({fx.scope})" if fx.scope else ""
                note = f"  # {fx.note}" if fx.note else ""
                out.append(f"   fix [{fx.framework}]{scope}: {fx.key}{val}{note}")
        if self.lengths:
            out.append("")
            out.append(f"{'length (tokens)':<26}{'n':>8}{'mean':>9}{'p50':>8}{'p95':>8}{'p99':>8}{'max':>8}{'limit':>8}{'over':>7}")
            for ls in self.lengths:
                out.append(f"{ls.name:<26}{ls.count:>8}{ls.mean:>9.1f}{ls.p50:>8.0f}{ls.p95:>8.0f}{ls.p99:>8.0f}"
                           f"{ls.max:>8}{(ls.limit if ls.limit is not None else '-'):>8}{ls.over_limit:>7}")
        out.append("")
        out.append(f"{'check':<22}{'status':<9}{'count':>7}  detail")
        for c in self.checks:
            out.append(f"{c.check:<22}{c.status:<9}{c.count:>7}  {_short(c.detail, 90)}")
        return "\n".join(out)


def rank_score(severity: str, share: float) -> float:
    return SEVERITY_RANK.get(severity, 0) * 10 + min(max(share, 0.0), 1.0)


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
