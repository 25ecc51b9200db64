"""What runners put in front of a log line, taken off before the line is read.

A line reaches the user behind whatever the run's plumbing adds: Ray's per-process prefix
(``(WorkerDict pid=1234, ip=10.0.0.1)``, ``(raylet)``; ray/_private/log_monitor.py), vLLM's logger
(``ERROR 12-01 10:00:00 [engine.py:123]``; vllm/logger.py ``_FORMAT``), Python logging's
``2026-12-01 10:00:00,123 - name - ERROR -`` and Hydra's ``[2026-12-01 10:00:00,123][name][ERROR] -``,
torchrun's ``[rank3]:`` / ``[default0]:`` (torch/distributed/elastic tee), ``kubectl logs
--timestamps``' RFC 3339 stamp, and ANSI colour codes. They nest (a kubectl stamp before a Ray prefix
before a vLLM prefix), so the rule is applied until nothing more comes off. One general rule: rules
and readers then see the line as the program printed it, so a pattern anchored at the line start
(Hydra's override echo, ``Killed``, a metric dict) reads the same whatever ran the program.
"""

from __future__ import annotations

import re

_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_PREFIX = re.compile(
    r"(?:"
    # kubectl --timestamps / Python logging / Hydra: a date-time, then optional logger name and level
    r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?"
    r"(?:\s*[-|]?\s*\[?[\w.]+\]?\s*[-|]?\s*\[?" + _LEVEL + r"\]?\s*[-|:]?(?=\s))?"
    # vLLM's logger: LEVEL MM-DD HH:MM:SS [file.py:line]
    r"|" + _LEVEL + r"\s+\d\d-\d\d\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]\s]+:\d+\]"
    # Ray: (Name pid=N, ip=A), (pid=N), (raylet), (gcs_server), (autoscaler ...)
    r"|\((?:[\w.\-]+\s+)?pid=\d+(?:,\s*ip=[\w.:\-]+)?\)"
    r"|\((?:raylet|gcs_server|autoscaler|monitor|dashboard)(?:[ ,][^)]{0,60})?\)"
    # torchrun: [rank3]: / [default0]:
    r"|\[(?:rank|default)\d+\]:?"
    r")[ \t]*")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
STARTS = frozenset("([0123456789DIWECF")
"""First characters of a line that may start with a prefix (a cheap test before the regex)."""


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour/cursor codes, stripped of blanks."""
    return _ANSI.sub("", text).strip()


def strip_prefix(text: str) -> str:
    """``text`` without colour codes and the runner prefixes before it (stripped of blanks)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    t = text.strip()
    while t[:1] in STARTS:
        m = _PREFIX.match(t)
        if m is None or not m.end():
            break
        t = t[m.end():]
    return t
