"""Backends that launch a rendered Plan (local, Ray, Kubernetes) and read the run back.

``get_backend(name, options)`` builds one from the options a run was launched with (kept in the
registry), so any process can rebuild the backend of any recorded run.
"""

from __future__ import annotations

from typing import Any

BACKENDS = ("local", "ray", "k8s")


def get_backend(name: str, options: dict[str, Any] | None = None) -> Any:
    """The backend called ``name`` (lazy import: ray/k8s clients load only when used)."""
    options = dict(options or {})
    if name == "local":
        from backends.local import LocalBackend

        return LocalBackend()
    if name == "ray":
        from backends.ray import RayBackend

        return RayBackend(address=options.get("address"))
    if name == "k8s":
        from backends.k8s import K8sBackend

        return K8sBackend(namespace=options.get("namespace"), context=options.get("context"),
                          kubeconfig=options.get("kubeconfig"))
    from advisor.errors import AdvisorError

    raise AdvisorError(f"unknown backend {name!r}", field="backend", value=name,
                       allowed=", ".join(BACKENDS))
