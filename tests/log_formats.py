"""Test helpers: the same metric records written in every format a user pastes, and the same crash
log wrapped in the prefixes real runs put in front of every line.

Used by tests/test_diagnosis_format_invariance.py and benchmarks/diagnose_formats.py. Each writer
writes its format the way the framework or tool writes it (the source is named in its docstring),
keeping the metric names as the run logged them: only a format that itself renames columns does so
(a W&B chart export names a column ``<run> - <metric>``).

A record is ``(step, {raw key: value})``; values are floats (NaN and Inf included).
"""

from __future__ import annotations

import csv
import io
import json
import math
import pprint
import re
from pathlib import Path
from typing import Callable, Iterable

Record = tuple[int, dict[str, float]]


def _num(v: float) -> float | int:
    """A logged number as the framework had it: integral values were usually ints."""
    return int(v) if math.isfinite(v) and v == int(v) and abs(v) < 1e15 else v


def _keys(records: list[Record]) -> list[str]:
    keys: dict[str, None] = {}
    for _, raw in records:
        keys.update(dict.fromkeys(raw))
    return list(keys)


# ----------------------------------------------------------------------------- line formats


def verl_console(records: list[Record]) -> str:
    """veRL's console logger: ``verl/utils/logger/aggregate_logger.py: concat_dict_to_str`` joins
    ``f"step:{step}"`` and ``f"{k}:{pprint.pformat(v)}"`` with `` - ``; reduced metrics are numpy
    scalars, which numpy 2 prints as ``np.float64(x)``."""
    import numpy as np

    return "".join(" - ".join([f"step:{step}"] + [f"{k}:{pprint.pformat(np.float64(v))}" for k, v in raw.items()])
                   + "\n" for step, raw in records)


def trl_console(records: list[Record]) -> str:
    """The transformers Trainer's console record (TRL trainers log through it):
    ``transformers/trainer_callback.py: ProgressCallback.on_log`` formats floats as ``f"{v:.4g}"``
    strings and writes ``str(logs)`` (a Python dict) under the tqdm bar; ``epoch`` is in every log."""
    lines = []
    for step, raw in records:
        logs = {k: f"{v:.4g}" if isinstance(_num(v), float) else _num(v) for k, v in raw.items()}
        logs.setdefault("epoch", f"{step / 100:.4g}")
        lines.append(str(logs) + "\n")
    return "".join(lines)


def flat_jsonl(records: list[Record]) -> str:
    """One flat JSON object per log with ``step`` (TRL's ``JSONLCallback``-style metric files, a
    W&B ``history`` line); ``json.dumps`` writes NaN/Infinity as the JavaScript literals."""
    return "".join(json.dumps({"step": step, **{k: _num(v) for k, v in raw.items()}}) + "\n" for step, raw in records)


def verl_jsonl(records: list[Record]) -> str:
    """veRL's ``file`` logger (``verl/utils/tracking.py: FileLogger.log``):
    ``json.dumps({"step": step, "data": data})`` per line."""
    return "".join(json.dumps({"step": step, "data": {k: _num(v) for k, v in raw.items()}}) + "\n"
                   for step, raw in records)


def key_value(records: list[Record]) -> str:
    """``key: value`` pairs separated by spaces on one line (a hand-written or scripted summary, as
    pasted in issues): ``step: 3   reward: 0.1   kl: 0.02``."""
    return "".join("   ".join([f"step: {step}"] + [f"{k}: {_num(v)}" for k, v in raw.items()]) + "\n"
                   for step, raw in records)


def tqdm_postfix(records: list[Record]) -> str:
    """OpenRLHF's progress bars: ``openrlhf/trainer/*_trainer.py`` call ``step_bar.set_postfix(logs)``;
    tqdm (``tqdm/std.py: set_postfix, format_meter``) formats numbers with ``format_num`` (``.3g``)
    and redraws the bar after a carriage return, one line for the whole loop."""
    from tqdm import tqdm

    total = max(step for step, _ in records) + 1
    bars = []
    for step, raw in records:
        postfix = ", ".join(f"{k}={tqdm.format_num(_num(v))}" for k, v in raw.items())
        bars.append(tqdm.format_meter(step, total, elapsed=3.1 * step, ncols=None, prefix="Train step of epoch 0",
                                      postfix=postfix, ascii=False))
    return "\r" + "\r".join(bars) + "\n"


def nemo_rl_console(records: list[Record]) -> str:
    """NeMo-RL's GRPO console (``nemo_rl/algorithms/grpo.py``): a ``===== Step N/M =====`` header,
    then ``📊 Training Results:`` and ``  • Name: value`` lines. NeMo-RL prints its own names there
    (``Loss``, ``Avg Reward``); the records here keep their keys, each on a ``  • key: value`` line
    with NeMo-RL's ``:.4f``."""
    total = max(step for step, _ in records)
    out = []
    for step, raw in records:
        out.append(f"\n{'=' * 25} Step {step}/{total} {'=' * 25}\n")
        out.append("\n📊 Training Results:\n")
        out.extend(f"  • {k}: {v:.4f}\n" for k, v in raw.items())
    return "".join(out)


