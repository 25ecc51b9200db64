"""The memory picture: stacked bars of the per-GPU ledger, one bar per phase, one panel per pool,
with the usable capacity as a line. Written as PNG and SVG. matplotlib is imported lazily (Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.memory.models import MemoryBudget

# Colour per term kind, so the same kind reads the same in every bar.
KIND_COLORS = {
    "weights": "#4C72B0", "grads": "#DD8452", "optimizer": "#C44E52", "activations": "#55A868",
    "logits": "#8172B3", "kv_cache": "#937860", "engine": "#64B5CD", "buffers": "#DA8BC3",
    "system": "#8C8C8C",
}


def plot_memory(budget: "MemoryBudget", out_prefix: str | Path) -> list[Path]:
    """Draw the budget and write ``<prefix>.png`` and ``<prefix>.svg``; returns the two paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    pools = budget.pools
    fig, axes = plt.subplots(1, len(pools), figsize=(max(6.0, 2.2 + 1.5 * max(
        (sum(1 for ph in budget.phases if ph.pool == p.name) for p in pools), default=1)) * len(pools), 5.2),
        squeeze=False)
    used_kinds: set[str] = set()
    for ax, pool in zip(axes[0], pools):
        phases = [ph for ph in budget.phases if ph.pool == pool.name]
        for x, ph in enumerate(phases):
            bottom = 0.0
            by_kind: dict[str, float] = {}
            for t in ph.terms:
                by_kind[t.kind] = by_kind.get(t.kind, 0.0) + t.gib
            for kind, color in KIND_COLORS.items():
                v = by_kind.get(kind, 0.0)
                if v <= 0:
                    continue
                used_kinds.add(kind)
                ax.bar(x, v, bottom=bottom, color=color, edgecolor="white", linewidth=0.5)
                bottom += v
            ax.text(x, bottom, f"{ph.total_gib:.1f}", ha="center", va="bottom", fontsize=8)
        ax.axhline(pool.capacity_gib, color="black", linestyle="--", linewidth=1)
        ax.text(-0.45, pool.capacity_gib, f"usable {pool.capacity_gib:.1f} GiB", va="bottom", ha="left",
                fontsize=8)
        ax.set_xticks(range(len(phases)))
        ax.set_xticklabels([ph.phase.replace("_", "\n") for ph in phases], fontsize=8)
        ax.set_ylabel("GiB per GPU")
        verdict = "fits" if pool.fits else "DOES NOT FIT"
        ax.set_title(f"pool {pool.name} ({pool.gpus} GPUs): {verdict}\npeak {pool.peak_gib:.1f} GiB in "
                     f"{pool.binding_phase}", fontsize=9)
        top = max([pool.capacity_gib] + [ph.total_gib for ph in phases]) * 1.12
        ax.set_ylim(0, top)
    handles = [Patch(color=KIND_COLORS[k], label=k) for k in KIND_COLORS if k in used_kinds]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(f"budget_memory: {budget.framework.value} on {budget.gpu}", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    paths = [prefix.with_suffix(".png"), prefix.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=120)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths
