"""NeMo-RL: the rendered ``key=value`` overrides parsed by Hydra's override grammar and applied in
OmegaConf struct mode to NeMo-RL's own example config (copied unchanged into
``validators/nemo_rl/`` from NVIDIA-NeMo/RL at 7ea279a, 2026-08-22, Apache-2.0). An unknown key
fails, as with NeMo-RL's own override loader. NeMo-RL has no CPU-installable release (PyPI holds
a 0.0.0 placeholder), so its runtime checks are not run here.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from advisor.render.models import Artifact, ValidationResult
from rl_advisor.validators.shell import argv_after

CONFIG_DIR = Path(__file__).resolve().parent / "nemo_rl"


def validate(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    script = artifact.entrypoint or "examples/run_grpo.py"
    name = "hydra override grammar + OmegaConf struct on NeMo-RL example config (7ea279a)"
    errors: list[str] = []
    try:
        argv = argv_after(artifact.content, ["python", script])
    except ValueError as exc:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, errors=[str(exc)])
    if len(argv) < 2 or argv[0] != "--config":
        return ValidationResult(artifact=artifact.name, validator=name, ok=False,
                                errors=["expected --config <examples/configs/X.yaml> first"])
    base = CONFIG_DIR / Path(argv[1]).name
    if not base.is_file():
        return ValidationResult(artifact=artifact.name, validator=name, ok=False,
                                errors=[f"no bundled copy of NeMo-RL config {argv[1]!r}"])
    cfg = OmegaConf.create(yaml.safe_load(base.read_text(encoding="utf-8")))
    OmegaConf.set_struct(cfg, True)
    parser = OverridesParser.create()
    for word in argv[2:]:
        try:
            ov = parser.parse_override(word)
            key = ov.key_or_group
            if not ov.is_add() and OmegaConf.select(cfg, key, default="__absent__") == "__absent__" \
                    and not _exists(cfg, key):
                errors.append(f"unknown key {key!r} (not in {base.name})")
                continue
            OmegaConf.update(cfg, key, ov.value(), merge=True, force_add=ov.is_add())
        except Exception as exc:  # noqa: BLE001 - grammar or struct errors reject the override
            errors.append(f"{word[:80]}: {type(exc).__name__}: {exc}")
    return ValidationResult(artifact=artifact.name, validator=name, ok=not errors, errors=errors,
                            warnings=["NeMo-RL runtime checks not run (no CPU-installable release)"],
                            seconds=time.perf_counter() - t0)


def _exists(cfg, key: str) -> bool:
    node = cfg
    for part in key.split("."):
        if not hasattr(node, "keys") or part not in node:
            return False
        node = node._get_node(part)
    return True
