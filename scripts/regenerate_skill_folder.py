"""Write skills/rl-advisor/: the skill alone (SKILL.md, examples.md, guide/), for installers that
copy a skill's whole folder and refuse a large one (`npx skillmds add`: at most 200 files), e.g.

    npx -p skillmds skillmd add ./skills/rl-advisor      # or OWNER/REPO/skills/rl-advisor
    npx skills add .                                     # the root SKILL.md; also works on this folder

The repository root stays a skill too (Claude Code plugin, `ln -s`). tests/test_skill_install.py
fails when this folder differs from the files it copies.

    .venv/bin/python scripts/regenerate_skill_folder.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "skills" / "rl-advisor"


def skill_files() -> list[Path]:
    """What a skill install ships, relative to the repository root."""
    files = [Path("SKILL.md"), Path("examples.md")]
    files += sorted(p.relative_to(REPO) for p in (REPO / "guide").rglob("*.md"))
    return files


def main() -> None:
    if TARGET.exists():
        shutil.rmtree(TARGET)
    for rel in skill_files():
        dest = TARGET / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, dest)
    print(f"wrote {len(skill_files())} files to {TARGET.relative_to(REPO)}")


if __name__ == "__main__":
    main()
