#!/usr/bin/env python3
"""Regenerate the guide's tables from the tools' own data files (one source of truth).

The guide carries blocks like::

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
    return f"`{value}`"


def guide_link(ref: str | None, here: str) -> str:
    """A guide reference ('guide/x.md#anchor') as a link relative to the page ``here``."""
    if not ref:
        return ""
    path, _, anchor = ref.partition("#")
    page = path.removeprefix("guide/")
    if page == here:
        target = f"#{anchor}" if anchor else page
    else:
        target = page + (f"#{anchor}" if anchor else "")
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
                     guide_link(m.guide_section, "decision-guides.md")])
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


def pending(*files: str) -> Callable[[], str]:
    """A block whose data file has not landed yet: generated as a pointer until it does."""
    def gen() -> str:
        for name in files:
            load(name)
        raise KeyError(f"{files} exist now: write the generator for them")
    return gen


GENERATORS: dict[str, Callable[[], str]] = {
    "method-rules": gen_method_rules,
    "memory-constants": gen_memory_constants,
    "framework-facts": pending("framework_facts.yaml"),
    "framework-rules": pending("framework_facts.yaml"),
    "memory-fix-ladder": pending("memory_fixes.yaml"),
    "diagnosis-taxonomy": pending("diagnosis_taxonomy.yaml"),
    "diagnosis-rules": pending("diagnosis_rules.yaml"),
    "diagnosis-signatures": pending("diagnosis_signatures.yaml"),
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
    pages = sorted(GUIDE.glob("*.md")) + [REPO / "SKILL.md"]
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
