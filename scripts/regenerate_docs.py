#!/usr/bin/env python3
"""Regenerate the guide's tables from the tools' own data files (one source of truth).

The generated tables live in guide/reference/ (linked from the prose pages, so each prose page
stays short); they carry blocks like::

    <!-- BEGIN GENERATED: method-rules -->
    ...table generated from advisor/data/method_rules.yaml...
    <!-- END GENERATED: method-rules -->

Each block name maps to a generator below that reads the YAML the tool itself loads (choose_method,
choose_framework, budget_memory, diagnose_run) and prints it as Markdown. Text outside the markers
is prose and is never touched. tests/test_guide_sync.py fails when the committed guide differs from
a fresh run of this script, so a change to a rule, threshold or fix shows up in the guide in the
same commit.

Usage:
    python scripts/regenerate_docs.py           # rewrite the generated blocks in place
    python scripts/regenerate_docs.py --check   # exit 1 and list the blocks that are stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
DATA = REPO / "advisor" / "data"
GUIDE = REPO / "guide"

BLOCK = re.compile(
    r"(?P<begin><!-- BEGIN GENERATED: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(?P<end><!-- END GENERATED: (?P=name) -->)",
    re.S)


class MissingSource(Exception):
    """A data file a block is generated from does not exist (yet)."""


def load(name: str) -> Any:
    path = DATA / name
    if not path.is_file():
        raise MissingSource(f"advisor/data/{name}")
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


# --------------------------------------------------------------------------- Markdown helpers


def cell(value: Any) -> str:
    """One table cell: flattened whitespace, escaped pipes, lists joined."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {cell(v)}" for k, v in value.items())
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")


