"""Ray backend: Ray's Job Submission REST API over plain HTTP (httpx; no ``ray`` needed here).

Routes (served by the dashboard's JobHead, research/runtime.md §2): ``GET /api/version``,
``POST /api/jobs/``, ``GET /api/jobs/{id}``, ``GET /api/jobs/{id}/logs``,
``POST /api/jobs/{id}/stop``; node resources from ``GET /nodes?view=summary``.

The submission id is the registry's run id, chosen *before* submitting, so a launcher that
dies right after the POST still left an id that finds the job.

A job whose resources can never be satisfied stays PENDING on Ray for
``RAY_JOB_START_TIMEOUT_SECONDS`` (900 s) and ``stop`` does nothing to it (runtime.md pitfall 4),
so ``preflight`` compares the request with the live nodes and refuses it up front.

Working directory: on a head that shares this machine's file system (a loopback address) the
entrypoint runs in the run's own folder (``cd DIR && ...``), so metric files are read in place.
Against a remote head the folder is zipped and uploaded as a ``gcs://_ray_pkg_<sha>.zip``
package (``PUT /api/packages/gcs/...``) and metrics are read from the job's log instead.
"""

from __future__ import annotations

import hashlib
import io
import os
import shlex
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlparse

from backends.protocol import BackendError, LaunchSpec, RunRecord, RunState, RunStatus

_STATES = {"PENDING": RunState.PENDING, "RUNNING": RunState.RUNNING,
           "SUCCEEDED": RunState.SUCCEEDED, "FAILED": RunState.FAILED, "STOPPED": RunState.STOPPED}
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
MAX_UPLOAD_BYTES = 100 * 1024 * 1024


def normalize_address(address: str | None) -> str:
    address = (address or "http://127.0.0.1:8265").strip().rstrip("/")
    if address.startswith("ray://"):
        raise BackendError("ray:// (Ray Client) addresses are not the Jobs API; give the dashboard "
                           "URL, e.g. http://HEAD:8265", reason="bad_address")
    if "://" not in address:
        address = "http://" + address
    return address


# --------------------------------------------------------------------------- feasibility


def check_feasible(nodes: list[dict[str, float]], entrypoint: dict[str, float],
                   bundles: list[dict[str, float]], strategy: str) -> list[str]:
    """Why the request can never be scheduled on these nodes (empty list: it can).

    ``nodes`` are the alive nodes' total resources; ``entrypoint`` is what the job's driver
    needs; ``bundles`` the placement group the job will create. Pure, so it is unit-tested
    without a cluster.
    """
    problems: list[str] = []
    if not nodes:
        return ["the cluster has no alive nodes"]

    def fits(node: dict[str, float], need: dict[str, float]) -> bool:
        return all(node.get(k, 0.0) + 1e-9 >= v for k, v in need.items() if v > 0)

    def show(d: dict[str, float]) -> str:
        return "{" + ", ".join(f"{k}: {v:g}" for k, v in sorted(d.items()) if v > 0) + "}"

    keys = {k for n in nodes for k in n}
    largest = {k: max(n.get(k, 0.0) for n in nodes) for k in keys}
    if entrypoint and not any(fits(n, entrypoint) for n in nodes):
        problems.append(f"the entrypoint needs {show(entrypoint)} on one node; the largest node "
                        f"has {show({k: largest.get(k, 0.0) for k in entrypoint})}")
    for i, b in enumerate(bundles):
        if not any(fits(n, b) for n in nodes):
            problems.append(f"bundle {i} {show(b)} fits on no node (largest node: "
                            f"{show({k: largest.get(k, 0.0) for k in b})})")
            break
    total_need: dict[str, float] = {}
    for d in [entrypoint, *bundles]:
        for k, v in d.items():
            total_need[k] = total_need.get(k, 0.0) + v
    totals = {k: sum(n.get(k, 0.0) for n in nodes) for k in total_need}
    short = {k: v for k, v in total_need.items() if v > totals.get(k, 0.0) + 1e-9}
    if short:
        problems.append(f"the job needs {show(total_need)} in all but the cluster has "
                        f"{show(totals)}")
    if bundles and strategy == "STRICT_PACK":
        packed: dict[str, float] = {}
        for b in bundles:
            for k, v in b.items():
                packed[k] = packed.get(k, 0.0) + v
        if not any(fits(n, packed) for n in nodes):
            problems.append(f"STRICT_PACK needs {show(packed)} on a single node")
    if bundles and strategy == "STRICT_SPREAD":
        usable = sum(1 for n in nodes if all(fits(n, b) for b in bundles))
        if usable < len(bundles):
            problems.append(f"STRICT_SPREAD needs {len(bundles)} distinct nodes; {usable} can hold a bundle")
    return problems


