"""What diagnose_run returns: ranked findings with evidence and exact fixes, or "healthy"."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from advisor.metrics.model import MetricSeries

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK = {"error": 3, "warning": 2, "info": 1}


class LogLine(BaseModel):
    line: int = Field(..., description="1-based line number in the input.")
    text: str


class Evidence(BaseModel):
    """Why a finding fired: a metric over a step range, or matching log lines."""

    kind: Literal["metric", "log", "prose", "case"] = Field(
        ..., description="metric: read from logged values; log: matching log lines; "
        "prose: a description or comment (weaker); case: a similar known case (its thread and resolution).")
    metric: str | None = Field(None, description="Normalised metric name.")
    key: str | None = Field(None, description="The raw key as logged.")
    step_first: int | None = None
    step_last: int | None = None
    values: list[float] = Field(default_factory=list, description="Representative values, in order.")
    steps: list[int] = Field(default_factory=list,
                             description="When set, the step of each value (spikes, first NaN).")
    lines: list[LogLine] = Field(default_factory=list)
    note: str = ""


class Fix(BaseModel):
    """One change to make, as an exact key of the run's framework."""

    framework: str
    key: str = Field(..., description="veRL Hydra key, OpenRLHF flag, TRL config field, or an action.")
    value: str | None = Field(None, description="Suggested value (None = see note).")
    scope: str | None = Field(None, description="Where the key lives (TRL config class, OpenRLHF CLI).")
    kind: Literal["config", "env", "action"] = Field(
        "config", description="config: a framework config key/flag; env: an environment variable; "
        "action: something to run or check.")
    note: str = ""


class Finding(BaseModel):
    category: str = Field(..., description="A category of the taxonomy (advisor/data/diagnosis_taxonomy.yaml).")
    title: str
    severity: Severity
    rule: str = Field(..., description="Id of the rule or log signature that fired.")
    summary: str = Field(..., description="One sentence: what was seen.")
    evidence: list[Evidence] = Field(default_factory=list)
    likely_cause: str = ""
    fixes: list[Fix] = Field(default_factory=list)
    source: str = Field("", description="Where the rule and its thresholds come from.")
    confidence: float = Field(0.5, ge=0.0, le=1.0, description=(
        "How sure the finding is: 0.9 for an error message or exact metric evidence (NaN, every group "
        "uniform with zero gradients, every response cut); lower for trends on few points and for "
        "descriptions. See advisor/diagnosis/engine.py:_confidence."))
    score: float = Field(0.0, description="Ranking score (higher first).")


class Check(BaseModel):
    """One rule run against the input, for the "healthy" report."""

    rule: str
    category: str
    status: Literal["passed", "fired", "skipped"]
    detail: str = ""


class Diagnosis(BaseModel):
    status: Literal["problems", "healthy", "no_data"] = Field(
        ..., description="problems: a warning or error finding; healthy: none; no_data: nothing readable.")
    framework: str | None = Field(None, description="Framework the fixes are written for (detected or from the Plan).")
    formats: dict[str, int] = Field(default_factory=dict, description="Metric points read per format.")
    lines_read: int = 0
    points_read: int = 0
    findings: list[Finding] = Field(default_factory=list, description="Ranked, most important first.")
    checks: list[Check] = Field(default_factory=list)
    series: list[MetricSeries] = Field(default_factory=list,
                                       description="Down-sampled curves of the key metrics (for plots).")
    notes: list[str] = Field(default_factory=list)

    @property
    def top_categories(self) -> list[str]:
        return [f.category for f in self.findings]

    def to_text(self) -> str:
        out: list[str] = []
        head = {"problems": "PROBLEMS FOUND", "healthy": "HEALTHY", "no_data": "NO DATA"}[self.status]
        fmts = ", ".join(f"{k}: {v}" for k, v in self.formats.items()) or "no metric points"
        out.append(f"Diagnosis: {head}   framework: {self.framework or 'unknown'}   "
                   f"lines: {self.lines_read}   metric points: {self.points_read} ({fmts})")
        for note in self.notes:
            out.append(f"  note: {note}")
        for i, f in enumerate(self.findings, 1):
            out.append("")
            out.append(f"{i}. [{f.severity.upper()}] {f.category} — {f.title}   (confidence {f.confidence:.0%})")
            out.append(f"   {f.summary}")
            for ev in f.evidence[:4]:
                if ev.kind == "metric":
                    rng = f"steps {ev.step_first}-{ev.step_last}" if ev.step_first is not None else ""
                    vals = ", ".join(f"{v:.4g}" for v in ev.values[:8])
                    out.append(f"   evidence: {ev.key or ev.metric} {rng}: {vals} {ev.note}".rstrip())
                else:
                    for ln in ev.lines[:3]:
                        out.append(f"   evidence ({ev.kind}) line {ln.line}: {ln.text[:160]}")
                    if ev.note:
                        out.append(f"   evidence note: {ev.note}")
            if f.likely_cause:
                out.append(f"   likely cause: {f.likely_cause}")
            for fx in f.fixes[:6]:
                val = f"={fx.value}" if fx.value is not None else ""
                scope = f" ({fx.scope})" if fx.scope else ""
                note = f"  # {fx.note}" if fx.note else ""
                out.append(f"   fix [{fx.framework}]{scope}: {fx.key}{val}{note}")
        if self.status != "problems":
            passed = [c for c in self.checks if c.status == "passed"]
            out.append("")
            out.append(f"Checks passed ({len(passed)}): " + ", ".join(sorted({c.rule for c in passed})))
        return "\n".join(out)