def markdown_table(records: list[Record]) -> str:
    """A Markdown table (a W&B run table or a DataFrame pasted into an issue): a header row, the
    ``|---|`` rule, one row per step; a metric a step did not log is an empty cell."""
    keys = _keys(records)
    rows = ["| step | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 1)]
    rows += ["| " + " | ".join([str(step)] + [str(_num(raw[k])) if k in raw else "" for k in keys]) + " |"
             for step, raw in records]
    return "\n".join(rows) + "\n"


def whitespace_table(records: list[Record]) -> str:
    """A plain table of aligned columns (``pandas.DataFrame.to_string(index=False)``, a terminal
    copy): a header row of metric names, numeric rows; a missing value prints ``NaN`` in pandas,
    written ``-`` here so that it is not read as a non-finite metric."""
    keys = _keys(records)
    cells = [["step", *keys]] + [[str(step)] + [str(_num(raw[k])) if k in raw else "-" for k in keys]
                                 for step, raw in records]
    widths = [max(len(r[i]) for r in cells) for i in range(len(keys) + 1)]
    return "".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) + "\n" for r in cells)


# ----------------------------------------------------------------------------- file formats


def trainer_state_json(records: list[Record]) -> str:
    """``trainer_state.json`` (``transformers/trainer_callback.py: TrainerState.save_to_json``:
    ``json.dumps(asdict(state), indent=2, sort_keys=True)``); ``log_history`` holds each log with
    its ``step`` and ``epoch``."""
    history = [{**{k: _num(v) for k, v in raw.items()}, "epoch": step / 100, "step": step} for step, raw in records]
    state = {"best_metric": None, "best_model_checkpoint": None, "epoch": records[-1][0] / 100,
             "eval_steps": 500, "global_step": records[-1][0], "is_hyper_param_search": False,
             "is_local_process_zero": True, "is_world_process_zero": True, "log_history": history,
             "logging_steps": 1, "max_steps": records[-1][0], "num_train_epochs": 1, "save_steps": 500,
             "total_flos": 0.0, "train_batch_size": 8, "trial_name": None, "trial_params": None}
    return json.dumps(state, indent=2, sort_keys=True) + "\n"


def wandb_chart_csv(records: list[Record], run: str = "grpo-qwen-7b") -> str:
    """A W&B line panel's "Export CSV": ``Step``, then ``<run> - <metric>`` with its
    ``<run> - <metric>__MIN`` / ``__MAX`` band columns; an empty cell where a step has no value."""
    keys = _keys(records)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["Step"] + [c for k in keys for c in (f"{run} - {k}", f"{run} - {k}__MIN", f"{run} - {k}__MAX")])
    for step, raw in records:
        w.writerow([step] + [str(_num(raw[k])) if k in raw else "" for k in keys for _ in range(3)])
    return buf.getvalue()


def wandb_history_csv(records: list[Record]) -> str:
    """``wandb.Api().run(path).history().to_csv(file)``: pandas writes its unnamed index as a first
    column with an empty header, then ``_step``, ``_runtime``, ``_timestamp`` and the metric keys."""
    keys = _keys(records)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["", "_step", "_runtime", "_timestamp", *keys])
    for i, (step, raw) in enumerate(records):
        w.writerow([i, step, 3.1 * step, 1764583200 + 3 * step] + [str(_num(raw[k])) if k in raw else "" for k in keys])
    return buf.getvalue()


def wandb_history_json(records: list[Record]) -> str:
    """``json.dump(run.history(pandas=False), file)``: a JSON array of the logged rows, each with
    ``_step``, ``_runtime`` and ``_timestamp``."""
    rows = [{"_step": step, "_runtime": 3.1 * step, "_timestamp": 1764583200 + 3 * step,
             **{k: _num(v) for k, v in raw.items()}} for step, raw in records]
    return json.dumps(rows) + "\n"


