"""One-pass scanner for log signatures (advisor/data/diagnosis_signatures.yaml).

Fed line by line; keeps a small ring buffer (for attributing a GPU OOM to the phase whose frames
precede it), the first few matching lines per signature, and counters — memory does not grow with
the log. Lines starting with '#' are prose (descriptions, comments) and are marked as such.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from advisor.diagnosis.literal_gate import may_match, required_words
from advisor.diagnosis.prefilter import word_finder
from advisor.diagnosis.tables import load_table, oom_table, signatures
from advisor.metrics.line_prefix import STARTS as _PREFIX_STARTS
from advisor.metrics.line_prefix import strip_ansi, strip_prefix

MAX_LINES_KEPT = 5
MAX_LINE_CHARS = 2000


@dataclass
class _Sig:
    id: str
    category: str
    severity: str
    triggers: tuple[str, ...]
    sources: tuple[str, ...]  # the regexes, compiled on the first line that holds a trigger (start-up time)
    requires: tuple[str, ...]  # requires_file regexes, compiled when a line holds a required word (start-up time)
    kind: str
    row: dict[str, Any]
    before: re.Pattern[str] | None = None
    after: re.Pattern[str] | None = None
    prose: bool = False  # scope: prose (descriptions), see diagnosis_signatures.yaml
    unless: re.Pattern[str] | None = None  # a match whose clause this finds is not read (diagnosis_signatures.yaml)
    verb_last: bool = False  # round 26: the match ends on a trend verb, a negation before it denies it (_negated_verb)
    _compiled: list[re.Pattern[str]] | None = None
    _gated: list[tuple[tuple[str, ...] | None, re.Pattern[str]]] | None = None

    @property
    def patterns(self) -> list[re.Pattern[str]]:
        if self._compiled is None:
            self._compiled = [re.compile(p) for p in self.sources]
        return self._compiled

    @property
    def required(self) -> list[re.Pattern[str]]:
        return [re.compile(p) for p in self.requires]  # re's own cache keeps the compiled patterns

    @property
    def gated(self) -> list[tuple[tuple[str, ...] | None, re.Pattern[str]]]:
        """(words one of which every match holds, pattern): see literal_gate.py."""
        if self._gated is None:
            self._gated = [(required_words(p), pat) for p, pat in zip(self.sources, self.patterns)]
        return self._gated


@dataclass
class SigHit:
    """What one signature (or OOM phase) matched."""

    id: str
    category: str
    severity: str
    row: dict[str, Any]
    count: int = 0
    log_lines: list[tuple[int, str]] = field(default_factory=list)
    prose_lines: list[tuple[int, str]] = field(default_factory=list)
    groups: dict[str, str] = field(default_factory=dict)
    note: str = ""
    alarming_prose: int = 0  # prose matches that do not call the behaviour expected/normal

    @property
    def benign_prose(self) -> bool:
        """Only descriptions that call it expected/normal ("KL spikes early are normal")."""
        return not self.log_lines and self.count > 0 and self.alarming_prose == 0

    def add(self, line_no: int, text: str, prose: bool, groups: dict[str, str] | None = None,
            at: int | None = None) -> None:
        """``at``: where the pattern matched; only the clause holding it can call it expected."""
        self.count += 1
        if prose and not _BENIGN.search(_clause(text, at) if at is not None else text):
            self.alarming_prose += 1
        target = self.prose_lines if prose else self.log_lines
        if len(target) < MAX_LINES_KEPT:
            target.append((line_no, text[:300]))
        if groups:
            for k, v in groups.items():
                if v and k not in self.groups:
                    self.groups[k] = v

    @property
    def first_line(self) -> int:
        lines = [n for n, _ in self.log_lines] or [n for n, _ in self.prose_lines]
        return min(lines) if lines else 0

    @property
    def prose_only(self) -> bool:
        return not self.log_lines


def _also(hit: SigHit, category: str) -> SigHit:
    """The same evidence under a second, near category (``also_category``): for a wording (or message) that
    the sources do not tie to one of two categories, e.g. "reward hacking" (a shortcut in a rule-based reward,
    or a reward model over-optimised) or an OOM whose phase is read only from its own words. Its confidence is
    lower than the first reading's, so the first stays ahead where the rest ties."""
    row = dict(hit.row, confidence=round(float(hit.row.get("confidence", 0.9)) - 0.2, 2))
    twin = SigHit(f"{hit.id}/{category}", category, hit.severity, row, count=hit.count,
                  log_lines=list(hit.log_lines), prose_lines=list(hit.prose_lines), groups=dict(hit.groups),
                  note=hit.note, alarming_prose=hit.alarming_prose)
    return twin


_BENIGN = re.compile(r"(?i)\b(?:expected|is normal|are normal|normal behaviou?r|by design|harmless|benign|"
                     r"not a (?:problem|failure|bug)|nothing to worry|intended)\b")

_CLAUSE_BREAK = re.compile(r"[;.!?]\s|\b(?:but|while|whereas|although|though|however)\b", re.IGNORECASE)


