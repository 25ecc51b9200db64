"""Value conversions named in memory_import_maps.yaml (``as:``). Each returns the Plan value or
raises ValueError with a message that import_config reports as "not understood"."""

from __future__ import annotations

import math
import re
from typing import Any, Callable

from advisor import yamlio
from advisor.errors import AdvisorError

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().strip("'\"").lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise ValueError(f"not a boolean: {v!r}")


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError(f"not an integer: {v!r}")
    try:
        f = float(str(v).strip().strip("'\""))
    except ValueError:
        raise ValueError(f"not an integer: {v!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"not a finite integer: {str(v)[:40]!r}")
    if f != int(f):
        raise ValueError(f"not an integer: {v!r}")
    return int(f)


def _float(v: Any) -> float:
    try:
        f = float(str(v).strip().strip("'\""))
        if not math.isfinite(f):
            raise ValueError
        return f
    except ValueError:
        raise ValueError(f"not a number: {v!r}") from None


def _str(v: Any) -> str:
    return str(v).strip().strip("'\"")


def _str_list(v: Any) -> list[str]:
    if isinstance(v, list):
        return [str(x) for x in v]
    s = str(v).strip()
    if s.startswith("["):
        try:
            parsed = yamlio.load_untrusted(s)
            if isinstance(parsed, list):
                return [str(x) for x in parsed]
        except AdvisorError:
            pass
        return [x.strip().strip("'\"") for x in s.strip("[]").split(",") if x.strip()]
    return [_str(s)]


def _float_pair(v: Any) -> tuple[float, float]:
    """argparse ``nargs=2`` floats (``--actor.eps_clip_low_high 0.2 0.28``), read as one space-joined value."""
    parts = str(v).replace(",", " ").split()
    if len(parts) != 2:
        raise ValueError(f"expected two numbers: {v!r}")
    return _float(parts[0]), _float(parts[1])


def _trl_datasets(v: Any) -> list[str]:
    """TRL DatasetMixtureConfig ``datasets``: a list of {path, data_files, ...}; the files when given,
    else the dataset path (an HF id or a loader name)."""
    if not isinstance(v, list):
        raise ValueError(f"datasets must be a list of mappings: {v!r}")
    out: list[str] = []
    for entry in v:
        if not isinstance(entry, dict) or "path" not in entry:
            raise ValueError(f"a datasets entry needs a path: {entry!r}")
        files = entry.get("data_files")
        if files:
            out += [str(f) for f in (files if isinstance(files, list) else [files])]
        else:
            out.append(str(entry["path"]))
    return out


def _env_ref(v: Any) -> str:
    """A secret given as an environment reference (``$WANDB_API_KEY`` / ``${WANDB_API_KEY}``) -> the
    variable's name. A literal key is refused: the Plan keeps secrets as references only."""
    m = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", _str(v))
    if not m:
        raise ValueError("a literal secret; the Plan keeps only the name of the environment variable holding it")
    return m.group(1)


def _choice(table: dict[str, Any], what: str) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        key = _str(v)
        if key not in table:
            raise ValueError(f"{what} {key!r} has no Plan equivalent (known: {', '.join(sorted(table))})")
        return table[key]
    return conv


VERL_METHOD = {"gae": "ppo", "grpo": "grpo", "rloo": "rloo", "reinforce_plus_plus": "reinforce_pp",
               "reinforce_plus_plus_baseline": "reinforce_pp", "grpo_passk": "grpo", "gpg": "grpo"}
OPENRLHF_METHOD = {"gae": "ppo", "group_norm": "grpo", "rloo": "rloo", "reinforce": "reinforce_pp",
                   "reinforce_baseline": "reinforce_pp", "dr_grpo": "dr_grpo", "flash_reinforce": "reinforce_pp"}

CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "int": _int,
    "float": _float,
    "str": _str,
    "bool": _bool,
    "str_list": _str_list,
    "float_pair": _float_pair,
    "env_ref": _env_ref,
    "trl_datasets": _trl_datasets,
    "model_path": _str,
    "flag": lambda v: True,
    "flag_sleep": lambda v: 1,
    "flag_async": lambda v: "one_step_off",
    "flag_recompute": lambda v: "full",
    "recompute_bool": lambda v: "full" if _bool(v) else "none",
    "sleep_bool": lambda v: 1 if _bool(v) else 0,
    "megatron_recompute": lambda v: {"full": "full", "selective": "selective", "none": "none",
                                     "null": "none"}.get(_str(v).lower(), "none"),
    "verl_method": _choice(VERL_METHOD, "adv_estimator"),
    "openrlhf_method": _choice(OPENRLHF_METHOD, "advantage estimator"),
    "verl_kl_type": _choice({"low_var_kl": "k3", "k3": "k3", "kl": "k1", "k1": "k1", "mse": "k2", "k2": "k2",
                             "abs": "k1"}, "kl_loss_type"),
    "verl_strategy": _choice({"fsdp": "fsdp", "fsdp2": "fsdp2", "megatron": "megatron"}, "strategy"),
    "engine": _choice({"vllm": "vllm", "sglang": "sglang", "hf": "hf"}, "rollout engine"),
    "dtype": _choice({"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16",
                      "fp32": "fp32", "float32": "fp32", "auto": "bf16"}, "dtype"),
    "trl_optim": _choice({"adamw_torch": "adamw", "adamw_torch_fused": "adamw", "adamw_hf": "adamw",
                          "adamw_bnb_8bit": "adamw_8bit", "adamw_8bit": "adamw_8bit", "paged_adamw_8bit": "adamw_8bit",
                          "adafactor": "adafactor", "sgd": "sgd"}, "optim"),
    "verl_loggers": lambda v: [x for x in (_map_logger(s) for s in _str_list(v)) if x],
    # TRL always prints its logs to the console; report_to adds integrations ("none": nothing else)
    "trl_report_to": lambda v: ["console"] + [x for x in (_map_logger(s) for s in _str_list(v)) if x and x != "console"],
}


def _map_logger(s: str) -> str | None:
    return {"console": "console", "wandb": "wandb", "tensorboard": "tensorboard", "file": "file",
            "jsonl": "jsonl"}.get(s.strip().strip("'\"").lower())


def convert(kind: str, value: Any) -> Any:
    return CONVERTERS[kind](value)
