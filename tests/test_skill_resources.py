"""The MCP server serves the skill: SKILL.md, examples.md and every guide/ page, byte for byte.

An agent connected only over MCP (no file access) must be able to read everything the skill
links to, so every page linked from SKILL.md has a resource, listed and readable.
"""

from __future__ import annotations

from mcp import Client

from rl_advisor.mcp_server import build_server
from tests.conftest import REPO


def expected_resources() -> dict[str, str]:
    out = {"rl-advisor://skill": (REPO / "SKILL.md").read_text(encoding="utf-8"),
           "rl-advisor://examples": (REPO / "examples.md").read_text(encoding="utf-8")}
    for page in sorted((REPO / "guide").rglob("*.md")):
        rel = page.relative_to(REPO / "guide").with_suffix("").as_posix()
        out[f"rl-advisor://guide/{rel}"] = page.read_text(encoding="utf-8")
    return out


async def test_every_skill_file_is_listed_and_reads_back_identically():
    expected = expected_resources()
    topics = len(list((REPO / "guide").glob("*.md")))
    assert topics == 14 and len(expected) > 16, sorted(expected)  # + guide/reference tables
    async with Client(build_server()) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        missing = sorted(set(expected) - set(listed))
        assert not missing, f"not served: {missing}"
        for uri, text in expected.items():
            assert listed[uri].mime_type == "text/markdown", uri
            result = await client.read_resource(uri)
            contents = result.contents
            assert len(contents) == 1, uri
            assert contents[0].text == text, f"{uri} differs from the file on disk"


async def test_skill_resource_is_the_frontmatter_skill():
    async with Client(build_server()) as client:
        result = await client.read_resource("rl-advisor://skill")
        text = result.contents[0].text
        assert text.startswith("---\nname: rl-advisor\n")
        # the guide pages the skill points at are reachable by the URIs it implies
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        for stem in ("troubleshooting", "memory-budgeting", "decision-guides"):
            assert f"guide/{stem}.md" in text
            assert f"rl-advisor://guide/{stem}" in listed