# a negator right before a described symptom ("no completion exceeds max_completion_length", "without any NaN",
# "not a single response is clipped", "none of the groups"): at most two determiners between it and the match
# round 31: joined by a hyphen too ("the end-to-end no-OOM smoke": a run without an OOM)
_NEGATOR = re.compile(r"(?i)(?:\b(?:no|not|never|without|none of|nor|zero|no longer)|n['’]t)(?:\s+|-)(?:(?:any|a|an|the|single|one|more|further|"
                      r"of the|of|cuda|gpu|npu|tpu|cpu|host|device|nccl)\s+){0,2}"
                      # round 22: one item coordinated before the symptom is under the same negator ("without any hang or
                      # NCCL timeout", "no OOM/crash", "无 NaN、OOM")
                      r"(?:[\w-]+(?:\s+[\w-]+)?\s*(?:\bor\b|\bnor\b|/|、)\s*)?$"
                      # round 21: a Chinese negator right before the symptom ("没有出现 nan" - no NaN appeared, "不是 nan" -
                      # is not NaN, "未出现", "并未", "从没"): Chinese writes no space, so the words end at the match
                      # round 22: with a verb of occurring between ("未出现 OOM", "没有发生 OOM", "没遇到过 hang") and a device
                      # word (无显存 OOM); one place for every described failure (OOM, crash, NaN, hang, timeout)
                      r"|(?:没有|没|不|未|无|并未|从未|从没)(?:出现|发生|遇到|碰到|遇见|触发|报|有)?过?\s*(?:任何\s*)?(?:显存\s*)?$"
                      # round 26: a purpose that keeps the symptom from happening ("clip it to keep the grad norm from
                      # increasing", "to stop it from growing", "防止梯度范数持续上升"): what a setting prevents, not a report
                      r"|\b(?:prevent|stop|keep)(?:s|ed|ing|ping|t)?\s+(?:[\w-]+\s+){0,3}?from\s+(?:[\w-]+\s+)?$"
                      r"|(?:防止|避免|以免|不让)\s*\S{0,8}$")


def _negated(text: str, at: int) -> bool:
    """Whether the match at ``at`` in a description is negated by the words just before it, in its clause.
    A negation after the symptom ("NaN appears, not in the loss") is not read: it rarely denies the symptom."""
    head = text[max(0, at - 40):at]
    return bool(head) and _NEGATOR.search(head) is not None


# round 32: a symptom named as a hypothesis and answered no right after it ("Reward hacking? No.", "**Reward hacking？**
# 不是。", "OOM? Not really"): a list of causes ruled out one by one names each, and each is denied after it, where
# ``_negated`` (the words before the match) does not look
_ANSWERED_NO = re.compile(r"(?i)[\s*_`'\"”’」』)]{0,4}[?？][\s*_`'\"”’」』)]{0,4}"
                          r"(?:(?:no|nope|not|not really|none)\b|不是|并不是|不|否|没有|排除)")


def _denied(text: str, m: re.Match[str]) -> bool:
    """Whether a match in a description is negated before it (``_negated``) or answered no after it (``_ANSWERED_NO``)."""
    return _negated(text, m.start()) or _ANSWERED_NO.match(text, m.end()) is not None


# round 32: a line that stops mid-sentence (no closing punctuation; a word, a comma or a closing bracket last) and is
# long enough to have been wrapped, not a heading or a short label
_STOPS_MID_SENTENCE = re.compile(r"[A-Za-z0-9,)\]`'\"’”-]$")
_WRAP_MIN = 50


def _negated_verb(text: str, m: re.Match[str]) -> bool:
    """Round 26: whether the verb that ends a match is negated inside it ("the grad norm ... does not keep increasing",
    "so it no longer grows"): a trend told as a subject and a verb puts its negation between them, where
    ``_negated`` (the words before the match) does not look. Only the match's last two words are read, each with the
    words before it and the same ``_NEGATOR``: a negation of something else earlier in the match ("does not converge
    and keeps increasing") is not one of the verb."""
    span = text[m.start():m.end()]
    starts = [m.start() + w.start() for w in re.finditer(r"\b\w", span)][1:][-2:]
    return any(_NEGATOR.search(text[max(0, p - 60):p]) is not None for p in starts)


def _clause(text: str, at: int) -> str:
    """The clause of ``text`` around offset ``at`` ("NaN appears in grad_norm, but other loss is
    normal": the 'normal' belongs to the other loss, not to the NaN)."""
    start, end = 0, len(text)
    for m in _CLAUSE_BREAK.finditer(text):
        if m.end() <= at:
            start = m.end()
        elif m.start() > at:
            end = m.start()
            break
    return text[start:end]


# round 23: an OOM line that ends on a word asking for the place or the moment ("CUDA out of memory (12.51 GiB) in",
# "... during", "... inside", "... ->"): its sentence goes on in the next line, which may name the phase. Not a colon (a
# pasted traceback follows it: its frames come before the error they lead to) and not a message that ends itself
_RUNS_ON = re.compile(r"(?i)(?:\b(?:in|inside|within|during|while|when|at|from)|→|->|=>)\W{0,3}$")

# a traceback frame line: CPython's 'File "<path>", line N, in f' and IPython's 'File ~/<path>:N, in f'
_FRAME = re.compile(r'^\W{0,4}File [~"/]')


def _clause_head(text: str, start: int, end: int) -> str:
    """``text`` from the start of the clause holding ``start`` up to ``end`` (the words that lead to a match)."""
    head = 0
    for m in _CLAUSE_BREAK.finditer(text, 0, start):
        if m.end() <= start:
            head = m.end()
    return text[head:end]


