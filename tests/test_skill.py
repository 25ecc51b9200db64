"""The skill folder: SKILL.md is valid under the Agent Skills specification, and its references work.

``agentskills validate`` (PyPI skills-ref) is run as a subprocess, the way CI or an installer
would, on (a) a clean copy holding only what a skill install ships (SKILL.md, guide/, examples.md)
in a folder named after the skill, and (b) the repository root itself installed by symlink, as
``ln -s $PWD ~/.claude/skills/rl-advisor`` does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

SKILL = REPO / "SKILL.md"
GUIDE = REPO / "guide"
SPEC_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}

# Every topic file the issue asks for; H1's choose tools cite these names as guide sections.
GUIDE_FILES = [
    "loop-and-roles.md", "algorithms.md", "systems-architecture.md", "frameworks.md",
    "ray-and-kubernetes.md", "performance.md", "memory-budgeting.md", "reward-hacking-and-eval.md",
    "preference-data-and-rlaif.md", "troubleshooting.md", "decision-guides.md", "red-flags.md",
    "rationalizations.md", "verification-gate.md",
]

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def split_skill(text: str) -> tuple[dict, str]:
    """Frontmatter mapping and body of a SKILL.md."""
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert match, "SKILL.md must start with a --- YAML frontmatter block ---"
    return yaml.safe_load(match.group(1)), match.group(2)


def agentskills() -> str:
    exe = Path(sys.executable).with_name("agentskills")
    if exe.exists():
        return str(exe)
    found = shutil.which("agentskills")
    if not found:
        pytest.fail("agentskills (PyPI skills-ref) is not installed; it is in the dev extra")
    return found


def run_validate(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([agentskills(), "validate", str(folder)], capture_output=True, text=True,
                          timeout=120)


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[`*_~]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
        elif not in_fence:
            out |= set(re.findall(r'<a id="([^"]+)"', line))  # explicit HTML anchors
    return out


def markdown_files() -> list[Path]:
    return [SKILL, REPO / "examples.md", *sorted(GUIDE.rglob("*.md"))]


def links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file: not inside fenced blocks or inline code spans
    (CommonMark gives code spans precedence, so a regex such as `[- ](?:the\\s+)` in a generated
    reference table is code, not a link)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]+`", "", text)
    return LINK.findall(text)


# --------------------------------------------------------------------------- the spec validator


def test_agentskills_validate_passes_on_a_clean_install_copy(tmp_path):
    folder = tmp_path / "rl-advisor"
    folder.mkdir()
    shutil.copy2(SKILL, folder / "SKILL.md")
    shutil.copy2(REPO / "examples.md", folder / "examples.md")
    shutil.copytree(GUIDE, folder / "guide")
    result = run_validate(folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Valid skill" in result.stdout


def test_repo_root_installs_as_a_skill_folder(tmp_path):
    installed = tmp_path / "skills" / "rl-advisor"
    installed.parent.mkdir()
    installed.symlink_to(REPO, target_is_directory=True)
    result = run_validate(installed)
    assert result.returncode == 0, result.stdout + result.stderr


def test_validator_is_not_a_rubber_stamp(tmp_path):
    """The same validator rejects a non-spec key and a folder whose name differs from `name`."""
    front, body = split_skill(SKILL.read_text(encoding="utf-8"))
    bad = tmp_path / "rl-advisor"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\n" + yaml.safe_dump({**front, "version": "1"}) + "---\n" + body)
    assert run_validate(bad).returncode != 0
    wrong_dir = tmp_path / "other-name"
    wrong_dir.mkdir()
    shutil.copy2(SKILL, wrong_dir / "SKILL.md")
    assert run_validate(wrong_dir).returncode != 0


# --------------------------------------------------------------------------- frontmatter and body


def test_frontmatter_uses_only_spec_keys_and_limits():
    front, body = split_skill(SKILL.read_text(encoding="utf-8"))
    assert set(front) <= SPEC_KEYS, set(front) - SPEC_KEYS
    assert front["name"] == "rl-advisor"
    description = front["description"]
    assert 200 <= len(description) <= 1024, len(description)
    assert description.startswith(("Plan", "Use")), "say what it does first"
    assert "Use this skill" in description, "say when to use it"
    for trigger in ("PPO", "GRPO", "DPO", "veRL", "OpenRLHF", "TRL", "OOM", "reward hacking", "KL"):
        assert trigger in description, f"trigger term {trigger!r} missing from the description"
    assert len(front.get("compatibility", "")) <= 500
    assert all(isinstance(v, str) for v in front.get("metadata", {}).values()), \
        "metadata must be a string-to-string map"
    assert len(body.splitlines()) < 500


def test_skill_names_every_tool_and_the_cli():
    text = SKILL.read_text(encoding="utf-8")
    for tool in ("choose_method", "choose_framework", "budget_memory", "plan_placement",
                 "render_config", "launch_run", "run_status", "run_metrics", "diagnose_run",
                 "validate_plan", "import_config"):
        assert f"`{tool}`" in text, tool
    assert "rl-advisor choose-method" in text
    assert "rl-advisor diagnose FILE --json" in text


def _tool_table_names() -> set[str]:
    """Tool names in the second column of SKILL.md's "When to use what" table."""
    text = SKILL.read_text(encoding="utf-8")
    section = text[text.index("## When to use what"):text.index("Rules for using the tools")]
    names: set[str] = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and "`" in cells[1]:
            names |= set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", cells[1]))
            names |= set(re.findall(r"^`([a-z]+)`", cells[1]))  # a one-word tool leads its cell
    return names


