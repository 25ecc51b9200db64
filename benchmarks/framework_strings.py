"""Recall of diagnose_run on the frameworks' own error messages, read from their installed sources.

Why: hidden real logs end in error strings the rules have never seen. The frameworks' config
validation and run-failure paths are finite and readable, so their messages are a fair, reproducible
probe: every `raise XError("...")` / `raise XError(f"...")` / `assert cond, "..."` in the RL post-training
modules below is turned into the last line of a traceback (`ValueError: <message>`, f-string
placeholders filled with plausible values) and diagnosed alone. A message counts as recalled when the
first finding is error-level and of the message's EXPECTED category.

The expected category comes from one written-down rule (EXPECT below, first match wins) on the message's
own words, never from a per-message list: messages that fit none of its classes are excluded and counted.

The split is by framework, fixed before any rule was changed (round 8): TRL and veRL are the part the
rules were decided on ("dev"); OpenRLHF, transformers, accelerate and PEFT are held out ("held-out").
DeepSpeed and vLLM are not installed in the project's virtual environments and are not measured.

Run (from the repository root):
    PYTHONPATH=$PWD /work/main/.venv/bin/python benchmarks/framework_strings.py [--misses] [--part dev|held-out]
Nothing per message is stored; the table is printed.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

from advisor.diagnosis import diagnose_text

MAIN_SP = Path(sys.prefix).parent / ".venv" / "lib" / "python3.11" / "site-packages"
VERL_SP = Path(sys.prefix).parent / ".venv-verl" / "lib" / "python3.11" / "site-packages"


def _site(name: str) -> Path:
    """The package's site-packages folder: the shared venv, veRL from its own venv (veRL 0.9.1 pins)."""
    for sp in ((VERL_SP, MAIN_SP) if name == "verl" else (MAIN_SP,)):
        if (sp / name).exists():
            return sp
    return MAIN_SP


# framework -> (package, glob patterns of the RL post-training config/trainer/rollout/worker modules), split part
SOURCES: dict[str, tuple[str, list[str], str]] = {
    "trl": ("trl", ["trainer/grpo_*.py", "trainer/dpo_*.py", "trainer/rloo_*.py", "trainer/base_*.py",
                    "trainer/reward_*.py", "trainer/utils.py", "experimental/ppo/*.py", "generation/*.py"], "dev"),
    "verl": ("verl", ["trainer/ppo/*.py", "trainer/main_ppo.py", "workers/*.py", "workers/config/*.py",
                      "workers/rollout/*.py", "workers/rollout/*/*.py", "workers/engine/*.py",
                      "workers/engine/*/*.py", "utils/config.py", "trainer/config/*.py"], "dev"),
    "openrlhf": ("openrlhf", ["cli/train_*.py", "trainer/*.py", "trainer/ray/*.py", "trainer/ppo_utils/*.py",
                              "utils/deepspeed/*.py"], "held-out"),
    "transformers": ("transformers", ["training_args.py", "trainer.py", "trainer_utils.py",
                                      "generation/configuration_utils.py"], "held-out"),
    "accelerate": ("accelerate", ["accelerator.py", "utils/dataclasses.py", "state.py"], "held-out"),
    "peft": ("peft", ["tuners/lora/config.py", "mapping_func.py", "peft_model.py"], "held-out"),
}

# The one rule that assigns an expected category to a message (lower-cased), first match wins.
# Each class is the taxonomy's description in the frameworks' own vocabulary (advisor/data/diagnosis_taxonomy.yaml).
EXPECT: list[tuple[str, str]] = [
    # prompt + response against the model's context (taxonomy: max_prompt_length + max_response_length exceeds ...)
    ("sequence_length_exceeds_model",
     r"max_model_len|max_position_embeddings|context (?:length|window)|model'?s? max(?:imum)? (?:length|len)"
     r"|(?:longer|greater|larger) than the maximum (?:sequence|model) length"),
    # batch arithmetic: divisibility, multiples, batch sizes and accumulation steps
    ("batch_size_misconfig", r"divisib|divided by|multiple of|batch[_ ]?size|micro_batch|mini_batch|num_generations"
                             r"|gradient_accumulation|accumulation steps"),
    # GPU memory
    ("oom_gpu", r"out of memory"),
    # a key/argument/option the schema rejects: unknown, unexpected, unsupported, invalid choice, missing or
    # required, mutually exclusive options
    ("config_key_error", r"\bunknown\b|\bunexpected (?:key|keyword|argument|config|option|field|value)"
                         r"|not supported|unsupported|\binvalid\b|must be one of|should be one of|expected one of"
                         r"|not a valid|\bmissing\b|\brequired\b|must be (?:set|specified|provided)"
                         r"|mutually exclusive|cannot be (?:used|set|enabled|specified) (?:together|with|at the same time|when)"
                         r"|can ?not be (?:used|set|enabled|specified) (?:together|with|at the same time|when)"
                         r"|(?:is|are) only (?:supported|available|compatible)|not (?:yet )?implemented for|only support"),
]
_EXPECT = [(c, re.compile(p)) for c, p in EXPECT]

