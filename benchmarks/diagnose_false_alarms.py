"""False alarms of diagnose_run on text that is not a failure report, read from the installed frameworks.

Why: a rule that reads a wording (a batch size "must be divisible by", an OOM that "may" happen) can fire
on documentation and on a framework's routine messages just as well as on a user's report. The
frameworks' own non-failure strings are a large, reproducible set of exactly such near misses, so they
measure how often a rule turns prose into an error finding. Two sweeps, each counting the texts that
get at least one error-level finding (the similar-known-cases fallback never gives errors):

* ``info``: every ``logger.info/warning/warning_once/info_once/debug(...)`` message (f-string placeholders
  filled with ``7``) of TRL, OpenRLHF, veRL, Ray (train, _private, util), transformers' Trainer,
  accelerate, DeepSpeed and torch.distributed, diagnosed as a bare line and behind a logging prefix.
  Such a message may be a real failure report (all reward functions returned None, a dead actor), so
  each error finding is listed for reading, not assumed wrong.
* ``help``: every configuration help text (``help=...`` of a dataclass field or argparse option) and
  every class/function docstring paragraph of TRL, transformers' TrainingArguments, OpenRLHF, veRL and
  accelerate's dataclasses, diagnosed as a description (``# text``) and as a plain line. None of them is
  a failure report: every error finding is a false alarm.

Packages are found with importlib on the running interpreter's sys.path; a package missing there is skipped and
named. The project keeps veRL in its own environment beside the shared one (``.venv-verl``); its
site-packages is read too when present (``--extra-site`` names another).

Run (from the repository root; about 5 minutes on one core):
    PYTHONPATH=$PWD .venv/bin/python benchmarks/diagnose_false_alarms.py [--sweep info|help|both] [--show]
It prints the number of texts, the number with an error finding and, with --show, each of them (where it
was read, the text, the findings).
"""

from __future__ import annotations

import argparse
import ast
import importlib.machinery
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's code, not an installed copy

from advisor.diagnosis import diagnose_text  # noqa: E402

# (package, sub-path inside it or "" for the whole package)
INFO_ROOTS = [("trl", ""), ("openrlhf", ""), ("verl", ""), ("ray", "train"), ("ray", "_private"), ("ray", "util"),
              ("transformers", "trainer.py"), ("transformers", "trainer_utils.py"), ("transformers", "training_args.py"),
              ("accelerate", ""), ("deepspeed", ""), ("torch", "distributed")]
HELP_ROOTS = [("trl", ""), ("transformers", "training_args.py"), ("openrlhf", ""), ("verl", ""),
              ("accelerate", "utils/dataclasses.py")]
LEVELS = {"info", "warning", "warn", "warning_once", "info_once", "debug"}
VERL_VENV_SITE = Path(sys.prefix).parent / ".venv-verl" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def package_dir(name: str) -> Path | None:
    """The installed package's folder, found by importlib on sys.path without importing it (PathFinder, not
    importlib.util.find_spec: a module already in sys.modules, e.g. a test's stand-in, has no usable spec)."""
    spec = importlib.machinery.PathFinder.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def roots(table: list[tuple[str, str]], extra_sites: list[Path]) -> tuple[list[Path], list[str]]:
    found, missing = [], []
    for pkg, sub in table:
        dirs = [d for d in [package_dir(pkg)] + [s / pkg for s in extra_sites] if d is not None and d.exists()]
        if not dirs:
            missing.append(pkg)
        for d in dirs:
            p = d / sub if sub else d
            if p.exists() and p not in found:
                found.append(p)
    return found, sorted(set(missing))


def py_files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for d, _, fs in os.walk(root):
        for f in sorted(fs):
            if f.endswith(".py"):
                yield Path(d) / f


def parsed(roots_: list[Path]) -> Iterator[tuple[Path, ast.AST]]:
    for root in roots_:
        for f in py_files(root):
            try:
                yield f, ast.parse(f.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue


def _text_of(node: ast.AST) -> str | None:
    """A log call's message: a string, an f-string (placeholders as 7), or a string joined with + / %."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "7" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        a = _text_of(node.left)
        b = _text_of(node.right) if isinstance(node.op, ast.Add) else ""
        return a + (b or "") if a else None
    return None


def info_strings(roots_: list[Path]) -> dict[str, str]:
    seen: dict[str, str] = {}
    for f, tree in parsed(roots_):
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in LEVELS and n.args:
                t = _text_of(n.args[0])
                if t and len(t) > 15:
                    seen.setdefault(" ".join(t.split()), f"{f}:{n.lineno}:{n.func.attr}")
    return seen


def help_texts(roots_: list[Path]) -> dict[str, str]:
    seen: dict[str, str] = {}
    for f, tree in parsed(roots_):
        for n in ast.walk(tree):
            t = None
            if isinstance(n, ast.keyword) and n.arg == "help" and isinstance(n.value, ast.Constant):
                t = n.value.value
            elif isinstance(n, ast.Dict):
                for k, v in zip(n.keys, n.values):
                    if isinstance(k, ast.Constant) and k.value == "help" and isinstance(v, ast.Constant):
                        t = v.value
            elif isinstance(n, (ast.ClassDef, ast.FunctionDef)):
                t = ast.get_docstring(n)
            if not isinstance(t, str) or len(t) < 20:
                continue
            for para in t.split("\n\n"):
                p = " ".join(para.split())
                if len(p) > 20:
                    seen.setdefault(p[:1500], f"{f}:{getattr(n, 'lineno', 0)}")
    return seen


def error_findings(text: str) -> list[tuple[str, str]]:
    return [(f.category, f.rule) for f in diagnose_text(text).findings if f.severity == "error"]


def sweep(texts: dict[str, str], variants) -> list[tuple[str, str, list[tuple[str, str]]]]:
    bad = []
    for s, where in texts.items():
        for text in variants(s):
            errs = error_findings(text)
            if errs:
                bad.append((where, s, errs))
                break
    return bad


SWEEPS = {
    "info": (INFO_ROOTS, info_strings, lambda s: (s + "\n", f"WARNING 12-01 10:00:00 [x.py:1] {s}\n")),
    "help": (HELP_ROOTS, help_texts, lambda s: ("# " + s + "\n", s + "\n")),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", choices=["info", "help", "both"], default="both")
    ap.add_argument("--show", action="store_true", help="print each text with an error finding")
    ap.add_argument("--extra-site", type=Path, action="append", default=None,
                    help="another site-packages to read the same packages from (default: .venv-verl's, when present)")
    args = ap.parse_args(argv)
    extra = args.extra_site if args.extra_site is not None else [VERL_VENV_SITE] if VERL_VENV_SITE.exists() else []
    for name in (["info", "help"] if args.sweep == "both" else [args.sweep]):
        table, collect, variants = SWEEPS[name]
        roots_, missing = roots(table, extra)
        texts = collect(roots_)
        bad = sweep(texts, variants)
        print(f"{name}: {len(texts)} texts, {len(bad)} with an error finding"
              + (f" (not installed: {', '.join(missing)})" if missing else ""))
        if args.show:
            for where, s, errs in bad:
                print("  " + json.dumps({"where": where, "text": s[:300], "errors": errs}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
