"""Resource plans for a placed Plan: Ray placement groups and Kubernetes pods + Kueue objects.

Ray (runtime.md §2): one placement group per pool, one bundle per GPU ({GPU: 1, CPU: c}).
A pool inside one node is STRICT_PACK (colocated roles time-share the same GPUs, rollout TP
groups need NVLink); a pool over several nodes is PACK (fewest nodes; bundles are per GPU, so a
TP group of <= gpus_per_node still lands inside one node); a rollout pool of TP-1 engines over
several nodes is SPREAD (independent engines, use every node's NIC and host RAM). Ray leaves an
impossible group PENDING forever (scheduling_state INFEASIBLE, runtime.md §2 pitfall 4), so
``ray_resources`` checks every group against the cluster first and says why it cannot be placed.

Kubernetes: one pod per node of a pool (the unit KubeRay worker groups and Kueue admit), with
the node's GPUs, a share of its CPUs and RAM, a node selector for the GPU product (NVIDIA GPU
feature discovery label ``nvidia.com/gpu.product``) and the pool; one Kueue ResourceFlavor per
pool so a training pool and a rollout pool can be admitted onto different node groups, one
ClusterQueue holding the quota and one LocalQueue for the namespace.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from advisor.placement.models import (K8sPool, K8sResourcePlan, KueueFlavor, RayBundle, RayPool,
                                      RayResourcePlan)
from advisor.dns import dns_label
from advisor.errors import AdvisorError
from advisor.plan import Plan, Pool
from advisor.resolve import resolve

# GPU feature discovery product labels (nvidia.com/gpu.product) for the catalog's GPUs.
# Source: NVIDIA gpu-feature-discovery labels as reported on the nodes (nvidia-smi product name
# with spaces replaced by dashes).
GFD_PRODUCT = {
    "A100-40G": "NVIDIA-A100-SXM4-40GB",
    "A100-80G": "NVIDIA-A100-SXM4-80GB",
    "A100-80G-PCIe": "NVIDIA-A100-80GB-PCIe",
    "A800": "NVIDIA-A800-SXM4-80GB",
    "H100": "NVIDIA-H100-80GB-HBM3",
    "H100-PCIe": "NVIDIA-H100-PCIe",
    "H800": "NVIDIA-H800",
    "H20": "NVIDIA-H20",
    "H200": "NVIDIA-H200",
    "B200": "NVIDIA-B200",
    "L40S": "NVIDIA-L40S",
    "L4": "NVIDIA-L4",
    "L40": "NVIDIA-L40",
    "A10G": "NVIDIA-A10G",
    "V100": "Tesla-V100-SXM2-32GB",
    "RTX-A6000": "NVIDIA-RTX-A6000",
    "RTX-6000-Ada": "NVIDIA-RTX-6000-Ada-Generation",
    "RTX-3090": "NVIDIA-GeForce-RTX-3090",
    "RTX-4090": "NVIDIA-GeForce-RTX-4090",
    "RTX-5090": "NVIDIA-GeForce-RTX-5090",
}
ACCELERATOR_RESOURCE = {"cuda": "nvidia.com/gpu", "rocm": "amd.com/gpu", "tpu": "google.com/tpu"}


class ClusterShape(BaseModel):
    """The cluster a resource plan must fit (defaults to the Plan's hardware)."""

    nodes: int = Field(..., gt=0)
    gpus_per_node: int = Field(..., ge=0)
    cpus_per_node: float = Field(..., gt=0)
    memory_gib_per_node: float | None = None

    @classmethod
    def of(cls, plan: Plan) -> "ClusterShape":
        hw = plan.hardware
        return cls(nodes=hw.nodes, gpus_per_node=hw.gpus_per_node, cpus_per_node=hw.cpus_per_node,
                   memory_gib_per_node=hw.host_memory_gb * 1e9 / 2 ** 30)


def _pools(plan: Plan) -> list[Pool]:
    from advisor.placement.timemodel import pools_of

    return pools_of(plan)


def _strategy(plan: Plan, pool: Pool) -> tuple[str, str]:
    if pool.nodes == 1:
        why = "one node: colocated roles share these GPUs" if len(pool.roles) > 1 else \
            "one node: TP groups and NCCL stay on NVLink"
        return "STRICT_PACK", why
    if pool.roles == ["rollout"] and plan.rollout.tp == 1:
        return "SPREAD", "independent TP-1 engines: spread over every node's NIC and host RAM"
    return "PACK", f"{pool.nodes} nodes: fewest nodes, per-GPU bundles keep TP groups inside a node"


def ray_resources(plan: Plan, cluster: ClusterShape | None = None) -> RayResourcePlan:
    """Placement groups for the plan's pools, checked against ``cluster`` (default: the plan's hardware)."""
    cluster = cluster or ClusterShape.of(plan)
    hw = plan.hardware
    cpu_per_gpu = round(min(hw.cpus_per_node / hw.gpus_per_node, cluster.cpus_per_node / max(cluster.gpus_per_node, 1)), 3)
    cpu_per_gpu = max(cpu_per_gpu, 0.01)
    out: list[RayPool] = []
    for pool in _pools(plan):
        strategy, why = _strategy(plan, pool)
        bundles = [RayBundle(GPU=1, CPU=cpu_per_gpu) for _ in range(pool.gpus)]
        out.append(RayPool(name=pool.name, roles=list(pool.roles), bundles=bundles, strategy=strategy,
                           nodes=pool.nodes, reason=why))
    problems = feasibility(out, cluster)
    return RayResourcePlan(pools=out, total_gpus=sum(p.gpus for p in out),
                           total_cpus=round(sum(b.CPU for p in out for b in p.bundles), 3),
                           gpus_per_node=cluster.gpus_per_node, nodes=cluster.nodes, feasible=not problems,
                           problems=problems)


def feasibility(pools: list[RayPool], cluster: ClusterShape) -> list[str]:
    """Why Ray could never place these groups together on ``cluster`` (empty = it can).

    Mirrors Ray's rules: STRICT_PACK puts every bundle of a group on one node; PACK and SPREAD
    may use several nodes; STRICT_SPREAD needs one node per bundle. All groups are placed at
    once (first-fit decreasing over the nodes' free GPUs and CPUs).
    """
    problems: list[str] = []
    total_gpus = cluster.nodes * cluster.gpus_per_node
    need = sum(p.gpus for p in pools)
    if need > total_gpus:
        problems.append(f"the plan needs {need} GPUs but the cluster has {total_gpus} "
                        f"({cluster.nodes} node(s) x {cluster.gpus_per_node}); Ray would leave the group PENDING (INFEASIBLE)")
    need_cpu = sum(b.CPU for p in pools for b in p.bundles)
    if need_cpu > cluster.nodes * cluster.cpus_per_node + 1e-9:
        problems.append(f"the plan needs {need_cpu:g} CPUs but the cluster has {cluster.nodes * cluster.cpus_per_node:g}")
    for p in pools:
        if p.strategy == "STRICT_PACK" and p.gpus > cluster.gpus_per_node:
            problems.append(f"pool {p.name}: STRICT_PACK of {p.gpus} GPUs cannot fit a node of "
                            f"{cluster.gpus_per_node} GPUs; Ray would leave it PENDING (INFEASIBLE)")
        if p.strategy == "STRICT_SPREAD" and len(p.bundles) > cluster.nodes:
            problems.append(f"pool {p.name}: STRICT_SPREAD of {len(p.bundles)} bundles needs as many nodes "
                            f"(cluster has {cluster.nodes})")
    if problems:
        return problems
    # joint packing: strict groups first (largest first), then the rest GPU by GPU
    free = [float(cluster.gpus_per_node)] * cluster.nodes
    free_cpu = [float(cluster.cpus_per_node)] * cluster.nodes
    for p in sorted(pools, key=lambda p: (p.strategy != "STRICT_PACK", -p.gpus)):
        if p.strategy == "STRICT_PACK":
            cpu = sum(b.CPU for b in p.bundles)
            node = next((i for i in range(cluster.nodes) if free[i] >= p.gpus and free_cpu[i] >= cpu - 1e-9), None)
            if node is None:
                problems.append(f"pool {p.name}: no node has {p.gpus} free GPUs left for STRICT_PACK once the "
                                f"other pools are placed")
                continue
            free[node] -= p.gpus
            free_cpu[node] -= cpu
        else:
            for b in p.bundles:
                node = next((i for i in range(cluster.nodes) if free[i] >= b.GPU and free_cpu[i] >= b.CPU - 1e-9), None)
                if node is None:
                    problems.append(f"pool {p.name}: ran out of GPUs while placing its bundles")
                    break
                free[node] -= b.GPU
                free_cpu[node] -= b.CPU
    return problems


def k8s_resources(plan: Plan, namespace: str = "default", notes: list[str] | None = None) -> K8sResourcePlan:
    """Pods per pool (one per node), their requests, node selectors and the Kueue objects: the one
    Kubernetes resource plan, which render writes into the manifests and the k8s backend submits.

    A CPU plan (local clusters such as kind) requests no accelerator and selects no node; a GPU
    name the catalog does not know is requested as an NVIDIA GPU without a product selector (with
    a note), so the manifests still render."""
    from advisor.catalog import hardware_gpu

    hw = plan.hardware
    cpu_only = resolve(plan).is_cpu
    gpu = None
    if not cpu_only:
        try:
            gpu = hardware_gpu(hw, field="plan.hardware.gpu")
        except AdvisorError:
            if notes is not None:
                notes.append(f"k8s: GPU {hw.gpu!r} is not in the catalog: requested as nvidia.com/gpu "
                             "without a gpu.product node selector")
    resource = ACCELERATOR_RESOURCE.get(gpu.family, "nvidia.com/gpu") if gpu else "nvidia.com/gpu"
    product = GFD_PRODUCT.get(gpu.name) if gpu else None
    kind = "cpu" if cpu_only else (gpu.name if gpu else hw.gpu)
    pools: list[K8sPool] = []
    flavors: list[KueueFlavor] = []
    base = dns_label(plan.name, 40)
    for pool in _pools(plan):
        share = pool.gpus_per_node / hw.gpus_per_node
        cpus = max(1, int(hw.cpus_per_node * share * 0.9))  # leave 10 % for the kubelet and daemons
        mem = max(1, int(hw.host_memory_gb * 1e9 / 2 ** 30 * share * 0.9))
        flavor = dns_label(f"{kind}-{pool.name}", 40)
        selector: dict[str, str] = {} if cpu_only else {"rl-advisor/pool": pool.name}
        if product:
            selector["nvidia.com/gpu.product"] = product
        gpus_per_pod = 0 if cpu_only else pool.gpus_per_node
        pools.append(K8sPool(name=pool.name, roles=list(pool.roles), pods=pool.nodes, gpus_per_pod=gpus_per_pod,
                             cpus_per_pod=cpus, memory_gib_per_pod=mem, gpu_resource=resource,
                             node_selector=selector, resource_flavor=flavor))
        flavors.append(KueueFlavor(name=flavor, node_labels=selector, gpus=gpus_per_pod * pool.nodes,
                                   cpus=cpus * pool.nodes, memory_gib=mem * pool.nodes))
    return K8sResourcePlan(namespace=namespace, pools=pools, resource_flavors=flavors,
                           cluster_queue=f"{base}-cq", local_queue=f"{base}-lq", gpu_resource=resource)