_FRAMEWORK_HINTS = (
    ("verl", ("verl.", "/verl/", "verl ", "main_ppo", "taskrunner", "workerdict", "actor_rollout_ref")),
    ("openrlhf", ("openrlhf", "train_ppo_ray", "actormodelrayactor")),
    ("nemo_rl", ("nemo_rl", "nemo-rl", "nemo rl", "run_grpo_math")),
    ("trl", ("trl.", "/trl/", "grpotrainer", "dpotrainer", "grpoconfig", "dpoconfig", " trl ", "trl_")),
)


def _trie_pattern(words: list[str]) -> str:
    """A regex for any of ``words`` with shared prefixes factored out (a trie), so the matcher
    follows one branch per character instead of trying every word at every position."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        if "" in node and len(node) == 1:
            return ""
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(trie)


def _literal_re(words: set[str]) -> re.Pattern[str]:
    """One regex matching any of ``words`` (a fast pre-filter: most log lines match none)."""
    return _compiled_trie(frozenset(words))


@lru_cache(maxsize=16)
def _compiled_trie(words: frozenset[str]) -> re.Pattern[str]:
    return re.compile(_trie_pattern(sorted(words)))  # built once per process, not once per session


def _ratio_value(m: re.Match[str]) -> int:
    """A ratio signature's number: group ``n``, or ``n2`` where a pattern's alternatives name it twice (Python's re
    forbids one group name in two alternatives)."""
    return int(m.group("n") or m.groupdict().get("n2") or 0)


class SignatureScanner:
    """Feed lines with ``feed_line(line_no, text)``; read ``hits()`` at the end."""

    def __init__(self) -> None:
        self._sigs: list[_Sig] = []
        for row in signatures():
            sig = _Sig(id=row["id"], category=row["category"], severity=row["severity"],
                       triggers=tuple(t.lower() for t in row.get("triggers", [])),
                       sources=tuple(row.get("patterns", [])),
                       requires=tuple(row.get("requires_file", [])),
                       kind=row.get("kind", "match"), row=row,
                       prose=row.get("scope") == "prose",
                       unless=re.compile(row["unless"]) if row.get("unless") else None,
                       verb_last=bool(row.get("verb_last")))
            if sig.kind == "ratio":
                sig.before, sig.after = re.compile(row["before"]), re.compile(row["after"])
            self._sigs.append(sig)
        oom = oom_table()
        self._oom = oom
        self._gpu_patterns = [re.compile(p) for p in oom["gpu_patterns"]]
        self._gpu_triggers = tuple(t.lower() for t in oom["gpu_triggers"])
        self._prose_oom = [re.compile(p) for p in oom["prose_patterns"]]
        self._host_words = re.compile(oom["host_words"])
        self._prose_exclude = re.compile(oom["prose_exclude"])
        self._observed_growth = re.compile(oom.get("observed_growth") or r"(?!)")
        self._hedge_verbs = re.compile(oom.get("hedge_verbs") or r"(?!)")
        self._gpu_words = re.compile(oom.get("gpu_words") or r"(?!)")
        self._host_leak = re.compile(oom.get("host_leak_words") or r"(?!)")
        self._config_echo = re.compile(load_table("diagnosis_signatures.yaml").get("config_echo") or r"(?!)")
        self._config_assignment = re.compile(oom.get("config_assignment") or r"(?!)")  # names a setting, no phase
        self._setting_names = re.compile(oom.get("setting_names") or r"(?!)")
        self._phases: list[tuple[str, tuple[str, ...]]] = [
            (ph["category"], tuple(m.lower() for m in ph["markers"])) for ph in oom["phases"]]
        # a phase whose OOM is also read as another category (the weight hand-over: the engine's or the card's)
        self._phase_also: dict[int, str] = {i: ph["also"] for i, ph in enumerate(oom["phases"]) if ph.get("also")}
        self._prose_oom_triggers = tuple(t.lower() for t in oom["prose_triggers"])
        triggers = {tr for sig in self._sigs for tr in sig.triggers} | set(self._gpu_triggers) | set(self._prose_oom_triggers)
        self._leak_gate = ("memory", "leak", "内存")  # checked only on lines a trigger already let through
        self._triggers = frozenset(triggers)
        self._trigger_list = sorted(triggers)
        self._sigs_by_trigger: dict[str, list[int]] = {tr: [] for tr in self._trigger_list}
        for i, sig in enumerate(self._sigs):
            for tr in sig.triggers:
                self._sigs_by_trigger[tr].append(i)
        self._markers = frozenset(mk for _, markers in self._phases for mk in markers)
        # a marker of words ('actor updat', 'ref log prob', 'kv cache') starts at a word: not inside another word ('loss
        # scale factor updated', 'pref log prob'); frame and class markers ('policyworker.train', 'referencemodel') match
        # inside a longer name (DTensorPolicyWorker.train), as before (round 17)
        self._phase_match: list[tuple[tuple[str, ...], re.Pattern[str] | None]] = []
        for _, markers in self._phases:
            words = [mk for mk in markers if " " in mk.strip() and mk[:1].isalpha()]
            self._phase_match.append((tuple(mk for mk in markers if mk not in words),
                                      re.compile("(?<![a-z])(?:" + "|".join(map(re.escape, words)) + ")")
                                      if words else None))
        self._no_logprob_pass = tuple(m.lower() for m in oom.get("no_logprob_pass_markers", []))
        self.no_logprob_pass_seen = False  # a preference/SFT trainer is named: its log-prob pass is the train step
        self._any_hint = _literal_re({h for _, hints in _FRAMEWORK_HINTS for h in hints})
        self._ring: deque[tuple[int, str, tuple[int, ...]]] = deque(maxlen=int(oom.get("lookback_lines", 80)))
        self._requiring = [sig for sig in self._sigs if sig.requires]
        self._requiring_by_word = self._by_required_word()
        self._required_words = frozenset(self._requiring_by_word)
        # one pre-filter for everything a line can matter for (signature, OOM phase, context)
        interest = self._triggers | self._markers | self._required_words | set(self._no_logprob_pass)
        # the words of the set that start a longer one ('oom' in 'oom-killer'): see _words_in
        self._prefixes = {w: tuple(w[:i] for i in range(1, len(w) + 1) if w[:i] in interest) for w in interest}
        self._interest_words = tuple(sorted(interest))
        self._find_words = word_finder(self._interest_words)
        # the trie regex only without Hyperscan: compiling it is a tenth of a second of start-up
        self._any_interest = _literal_re(interest) if self._find_words is None else None
        self._hits: dict[str, SigHit] = {}
        self._wrap: tuple[int, bool, str] | None = None  # (line, comment line?, text) that may go on in the next line
        self._requires_met: set[str] = set()
        # a signature re-read in context: e.g. an NCCL timeout next to weight-sync frames
        self._upgrades = {sig.id: sig.row["context_upgrade"] for sig in self._sigs if sig.row.get("context_upgrade")}
        self._pending_upgrades: list[tuple[int, int, str, dict]] = []  # (deadline, line, text, rule)
        self._ratio_before: dict[str, tuple[int, int]] = {}
        self.ratios: list[dict[str, Any]] = []
        self.gpu_oom: list[tuple[int, str, int | None]] = []  # (line, text, phase index)
        self.oom_frames: list[tuple[int, str]] = []  # the frames that name the OOM's phase
        self.gpu_oom_prose: list[tuple[int, str]] = []
        self.host_oom_prose: list[tuple[int, str]] = []
        self.host_leak: list[tuple[int, str]] = []  # prose naming a growing host memory (a leak)
        self.phase_first: dict[int, tuple[int, str]] = {}
        self.phase_first_frame: dict[int, tuple[int, str]] = {}  # the same, on traceback frame lines only
        self._frame_line = -2  # the last 'File "...", line N, in f' line: it and the code line after it are frames
        self.phase_lines = 0  # lines holding a phase marker (the OOM line itself may be one)
        # round 23: an OOM message whose sentence runs on to the next line ("... CUDA out of memory (12.51 GiB) in" /
        # "dp_actor.update_policy -> loss.backward()."): (its line, its index in gpu_oom); see _oom_sentence_phase
        self._oom_open: tuple[int, int] | None = None
        self._oom_phase_after: int | None = None  # the line whose words gave the phase that way
        self._last_line = -1  # the last non-empty line fed
        self.framework_votes: dict[str, int] = {}
        self._votes_left = 500
        self.lines = 0

    # ------------------------------------------------------------------ scanning

    def feed_line(self, line_no: int, text: str, prose_ok: bool = True, record: bool = False) -> None:
        """Scan one line. ``prose_ok=False``: a machine-log line past the prose zone of a long
        input (prose-scope signatures do not read it). ``record``: the metric reader read the line
        as a metric record (any format), so the metric rules judge its numbers, not the wordings."""
        self.lines = line_no
        t = text.strip()
        if not t:
            return
        if len(t) > MAX_LINE_CHARS:
            t = t[:MAX_LINE_CHARS]
        if "\x1b" in t:
            t = strip_ansi(t)
            if not t:
                return
        full = t
        follows_oom = self._oom_open is not None and self._last_line == self._oom_open[0]
        if self._oom_open is not None and not follows_oom:
            self._oom_open = None
        self._last_line = line_no
        if t[0] in _PREFIX_STARTS:
            t = strip_prefix(t)  # runner prefixes (Ray, vLLM, logging, torchrun, kubectl)
            if not t:
                return
            if len(t) == len(full):
                t = full  # nothing came off
        prose = t.startswith("#")
        if "File " in t[:8] and _FRAME.match(t):
            self._frame_line = line_no  # a traceback frame: it and the code line after it (see _phases_in)
        low = t.lower()
        low_full = low if full is t else full.lower()
        if self._votes_left and self._any_hint.search(low_full):
            self._vote(low_full)  # a prefix names the framework too ('(WorkerDict pid=...)': veRL)
        if not prose and (record or t[0] == "{" or ("step:" in t and " - " in t) or "Global step" in t):
            return  # metric records are read by the metric rules
        if not prose and self._config_echo.match(t):
            self._ring.append((line_no, t[:300], ()))
            return  # the run's settings echoed (Hydra's override list), not an error
        if self._pending_upgrades:
            self._check_upgrades(line_no, t, low)
        if prose_ok:
            self._wrapped(line_no, t)
        present = self._words_in(low)  # triggers, markers, required words the line holds
        # a required word may be in the prefix ('[rank3]:' shows a distributed run)
        req = present if full is t or not self._requiring else present | self._words_in(low_full)
        if not req:  # the common case: a line nothing cares about
            self._ring.append((line_no, t[:300], ()))
            return
        if self._requiring and not req.isdisjoint(self._required_words):
            # round 32: only the open requirements whose own words the line holds are tried, each with its own
            # patterns. One combined regex of every open requirement (5,000 characters) cost ~160 us a line, and a
            # requirement whose word is common but whose pattern never matches (group_of_two_written's 'group' in
            # every "ProcessGroupNCCL" warning of a distributed log) kept it open for the whole log: 100 us a line
            # on the generated 1M-line veRL log of benchmarks/diagnose_scale.py (264x a bare read, from 2.6x)
            words = req & self._required_words
            met = {sig.id for w in words for sig in self._requiring_by_word.get(w, ())
                   if any(r.search(full) for r in sig.required)}
            if met:
                self._requires_met |= met
                self._requiring = [sig for sig in self._requiring if sig.id not in met]
                # the gate shrinks to the requirements still open: a met one (a word on every line of a
                # distributed log, '[rank3]') would otherwise send each such line through the loop above
                self._requiring_by_word = self._by_required_word()
                self._required_words = frozenset(self._requiring_by_word)
        # the markers are words of ``interest``, so ``present`` already says whether the line holds one
        # (one set test instead of a substring test per marker on every line the pre-filter let through)
        if not self.no_logprob_pass_seen and (not present.isdisjoint(self._no_logprob_pass)
                                              or "" in self._no_logprob_pass):
            self.no_logprob_pass_seen = True
        if prose_ok and any(w in low for w in self._leak_gate) and len(self.host_leak) < MAX_LINES_KEPT \
                and self._host_leak.search(t) and not self._gpu_words.search(t):
            self.host_leak.append((line_no, t[:300]))
        has_marker = not present.isdisjoint(self._markers)
        triggers = present & self._triggers
        if not triggers:  # the common case: a line no signature cares about
            phases = self._phases_in(low, t) if has_marker else ()
            if follows_oom and phases:
                self._oom_sentence_phase(line_no, t, phases)
            self._ring.append((line_no, t[:300], phases))
            return
        wanted = {i for tr in triggers for i in self._sigs_by_trigger[tr]}
        texts = ((t, low),) if full is t else ((t, low), (full, low_full))
        for i in sorted(wanted):  # the table's order, only the signatures a trigger of the line names
            sig = self._sigs[i]
            if sig.prose and not prose_ok:
                continue
            if sig.kind == "ratio":
                self._ratio(sig, line_no, t)
                continue
            for words, pat in sig.gated:
                # the line as printed, then with its runner prefix (a prefix can name the process:
                # '(RayWorkerVllm pid=...)' before a socket timeout)
                for s, sl in texts:
                    m = pat.search(s) if words is None or may_match(words, sl, s) else None
                    # round 22: a negated failure is no report for any signature read as a description (the prose
                    # zone): "without any hang or NCCL timeout" as "no NaN"
                    if m and (sig.prose or prose_ok) and (_denied(s, m) or sig.verb_last and _negated_verb(s, m)):
                        m = next((x for x in pat.finditer(s) if not _denied(s, x)
                                  and not (sig.verb_last and _negated_verb(s, x))), None)
                    if m and sig.unless is not None and sig.unless.search(_clause(s, m.start())):
                        m = None
                    if m:
                        break
                if m:
                    hit = self._hit(sig)
                    hit.add(line_no, s, prose, m.groupdict(), at=m.start())
                    if not prose and sig.id in self._upgrades:
                        self._start_upgrade(line_no, s, self._upgrades[sig.id])
                    break
        phases = self._phases_in(low, t) if has_marker else ()
        if follows_oom and phases:
            self._oom_sentence_phase(line_no, t, phases)
        if any(tr in low for tr in self._gpu_triggers) and self._gpu_oom_reported(t):
            if not self._host_words.search(t) or "cuda" in low:
                if len(self.gpu_oom) < MAX_LINES_KEPT:
                    phase = self._phase_before(phases)
                    self.gpu_oom.append((line_no, t[:300], phase))
                    if phase is not None and not self.oom_frames and self.phase_lines <= 1:
                        self.oom_frames = [(n, text) for n, text, ph in self._ring if phase in ph][-3:]
                    if phase is None and _RUNS_ON.search(t):
                        self._oom_open = (line_no, len(self.gpu_oom) - 1)
        elif any(w in low for w in self._prose_oom_triggers) \
                and any(not _denied(t, m) for p in self._prose_oom for m in p.finditer(t)) \
                and not self._prose_oom_excluded(t):
            host = self._host_words.search(t) is not None and self._gpu_words.search(t) is None
            target = self.host_oom_prose if host else self.gpu_oom_prose
            if len(target) < MAX_LINES_KEPT:
                target.append((line_no, t[:300]))
        self._ring.append((line_no, t[:300], phases))

    def _wrapped(self, line_no: int, t: str) -> None:
        """Round 32: a sentence hard-wrapped over two lines of a description (a Markdown paragraph or comment lines
        pasted with their line breaks: "... the importance ratio per step): ... the run on" / "# current main ...
        does not stay around 1."). The description-scope signatures also read the two lines joined, and keep only a
        match that crosses the break (one inside either line is that line's own). A line continues the one before
        when both are comment lines or both are not, the first is long and stops mid-sentence, and the second starts
        in lower case."""
        prev, self._wrap = self._wrap, None
        mark = t.startswith("#")
        body = t.lstrip("#").strip() if mark else t
        if prev is not None and prev[0] == line_no - 1 and prev[1] == mark and body[:1].islower():
            self._scan_joined(line_no, prev[2] + " " + body, len(prev[2]) + 1)
        if len(body) >= _WRAP_MIN and _STOPS_MID_SENTENCE.search(body):
            self._wrap = (line_no, mark, body)

    def _scan_joined(self, line_no: int, joined: str, cut: int) -> None:
        low = joined.lower()
        triggers = self._words_in(low) & self._triggers
        wanted = {i for tr in triggers for i in self._sigs_by_trigger[tr]}
        for i in sorted(wanted):
            sig = self._sigs[i]
            if not sig.prose or sig.kind == "ratio":
                continue
            for words, pat in sig.gated:
                if words is not None and not may_match(words, low, joined):
                    continue
                # stricter than one line: a negation before the match's last words denies it for every signature
                # ("completion length stable (~182-191," / "no shrink phase ...")
                m = next((x for x in pat.finditer(joined) if x.start() < cut < x.end() and not _denied(joined, x)
                          and not _negated_verb(joined, x)), None)
                if m and sig.unless is not None and sig.unless.search(_clause(joined, m.start())):
                    m = None
                if m:
                    self._hit(sig).add(line_no, joined, True, m.groupdict(), at=m.start())
                    break

    def _hit(self, sig: _Sig) -> SigHit:
        """The signature's hit, made on its first match."""
        hit = self._hits.get(sig.id)
        if hit is None:
            hit = self._hits[sig.id] = SigHit(sig.id, sig.category, sig.severity, sig.row)
        return hit

    def _gpu_oom_reported(self, t: str) -> bool:
        """Whether a GPU-OOM message on this line is reported, not hedged or avoided in the words before it in its
        clause ("I set micro_batch_size = 2 to avoid the possibility of cuda out of memory"). Only the words before
        the message: torch's own message goes on "... to avoid fragmentation" after it."""
        for p in self._gpu_patterns:
            m = p.search(t)
            if m and not self._prose_exclude.search(_clause_head(t, m.start(), m.end())) and not _denied(t, m):
                return True
        return False

    def _prose_oom_excluded(self, t: str) -> bool:
        """A prose OOM that is not a report (hedged, negated, avoided, conditional). On a line that reports an
        observed memory growth, its hedged consequence ("... that can cause OOM") is this run's OOM: the hedge
        verbs are read as "causes" and the other exclusions still apply."""
        if not self._prose_exclude.search(t):
            return False
        if self._observed_growth.search(t):
            return self._prose_exclude.search(self._hedge_verbs.sub("causes", t)) is not None
        return True

    def _by_required_word(self) -> dict[str, list[_Sig]]:
        """Each required word of an open requirement -> the signatures whose requirement names it."""
        out: dict[str, list[_Sig]] = {}
        for sig in self._requiring:
            for tr in sig.row.get("requires_triggers", []):
                out.setdefault(tr.lower(), []).append(sig)
        return out

    def _words_in(self, low: str) -> set[str]:
        """Every trigger, marker and required word that occurs in ``low``. The trie regex matches
        the longest word that starts at the leftmost position it can; searching again one
        character further finds the overlapping ones, and the shorter words starting at the same
        place are that match's prefixes. One search for a line that holds none, one more per
        occurrence otherwise (instead of one search per word set and a substring test per trigger)."""
        if self._find_words is not None:  # Hyperscan: the same set from one scan (prefilter.word_finder)
            words = self._interest_words
            return {words[i] for i in self._find_words(low)}
        present: set[str] = set()
        assert self._any_interest is not None
        search, prefixes = self._any_interest.search, self._prefixes
        m = search(low)
        while m is not None:
            present.update(prefixes[m.group()])
            m = search(low, m.start() + 1)
        return present

    def _start_upgrade(self, line_no: int, t: str, rule: dict) -> None:
        markers = [m.lower() for m in rule["markers"]]
        window = int(rule.get("window", 40))
        for n, text, _ in list(self._ring)[-window:]:
            if n >= line_no - window and any(mk in text.lower() for mk in markers):
                self._upgrade_hit(rule, (line_no, t), (n, text))
                return
        if len(self._pending_upgrades) < MAX_LINES_KEPT:
            self._pending_upgrades.append((line_no + window, line_no, t[:300], rule))

    def _check_upgrades(self, line_no: int, t: str, low: str) -> None:
        keep = []
        for deadline, n, text, rule in self._pending_upgrades:
            if any(mk.lower() in low for mk in rule["markers"]):
                self._upgrade_hit(rule, (n, text), (line_no, t))
            elif line_no <= deadline:
                keep.append((deadline, n, text, rule))
        self._pending_upgrades = keep

    def _upgrade_hit(self, rule: dict, first: tuple[int, str], context: tuple[int, str]) -> None:
        target = next(sig for sig in self._sigs if sig.id == rule["to"])
        hit = self._hits.get(target.id)
        if hit is None:
            hit = self._hits[target.id] = SigHit(target.id, target.category, target.severity, target.row)
        hit.add(first[0], first[1], False)
        hit.add(context[0], context[1], False)
        hit.note = rule.get("note", "").format(line=context[0])

    def _phases_in(self, low: str, t: str) -> tuple[int, ...]:
        if self._config_assignment.match(t):
            return ()  # round 26: a setting's name ('enable_sleep_mode=False \\') is not the phase an OOM ran in
        low = self._setting_names.sub(" ", low)  # a switch named in a sentence ('turned off `enable_sleep_mode`')
        phases = tuple(i for i, (plain, words) in enumerate(self._phase_match)
                       if any(mk in low for mk in plain) or (words is not None and words.search(low)))
        if phases:
            self.phase_lines += 1
        frame = self.lines - self._frame_line in (0, 1)  # a frame line or the code line it shows
        for i in phases:
            self.phase_first.setdefault(i, (self.lines, t[:300]))
            if frame:
                self.phase_first_frame.setdefault(i, (self.lines, t[:300]))
        return phases

    def _phase_before(self, phases_here: tuple[int, ...]) -> int | None:
        found = set(phases_here)
        oldest = self.lines - (self._ring.maxlen or 0)
        for n, _, ph in self._ring:  # the ring may hold only pre-filtered lines: bound by distance
            if n >= oldest:
                found.update(ph)
        return min(found) if found else None

    def _oom_sentence_phase(self, line_no: int, t: str, phases: tuple[int, ...]) -> None:
        """Round 23: the phase named by the words that continue an OOM message's sentence on the next line (a write-up
        wrapping "... `torch.OutOfMemoryError: CUDA out of memory (12.51 GiB)` in" / "`dp_actor.update_policy ->
        loss.backward()`."): where the OOM happened, as a frame before it would say. Only when the OOM line ends on a
        word that asks for a place (_RUNS_ON) and nothing before it gave the phase."""
        assert self._oom_open is not None
        _, idx = self._oom_open
        self._oom_open = None
        n, text, phase = self.gpu_oom[idx]
        if phase is not None:
            return
        self.gpu_oom[idx] = (n, text, min(phases))
        if not self.oom_frames:
            self.oom_frames = [(line_no, t[:300])]
            self._oom_phase_after = line_no

    def _ratio(self, sig: _Sig, line_no: int, t: str) -> None:
        assert sig.before is not None and sig.after is not None
        m = sig.before.search(t)
        if m:
            self._ratio_before[sig.id] = (line_no, _ratio_value(m))
            rest = t[m.end():]
            m = sig.after.match(rest)  # the after value on the same line, right after ('tps 800 -> 400')
            if m is None:
                return
        else:
            m = sig.after.search(t)
        if m and sig.id in self._ratio_before:
            b_line, before = self._ratio_before.pop(sig.id)
            after = _ratio_value(m)
            if before > 0:
                self.ratios.append({"sig": sig, "before_line": b_line, "after_line": line_no,
                                    "before": before, "after": after, "ratio": after / before,
                                    "text": t[:300]})

    def _vote(self, low: str) -> None:
        self._votes_left -= 1  # a few hundred lines decide; later lines need not vote
        for name, hints in _FRAMEWORK_HINTS:
            if any(h in low for h in hints):
                self.framework_votes[name] = self.framework_votes.get(name, 0) + 1

    # ------------------------------------------------------------------ results

    def hits(self) -> list[SigHit]:
        """Signature hits whose file-level requirements are met, plus OOM and ratio hits."""
        out: list[SigHit] = []
        by_id = {s.id: s for s in self._sigs}
        for sid, hit in self._hits.items():
            sig = by_id[sid]
            if sig.requires and sid not in self._requires_met:
                continue
            if sig.row.get("unless_gpu_oom") and self.gpu_oom:
                continue  # a CUDA OOM in the log is the first error; this inference yields to it
            out.append(hit)
            if sig.row.get("also_category"):
                out.append(_also(hit, sig.row["also_category"]))
        out.extend(self._oom_hits())
        out.extend(self._ratio_hits())
        return out

    def suppressed_categories(self, fired: list[SigHit]) -> set[str]:
        return self._fired_lists(fired, "suppresses")

    def tempered_categories(self, fired: list[SigHit]) -> set[str]:
        """Categories whose errors from descriptions (prose-scope signatures) are told as warnings (``tempers`` of a signature that fired):
        the input says the harm they name is absent (round 30: evaluations told unharmed)."""
        return self._fired_lists(fired, "tempers")

    def _fired_lists(self, fired: list[SigHit], key: str) -> set[str]:
        by_id = {s.id: s for s in self._sigs}
        out: set[str] = set()
        for hit in fired:
            sig = by_id.get(hit.id)
            if sig is not None:
                out.update(sig.row.get(key, ()))
        return out

    def _oom_hits(self) -> list[SigHit]:
        host_logged = any(h.category == "oom_host_cpu" and h.log_lines for h in self._hits.values())
        out: list[SigHit] = []
        if self.host_leak and self.gpu_oom_prose and not self.gpu_oom:
            # an OOM told in words beside memory that keeps growing: host RSS (a leak), not the GPU
            self.host_oom_prose = self.host_oom_prose + self.gpu_oom_prose + self.host_leak
            self.gpu_oom_prose = []
        if self.host_oom_prose and self.gpu_oom_prose and not self.gpu_oom:
            # "Ray worker OOM ... my OOMs": the same host OOM unless a line names the GPU
            named_gpu = [(n, t) for n, t in self.gpu_oom_prose if self._gpu_words.search(t)]
            self.host_oom_prose += [x for x in self.gpu_oom_prose if x not in named_gpu]
            self.gpu_oom_prose = named_gpu
        if self.host_oom_prose and "host_oom_ray_killer" not in self._hits:
            row = next(s.row for s in self._sigs if s.id == "host_oom_ray_killer")
            hit = SigHit("host_oom_prose", "oom_host_cpu", "error", row)
            for n, text in self.host_oom_prose:
                hit.add(n, text, True)
            out.append(hit)
        if self.gpu_oom:
            phase = next((p for _, _, p in self.gpu_oom if p is not None), None)
            if phase is None and self.phase_first_frame and all(text.startswith("#") for _, text, _ in self.gpu_oom):
                # the OOM is named in a description (an issue title) above the pasted trace: its frames follow it.
                # Frames only: a log that shows a phase running (and finishing) before the OOM does not say the OOM
                # happened in it (round 13: 'Rollout generation: 100%', 'Finish rollout' under a CUDA_ERROR title)
                phase = min(self.phase_first_frame)
                self.oom_frames = [self.phase_first_frame[phase]]
            category = self._phase_category(phase)
            hit = self._oom_hit(category)
            for n, text, _ in self.gpu_oom:
                hit.add(n, text, False)
            for n, text in self.oom_frames:
                hit.add(n, text, False)
            if self._oom_phase_after is not None:  # set only with the OOM's phase and oom_frames = [that line]
                hit.note = f"phase from the words that continue the OOM's sentence (line {self._oom_phase_after})"
            elif phase is not None and self.oom_frames:
                lines = ", ".join(str(n) for n, _ in self.oom_frames)
                hit.note = f"phase from the traceback frames before the OOM line (lines {lines})"
            out.append(hit)
            if phase in self._phase_also:
                out.append(self._oom_also(hit, self._phase_also[phase]))
            elif phase is not None and category != "oom_gpu" and not self.oom_frames and self.phase_lines <= 1:
                # the phase is read from the OOM message's own words (vLLM's "No available memory for the cache
                # blocks" is the engine's KV cache) and no other line shows a phase: the plain GPU OOM is named too
                hit.note = "phase from the OOM message's own words, no traceback frame"
                out.append(self._oom_also(hit, "oom_gpu"))
        elif self.gpu_oom_prose and not host_logged:
            phase = min(self.phase_first) if self.phase_first else None
            category = self._phase_category(phase)
            hit = self._oom_hit(category)
            for n, text in self.gpu_oom_prose:
                hit.add(n, text, True)
            if phase is not None:
                n, text = self.phase_first[phase]
                hit.add(n, text, False)
                hit.note = f"OOM reported; the trace shows the {category.removeprefix('oom_')} phase (line {n})"
            out.append(hit)
            if phase in self._phase_also:
                out.append(self._oom_also(hit, self._phase_also[phase]))
        return out

    def _oom_also(self, hit: SigHit, category: str) -> SigHit:
        """The same OOM evidence under a second category (a phase's ``also``, or the plain GPU OOM), ranked after
        the first."""
        plain = self._oom_hit(category)
        return _also(SigHit(hit.id, hit.category, hit.severity, plain.row, count=hit.count, log_lines=hit.log_lines,
                            prose_lines=hit.prose_lines, note=hit.note), category)

    def _phase_category(self, phase: int | None) -> str:
        """The OOM's category for a phase index; a log-prob phase in a preference/SFT trainer (no separate
        log-prob pass) is its training step."""
        if phase is None:
            return "oom_gpu"
        category = self._phases[phase][0]
        if category == "oom_actor_logprob" and self.no_logprob_pass_seen:
            return "oom_actor_train"
        return category

    def _oom_hit(self, category: str) -> SigHit:
        oom = self._oom
        row = {"id": f"oom_{category}", "source": oom["source"], "cause": oom["causes"].get(category, ""),
               "fixes": oom["fixes"].get(category, {})}
        return SigHit(row["id"], category, "error", row)

    def _ratio_hits(self) -> list[SigHit]:
        out: dict[str, SigHit] = {}
        for r in self.ratios:
            sig: _Sig = r["sig"]
            row = sig.row
            if r["ratio"] >= float(row.get("warn_below", 0.9)):
                continue
            severity = "error" if r["ratio"] < float(row.get("error_below", 0.5)) else "warning"
            hit = out.get(sig.id)
            if hit is None:
                hit = out[sig.id] = SigHit(sig.id, sig.category, severity, row)
            elif severity == "error":
                hit.severity = "error"
            hit.add(r["after_line"], r["text"], False)
            hit.note = (hit.note + "; " if hit.note else "") + \
                f"kept {r['after']} of {r['before']} ({r['ratio']:.0%}) at line {r['after_line']}"
        return list(out.values())
