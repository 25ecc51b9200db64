"""audit_data's tables: every check has a source and rationale, and every config key a fix names
exists in the pinned release's schema (veRL 0.9.1 Hydra keys, OpenRLHF 0.11.2 flags, TRL 1.16.0
config fields, from ../shared/research/frameworks/)."""

from __future__ import annotations

from pathlib import Path

from advisor.data_audit.tables import formats, rules
from tests.test_diagnosis import _framework_keys


def test_every_check_has_a_source_rationale_and_known_family() -> None:
    families = set(formats()["families"])
    for rid, rule in rules().items():
        assert rule.get("source") and rule.get("rationale") and rule.get("title"), rid
        assert rule["severity"] in ("error", "warning", "info"), rid
        assert set(rule["families"]) <= families, rid


def test_every_check_the_core_records_is_in_the_table() -> None:
    import re

    core = Path(__file__).resolve().parent.parent / "advisor" / "data_audit"
    used = set()
    for f in core.glob("*.py"):
        used |= set(re.findall(r'(?:record|_finding)\("([a-z_]+)"', f.read_text()))
    assert used and used <= set(rules()), used - set(rules())


def _config_keys() -> list[tuple[str, str, str | None]]:
    out = []
    for rule in rules().values():
        for fw, fixes in (rule.get("fixes") or {}).items():
            out += [(fw, fx["key"], fx.get("scope")) for fx in fixes if fx.get("kind", "config") == "config"]
    for fw, fams in formats()["formats"].items():
        for spec in fams.values():
            out += [(fw, f["key"], None) for f in spec["fields"] if f.get("key")]
            out += [(fw, fx["key"], fx.get("scope")) for fx in (spec.get("overlong") or {}).get("fixes", [])
                    if fx.get("kind", "config") == "config"]
    return out


def test_every_config_key_exists_in_the_framework_schema(shared_dir: Path) -> None:
    keys = _framework_keys(shared_dir)
    checked = 0
    for fw, key, scope in _config_keys():
        if fw == "verl":
            assert key in keys["verl"], key
        elif fw == "openrlhf":  # every named CLI must have the flag; no scope: at least one CLI
            named = [f"openrlhf:{c.strip()}" for c in (scope or "").split(",") if c.strip()]
            if named:
                assert all(key in keys[c] for c in named), (key, scope)
            else:
                assert any(key in v for c, v in keys.items() if c.startswith("openrlhf:")), key
        elif fw == "trl":
            assert scope, f"TRL key {key} needs its config class as scope"
            classes = [s.strip() for s in scope.replace("/", ",").split(",")]
            assert all(key in keys[f"trl:{c}"] for c in classes), (key, scope)
        checked += 1
    assert checked >= 12
