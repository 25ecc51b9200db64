"""Kubernetes manifests: built-in kinds through ``kubernetes-validate`` in strict mode; custom
resources (KubeRay RayJob, Kueue ResourceFlavor / ClusterQueue / LocalQueue) through their CRD
``openAPIV3Schema`` with jsonschema, strict (``additionalProperties: false`` wherever the schema
does not allow extra keys). A kind with no schema is an error, never a silent pass (stock
kubernetes-validate only warns on unknown kinds; research/runtime.md §3).

The CRD schemas are bundled (gzip'd JSON beside this module, built by ``crds/_build.py`` from
KubeRay v1.7.0 and Kueue v0.19.2, Apache-2.0). Not covered: CEL ``x-kubernetes-validations``,
defaulting, webhooks.
"""

from __future__ import annotations

import copy
import gzip
import json
import time
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from advisor.render.models import Artifact, ValidationResult

K8S_VERSION = "1.33.0"
CRD_DIR = Path(__file__).resolve().parent / "crds"
CRD_FILES = {
    ("ray.io", "RayJob"): "ray.io_rayjobs.json.gz",
    ("kueue.x-k8s.io", "ResourceFlavor"): "kueue.x-k8s.io_resourceflavors.json.gz",
    ("kueue.x-k8s.io", "ClusterQueue"): "kueue.x-k8s.io_clusterqueues.json.gz",
    ("kueue.x-k8s.io", "LocalQueue"): "kueue.x-k8s.io_localqueues.json.gz",
}


@cache
def _crd(fname: str) -> dict[str, Any]:
    return json.loads(gzip.decompress((CRD_DIR / fname).read_bytes()))


def _strictify(schema: Any) -> Any:
    """OpenAPI v3 (k8s flavour) -> JSON Schema draft 7, closed objects."""
    if isinstance(schema, list):
        return [_strictify(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    s = {k: _strictify(v) for k, v in schema.items() if not k.startswith("x-kubernetes-validations")}
    if schema.get("x-kubernetes-int-or-string"):
        s.pop("type", None)
        s["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in s:
        s["type"] = [s["type"], "null"] if isinstance(s["type"], str) else s["type"] + ["null"]
    if s.get("type") == "object" and "properties" in s and "additionalProperties" not in s and \
            not schema.get("x-kubernetes-preserve-unknown-fields"):
        s["additionalProperties"] = False
    for k in [k for k in s if k.startswith("x-kubernetes-")]:
        s.pop(k)
    s.pop("nullable", None)
    return s


@cache
def _crd_validator(group: str, kind: str, version: str):
    import jsonschema

    fname = CRD_FILES.get((group, kind))
    if fname is None:
        return None
    versions = _crd(fname)["versions"]
    if version not in versions:
        return None
    schema = _strictify(copy.deepcopy(versions[version]))
    # metadata is typed as a bare object in CRDs; the apiserver validates it as ObjectMeta
    schema.setdefault("properties", {})["metadata"] = {"type": "object"}
    return jsonschema.Draft7Validator(schema)


def validate_doc(doc: dict[str, Any]) -> tuple[str, list[str]]:
    """(checker, errors) for one object."""
    api = str(doc.get("apiVersion", ""))
    kind = str(doc.get("kind", ""))
    group, _, version = api.rpartition("/")
    if (group, kind) in CRD_FILES:
        validator = _crd_validator(group, kind, version)
        if validator is None:
            return "CRD schema", [f"{api} {kind}: version {version!r} is not served by the bundled CRD"]
        errs = [f"{kind} {'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))]
        meta = doc.get("metadata") or {}
        if not isinstance(meta.get("name"), str) or not meta.get("name"):
            errs.append(f"{kind}: metadata.name is required")
        return f"CRD schema {group}/{version} (strict)", errs
    if "." in group:
        return "none", [f"{api} {kind}: no schema for this custom resource (a kind without a schema fails)"]
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except ValidationError as exc:
        path = ".".join(str(p) for p in getattr(exc.caused_by, "path", []) or [])
        return f"kubernetes-validate {K8S_VERSION} strict", [f"{kind} {path}: {exc.caused_by.message if exc.caused_by else exc}"]
    except SchemaNotFoundError as exc:
        return f"kubernetes-validate {K8S_VERSION} strict", [f"{api} {kind}: no schema ({exc})"]
    return f"kubernetes-validate {K8S_VERSION} strict", []


def validate(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    errors: list[str] = []
    checkers: set[str] = set()
    try:
        docs = [d for d in yaml.safe_load_all(artifact.content) if d is not None]
    except yaml.YAMLError as exc:
        return ValidationResult(artifact=artifact.name, validator="yaml", ok=False, errors=[str(exc)])
    if not docs:
        errors.append("no Kubernetes objects in the file")
    for doc in docs:
        if not isinstance(doc, dict):
            errors.append(f"not an object: {type(doc).__name__}")
            continue
        checker, errs = validate_doc(doc)
        checkers.add(checker)
        errors += errs
        errors += _quantities_are_strings(doc)
    return ValidationResult(artifact=artifact.name, validator=" + ".join(sorted(checkers)), ok=not errors,
                            errors=errors, seconds=time.perf_counter() - t0)


def _quantities_are_strings(doc: Any, path: str = "") -> list[str]:
    """kubernetes client 37 rejects integer quantities in resources; they must be strings."""
    out: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{path}.{k}" if path else str(k)
            if k in ("limits", "requests") and isinstance(v, dict):
                out += [f"{p}.{q}: quantity {val!r} must be a string" for q, val in v.items() if not isinstance(val, str)]
            elif k == "nominalQuota" and not isinstance(v, str):
                out.append(f"{p}: quantity {v!r} must be a string")
            else:
                out += _quantities_are_strings(v, p)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _quantities_are_strings(v, f"{path}[{i}]")
    return out
