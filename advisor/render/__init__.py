"""Render a Plan into the launch files of veRL, OpenRLHF, TRL and NeMo-RL, plus Ray and
Kubernetes submissions. See :func:`advisor.render.renderer.render_config`."""

from advisor.render.models import Artifact, NotCarried, RenderedConfig, ValidationResult, VersionStamp
from advisor.render.options import RenderOptions
from advisor.render.renderer import render_config

__all__ = ["Artifact", "NotCarried", "RenderOptions", "RenderedConfig", "ValidationResult", "VersionStamp",
           "render_config"]
