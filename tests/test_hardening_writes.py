"""Writes that cannot escape, and run files private to the user (issue 14).

render_config(output_dir) used to check the folder and then write by path: swapping the folder
for a symlink during the call wrote outside the allowed roots, and a hard link planted at an
artifact's name overwrote an outside file. Here both attacks run against the real code, and the
outside folder/file must never change.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from mcp import Client

from advisor.errors import AdvisorError
from advisor.plan import plan_from_dict
from advisor.render import render_config
from rl_advisor.mcp_server import build_server
from rl_advisor.render_tool import write_artifacts
from rl_advisor.safe_paths import untrusted_caller
from tests.conftest import example_plan_path


def _plan_dict() -> dict:
    return yaml.safe_load(example_plan_path().read_text(encoding="utf-8"))


@pytest.fixture
def rendered():
    return render_config(plan_from_dict(_plan_dict()))


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("RL_ADVISOR_ALLOWED_ROOTS", raising=False)
    return {"root": root, "outside": outside}


SWAPPER = """
import os, sys
real, outside, link = sys.argv[1:4]
tmp = link + ".swap"
while True:
    for target in (real, outside):
        try:
            os.symlink(target, tmp)
            os.replace(tmp, link)
        except OSError:
            pass
"""


def test_symlink_swap_during_writes_never_writes_outside(rendered, sandbox: dict[str, Path]) -> None:
    """Another process flips root/out between a folder inside and one outside, as fast as it can,
    while 400 render writes run against it."""
    root, outside = sandbox["root"], sandbox["outside"]
    real, link = root / "real", root / "out"
    real.mkdir()
    link.symlink_to(real, target_is_directory=True)
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(real), str(outside), str(link)])
    tries, wrote, refused = 400, 0, 0
    try:
        with untrusted_caller():
            for _ in range(tries):
                try:
                    write_artifacts(rendered, "out")
                    wrote += 1
                except AdvisorError:
                    refused += 1
    finally:
        proc.kill()
        proc.wait()
    assert list(outside.iterdir()) == [], "a write escaped the allowed roots"
    assert wrote + refused == tries


def test_folder_swapped_between_check_and_write_is_not_followed(
        rendered, sandbox: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The race made deterministic: right after the folder passed its check, it is replaced by a
    symlink to an outside folder (what the attacker's swap does at the worst moment)."""
    from rl_advisor import safe_paths

    root, outside = sandbox["root"], sandbox["outside"]
    checked = safe_paths.writable_dir

    def check_then_swap(path, **kw):
        target = checked(path, **kw)
        target.rename(target.with_name("moved-away"))
        target.symlink_to(outside, target_is_directory=True)
        return target

    monkeypatch.setattr(safe_paths, "writable_dir", check_then_swap)
    with untrusted_caller(), pytest.raises(AdvisorError) as info:
        write_artifacts(rendered, "out")
    assert info.value.problems[0].field == "output_dir"
    assert list(outside.iterdir()) == []


def test_hard_link_at_an_artifact_name_is_refused(rendered, sandbox: dict[str, Path]) -> None:
    root, outside = sandbox["root"], sandbox["outside"]
    victim = outside / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    victim.chmod(0o600)
    out = root / "out"
    out.mkdir()
    name = next(a.name for a in rendered.artifacts if a.format == "shell")
    os.link(victim, out / name)

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool("render_config", {"plan": _plan_dict(), "validate": False,
                                                            "output_dir": "out"})

    with start_blocking_portal() as portal:
        result = portal.call(go)
    assert result.is_error
    payload = json.loads(result.content[0].text)
    assert payload["problems"][0]["field"] == "output_dir"
    assert "hard link" in payload["problems"][0]["message"]
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_symlink_at_an_artifact_name_is_replaced_not_followed(rendered, sandbox: dict[str, Path]) -> None:
    root, outside = sandbox["root"], sandbox["outside"]
    victim = outside / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    out = root / "out"
    out.mkdir()
    name = rendered.artifacts[0].name
    (out / name).symlink_to(victim)
    with untrusted_caller():
        write_artifacts(rendered, "out")
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert not (out / name).is_symlink()