def test_skill_tools_exist_in_the_registry():
    """Every tool SKILL.md tells the agent to call is registered, so the skill never points at a
    tool the server cannot have."""
    from rl_advisor.tools import TOOLS

    named = _tool_table_names()
    assert len(named) >= 14, named
    missing = sorted(named - {spec.name for spec in TOOLS})
    assert not missing, f"SKILL.md names tools that are not in rl_advisor.tools.TOOLS: {missing}"


def test_cli_examples_in_the_skill_parse_with_the_real_cli():
    """Every `rl-advisor ...` command quoted in SKILL.md and the guide is accepted by the CLI."""
    import shlex

    from rl_advisor.cli import build_parser

    plan = REPO / "examples" / "plans" / "grpo-qwen2.5-7b-8xh100.yaml"
    commands = []
    for doc in [SKILL, *sorted(GUIDE.rglob("*.md"))]:
        commands += re.findall(r"`(rl-advisor [^`]+)`", doc.read_text(encoding="utf-8"))
    assert len(commands) >= 10
    for cmd in sorted(set(commands)):
        argv = shlex.split(cmd.replace("plan.yaml", str(plan)).replace("FILE", "run.log")
                           .replace(" ID", " run-1").replace("...", ""))[1:]
        parser = build_parser()
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"`{cmd}` is rejected by the rl-advisor CLI (exit {exc.code})")


# --------------------------------------------------------------------------- links


def test_every_guide_topic_exists_and_is_linked_from_skill():
    skill_links = set(links(SKILL))
    present = sorted(p.name for p in GUIDE.glob("*.md"))
    assert present == sorted(GUIDE_FILES), "guide/ must hold exactly the topic files"
    for name in GUIDE_FILES:
        assert f"guide/{name}" in skill_links, f"SKILL.md does not link guide/{name}"
    assert "examples.md" in skill_links


