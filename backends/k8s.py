"""Kubernetes backend: the rendered RayJob (or batch Job) and its Kueue objects, through the
official ``kubernetes`` client (imported lazily: the ``k8s`` extra).

Where the cluster is: the user's kubeconfig (``KUBECONFIG`` or ``~/.kube/config``), its current
context unless ``context`` is given, and the context's namespace unless ``namespace`` is given;
in a pod, the in-cluster service account.

What is created, in order: Kueue ResourceFlavors and ClusterQueue (cluster-scoped) and the
LocalQueue, then the workload (RayJob ``ray.io/v1`` or ``batch/v1`` Job). Kueue objects are
shared infrastructure: an existing one (HTTP 409) is reused, never replaced. The workload is
named after the run id and labelled ``rl-advisor/run-id``; a 409 on it is an error unless the
existing object carries our run id (a create that succeeded but whose reply was lost to a 5xx
and retried).

Errors: 5xx and 429 are retried with exponential backoff (tenacity); 403 names the RBAC
permission that is missing, 404 on create says which CRD/operator is not installed, 409 says
what exists. Status comes from the workload's own status (RayJob ``jobDeploymentStatus`` /
``jobStatus``; Job conditions, ``suspend`` while Kueue has not admitted it); logs from its pods.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

from advisor.dns import dns_label
from backends.protocol import BackendError, LaunchSpec, RunRecord, RunState, RunStatus

RUN_LABEL = "rl-advisor/run-id"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

# (group, version, plural, namespaced) for the kinds we create; core/batch go through their APIs.
CUSTOM_KINDS: dict[str, tuple[str, str, str, bool]] = {
    "RayJob": ("ray.io", "v1", "rayjobs", True),
    "RayCluster": ("ray.io", "v1", "rayclusters", True),
    "ResourceFlavor": ("kueue.x-k8s.io", "v1beta2", "resourceflavors", False),
    "ClusterQueue": ("kueue.x-k8s.io", "v1beta2", "clusterqueues", False),
    "LocalQueue": ("kueue.x-k8s.io", "v1beta2", "localqueues", True),
}
SHARED_KINDS = frozenset({"ResourceFlavor", "ClusterQueue", "LocalQueue", "Namespace"})
WORKLOAD_KINDS = ("RayJob", "Job")

_RAYJOB_STATES = {"PENDING": RunState.PENDING, "RUNNING": RunState.RUNNING,
                  "SUCCEEDED": RunState.SUCCEEDED, "FAILED": RunState.FAILED,
                  "STOPPED": RunState.STOPPED}


def k8s_name(run_id: str, limit: int = 52) -> str:
    """A DNS-1123 name from a run id (RayJob names must leave room for KubeRay's suffixes)."""
    return dns_label(run_id, limit)


def stringify_quantities(obj: Any, _key: str = "") -> Any:
    """Resource quantities as strings: kubernetes client 37 validates bodies and rejects
    ``nvidia.com/gpu: 8`` as an int (research/runtime.md §3, fallback 4)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ("limits", "requests", "nominalQuota") and isinstance(v, (dict, list)):
                out[k] = _quantities(v)
            else:
                out[k] = stringify_quantities(v, k)
        return out
    if isinstance(obj, list):
        return [stringify_quantities(v, _key) for v in obj]
    return obj


def _quantities(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: (str(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else _quantities(x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [_quantities(x) for x in v]
    return v


class K8sBackend:
    name = "k8s"

    def __init__(self, namespace: str | None = None, context: str | None = None,
                 kubeconfig: str | None = None, *, attempts: int = 5, backoff_s: float = 0.2):
        self._namespace = namespace
        self.context = context
        self.kubeconfig = kubeconfig
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._api_client = None

    # ------------------------------------------------------------------ client

    def _client(self):
        if self._api_client is not None:
            return self._api_client
        try:
            from kubernetes import client, config
        except ImportError:
            raise BackendError("the k8s backend needs the kubernetes client: pip install "
                               "'rl-advisor[k8s]'", reason="missing_dependency") from None
        cfg = client.Configuration()
        # KUBECONFIG is read now, not when the kubernetes package was imported.
        path = self.kubeconfig or os.environ.get("KUBECONFIG") or None
        try:
            config.load_kube_config(config_file=path, context=self.context, client_configuration=cfg)
            if self._namespace is None:
                _, active = config.list_kube_config_contexts(config_file=path)
                if self.context:
                    contexts, _ = config.list_kube_config_contexts(config_file=path)
                    active = next((c for c in contexts if c["name"] == self.context), active)
                self._namespace = (active or {}).get("context", {}).get("namespace") or "default"
        except config.ConfigException as exc:
            try:
                config.load_incluster_config(client_configuration=cfg)
                self._namespace = self._namespace or _incluster_namespace()
            except config.ConfigException:
                raise BackendError(f"no usable kubeconfig ({exc}); set KUBECONFIG or pass "
                                   f"kubeconfig/context", reason="no_kubeconfig") from None
        cfg.retries = False  # retries are ours (below), with backoff and 409 handling
        self._api_client = client.ApiClient(cfg)
        return self._api_client

    @property
    def namespace(self) -> str:
        self._client()
        return self._namespace or "default"

    def _call(self, what: str, fn: Callable[[], Any], *, ok_statuses: tuple[int, ...] = ()) -> Any:
        """One API call: retry 5xx/429 with exponential backoff, translate the rest."""
        from kubernetes.client.exceptions import ApiException
        from tenacity import (Retrying, retry_if_exception, stop_after_attempt,
                              wait_exponential)
        from urllib3.exceptions import HTTPError as Urllib3Error

        def transient(exc: BaseException) -> bool:
            return (isinstance(exc, ApiException) and exc.status in RETRY_STATUSES) or \
                isinstance(exc, Urllib3Error)

        try:
            for attempt in Retrying(stop=stop_after_attempt(self.attempts), reraise=True,
                                    wait=wait_exponential(multiplier=self.backoff_s, max=5),
                                    retry=retry_if_exception(transient)):
                with attempt:
                    return fn()
        except ApiException as exc:
            if exc.status in ok_statuses:
                raise
            raise self._translate(what, exc) from None
        except Urllib3Error as exc:
            raise BackendError(f"{what}: the Kubernetes API server is unreachable ({exc})",
                               reason="unreachable") from None

    def _translate(self, what: str, exc: Any) -> BackendError:
        status = exc.status
        detail = _api_message(exc)
        if status == 403:
            return BackendError(f"{what}: forbidden (HTTP 403): {detail}. The kubeconfig user lacks "
                                f"this RBAC permission in namespace {self._namespace!r}; ask for a "
                                f"Role granting it", reason="forbidden", status=403)
        if status == 404:
            return BackendError(f"{what}: not found (HTTP 404): {detail}", reason="not_found",
                                status=404)
        if status == 409:
            return BackendError(f"{what}: already exists (HTTP 409): {detail}", reason="conflict",
                                status=409)
        if status in RETRY_STATUSES:
            return BackendError(f"{what}: the API server kept failing (HTTP {status} after "
                                f"{self.attempts} attempts with backoff): {detail}",
                                reason="server_error", status=status)
        return BackendError(f"{what}: HTTP {status}: {detail}", reason="http_error", status=status)

    # ------------------------------------------------------------------ objects

    def _apis(self):
        from kubernetes import client

        api = self._client()
        return client.CustomObjectsApi(api), client.BatchV1Api(api), client.CoreV1Api(api)

    def _create(self, obj: dict[str, Any], run_id: str) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        custom, batch, _core = self._apis()
        kind = obj.get("kind", "")
        name = obj.get("metadata", {}).get("name", "")
        ns = obj.get("metadata", {}).get("namespace") or self.namespace
        what = f"create {kind} {name!r}"
        if kind in CUSTOM_KINDS:
            group, version, plural, namespaced = CUSTOM_KINDS[kind]
            version = obj.get("apiVersion", f"{group}/{version}").split("/")[-1]
            if namespaced:
                create = lambda: custom.create_namespaced_custom_object(group, version, ns, plural, obj)  # noqa: E731
                read = lambda: custom.get_namespaced_custom_object(group, version, ns, plural, name)  # noqa: E731
            else:
                create = lambda: custom.create_cluster_custom_object(group, version, plural, obj)  # noqa: E731
                read = lambda: custom.get_cluster_custom_object(group, version, plural, name)  # noqa: E731
        elif kind == "ConfigMap":
            create = lambda: _core.create_namespaced_config_map(ns, obj)  # noqa: E731
            read = lambda: self._client().sanitize_for_serialization(  # noqa: E731
                _core.read_namespaced_config_map(name, ns))
        elif kind == "Job":
            create = lambda: batch.create_namespaced_job(ns, obj)  # noqa: E731
            read = lambda: self._client().sanitize_for_serialization(  # noqa: E731
                batch.read_namespaced_job(name, ns))
        else:
            raise BackendError(f"the k8s backend does not create {kind!r} objects", reason="unsupported")
        try:
            return self._call(what, create, ok_statuses=(404, 409))
        except ApiException as exc:
            if exc.status == 404:
                hint = {"RayJob": "is the KubeRay operator (ray.io/v1 CRDs) installed?",
                        "Job": f"does namespace {ns!r} exist?"}.get(
                    kind, "is Kueue (kueue.x-k8s.io CRDs) installed?")
                raise BackendError(f"{what}: the API server does not serve it (HTTP 404): "
                                   f"{_api_message(exc)}; {hint}", reason="not_found",
                                   status=404) from None
            if kind in SHARED_KINDS:
                return {"reused": True}  # shared queue infrastructure already exists
            existing = self._call(f"read {kind} {name!r}", read)
            labels = ((existing or {}).get("metadata") or {}).get("labels") or {}
            if labels.get(RUN_LABEL) == run_id:
                return existing  # our own create whose reply was lost, then retried
            raise BackendError(f"{what}: a {kind} named {name!r} already exists in namespace "
                               f"{ns!r} and is not this run's (HTTP 409); delete it or rename the "
                               f"plan", reason="conflict", status=409) from None

    # ------------------------------------------------------------------ protocol

    def submit(self, spec: LaunchSpec) -> dict[str, Any]:
        manifests = [m for m in spec.options.get("k8s_manifests", []) if isinstance(m, dict)]
        workloads = [m for m in manifests if m.get("kind") in WORKLOAD_KINDS]
        if len(workloads) != 1:
            raise BackendError(f"expected one RayJob or Job in the rendered manifests, found "
                               f"{len(workloads)}", reason="bad_manifest")
        name = k8s_name(spec.run_id)
        ns = self.namespace
        # Per-run ConfigMaps (the rendered artifacts) get run-specific names, and the workload's
        # references follow, so two runs of one plan never collide.
        renames: dict[str, str] = {}
        configmaps = []
        for m in manifests:
            if m.get("kind") == "ConfigMap":
                old = (m.get("metadata") or {}).get("name", "artifacts")
                renames[old] = f"{name}-{old}"[:63].rstrip("-")
                configmaps.append({**m, "metadata": {**(m.get("metadata") or {}), "name": renames[old]}})
        workloads = [_rename_configmaps(w, renames) for w in workloads]
        ordered = [m for m in manifests if m.get("kind") in ("ResourceFlavor", "ClusterQueue")] + \
            [m for m in manifests if m.get("kind") == "LocalQueue"] + configmaps + workloads
        created: list[dict[str, str]] = []
        try:
            self._create_all(ordered, name, ns, spec.run_id, created)
        except Exception:
            # A refused submission leaves no per-run objects behind (shared Kueue objects stay).
            try:
                self._delete_configmap_names(ns, [c["name"] for c in created if c["kind"] == "ConfigMap"])
            except Exception:  # the API is down: the original error is the one to report
                pass
            raise
        kind = workloads[0]["kind"]
        return {"namespace": ns, "kind": kind, "name": name, "context": self.context,
                "created": created, "configmaps": sorted(renames.values())}

    def _create_all(self, ordered: list[dict[str, Any]], name: str, ns: str, run_id: str,
                    created: list[dict[str, str]]) -> None:
        for obj in ordered:
            obj = stringify_quantities(obj)
            meta = obj.setdefault("metadata", {})
            if obj.get("kind") in WORKLOAD_KINDS:
                meta["name"] = name
            if obj.get("kind") in (*WORKLOAD_KINDS, "ConfigMap"):
                meta.setdefault("labels", {})[RUN_LABEL] = k8s_label_value(run_id)
            # Namespaced objects go to the user's namespace (kubeconfig context or option).
            if obj.get("kind") in ("ConfigMap", "Job") or \
                    CUSTOM_KINDS.get(obj.get("kind", ""), ("", "", "", False))[3]:
                meta["namespace"] = ns
            self._create(obj, k8s_label_value(run_id))
            created.append({"kind": obj["kind"], "name": meta.get("name", "")})

    def _read_workload(self, record: RunRecord) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        ids = record.backend_ids
        custom, batch, _ = self._apis()
        ns, name, kind = ids.get("namespace") or self.namespace, ids.get("name"), ids.get("kind")
        if not name:
            raise BackendError("the run has no Kubernetes object name recorded", reason="no_ids")
        try:
            if kind == "RayJob":
                return self._call(f"read RayJob {name!r}", lambda: custom.get_namespaced_custom_object(
                    "ray.io", "v1", ns, "rayjobs", name), ok_statuses=(404,))
            job = self._call(f"read Job {name!r}", lambda: batch.read_namespaced_job(name, ns),
                             ok_statuses=(404,))
            return self._api_client.sanitize_for_serialization(job)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def status(self, record: RunRecord) -> RunStatus:
        obj = self._read_workload(record)
        ids = record.backend_ids
        if obj is None:
            return RunStatus(state=RunState.FAILED, message=(
                f"{ids.get('kind')} {ids.get('name')!r} no longer exists in namespace "
                f"{ids.get('namespace')!r} (deleted outside rl-advisor?)"))
        status = obj.get("status") or {}
        if ids.get("kind") == "RayJob":
            job_status = str(status.get("jobStatus") or "")
            deploy = str(status.get("jobDeploymentStatus") or "")
            message = status.get("message") or deploy or "waiting for the KubeRay operator"
            if deploy == "Suspended" or (obj.get("spec") or {}).get("suspend"):
                return RunStatus(state=RunState.PENDING, message="suspended: waiting for Kueue admission")
            if deploy == "Failed" and job_status not in ("SUCCEEDED",):
                return RunStatus(state=RunState.FAILED, message=f"{deploy}: {message}")
            state = _RAYJOB_STATES.get(job_status)
            if state is None:
                state = RunState.PENDING if deploy in ("", "Initializing", "New") else RunState.RUNNING
            return RunStatus(state=state, message=f"{deploy or 'New'}/{job_status or '-'}: {message}"[:2000])
        # batch/v1 Job
        for cond in status.get("conditions") or []:
            if cond.get("status") == "True" and cond.get("type") == "Complete":
                return RunStatus(state=RunState.SUCCEEDED, message="Job complete", exit_code=0)
            if cond.get("status") == "True" and cond.get("type") == "Failed":
                return RunStatus(state=RunState.FAILED,
                                 message=f"{cond.get('reason', 'Failed')}: {cond.get('message', '')}")
        if (obj.get("spec") or {}).get("suspend"):
            return RunStatus(state=RunState.PENDING, message="suspended: waiting for Kueue admission")
        if status.get("active"):
            return RunStatus(state=RunState.RUNNING, message=f"{status['active']} pod(s) active")
        return RunStatus(state=RunState.PENDING, message="no pod started yet")

    def _pods(self, record: RunRecord) -> list[Any]:
        _, _, core = self._apis()
        ids = record.backend_ids
        ns = ids.get("namespace") or self.namespace
        selector = f"job-name={ids.get('name')}"
        pods = self._call("list pods", lambda: core.list_namespaced_pod(ns, label_selector=selector))
        items = list(getattr(pods, "items", None) or [])
        items.sort(key=lambda p: str(getattr(p.metadata, "creation_timestamp", "") or ""))
        return items

    def logs(self, record: RunRecord, tail: int = 200) -> str:
        _, _, core = self._apis()
        ns = record.backend_ids.get("namespace") or self.namespace
        pods = self._pods(record)
        if not pods:
            return "(no pods yet)"
        pod = pods[-1].metadata.name
        return self._call(f"read logs of pod {pod!r}",
                          lambda: core.read_namespaced_pod_log(pod, ns, tail_lines=tail)) or ""

    def metrics(self, record: RunRecord) -> list[Any]:
        """From the driver pod's log (the metric files live inside the cluster)."""
        from backends.adapters import get_adapter, make_reader

        text = self.logs(record, tail=100_000)
        fmt = getattr(get_adapter(record.framework), "LOG_FORMAT", None)
        reader = make_reader(fmt, text[:8192])
        points = list(reader.feed(text + "\n") or [])
        finish = getattr(reader, "finish", None)
        return points + (list(finish() or []) if finish else [])

    def _delete_configmaps(self, record: RunRecord) -> None:
        self._delete_configmap_names(record.backend_ids.get("namespace") or self.namespace,
                                     record.backend_ids.get("configmaps") or [])

    def _delete_configmap_names(self, ns: str, names: list[str]) -> None:
        from kubernetes.client.exceptions import ApiException

        _, _, core = self._apis()
        for cm in names:
            try:
                self._call(f"delete ConfigMap {cm!r}", lambda cm=cm: core.delete_namespaced_config_map(cm, ns),
                           ok_statuses=(404,))
            except ApiException:
                pass  # already gone

    def stop(self, record: RunRecord) -> RunStatus:
        """Delete the workload (its pods go with it); the shared Kueue objects stay."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        custom, batch, _ = self._apis()
        ids = record.backend_ids
        ns, name, kind = ids.get("namespace") or self.namespace, ids.get("name"), ids.get("kind")
        body = client.V1DeleteOptions(propagation_policy="Background")
        try:
            if kind == "RayJob":
                self._call(f"delete RayJob {name!r}", lambda: custom.delete_namespaced_custom_object(
                    "ray.io", "v1", ns, "rayjobs", name, body=body), ok_statuses=(404,))
            else:
                self._call(f"delete Job {name!r}", lambda: batch.delete_namespaced_job(
                    name, ns, body=body), ok_statuses=(404,))
        except ApiException as exc:
            if exc.status != 404:
                raise
            return RunStatus(state=RunState.STOPPED, message=f"{kind} {name!r} was already gone")
        finally:
            self._delete_configmaps(record)
        return RunStatus(state=RunState.STOPPED, message=f"deleted {kind} {name!r} in {ns!r}")


def _rename_configmaps(obj: Any, renames: dict[str, str]) -> Any:
    """Copy of ``obj`` with every ``configMap: {name: OLD}`` reference renamed."""
    if isinstance(obj, dict):
        out = {k: _rename_configmaps(v, renames) for k, v in obj.items()}
        ref = out.get("configMap")
        if isinstance(ref, dict) and ref.get("name") in renames:
            out["configMap"] = {**ref, "name": renames[ref["name"]]}
        return out
    if isinstance(obj, list):
        return [_rename_configmaps(v, renames) for v in obj]
    return obj


def k8s_label_value(run_id: str) -> str:
    """Label values: <= 63 chars of [A-Za-z0-9._-], alphanumeric at both ends."""
    value = re.sub(r"[^A-Za-z0-9._-]", "-", run_id)[:63]
    return value.strip("-._") or "run"


def _api_message(exc: Any) -> str:
    import json

    try:
        body = json.loads(exc.body or "{}")
        return str(body.get("message") or exc.reason)
    except (TypeError, ValueError):
        return str(exc.reason or exc.body or "")[:300]


def _incluster_namespace() -> str:
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as fh:
            return fh.read().strip() or "default"
    except OSError:
        return "default"
