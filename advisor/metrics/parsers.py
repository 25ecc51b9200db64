"""Incremental metric readers for every log format the advisor meets.

A reader is fed text chunks as they arrive (``feed(chunk) -> list[MetricPoint]``) and keeps only
the unfinished last line and a few counters, so memory stays bounded however long the run is.
``finish()`` parses a last line without its newline and flushes multi-line records.

Formats (the names backends and diagnose_run use):

* ``verl_console``: ``step:N - key:value - ...`` (values may print as ``np.float64(x)``, ``True``),
  also the one-metric-per-line layout (`` - key:value``) and terminal-wrapped lines;
* ``verl_jsonl``: veRL's ``file`` logger, ``{"step": N, "data": {...}}`` per line;
* ``trl_trainer_state``: a ``trainer_state.json`` (``log_history`` is streamed element by element);
* ``trl_console``: Python-dict lines (string values in transformers 5), tqdm carriage returns —
  the step is taken from the last tqdm ``N/M`` counter when there is one;
* ``trl_jsonl``: one flat JSON object per log with ``step`` (the callback of rendered TRL runs);
* ``openrlhf_console``: ``Global step N: {...}`` lines;
* ``nemo_rl_console``: ``Step N/M`` headers and ``📊 Training Results`` / ``⏱️ Timing`` blocks
  with ``• Name: value`` lines;
* ``table``: a tab-separated table with a header row (metric extracts);
* ``tqdm_postfix``: progress bars with ``key=value`` postfixes (OpenRLHF DPO/RM/SFT and the PPO
  bar: ``loss=0.69, acc=0.5``), one point per bar update;
* ``text``: anything else (tracebacks, stderr, prose) — no metrics, but still line-counted.

A runner's prefix (Ray ``(WorkerDict pid=N)``, vLLM's and Python's logging prefixes, torchrun
``[rankN]:``, ``kubectl logs --timestamps``, colour codes) is taken off a line before it is read
(advisor/metrics/line_prefix.py). Table cells that are empty or ``-`` are steps a metric was not
logged at (W&B exports of several metrics; pandas' unnamed index column has an empty header).

Every line reader recognises all line formats, because real logs mix them (a Ray driver log holds
veRL step lines between worker tracebacks, a markdown issue embeds TRL dicts); the format name only
labels the points. TensorBoard event files are binary and read in ``rl_advisor.metric_files``.
"""

from __future__ import annotations

import csv
import json
import math
import re
from typing import Iterable

from advisor.metrics.line_prefix import STARTS as PREFIX_STARTS
from advisor.metrics.line_prefix import strip_prefix
from advisor.metrics.model import MetricPoint, make_point
from advisor.metrics.vocabulary import normalize_key

FORMATS = ("verl_console", "verl_jsonl", "trl_trainer_state", "trl_console", "trl_jsonl",
           "openrlhf_console", "nemo_rl_console", "tensorboard", "table", "csv", "json_array", "tqdm_postfix",
           "key_value", "text")

MAX_LINE_CHARS = 4 << 20
"""A line longer than this is cut (binary garbage without newlines must not grow the buffer)."""

MAX_RECORD_KEYS = 10000
"""A multi-line record (veRL one-metric-per-line block, NeMo-RL block) is emitted at this size."""

_WRAPPED = re.compile(r"^(?:np\.|numpy\.|torch\.)?(?:float|int|uint|bool|tensor)\d*\(\s*([^,()]+?)\s*(?:,.*)?\)$")
_VERL_STEP = re.compile(r"(?:^|[\s>)])step:\s*(\d+)\s+-\s+")
_VERL_KV = re.compile(r"\s-\s+([^\s:]+):\s*(?:(?:np|numpy|torch)\.)?(?:(?:float|int|uint|bool|tensor)\d*\(\s*)?"
                      r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|True|False))(?=[\s),]|$)")
"""One ``key:value`` of a veRL step line (plain, ``np.float64(x)``, ``True``, ``nan``), found in one
scan of the line instead of a split and a float() attempt per segment."""
_TQDM = re.compile(r"(\d+)/(\d+) \[[\d:]+<[\d:?]+,\s*(?:[\d.]+|\?)\s*(?:s/it|it/s)")
_TQDM_POSTFIX = re.compile(r"(\d+)/(\d+) \[[^\]]*?(?:s/it|it/s),\s*([A-Za-z_][\w/.]*=[^\]]*)\]")
_PYDICT_ITEM = re.compile(r"'([^'\\]{1,200})':\s*(?:'([^'\\]{0,64})'|([^,'}\s][^,}]*))")
_AFTER_BRACKET = re.compile(r"\]\s*\{['\"]")
"""A dict/JSON record after a ``]`` (a tqdm bar's ``s/it]``) on the same line."""
_OPENRLHF = re.compile(r"Global step (\d+):\s*(\{.*)")
_NEMO_STEP = re.compile(r"\bStep\s+(\d+)\s*/\s*(\d+)\b")
_NEMO_ITEM = re.compile(r"^[•◦▪]\s*([A-Za-z][\w \-/().]*?)\s*:\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\s*(s|ms|%)?")
_STRUCTURED = frozenset({"verl_jsonl", "trl_jsonl", "table", "csv", "json_array"})
_CONT_START = re.compile(r"^[\w/:.@\-]")
_KV_PAIR = re.compile(r"(?:^|(?<=[\s|,;]))([A-Za-z_][\w/.@\-]*)\s*(?:[:=≈]|~=)\s*(?:np\.float\d*\()?"
                      r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|NaN|Inf))(?=[\s|,;)]|$)")
