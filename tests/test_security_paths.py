"""Launch safety for files: what an MCP client may make the server read or write (issue 9).

Paths sent over MCP are resolved (symlinks, '..') and must lie under the allowed roots: the
server's working folder, the rl-advisor data folder and $RL_ADVISOR_ALLOWED_ROOTS. Files are
opened read-only; FIFOs and devices are refused. A person at the CLI is not confined.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client

from advisor.errors import AdvisorError
from rl_advisor import safe_paths
from rl_advisor.mcp_server import build_server
from rl_advisor.safe_paths import (allowed_roots, open_for_reading, resolve_allowed,
                                   untrusted_caller, writable_dir)

METRICS = "\n".join(json.dumps({"step": i, "reward": 0.1 * i, "kl": 0.001 * i, "entropy": 1.0})
                    for i in range(1, 21)) + "\n"


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """cwd = work/ (allowed); outside/ is a sibling with a 'secret' file."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (outside / "metrics.jsonl").write_text(METRICS)
    (work / "run").mkdir()
    (work / "run" / "metrics.jsonl").write_text(METRICS)
    monkeypatch.chdir(work)
    monkeypatch.delenv(safe_paths.ROOTS_ENV, raising=False)
    return {"work": work, "outside": outside}


# --------------------------------------------------------------------------- the module


def test_reads_inside_the_roots_read_only(layout: dict[str, Path]) -> None:
    with open_for_reading("run/metrics.jsonl") as fh:
        assert fh.readline().startswith('{"step": 1')
        with pytest.raises(OSError):
            fh.write("x")  # type: ignore[arg-type]
    with open_for_reading(layout["work"] / "run" / "metrics.jsonl", binary=True) as fh:
        assert fh.read(1) == b"{"


@pytest.mark.parametrize("make", [
    lambda L: str(L["outside"] / "secret.txt"),                       # absolute, outside
    lambda L: "../outside/secret.txt",                                 # traversal
    lambda L: "run/../../outside/secret.txt",                          # traversal through a folder
    lambda L: "/etc/passwd",
    lambda L: "~/.bashrc",
    lambda L: "/proc/self/environ",
])
def test_refuses_paths_outside_the_roots(layout: dict[str, Path], make: Any) -> None:
    path = make(layout)
    with pytest.raises(AdvisorError) as err:
        open_for_reading(path).close()
    assert err.value.problems[0].field == "path"
    assert "outside the folders" in err.value.problems[0].message or \
        "no such file" in err.value.problems[0].message


def test_symlinks_are_resolved_before_the_check(layout: dict[str, Path]) -> None:
    work, outside = layout["work"], layout["outside"]
    (work / "innocent.log").symlink_to(outside / "secret.txt")
    (work / "escape").symlink_to(outside, target_is_directory=True)
    (work / "alias.jsonl").symlink_to(work / "run" / "metrics.jsonl")
    for path in ("innocent.log", "escape/secret.txt", "escape/../escape/secret.txt"):
        with pytest.raises(AdvisorError, match="outside the folders"):
            open_for_reading(path).close()
    with open_for_reading("alias.jsonl") as fh:  # a link that stays inside is fine
        assert fh.read(1) == "{"


