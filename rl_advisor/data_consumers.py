"""Run a sample of the data through the pinned framework's own data code, on the CPU.

"Accepted" should mean accepted by the consumer, not by our reading of it:

* veRL 0.9.1: ``verl.utils.dataset.rl_dataset.RLHFDataset`` loads the sample (written as parquet),
  ``__getitem__`` builds each row, then the tokenizer renders ``raw_prompt`` with
  ``apply_chat_template(add_generation_prompt=True)`` as the agent loop does, and the fields the reward
  manager indexes (``reward_model.ground_truth``, ``data.reward_fn_key``) are read the same way.
  ``verl`` is imported as a bare package (rl_advisor/validators/verl.py) so its GPU stack is not needed.
* TRL 1.16: ``trl.data_utils`` (``maybe_extract_prompt``, ``is_conversational``, ``apply_chat_template``)
  on each row, with the first-row format rule of ``DPOTrainer._prepare_dataset``.
* OpenRLHF 0.11.2: ``openrlhf.datasets.reward_dataset.preprocess_data`` /
  ``prompts_dataset.preprocess_data`` with the tokenizer's chat template (rendered runs pass
  ``--data.apply_chat_template``), imported from the installed package without its ``__init__``.

Each returns (what ran, problems as ``(row, message)``); a framework that is not installed returns
``None`` and the audit says the check was skipped.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Iterator

from advisor.data_audit import AuditContext

Problems = list[tuple[int, str]]


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def run_consumer(ctx: AuditContext, rows: list[dict[str, Any]], tokenizer: Any | None,
                 parquet_source: Path | None = None) -> tuple[str, Problems] | None:
    fn = {"verl": _verl, "trl": _trl, "openrlhf": _openrlhf}.get(ctx.framework)
    if fn is None or not rows:
        return None
    # The loaders print (veRL: "dataset len: N") and show progress bars; under the MCP server stdout is
    # the protocol, so their output goes nowhere. datasets' cache goes to a temporary folder.
    with _quiet_datasets_cache():
        return fn(ctx, rows, tokenizer, parquet_source)


@contextlib.contextmanager
def _quiet_datasets_cache() -> Iterator[None]:
    sink = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="rl-advisor-audit-cache-") as tmp, \
            contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            import datasets
        except ImportError:
            yield
            return
        old = datasets.config.HF_DATASETS_CACHE
        datasets.config.HF_DATASETS_CACHE = Path(tmp)
        bars = not datasets.are_progress_bars_disabled()
        datasets.disable_progress_bars()
        try:
            yield
        finally:
            datasets.config.HF_DATASETS_CACHE = old
            if bars:
                datasets.enable_progress_bars()


# ----------------------------------------------------------------------------- veRL


def _verl(ctx: AuditContext, rows: list[dict[str, Any]], tokenizer: Any | None,
          parquet_source: Path | None) -> tuple[str, Problems] | None:
    from rl_advisor.validators.verl import _bare_verl_package, verl_dir

    if verl_dir() is None:
        return None
    _bare_verl_package()
    import pyarrow as pa
    import pyarrow.parquet as pq
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    problems: Problems = []
    with tempfile.TemporaryDirectory(prefix="rl-advisor-audit-") as tmp:
        sample = Path(tmp) / "sample.parquet"
        try:
            if parquet_source is not None:  # keep the file's own schema
                batch = next(pq.ParquetFile(parquet_source).iter_batches(batch_size=len(rows)))
                pq.write_table(pa.Table.from_batches([batch]), sample)
            else:
                pq.write_table(pa.Table.from_pylist(rows), sample)
        except Exception as exc:  # noqa: BLE001
            return ("pyarrow parquet writer (veRL reads parquet)",
                    [(0, f"these rows cannot be one parquet table: {_err(exc)}")])
        cfg = OmegaConf.create({"prompt_key": ctx.prompt_key, "max_prompt_length": ctx.max_prompt_length or 1024,
                                "filter_overlong_prompts": False, "truncation": "error",
                                "filter_overlong_prompts_workers": 1, "cache_dir": str(Path(tmp) / "cache"),
                                "return_raw_chat": True})
        try:
            ds = RLHFDataset([str(sample)], tokenizer, cfg)
        except Exception as exc:  # noqa: BLE001
            return "verl RLHFDataset", [(0, f"RLHFDataset(...) raised {_err(exc)}")]
        for i in range(len(ds)):
            try:
                item = ds[i]
                if tokenizer is not None:
                    tokenizer.apply_chat_template(item["raw_prompt"], add_generation_prompt=True, tokenize=False)
                item["reward_model"]["ground_truth"]  # noqa: B018 - the reward manager's access
                item["data_source"]  # noqa: B018 - data.reward_fn_key's default
            except Exception as exc:  # noqa: BLE001
                problems.append((i, _err(exc)))
    what = "verl RLHFDataset + reward-manager field access" + (" + apply_chat_template" if tokenizer else "")
    return what, problems


# ----------------------------------------------------------------------------- TRL


def _trl(ctx: AuditContext, rows: list[dict[str, Any]], tokenizer: Any | None,
         parquet_source: Path | None) -> tuple[str, Problems] | None:
    if importlib.util.find_spec("trl") is None:
        return None
    from trl.data_utils import apply_chat_template, is_conversational, maybe_extract_prompt

    problems: Problems = []
    first_conv: bool | None = None
    for i, row in enumerate(rows):
        ex = {k: v for k, v in row.items() if k in ("prompt", "chosen", "rejected", "completion", "label")}
        try:
            if ctx.family == "preference" or ("chosen" in ex and "rejected" in ex):
                ex = maybe_extract_prompt(ex) if "prompt" not in ex else ex
            conv = is_conversational(ex)
            if first_conv is None:
                first_conv = conv
            elif conv != first_conv:
                problems.append((i, f"is_conversational is {conv} but {first_conv} for row 0; the trainer picks "
                                 "the format from the first row"))
                continue
            if conv:
                if tokenizer is not None:
                    apply_chat_template(ex, tokenizer)
            else:
                for k in ("prompt", "chosen", "rejected", "completion"):
                    if k in ex and not isinstance(ex[k], str):
                        problems.append((i, f"`{k}` is {type(ex[k]).__name__} in a standard (non-conversational) "
                                         "row; TRL tokenizes it as a string"))
                        break
            if ctx.family == "unpaired" and "label" in ex and not isinstance(ex["label"], (bool, int)):
                problems.append((i, f"label {ex['label']!r} cannot become KTODataCollator's label tensor"))
        except Exception as exc:  # noqa: BLE001
            problems.append((i, _err(exc)))
    what = "trl.data_utils " + ("maybe_extract_prompt + " if ctx.family == "preference" else "") + \
        "is_conversational" + (" + apply_chat_template" if tokenizer is not None else "")
    return what, problems


# ----------------------------------------------------------------------------- OpenRLHF


def _bare(name: str, path: Path) -> None:
    if name not in sys.modules:
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(path)]
        sys.modules[name] = pkg


def _openrlhf(ctx: AuditContext, rows: list[dict[str, Any]], tokenizer: Any | None,
              parquet_source: Path | None) -> tuple[str, Problems] | None:
    from rl_advisor.validators.openrlhf import openrlhf_dir

    root = openrlhf_dir()
    if root is None or tokenizer is None:  # rendered runs apply the chat template: a tokenizer is needed
        return None
    for name, sub in (("openrlhf", ""), ("openrlhf.utils", "utils"), ("openrlhf.datasets", "datasets")):
        _bare(name, root / sub if sub else root)
    problems: Problems = []
    if ctx.family == "preference":
        from openrlhf.datasets.reward_dataset import preprocess_data

        def run(row: dict[str, Any]) -> Any:
            return preprocess_data(row, None, ctx.prompt_key, "chosen", "rejected", tokenizer.apply_chat_template,
                                   is_dpo=ctx.method == "dpo")
        what = "openrlhf.datasets.reward_dataset.preprocess_data (apply_chat_template)"
    elif ctx.family == "prompt_verifier":
        from openrlhf.datasets.prompts_dataset import preprocess_data as prompt_preprocess

        def run(row: dict[str, Any]) -> Any:
            return prompt_preprocess(row, None, ctx.prompt_key, None, tokenizer.apply_chat_template)
        what = "openrlhf.datasets.prompts_dataset.preprocess_data (apply_chat_template)"
    else:
        return None
    for i, row in enumerate(rows):
        try:
            run(row)
        except Exception as exc:  # noqa: BLE001
            problems.append((i, _err(exc)))
    return what, problems
