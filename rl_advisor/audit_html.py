"""A self-contained HTML report of a DataAudit: ranked findings, the summary table and token-length
histograms (matplotlib SVG inlined, with the Plan's limit drawn), from templates/audit/report.html.j2.

The jinja2 environment autoescapes every value (data set text is hostile input); only the SVG that
matplotlib wrote (it escapes its own text) is marked safe.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from advisor.data_audit import DataAudit, LengthStats
from rl_advisor.report_html import inline_svg

_SEV_COLOR = {"error": "#c0392b", "warning": "#d68910", "info": "#2874a6"}
_STATUS_COLOR = {"problems": "#c0392b", "clean": "#1e8449", "no_data": "#7f8c8d"}


@cache
def _env():
    import jinja2

    from advisor.bundle import templates_dir

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=True,
                              undefined=jinja2.StrictUndefined)


def _histogram_svg(series: list[LengthStats], title: str, tokens_exact: bool) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig, ax = plt.subplots(figsize=(6.0, 2.6), dpi=100)
        try:
            colors = ["#34495e", "#c0392b", "#27ae60"]
            for ls, color in zip(series, colors):
                edges, counts = ls.bin_edges, ls.bin_counts
                if not counts:
                    continue
                ax.stairs(counts, edges, fill=len(series) == 1, alpha=0.6 if len(series) == 1 else 1.0,
                          color=color, label=ls.name, linewidth=1.4)
            limit = series[0].limit
            if limit is not None:
                ax.axvline(limit, color="#c0392b", linestyle="--", linewidth=1.2)
                ax.annotate(f"limit {limit}", xy=(limit, ax.get_ylim()[1] * 0.9), fontsize=8, color="#c0392b",
                            xytext=(3, 0), textcoords="offset points")
            if len(series) > 1:
                ax.legend(fontsize=8)
            ax.set_title(f"{title} — tokens{'' if tokens_exact else ' (estimated)'}", fontsize=9)
            ax.set_xlabel("tokens", fontsize=8)
            ax.set_ylabel("rows", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        except BaseException:
            plt.close(fig)
            raise
        return inline_svg(plt, fig)


def render_audit_html(audit: DataAudit, title: str | None = None) -> str:
    from markupsafe import Markup

    exact = audit.tokens.startswith("tokenizer")
    plots = [(ls.name, Markup(_histogram_svg([ls], ls.name, exact))) for ls in audit.lengths if ls.bin_counts]
    by_name = {ls.name: ls for ls in audit.lengths}
    if "chosen" in by_name and "rejected" in by_name and by_name["chosen"].bin_counts:
        pair = [by_name["chosen"], by_name["rejected"]]
        plots.insert(0, ("chosen vs rejected", Markup(_histogram_svg(pair, "chosen vs rejected", exact))))
    return _env().get_template("audit/report.html.j2").render(
        audit=audit, title=title or f"rl-advisor data audit: {Path(audit.path).name or 'data set'}",
        colors=_SEV_COLOR, status_color=_STATUS_COLOR[audit.status], plots=plots)


def write_audit_html(audit: DataAudit, out: str | Path, title: str | None = None) -> Path:
    """Write the report for a local caller (audit_data's html_report goes through safe_paths)."""
    from advisor.secrets import scrub_obj

    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_audit_html(scrub_obj(audit), title), encoding="utf-8")
    return path
