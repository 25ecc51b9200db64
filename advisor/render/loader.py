"""The jinja2 environment for templates/: strict undefined, and a ``finalize`` hook that refuses
any value not quoted by a filter from :mod:`advisor.render.quoting`.

Reading the packaged templates is the renderer's one file access; it is done once and cached.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from advisor.render.quoting import FILTERS, require_quoted


def _templates_dir() -> Path:
    from advisor.bundle import templates_dir

    return templates_dir()


@cache
def environment(templates: str | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates or str(_templates_dir())),
        undefined=jinja2.StrictUndefined,
        finalize=require_quoted,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters.update(FILTERS)
    return env
