"""Read a local Hugging Face ``config.json`` into a ModelSpec (the I/O half).

The conversion itself is pure and lives in ``advisor.catalog.spec_from_hf_config``; this module
only finds and parses the file. It accepts the file or the model directory that holds it.
"""

from __future__ import annotations

import json
from pathlib import Path

from advisor.catalog import spec_from_hf_config
from advisor.errors import AdvisorError
from advisor.plan import ModelSpec, RoleModel

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # real config.json files are a few KB


def read_hf_config(path: str | Path, field: str = "config") -> dict:
    """Parse ``path`` (a config.json, or a directory containing one) as a JSON object."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise AdvisorError("no config.json there", field=field, value=str(path),
                           allowed="a config.json file or a model directory that holds one")
    if p.stat().st_size > MAX_CONFIG_BYTES:
        raise AdvisorError("file is too large to be a config.json", field=field, value=str(p),
                           allowed=f"at most {MAX_CONFIG_BYTES} bytes")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AdvisorError(f"cannot read file: {exc}", field=field, value=str(p)) from None
    except json.JSONDecodeError as exc:
        raise AdvisorError(f"not valid JSON: {exc.msg} at line {exc.lineno}", field=field,
                           value=str(p)) from None
    if not isinstance(data, dict):
        raise AdvisorError("config.json must hold a JSON object", field=field, value=str(p))
    return data


def load_model_spec(path: str | Path, name: str | None = None, field: str = "config") -> ModelSpec:
    """A ModelSpec (params filled) from a local config.json or model directory. The name
    defaults to the directory name (``/ckpt/Qwen2.5-7B-Instruct/config.json`` ->
    ``Qwen2.5-7B-Instruct``)."""
    p = Path(path).expanduser()
    default_name = (p if p.is_dir() else p.parent).name or None
    return spec_from_hf_config(read_hf_config(p, field), name=name or default_name)


def resolve_role_model_with_files(rm: RoleModel, field: str) -> ModelSpec:
    """``advisor.catalog.resolve_role_model`` plus one I/O fallback: when the role's weights
    path (or model) is a local directory or config.json, read its dimensions from there."""
    from advisor.catalog import resolve_role_model

    try:
        return resolve_role_model(rm, field)
    except AdvisorError:
        for candidate in (rm.path, rm.model):
            if candidate and _has_config(Path(candidate).expanduser()):
                return load_model_spec(candidate, field=f"{field}.path")
        raise


def _has_config(p: Path) -> bool:
    return (p / "config.json").is_file() or (p.suffix == ".json" and p.is_file())