def table(header: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def code(value: Any) -> str:
    text = str(value)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def guide_link(ref: str | None, here: str) -> str:
    """A guide reference ('guide/x.md#anchor') as a link relative to the page ``here``."""
    if not ref:
        return ""
    path, _, anchor = ref.partition("#")
    page = path.removeprefix("guide/")
    if page == here:
        target = f"#{anchor}" if anchor else page
    else:  # pages under guide/reference/ link up to the prose pages
        target = "../" * here.count("/") + page + (f"#{anchor}" if anchor else "")
    label = page.removesuffix(".md") + (f" §{anchor.split('-', 1)[0]}" if anchor[:1].isdigit() else "")
    return f"[{label}]({target})"


# --------------------------------------------------------------------------- generators


def gen_method_rules() -> str:
    """choose_method: per-method requirements, the scoring rules and the hard exclusions.

    Read through choose_method's own loader (which validates every fact and operator), and
    conditions worded by the same ``rulebook.describe`` the tool uses."""
    if not (DATA / "method_rules.yaml").is_file():
        raise MissingSource("advisor/data/method_rules.yaml")
    from advisor import rulebook
    from advisor.choose_method import load_method_rules

    load_method_rules.cache_clear()
    t = load_method_rules()
    out = ["Source: `advisor/data/method_rules.yaml`, as loaded by choose_method. A method is "
           "feasible when any of its requirements holds; every rule whose condition holds adds its "
           "points to the method's prior; the highest total ranks first.\n",
           "**Methods**\n"]
    rows = []
    for method, m in t.methods.items():
        requires = " OR ".join(f"({rulebook.describe(w)})" for w in m.requires) or "always"
        roles = [r.value for r in m.roles] + [f"{r.value} (if learned)" for r in m.roles_if_learned_reward]
        rows.append([code(method.value), m.label, "online" if m.on_policy else "offline",
                     ", ".join(roles), requires, f"{m.base_score:g}",
                     guide_link(m.guide_section, "reference/method-rules.md")])
    out.append(table(["method", "name", "kind", "resident roles", "feasible when", "prior", "guide"], rows))
    out.append("**Scoring rules**\n")
    rows = []
    for r in t.rules:
        scores = ", ".join(f"{m.value} {v:+g}" for m, v in r.scores.items())
        rows.append([code(r.id), rulebook.describe(r.when), scores, r.rationale, r.source])
    out.append(table(["rule", "when", "points", "why", "source"], rows))
    if t.exclusions:
        out.append("**Exclusions** (the method is listed as not recommended, with the reason)\n")
        rows = [[code(e.id), rulebook.describe(e.when), ", ".join(m.value for m in e.methods),
                 e.reason, e.source] for e in t.exclusions]
        out.append(table(["exclusion", "when", "methods", "reason", "source"], rows))
    return "\n".join(out)


def gen_memory_constants() -> str:
    """budget_memory: the documented constants it adds on top of the formulas."""
    data = load("memory_constants.yaml")
    rows = [[code(name), c.get("value"), c.get("unit", ""), c.get("rationale", ""), c.get("source", "")]
            for name, c in data["constants"].items()]
    return ("Source: `advisor/data/memory_constants.yaml` (loaded by `advisor.memory`).\n\n"
            + table(["constant", "value", "unit", "why", "source"], rows))


def gen_framework_facts() -> str:
    """choose_framework: the method x framework support matrix, per framework and release."""
    if not (DATA / "framework_facts.yaml").is_file():
        raise MissingSource("advisor/data/framework_facts.yaml")
    from advisor.choose_framework import load_framework_facts
    from advisor.plan import Method

    load_framework_facts.cache_clear()
    t = load_framework_facts()
    fws = list(t.frameworks)
    symbol = {"full": "✔", "partial": "partial", "experimental": "experimental", "none": "✘"}
    rows = []
    for m in Method:
        rows.append([code(m.value)] + [symbol[t.support(f, m).support] for f in fws])
    out = ["Source: `advisor/data/framework_facts.yaml`, as loaded by choose_framework "
           f"(support points: {', '.join(f'{k} {v:g}' for k, v in t.support_points.items())}).\n",
           table(["method"] + [t.frameworks[f].label for f in fws], rows)]
    rows = [[t.frameworks[f].label, t.frameworks[f].release_checked,
             "yes" if t.frameworks[f].verified else "no (seed guide only)",
             "yes" if t.frameworks[f].renderable else "no", ", ".join(t.frameworks[f].accelerators),
             t.frameworks[f].summary] for f in fws]
    out.append(table(["framework", "release checked", "verified against the release", "render_config",
                      "accelerators", "summary"], rows))
    rows = []
    for f in fws:
        for m, s in t.frameworks[f].methods.items():
            if s.support in ("partial", "experimental") and s.note:
                rows.append([t.frameworks[f].label, code(m.value), s.support, s.note])
    if rows:
        out.append("What *partial* and *experimental* mean in each case:\n")
        out.append(table(["framework", "method", "support", "note"], rows))
    return "\n".join(out)


def gen_framework_rules() -> str:
    """choose_framework: the scoring rules over scale, accelerator, shop and priority, and vetoes."""
    if not (DATA / "framework_facts.yaml").is_file():
        raise MissingSource("advisor/data/framework_facts.yaml")
    from advisor import rulebook
    from advisor.choose_framework import load_framework_facts

    load_framework_facts.cache_clear()
    t = load_framework_facts()
    out = ["Source: `advisor/data/framework_facts.yaml`, as loaded by choose_framework. A framework "
           "scores its support level for the method plus every rule below whose condition holds; "
           "an exclusion removes it with the reason (the \"why not\").\n"]
    rows = [[code(r.id), rulebook.describe(r.when), ", ".join(f"{f.value} {v:+g}" for f, v in r.scores.items()),
             r.rationale, r.source] for r in t.rules]
    out.append(table(["rule", "when", "points", "why", "source"], rows))
    rows = [[code(e.id), rulebook.describe(e.when), ", ".join(f.value for f in e.frameworks), e.reason, e.source]
            for e in t.exclusions]
    out.append(table(["exclusion", "when", "frameworks", "reason", "source"], rows))
    return "\n".join(out)


FRAMEWORK_LABELS = {"verl": "veRL", "openrlhf": "OpenRLHF", "trl": "TRL", "nemo_rl": "NeMo-RL"}


def fix_key(framework: str, key: str, value: Any = None, scope: str | None = None) -> str:
    """One framework setting as it is written on that framework's command line or config file."""
    value = "" if value is None else str(value)
    if framework == "openrlhf":
        return code(f"{key} {value}".strip())
    if framework == "trl":
        name = f"{scope}.{key}" if scope else key
        return code(f"{name}={value}" if value else name)
    return code(f"{key}={value}" if value != "" else key)


def gen_memory_fix_ladder() -> str:
    """budget_memory: the fix ladder, cheapest first, with each framework's keys."""
    data = load("memory_fixes.yaml")
    rows = []
    for i, fix in enumerate(data["fixes"], 1):
        change = ", ".join(f"{k} → {v}" for k, v in (fix.get("plan_change") or {}).items())
        if fix.get("requires"):
            change += " (only when " + ", ".join(f"{k} = {v}" for k, v in fix["requires"].items()) + ")"
        keys = []
        for fw, mapping in (fix.get("keys") or {}).items():
            shown = ", ".join(fix_key(fw, k, v) for k, v in (mapping or {}).items())
            keys.append(f"{FRAMEWORK_LABELS.get(fw, fw)}: {shown}")
        rows.append([i, code(fix["id"]), fix.get("what", ""), change, "<br>".join(keys), fix.get("cost", ""),
                     fix.get("source", "")])
    return ("Source: `advisor/data/memory_fixes.yaml` (budget_memory applies the rungs in this order and "
            "re-budgets after each; `{new}` is the new Plan value).\n\n"
            + table(["#", "fix", "what", "Plan change", "framework keys", "cost", "source"], rows))


def gen_diagnosis_taxonomy() -> str:
    """diagnose_run: every category a finding can carry."""
    data = load("diagnosis_taxonomy.yaml")
    rows = [[code(name), c.get("group", ""), c.get("title", ""), c.get("description", ""),
             ", ".join(c.get("aliases", []) or [])]
            for name, c in data["categories"].items()]
    return ("Source: `advisor/data/diagnosis_taxonomy.yaml`.\n\n"
            + table(["category", "group", "title", "meaning", "also called"], rows))


def _params(params: dict[str, Any] | None) -> str:
    return ", ".join(f"{k} = {v}" for k, v in (params or {}).items())


def gen_diagnosis_rules() -> str:
    """diagnose_run: metric rules with their thresholds, cause and per-framework fixes."""
    data = load("diagnosis_rules.yaml")
    out = ["Source: `advisor/data/diagnosis_rules.yaml` (checks in `advisor/diagnosis`).\n"]
    rows = [[code(r["id"]), code(r["category"]), r.get("severity", ""), _params(r.get("params")),
             r.get("rationale", ""), r.get("likely_cause", ""), r.get("source", "")]
            for r in data["rules"]]
    out.append(table(["rule", "category", "severity", "thresholds", "why", "likely cause", "source"], rows))
    out.append("Fixes per rule, as exact keys for each framework (the same ones diagnose_run returns):\n")
    rows = []
    for r in data["rules"]:
        for fw, fixes in (r.get("fixes") or {}).items():
            if not fixes:
                continue
            rows.append([code(r["id"]), FRAMEWORK_LABELS.get(fw, fw), _fix_list(fw, fixes)])
    out.append(table(["rule", "framework", "change"], rows))
    return "\n".join(out)


def _fix_list(framework: str, fixes: list[dict[str, Any]] | None) -> str:
    shown = []
    for f in fixes or []:
        text = fix_key(framework, f["key"], f.get("value"), f.get("scope"))
        shown.append(text + (f" ({f['note']})" if f.get("note") else ""))
    return "; ".join(shown)


def gen_diagnosis_signatures() -> str:
    """diagnose_run: log signatures, OOM phase attribution and their fixes."""
    data = load("diagnosis_signatures.yaml")
    oom = data.get("oom", {})
    out = ["Source: `advisor/data/diagnosis_signatures.yaml` (scanned by `advisor/diagnosis`).\n",
           f"**GPU out-of-memory, by phase.** An OOM line (e.g. {', '.join(code(p) for p in oom.get('gpu_patterns', [])[:3])}) "
           f"is attributed to the phase whose frame markers appear in the {oom.get('lookback_lines', '')} lines "
           "before it; the first phase listed wins.\n"]
    rows = [[code(ph["category"]), ", ".join(code(m) for m in ph.get("markers", [])),
             (oom.get("causes") or {}).get(ph["category"], "")] for ph in oom.get("phases", [])]
    out.append(table(["category", "frame markers", "cause"], rows))
    rows = []
    for category, per_fw in (oom.get("fixes") or {}).items():
        for fw, fixes in (per_fw or {}).items():
            if fixes:
                rows.append([code(category), FRAMEWORK_LABELS.get(fw, fw), _fix_list(fw, fixes)])
    if rows:
        out.append("OOM fixes per phase:\n")
        out.append(table(["category", "framework", "change"], rows))
    out.append("**Other signatures.**\n")
    rows = [[code(s["id"]), code(s["category"]), s.get("severity", ""),
             "<br>".join(code(p) for p in s.get("patterns", [])), s.get("cause", ""), s.get("source", "")]
            for s in data.get("signatures", [])]
    out.append(table(["signature", "category", "severity", "patterns (Python regex)", "cause", "source"], rows))
    rows = []
    for s in data.get("signatures", []):
        for fw, fixes in (s.get("fixes") or {}).items():
            if fixes:
                rows.append([code(s["id"]), FRAMEWORK_LABELS.get(fw, fw), _fix_list(fw, fixes)])
    if rows:
        out.append("Fixes per signature:\n")
        out.append(table(["signature", "framework", "change"], rows))
    return "\n".join(out)


GENERATORS: dict[str, Callable[[], str]] = {
    "method-rules": gen_method_rules,
    "memory-constants": gen_memory_constants,
    "framework-facts": gen_framework_facts,
    "framework-rules": gen_framework_rules,
    "memory-fix-ladder": gen_memory_fix_ladder,
    "diagnosis-taxonomy": gen_diagnosis_taxonomy,
    "diagnosis-rules": gen_diagnosis_rules,
    "diagnosis-signatures": gen_diagnosis_signatures,
}


# --------------------------------------------------------------------------- driver


def render_block(name: str) -> str:
    gen = GENERATORS.get(name)
    if gen is None:
        raise KeyError(f"no generator for block {name!r}; known: {sorted(GENERATORS)}")
    try:
        body = gen()
    except MissingSource as exc:
        body = f"_Generated from `{exc}` once that file exists._\n"
    return body if body.endswith("\n") else body + "\n"


def regenerate_text(text: str) -> str:
    return BLOCK.sub(lambda m: m["begin"] + render_block(m["name"]) + m["end"], text)


def blocks_in(text: str) -> list[str]:
    return [m["name"] for m in BLOCK.finditer(text)]


def regenerate_all() -> dict[Path, str]:
    """Every guide page (and SKILL.md) with its generated blocks freshly rendered."""
    pages = sorted(GUIDE.rglob("*.md")) + [REPO / "SKILL.md"]
    return {p: regenerate_text(p.read_text(encoding="utf-8")) for p in pages if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report stale blocks, change nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, new in regenerate_all().items():
        if path.read_text(encoding="utf-8") != new:
            stale.append(path.relative_to(REPO).as_posix())
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print("stale generated blocks in: " + ", ".join(stale), file=sys.stderr)
        print("run: python scripts/regenerate_docs.py", file=sys.stderr)
        return 1
    for name in stale if not args.check else []:
        print(f"regenerated {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
