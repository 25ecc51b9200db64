"""`pip install .` (not editable) into a fresh venv gives working commands that find their data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv

import pytest

from tests.conftest import REPO


@pytest.mark.integration
def test_wheel_install_into_fresh_venv_has_working_commands(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "RL_ADVISOR_HOME": str(tmp_path / "home")}
    # Build from a copy of the tracked tree so no editable/egg-info state leaks in.
    src = tmp_path / "src"
    subprocess.run(["git", "-C", str(REPO), "worktree", "list"], check=True, capture_output=True)
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"],
                           check=True, capture_output=True, text=True).stdout.split()
    for rel in files:
        if not (REPO / rel).is_file():
            continue
        dest = src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes((REPO / rel).read_bytes())
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", str(src)], capture_output=True,
                             text=True, env=env, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    bin_dir = env_dir / "bin"
    out = subprocess.run([str(bin_dir / "rl-advisor"), "--help"], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "choose-method" in out.stdout
    # The installed package must find templates/ and guide/ away from the source tree.
    probe = subprocess.run(
        [str(py), "-c", "import json; from advisor import bundle as paths; r = paths.bundle_root(); "
         "print(json.dumps({'root': str(r), 'templates': paths.templates_dir().is_dir(), "
         "'guide': paths.guide_dir().is_dir(), 'skill': paths.skill_file().is_file()}))"],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert found["templates"] and found["guide"] and found["skill"], found
    assert "site-packages" in found["root"], found
    method = subprocess.run([str(bin_dir / "rl-advisor"), "choose-method", "--task", "chat", "--data",
                             "preference_pairs", "--json"], capture_output=True, text=True, env=env,
                            cwd=tmp_path)
    assert method.returncode == 0, method.stderr
    assert json.loads(method.stdout)["ranked"][0]["method"] in {"dpo", "simpo", "orpo"}
    # A heavy import at start-up would show here: the core must not pull in torch/ray/kubernetes.
    heavy = subprocess.run([str(py), "-c", "import sys, rl_advisor.mcp_server, rl_advisor.cli; "
                            "print(sorted(m for m in ('torch','ray','kubernetes','transformers') if m in sys.modules))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert heavy.stdout.strip() == "[]", heavy.stdout + heavy.stderr