def tensorboard_dir(records: list[Record], folder: Path) -> Path:
    """A TensorBoard event folder as veRL's ``tensorboard`` logger writes it
    (``verl/utils/tracking.py: _TensorboardAdapter.log``: ``SummaryWriter.add_scalar(key, value, step)``
    for every key)."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(folder))
    for step, raw in records:
        for k, v in raw.items():
            writer.add_scalar(k, v, step)
    writer.close()
    return folder


LINE_FORMATS: dict[str, Callable[[list[Record]], str]] = {
    "verl_console": verl_console, "trl_console": trl_console, "flat_jsonl": flat_jsonl,
    "verl_jsonl": verl_jsonl, "key_value": key_value, "tqdm_postfix": tqdm_postfix,
    "nemo_rl_console": nemo_rl_console, "markdown_table": markdown_table, "whitespace_table": whitespace_table,
}
"""Formats that sit inside a console log or a pasted excerpt, among other lines."""

FILE_FORMATS: dict[str, Callable[[list[Record]], str]] = {
    "trainer_state_json": trainer_state_json, "wandb_chart_csv": wandb_chart_csv,
    "wandb_history_csv": wandb_history_csv, "wandb_history_json": wandb_history_json,
}
"""Formats that are a whole file of their own (the other lines of the run go in a second file)."""


# ----------------------------------------------------------------------------- crash-log prefixes


def _each(prefix: Callable[[int], str]) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        out = []
        for i, line in enumerate(text.split("\n")):
            keep = not line.strip() or line.lstrip().startswith(("#", "```"))  # descriptions, fences
            out.append(line if keep else prefix(i) + line)
        return "\n".join(out)
    return wrap


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _ansi(text: str) -> str:
    """Ray colours its worker prefix (``ray/_private/log_monitor.py`` + ``ray_constants.py``: cyan
    ``\\x1b[36m(...)\\x1b[0m``); tracebacks printed by rich/loguru carry colour codes inside the line."""
    return _each(lambda i: "\x1b[36m(WorkerDict pid=1234, ip=10.0.0.1)\x1b[0m \x1b[31m")(text).replace(
        "\n", "\x1b[0m\n")


PREFIXES: dict[str, Callable[[str], str]] = {
    # Ray's log monitor prefixes every line a worker prints (ray/_private/worker.py: print_logs)
    "ray_worker": _each(lambda i: "(WorkerDict pid=1234, ip=10.0.0.1) "),
    "ray_task_runner": _each(lambda i: "(TaskRunner pid=28177) "),
    "vllm_ray_worker": _each(lambda i: "(RayWorkerWrapper pid=4321, ip=10.0.0.2) "),
    # vLLM's logger (vllm/logger.py: _FORMAT "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s",
    # _DATE_FORMAT "%m-%d %H:%M:%S")
    "vllm_logger": _each(lambda i: f"ERROR 12-01 10:00:{i % 60:02d} [engine.py:{100 + i}] "),
    # logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"), the common default
    "python_logging": _each(lambda i: f"2026-12-01 10:00:{i % 60:02d},123 - trainer - ERROR - "),
    # torchrun --tee / torch.distributed.elastic's per-rank prefix
    "torchrun_rank": _each(lambda i: "[rank3]: "),
    # kubectl logs --timestamps: RFC3339Nano before every line
    "kubectl_timestamps": _each(lambda i: f"2026-12-01T10:00:{i % 60:02d}.123456789Z "),
    "ansi_colour": _ansi,
    "crlf": _crlf,
}


def records_of(points: Iterable) -> list[Record]:
    """The records of parsed points, one per step in the order read (points of one step merged:
    a per-metric summary table gives one point per row; a step repeated later is another record). A key rendered
    with spaces around its slashes (a notebook's HTML table: ``completions / clipped_ratio``) is written as the
    frameworks log it (``completions/clipped_ratio``): no console or table format of a real run has those spaces."""
    out: list[Record] = []
    for p in points:
        raw = {re.sub(r"\s*/\s*", "/", k) if "/" in k else k: v for k, v in p.raw.items()}
        if out and out[-1][0] == p.step and p.source == "table" and not set(raw) & set(out[-1][1]):
            out[-1][1].update(raw)  # the next row of one summary table
        else:
            out.append((int(p.step), raw))
    return [r for r in out if r[1]]


# ----------------------------------------------------------------------------- the harness

_BAR = re.compile(r"\d+/\d+ \[[\d:]+<")
_TABLE_HEAD = re.compile(r"^\s*\||\t|^\s*[A-Za-z_][\w/.@\-]*(?:\s+[A-Za-z_][\w/.@\-]*)+\s*$")


def split_records(text: str) -> tuple[list[Record], set[int]]:
    """The records the reader parses from ``text`` and the 0-based lines that hold them (a table's
    header and rule included; tqdm bar lines too when the records are TRL dicts, whose step they
    give)."""
    from advisor.metrics import parse_text

    points = parse_text(text)
    lines = text.split("\n")
    held = {p.line - 1 for p in points if p.line}
    for p in points:
        if p.source in ("table", "csv") and p.line:
            i = p.line - 2
            while i >= 0 and i >= p.line - 3 and i not in held and _TABLE_HEAD.search(lines[i]):
                held.add(i)
                i -= 1
        elif p.source == "verl_console" and p.line and lines[p.line - 1].strip().startswith("- "):
            i = p.line  # veRL's one-metric-per-line block: the point names its first line
            while i < len(lines) and lines[i].strip().startswith("- "):
                held.add(i)
                i += 1
    if any(p.source == "trl_console" for p in points):
        held |= {i for i, ln in enumerate(lines) if _BAR.search(ln) and "{" not in ln}
    return records_of(points), held


def case_variants(text: str, folder: Path) -> dict[str, list[Path]]:
    """``text``'s metric records in every format: the files to diagnose for each format name.
    Line formats replace the record lines in place (the other lines stay where they were); a
    file format is a file of its own, diagnosed with the other lines as a second file."""
    records, held = split_records(text)
    lines = text.split("\n")
    first = min(held)
    before = [ln for i, ln in enumerate(lines[:first]) if i not in held]
    after = [ln for i, ln in enumerate(lines) if i > first and i not in held]
    rest = "\n".join(before + after)
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[Path]] = {}
    for name, write in LINE_FORMATS.items():
        body = write(records)
        f = folder / f"{name}.txt"
        f.write_text("\n".join(before) + ("\n" if before else "") + body + "\n".join(after), encoding="utf-8")
        out[name] = [f]
    side = []
    if rest.strip():
        (folder / "console.txt").write_text(rest, encoding="utf-8")
        side = [folder / "console.txt"]
    names = {"trainer_state_json": "trainer_state.json", "wandb_chart_csv": "wandb_chart.csv",
             "wandb_history_csv": "wandb_history.csv", "wandb_history_json": "wandb_history.json"}
    for name, write in FILE_FORMATS.items():
        sub = folder / name
        sub.mkdir(exist_ok=True)
        f = sub / names[name]
        f.write_text(write(records), encoding="utf-8")
        out[name] = [f, *side]
    out["tensorboard"] = [tensorboard_dir(records, folder / "tb"), *side]
    return out


def top_categories(paths: list[Path], source: str = "", n: int = 3) -> list[str]:
    """The first ``n`` finding categories of a diagnosis of ``paths`` (as the CLI diagnoses them; the
    case's own thread left out of the similar-case search)."""
    from rl_advisor.diagnose_tool import diagnose_path

    d = diagnose_path(paths if len(paths) > 1 else paths[0], exclude_sources=[source] if source else [])
    return [f.category for f in d.findings[:n]]


def development_cases(kind: str, shared: Path | None = None) -> list[dict]:
    """Development cases of one ``input_kind`` (tests/cases/diagnosis and ../shared when present);
    the held-out batch is never read."""
    import importlib.util
    import sys

    repo = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("diagnose_accuracy", repo / "benchmarks" / "diagnose_accuracy.py")
    acc = sys.modules.get("diagnose_accuracy")
    if acc is None:
        assert spec and spec.loader
        acc = importlib.util.module_from_spec(spec)
        sys.modules["diagnose_accuracy"] = acc
        spec.loader.exec_module(acc)
    shared = shared or repo.parent / "shared" / "cases" / "diagnosis"
    return [c for c in acc.load_cases(shared if shared.is_dir() else None)
            if c["split"] == "development" and c["input_kind"] == kind]


LONG_FORMATS = ("verl_console", "trl_console", "flat_jsonl", "verl_jsonl", "key_value", "tqdm_postfix",
                "nemo_rl_console")
"""Line formats that turn up deep inside long console logs (past the lines read in full), where
only the lines the pre-filter picks are read: each must be picked in every format, prefixed or not.
(Tables are read in the first lines or as whole files.)"""

LONG_PREFIXES = ("none", "ray_task_runner", "torchrun_rank", "kubectl_timestamps")


def long_log(body: str, prefix: str = "none", lines: int = 2500) -> str:
    """``body`` after ``lines`` lines of vLLM/Ray INFO noise (past the prose zone of
    ``prose_scan_lines``), every line of it behind ``prefix`` (a key of PREFIXES, or ``none``)."""
    noise = "".join(f"INFO 12-01 10:00:{i % 60:02d} [metrics.py:{80 + i % 9}] Avg prompt throughput: "
                    f"{i % 97}.0 tokens/s, Running: {i % 5} reqs\n" for i in range(lines))
    text = noise + body
    return text if prefix == "none" else PREFIXES[prefix](text)


def long_variants(variants: dict[str, list[Path]], folder: Path, lines: int = 2500) -> dict[str, Path]:
    """Each long-log format of ``variants`` (from case_variants) deep in a long console log, behind
    each of LONG_PREFIXES: ``{"format/prefix": file}``, written in ``folder``."""
    out = {}
    for name in LONG_FORMATS:
        body = variants[name][0].read_text(encoding="utf-8")
        for prefix in LONG_PREFIXES:
            f = folder / f"long-{name}-{prefix}.txt"
            f.write_text(long_log(body, prefix, lines), encoding="utf-8")
            out[f"{name}/{prefix}"] = f
    return out
