"""The planner's Ray placement groups on a REAL Ray head (127.0.0.1, 8 logical GPUs, 2 CPUs).

One module-scoped head (research/runtime.md §2: ~15 s to start on 2 cores), stopped by its own
process group (never ``ray stop``, which would kill other users' clusters).
"""

from __future__ import annotations

import os
import time

import pytest

from advisor.plan import Hardware, Placement, Plan, Pool, RoleModel, plan_from_yaml
from tests.conftest import example_plan_path

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_head():
    from backends.ray_head import LocalRayHead

    from backends.ray_placement import connect

    old = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # the driver must use loopback too
    head = LocalRayHead(num_cpus=2, num_gpus=8).start()
    try:
        connect(f"127.0.0.1:{head.gcs_port}")
        yield head
    finally:
        ray.shutdown()
        head.stop()
        if old is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = old


def _one_node_plan() -> Plan:
    plan = plan_from_yaml(example_plan_path().read_text())
    # the test head: one node, 8 logical GPUs, 2 CPUs
    return plan.model_copy(update={"hardware": Hardware(gpu="H100", gpus_per_node=8, nodes=1, cpus_per_node=2)})


def test_best_plan_and_a_split_plan_reach_created(ray_head):
    from advisor.placement import plan_placement, ray_resources
    from backends.ray_placement import create_placement_groups, live_cluster_shape, remove_placement_groups

    cluster = live_cluster_shape()
    assert (cluster.nodes, cluster.gpus_per_node) == (1, 8)
    report = plan_placement(_one_node_plan(), top_k=10)
    split = next((c for c in report.ranked if len(c.pools) > 1), None)
    assert split is not None, "expected a split/async candidate among the ranked plans"
    plans = [report.best_plan, report.best_plan.model_copy(update={
        "placement": Placement(mode=split.layout, pools=split.pools)})]
    for i, plan in enumerate(plans):
        rplan = ray_resources(plan, cluster=cluster)
        assert rplan.feasible, rplan.problems
        assert rplan.total_gpus == 8
        states = create_placement_groups(rplan, prefix=f"h3t{i}", timeout_s=30)
        try:
            assert [s.state for s in states] == ["CREATED"] * len(rplan.pools), states
            assert sum(s.gpus for s in states) == 8
            assert {s.strategy for s in states} == {p.strategy for p in rplan.pools}
            # the GPUs really are reserved: the cluster has none left
            deadline = time.monotonic() + 5
            while ray.available_resources().get("GPU", 0) > 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert ray.available_resources().get("GPU", 0) == 0
        finally:
            assert remove_placement_groups(prefix=f"h3t{i}") == len(rplan.pools)


def test_sixteen_gpu_plan_is_refused_before_ray_would_hang(ray_head):
    from advisor.errors import AdvisorError
    from advisor.placement import plan_placement, ray_resources
    from backends.ray_placement import create_placement_groups, live_cluster_shape, remove_placement_groups

    plan = _one_node_plan().model_copy(update={"hardware": Hardware(gpu="H100", gpus_per_node=8, nodes=2,
                                                                    cpus_per_node=2)})
    report = plan_placement(plan)
    assert report.best.time.total_gpus == 16
    rplan = ray_resources(report.best_plan, cluster=live_cluster_shape())
    assert not rplan.feasible
    assert any("16 GPUs" in p and "8" in p for p in rplan.problems), rplan.problems
    with pytest.raises(AdvisorError) as err:
        create_placement_groups(rplan, prefix="h3inf")
    assert "16 GPUs" in str(err.value)
    # what the refusal prevents: handed to Ray anyway, a group stays PENDING (it would wait forever)
    states = create_placement_groups(rplan, prefix="h3inf", timeout_s=3, check=False)
    try:
        pending = [s for s in states if s.state == "PENDING"]
        assert pending, states
        assert all(s.scheduling_state in ("INFEASIBLE", "NO_RESOURCES") for s in pending), states
    finally:
        remove_placement_groups(prefix="h3inf")


def test_strict_pack_of_nine_gpus_on_eight_gpu_node_is_refused(ray_head):
    from advisor.errors import AdvisorError
    from advisor.placement import ray_resources
    from backends.ray_placement import create_placement_groups, live_cluster_shape

    # a plan written for 16-GPU nodes, with a 9-GPU colocated pool, meets our 8-GPU node
    plan = Plan(name="nine", hardware=Hardware(gpu="H100", gpus_per_node=16, nodes=1, cpus_per_node=4),
                policy=RoleModel(model="Qwen2.5-0.5B"), algorithm={"group_size": 9},
                placement=Placement(mode="colocated", pools=[Pool(name="all", nodes=1, gpus_per_node=9,
                                                                  roles=["policy", "reference", "rollout"])]))
    rplan = ray_resources(plan, cluster=live_cluster_shape())
    assert rplan.pools[0].strategy == "STRICT_PACK"
    assert not rplan.feasible
    assert any("STRICT_PACK of 9 GPUs" in p for p in rplan.problems), rplan.problems
    with pytest.raises(AdvisorError, match="STRICT_PACK of 9 GPUs"):
        create_placement_groups(rplan, prefix="h3nine")
