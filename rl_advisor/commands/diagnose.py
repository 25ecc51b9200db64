"""`rl-advisor diagnose FILE... [--json] [--html OUT] [--plan FILE]`: diagnose a run from its logs.

FILE is any log the readers understand (veRL console/JSONL, TRL trainer_state.json / console /
metrics.jsonl, OpenRLHF, NeMo-RL, a traceback or stderr, markdown with embedded logs), a
TensorBoard directory, or a run directory; several FILEs are read as one run. ``--run-id`` reads a
run of the registry instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "diagnose", help="Diagnose an RL run from its log files: ranked findings, evidence, exact fixes.",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", metavar="FILE", help="log file(s), TensorBoard dir or run dir")
    p.add_argument("--run-id", help="diagnose a run of the registry instead of files")
    p.add_argument("--plan", metavar="FILE", help="Plan YAML: framework and max_response_length context")
    p.add_argument("--framework", choices=["verl", "openrlhf", "trl", "nemo_rl"],
                   help="framework for the fix keys (detected when absent)")
    p.add_argument("--json", action="store_true", help="print the Diagnosis as JSON (findings in rank order)")
    p.add_argument("--html", metavar="OUT", help="also write a self-contained HTML report with metric plots")
    p.add_argument("--exclude-source", action="append", default=[], metavar="URL",
                   help="leave the known cases of this thread out of the similar-case search (for measuring "
                   "accuracy on a case of the corpus; repeatable)")
    p.set_defaults(_run=_run)


def _run(ns: argparse.Namespace) -> int:
    from advisor.errors import AdvisorError
    from advisor.plan import plan_from_yaml
    from rl_advisor.diagnose_tool import diagnose_path, diagnose_run_record

    try:
        plan = None
        if ns.plan:
            from rl_advisor.safe_paths import read_input_file

            plan = plan_from_yaml(read_input_file(ns.plan, field="--plan"))
        if ns.run_id and ns.files:
            raise AdvisorError("give FILE(s) or --run-id, not both", field="FILE|--run-id")
        if ns.run_id:
            diag = diagnose_run_record(ns.run_id, plan, ns.framework)
        elif ns.files:
            diag = diagnose_path(list(ns.files), plan, ns.framework, ns.exclude_source)
        else:
            raise AdvisorError("nothing to diagnose", field="FILE", allowed="a log file, a directory, or --run-id")
    except AdvisorError as exc:
        if ns.json:
            print(json.dumps(exc.to_dict(), indent=2))
        print("error: invalid input", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from advisor.secrets import scrub_obj

    diag = scrub_obj(diag)  # evidence quotes log lines: the one scrubber runs before any output
    if ns.html:
        from rl_advisor.report_html import write_html

        title = f"rl-advisor diagnosis: {ns.run_id or ', '.join(Path(f).name for f in ns.files)}"
        out = write_html(diag, ns.html, title=title)
        if not ns.json:
            print(f"HTML report: {out}", file=sys.stderr)
    if ns.json:
        print(diag.model_dump_json(indent=2))
    else:
        print(diag.to_text())
    return 0
