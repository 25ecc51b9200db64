"""``rl-advisor memory-check``: budget_memory for a Plan file or an existing framework config
file, with an optional picture (stacked bars per phase and pool, PNG + SVG)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "memory-check", help="Will it fit? budget_memory for --plan FILE or --config FILE (veRL/OpenRLHF/TRL), "
        "optionally drawn with --plot PREFIX",
        description=__doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--plan", metavar="FILE", help="Plan YAML (- for stdin)")
    src.add_argument("--config", metavar="FILE", help="veRL launch script, OpenRLHF command line or TRL config YAML (- for stdin)")
    p.add_argument("--framework", choices=["verl", "openrlhf", "trl"], help="framework of --config (detected when absent)")
    p.add_argument("--gpu", help="GPU type for --config (a config does not say which GPU)")
    p.add_argument("--mean-prompt-length", type=int, help="typical prompt tokens (remove-padding memory follows them)")
    p.add_argument("--mean-response-length", type=int, help="typical response tokens")
    p.add_argument("--plot", metavar="PREFIX", help="write PREFIX.png and PREFIX.svg")
    p.add_argument("--json", action="store_true", help="print the structured result")
    p.set_defaults(_run=run)


def run(ns: argparse.Namespace) -> int:
    from advisor.errors import AdvisorError
    from advisor.memory import budget_memory
    from rl_advisor.config_budget import budget_memory_from_config
    from advisor.plan import plan_from_yaml

    try:
        from rl_advisor.cli import read_input

        text = read_input(ns.plan or ns.config, "--plan" if ns.plan else "--config")
        if ns.plan:
            from rl_advisor.model_source import resolve_plan_models

            result = budget_memory(resolve_plan_models(plan_from_yaml(text)))
            budget = result
        else:
            result = budget_memory_from_config(text, ns.framework, ns.gpu, ns.mean_prompt_length,
                                               ns.mean_response_length)
            budget = result.budget
    except AdvisorError as exc:
        print("error: invalid input", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    print(result.model_dump_json(indent=2) if ns.json else result.to_text())
    if ns.plot:
        from rl_advisor.plots import plot_memory

        for out in plot_memory(budget, ns.plot):
            print(f"wrote {out}", file=sys.stderr)
    return 0 if budget.fits else 1