_VERTICAL_KV = re.compile(r"^([A-Za-z_][\w.@\-]*/[\w/.@\-]*\w):\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|nan|NaN|inf)"
                          r"(?:\s+\(\s*[-+]?\d+(?:\.\d+)?\s*%\s*\))?\s*$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CSV_HEADER = re.compile(r"^[A-Za-z_][\w/.@\-]*(?:,[A-Za-z_][\w/.@\-]*){2,}$")
"""A CSV header pasted inside other text (after comment lines, between two tables): three or more comma-joined
metric names without spaces (``step,n,r_outcome,em,f1``); a file that starts with one is read as CSV outright."""
_CSV_ROW = re.compile(r"^[-+\w.]*(?:,[-+\w.]*){2,}$")
_WS_HEADER = re.compile(r"^(?:[A-Za-z_][\w/.@\-()]*\s+){1,}[A-Za-z_][\w/.@\-()]*$")
"""A header row of a whitespace-aligned table: names only, each starting with a letter; a unit in parentheses is part
of a name (ms-swift logs ``memory(GiB)`` and ``train_speed(iter/s)``: swift/trainers/mixin.py, later patcher.py)."""
_NO_VALUE = frozenset({"", "-", "--", "—", "–"})
"""A table cell that holds no value (a metric not logged at that row's step)."""
_NOT_METRICS = frozenset({"step", "_step", "_runtime", "_timestamp", "_wandb"})
_HEADER_STEP = re.compile(r"(?i)^\W*(?:global[_ ]step|step|iter(?:ation)?)\s*[:#=]?\s*(\d+)\b")
"""A header cell that names a step ("Step 105 (mid)", "step 199", "iter 40"): a table whose columns are steps."""
_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|nan|NaN|inf|Inf"
_PROSE_KEY = r"(?<![\w/.@\-])(?P<key>[A-Za-z_][\w/.@\-]*[A-Za-z0-9_])"
_PROSE_STEP = r"(?:at|on|by|around|near|after|in)\s+(?:around\s+|about\s+|roughly\s+)?(?:training\s+|global\s+)?(?:step|iteration|iter)\s*#?\s*(?P<step>\d+)\b"
_PROSE_AT_STEP = re.compile(
    _PROSE_KEY + r"\s*(?:=|:|\b(?:of|was|is|were|reached|hit|hits|hitting|at|to|rose to|jumped to|fell to|dropped to|"
    r"spiked to|exploded to|collapsed to|went to|climbed to)\b)\s*~?(?P<val>" + _NUM + r")(?![\w%]|\.\d)\s*,?\s*" + _PROSE_STEP,
    re.IGNORECASE)
_PROSE_STEP_FIRST = re.compile(
    r"(?:\b(?:at|on|by|around|after)\s+|^\W*)(?:around\s+|about\s+)?(?:training\s+|global\s+)?(?:step|iteration|iter)\s*#?\s*"
    r"(?P<step>\d+)\s*[,:]?\s*(?:the\s+)?" + _PROSE_KEY + r"\s*(?:=|:|\b(?:was|is|of|reached|hit|rose to|jumped to|"
    r"fell to|dropped to|spiked to|exploded to|collapsed to|went to|climbed to)\b)\s*~?(?P<val>" + _NUM + r")(?![\w%]|\.\d)",
    re.IGNORECASE)
_PROSE_FROM_TO = re.compile(
    _PROSE_KEY + r"\s+(?:\w+\s+){0,2}?(?:went|goes|go|rose|rises|fell|falls|dropped|drops|jumped|jumps|climbed|climbs|"
    r"increased|increases|decreased|decreases|declined|declines|grew|grows|collapsed|collapses|exploded|explodes|"
    r"spiked|spikes|surged|surges|plummeted|plummets|shot up|shoots up|blew up|moved|changed)\s+(?:\w+\s+)?from\s+~?"
    r"(?P<a>" + _NUM + r")(?![\w%]|\.\d)\s+to\s+~?(?P<b>" + _NUM + r")(?![\w%]|\.\d)", re.IGNORECASE)
"""Prose statements of a metric's value, as run reports write them: ``kl=10731 at step 205``, ``the entropy was 0.02
at step 300``, ``at step 40, loss=nan``, ``entropy fell from 1.2 to 0.01``. Only keys the metric vocabulary knows are
read (a setting such as ``beta=0.04 at step 0`` is not a metric), and only a value tied to a step or a change from one
value to another: a single number in a sentence is not a curve. A line that opens with its step (``step 90: kl=5200``)
ties the value to it as well."""
_ARROWS = r"(?:→|->|⟶|=>)"
_ARROW = re.compile(r"\s*" + _ARROWS + r"\s*")
_CHAIN_ITEM = r"(?:(?:\bs|\bstep\s*)\d+\s+)?[~≈]?(?:" + _NUM + r")(?![\w.]|%)(?:\s*\([^()]{0,40}\))?"
_PROSE_CHAIN = re.compile(
    _PROSE_KEY + r"(?:\s+(?:mean|max|min|avg|average|median|value|values|has|have|had|was|were|is|are|it|just|then|"
    r"steadily|slowly|quickly|rapidly|sharply|(?:went|goes|go|rose|rises|fell|falls|dropped|drops|jumped|jumps|climbed|"
    r"climbs|increased|increases|decreased|decreases|declined|declines|grew|grows|collapsed|collapses|exploded|explodes|"
    r"spiked|spikes|surged|surges|plummeted|plummets|moved|moves|changed|changes|stayed|stays|decays|decayed|shrank|"
    r"shrinks|exploding|rising|falling|dropping|growing|collapsing|climbing)\b)){0,3}?\s*:?\s*(?:from\s+|\(\s*)?"
    r"(?P<chain>" + _CHAIN_ITEM
    + r"(?:\s*" + _ARROWS + r"\s*" + _CHAIN_ITEM + r")+)", re.IGNORECASE)
_CHAIN_STEP = re.compile(r"(?i)(?:\bs|\bstep\s*)(\d+)\b")
_CHAIN_VALUE = re.compile(r"(?<![\w.])[~≈]?(" + _NUM + r")(?![\w.]|%)")
"""A metric's values joined by arrows, as run notes write a trend: ``sampling_logp_difference mean grows 0.025 → 0.17``,
``acc 0.314 → 0.373 (s4 peak) → 0.289``, ``kl from 0.01 (step 1) -> 0.9 (step 5)``. One point per value in order, its
step taken from a ``step N`` / ``sN`` mark beside it. A chain with a percentage in it is not read (a share written in
percent is not the metric's logged scale), as the other prose readers skip percentages."""
_MARKUP = str.maketrans({"`": " ", "*": " "})
"""Markdown's inline code and emphasis around a record (``` `grad_norm=983040`, `kl=14087` ```, ``**0.373**``): read as
spaces, so a value in a note's inline code is read as the same value in a log line (its points are labelled "prose":
the line is a sentence, its wordings are read too)."""
_DURATION = r"~?(?P<{g}>\d+(?:\.\d+)?)\s*(?P<{g}u>ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?)\b"
_SECONDS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
            "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0}
_PROSE_STEP_TIME = re.compile(
    r"(?i)(?:" + _DURATION.format(g="a") + r"\s*(?:per|/|each|a|for (?:a|each|one|every))\s*(?:training\s+|optimi[sz]er\s+)?"
    r"(?:step|iteration|iter)\b|\b(?:each|one|a|every|per|the)\s+(?:training\s+)?(?:step|iteration)\s+(?:takes?|took|"
    r"lasts?|lasted|is|was|needs?|needed)\s+(?:about|around|roughly|approximately|almost|nearly|over|~)?\s*"
    + _DURATION.format(g="b") + r")")
_PROSE_GEN_TIME = re.compile(
    r"(?i)\b(?:generat\w*|rollouts?|sampling|decoding)\b(?:(?!\b(?:step|iteration|train\w*|update)\b)[^.;。\d]){0,40}?"
    r"\b(?:takes?|took|taking|is|are|was|were|needs?|needed|spends?|spent|of|about|around|roughly|approximately|"
    r"almost|nearly|over)?\s*(?:about|around|roughly|approximately|almost|nearly|over)?\s*" + _DURATION.format(g="c"))
"""A step time and a generation time told in one sentence ("it takes about 7 min per step, and the time generating
completions is 4 min"): read as veRL's timing_s/step and timing_s/gen (seconds), so the generation-share rule judges a
narrated run as it judges its log. Both must be in the sentence, and the generation time no longer than the step."""


_STEP_COLUMNS = ("step", "Step", "_step", "global_step", "train/global_step", "training/global_step", "iteration",
                 "iter", "current_steps")


_CELL_NUMBER = re.compile(
    r"^[~≈]?(?P<num>[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))"
    r"\s*(?P<unit>[A-Za-z]{1,8}\.?)?\s*(?:\([^()]{0,60}\)|（[^（）]{0,60}）)?\s*$")
"""A hand-written table cell: a number with its unit word (``512 tok``, ``117.8 s``), a note in parentheses
(``0.45 (best)``, ``117.8 s（含 save 16.9）``) or thousands separators (``1,024``). A percentage is not read (a share
in percent is not the metric's logged scale), nor a cell with two numbers (``0 / 0``)."""
_TIME_UNITS = {u: _SECONDS[u] for u in ("ms", "min", "mins", "h", "hr", "hrs")}
"""Units a cell converts to seconds (the unit the timing metrics are logged in); every other unit word is a label."""


def _cell_number(cell: str) -> float | None:
    """A Markdown table cell's value: emphasis and code marks stripped, a typeset minus read as one, then a plain value
    or ``_CELL_NUMBER``."""
    s = cell.strip().strip("*`_ ").strip().replace("\u2212", "-")  # a typeset minus sign (U+2212)
    num = parse_number(s)
    if num is not None or not s or not (s[0].isdigit() or s[0] in "-+.~≈"):
        return num
    m = _CELL_NUMBER.match(s)
    if m is None:
        return None
    value = float(m.group("num").replace(",", ""))
    unit = (m.group("unit") or "").rstrip(".").lower()
    return value * _TIME_UNITS.get(unit, 1.0)


def _metric_header(names: Iterable[str]) -> bool:
    """A CSV header names metrics, not words: a step column or a name with ``_`` or ``/`` in it (the W&B and
    framework key spellings). One test for a file that starts with a CSV and for one pasted inside text."""
    return any(n in _STEP_COLUMNS or "/" in n or "_" in n for n in names)


def _column_name(cell: str) -> str:
    """A table header cell as a metric key: W&B chart exports name columns ``<run> - <metric>``
    and add ``__MIN``/``__MAX`` band columns (dropped: ``""``)."""
    name = cell.strip().strip('"')
    if name.endswith(("__MIN", "__MAX")):
        return ""
    if " - " in name:
        name = name.rsplit(" - ", 1)[1].strip()
    return name


def _step_of_header(cell: str) -> int | None:
    m = _HEADER_STEP.match(cell.strip().strip("*`_"))
    return int(m.group(1)) if m else None


def parse_number(text: str) -> float | None:
    """A logged value as a float: ``0.5``, ``'0.5'``, ``np.float64(0.5)``, ``True``, ``nan``."""
    s = text.strip().strip("'\"")
    if not s:
        return None
    try:
        return float(s)
    except ValueError:
        pass
    if s == "True":
        return 1.0
    if s == "False":
        return 0.0
    m = _WRAPPED.match(s)
    if m:
        inner = m.group(1)
        if inner in ("True", "False"):
            return 1.0 if inner == "True" else 0.0
        try:
            return float(inner)
        except ValueError:
            return None
    return None


def _flatten(obj: dict, prefix: str = "", out: dict[str, float] | None = None) -> dict[str, float]:
    out = {} if out is None else out
    for key, val in obj.items():
        name = f"{prefix}{key}"
        if isinstance(val, bool):
            out[name] = 1.0 if val else 0.0
        elif isinstance(val, (int, float)):
            out[name] = float(val)
        elif isinstance(val, str):
            num = parse_number(val)
            if num is not None:
                out[name] = num
        elif isinstance(val, dict) and len(out) < 10000:
            _flatten(val, name + "/", out)
    return out


def _as_step(value: object) -> int | None:
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if math.isfinite(f) and abs(f) < 1e15:
        return int(f)
    return None


class LogReader:
    """Line-oriented reader for every text format (see the module docstring)."""

    def __init__(self, fmt: str = "text"):
        self.format = fmt
        self.line_no = 0
        self.points_read = 0
        self.total_steps: int | None = None
        self._buf = ""
        self._ordinal = 0
        self._summary_line: int | None = None  # the line of the last per-metric summary-table row
        self._tqdm_step: int | None = None
        self._pending: str | None = None  # a veRL step line that may continue on the next line
        self._pending_line = 0
        self._block: dict[str, float] = {}  # veRL one-metric-per-line block
        self._block_line = 0
        self._block_vertical = False  # the block is a dash-less vertical record (round 20), not veRL's "- key:value"
        self._echo: tuple[dict[str, float], int, int] | None = None  # a vertical record held at a tqdm step
        self._nemo: dict[str, float] = {}
        self._nemo_step: int | None = None
        self._nemo_line = 0
        self._nemo_section = ""
        self._table: list[str] | None = None
        self._table_sep = ""
        self._wide: list[int | None] | None = None  # the step of each column of a table whose columns are steps

    # ----------------------------------------------------------------- public API

    def feed(self, chunk: str) -> list[MetricPoint]:
        """Parse the complete lines of ``chunk`` (plus what was left over); keep the rest."""
        if not chunk:
            return []
        data = self._buf + chunk if self._buf else chunk
        lines = data.split("\n")
        self._buf = lines.pop()
        if len(self._buf) > MAX_LINE_CHARS:
            self._buf = self._buf[:MAX_LINE_CHARS]
        out: list[MetricPoint] = []
        for line in lines:
            self.line_no += 1
            self._line(line, out)
        return out

    def feed_line(self, line_no: int, text: str) -> list[MetricPoint]:
        """Parse one whole line (no newline) read elsewhere, at ``line_no`` (the pre-filtered
        path of diagnose: only lines that can carry metrics are handed over)."""
        out: list[MetricPoint] = []
        self.line_no = line_no
        self._line(text, out)
        return out

    @property
    def wants_next_line(self) -> bool:
        """A step line that may continue on the next line (terminal wrap) is pending."""
        return self._pending is not None

    def note_progress(self, step: int, total: int | None) -> None:
        """The last tqdm counter before a record (found by the caller in skipped lines)."""
        self._tqdm_step = step
        if total:
            self.total_steps = total

    def finish(self) -> list[MetricPoint]:
        """End of input: parse a last unterminated line and flush multi-line records."""
        out: list[MetricPoint] = []
        if self._buf:
            self.line_no += 1
            self._line(self._buf, out)
            self._buf = ""
        self._flush_pending(out)
        self._flush_block(out)
        self._flush_nemo(out)
        self._release_echo(out)
        return out

    # ----------------------------------------------------------------- helpers

    def _emit(self, out: list[MetricPoint], raw: dict[str, float], step: int | None, line: int,
              source: str) -> None:
        if not raw:
            return
        if self._echo is not None:
            self._release_echo(out, superseded_at=step)
        point = make_point(raw, step=step, line=line, source=source, total_steps=self.total_steps)
        if not point.values and source not in _STRUCTURED:
            return  # a dict or key:value line that carries no training metric (config echo, ...)
        self._ordinal += 1
        if point.step is None:
            point.step = self._ordinal
        self.points_read += 1
        out.append(point)

    def _flush_pending(self, out: list[MetricPoint]) -> None:
        if self._pending is None:
            return
        text, self._pending = self._pending, None
        m = _VERL_STEP.search(text)
        if not m:
            return
        raw: dict[str, float] = {}
        for key, val in _VERL_KV.findall(text, m.end() - 3):
            raw[key] = 1.0 if val == "True" else 0.0 if val == "False" else float(val)
        self._emit(out, raw, int(m.group(1)), self._pending_line, "verl_console")

    @staticmethod
    def _looks_complete(t: str) -> bool:
        """A step line whose last ``key:value`` is whole (not cut by a terminal wrap)."""
        key, sep, val = t.rpartition(" - ")[2].rpartition(":")
        return bool(sep) and bool(key) and parse_number(val) is not None and t[-1] not in "-./"

    def _flush_block(self, out: list[MetricPoint]) -> None:
        if self._block:
            raw, self._block = self._block, {}
            vertical, self._block_vertical = self._block_vertical, False
            if vertical and self._tqdm_step is not None \
                    and not any(k == "step" or k.endswith("global_step") for k in raw):
                self._hold_echo(out, raw)
                return
            self._emit(out, raw, None, self._block_line, "verl_console")

    def _hold_echo(self, out: list[MetricPoint], raw: dict[str, float]) -> None:
        """A dash-less vertical record printed at a tqdm step (a callback's summary, as in the raw_run_terminal of
        trl-dapo-vl3b-181457: "rewards/mc_idx_reward/mean: 0.5750" under emoji headings, then TRL's dict record of the
        same step) is held: the step's own record supersedes it, and it is emitted at that step only when no record of
        the step follows. Before, each such block took the next ordinal as its step (1, 2, 10, 4, 5, 20, ...)."""
        step = self._tqdm_step
        if self._echo is not None and self._echo[1] == step:
            self._echo[0].update(raw)
            return
        self._release_echo(out)
        self._echo = (dict(raw), step, self._block_line)

    def _release_echo(self, out: list[MetricPoint], superseded_at: int | None = None) -> None:
        if self._echo is not None:
            raw, step, line = self._echo
            self._echo = None
            if step != superseded_at:
                self._emit(out, raw, step, line, "verl_console")

    def _flush_nemo(self, out: list[MetricPoint]) -> None:
        if self._nemo:
            raw, self._nemo = self._nemo, {}
            self._emit(out, raw, self._nemo_step, self._nemo_line, "nemo_rl_console")

    # ----------------------------------------------------------------- one line

    def _line(self, line: str, out: list[MetricPoint]) -> None:
        if "\x00" in line:
            line = line.replace("\x00", "")
        if "\r" in line:
            for seg in line.split("\r"):
                self._segment(seg, out)
        else:
            self._segment(line, out)

    def _segment(self, s: str, out: list[MetricPoint]) -> None:
        t = s.strip()
        if t[:1] in PREFIX_STARTS or "\x1b" in t:
            t = strip_prefix(t)  # a Ray/vLLM/logging/torchrun/kubectl prefix, colour codes
        if t.startswith(">"):
            t = t.lstrip("> ").strip()
        if self._pending is not None:
            if t and _CONT_START.match(t) and (" - " in t or " " not in t) and ": " not in t \
                    and "|" not in t and not t.startswith("-") and not _VERL_STEP.search(t) \
                    and len(self._pending) < MAX_LINE_CHARS:
                self._pending += t
                return
            self._flush_pending(out)
        if not t:
            return
        # tqdm counters give TRL its step numbers.
        if "s/it" in t or "it/s" in t:
            last = None
            for last in _TQDM.finditer(t):
                pass
            if last is not None:
                if self._block:
                    self._flush_block(out)  # a record printed before the bar belongs to the bar's previous step
                self._tqdm_step = int(last.group(1))
                self.total_steps = int(last.group(2))
            if "=" in t:  # tqdm set_postfix (OpenRLHF DPO/RM/SFT have only this): "..., loss=0.69, acc=0.5]"
                post = None
                for post in _TQDM_POSTFIX.finditer(t):
                    pass
                if post is not None:
                    raw = {}
                    for item in post.group(3).split(","):
                        key, sep, val = item.strip().partition("=")
                        num = parse_number(val) if sep else None
                        if num is not None:
                            raw[key] = num
                    self._emit(out, raw, int(post.group(1)), self.line_no, "tqdm_postfix")
                    return
        # veRL console step line
        if "step:" in t and " - " in t:
            m = _VERL_STEP.search(t)
            if m:
                self._flush_block(out)
                self._pending = t
                self._pending_line = self.line_no
                if self._looks_complete(t):  # emit now (a followed run shows its last step at once)
                    self._flush_pending(out)
                return
        # veRL one-metric-per-line block (" - key:value"); round 20: the same record pasted without the dashes,
        # one namespaced metric key per line ("timing_s/step:   43.64", "timing_s/gen:   31.27   (72%)", veRL
        # #6747), a trailing share in brackets allowed
        vert = _VERTICAL_KV.match(t) if ":" in t and "/" in t else None
        if vert or (t.startswith("- ") and ":" in t and "{" not in t):
            if vert:
                key, val = vert.group(1), vert.group(2)
                if normalize_key(key) is None:
                    key = ""
            else:
                key, _, val = t[2:].rpartition(":")
                key = key.strip()
            num = parse_number(val) if key else None
            if key and " " not in key and num is not None:
                if len(self._block) >= MAX_RECORD_KEYS:
                    self._flush_block(out)
                if not self._block:
                    self._block_line = self.line_no
                    self._block_vertical = vert is not None
                self._block[key] = num
                return
        elif self._block:
            self._flush_block(out)
        c0 = t[0]
        if c0 == "{" or "Global step" in t:
            if self._dict_line(t, out):
                return
        elif "]{" in t or "] {" in t:
            # a record printed right after a tqdm bar (or any ``[...]`` prefix) on the same line: TRL
            # and the transformers Trainer log their dict without a newline after the bar
            m = _AFTER_BRACKET.search(t)
            if m and self._dict_line(t[m.end() - 2:], out):
                return
        if "Step" in t:
            m = _NEMO_STEP.search(t)
            if m and ("=" in t or t.startswith("Step")):
                self._flush_nemo(out)
                self._nemo_step = int(m.group(1))
                self.total_steps = int(m.group(2))
                self._nemo_line = self.line_no
                self._nemo_section = ""
                return
        if c0 in "•◦▪":
            m = _NEMO_ITEM.match(t)
            if m:
                num = parse_number(m.group(2))
                if num is not None:
                    label = m.group(1)
                    if " " in label or normalize_key(label) is None:
                        # NeMo-RL's own names ("Avg Reward") as keys; a metric key printed on a
                        # bullet line ("• actor/kl: 0.1") keeps its spelling
                        label = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
                    if m.group(3) == "ms":
                        num /= 1000.0
                    key = f"timing/{label}" if self._nemo_section == "timing" else label
                    if len(self._nemo) >= MAX_RECORD_KEYS:
                        self._flush_nemo(out)
                    if not self._nemo:
                        self._nemo_line = self.line_no
                    self._nemo[key] = num
                    return
        if "Training Results" in t:
            self._nemo_section = "train"
            return
        if "Timing" in t and len(t) < 40:
            self._nemo_section = "timing"
            return
        if self.format == "csv" or ("," in t and (
                (_CSV_HEADER.match(t) and _metric_header(t.split(",")))
                or (self._table_sep == "," and _CSV_ROW.match(t)))):
            self._table_line(t, out, ",")
            return
        if "\ufffd" in t or _CONTROL.search(t):
            return  # undecodable or binary bytes: not a table row or a key: value record
        if t[0] == "|" or (t.count("|") >= 2 and self._table_sep == "|"):
            # ``key: value`` pairs joined by pipes (DeepSpeed-Chat's ``epoch: 0|step: 3|act_loss: 0.1``)
            # are a record even after a pipe-led line set a table up (its ``|E2E latency=...`` timing line)
            if (":" in t or "=" in t) and self._kv_line(t, out):
                return
            self._table_line(t, out, "|")
            return
        if "\t" in t:
            self._table_line(t, out, "\t")
            return
        if ":" in t or "=" in t or "\u2248" in t:  # '≈': "gen_kl_error ≈ 13" in a report
            if self._kv_line(t, out):
                return
        if ("step" in t or "Step" in t or "iter" in t or " from " in t or (">" in t and ("->" in t or "=>" in t))
                or (not t.isascii() and ("→" in t or "⟶" in t))) and " " in t and self._prose_line(t, out):
            return
        if self._table_sep == " " or (" " in t and _WS_HEADER.match(t)):
            self._table_line(t, out, " ")

    def _dict_line(self, t: str, out: list[MetricPoint]) -> bool:
        if "Global step" in t:
            m = _OPENRLHF.search(t)
            if m:
                raw = self._pydict(m.group(2))
                self._emit(out, raw, int(m.group(1)), self.line_no, "openrlhf_console")
                return True
        body = t
        if body.startswith('{"'):
            try:
                obj = json.loads(body)
            except (ValueError, RecursionError):  # a 100k-deep line is not a metric record
                obj = None
            if isinstance(obj, dict):
                if isinstance(obj.get("data"), dict):
                    raw = _flatten(obj["data"])
                    self._emit(out, raw, _as_step(obj.get("step")), self.line_no, "verl_jsonl")
                    return True
                step = _as_step(obj.get("step", obj.get("global_step", obj.get("_step"))))
                if "current_steps" in obj and "total_steps" in obj:
                    # LLaMA-Factory's trainer_log.jsonl (src/llamafactory/train/callbacks.py LogCallback.on_log): its
                    # step is current_steps and its "accuracy" is the Trainer's rewards/accuracies (DPO/ORPO/KTO)
                    step = _as_step(obj["current_steps"])
                    obj = {("rewards/accuracies" if k == "accuracy" else k): v for k, v in obj.items()
                           if k not in ("current_steps", "total_steps", "percentage")}
                raw = _flatten({k: v for k, v in obj.items() if k not in _NOT_METRICS})
                if "train_runtime" not in raw:
                    self._emit(out, raw, step, self.line_no, "trl_jsonl")
                return True
            return False
        if body.startswith("{'"):
            raw = self._pydict(body)
            if raw and "train_runtime" not in raw:
                self._emit(out, raw, self._tqdm_step, self.line_no, "trl_console")
            return bool(raw)
        return False

    @staticmethod
    def _pydict(body: str) -> dict[str, float]:
        raw: dict[str, float] = {}
        for m in _PYDICT_ITEM.finditer(body):
            val = m.group(2) if m.group(2) is not None else m.group(3)
            num = parse_number(val)
            if num is not None:
                raw[m.group(1)] = num
        return raw

    def _table_line(self, t: str, out: list[MetricPoint], sep: str) -> None:
        """A row of a table with a header row: tab-separated, Markdown/plain pipe tables, CSV (W&B
        exports: ``Step,<run> - train/reward,<run> - train/reward__MIN``) and whitespace-aligned
        tables (a header of metric names, then numeric rows)."""
        if sep == "|":
            cells = [c.strip() for c in t.strip().strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                return  # the |---|:--:| rule under a Markdown header
        elif sep == ",":
            cells = [c.strip().strip('"') for c in next(csv.reader([t]))]
        elif sep == " ":
            cells = t.split()
        else:
            cells = [c.strip() for c in t.split(sep)]
        if len(cells) < 2:
            return
        if self._wide is not None and self._table_sep == sep and len(cells) == len(self._wide):
            self._wide_row(cells, out)
            return  # a row of a table whose columns are steps is never one step's record
        if sep in ("|", "\t") and self._summary_row(cells, out):
            return
        # hand-written Markdown tables mark, annotate and format their cells; machine tables do not
        nums = [(_cell_number(c) if sep == "|" else parse_number(c)) if c else None for c in cells]
        head = self._table
        if head is not None and self._table_sep == sep and len(cells) == len(head) \
                and sum(n is not None for n in nums) >= max(1, sum(c not in _NO_VALUE for c in cells) // 2):
            # empty or '-' cells are steps a metric was not logged at (W&B exports of several metrics)
            if sep == "|" and any(h in _STEP_COLUMNS and v is None for h, v in zip(head, nums)):
                return  # a typed table's row whose step cell is a word ("| raw_grad_norm | ~3.6e-5 |") is no step
            raw = {h: v for h, v in zip(head, nums) if v is not None and h}
            step = None
            for key in _STEP_COLUMNS:
                if key in raw:
                    step = _as_step(raw.pop(key))
                    break
            if sep == "|" and all(normalize_key(h) is None for h in raw):
                return  # a typed table's row of no metric (a report's "perf/total_num_tokens | 53,599" row) is no step
            self._emit(out, raw, step, self.line_no, "table" if sep != "," else "csv")
            return
        strict = nums if sep != "|" else [parse_number(c) if c else None for c in cells]  # "7B" names a column
        if sum(n is None for n in strict) >= max(2, len(cells) // 2) and all(cells[1:]) and (cells[0] or sep == ",") and \
                all(len(c) < 160 for c in cells) and (sep != " " or _WS_HEADER.match(t)):
            self._table = [_column_name(c.strip("*`_ ") if sep == "|" else c) for c in cells]
            self._table_sep = sep
            steps = [_step_of_header(c) for c in cells]
            # a report's table turned on its side: a metric per row, a step per column ("| metric | Step 1 | Step 105 |")
            self._wide = steps if steps[0] is None and sum(x is not None for x in steps[1:]) >= 2 else None

    def _wide_row(self, cells: list[str], out: list[MetricPoint]) -> bool:
        """A row of a table whose header names a step per column (a training report's before/after table:
        ``| actor/entropy | 0.60 | 0.73 | 0.23 | trend |``): one point per column that has a step, so the
        metric rules read the row as the curve it is (a per-metric summary row would keep only the first value).
        Columns without a step (a trend or comment column) are skipped."""
        key = cells[0].strip("*`_ ")
        if not key or " " in key or normalize_key(key) is None:
            return False
        before = self.points_read
        for step, cell in zip(self._wide or (), cells):
            num = _cell_number(cell) if step is not None else None
            if num is not None:
                self._emit(out, {key: num}, step, self.line_no, "table")
        return self.points_read > before

    def _summary_row(self, cells: list[str], out: list[MetricPoint]) -> bool:
        """A row of a per-metric summary table (``| `completions/clipped_ratio` | **1** | 39/40 |``): a
        metric key in the first cell and its value in the second, Markdown emphasis and code marks
        stripped. The rows of one table are one record (one step), so a single summary is read as
        one point per metric."""
        key = cells[0].strip("*`_ ")
        if not key or " " in key or normalize_key(key) is None:
            return False
        num = _cell_number(cells[1])
        if num is None:
            return False
        if self._summary_line is None or self.line_no - self._summary_line > 1:
            self._ordinal += 1  # a new table: a new record
        self._summary_line = self.line_no
        point = make_point({key: num}, step=self._ordinal, line=self.line_no, source="table",
                           total_steps=self.total_steps)
        if point.values:
            self.points_read += 1
            out.append(point)
        return True

    def _kv_line(self, t: str, out: list[MetricPoint]) -> bool:
        """``key: value`` runs on one line (``reward: 0   reward_std: 0   loss: 0``, ``a=1, b=2``,
        ``epoch: 0|step: 259|act_loss: 0.02``): at least two pairs; a ``step`` key gives the step."""
        marked = "`" in t or "*" in t
        if marked:
            t = t.translate(_MARKUP)
        pairs = _KV_PAIR.findall(t)
        if len(pairs) < 2 or sum(normalize_key(k) is not None for k, _ in pairs) < 2:
            return False  # two metric keys at least: prose and log lines hold stray "word: 3" pairs
        raw: dict[str, float] = {}
        for key, val in pairs:
            num = parse_number(val)
            if num is not None:
                raw[key] = num
        step = None
        for key in _STEP_COLUMNS:
            if key in raw:
                step = _as_step(raw.pop(key))
                break
        before = self.points_read
        # pairs in a note's inline code are a sentence's values ("source prose"): its wordings are read too
        self._emit(out, raw, step, self.line_no, "prose" if marked else "key_value")
        return self.points_read > before

    def _prose_line(self, t: str, out: list[MetricPoint]) -> bool:
        """A run report's sentence that states a metric's value at a step or its change (``_PROSE_AT_STEP``):
        one point per value, so the metric rules read a narrated run as they read its log."""
        before = self.points_read
        if "`" in t or "*" in t:
            t = t.translate(_MARKUP)
        for rx in (_PROSE_AT_STEP, _PROSE_STEP_FIRST):
            for m, key in _keyed_matches(rx, t):
                num = parse_number(m.group("val"))
                if num is not None:
                    self._emit(out, {key: num}, int(m.group("step")), self.line_no, "prose")
        if " from " in t:
            for m, key in _keyed_matches(_PROSE_FROM_TO, t):
                a, b = parse_number(m.group("a")), parse_number(m.group("b"))
                if a is not None and b is not None:
                    self._emit(out, {key: a}, None, self.line_no, "prose")
                    self._emit(out, {key: b}, None, self.line_no, "prose")
        if ("step" in t or "iteration" in t) and ("generat" in t or "rollout" in t or "sampling" in t or "decoding" in t):
            s, g = _PROSE_STEP_TIME.search(t), _PROSE_GEN_TIME.search(t)
            if s and g and g.start("c") != s.start("a" if s.group("a") else "b"):  # two durations, not one read twice
                step_s = float(s.group("a") or s.group("b")) * _SECONDS[(s.group("au") or s.group("bu")).lower()]
                gen_s = float(g.group("c")) * _SECONDS[g.group("cu").lower()]
                if 0 < gen_s <= step_s:
                    self._emit(out, {"timing_s/step": step_s, "timing_s/gen": gen_s}, None, self.line_no, "prose")
        if "→" in t or "->" in t or "⟶" in t or "=>" in t:
            for m, key in _keyed_matches(_PROSE_CHAIN, t):
                items = _ARROW.split(m.group("chain"))
                if any("%" in item for item in items):
                    continue
                steps = [_CHAIN_STEP.search(item) for item in items]
                if not all(steps):
                    steps = [None] * len(items)  # steps on some values only: the order is the curve
                for item, s in zip(items, steps):
                    v = _CHAIN_VALUE.search(_CHAIN_STEP.sub(" ", item))
                    num = parse_number(v.group(1)) if v else None
                    if num is not None:
                        self._emit(out, {key: num}, int(s.group(1)) if s else None, self.line_no, "prose")
        return self.points_read > before


def _keyed_matches(rx: re.Pattern[str], t: str):
    """The matches of ``rx`` whose ``key`` is a metric name; after a word that is not one, the search goes on
    from the next word (``the entropy fell from ...``: 'the' is not a key, 'entropy' is)."""
    pos = 0
    while True:
        m = rx.search(t, pos)
        if m is None:
            return
        key = _prose_key(m.group("key"))
        if key is not None:
            yield m, _compound_key(t, m.start("key"), key)
            pos = m.end()
        else:
            pos = m.end("key")


_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z0-9]*)[ _-]$")


def _compound_key(t: str, start: int, key: str) -> str:
    """Round 32: the key with the word before it when the two name another metric of the vocabulary ("Mismatch KL"
    is prime-rl's mismatch_kl, the rollout/trainer KL, not the KL to the reference that "KL" alone names)."""
    m = _WORD_BEFORE.search(t, max(0, start - 40), start)
    if m is not None:
        joined = f"{m.group(1)}_{key}".lower()
        if normalize_key(joined) is not None:
            return joined
    return key


def _prose_key(word: str) -> str | None:
    """A word of a sentence as a metric key, or None: the vocabulary's names (``kl``, ``train/kl``,
    ``grad_norm``), also capitalised as sentences write them (``KL``, ``Entropy``)."""
    for key in (word, word.lower()):
        if normalize_key(key) is not None:
            return key
    return None


class TrainerStateReader:
    """Streams ``log_history`` of a TRL/transformers ``trainer_state.json``, one element at a
    time (only the element being read is buffered)."""

    format = "trl_trainer_state"

    def __init__(self, array_key: str | None = '"log_history"', fmt: str = "trl_trainer_state") -> None:
        """``array_key=None``: the document itself is the array (a W&B history JSON export)."""
        self._array_key = array_key
        self.format = fmt
        self._buf = ""
        self._state = "seek"
        self._decoder = json.JSONDecoder()
        self.line_no = 0
        self.points_read = 0
        self.total_steps: int | None = None
        self._consumed_lines = 0
        self._ordinal = 0
        self._head = ""

    def feed(self, chunk: str) -> list[MetricPoint]:
        out: list[MetricPoint] = []
        if not chunk:
            return out
        self.line_no += chunk.count("\n")
        self._buf += chunk
        if self._state == "seek":
            i = self._buf.find(self._array_key) if self._array_key else self._buf.find("[")
            if i < 0:
                self._head = (self._head + self._buf)[-4096:]
                self._buf = self._buf[-32:]
                return out
            j = self._buf.find("[", i)
            if j < 0:
                return out
            self._head = (self._head + self._buf[:i])[-4096:]
            m = re.search(r'"max_steps"\s*:\s*(\d+)', self._head)
            if m:
                self.total_steps = int(m.group(1))
            self._consumed_lines += self._buf[:j + 1].count("\n")
            self._buf = self._buf[j + 1:]
            self._state = "array"
        while self._state == "array":
            stripped = self._buf.lstrip(" \t\r\n,")
            self._consumed_lines += self._buf[: len(self._buf) - len(stripped)].count("\n")
            self._buf = stripped
            if not self._buf:
                break
            if self._buf[0] == "]":
                self._state = "done"
                self._buf = ""
                break
            try:
                obj, end = self._decoder.raw_decode(self._buf)
            except ValueError:
                if len(self._buf) > MAX_LINE_CHARS:  # not JSON we can read: give up on it
                    self._state = "done"
                    self._buf = ""
                break
            line = self._consumed_lines + 1
            self._consumed_lines += self._buf[:end].count("\n")
            self._buf = self._buf[end:]
            if isinstance(obj, dict) and "train_runtime" not in obj:
                raw = _flatten({k: v for k, v in obj.items() if k not in _NOT_METRICS})
                if raw:
                    self._ordinal += 1
                    step = _as_step(obj.get("step", obj.get("_step", obj.get("global_step"))))
                    point = make_point(raw, step=step if step is not None else self._ordinal, line=line,
                                       source=self.format, total_steps=self.total_steps)
                    self.points_read += 1
                    out.append(point)
        if self._state == "done":
            self._buf = ""
        return out

    def finish(self) -> list[MetricPoint]:
        return []


def detect_format(head: str | Iterable[str]) -> str:
    """The format of a log from its first lines (a hint: every line reader reads all formats).

    Accepts the head as one string or as a list of lines.
    """
    text = head if isinstance(head, str) else "\n".join(head)
    text = text.lstrip("\ufeff")
    stripped = text.lstrip()
    if stripped.startswith("{") and ('"log_history"' in text or '"best_model_checkpoint"' in text
                                     or '"global_step"' in text[:2000] and '"is_world_process_zero"' in text):
        return "trl_trainer_state"
    if stripped.startswith("[") and stripped[1:].lstrip().startswith("{"):
        return "json_array"
    lines = [ln for ln in text.splitlines()[:3] if ln.strip()]
    if len(lines) >= 2 and lines[0].count(",") >= 1 and "{" not in lines[0] and "'" not in lines[0]:
        head = [_column_name(c).lower() for c in next(csv.reader([lines[0]]))]
        row = next(csv.reader([lines[1]]))
        if len(row) == len(head) and sum(parse_number(c) is not None for c in row if c) >= max(1, sum(map(bool, row)) // 2) \
                and _metric_header(head):
            return "csv"
    counts = dict.fromkeys(FORMATS, 0)
    for raw_line in text.splitlines()[:400]:
        for line in raw_line.split("\r"):
            t = line.strip().lstrip("> ")
            if not t:
                continue
            if "step:" in t and " - " in t and _VERL_STEP.search(t):
                counts["verl_console"] += 1
            elif "Global step" in t and _OPENRLHF.search(t):
                counts["openrlhf_console"] += 1
            elif t.startswith('{"'):
                if '"data"' in t:
                    counts["verl_jsonl"] += 1
                else:
                    counts["trl_jsonl"] += 1
            elif "{'" in t and _PYDICT_ITEM.search(t):
                counts["trl_console"] += 1
            elif "Training Results" in t or (t.startswith("•") and _NEMO_ITEM.match(t)):
                counts["nemo_rl_console"] += 1
            elif t.count("\t") >= 2:
                counts["table"] += 1
    best = max(counts.items(), key=lambda kv: kv[1])
    return best[0] if best[1] > 0 else "text"


def make_reader(fmt: str | None = None) -> LogReader | TrainerStateReader:
    """A fresh incremental reader for ``fmt`` (``None`` or unknown: the universal line reader)."""
    if fmt == "trl_trainer_state":
        return TrainerStateReader()
    if fmt == "json_array":
        return TrainerStateReader(array_key=None, fmt="json_array")
    if fmt == "tensorboard":
        raise ValueError("TensorBoard event files are binary: use rl_advisor.metric_files.read_tensorboard")
    return LogReader(fmt or "text")


def parse_text(text: str, fmt: str | None = None) -> list[MetricPoint]:
    """Every point of a whole text (format detected when not given)."""
    reader = make_reader(fmt or detect_format(text[:65536]))
    points = reader.feed(text)
    points.extend(reader.finish())
    return points
