"""A refused Kubernetes submission leaves no per-run ConfigMap behind (shared Kueue objects stay)."""

from __future__ import annotations

from typing import Any

import yaml

from tests.conftest import example_plan_path
from tests.test_faults_k8s import api, call, status_body  # noqa: F401  (api is a fixture)


def test_workload_refused_after_configmap_created_deletes_the_configmap(api) -> None:  # noqa: F811
    def script(method: str, path: str, n: int) -> tuple[int, dict[str, Any]]:
        if method == "POST" and path.endswith("/jobs"):
            return 403, status_body(403, "jobs.batch is forbidden")
        if method == "POST":
            return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}

    api.script = script
    plan = yaml.safe_load(example_plan_path().read_text())
    plan["framework"] = "trl"  # a TRL run ships its files in a per-run ConfigMap
    result = call("launch_run", {"plan": plan, "backend": "k8s", "confirm": True})
    assert result.is_error
    posted = [path for _, method, path in api.requests if method == "POST" and path.endswith("/configmaps")]
    deleted = [path for _, method, path in api.requests if method == "DELETE"]
    assert posted, "the ConfigMap was created before the Job"
    assert any("/configmaps/" in path for path in deleted), api.requests
    assert not any("kueue" in path for path in deleted), "shared Kueue objects must stay"
