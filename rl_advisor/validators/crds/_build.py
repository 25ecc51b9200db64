"""Rebuild the bundled CRD schemas from upstream CRD YAML files.

    python -m rl_advisor.validators.crds._build ../shared/k8s-crds

Keeps only the served versions' ``openAPIV3Schema`` (descriptions dropped; they do not affect
validation), stores each CRD as gzip'd JSON with its provenance. Sources: KubeRay v1.7.0
``ray.io_rayjobs.yaml``; Kueue v0.19.2 ``kueue.x-k8s.io_{resourceflavors,clusterqueues,localqueues}.yaml``.
Both projects are Apache-2.0.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import yaml

SOURCES = {
    "ray.io_rayjobs.yaml": ("KubeRay v1.7.0", "https://github.com/ray-project/kuberay",
                            "helm-chart/kuberay-operator/crds/ray.io_rayjobs.yaml"),
    "kueue.x-k8s.io_resourceflavors.yaml": ("Kueue v0.19.2", "https://github.com/kubernetes-sigs/kueue",
                                            "config/components/crd/bases/kueue.x-k8s.io_resourceflavors.yaml"),
    "kueue.x-k8s.io_clusterqueues.yaml": ("Kueue v0.19.2", "https://github.com/kubernetes-sigs/kueue",
                                          "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml"),
    "kueue.x-k8s.io_localqueues.yaml": ("Kueue v0.19.2", "https://github.com/kubernetes-sigs/kueue",
                                        "config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml"),
}


def _strip(node):
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def build(src_dir: Path, out_dir: Path) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for fname, (release, repo, path) in SOURCES.items():
        crd = yaml.load((src_dir / fname).read_text(encoding="utf-8"), Loader=loader)
        spec = crd["spec"]
        out = {
            "provenance": {"project": release, "repository": repo, "path": path, "license": "Apache-2.0",
                           "note": "openAPIV3Schema of each served version, descriptions removed"},
            "group": spec["group"], "kind": spec["names"]["kind"], "scope": spec["scope"],
            "versions": {v["name"]: _strip(v["schema"]["openAPIV3Schema"])
                         for v in spec["versions"] if v.get("served")},
        }
        target = out_dir / (fname.removesuffix(".yaml") + ".json.gz")
        data = json.dumps(out, sort_keys=True, separators=(",", ":")).encode()
        target.write_bytes(gzip.compress(data, mtime=0))
        print(f"{target.name}: {len(data)} bytes json, {target.stat().st_size} gz")


if __name__ == "__main__":
    build(Path(sys.argv[1]), Path(__file__).resolve().parent)
