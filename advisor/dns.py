"""One DNS-1123 name sanitiser for every Kubernetes name rl-advisor makes (Kueue flavors and
queues, RayJob and Job names, labels derived from plan names and run ids).

Kubernetes object names are DNS-1123 labels: lowercase letters, digits and '-', starting with a
letter (RFC 1035, what Services and so RayJob heads need) and ending alphanumeric, at most 63
characters (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/). When the
text had to change beyond lower-casing, a short hash of the original keeps distinct inputs
distinct ("My Run" and "my-run" do not collide).
"""

from __future__ import annotations

import hashlib
import re

MAX_LABEL = 63


def dns_label(text: str, limit: int = MAX_LABEL) -> str:
    """A deterministic DNS-1123 label of at most ``limit`` characters derived from ``text``."""
    low = text.lower()
    base = re.sub(r"[^a-z0-9-]+", "-", low).strip("-")
    if base and not base[0].isalpha():
        base = "r-" + base
    base = base[:limit].rstrip("-")
    if base != low or not base:
        tag = hashlib.sha256(text.encode()).hexdigest()[:6]
        base = f"{(base or 'rl-run')[:limit - 7].rstrip('-')}-{tag}"
    return base