_NUMERIC = re.compile(r"size|batch|num|steps|len|length|world|rank|count|dp|tp|sp|n_|gpus|nodes|ratio|epoch", re.I)


def _fill(node: ast.AST) -> str:
    """A plausible value for an f-string placeholder: a number for sizes/counts, else the variable's name."""
    src = ast.unparse(node)
    last = re.split(r"[.\[\(]", src.rstrip(")]"))[-1] or src
    last = re.sub(r"\W", "", last.split(".")[-1]) or "value"
    return "8" if _NUMERIC.search(last) else last


def _text(node: ast.AST | None) -> str | None:
    """The message template of a str constant, f-string, implicit/explicit concatenation or '...'.format()/% call."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                out.append(_fill(v.value))
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _text(node.left), _text(node.right)
        return (a or "") + (b or "") if (a or b) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _text(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = _text(node.func.value)
        return re.sub(r"\{[^{}]*\}", "8", base) if base else None
    return None


def extract(path: Path) -> list[tuple[str, str, int]]:
    """(exception class, message, line) of every raise/assert with a readable message in one file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return []
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call) and n.exc.args:
            f = n.exc.func
            cls = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            msg = _text(n.exc.args[0])
        elif isinstance(n, ast.Assert) and n.msg is not None:
            cls, msg = "AssertionError", _text(n.msg)
        else:
            continue
        if cls and msg and len(msg.strip()) >= 12 and (cls.endswith("Error") or cls.endswith("Exception")):
            out.append((cls, " ".join(msg.split()), n.lineno))
    return out


def expected(msg: str) -> str | None:
    low = msg.lower()
    for cat, rx in _EXPECT:
        if rx.search(low):
            return cat
    return None


def collect() -> list[dict]:
    rows, seen = [], set()
    for fw, (pkg, globs, part) in SOURCES.items():
        root = _site(pkg) / pkg
        files = sorted({p for g in globs for p in root.glob(g)})
        for path in files:
            for cls, msg, line in extract(path):
                if (fw, msg) in seen:
                    continue
                seen.add((fw, msg))
                rows.append({"fw": fw, "part": part, "cls": cls, "msg": msg, "where": f"{path.relative_to(root.parent)}:{line}",
                             "expected": expected(msg)})
    return rows


def judge(row: dict) -> tuple[bool, str]:
    findings = diagnose_text(f"{row['cls']}: {row['msg']}\n").findings
    first = findings[0] if findings else None
    got = f"{first.category}/{first.severity}" if first else "-"
    return bool(first and first.category == row["expected"] and first.severity == "error"), got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--misses", action="store_true", help="print each missed message (for rule work on the dev part)")
    ap.add_argument("--part", choices=["dev", "held-out"], help="print misses of this part only")
    args = ap.parse_args()
    rows = collect()
    excluded = defaultdict(int)
    table: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["expected"] is None:
            excluded[r["fw"]] += 1
            continue
        ok, got = judge(r)
        for key in ((r["fw"], r["expected"]), (r["fw"], "ALL"), (f"[{r['part']}]", r["expected"]), (f"[{r['part']}]", "ALL")):
            table[key][0] += ok
            table[key][1] += 1
        if args.misses and not ok and (args.part is None or args.part == r["part"]):
            print(f"MISS {r['fw']:12s} {r['expected']:30s} got {got:34s} {r['cls']}: {r['msg'][:200]}  ({r['where']})")
    print(f"{'framework/part':16s} {'category':32s} {'recall':>12s}")
    for (fw, cat), (ok, n) in sorted(table.items(), key=lambda kv: (kv[0][0].startswith("["), kv[0][0], kv[0][1] != "ALL", kv[0][1])):
        print(f"{fw:16s} {cat:32s} {ok:4d}/{n:<4d} {100 * ok / n:5.1f}%")
    print("excluded (no category by EXPECT): " + ", ".join(f"{fw} {n}" for fw, n in sorted(excluded.items()))
          + f"; messages read: {len(rows)}")
    print("parts: dev = trl, verl (rules decided on these); held-out = openrlhf, transformers, accelerate, peft")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
