"""The layers of the developers' guide, enforced by import-linter contracts (pyproject.toml):
advisor/ (the pure core) imports nothing from backends/ or rl_advisor/, backends/ nothing from
rl_advisor/, and the core loads no heavy library, not even in a function-level import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _lint(config: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_the_layer_contracts_hold() -> None:
    out = _lint(REPO / "pyproject.toml")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken" in out.stdout, out.stdout[-2000:]


def test_a_core_module_importing_a_face_breaks_the_contract(tmp_path: Path) -> None:
    """The contract can fail: the same check over a copy with one upward import is broken."""
    import shutil

    copy = tmp_path / "repo"
    for pkg in ("advisor", "backends", "rl_advisor"):
        shutil.copytree(REPO / pkg, copy / pkg, ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    (copy / "advisor" / "sneaky.py").write_text("def f():\n    from rl_advisor import cli\n    return cli\n")
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(copy / 'pyproject.toml')!r}, no_cache=True))")
    out = subprocess.run([sys.executable, "-c", code], cwd=copy, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert out.returncode != 0
    assert "advisor.sneaky -> rl_advisor.cli" in out.stdout, out.stdout[-3000:]