def test_extra_roots_from_the_environment(layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(safe_paths.ROOTS_ENV, f"/nonexistent{os.pathsep}{layout['outside']}")
    assert layout["outside"].resolve() in allowed_roots()
    with open_for_reading(layout["outside"] / "secret.txt") as fh:
        assert fh.read() == "TOP SECRET\n"


def test_data_dir_is_a_root(layout: dict[str, Path]) -> None:
    from backends.data_folder import data_dir

    log = data_dir() / "runs" / "r1" / "console.log"
    log.parent.mkdir(parents=True)
    log.write_text("hello\n")
    assert resolve_allowed(log) == log.resolve()


def test_refuses_fifos_folders_and_bad_strings(layout: dict[str, Path]) -> None:
    os.mkfifo(layout["work"] / "pipe")
    done = threading.Event()

    def attempt() -> None:
        with pytest.raises(AdvisorError, match="regular file"):
            open_for_reading("pipe").close()
        done.set()

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(5)
    assert done.is_set(), "opening a FIFO blocked the caller"
    with pytest.raises(AdvisorError, match="regular file"):
        open_for_reading("run").close()
    for bad in ("", "   ", "a\x00b", "x" * 5000):
        with pytest.raises(AdvisorError):
            open_for_reading(bad).close()
    with pytest.raises(AdvisorError, match="no such file"):
        open_for_reading("missing.log").close()


def test_writable_dir_is_confined_only_for_untrusted_callers(layout: dict[str, Path]) -> None:
    outside = layout["outside"] / "out"
    assert writable_dir(outside) == outside.resolve()  # a local user may write anywhere
    with untrusted_caller():
        assert writable_dir("rendered") == (layout["work"] / "rendered").resolve()
        with pytest.raises(AdvisorError, match="outside the folders") as err:
            writable_dir(layout["outside"] / "out2")
        assert err.value.problems[0].field == "output_dir"
        (layout["work"] / "link").symlink_to(layout["outside"], target_is_directory=True)
        with pytest.raises(AdvisorError, match="outside the folders"):
            writable_dir("link/new")
    assert not (layout["outside"] / "out2").exists()
    assert not (layout["outside"] / "new").exists()


# --------------------------------------------------------------------------- through the MCP server


def _call(tool: str, args: dict[str, Any]) -> Any:
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            return portal.call(client.call_tool, tool, args)


def _fields(result: Any) -> list[str]:
    assert result.is_error, result.structured_content
    return [p["field"] for p in json.loads(result.content[0].text)["problems"]]


def test_diagnose_run_over_mcp_reads_only_allowed_files(layout: dict[str, Path]) -> None:
    work, outside = layout["work"], layout["outside"]
    ok = _call("diagnose_run", {"path": "run/metrics.jsonl"})
    assert not ok.is_error, ok.content
    ok_dir = _call("diagnose_run", {"path": str(work / "run")})
    assert not ok_dir.is_error, ok_dir.content

    (work / "innocent.jsonl").symlink_to(outside / "metrics.jsonl")
    (work / "run" / "planted.jsonl").symlink_to(outside / "metrics.jsonl")
    for path in (str(outside / "metrics.jsonl"), "../outside/metrics.jsonl", "innocent.jsonl",
                 "/etc/passwd", "/proc/self/environ"):
        result = _call("diagnose_run", {"path": path})
        assert _fields(result) == ["path"], (path, result.content)
        assert "TOP SECRET" not in result.content[0].text
    # a run folder holding a link out of the roots is refused, not silently followed
    assert _fields(_call("diagnose_run", {"path": "run"})) == ["path"]


def test_diagnose_from_the_cli_is_not_confined(layout: dict[str, Path]) -> None:
    """The person at the terminal may point at any file they can read."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "rl_advisor.cli", "diagnose-run", "--path",
                           str(layout["outside"] / "metrics.jsonl"), "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)


def test_render_config_output_dir_is_confined_over_mcp(layout: dict[str, Path]) -> None:
    from tests.conftest import example_plan_path

    import yaml

    plan = yaml.safe_load(example_plan_path().read_text())
    target = layout["outside"] / "artifacts"
    bad = _call("render_config", {"plan": plan, "output_dir": str(target), "validate": False})
    assert _fields(bad) == ["output_dir"]
    assert not target.exists()
    good = _call("render_config", {"plan": plan, "output_dir": "artifacts", "validate": False})
    assert not good.is_error, good.content
    assert good.structured_content["written"]
    assert all(Path(p).resolve().is_relative_to(layout["work"].resolve())
               for p in good.structured_content["written"])
