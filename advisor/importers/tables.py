"""Loaders for the import tables: key maps (memory_import_maps.yaml) and known keys per framework
version (memory_import_keys.yaml)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from advisor import yamlio



def _load(name: str) -> Any:
    return yamlio.safe_load(resources.files("advisor").joinpath(f"data/{name}").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def maps() -> dict[str, Any]:
    return _load("memory_import_maps.yaml")


@lru_cache(maxsize=1)
def known_keys() -> dict[str, frozenset[str]]:
    data = _load("memory_import_keys.yaml")
    return {k: frozenset(v) for k, v in data.items() if isinstance(v, list)}
