"""Read a Hugging Face ``config.json`` into a ModelSpec (the I/O half).

The key-to-field conversion is pure and lives in ``advisor.catalog.spec_from_hf_config``; this
module finds and parses the file, and, when transformers is installed, lets transformers read it:
its config class fills every default the file leaves out, and the model built from it on the
meta device (no weights, no memory) gives the exact parameter count, the routed-expert share of
a MoE and the vision tower of a VLM. Without transformers the catalog's formulas count it.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.catalog import spec_from_hf_config
from advisor.errors import AdvisorError
from advisor.plan import ModelSpec, RoleModel

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # real config.json files are a few KB


def read_hf_config(path: str | Path, field: str = "config") -> dict:
    """Parse ``path`` (a config.json, or a directory containing one) as a JSON object. Read like
    every file a caller names (``safe_paths.read_input_file``): a regular file of bounded size,
    confined to the allowed folders when the caller is an MCP client."""
    from rl_advisor.safe_paths import confining, read_input_file

    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    if not confining() and not p.is_file():
        raise AdvisorError("no config.json there", field=field, value=str(path),
                           allowed="a config.json file or a model directory that holds one")
    text = read_input_file(p, field=field, max_bytes=MAX_CONFIG_BYTES)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AdvisorError(f"not valid JSON: {exc.msg} at line {exc.lineno}", field=field,
                           value=str(p)) from None
    if not isinstance(data, dict):
        raise AdvisorError("config.json must hold a JSON object", field=field, value=str(p))
    return data


@dataclass(frozen=True)
class MetaCount:
    """What transformers builds from a config on the meta device."""

    config: dict[str, Any]   # the config with transformers' defaults filled in (to_dict)
    total: int               # every parameter, a tied embedding/head once
    routed_experts: int      # parameters of the routed experts (``...experts.*``), all of them
    vision: int              # a VLM's vision tower and projector (0 for a text model)
    model_class: str


def meta_count(config: dict[str, Any], field: str = "config") -> MetaCount | None:
    """Count ``config`` with transformers on the meta device; None when transformers (or torch)
    is not installed or does not know its model_type (a ``trust_remote_code`` model)."""
    return _meta_count(json.dumps(config, sort_keys=True), field)


@functools.lru_cache(maxsize=64)
def _meta_count(key: str, field: str) -> MetaCount | None:
    try:
        import torch
        import transformers
    except ImportError:
        return None
    raw = json.loads(key)
    mapping = transformers.CONFIG_MAPPING
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in mapping:
        return None
    quiet = logging.getLogger("transformers")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # config-class notices (rope defaults ...) are not the user's problem
    try:
        config = mapping[model_type].from_dict(raw)
        with torch.device("meta"):
            try:
                model = transformers.AutoModelForCausalLM.from_config(config)
            except ValueError:  # a VLM wrapper: the image-text-to-text class holds the vision tower
                model = transformers.AutoModelForImageTextToText.from_config(config)
        normalized = config.to_dict()
    except AdvisorError:
        raise
    except Exception as exc:  # a malformed config: transformers names the problem
        raise AdvisorError(f"transformers cannot build {model_type} from this config: {exc}",
                           field=field, value=model_type,
                           allowed="a config.json that transformers.AutoConfig accepts") from None
    finally:
        quiet.setLevel(level)
    total = routed = vision = 0
    has_vision = isinstance(raw.get("vision_config"), dict)
    for name, p in model.named_parameters():  # a tied tensor is yielded once
        n = p.numel()
        total += n
        if ".experts." in name:  # routed experts; DeepSeek's shared_experts do not match
            routed += n
        if has_vision and not (name.startswith("lm_head.") or ".language_model." in name
                               or name.startswith("language_model.")):
            vision += n
    return MetaCount(normalized, total, routed, vision, type(model).__name__)


def spec_from_config(raw: dict[str, Any], name: str | None, field: str = "config") -> ModelSpec:
    """A ModelSpec from a parsed config.json: transformers' reading and meta-device count when
    available (``source`` says which), else the catalog formulas."""
    counted = meta_count(raw, field)
    if counted is None:
        spec = spec_from_hf_config(raw, name=name)
        note = "; parameters counted by the catalog formula (transformers not installed or model_type unknown to it)"
        return spec.model_copy(update={"source": (spec.source or "config.json") + note})
    spec = spec_from_hf_config({**counted.config, "_name_or_path": raw.get("_name_or_path")}, name=name,
                               vision_params=counted.vision or None)
    if spec.params == counted.total:
        source = f"{spec.source}; {counted.total:,} parameters = transformers {counted.model_class} on the meta device"
        return spec.model_copy(update={"source": source})
    # transformers is the reference: keep its count, split experts by the routed share it built.
    active = counted.total
    if spec.num_experts and counted.routed:
        active = round(counted.total - counted.routed * (1 - spec.experts_per_token / spec.num_experts))
    source = (f"{spec.source}; {counted.total:,} parameters from transformers {counted.model_class} on the "
              f"meta device (the catalog formula gives {spec.params:,})")
    return spec.model_copy(update={"params": counted.total, "active_params": active, "source": source})


def load_model_spec(path: str | Path, name: str | None = None, field: str = "config") -> ModelSpec:
    """A ModelSpec (params filled) from a local config.json or model directory. The name
    defaults to the directory name (``/ckpt/Qwen2.5-7B-Instruct/config.json`` ->
    ``Qwen2.5-7B-Instruct``)."""
    p = Path(path).expanduser()
    default_name = (p if p.is_dir() else p.parent).name or None
    return spec_from_config(read_hf_config(p, field), name or default_name, field)


def resolve_role_model_with_files(rm: RoleModel, field: str) -> ModelSpec:
    """``advisor.catalog.resolve_role_model`` plus one I/O fallback: when the role's weights
    path (or model) is a local directory or config.json, read its dimensions from there."""
    from advisor.catalog import resolve_role_model

    try:
        return resolve_role_model(rm, field)
    except AdvisorError:
        for candidate in (rm.path, rm.model):
            if candidate and has_config(Path(candidate).expanduser()):
                return load_model_spec(candidate, field=f"{field}.path")
        raise


def has_config(p: Path) -> bool:
    """A model folder holding config.json, or a .json file."""
    try:
        return (p / "config.json").is_file() or (p.suffix == ".json" and p.is_file())
    except OSError:  # a name too long for the filesystem, a permission error
        return False

