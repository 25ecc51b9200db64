"""One-command installs: `npx skills add` and `npx skillmds add` install the skill with its guide;
the repository is also a Claude Code plugin (root SKILL.md + .mcp.json) that brings the server.

skills/rl-advisor/ is a generated copy of the skill alone (scripts/regenerate_skill_folder.py):
skillmd installs a skill's whole folder and refuses one of more than 200 files, which the
repository root is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))

import regenerate_skill_folder  # noqa: E402

NPX = shutil.which("npx")


def test_skill_folder_is_a_fresh_copy_of_the_skill():
    target = regenerate_skill_folder.TARGET
    expected = {rel.as_posix() for rel in regenerate_skill_folder.skill_files()}
    present = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    assert present == expected, "run scripts/regenerate_skill_folder.py (make examples)"
    for rel in expected:
        assert (target / rel).read_bytes() == (REPO / rel).read_bytes(), \
            f"skills/rl-advisor/{rel} is stale: run scripts/regenerate_skill_folder.py"
    assert len(expected) < 200, "skillmd refuses a skill folder of more than 200 files"


def test_claude_code_plugin_brings_skill_and_server():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == project["name"] == "rl-advisor"
    assert manifest["version"] == project["version"]
    assert (REPO / "SKILL.md").read_text().startswith("---\nname: rl-advisor\n")
    servers = json.loads((REPO / ".mcp.json").read_text())["mcpServers"]
    assert servers["rl-advisor"]["command"] in project["scripts"], "the server is the package's entry point"
    claude = shutil.which("claude")
    if claude:  # Claude Code's own check, where it is installed
        out = subprocess.run([claude, "plugin", "validate", str(REPO)], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr


def _tracked_copy(dest: Path) -> Path:
    """The repository as a clone has it (tracked and new files, nothing ignored)."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"],
                           check=True, capture_output=True, text=True).stdout.split("\n")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / rel)
    return dest


def _npx(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "CI": "1",
           "npm_config_cache": os.environ.get("npm_config_cache", str(Path.home() / ".npm")),
           "DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"}
    return subprocess.run([NPX, "-y", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def _assert_installed(project: Path) -> None:
    installed = project / ".claude" / "skills" / "rl-advisor"
    assert (installed / "SKILL.md").read_bytes() == (REPO / "SKILL.md").read_bytes()
    assert (installed / "examples.md").is_file()
    for page in (REPO / "guide").rglob("*.md"):
        rel = page.relative_to(REPO)
        assert (installed / rel).read_bytes() == page.read_bytes(), f"{rel} not installed"


@pytest.mark.integration
@pytest.mark.skipif(NPX is None, reason="npx is not installed")
@pytest.mark.parametrize("installer", ["skills", "skillmds"])
def test_one_command_install_brings_the_guide(tmp_path, installer):
    source = _tracked_copy(tmp_path / "rl-advisor-src")
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    if installer == "skills":
        out = _npx(["skills", "add", str(source), "-a", "claude-code", "--copy", "-y"], project, home)
    else:
        out = _npx(["-p", "skillmds", "skillmd", "add", str(source / "skills" / "rl-advisor"), "-p",
                    "-a", "claude-code", "--mode", "copy", "-y"], project, home)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    _assert_installed(project)


@pytest.mark.integration
@pytest.mark.skipif(NPX is None, reason="npx is not installed")
def test_skillmd_lint_passes(tmp_path):
    out = _npx(["-p", "skillmds", "skillmd", "lint", str(REPO / "skills" / "rl-advisor")], REPO, tmp_path)
    assert out.returncode == 0 and "PASS" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]
