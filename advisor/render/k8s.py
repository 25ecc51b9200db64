"""Plan -> Kubernetes objects: Kueue ResourceFlavor / ClusterQueue / LocalQueue, plus a KubeRay
RayJob (veRL, OpenRLHF, NeMo-RL) or a ConfigMap + batch Job (TRL).

Schemas: kueue.x-k8s.io/v1beta2 (Kueue v0.19 storage version) and ray.io/v1 (KubeRay v1.7),
research/runtime.md §3. Quantities are strings (the kubernetes client 37 rejects ints). Secrets
are ``secretKeyRef`` entries, never values. Workloads are created suspended so Kueue admits them.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

import yaml

from advisor.plan import Framework, Plan
from advisor.render.common import PoolShape, framework_version, is_cpu, pools, rl_advisor_version
from advisor.render.models import Artifact
from advisor.render.options import RenderOptions
from advisor.render.quoting import remote_command, shell_join

if TYPE_CHECKING:
    import jinja2

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DEFAULT_IMAGES = {
    Framework.VERL: "REPLACE-ME/verl:0.9.1",
    Framework.OPENRLHF: "REPLACE-ME/openrlhf:0.11.2",
    Framework.TRL: "REPLACE-ME/trl:1.16.0",
    Framework.NEMO_RL: "REPLACE-ME/nemo-rl:0.6.0",
}


def dns_name(text: str, limit: int = 40) -> str:
    """A DNS-1123 label derived from ``text`` (deterministic; a hash keeps distinct names distinct)."""
    base = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-") or "rl-run"
    if base != text.lower():
        base = f"{base[:limit - 7].rstrip('-')}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"
    return base


def accelerator_resource(plan: Plan) -> str | None:
    if is_cpu(plan):
        return None
    try:
        from advisor.catalog import get_gpu

        family = get_gpu(plan.hardware.gpu).family
    except Exception:  # noqa: BLE001 - an unknown GPU name still renders, as NVIDIA
        family = "cuda"
    return {"cuda": "nvidia.com/gpu", "rocm": "amd.com/gpu", "tpu": "google.com/tpu"}.get(family, "nvidia.com/gpu")


def _pod_resources(plan: Plan, gpus: int) -> dict[str, Any]:
    hw = plan.hardware
    cpu = max(1, hw.cpus_per_node - 4)
    mem = max(1, int(hw.host_memory_gb * 0.9))
    res: dict[str, str] = {"cpu": str(cpu), "memory": f"{mem}G"}
    gpu_res = accelerator_resource(plan)
    if gpu_res and gpus:
        res[gpu_res] = str(gpus)
    return {"requests": dict(res), "limits": dict(res)}


def _secret_env(plan: Plan, secrets: list[str], secret_name: str) -> list[dict[str, Any]]:
    out = [{"name": s, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": s}}} for s in secrets]
    hf = plan.logging.hf_token_env
    if hf not in secrets:
        out.append({"name": hf, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": hf, "optional": True}}})
    return out


def _env(env: dict[str, str], plan: Plan, secrets: list[str], secret_name: str) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in env.items()] + _secret_env(plan, secrets, secret_name)


def _kueue(plan: Plan, names: dict[str, str], namespace: str, pod_count: int, gpus: int) -> list[dict[str, Any]]:
    hw = plan.hardware
    gpu_res = accelerator_resource(plan)
    flavor: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                              "metadata": {"name": names["flavor"]}, "spec": {}}
    covered = ["cpu", "memory"] + ([gpu_res] if gpu_res else [])
    quotas = [{"name": "cpu", "nominalQuota": str(max(1, hw.cpus_per_node - 4) * pod_count + 4)},
              {"name": "memory", "nominalQuota": f"{max(1, int(hw.host_memory_gb * 0.9)) * pod_count + 16}G"}]
    if gpu_res:
        quotas.append({"name": gpu_res, "nominalQuota": str(gpus)})
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": names["cluster_queue"]},
          "spec": {"namespaceSelector": {},
                   "resourceGroups": [{"coveredResources": covered,
                                       "flavors": [{"name": names["flavor"], "resources": quotas}]}]}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": names["local_queue"], "namespace": namespace},
          "spec": {"clusterQueue": names["cluster_queue"]}}
    return [flavor, cq, lq]


def _names(plan: Plan, options: RenderOptions) -> dict[str, str]:
    job = dns_name(plan.name)
    flavor = dns_name(("cpu" if is_cpu(plan) else plan.hardware.gpu) + "-flavor")
    return {"job": job, "flavor": flavor, "cluster_queue": f"{job}-cq",
            "local_queue": options.queue_name or f"{job}-lq", "config_map": f"{job}-files"}


def _rayjob(plan: Plan, fw: Framework, launch: Any, names: dict[str, str], options: RenderOptions,
            image: str) -> dict[str, Any]:
    env = _env(launch.env, plan, launch.secrets, options.secret_name)
    head = {"rayStartParams": {"num-gpus": "0"},
            "template": {"spec": {"containers": [{
                "name": "ray-head", "image": image, "env": env,
                "resources": {"requests": {"cpu": "4", "memory": "16G"}, "limits": {"cpu": "4", "memory": "16G"}},
                "ports": [{"containerPort": 6379, "name": "gcs"}, {"containerPort": 8265, "name": "dashboard"},
                          {"containerPort": 10001, "name": "client"}]}]}}}
    workers = []
    for p in _gpu_pools(plan):
        workers.append({
            "groupName": p.name, "replicas": p.nodes, "minReplicas": p.nodes, "maxReplicas": p.nodes,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{
                "name": "ray-worker", "image": image, "env": env,
                "resources": _pod_resources(plan, p.gpus_per_node)}]}}})
    runtime_env = {"env_vars": dict(launch.env)}
    return {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": names["job"], "namespace": options.namespace,
                     "labels": {QUEUE_LABEL: names["local_queue"], "app.kubernetes.io/managed-by": "rl-advisor"},
                     "annotations": {"rl-advisor/framework": f"{fw.value} {framework_version(fw)}",
                                     "rl-advisor/version": rl_advisor_version()}},
        "spec": {
            # KubeRay's submitter passes this through a shell and `ray job submit --`; secret
            # references must survive to the driver, hence remote_command's bash -c wrapper.
            "entrypoint": shell_join(remote_command(launch.command)),
            "runtimeEnvYAML": yaml.safe_dump(runtime_env, sort_keys=True),
            "submissionMode": "K8sJobMode",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 3600,
            "suspend": True,
            "rayClusterSpec": {"headGroupSpec": head, "workerGroupSpecs": workers},
        },
    }


def _gpu_pools(plan: Plan) -> list[PoolShape]:
    """Worker groups: one per distinct pool (H3's k8s_resources will refine per-role pods)."""
    return pools(plan)


def _batch_job(plan: Plan, fw: Framework, launch: Any, names: dict[str, str], options: RenderOptions,
               image: str, gpus: int) -> dict[str, Any]:
    env = _env(launch.env, plan, launch.secrets, options.secret_name)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": names["job"], "namespace": options.namespace,
                     "labels": {QUEUE_LABEL: names["local_queue"], "app.kubernetes.io/managed-by": "rl-advisor"},
                     "annotations": {"rl-advisor/framework": f"{fw.value} {framework_version(fw)}",
                                     "rl-advisor/version": rl_advisor_version()}},
        "spec": {
            "suspend": True,
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "trainer", "image": image, "workingDir": "/workspace",
                    "command": ["/bin/sh", "-c", "cp /etc/rl-advisor/* /workspace/ && exec bash run_trl.sh"],
                    "env": env,
                    "resources": _pod_resources(plan, gpus),
                    "volumeMounts": [{"name": "run-files", "mountPath": "/etc/rl-advisor", "readOnly": True},
                                     {"name": "workspace", "mountPath": "/workspace"}]}],
                "volumes": [{"name": "run-files", "configMap": {"name": names["config_map"]}},
                            {"name": "workspace", "emptyDir": {}}]}},
        },
    }


