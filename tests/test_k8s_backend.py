"""Kubernetes backend: the call sequence against kmock's in-memory API server, with scripted
status changes and injected 403/404/409/5xx; plus a real-cluster test when KUBECONFIG is set."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

pytest.importorskip("kubernetes")
kmock = pytest.importorskip("kmock")

from backends.k8s import RUN_LABEL, K8sBackend, k8s_label_value, k8s_name  # noqa: E402
from backends.protocol import (BackendError, LaunchSpec, RunRecord, RunState,  # noqa: E402
                               utcnow)

NS = "team-a"


class Emulator:
    """A KubernetesEmulator served on 127.0.0.1 from a background event loop."""

    def __init__(self) -> None:
        from kmock._internal.apps import Server

        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop = asyncio.Event()
        self.url = ""

        async def main() -> None:
            async with kmock.KubernetesEmulator() as km, Server(km) as srv:
                self.km, self.url = km, str(srv.url).rstrip("/")
                for res in ("ray.io/v1/rayjobs", "kueue.x-k8s.io/v1beta2/resourceflavors",
                            "kueue.x-k8s.io/v1beta2/clusterqueues", "kueue.x-k8s.io/v1beta2/localqueues",
                            "batch/v1/jobs", "v1/pods", "v1/configmaps"):
                    km.resources[res] = {}
                self._ready.set()
                await self._stop.wait()

        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(main(),), daemon=True)
        self.thread.start()
        assert self._ready.wait(15)

    def call(self, fn: Callable[[], Any]) -> Any:
        async def run() -> Any:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def objects(self) -> dict[tuple[str, str | None, str], Any]:
        def collect():
            return {(k[0].plural, k[1], k[2]): v for k, v in self.km.objects.items() if not v.deleted}
        return self.call(collect)

    def patch(self, plural: str, ns: str | None, name: str, patch: dict) -> None:
        def apply():
            for key, obj in self.km.objects.items():
                if key[0].plural == plural and key[1] == ns and key[2] == name:
                    obj.patch(patch)
                    return
            raise KeyError(name)
        self.call(apply)

    def react(self, criteria: str, *payload: Any) -> None:
        def add():
            view = self.km[criteria]
            for item in payload:
                view = view << item
        self.call(add)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(10)


@pytest.fixture(scope="module")
def emu():
    e = Emulator()
    yield e
    e.close()


@pytest.fixture
def kubeconfig(emu: Emulator, tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": emu.url}}],
        "users": [{"name": "me", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "me", "namespace": NS}}],
    }))
    return str(path)


def _manifests(kind: str = "RayJob") -> list[dict]:
    workload = {
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "from-template",
                                                                   "labels": {"kueue.x-k8s.io/queue-name": "rl-local"}},
        "spec": {"entrypoint": "bash run_trl.sh", "suspend": True,
                 "rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": [
                     {"name": "head", "image": "rayproject/ray:2.60.0",
                      "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": 16}}}]}}}}},
    } if kind == "RayJob" else {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "from-template"},
        "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "python:3.11", "command": ["bash", "run.sh"],
             "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}},
    }
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "h100"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "rl-cluster"},
         "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
             {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "rl-local"},
         "spec": {"clusterQueue": "rl-cluster"}},
        workload,
    ]


def _spec(run_id: str, kind: str = "RayJob") -> LaunchSpec:
    return LaunchSpec(run_id=run_id, name="t", framework="trl", run_dir="/tmp/x", working_dir="/tmp/x",
                      entrypoint=["bash", "run_trl.sh"], options={"k8s_manifests": _manifests(kind)})


def _record(run_id: str, ids: dict) -> RunRecord:
    now = utcnow()
    return RunRecord(run_id=run_id, name="t", created_at=now, updated_at=now, backend="k8s",
                     framework="trl", state=RunState.PENDING, backend_ids=ids)


def test_rayjob_lifecycle_with_scripted_status(emu: Emulator, kubeconfig: str) -> None:
    be = K8sBackend(kubeconfig=kubeconfig, backoff_s=0.01)
    run_id = "20261130-101500-toy-grpo-abc123"
    ids = be.submit(_spec(run_id))
    name = k8s_name(run_id)
    assert ids["namespace"] == NS and ids["kind"] == "RayJob" and ids["name"] == name
    objs = emu.objects()
    assert ("resourceflavors", None, "h100") in objs and ("clusterqueues", None, "rl-cluster") in objs
    assert ("localqueues", NS, "rl-local") in objs
    job = objs[("rayjobs", NS, name)]
    assert job["metadata"]["labels"][RUN_LABEL] == k8s_label_value(run_id)
    limits = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "8", "cpu": "16"}  # quantities as strings
    rec = _record(run_id, ids)

    assert be.status(rec).state == RunState.PENDING  # suspended until Kueue admits it
    emu.patch("rayjobs", NS, name, {"spec": {"suspend": False},
                                    "status": {"jobDeploymentStatus": "Initializing"}})
    assert be.status(rec).state == RunState.PENDING
    emu.patch("rayjobs", NS, name, {"status": {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}})
    assert be.status(rec).state == RunState.RUNNING

    # logs and metrics from the submitter pod
    emu.call(lambda: emu.km.objects.__setitem__(
        (kmock.resource("v1/pods"), NS, f"{name}-abcde"),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-abcde", "namespace": NS,
                                                         "labels": {"job-name": name}}}))
    log = ("{'loss': '0.5', 'reward': '0.1', 'epoch': '0.1'}\n"
           "{'loss': '0.4', 'reward': '0.3', 'epoch': '0.2'}\n")
    emu.react(f"get /api/v1/namespaces/{NS}/pods/{name}-abcde/log", log)
    assert "reward" in be.logs(rec, tail=10)
    points = be.metrics(rec)
    assert [p.values.get("reward_mean") for p in points] == [0.1, 0.3]

    emu.patch("rayjobs", NS, name, {"status": {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}})
    assert be.status(rec).state == RunState.SUCCEEDED

    st = be.stop(rec)
    assert st.state == RunState.STOPPED and ("rayjobs", NS, name) not in emu.objects()
    assert be.status(rec).state == RunState.FAILED  # gone: reported, not crashed
    assert "no longer exists" in be.status(rec).message


def test_shared_queues_are_reused_and_a_foreign_workload_conflicts(emu: Emulator, kubeconfig: str) -> None:
    be = K8sBackend(kubeconfig=kubeconfig, backoff_s=0.01)
    be.submit(_spec("run-one-aaaaaa"))  # Kueue objects may already exist: reused
    foreign = _manifests()[-1]
    foreign["metadata"] = {"name": k8s_name("run-two-bbbbbb"), "namespace": NS}
    emu.call(lambda: emu.km.objects.__setitem__((kmock.resource("ray.io/v1/rayjobs"), NS,
                                                 foreign["metadata"]["name"]), foreign))
    with pytest.raises(BackendError, match="already exists .* not this run's") as err:
        be.submit(_spec("run-two-bbbbbb"))
    assert err.value.status == 409


def test_5xx_is_retried_and_a_lost_create_reply_is_recognised(emu: Emulator, kubeconfig: str) -> None:
    be = K8sBackend(kubeconfig=kubeconfig, backoff_s=0.01)
    run_id = "run-retry-cccccc"
    # The API server stores the object but answers 503: the retry then gets 409 for our own object.
    emu.react(f"post /apis/ray.io/v1/namespaces/{NS}/rayjobs", 503)
    ids = be.submit(_spec(run_id))
    assert ids["name"] == k8s_name(run_id)
    posts = emu.call(lambda: len(emu.km[f"post /apis/ray.io/v1/namespaces/{NS}/rayjobs"]))
    assert posts >= 2


def test_persistent_5xx_gives_a_clear_error_after_backoff(emu: Emulator, kubeconfig: str) -> None:
    be = K8sBackend(kubeconfig=kubeconfig, attempts=3, backoff_s=0.01)
    name = k8s_name("run-flaky-dddddd")
    emu.react(f"get /apis/ray.io/v1/namespaces/{NS}/rayjobs/{name}", 503)
    t0 = time.monotonic()
    with pytest.raises(BackendError, match="kept failing .*HTTP 503 after 3 attempts") as err:
        be.status(_record("run-flaky-dddddd", {"namespace": NS, "kind": "RayJob", "name": name}))
    assert err.value.reason == "server_error" and time.monotonic() - t0 < 5
    gets = emu.call(lambda: len(emu.km[f"get /apis/ray.io/v1/namespaces/{NS}/rayjobs/{name}"]))
    assert gets == 3


def test_403_names_rbac_and_404_names_the_missing_operator(emu: Emulator, kubeconfig: str,
                                                           tmp_path: Path) -> None:
    be = K8sBackend(kubeconfig=kubeconfig, backoff_s=0.01)
    name = k8s_name("run-denied-eeeeee")
    emu.react(f"get /apis/ray.io/v1/namespaces/{NS}/rayjobs/{name}", 403,
              {"kind": "Status", "message": f'rayjobs.ray.io "{name}" is forbidden: User "me" cannot get'})
    with pytest.raises(BackendError, match="forbidden .*RBAC") as err:
        be.status(_record("run-denied-eeeeee", {"namespace": NS, "kind": "RayJob", "name": name}))
    assert err.value.status == 403
    emu.react("post /apis/ray.io/v1/namespaces/other/rayjobs", 404,
              {"kind": "Status", "message": "the server could not find the requested resource"})
    other = K8sBackend(kubeconfig=kubeconfig, namespace="other", backoff_s=0.01)
    with pytest.raises(BackendError, match="KubeRay operator"):
        other.submit(_spec("run-nocrd-ffffff"))


def test_batch_job_failure_and_kueue_suspension(emu: Emulator, kubeconfig: str) -> None:
    be = K8sBackend(kubeconfig=kubeconfig, backoff_s=0.01)
    run_id = "run-job-gggggg"
    ids = be.submit(_spec(run_id, kind="Job"))
    rec = _record(run_id, ids)
    assert ids["kind"] == "Job"
    assert "Kueue" in be.status(rec).message
    emu.patch("jobs", NS, ids["name"], {"spec": {"suspend": False}, "status": {"active": 1}})
    assert be.status(rec).state == RunState.RUNNING
    emu.patch("jobs", NS, ids["name"], {"status": {"active": 0, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
         "message": "Job has reached the specified backoff limit"}]}})
    st = be.status(rec)
    assert st.state == RunState.FAILED and "BackoffLimitExceeded" in st.message


def test_launch_tool_creates_the_rendered_objects_and_tracks_them(
        emu: Emulator, kubeconfig: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """launch_run(backend='k8s') with the real rendered manifests of a TRL plan."""
    from rl_advisor import tinymodel
    from rl_advisor.launch_tools import launch_run, run_status, stop_run

    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    ws = {"model": tmp_path / "m", "prompts": tmp_path / "p.jsonl", "reward": tmp_path / "r.py",
          "pairs": tmp_path / "d.jsonl"}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(
        '{"num_attention_heads": 4, "hidden_size": 64, "num_hidden_layers": 2, "num_key_value_heads": 2, '
        '"intermediate_size": 128, "vocab_size": 80, "max_position_embeddings": 256}')
    plan = tinymodel.toy_plan(ws, "dpo", steps=5, name="k8s-toy")
    dry = launch_run(plan, backend="k8s")
    assert dry.dry_run and not emu.objects().get(("jobs", NS, "x"))
    res = launch_run(plan, backend="k8s", confirm=True)
    ids = res.backend_ids
    objs = emu.objects()
    job = objs[("jobs", NS, ids["name"])]
    assert job["metadata"]["labels"][RUN_LABEL] == k8s_label_value(res.run_id)
    cms = ids["configmaps"]
    assert cms and all(("configmaps", NS, cm) in objs for cm in cms)
    refs = [v["configMap"]["name"] for v in job["spec"]["template"]["spec"].get("volumes", []) if "configMap" in v]
    assert refs and set(refs) <= set(cms)  # the workload mounts the run's own ConfigMap
    emu.patch("jobs", NS, ids["name"], {"spec": {"suspend": False}, "status": {"active": 1}})
    assert run_status(res.run_id).state == RunState.RUNNING
    assert stop_run(res.run_id).dry_run  # not without confirm
    assert ("jobs", NS, ids["name"]) in emu.objects()
    assert stop_run(res.run_id, confirm=True).state == RunState.STOPPED
    after = emu.objects()
    assert ("jobs", NS, ids["name"]) not in after and all(("configmaps", NS, cm) not in after for cm in cms)


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("KUBECONFIG"), reason="needs a real cluster (KUBECONFIG)")
def test_real_cluster_job_roundtrip() -> None:  # pragma: no cover - needs a real cluster
    be = K8sBackend()
    run_id = f"rl-advisor-smoke-{int(time.time())}"
    spec = LaunchSpec(run_id=run_id, name="smoke", framework="trl", run_dir="/tmp", working_dir="/tmp",
                      entrypoint=["echo"], options={"k8s_manifests": [{
                          "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
                          "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                                   "containers": [{"name": "main", "image": "busybox:1.36",
                                                   "command": ["sh", "-c", "echo \"{'reward': '0.5'}\""]}]}}}}]})
    ids = be.submit(spec)
    rec = _record(run_id, ids)
    try:
        deadline = time.monotonic() + 180
        while not be.status(rec).terminal and time.monotonic() < deadline:
            time.sleep(2)
        assert be.status(rec).state == RunState.SUCCEEDED
        assert "reward" in be.logs(rec)
    finally:
        be.stop(rec)
