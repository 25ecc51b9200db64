"""Plan -> Kubernetes objects: Kueue ResourceFlavor / ClusterQueue / LocalQueue, plus a KubeRay
RayJob (veRL, OpenRLHF, NeMo-RL) or a ConfigMap + batch Job (TRL).

Schemas: kueue.x-k8s.io/v1beta2 (Kueue v0.19 storage version) and ray.io/v1 (KubeRay v1.7),
research/runtime.md §3. Quantities are strings (the kubernetes client 37 rejects ints). Secrets
are ``secretKeyRef`` entries, never values. Workloads are created suspended so Kueue admits them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from advisor.dns import dns_label
from advisor.plan import Framework, Plan
from advisor.render.common import framework_version, rl_advisor_version
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


def resource_plan(plan: Plan, namespace: str, notes: list[str]):
    """Pods per pool and Kueue objects: the placement's one resource plan (advisor.placement.resources)."""
    from advisor.placement.resources import k8s_resources

    return k8s_resources(plan, namespace=namespace, notes=notes)


def _pod_resources(cpus: int, mem_gib: int, gpu_resource: str | None, gpus: int) -> dict[str, Any]:
    res: dict[str, str] = {"cpu": str(cpus), "memory": f"{mem_gib}Gi"}
    if gpu_resource and gpus:
        res[gpu_resource] = str(gpus)
    return {"requests": dict(res), "limits": dict(res)}


def _shm(mem_gib: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A memory-backed /dev/shm (volumeMount, volume) for GPU pods.

    Containers get a 64 MiB /dev/shm by default; NCCL's shared-memory transport and vLLM's
    worker processes need far more and fail with "unhandled system error" or bus errors.
    A quarter of the pod's memory limit (it counts against that limit), at least 1 GiB.
    """
    size = max(1, mem_gib // 4)
    return ({"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{size}Gi"}})


def _secret_env(plan: Plan, secrets: list[str], secret_name: str) -> list[dict[str, Any]]:
    out = [{"name": s, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": s}}} for s in secrets]
    hf = plan.logging.hf_token_env
    if hf not in secrets:
        out.append({"name": hf, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": hf, "optional": True}}})
    return out


def _env(env: dict[str, str], plan: Plan, secrets: list[str], secret_name: str) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in env.items()] + _secret_env(plan, secrets, secret_name)


HEAD_CPU, HEAD_MEM_GIB = 4, 16


def _kueue(rp, head: bool) -> list[dict[str, Any]]:
    """ResourceFlavors (one per pool), one ClusterQueue with every flavor's quota, one LocalQueue."""
    gpu_res = rp.gpu_resource if any(f.gpus for f in rp.resource_flavors) else None
    docs: list[dict[str, Any]] = []
    seen: dict[str, list[int]] = {}
    for f in rp.resource_flavors:
        if f.name not in seen:
            spec = {"nodeLabels": dict(f.node_labels)} if f.node_labels else {}
            docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                         "metadata": {"name": f.name}, "spec": spec})
            seen[f.name] = [0, 0, 0]
        seen[f.name][0] += f.cpus
        seen[f.name][1] += f.memory_gib
        seen[f.name][2] += f.gpus
    if head and seen:
        first = next(iter(seen))
        seen[first][0] += HEAD_CPU
        seen[first][1] += HEAD_MEM_GIB
    covered = ["cpu", "memory"] + ([gpu_res] if gpu_res else [])
    flavors = []
    for name, (cpu, mem, gpus) in seen.items():
        quotas = [{"name": "cpu", "nominalQuota": str(cpu)}, {"name": "memory", "nominalQuota": f"{mem}Gi"}]
        if gpu_res:
            quotas.append({"name": gpu_res, "nominalQuota": str(gpus)})
        flavors.append({"name": name, "resources": quotas})
    docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                 "metadata": {"name": rp.cluster_queue},
                 "spec": {"namespaceSelector": {},
                          "resourceGroups": [{"coveredResources": covered, "flavors": flavors}]}})
    docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": {"name": rp.local_queue, "namespace": rp.namespace},
                 "spec": {"clusterQueue": rp.cluster_queue}})
    return docs