# --------------------------------------------------------------------------- backend


class RayBackend:
    name = "ray"

    def __init__(self, address: str | None = None, *, timeout_s: float = 10.0,
                 upload: bool | None = None, token: str | None = None):
        self.address = normalize_address(address)
        self.timeout_s = timeout_s
        self._token = token  # None: Ray's own sources (backends.ray_auth)
        host = urlparse(self.address).hostname or ""
        self.shared_fs = host in LOOPBACK if upload is None else not upload

    # ------------------------------------------------------------------ http

    def _request(self, method: str, path: str, **kw: Any) -> Any:
        import httpx

        from backends.ray_auth import auth_headers

        url = self.address + path
        headers = {**auth_headers(self.address, self._token), **kw.pop("headers", {})}
        try:
            with httpx.Client(timeout=kw.pop("timeout", self.timeout_s), trust_env=False) as client:
                resp = client.request(method, url, headers=headers, **kw)
        except httpx.HTTPError as exc:
            raise BackendError(f"Ray head at {self.address} is unreachable ({type(exc).__name__}: "
                               f"{exc}); is `ray start --head` running with its dashboard?",
                               reason="unreachable") from None
        if resp.status_code == 404:
            raise BackendError(f"{method} {path}: not found on the Ray head {self.address}",
                               reason="not_found", status=404)
        if resp.status_code in (401, 403) and "token" in resp.text.lower():
            raise BackendError(f"the Ray head at {self.address} uses token authentication and "
                               f"{'refused the token sent' if headers else 'no token was found'} "
                               "(HTTP %d); give it as $RAY_AUTH_TOKEN, a file named by "
                               "$RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token (a remote head must "
                               "also be named in $RAY_ADDRESS)" % resp.status_code,
                               reason="unauthorized", status=resp.status_code)
        if resp.status_code >= 400:
            raise BackendError(f"{method} {path} failed with HTTP {resp.status_code}: "
                               f"{resp.text[:500]}", reason="http_error", status=resp.status_code)
        if not resp.content:
            return {}
        try:
            return resp.json()
        except ValueError:
            return {"text": resp.text}

    def version(self) -> dict[str, Any]:
        return self._request("GET", "/api/version")

    def node_resources(self) -> list[dict[str, float]]:
        data = self._request("GET", "/nodes?view=summary")
        out = []
        for node in (data.get("data") or {}).get("summary", []):
            raylet = node.get("raylet") or {}
            if raylet.get("state", "ALIVE") != "ALIVE":
                continue
            res = raylet.get("resourcesTotal") or {}
            out.append({k: float(v) for k, v in res.items() if isinstance(v, (int, float))})
        return out

    # ------------------------------------------------------------------ protocol

    def _entrypoint_resources(self, spec: LaunchSpec) -> dict[str, float]:
        r = spec.resources
        need = {"CPU": r.num_cpus, "GPU": r.num_gpus, **r.custom}
        if r.memory_bytes:
            need["memory"] = float(r.memory_bytes)
        return {k: v for k, v in need.items() if v > 0}

    def preflight(self, spec: LaunchSpec) -> None:
        """Refuse a job Ray could never schedule (instead of PENDING for 15 minutes)."""
        self.version()
        nodes = self.node_resources()
        bundles = [{k: v for k, v in b.items() if v > 0} for b in spec.resources.placement_bundles]
        problems = check_feasible(nodes, self._entrypoint_resources(spec), bundles,
                                  spec.resources.placement_strategy)
        if problems:
            raise BackendError("the Ray cluster can never schedule this job: " + "; ".join(problems)
                               + ". Lower the Plan's hardware/placement or add nodes.",
                               reason="infeasible")

    def _upload_working_dir(self, work: Path) -> str:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(work.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(work).as_posix())
        data = buf.getvalue()
        if len(data) > MAX_UPLOAD_BYTES:
            raise BackendError(f"working dir {work} is {len(data) >> 20} MiB zipped; Ray's package "
                               f"limit is 100 MiB", reason="too_large")
        name = f"_ray_pkg_{hashlib.sha1(data).hexdigest()}.zip"
        self._request("PUT", f"/api/packages/gcs/{name}", content=data, timeout=120)
        return f"gcs://{name}"

    def submit(self, spec: LaunchSpec) -> dict[str, Any]:
        runtime_env: dict[str, Any] = {"env_vars": dict(spec.env)}
        command = spec.shell_command()
        if self.shared_fs:
            # Same machine: the job runs the tools of this Python environment (trl, accelerate),
            # or of its framework's own (backends.job_python), whatever PATH the Ray head was
            # started with. (The framework's adapter hands that interpreter to the Ray workers
            # the framework starts itself: a job-level py_executable would clash with the
            # runtime_env veRL passes to its own ray.init.)
            if "PATH" not in runtime_env["env_vars"]:
                bindir = str(Path(spec.python or sys.executable).parent)
                runtime_env["env_vars"]["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
            entrypoint = f"cd {shlex.quote(spec.working_dir)} && {command}"
        else:
            runtime_env["working_dir"] = self._upload_working_dir(Path(spec.working_dir))
            entrypoint = command
        body: dict[str, Any] = {
            "entrypoint": entrypoint, "submission_id": spec.run_id, "runtime_env": runtime_env,
            "metadata": {"rl_advisor_run_id": spec.run_id, "name": spec.name[:100]},
        }
        res = spec.resources
        if res.num_cpus:
            body["entrypoint_num_cpus"] = res.num_cpus
        if res.num_gpus:
            body["entrypoint_num_gpus"] = res.num_gpus
        if res.custom:
            body["entrypoint_resources"] = dict(res.custom)
        if res.memory_bytes:
            body["entrypoint_memory"] = int(res.memory_bytes)
        reply = self._request("POST", "/api/jobs/", json=body)
        return {"submission_id": reply.get("submission_id", spec.run_id),
                "job_id": reply.get("job_id"), "address": self.address,
                "shared_fs": self.shared_fs}

    def _job_id(self, record: RunRecord) -> str:
        return str(record.backend_ids.get("submission_id") or record.run_id)

    def job_info(self, record: RunRecord) -> dict[str, Any]:
        return self._request("GET", f"/api/jobs/{self._job_id(record)}")

    def status(self, record: RunRecord) -> RunStatus:
        try:
            info = self.job_info(record)
        except BackendError as exc:
            if exc.reason == "not_found":
                return RunStatus(state=RunState.FAILED, message=(
                    f"the Ray head {self.address} has no job {self._job_id(record)} (the head was "
                    f"restarted or the job was deleted)"))
            raise
        state = _STATES.get(str(info.get("status")), RunState.UNKNOWN)
        message = str(info.get("message") or "")
        code = info.get("driver_exit_code")
        if state == RunState.FAILED and code is not None and "exit code" not in message:
            message = f"exit code {code}: {message}"
        return RunStatus(state=state, message=message[:2000], exit_code=code)

    def logs(self, record: RunRecord, tail: int = 200) -> str:
        text = self._request("GET", f"/api/jobs/{self._job_id(record)}/logs").get("logs", "")
        lines = [ln.rsplit("\r", 1)[-1] for ln in text.splitlines()]
        return "\n".join(lines[-tail:])

    def follow_logs(self, record: RunRecord, *, poll_s: float = 1.0,
                    timeout_s: float | None = None) -> Iterator[str]:
        """Yield new log text as the job writes it, until the job ends (polling the logs
        route; each poll returns the log so far and only the new suffix is yielded)."""
        seen = 0
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            text = self._request("GET", f"/api/jobs/{self._job_id(record)}/logs").get("logs", "")
            if len(text) < seen:
                seen = 0
            if len(text) > seen:
                yield text[seen:]
                seen = len(text)
            if self.status(record).terminal:
                final = self._request("GET", f"/api/jobs/{self._job_id(record)}/logs").get("logs", "")
                if len(final) > seen:
                    yield final[seen:]
                return
            if deadline is not None and time.monotonic() > deadline:
                return
            time.sleep(poll_s)

    def metrics(self, record: RunRecord) -> list[Any]:
        """Metric files when the head shares this file system, else the job's console log."""
        from backends.adapters import make_reader, read_metrics

        if record.backend_ids.get("shared_fs", self.shared_fs) and \
                any(Path(p).exists() for p in record.metrics_paths):
            return read_metrics(record)
        text = self._request("GET", f"/api/jobs/{self._job_id(record)}/logs").get("logs", "")
        from backends.adapters import get_adapter

        fmt = getattr(get_adapter(record.framework), "LOG_FORMAT", None)
        reader = make_reader(fmt, text[:8192])
        return list(reader.feed(text + "\n") or [])

    def stop(self, record: RunRecord, wait_s: float = 15.0) -> RunStatus:
        current = self.status(record)
        if current.terminal:
            return current
        self._request("POST", f"/api/jobs/{self._job_id(record)}/stop")
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            st = self.status(record)
            if st.terminal:
                return RunStatus(state=RunState.STOPPED, message=f"stopped on request ({st.message})",
                                 exit_code=st.exit_code)
            time.sleep(0.5)
        return RunStatus(state=RunState.STOPPED, message="stop requested; Ray has not confirmed yet")