def test_outside_error_does_not_reveal_where_a_path_resolves(sandbox: dict[str, Path], rendered) -> None:
    root, outside = sandbox["root"], sandbox["outside"]
    (root / "sneaky").symlink_to(outside, target_is_directory=True)
    with untrusted_caller(), pytest.raises(AdvisorError) as info:
        write_artifacts(rendered, "sneaky")
    assert str(outside) not in str(info.value).split("allowed:")[0]


def test_run_folder_files_and_registry_are_private(rendered, tmp_path: Path) -> None:
    from backends.registry import RunRegistry, runs_root
    from rl_advisor.launch_tools import _write_artifacts

    run_dir = runs_root() / "r1"
    spec = SimpleNamespace(run_dir=str(run_dir), working_dir=str(run_dir / "work"))
    artifacts = _write_artifacts(rendered, spec)
    assert stat.S_IMODE(runs_root().stat().st_mode) == 0o700
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((run_dir / "work").stat().st_mode) == 0o700
    for art in artifacts:
        mode = stat.S_IMODE(Path(art["path"]).stat().st_mode)
        assert mode == (0o700 if art["format"] == "shell" else 0o600), (art["name"], oct(mode))
    reg = RunRegistry(tmp_path / "reg" / "registry.sqlite3")
    assert stat.S_IMODE(reg.path.stat().st_mode) == 0o600


def test_run_console_log_is_scrubbed_and_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a trainer prints goes through the one scrubber before it lands in console.log: a
    token from the run's environment (known value) and token shapes (stderr too, tqdm's \\r)."""
    import time

    from backends.local import LocalBackend
    from backends.protocol import LaunchSpec, RunRecord, RunState, utcnow

    hf, gh = "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12", "ghp_" + "Q" * 36
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "correct-horse-battery-staple")
    code = ("import os, sys\n"
            f"print('token {hf}', flush=True)\n"
            f"print('\\rclone https://x:{gh}@github.com', file=sys.stderr, flush=True)\n"
            "print('pw', os.environ['MY_SERVICE_PASSWORD'])\nprint('done')\n")
    run_dir = tmp_path / "run"
    spec = LaunchSpec(run_id="r1", name="t", framework="trl", run_dir=str(run_dir),
                      working_dir=str(run_dir / "work"), entrypoint=[sys.executable, "-c", code])
    backend = LocalBackend()
    ids = backend.submit(spec)
    now = utcnow()
    rec = RunRecord(run_id="r1", name="t", created_at=now, updated_at=now, backend="local",
                    framework="trl", state=RunState.RUNNING, backend_ids=ids, run_dir=str(run_dir),
                    log_paths={"console": str(run_dir / "console.log")})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not backend.status(rec).terminal:
        time.sleep(0.1)
    assert backend.status(rec).state == RunState.SUCCEEDED
    log = (run_dir / "console.log").read_text(encoding="utf-8")
    assert "done" in log and "<redacted>" in log
    for secret in (hf, gh, "correct-horse-battery-staple"):
        assert secret not in log
    for name in ("console.log", "exit.json", "runner.json"):
        assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700


def test_run_folder_artifacts_match_the_registry_and_hold_no_secret(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from backends.registry import runs_root
    from rl_advisor.launch_tools import _write_artifacts

    hf = "hf_OnlyInThePlanNotInTheEnvironment99"
    plan = _plan_dict()
    plan["env"] = {"HF_TOKEN": hf, "DB_URL": "postgres://bob:hunter2pass@db/x", "PLAIN": "ok"}
    rendered = render_config(plan_from_dict(plan))
    run_dir = runs_root() / "r2"
    artifacts = _write_artifacts(rendered, SimpleNamespace(run_dir=str(run_dir),
                                                           working_dir=str(run_dir / "work")))
    for art in artifacts:
        on_disk = Path(art["path"]).read_text(encoding="utf-8")
        assert on_disk == art["content"], art["name"]  # the record and the file agree
        assert hf not in on_disk and "hunter2pass" not in on_disk, art["name"]
