"""The packaged-table cache of advisor.yamlio (JSON keyed by the YAML text's hash): what
``safe_load`` returns is the same with and without it, and only JSON-shaped tables are kept."""

from __future__ import annotations

import pytest
import yaml

from advisor import yamlio


@pytest.fixture()
def cache():
    saved = yamlio._table_cache
    store: dict[str, bytes] = {}
    yamlio.set_table_cache(store.get, store.__setitem__)
    yield store
    yamlio._table_cache = saved


TEXT = "a: 1\nb: 1.0\nc: true\nd: [x, null, 2]\ne: {f: 'g'}\nh: ü\n"


def test_cached_table_reads_back_the_same(cache):
    first = yamlio.safe_load(TEXT)
    assert len(cache) == 1  # kept once
    second = yamlio.safe_load(TEXT)  # from the cache
    assert second == first == yaml.safe_load(TEXT)
    assert yamlio._same(second, first)  # types too: 1, 1.0 and true stay apart
    assert [type(second[k]) for k in "abc"] == [int, float, bool]


@pytest.mark.parametrize("text", ["when: 2026-12-01\n", "1: one\n", "x: .nan\n", "s: !!set {a: null}\n"])
def test_tables_json_cannot_hold_are_not_kept(cache, text):
    assert yamlio._same(yamlio.safe_load(text), yaml.safe_load(text)) or text == "x: .nan\n"
    assert cache == {}


def test_a_broken_cache_entry_is_parsed_afresh(cache):
    yamlio.safe_load(TEXT)
    key = next(iter(cache))
    cache[key] = b"{not json"
    assert yamlio.safe_load(TEXT) == yaml.safe_load(TEXT)


def test_an_edited_table_gets_a_new_key(cache):
    yamlio.safe_load(TEXT)
    assert yamlio.safe_load(TEXT + "z: 3\n")["z"] == 3
    assert len(cache) == 2


def test_every_packaged_diagnosis_table_is_cacheable(cache):
    from advisor.diagnosis.tables import _DATA

    for path in sorted(_DATA.glob("diagnosis_*.yaml")):
        text = path.read_text(encoding="utf-8")
        yamlio.safe_load(text)
        assert yamlio._same(yamlio.safe_load(text), yaml.load(text, Loader=yamlio._Loader)), path.name
    assert len(cache) == len(list(_DATA.glob("diagnosis_*.yaml")))
