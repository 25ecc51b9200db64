"""Deployment settings that are not part of the Plan (where a run is submitted, not what it is)."""

from __future__ import annotations

from pydantic import Field

from advisor.plan import Strict


class RenderOptions(Strict):
    """Cluster-side names for the Ray job and Kubernetes manifests."""

    namespace: str = Field("default", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                           description="Kubernetes namespace of the run and its LocalQueue.")
    image: str | None = Field(None, max_length=500,
                              description="Container image; a per-framework placeholder when absent.")
    secret_name: str = Field("rl-advisor-secrets", pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$",
                             description="Kubernetes Secret holding the W&B / HF tokens (keys = env var names).")
    queue_name: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$",
                                   description="Kueue LocalQueue; derived from the plan name when absent.")
    working_dir: str = Field(".", max_length=1000,
                             description="Ray runtime_env working_dir holding the rendered files (TRL).")
