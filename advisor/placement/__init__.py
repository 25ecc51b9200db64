"""plan_placement: where each role runs, how it is parallelised, and how long a step takes.

- ``plan_placement(plan, ...) -> PlacementReport`` (advisor.placement.planner): the search.
- ``predict_step(plan) -> StepTime`` (advisor.placement.timemodel): the calibrated time model.
- ``check_plan(plan) -> list[RuleViolation]`` (advisor.placement.rules): framework rules.
- ``ray_resources(plan)`` / ``k8s_resources(plan)`` (advisor.placement.resources): resource plans.
"""

from __future__ import annotations

from advisor.placement.models import (Candidate, K8sResourcePlan, PlacementReport, RayResourcePlan,
                                      RuleViolation, StepTime)
from advisor.placement.planner import plan_placement
from advisor.placement.resources import ClusterShape, k8s_resources, ray_resources
from advisor.placement.rules import check_plan
from advisor.placement.timemodel import predict_step

__all__ = ["plan_placement", "predict_step", "check_plan", "ray_resources", "k8s_resources", "ClusterShape",
           "PlacementReport", "Candidate", "StepTime", "RuleViolation", "RayResourcePlan", "K8sResourcePlan"]
