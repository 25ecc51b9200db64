"""The quoting filters round-trip through the real parsers of each target, and templates cannot
emit an unquoted value."""

from __future__ import annotations

import ast
import json
import shlex

import jinja2
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.render.quoting import (FILTERS, Quoted, RefValue, comment, hydra_override, py, require_quoted,
                                    sh, sh_command, yaml_doc)
from rl_advisor.validators.shell import join_continuations, script_words

NASTY = st.lists(st.sampled_from(["\\", "'", '"', "${", "$", "{", "}", "\n", " ", ",", "=", "#", ":", "-",
                                  "é", "\u2028", "\x85", "\t", "`", "(", ")", "[", "]", "null", "true", "1e5"])
                 | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                 max_size=16).map("".join)


@settings(max_examples=400, deadline=None)
@given(NASTY)
def test_hydra_values_resolve_to_the_same_string(value: str):
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    override = OverridesParser.create().parse_override(hydra_override("a.b", value))
    resolved = OmegaConf.to_container(OmegaConf.create({"v": override.value()}), resolve=True)["v"]
    assert resolved == value and isinstance(resolved, str)


@settings(max_examples=400, deadline=None)
@given(st.lists(NASTY, min_size=1, max_size=5), st.lists(NASTY, max_size=5))
def test_shell_command_splits_back_to_its_words(launcher: list[str], argv: list[str]):
    text = sh_command(launcher, argv)
    assert script_words(text) == launcher + argv


@settings(max_examples=300, deadline=None)
@given(st.recursive(NASTY | st.integers() | st.booleans() | st.none(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NASTY, inner, max_size=3),
                    max_leaves=10))
def test_yaml_and_python_literals_round_trip(tree):
    assert yaml.safe_load(yaml_doc({"k": tree})) == {"k": tree}
    assert ast.literal_eval(py(tree)) == tree


@given(NASTY)
def test_comment_stays_on_one_ascii_line(value: str):
    text = comment(value)
    assert "\n" not in text and "\r" not in text and text.isascii()
    assert yaml.safe_load("# " + text + "\nk: 1") == {"k": 1}
    assert script_words("# " + text + "\necho ok") == ["echo", "ok"]


def test_secret_reference_is_expandable_and_checked():
    assert sh(RefValue("WANDB_API_KEY")) == '"${WANDB_API_KEY}"'
    assert shlex.split(sh(RefValue("WANDB_API_KEY"))) == ["${WANDB_API_KEY}"]
    with pytest.raises(ValueError):
        RefValue("X; rm -rf ~")


def test_finalize_refuses_unquoted_values():
    env = jinja2.Environment(finalize=require_quoted, undefined=jinja2.StrictUndefined)
    env.filters.update(FILTERS)
    assert env.from_string("x={{ v | sh }}").render(v="a b") == "x='a b'"
    with pytest.raises(TypeError, match="unquoted"):
        env.from_string("x={{ v }}").render(v="a b")
    assert isinstance(sh("a"), Quoted)


def test_continuations_are_joined_only_outside_quotes():
    assert join_continuations("a \\\nb") == "a b"
    assert script_words("a 'x\\\ny' \\\n  c") == ["a", "x\\\ny", "c"]
    assert script_words("# it's a comment \\\necho \"q\\\nr\"") == ["echo", "qr"]
    assert json.loads(json.dumps(script_words("echo '#not a comment'"))) == ["echo", "#not a comment"]
