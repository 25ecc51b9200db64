"""TRL 1.16.0: the rendered YAML through TRL's own ``TrlParser`` in strict mode (unknown keys
fail) with the trainer's own config class (``GRPOConfig``, ``trl.experimental.cpo.CPOConfig``, ...),
whose ``__post_init__`` checks run; the accelerate YAML through accelerate's own config loader;
the entry script compiled.

On a machine without a GPU ``--use_cpu true`` is appended (a config asking for bf16 fails there
otherwise; research/frameworks.md §3.4). That is the only change to the rendered file's meaning.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import tempfile
import time
import warnings
from functools import cache
from pathlib import Path
from typing import Any

from advisor.render.models import Artifact, ValidationResult


def _load(dotted: str):
    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def validate_config(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    config_class = artifact.entrypoint or "trl.GRPOConfig"
    name = f"trl TrlParser(strict) + {config_class}"
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    try:
        from trl import DatasetMixtureConfig, ModelConfig, ScriptArguments, TrlParser

        cls = _load(config_class)
    except ImportError as exc:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, skipped=True,
                                warnings=[f"trl not importable: {exc}"])
    errors: list[str] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rl-advisor-trl-") as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(artifact.content, encoding="utf-8")
        args = ["--config", str(path)]
        if not _has_gpu():
            args += ["--use_cpu", "true"]
            notes.append("no GPU here: validated with --use_cpu true")
        parser = TrlParser((ScriptArguments, cls, ModelConfig, DatasetMixtureConfig))
        out = io.StringIO()
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                warnings.simplefilter("ignore")
                parser.parse_args_and_config(args=args)
        except SystemExit as exc:
            errors.append(f"TrlParser exited ({exc.code}): {out.getvalue().strip()[-500:]}")
        except Exception as exc:  # noqa: BLE001 - ValueError from strict parsing or __post_init__
            errors.append(f"{type(exc).__name__}: {exc}")
    return ValidationResult(artifact=artifact.name, validator=name, ok=not errors, errors=errors,
                            warnings=notes, seconds=time.perf_counter() - t0)


def validate_accelerate(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    name = "accelerate load_config_from_file"
    try:
        from accelerate.commands.config.config_args import load_config_from_file
    except ImportError as exc:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, skipped=True,
                                warnings=[f"accelerate not importable: {exc}"])
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rl-advisor-accel-") as tmp:
        path = Path(tmp) / "accelerate.yaml"
        path.write_text(artifact.content, encoding="utf-8")
        try:
            cfg = load_config_from_file(str(path))
            data = artifact.data or {}
            if data and cfg.num_processes != data.get("num_processes"):
                errors.append(f"num_processes read back as {cfg.num_processes}")
        except Exception as exc:  # noqa: BLE001 - accelerate raises ValueError/TypeError on bad keys
            errors.append(f"{type(exc).__name__}: {exc}")
    return ValidationResult(artifact=artifact.name, validator=name, ok=not errors, errors=errors,
                            seconds=time.perf_counter() - t0)


def validate_entry(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    errors: list[str] = []
    try:
        compile(artifact.content, artifact.name, "exec")
    except SyntaxError as exc:
        errors.append(f"SyntaxError: {exc}")
    data = artifact.data or {}
    for key in ("trainer", "config_class"):
        if key in data:
            try:
                os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
                _load(data[key])
            except (ImportError, AttributeError) as exc:
                errors.append(f"{key} {data[key]!r} not importable: {exc}")
    return ValidationResult(artifact=artifact.name, validator="python compile + trainer import", ok=not errors,
                            errors=errors, seconds=time.perf_counter() - t0)


def validate_launch(artifact: Artifact) -> ValidationResult:
    """The launch script must run ``accelerate launch --config_file <accelerate> <entry> --config <yaml>``
    and nothing the accelerate launcher would reject (its own argument parser)."""
    t0 = time.perf_counter()
    from rl_advisor.validators.shell import argv_after

    errors: list[str] = []
    try:
        words = argv_after(artifact.content, ["accelerate", "launch"])
        from accelerate.commands.launch import launch_command_parser

        ns = launch_command_parser().parse_args(words)
        if not ns.training_script.endswith(".py"):
            errors.append(f"training script {ns.training_script!r} is not a Python file")
        if "--config" not in ns.training_script_args:
            errors.append("the entry script gets no --config <yaml>")
    except SystemExit as exc:
        errors.append(f"accelerate launch parser rejected the command ({exc.code})")
    except Exception as exc:  # noqa: BLE001
        errors.append(f"{type(exc).__name__}: {exc}")
    return ValidationResult(artifact=artifact.name, validator="accelerate launch argument parser", ok=not errors,
                            errors=errors, seconds=time.perf_counter() - t0)


# --------------------------------------------------------------------------- trainer construction


_DATA_COLUMNS = {
    "prompts": lambda i: {"prompt": f"say letters {i}:"},
    "pairs": lambda i: {"prompt": f"say letters {i}:", "chosen": "aaaa", "rejected": "bbbb"},
    "unpaired": lambda i: {"prompt": f"say letters {i}:", "completion": "aaaa" if i % 2 else "bbbb",
                           "label": bool(i % 2)},
    "text": lambda i: {"prompt": f"say letters {i}:", "completion": "aaaa"},
}
_KIND = {"trl.GRPOTrainer": "prompts", "trl.RLOOTrainer": "prompts", "trl.DPOTrainer": "pairs",
         "trl.RewardTrainer": "pairs", "trl.KTOTrainer": "unpaired", "trl.SFTTrainer": "text",
         "trl.experimental.orpo.ORPOTrainer": "pairs", "trl.experimental.cpo.CPOTrainer": "pairs"}


@cache
def _tiny_model_dir() -> str:
    """A random tiny Llama and its tokenizer, built once per process (rl_advisor.tinymodel)."""
    from rl_advisor.tinymodel import build_tiny_model

    import atexit
    import shutil

    root = Path(tempfile.mkdtemp(prefix="rl-advisor-trl-tiny-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return str(build_tiny_model(root / "tiny-llama"))


def _toy_reward(completions, **kwargs):
    return [0.0 for _ in completions]


def validate_construction(config: Artifact, entry: Artifact) -> tuple[list[str], list[str], list[str]]:
    """Construct the rendered trainer with the rendered config, as TRL 1.16 does at start-up, on a
    tiny local model on this CPU (the trainer's own __init__ checks: batch/generation divisibility,
    dataset columns, reward functions, PEFT wrapping, reference model). Substituted, and said so:
    the model (a random tiny Llama), the dataset (eight rows of the method's format), the reward
    functions (a constant rule; the plan's file may not exist here), ``use_vllm`` (off: vLLM
    generation needs a GPU), ``output_dir`` (a temp dir). Returns (errors, warnings, checks)."""
    data = entry.data or {}
    trainer_name = data.get("trainer")
    if trainer_name not in _KIND:
        return [], [f"trainer construction not checked for {trainer_name}"], []
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import yaml

    try:
        from datasets import Dataset
        from trl import DatasetMixtureConfig, ModelConfig, ScriptArguments, TrlParser, get_peft_config
    except ImportError as exc:
        return [], [f"trainer construction skipped: {exc}"], []
    cfg = dict(config.data or {})
    model_dir = _tiny_model_dir()
    substituted = {"model_name_or_path": model_dir, "report_to": ["none"], "use_vllm": False}
    notes = ["model -> tiny local Llama", "dataset -> 8 rows"] + (
        ["use_vllm -> false (vLLM needs a GPU)"] if cfg.get("use_vllm") else [])
    errors: list[str] = []
    checks: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rl-advisor-trl-construct-") as tmp:
        cfg.update({k: v for k, v in substituted.items() if k in cfg or k != "use_vllm"})
        cfg["output_dir"] = str(Path(tmp) / "out")
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        parser = TrlParser((ScriptArguments, _load(data["config_class"]), ModelConfig, DatasetMixtureConfig))
        out = io.StringIO()
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                warnings.simplefilter("ignore")
                _, args, model_args, _ = parser.parse_args_and_config(args=["--config", str(path), "--use_cpu", "true"])
                rows = [_DATA_COLUMNS[_KIND[trainer_name]](i) for i in range(8)]
                kwargs: dict[str, Any] = {"model": model_dir, "args": args, "train_dataset": Dataset.from_list(rows),
                                          "peft_config": get_peft_config(model_args)}
                if data.get("online"):
                    rewards: list[Any] = [model_dir for _ in data.get("reward_models") or []]
                    rewards += [_toy_reward for _ in data.get("reward_functions") or []] or ([] if rewards else [_toy_reward])
                    kwargs["reward_funcs"] = rewards
                if data.get("needs_tokenizer") or trainer_name in ("trl.RewardTrainer",):
                    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

                    kwargs["processing_class"] = AutoTokenizer.from_pretrained(model_dir)
                    if trainer_name == "trl.RewardTrainer":
                        kwargs["model"] = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=1)
                    else:
                        kwargs["model"] = AutoModelForCausalLM.from_pretrained(model_dir)
                _load(trainer_name)(**kwargs)
            checks.append(f"{trainer_name}(...) constructed with the rendered {data['config_class']} "
                          f"({'; '.join(notes)}) -> passed")
        except SystemExit as exc:
            errors.append(f"{trainer_name}: exited ({exc.code}): {out.getvalue().strip()[-400:]}")
        except Exception as exc:  # noqa: BLE001 - the trainer's own __init__ checks raise ValueError etc.
            errors.append(f"{trainer_name} construction: {type(exc).__name__}: {exc}")
            checks.append(f"{trainer_name}(...) with the rendered {data['config_class']} -> failed")
    return errors, [], checks
