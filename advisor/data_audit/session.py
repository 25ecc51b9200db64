"""audit_data's pure core: stream rows through the format and content checks, then rank findings.

``AuditSession`` takes rows in batches (``feed(rows)``, any number of times) and keeps per-row state
that is a few bytes wide (token lengths as int32, a 64-bit hash, flags), plus bounded structures: the
first rows and examples of each problem, at most ``near_duplicate.max_rows`` MinHash signatures, and
the hashed n-grams of the evaluation set. ``finish()`` returns a ``DataAudit``. No I/O: the reader
(rl_advisor/audit_tool.py) opens the files, builds the token counter and runs the framework loaders.

The findings are built by the mixins in format_checks.py (fields, shapes, file type) and
content_checks.py (lengths, bias, duplicates, contamination, labels, coverage). What each check
reads, its thresholds and sources are in advisor/data/data_audit_rules.yaml; the fields each
framework's loader reads are in advisor/data/data_formats.yaml.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from pydantic import BaseModel, Field

from advisor.data_audit import tables
from advisor.data_audit.content_checks import ContentChecks
from advisor.data_audit.format_checks import FormatChecks
from advisor.data_audit.model import (ANSWER_ROLES, EXAMPLE_CHARS, KEEP_EXAMPLES, KEEP_ROWS, AuditFinding, CheckRow,
                                      DataAudit, RowEvidence, RowExample, rank_score)
from advisor.data_audit.text import (as_text, ends_cleanly, get_path, hash64, ngram_hashes, normalise,
                                     shape_of, shingles, words)
from advisor.data_audit.tokens import EstimateCounter, TokenCounter
from advisor.diagnosis.model import Fix
from advisor.errors import AdvisorError



class AuditContext(BaseModel):
    """What the audit needs from a Plan (or from method + framework + model)."""

    framework: str
    method: str
    family: str
    prompt_key: str = "prompt"
    max_prompt_length: int | None = None
    max_response_length: int | None = None
    reward_function: str | None = Field(None, description="Path of a custom scorer, if the Plan has one.")
    reward_sources: list[str] | None = Field(None, description="data_source values the custom scorer handles.")
    desirable_weight: float = 1.0
    undesirable_weight: float = 1.0
    file_type: str | None = None
    path: str = ""

    @property
    def max_seq_length(self) -> int | None:
        if self.max_prompt_length is None or self.max_response_length is None:
            return None
        return self.max_prompt_length + self.max_response_length


@dataclass
class FieldSpec:
    name: str
    role: str
    shape: str
    key: str | None = None
    required: bool = True
    why: str = ""


@dataclass
class _Bucket:
    """First rows and examples of one problem, and how many rows had it."""

    count: int = 0
    rows: list[int] = field(default_factory=list)
    examples: list[RowExample] = field(default_factory=list)

    def add(self, row: int, field_name: str | None = None, text: Any = "", note: str = "") -> None:
        self.count += 1
        if len(self.rows) < KEEP_ROWS:
            self.rows.append(row)
        if len(self.examples) < KEEP_EXAMPLES:  # ``text`` may be the raw value: converted only here
            t = text if isinstance(text, str) else (as_text(text) if isinstance(text, list) else repr(text))
            self.examples.append(RowExample(row=row, field=field_name, text=t[:EXAMPLE_CHARS], note=note))


def context_fields(ctx: AuditContext, spec: dict[str, Any]) -> list[FieldSpec]:
    out = []
    for f in spec["fields"]:
        out.append(FieldSpec(name=f["name"].replace("{prompt_key}", ctx.prompt_key), role=f["role"],
                             shape=f["shape"], key=f.get("key"), required=f.get("required", True),
                             why=f.get("why", "")))
    return out


def implicit_prompt(chosen: Any, rejected: Any) -> tuple[Any, Any, Any]:
    """TRL's implicit-prompt rule (trl.data_utils.extract_prompt): the longest common prefix of chosen
    and rejected is the prompt (message by message, or character by character for strings)."""
    if not isinstance(chosen, (str, list)) or not isinstance(rejected, (str, list)):
        return None, chosen, rejected
    idx = 0
    n = min(len(chosen), len(rejected))
    while idx < n and chosen[idx] == rejected[idx]:
        idx += 1
    if isinstance(chosen, str) and idx < n and idx > 0 and chosen[idx - 1] == " ":
        idx -= 1
    return chosen[:idx], chosen[idx:], rejected[idx:]


class AuditSession(FormatChecks, ContentChecks):
    """Streaming audit of one data set for one framework and method family."""

    def __init__(self, ctx: AuditContext, counter: TokenCounter | None = None,
                 eval_texts: Iterable[str] | None = None):
        spec = tables.format_spec(ctx.framework, ctx.family)
        if spec is None:
            have = ", ".join(f"{fw}: {', '.join(f)}" for fw, f in tables.supported().items())
            raise AdvisorError(f"no data format of {ctx.framework} for {ctx.family} methods ({ctx.method})",
                               field="framework", value=ctx.framework, allowed=have)
        self.ctx = ctx
        self.spec = spec
        self.rules = tables.rules()
        self.fields = context_fields(ctx, spec)
        est = self.rules["tokens_estimated"]["params"]
        self.counter: TokenCounter = counter or EstimateCounter(est["chars_per_token"], est["per_message"])
        self.row = 0
        self.columns: dict[str, None] = {}
        self.present: Counter[str] = Counter()
        self.absent: dict[str, _Bucket] = {}
        self.shapes: dict[str, Counter[str]] = {f.name: Counter() for f in self.fields}
        self.shape_rows: dict[tuple[str, str], _Bucket] = {}
        self.lengths: dict[str, array] = {}
        self.clean_end: dict[str, bytearray] = {r: bytearray() for r in ANSWER_ROLES}
        self.buckets: dict[str, _Bucket] = {}
        self.hashes = array("Q")
        self.labels: Counter[bool] = Counter()
        self.sources: Counter[str] = Counter()
        self.source_rows: dict[str, int] = {}
        self.extra_findings: list[AuditFinding] = []
        self.notes: list[str] = []
        self.implicit_prompt = False
        self.paired_unpaired = False
        # near duplicates (MinHash LSH, bounded)
        nd = self.rules["near_duplicate"]["params"]
        self._nd = nd
        self._lsh = None
        self._mh: dict[int, Any] = {}
        self._nd_seen: set[int] = set()
        self._nd_pairs: list[tuple[int, int, float]] = []
        self._nd_count = 0
        self._nd_skipped = 0
        # contamination: hashed eval n-grams
        self._eval = self._build_eval(list(eval_texts) if eval_texts is not None else None)

    # ------------------------------------------------------------------ feeding

    def feed(self, rows: list[dict[str, Any]]) -> None:
        """Check a batch of rows (dicts as the loaders see them)."""
        if not rows:
            return
        start = self.row
        self.row += len(rows)
        for r in rows:
            for k in r:
                if k not in self.columns and len(self.columns) < 500:
                    self.columns[k] = None
        views = [self._view(start + i, r) for i, r in enumerate(rows)]
        self._count_lengths(start, views)
        for i, v in enumerate(views):
            self._content(start + i, v)
        self._near_duplicates(start, views)

    def _view(self, row: int, r: dict[str, Any]) -> dict[str, Any]:
        """The row's values by role (prompt, chosen, ...), with shape checks recorded."""
        v: dict[str, Any] = {}
        for f in self.fields:
            present, value = get_path(r, f.name)
            if not present:
                self._bucket(f"absent:{f.name}", self.absent).add(row, f.name)
                continue
            self.present[f.name] += 1
            shape = shape_of(value)
            if f.role == "label" and shape == "number" and value in (0, 1):
                shape = "bool"
            self.shapes[f.name][shape] += 1
            self._bucket((f.name, shape), self.shape_rows).add(row, f.name, value)
            v[f.role] = value
        if self.ctx.family == "unpaired" and "completion" not in v and "chosen" in r and "rejected" in r:
            self.paired_unpaired = True
            v["chosen"], v["rejected"] = r["chosen"], r["rejected"]
        if "prompt" not in v and "chosen" in v and "rejected" in v and self.ctx.framework == "trl":
            self.implicit_prompt = True
            v["prompt"], v["chosen"], v["rejected"] = implicit_prompt(v["chosen"], v["rejected"])
        if "data_source" not in v and self.ctx.family == "prompt_verifier" and "data_source" in r:
            v["data_source"] = r["data_source"]
        return v

    @staticmethod
    def _bucket(key: Any, store: dict[Any, _Bucket]) -> _Bucket:
        b = store.get(key)
        if b is None:
            b = store[key] = _Bucket()
        return b

    def _store_len(self, name: str, start: int, values: list[int], idx: list[int], n: int) -> None:
        arr = self.lengths.get(name)
        if arr is None:
            arr = self.lengths[name] = array("i", [-1]) * start
        block = array("i", [-1]) * n
        for i, val in zip(idx, values):
            block[i] = val
        arr.extend(block)

    def _count_lengths(self, start: int, views: list[dict[str, Any]]) -> None:
        n = len(views)
        texts_idx, texts, chats_idx, chats = [], [], [], []
        for i, v in enumerate(views):
            p = v.get("prompt")
            if isinstance(p, list) and p and shape_of(p) == "messages":
                chats_idx.append(i)
                chats.append(list(p))
            elif p is not None:
                texts_idx.append(i)
                texts.append(as_text(p))
        plen = [-1] * n
        for i, c in zip(texts_idx, self.counter.count_texts(texts)):
            plen[i] = c
        if chats:
            for i, c in zip(chats_idx, self.counter.count_chats(chats, generation_prompt=True)):
                plen[i] = c
        self._store_len("prompt", start, plen, list(range(n)), n)
        for role in ANSWER_ROLES:
            idx = [i for i, v in enumerate(views) if v.get(role) is not None]
            if not idx and role not in self.lengths:
                continue
            answers = [as_text(views[i][role]) for i in idx]
            counts = self.counter.count_texts(answers)
            self._store_len(role, start, counts, idx, n)
            seq = [(plen[i] if plen[i] > 0 else 0) + c for i, c in zip(idx, counts)]
            self._store_len(f"prompt+{role}", start, seq, idx, n)
            flags = bytearray(b"\x01") * n
            for i, t in zip(idx, answers):
                flags[i] = 1 if ends_cleanly(t) else 0
            ce = self.clean_end[role]
            if len(ce) < start:
                ce.extend(b"\x01" * (start - len(ce)))
            ce.extend(flags)

    def _content(self, row: int, v: dict[str, Any]) -> None:
        fam = self.ctx.family
        prompt_text = as_text(v.get("prompt"))
        norm = {r: normalise(as_text(v[r])) for r in ("chosen", "rejected") if r in v} if fam == "preference" else {}
        # exact-duplicate key: the whole training item
        if fam == "prompt_verifier":
            key = normalise(prompt_text)
        elif fam == "preference":
            key = "\x1f".join((normalise(prompt_text), norm.get("chosen", ""), norm.get("rejected", "")))
        else:
            key = "\x1f".join((normalise(prompt_text), normalise(as_text(v.get("completion", v.get("chosen")))),
                               str(v.get("label"))))
        self.hashes.append(hash64(key))
        # empty answers, identical pairs
        for role in ANSWER_ROLES:
            if role in v and shape_of(v[role]) in ("empty", "null"):
                self._bucket("empty", self.buckets).add(row, role, "")
        if fam == "preference" and "chosen" in v and "rejected" in v:
            c, r = norm["chosen"], norm["rejected"]
            if c and c == r:
                self._bucket("identical", self.buckets).add(row, "chosen/rejected", as_text(v["chosen"]))
        # KTO labels
        if fam == "unpaired" and not self.paired_unpaired:
            lab = v.get("label")
            if isinstance(lab, bool) or (isinstance(lab, int) and lab in (0, 1)):
                self.labels[bool(lab)] += 1
            elif "label" in v:
                self._bucket("label_type", self.buckets).add(row, "label", repr(lab))
        # reward coverage
        if fam == "prompt_verifier" and "data_source" in v:
            ds = v["data_source"]
            ds = ds if isinstance(ds, str) else repr(ds)
            if ds in self.sources or len(self.sources) < 10_000:
                self.sources[ds] += 1
                self.source_rows.setdefault(ds, row)
        # contamination
        if self._eval is not None and prompt_text:
            self._contamination(row, prompt_text)

    # ------------------------------------------------------------------ near duplicates and contamination

    def _key_text(self, v: dict[str, Any]) -> str:
        if self.ctx.family == "prompt_verifier":
            return as_text(v.get("prompt"))
        return "\n".join(as_text(v.get(r)) for r in ("prompt", "chosen", "rejected", "completion") if r in v)

    def _near_duplicates(self, start: int, views: list[dict[str, Any]]) -> None:
        room = self._nd["max_rows"] - self._nd_count
        if room <= 0:
            self._nd_skipped += len(views)
            return
        take = views[:room]
        self._nd_skipped += len(views) - len(take)
        from datasketch import LeanMinHash, MinHash, MinHashLSH  # a well-kept MinHash/LSH library; on use

        if self._lsh is None:
            self._lsh = MinHashLSH(threshold=self._nd["threshold"], num_perm=self._nd["num_perm"])
        rows, sets = [], []
        for i, v in enumerate(take):
            row = start + i
            h = self.hashes[row]
            if h in self._nd_seen:  # exact duplicates are reported by exact_duplicate
                continue
            self._nd_seen.add(h)
            s = shingles(self._key_text(v), self._nd["shingle"])
            if s:
                rows.append(row)
                sets.append(s)
        self._nd_count += len(take)
        if not sets:
            return
        for row, m in zip(rows, MinHash.bulk(sets, num_perm=self._nd["num_perm"], hashfunc=int)):
            best = None
            for other in self._lsh.query(m):
                j = m.jaccard(self._mh[other])
                if j >= self._nd["threshold"] and (best is None or j > best[1]):
                    best = (other, j)
            if best is not None:
                self._nd_pairs.append((row, best[0], best[1]))
            self._lsh.insert(row, m)
            self._mh[row] = LeanMinHash(m)  # signature only (no permutation arrays): ~4x smaller

    def _build_eval(self, texts: list[str] | None) -> dict[str, Any] | None:
        if not texts:
            return None
        p = self.rules["eval_contamination"]["params"]
        texts = texts[: p["max_eval_rows"]]
        toks = [words(t) for t in texts]
        lens = sorted(len(w) for w in toks if w)
        if not lens:
            return None
        pct = lens[min(len(lens) - 1, int(len(lens) * p["percentile"] / 100))]
        n = max(p["n_min"], min(p["n_max"], pct))
        grams: dict[int, int] = {}
        for i, w in enumerate(toks):
            for g in ngram_hashes(w, n):
                grams.setdefault(g, i)
        return {"n": n, "grams": grams, "texts": [t[:EXAMPLE_CHARS] for t in texts], "size": len(texts),
                "hit_items": set()}

    def _contamination(self, row: int, text: str) -> None:
        ev = self._eval
        w = words(text)
        for g in ngram_hashes(w, ev["n"]):
            item = ev["grams"].get(g)
            if item is not None:
                ev["hit_items"].add(item)
                self._bucket("contaminated", self.buckets).add(
                    row, "prompt", text, note=f"shares a {ev['n']}-gram with eval item {item}: "
                    f"{ev['texts'][item][:120]!r}")
                return

    # ------------------------------------------------------------------ results

    def add_finding(self, finding: AuditFinding) -> None:
        """A finding made outside the core (the framework loader run on a sample)."""
        self.extra_findings.append(finding)

    def _finding(self, rule_id: str, summary: str, evidence: RowEvidence, *, severity: str | None = None,
                 fixes: list[Fix] | None = None, cause: str | None = None, **subst: Any) -> AuditFinding:
        rule = self.rules[rule_id]
        sev = severity or rule["severity"]
        if fixes is None:
            fixes = tables.fixes_for(rule_id, self.ctx.framework, **subst)
        return AuditFinding(check=rule_id, title=rule["title"], severity=sev, summary=summary, evidence=evidence,
                            cause=cause if cause is not None else rule.get("cause", ""), fixes=fixes,
                            source=rule.get("source", ""), score=rank_score(sev, evidence.share))

    def finish(self) -> DataAudit:
        n = self.row
        found: list[AuditFinding] = []
        checks: list[CheckRow] = []

        def record(rule_id: str, fs: list[AuditFinding], note: str | None = None) -> None:
            """``note``: "skip: why" when the check could not run, else the detail of a pass."""
            if note is not None and note.startswith("skip: "):
                checks.append(CheckRow(check=rule_id, status="skipped", detail=note[6:]))
                return
            if fs:
                found.extend(fs)
                worst = max(fs, key=lambda f: f.score)
                checks.append(CheckRow(check=rule_id, status="fired", severity=worst.severity,
                                       count=sum(f.evidence.count for f in fs), detail=worst.summary))
            else:
                checks.append(CheckRow(check=rule_id, status="passed", detail=note or ""))

        record("file_type", self._file_type())
        fmt = self._format_findings(n) + self._empty_answers()
        for rid in ("missing_field", "wrong_shape", "mixed_shapes", "null_value", "no_chat_template"):
            record(rid, [f for f in fmt if f.check == rid])
        consumer = [f for f in self.extra_findings if f.check == "consumer_rejected"]
        record("consumer_rejected", consumer,
               None if any(c.startswith("consumer:") for c in self.notes) or consumer
               else "skip: the framework's loader was not run on a sample")
        lengths = self._length_stats()
        if self.ctx.family == "prompt_verifier":
            record("prompt_over_limit", *self._over_limit("prompt", self.ctx.max_prompt_length, "prompt_over_limit"))
        else:
            record("sequence_over_limit", *self._over_sequence())
        if self.ctx.family == "preference":
            record("length_bias", *self._length_bias())
            record("identical_pair", self._simple("identical", "identical_pair", "chosen/rejected",
                                                  "rows where chosen and rejected are the same text"))
        if self.ctx.family != "prompt_verifier":
            record("truncated_answer", self._truncated())
        record("exact_duplicate", self._exact_duplicates(n))
        record("near_duplicate", self._near_dup_findings(n))
        record("eval_contamination", *self._contamination_findings(n))
        if self.ctx.family == "unpaired":
            record("label_type", self._simple("label_type", "label_type", "label", "rows whose label is not a boolean"))
            record("kto_single_label", *self._kto_single())
            record("kto_label_balance", *self._kto_balance())
        if self.ctx.family == "prompt_verifier":
            record("reward_coverage", *self._coverage())
        if not self.counter.exact:
            rule = self.rules["tokens_estimated"]
            found.append(AuditFinding(check="tokens_estimated", title=rule["title"], severity="info",
                                      summary=self.counter.label, cause=rule["cause"], source=rule["source"],
                                      evidence=RowEvidence(count=n, total=n), score=rank_score("info", 0)))
        found.extend(f for f in self.extra_findings if f.check != "consumer_rejected")
        found.sort(key=lambda f: -f.score)
        problems = any(f.severity in ("error", "warning") for f in found)
        status = "no_data" if n == 0 else ("problems" if problems else "clean")
        notes = list(self.notes)
        if self.implicit_prompt:
            notes.append("no prompt column: TRL extracts the implicit prompt (the common prefix of chosen and "
                         "rejected, trl.data_utils.extract_prompt); lengths use that split")
        if self.paired_unpaired:
            notes.append("paired chosen/rejected data for KTO: TRL unpairs it (unpair_preference_dataset), one "
                         "desirable and one undesirable example per pair")
        if self._nd_skipped:
            notes.append(f"near-duplicate search indexed the first {self._nd['max_rows']} rows "
                         f"({self._nd_skipped} rows beyond were not indexed, to bound memory)")
        return DataAudit(status=status, framework=self.ctx.framework, method=self.ctx.method,
                         family=self.ctx.family, data_format=self._describe_format(), consumer=self.spec["consumer"],
                         path=self.ctx.path, rows_read=n, columns=list(self.columns), tokens=self.counter.label,
                         findings=found, checks=checks, lengths=lengths, notes=notes)
