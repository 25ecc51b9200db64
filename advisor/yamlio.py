"""YAML parsing with libyaml's C loader when PyYAML was built with it (about 10x faster on the
data tables under advisor/data), and the pure-Python safe loader otherwise. Same semantics."""

from __future__ import annotations

from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
