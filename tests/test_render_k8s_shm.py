"""Rendered GPU pods get a memory-backed /dev/shm (NCCL and vLLM fail on the 64 MiB default)."""

from __future__ import annotations

import yaml

from advisor.plan import Framework, plan_from_yaml
from advisor.render import render_config
from tests.conftest import example_plan_path


def _pods(doc: dict) -> list[dict]:
    if doc.get("kind") == "RayJob":
        return [g["template"]["spec"] for g in doc["spec"]["rayClusterSpec"]["workerGroupSpecs"]]
    if doc.get("kind") == "Job":
        return [doc["spec"]["template"]["spec"]]
    return []


def test_every_gpu_pod_mounts_memory_backed_shm():
    plan = plan_from_yaml(example_plan_path().read_text())
    for fw in (Framework.VERL, Framework.TRL):
        data = plan.model_dump(mode="json")
        data["framework"] = fw.value
        rendered = render_config(plan.model_validate(data))
        k8s = next(a for a in rendered.artifacts if a.name == "k8s.yaml")
        pods = [p for d in yaml.safe_load_all(k8s.content) if d for p in _pods(d)]
        assert pods, fw
        for pod in pods:
            shm = [v for v in pod["volumes"] if v["name"] == "dshm"]
            assert shm and shm[0]["emptyDir"]["medium"] == "Memory", (fw, pod["volumes"])
            mounts = [m for c in pod["containers"] for m in c.get("volumeMounts", [])]
            assert {"name": "dshm", "mountPath": "/dev/shm"} in mounts