def test_references_are_one_level_deep_from_skill():
    for target in links(SKILL):
        if re.match(r"^[a-z]+://", target):
            continue
        path = target.split("#", 1)[0]
        assert path.count("/") <= 1, f"{target}: keep references one level deep"


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(doc):
    assert doc.is_file()
    for target in links(doc):
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        assert dest.is_file(), f"{doc.name}: broken link {target}"
        assert REPO in dest.parents or dest == REPO, f"{doc.name}: {target} leaves the skill folder"
        if anchor:
            assert anchor in anchors(dest), f"{doc.name}: no heading #{anchor} in {dest.name}"


def test_guide_pages_do_not_reference_deeper_than_the_skill_root():
    """Guide pages link to siblings, to reference/ tables or to ../examples.md, never into the
    code tree; reference pages link back up to the prose pages."""
    for doc in GUIDE.rglob("*.md"):
        in_reference = doc.parent.name == "reference"
        for target in links(doc):
            if re.match(r"^[a-z]+://", target):
                continue
            path = target.split("#", 1)[0]
            if in_reference:
                ok = path == "" or "/" not in path or re.fullmatch(r"\.\./[a-z-]+\.md", path) \
                    or path in ("../../examples.md", "../../SKILL.md")
            else:
                ok = path in ("", "../examples.md", "../SKILL.md") or "/" not in path or \
                    re.fullmatch(r"reference/[a-z-]+\.md", path)
            assert ok, f"{doc.relative_to(GUIDE)}: {target}"


def test_every_registered_tool_is_in_the_skill_table():
    """Both directions: a new tool must be introduced to the agent in SKILL.md's table."""
    from rl_advisor.tools import TOOLS

    registered = {spec.name for spec in TOOLS if not spec.cli_only}
    named = _tool_table_names()
    assert registered - named == set(), f"tools missing from SKILL.md's table: {sorted(registered - named)}"
    assert named - registered == set(), f"SKILL.md's table names unknown tools: {sorted(named - registered)}"


def test_tool_like_names_in_the_skill_are_real():
    """Every snake_case name in SKILL.md that starts like a tool (choose_, budget_, run_, ...) is a
    registered tool, one of the tools' parameters or a field of every answer, so prose never points at a stale name."""
    import typing

    from rl_advisor.tool_surface import VIEW_FIELDS
    from rl_advisor.tools import available_tools

    tools, params = set(), set(VIEW_FIELDS)
    for spec, fn in available_tools():
        tools.add(spec.name)
        params |= set(typing.get_type_hints(fn)) - {"return"}
    verbs = {name.split("_", 1)[0] for name in tools}
    text = SKILL.read_text(encoding="utf-8")
    found = set(re.findall(r"\b((?:%s)_[a-z_]*[a-z])\b" % "|".join(sorted(verbs)), text))
    stale = sorted(found - tools - params)
    assert not stale, f"SKILL.md names tool-like things that do not exist: {stale}"


PROSE_TOKEN_LIMIT = 4000  # "readable on demand": about 4k tokens per prose page (issue #20)


@pytest.mark.parametrize("page", sorted(GUIDE.glob("*.md")), ids=lambda p: p.name)
def test_prose_pages_are_short_with_a_contents_line(page):
    """Each prose page stays under about 4k tokens (4 characters a token, a common estimate for
    English Markdown) and opens with a contents line linking every section, in order; generated
    tables live in guide/reference/ and are linked, not inlined."""
    text = page.read_text(encoding="utf-8")
    assert len(text) / 4 < PROSE_TOKEN_LIMIT, f"{page.name}: ~{len(text) // 4} tokens"
    assert "<!-- BEGIN GENERATED" not in text, f"{page.name}: move generated tables to guide/reference/"
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    sections = [h.strip() for h in re.findall(r"^## (.+)$", body, re.M)]
    if len(sections) < 2:
        return
    head = text.split("\n")[:4]
    toc = next((line for line in head if line.startswith("**Contents:**")), None)
    assert toc, f"{page.name}: no contents line at the top"
    assert re.findall(r"\]\(#([^)]+)\)", toc) == [slug(s) for s in sections], f"{page.name}: stale contents"
