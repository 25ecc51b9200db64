"""The human-readable form of a MemoryBudget (the CLI's default output)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.memory.models import MemoryBudget


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(c.rjust(w) if c[:1].isdigit() or c[:1] == "-" else c.ljust(w)
                             for c, w in zip(r, widths)))
    return out


def render_text(b: "MemoryBudget") -> str:
    lines = [f"budget_memory: {'FITS' if b.fits else 'DOES NOT FIT'}  ({b.framework.value}, {b.gpu}; "
             f"profile: {b.profile})", ""]
    rows = [[p.name, ",".join(p.roles), str(p.gpus), f"{p.capacity_gib:.1f}", f"{p.peak_gib:.1f}",
             f"{p.headroom_gib:+.1f}", "yes" if p.fits else "NO", p.binding_phase, p.binding_term]
            for p in b.pools]
    lines += _table(["pool", "roles", "GPUs", "cap GiB", "peak GiB", "headroom", "fits",
                     "binding phase", "binding term"], rows)
    for p in b.pools:
        if p.failed_check:
            lines.append(f"  ! {p.name}: {p.failed_check}")
    for pool in b.pools:
        phs = [ph for ph in b.phases if ph.pool == pool.name]
        names: list[str] = []
        for ph in phs:
            for t in ph.terms:
                if t.name not in names:
                    names.append(t.name)
        lines += ["", f"Per-GPU ledger, pool {pool.name} (GiB; states: A active, R resident, "
                  f"O offloaded, S asleep)"]
        headers = ["term"] + [ph.phase for ph in phs]
        rows = []
        for n in names:
            row = [n]
            for ph in phs:
                v = sum(t.gib for t in ph.terms if t.name == n)
                row.append(f"{v:.2f}" if v else "")
            rows.append(row)
        rows.append(["TOTAL"] + [f"{ph.total_gib:.2f}" for ph in phs])
        abbrev = {"active": "A", "resident": "R", "offloaded": "O", "asleep": "S", "freed": "F", "absent": "-"}
        rows.append(["states"] + [" ".join(f"{k[:3]}:{abbrev[v]}" for k, v in ph.states.items()) for ph in phs])
        lines += _table(headers, rows)
    lines += ["", f"Host RAM per node: peak {b.host.peak_gib:.1f} GiB of {b.host.capacity_gib:.1f} GiB "
              f"({'fits' if b.host.fits else 'DOES NOT FIT'})"]
    for t in b.host.terms:
        lines.append(f"  {t.name:<24} {t.gib:8.2f}  {t.formula}")
    if b.fixes:
        lines += ["", "Fix ladder (framework keys; new peak of the worst pool):"]
        for f in b.fixes:
            keys = " ".join(f"{k}={v}" for k, v in f.settings.items())
            lines.append(f"  {f.rank}. {keys}  -> {f.new_peak_gib:.1f} GiB "
                         f"({'fits' if f.fits_after else 'still over'})  {f.what}")
    if b.assumptions:
        lines += ["", "Assumptions:"] + [f"  - {a}" for a in b.assumptions]
    if b.notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in b.notes]
    return "\n".join(lines)
