"""A self-contained HTML report of a Diagnosis: findings with evidence and fixes, and metric plots
annotated with the step ranges and values each finding points at.

Plots are matplotlib SVG inlined in the page (no external files, scripts or fonts), so the report
can be mailed or attached to an issue as one file.
"""

from __future__ import annotations

import html
import io
import math
from pathlib import Path

from advisor.diagnosis import Diagnosis, Finding
from advisor.metrics import vocabulary

_SEV_COLOR = {"error": "#c0392b", "warning": "#d68910", "info": "#2874a6"}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em;margin-bottom:.2em} .meta{color:#555;margin-bottom:1.2em}
.status{display:inline-block;padding:.15em .6em;border-radius:4px;color:#fff;font-weight:600}
.finding{border-left:5px solid #999;padding:.4em 1em;margin:1em 0;background:#fafafa}
.finding h3{margin:.2em 0} .sev{font-weight:700;text-transform:uppercase;margin-right:.5em}
code,pre{background:#f0f0f0;border-radius:3px} pre{padding:.4em;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left;font-size:.92em}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:1em}
.plot{border:1px solid #eee;padding:.3em} .plot svg{width:100%;height:auto}
.checks{columns:3;font-size:.9em;color:#444}
"""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _annotations(diag: Diagnosis) -> dict[str, list[tuple[int, Finding, object]]]:
    """metric -> [(finding number, finding, evidence)]"""
    out: dict[str, list[tuple[int, Finding, object]]] = {}
    for i, f in enumerate(diag.findings, 1):
        for ev in f.evidence:
            if ev.kind == "metric" and ev.metric:
                out.setdefault(ev.metric, []).append((i, f, ev))
    return out


def _plot_svg(name: str, steps: list[int], values: list[float],
              notes: list[tuple[int, Finding, object]]) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text: searchable, smaller
        return _draw(plt, name, steps, values, notes)


def _draw(plt, name: str, steps: list[int], values: list[float],
          notes: list[tuple[int, Finding, object]]) -> str:
    fig, ax = plt.subplots(figsize=(6.4, 2.8), dpi=100)
    try:
        finite = [(s, v) for s, v in zip(steps, values) if math.isfinite(v)]
        if finite:
            xs, ys = zip(*finite)
            ax.plot(xs, ys, marker="o" if len(xs) < 40 else None, markersize=3, linewidth=1.4, color="#34495e")
        for num, finding, ev in notes:
            color = _SEV_COLOR.get(finding.severity, "#888")
            lo, hi = getattr(ev, "step_first", None), getattr(ev, "step_last", None)
            if lo is not None and hi is not None and hi > lo:
                ax.axvspan(lo, hi, color=color, alpha=0.08)
            at, vals = getattr(ev, "steps", []), getattr(ev, "values", [])
            if at and len(at) == len(vals):  # the exact points the finding names (spikes)
                ax.scatter(at, vals, s=40, facecolors="none", edgecolors=color, linewidths=1.5, zorder=3)
            if finite:
                x_last, y_last = finite[-1]
                ax.annotate(f"#{num} {finding.category}", xy=(x_last, y_last), xytext=(-8, 8 + 12 * (num % 3)),
                            textcoords="offset points", ha="right", fontsize=8, color=color,
                            arrowprops={"arrowstyle": "->", "color": color, "lw": 0.8})
        desc = vocabulary().get(name.split(":", 1)[0])
        ax.set_title(name if desc is None else f"{name} — {desc.description[:60]}", fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    except BaseException:
        plt.close(fig)
        raise
    return inline_svg(plt, fig)


def inline_svg(plt, fig) -> str:
    """A drawn figure as an SVG string for inlining in HTML (no XML prolog), the figure closed.
    Shared by the diagnosis and the data-audit reports."""
    try:
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
    finally:
        plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def render_html(diag: Diagnosis, title: str = "rl-advisor diagnosis") -> str:
    """The report as one HTML string."""
    status_color = {"problems": "#c0392b", "healthy": "#1e8449", "no_data": "#7f8c8d"}[diag.status]
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{_esc(title)}</h1>",
             f"<div class='meta'><span class='status' id='status' style='background:{status_color}'>"
             f"{_esc(diag.status.upper())}</span> framework: <b>{_esc(diag.framework or 'unknown')}</b> · "
             f"lines read: {diag.lines_read} · metric points: {diag.points_read}</div>"]
    for note in diag.notes:
        parts.append(f"<p class='meta'>{_esc(note)}</p>")
    parts.append("<h2>Findings</h2>")
    if not diag.findings:
        parts.append("<p>No findings.</p>")
    for i, f in enumerate(diag.findings, 1):
        color = _SEV_COLOR.get(f.severity, "#888")
        parts.append(f"<div class='finding' id='finding-{i}' data-category='{_esc(f.category)}' "
                     f"style='border-left-color:{color}'>")
        parts.append(f"<h3>#{i} <span class='sev' style='color:{color}'>{_esc(f.severity)}</span>"
                     f"<code>{_esc(f.category)}</code> — {_esc(f.title)}</h3>")
        parts.append(f"<p>{_esc(f.summary)}</p>")
        for ev in f.evidence[:6]:
            if ev.kind == "metric":
                vals = ", ".join(f"{v:.4g}" for v in ev.values[:10])
                rng = f"steps {ev.step_first}–{ev.step_last}" if ev.step_first is not None else ""
                parts.append(f"<p>Evidence: <code>{_esc(ev.key or ev.metric)}</code> {_esc(rng)}: {_esc(vals)} "
                             f"<i>{_esc(ev.note)}</i></p>")
            else:
                lines = "\n".join(f"{ln.line:>6}: {ln.text}" for ln in ev.lines[:5])
                parts.append(f"<p>Evidence ({_esc(ev.kind)}) <i>{_esc(ev.note)}</i></p><pre>{_esc(lines)}</pre>")
        if f.likely_cause:
            parts.append(f"<p><b>Likely cause:</b> {_esc(f.likely_cause)}</p>")
        if f.fixes:
            parts.append("<table><tr><th>framework</th><th>key</th><th>value</th><th>note</th></tr>")
            for fx in f.fixes:
                scope = f" ({fx.scope})" if fx.scope else ""
                parts.append(f"<tr><td>{_esc(fx.framework)}{_esc(scope)}</td><td><code>{_esc(fx.key)}</code></td>"
                             f"<td>{_esc(fx.value if fx.value is not None else '')}</td><td>{_esc(fx.note)}</td></tr>")
            parts.append("</table>")
        if f.source:
            parts.append(f"<p class='meta'>Source: {_esc(f.source)}</p>")
        parts.append("</div>")
    notes = _annotations(diag)
    if diag.series:
        parts.append("<h2>Metrics</h2><div class='plots'>")
        for s in diag.series:
            if not s.values:
                continue
            svg = _plot_svg(s.name, s.steps, s.values, notes.get(s.name, []))
            parts.append(f"<div class='plot' data-metric='{_esc(s.name)}'>{svg}</div>")
        parts.append("</div>")
    passed = sorted({c.rule for c in diag.checks if c.status == "passed"})
    skipped = sorted({c.rule for c in diag.checks if c.status == "skipped"})
    parts.append(f"<h2>Checks</h2><p>Passed ({len(passed)}):</p><ul class='checks'>"
                 + "".join(f"<li>{_esc(r)}</li>" for r in passed) + "</ul>")
    parts.append(f"<p>Skipped — metrics not in the log ({len(skipped)}):</p><ul class='checks'>"
                 + "".join(f"<li>{_esc(r)}</li>" for r in skipped) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(diag: Diagnosis, out: str | Path, title: str = "rl-advisor diagnosis") -> Path:
    """Write the report; the diagnosis and title go through the one secret scrubber first (log
    lines quoted as evidence may carry tokens)."""
    from advisor.secrets import scrub_obj, scrub_text

    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(scrub_obj(diag), scrub_text(title))
    path.write_text(page, encoding="utf-8")
    return path