def _rayjob(plan: Plan, fw: Framework, launch: Any, rp, name: str, options: RenderOptions,
            image: str) -> dict[str, Any]:
    env = _env(launch.env, plan, launch.secrets, options.secret_name)
    head = {"rayStartParams": {"num-gpus": "0"},
            "template": {"spec": {"containers": [{
                "name": "ray-head", "image": image, "env": env,
                "resources": _pod_resources(HEAD_CPU, HEAD_MEM_GIB, None, 0),
                "ports": [{"containerPort": 6379, "name": "gcs"}, {"containerPort": 8265, "name": "dashboard"},
                          {"containerPort": 10001, "name": "client"}]}]}}}
    workers = []
    for p in rp.pools:
        shm_mount, shm_volume = _shm(p.memory_gib_per_pod)
        spec: dict[str, Any] = {"containers": [{
            "name": "ray-worker", "image": image, "env": env,
            "resources": _pod_resources(p.cpus_per_pod, p.memory_gib_per_pod, p.gpu_resource, p.gpus_per_pod),
            "volumeMounts": [shm_mount]}],
            "volumes": [shm_volume]}
        if p.node_selector:
            spec["nodeSelector"] = dict(p.node_selector)
        workers.append({"groupName": p.name, "replicas": p.pods, "minReplicas": p.pods, "maxReplicas": p.pods,
                        "rayStartParams": {}, "template": {"spec": spec}})
    runtime_env = {"env_vars": dict(launch.env)}
    return {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "namespace": rp.namespace,
                     "labels": {QUEUE_LABEL: rp.local_queue, "app.kubernetes.io/managed-by": "rl-advisor"},
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


def _batch_job(plan: Plan, fw: Framework, launch: Any, rp, names: dict[str, str], options: RenderOptions,
               image: str) -> dict[str, Any]:
    env = _env(launch.env, plan, launch.secrets, options.secret_name)
    pool = rp.pools[0]
    shm_mount, shm_volume = _shm(pool.memory_gib_per_pod)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{
            "name": "trainer", "image": image, "workingDir": "/workspace",
            "command": ["/bin/sh", "-c", "cp /etc/rl-advisor/* /workspace/ && exec bash run_trl.sh"],
            "env": env,
            "resources": _pod_resources(pool.cpus_per_pod, pool.memory_gib_per_pod, pool.gpu_resource,
                                        pool.gpus_per_pod),
            "volumeMounts": [{"name": "run-files", "mountPath": "/etc/rl-advisor", "readOnly": True},
                             {"name": "workspace", "mountPath": "/workspace"}, shm_mount]}],
        "volumes": [{"name": "run-files", "configMap": {"name": names["config_map"]}},
                    {"name": "workspace", "emptyDir": {}}, shm_volume]}
    if pool.node_selector:
        spec["nodeSelector"] = dict(pool.node_selector)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": names["job"], "namespace": rp.namespace,
                     "labels": {QUEUE_LABEL: rp.local_queue, "app.kubernetes.io/managed-by": "rl-advisor"},
                     "annotations": {"rl-advisor/framework": f"{fw.value} {framework_version(fw)}",
                                     "rl-advisor/version": rl_advisor_version()}},
        "spec": {"suspend": True, "backoffLimit": 0, "template": {"spec": spec}},
    }


def manifests(plan: Plan, fw: Framework, launch: Any, artifacts: list[Artifact], options: RenderOptions,
              notes: list[str]) -> list[dict[str, Any]]:
    rp = resource_plan(plan, options.namespace, notes)
    if options.queue_name:
        rp = rp.model_copy(update={"local_queue": options.queue_name})
    job = dns_label(plan.name, 40)
    image = options.image or DEFAULT_IMAGES[fw]
    if options.image is None:
        notes.append(f"k8s: no image given; manifests use the placeholder {image!r} (set options.image)")
    if fw == Framework.TRL:
        if len(rp.pools) > 1 or rp.pools[0].pods > 1:
            notes.append("k8s: the TRL Job runs one pod (one node); multi-node TRL needs one pod per node "
                         "(e.g. a JobSet) with accelerate's machine_rank set per pod")
            rp = rp.model_copy(update={"pools": rp.pools[:1]})
        names = {"job": job, "config_map": f"{job}-files"}
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": names["config_map"], "namespace": rp.namespace},
              "data": {a.name: a.content for a in artifacts if a.framework == Framework.TRL and a.kind != "ray_job"}}
        return _kueue(rp, head=False) + [cm, _batch_job(plan, fw, launch, rp, names, options, image)]
    return _kueue(rp, head=True) + [_rayjob(plan, fw, launch, rp, job, options, image)]


def manifests_artifact(plan: Plan, fw: Framework, launch: Any, artifacts: list[Artifact], base: dict[str, Any],
                       env: "jinja2.Environment", options: RenderOptions, notes: list[str]) -> Artifact:
    docs = manifests(plan, fw, launch, artifacts, options, notes)
    content = env.get_template("k8s/manifests.yaml.j2").render(**base, docs=docs, secret_name=options.secret_name)
    return Artifact(name="k8s.yaml", kind="k8s_manifest", format="yaml", content=content, framework=fw,
                    entrypoint=launch.entrypoint, data=docs)
