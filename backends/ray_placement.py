"""Create a plan's Ray placement groups on a live cluster (the I/O side of advisor.placement.resources).

``ray`` is imported inside the functions, so this module imports without it. The planner's
feasibility check runs first: a group that can never be placed is refused with the reason,
instead of being handed to Ray, which would keep it PENDING (scheduling_state INFEASIBLE)
forever (research/runtime.md §2, Ray pitfall 4).
"""

from __future__ import annotations

import os
import time
from typing import Any

from pydantic import BaseModel, Field

from advisor.errors import AdvisorError, FieldProblem
from advisor.placement.models import RayResourcePlan
from advisor.placement.resources import ClusterShape


class PlacementGroupState(BaseModel):
    name: str
    strategy: str
    gpus: int
    state: str = Field(description="Ray's state: CREATED, PENDING, REMOVED, ...")
    scheduling_state: str | None = Field(None, description="From the PG stats when not CREATED (e.g. INFEASIBLE).")
    seconds: float


def connect(address: str | None = None) -> Any:
    """Connect this process to a running cluster (GCS address ``host:port``) and return ``ray``.

    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (loopback-only clusters, runtime.md §2 pitfall 1) is
    read by Ray once, when it is imported; it is honoured here even if ``ray`` was imported
    before the variable was set, so the driver does not advertise a routable address.
    """
    import ray

    if os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == "0":
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    if not ray.is_initialized():
        ray.init(address=address or "auto", logging_level="ERROR", log_to_driver=False,
                 include_dashboard=False)
    return ray



def live_cluster_shape(address: str | None = None) -> ClusterShape:
    """The cluster as Ray sees it: alive nodes, and the smallest node's GPUs and CPUs."""
    ray = connect(address)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if not nodes:
        raise AdvisorError("the Ray cluster has no alive node", field="address", value=address)
    gpus = min(int(n["Resources"].get("GPU", 0)) for n in nodes)
    cpus = min(float(n["Resources"].get("CPU", 0)) for n in nodes)
    mem = min(float(n["Resources"].get("memory", 0)) for n in nodes) / 2 ** 30
    return ClusterShape(nodes=len(nodes), gpus_per_node=gpus, cpus_per_node=max(cpus, 0.001),
                        memory_gib_per_node=mem or None)


def refuse_if_infeasible(rplan: RayResourcePlan) -> None:
    if not rplan.feasible:
        raise AdvisorError([FieldProblem(field="ray.pools", value=[p.name for p in rplan.pools], message=p,
                                         allowed="fewer GPUs per pool, or a cluster with more/larger nodes")
                            for p in rplan.problems])


def create_placement_groups(rplan: RayResourcePlan, *, address: str | None = None, timeout_s: float = 30.0,
                            prefix: str = "rl-advisor", check: bool = True) -> list[PlacementGroupState]:
    """Create one placement group per pool and wait until each is CREATED (or ``timeout_s``).

    With ``check`` (the default) an infeasible plan is refused before anything reaches Ray. The
    groups stay alive (named ``{prefix}-{pool}``) until ``remove_placement_groups``.
    """
    if check:
        refuse_if_infeasible(rplan)
    ray = connect(address)
    from ray.util.placement_group import placement_group, placement_group_table

    out = []
    for pool in rplan.pools:
        bundles = []
        for b in pool.bundles:
            bundle = {"CPU": float(b.CPU)}
            if b.GPU:
                bundle["GPU"] = float(b.GPU)
            if b.memory_bytes:
                bundle["memory"] = float(b.memory_bytes)
            bundles.append(bundle)
        t0 = time.monotonic()
        pg = placement_group(bundles, strategy=pool.strategy, name=f"{prefix}-{pool.name}")
        try:
            ray.get(pg.ready(), timeout=timeout_s)
        except Exception:  # GetTimeoutError: still pending
            pass
        table = placement_group_table(pg)
        stats = table.get("stats") or {}
        out.append(PlacementGroupState(name=f"{prefix}-{pool.name}", strategy=pool.strategy, gpus=pool.gpus,
                                       state=str(table.get("state")),
                                       scheduling_state=stats.get("scheduling_state"),
                                       seconds=round(time.monotonic() - t0, 3)))
    return out


def remove_placement_groups(prefix: str = "rl-advisor", address: str | None = None) -> int:
    """Remove every live placement group whose name starts with ``prefix``; returns how many."""
    connect(address)
    from ray.util.placement_group import get_placement_group, placement_group_table, remove_placement_group

    removed = 0
    for info in placement_group_table().values():
        name = info.get("name") or ""
        if name.startswith(prefix) and info.get("state") != "REMOVED":
            remove_placement_group(get_placement_group(name))
            removed += 1
    return removed