def manifests(plan: Plan, fw: Framework, launch: Any, artifacts: list[Artifact], options: RenderOptions,
              notes: list[str]) -> list[dict[str, Any]]:
    names = _names(plan, options)
    image = options.image or DEFAULT_IMAGES[fw]
    if options.image is None:
        notes.append(f"k8s: no image given; manifests use the placeholder {image!r} (set options.image)")
    if fw == Framework.TRL:
        gpus = 0 if is_cpu(plan) else plan.hardware.gpus_per_node
        if plan.hardware.nodes > 1:
            notes.append("k8s: the TRL Job runs one pod (one node); multi-node TRL needs one pod per node "
                         "(e.g. a JobSet) with accelerate's machine_rank set per pod")
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": names["config_map"], "namespace": options.namespace},
              "data": {a.name: a.content for a in artifacts if a.framework == Framework.TRL}}
        docs = _kueue(plan, names, options.namespace, 1, gpus) + [cm]
        docs.append(_batch_job(plan, fw, launch, names, options, image, gpus))
        return docs
    total_pods = sum(p.nodes for p in _gpu_pools(plan))
    gpus = sum(p.gpus for p in _gpu_pools(plan))
    return _kueue(plan, names, options.namespace, total_pods + 1, gpus) + \
        [_rayjob(plan, fw, launch, names, options, image)]


def manifests_artifact(plan: Plan, fw: Framework, launch: Any, artifacts: list[Artifact], base: dict[str, Any],
                       env: "jinja2.Environment", options: RenderOptions, notes: list[str]) -> Artifact:
    docs = manifests(plan, fw, launch, artifacts, options, notes)
    content = env.get_template("k8s/manifests.yaml.j2").render(**base, docs=docs, secret_name=options.secret_name)
    return Artifact(name="k8s.yaml", kind="k8s_manifest", format="yaml", content=content, framework=fw,
                    entrypoint=launch.entrypoint, data=docs)
