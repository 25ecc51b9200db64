"""audit_data's pure core: stream rows through the format and content checks, then rank findings.

``AuditSession`` takes rows in batches (``feed(rows)``, any number of times) and keeps per-row state
that is a few bytes wide (token lengths as int32, a 64-bit hash, flags), plus bounded structures: the
first rows and examples of each problem, at most ``near_duplicate.max_rows`` MinHash signatures, and
the hashed n-grams of the evaluation set. ``finish()`` returns a ``DataAudit``. No I/O: the reader
(rl_advisor/audit_tool.py) opens the files, builds the token counter and runs the framework loaders.

What each check reads, its thresholds and sources are in advisor/data/data_audit_rules.yaml; the
fields each framework's loader reads are in advisor/data/data_formats.yaml.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from pydantic import BaseModel, Field

from advisor.data_audit import tables
from advisor.data_audit.model import (AuditFinding, CheckRow, DataAudit, LengthStats, RowEvidence, RowExample,
                                      rank_score)
from advisor.data_audit.text import (as_text, ends_cleanly, get_path, hash64, ngram_hashes, normalise,
                                     shape_of, shingles, words)
from advisor.data_audit.tokens import EstimateCounter, TokenCounter
from advisor.diagnosis.model import Fix
from advisor.errors import AdvisorError

KEEP_ROWS = 50      # first rows kept per problem (evidence)
KEEP_EXAMPLES = 10  # examples kept per problem
EXAMPLE_CHARS = 500
ANSWER_ROLES = ("chosen", "rejected", "completion")


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
        if len(self.examples) < KEEP_EXAMPLES:
            t = text if isinstance(text, str) else repr(text)
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


class AuditSession:
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
            self._bucket((f.name, shape), self.shape_rows).add(row, f.name, as_text(value) if shape != "other" else repr(value))
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
        # exact-duplicate key: the whole training item
        if fam == "prompt_verifier":
            key = normalise(prompt_text)
        elif fam == "preference":
            key = "\x1f".join(normalise(as_text(v.get(r))) for r in ("prompt", "chosen", "rejected"))
        else:
            key = "\x1f".join((normalise(prompt_text), normalise(as_text(v.get("completion", v.get("chosen")))),
                               str(v.get("label"))))
        self.hashes.append(hash64(key))
        # empty answers, identical pairs
        for role in ANSWER_ROLES:
            if role in v and shape_of(v[role]) in ("empty", "null"):
                self._bucket("empty", self.buckets).add(row, role, "")
        if fam == "preference" and "chosen" in v and "rejected" in v:
            c, r = normalise(as_text(v["chosen"])), normalise(as_text(v["rejected"]))
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
        from datasketch import MinHash, MinHashLSH  # a well-kept MinHash/LSH library; imported on use

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
            self._mh[row] = m

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

    # ------------------------------------------------------------------ format findings

    def _file_type(self) -> list[AuditFinding]:
        ft = self.ctx.file_type
        allowed = self.spec.get("file_types") or []
        if ft is None or ft in allowed:
            return []
        fix = Fix(framework=self.ctx.framework, key=self.spec.get("file_fix", f"save as one of: {', '.join(allowed)}"),
                  kind="action")
        return [self._finding("file_type", f"{self.spec['consumer'].split(' ')[0]} reads {', '.join(allowed)}; "
                              f"this data set is {ft}", RowEvidence(note=self.ctx.path), fixes=[fix])]

    def _dominant(self, name: str) -> str | None:
        c = self.shapes.get(name)
        if not c:
            return None
        good = {k: v for k, v in c.items() if k in ("text", "messages")}
        return max(good, key=good.get) if good else None

    def _format_findings(self, n: int) -> list[AuditFinding]:
        out: list[AuditFinding] = []
        fw = self.ctx.framework
        cols = set(self.columns)
        for f in self.fields:
            if f.role in ("completion", "label") and self.paired_unpaired:
                continue
            if f.role == "prompt" and self.implicit_prompt:
                continue
            absent = self.absent.get(f"absent:{f.name}")
            if self.present[f.name] == 0 and n:
                if f.required:
                    out.append(self._missing(f, n, cols))
                continue
            if absent and absent.count and f.required:
                out.append(self._finding("null_value", f"{absent.count} of {n} rows have no `{f.name}`",
                                         RowEvidence(field=f.name, count=absent.count, total=n, rows=absent.rows),
                                         fixes=[Fix(framework=fw, key=f"drop or repair the rows without `{f.name}`",
                                                    kind="action", note=f.why)]))
            shapes = self.shapes[f.name]
            empty = shapes.get("null", 0) + shapes.get("empty", 0)
            if empty and f.required and f.role not in ANSWER_ROLES:
                rows = (self.shape_rows.get((f.name, "null")) or _Bucket()).rows + \
                    (self.shape_rows.get((f.name, "empty")) or _Bucket()).rows
                out.append(self._finding("null_value", f"{empty} of {n} rows have an empty or null `{f.name}`",
                                         RowEvidence(field=f.name, count=empty, total=n, rows=sorted(rows)[:KEEP_ROWS]),
                                         fixes=[Fix(framework=fw, key=f"drop or fill the rows with an empty `{f.name}`",
                                                    kind="action", note=f.why)]))
            bad = self._bad_shapes(f)
            for shape, count in bad:
                b = self.shape_rows[(f.name, shape)]
                out.append(self._finding("wrong_shape", f"`{f.name}` is {_SHAPE_WORDS.get(shape, shape)} in {count} of "
                                         f"{n} rows; {fw} reads {_SHAPE_WORDS[f.shape]} ({f.why})",
                                         RowEvidence(field=f.name, count=count, total=n, rows=b.rows,
                                                     examples=b.examples),
                                         fixes=self._shape_fixes(f, shape)))
            if f.shape == "text_or_messages" and shapes.get("text") and shapes.get("messages"):
                minority = "text" if shapes["text"] < shapes["messages"] else "messages"
                b = self.shape_rows[(f.name, minority)]
                out.append(self._finding(
                    "mixed_shapes", f"`{f.name}` is plain text in {shapes['text']} rows and a message list in "
                    f"{shapes['messages']} rows", RowEvidence(field=f.name, count=shapes[minority], total=n,
                                                              rows=b.rows, examples=b.examples),
                    fixes=[Fix(framework=fw, key=f"convert the {minority} rows of `{f.name}` to the other format",
                               kind="action", note="TRL decides the format from the first row")]))
        # across fields: a conversational prompt with plain-text answers (or the reverse)
        doms = {f.name: self._dominant(f.name) for f in self.fields if f.shape in ("text_or_messages", "messages")}
        kinds = {d for d in doms.values() if d}
        if len(kinds) > 1 and not any(f.check == "mixed_shapes" for f in out):
            desc = ", ".join(f"`{k}` {_SHAPE_WORDS[v]}" for k, v in doms.items() if v)
            out.append(self._finding("mixed_shapes", f"fields disagree on the format: {desc}",
                                     RowEvidence(field="/".join(k for k, v in doms.items() if v), count=n, total=n),
                                     fixes=[Fix(framework=fw, key="make every field plain text, or every field a "
                                                "message list", kind="action")]))
        if self.counter.has_chat_template is False and any(d == "messages" for d in doms.values()):
            out.append(self._finding("no_chat_template", "the data is conversational but the model's tokenizer has "
                                     "no chat_template, so apply_chat_template raises",
                                     RowEvidence(count=n, total=n, note=self.counter.label)))
        return out

    def _bad_shapes(self, f: FieldSpec) -> list[tuple[str, int]]:
        ok = {"messages": {"messages"}, "text": {"text"}, "text_or_messages": {"text", "messages"},
              "mapping": {"mapping"}, "bool": {"bool"},
              "any": {"text", "messages", "mapping", "list", "number", "bool", "other"}}[f.shape]
        ignore = {"null", "empty"}
        if f.role == "label":
            return []  # label values are checked by label_type
        if f.shape == "mapping":
            ignore = {"null"}  # extra_info may be null (RLHFDataset replaces None with {})
        return [(s, c) for s, c in self.shapes[f.name].most_common() if s not in ok and s not in ignore]

    def _shape_fixes(self, f: FieldSpec, shape: str) -> list[Fix]:
        fw = self.ctx.framework
        if shape == "json_text":
            return [Fix(framework=fw, key=f"json.loads every `{f.name}` value before saving", kind="action",
                        note="a message list stored as a JSON string (CSV cannot hold lists): write parquet or "
                        "JSONL with real lists")]
        if f.shape == "messages" and shape == "text":
            fixes = [Fix(framework=fw, key=f"{f.name} = [{{'role': 'user', 'content': text}}]", kind="action",
                         note="wrap each string as a one-message chat")]
            if fw == "openrlhf" and self.spec.get("text_shape_fix"):
                fixes.append(Fix(framework=fw, key="--data.apply_chat_template", value="off", kind="config",
                                 note=self.spec["text_shape_fix"]))
            return fixes
        return [Fix(framework=fw, key=f"rewrite `{f.name}` as {_SHAPE_WORDS[f.shape]}", kind="action", note=f.why)]

    def _missing(self, f: FieldSpec, n: int, cols: set[str]) -> AuditFinding:
        fw = self.ctx.framework
        top = f.name.split(".")[0]
        alias = next((a for a in tables.aliases(f.role) if a in cols and a != f.name), None)
        fixes: list[Fix] = []
        if "." in f.name and top in cols:
            summary = f"`{top}` has no `{f.name.split('.', 1)[1]}` in any row"
        else:
            summary = f"no `{f.name}` column in {n} rows (columns: {', '.join(sorted(cols)[:12])})"
        if alias and f.key:
            fixes.append(Fix(framework=fw, key=f.key, value=alias, note=f"point {fw} at the `{alias}` column"))
        if alias and "." in f.name:
            sub = f.name.split(".", 1)[1]
            fixes.append(Fix(framework=fw, key=f"{top} = {{'{sub}': row['{alias}']}}", kind="action",
                             note=f"build the nested `{top}` field from the `{alias}` column (dataset.map)"))
        elif alias:
            fixes.append(Fix(framework=fw, key=f"rename column `{alias}` to `{f.name}`", kind="action",
                             note=f"dataset.rename_column('{alias}', '{f.name}')"))
        if not fixes:
            fixes.append(Fix(framework=fw, key=f"add `{f.name}`", kind="action", note=f.why))
        return self._finding("missing_field", summary + f"; {fw} reads it: {f.why}",
                             RowEvidence(field=f.name, count=n, total=n), fixes=fixes)

    def _describe_format(self) -> str:
        doms = [self._dominant(f.name) for f in self.fields if f.shape in ("text_or_messages", "messages")]
        kind = "conversational" if "messages" in doms else ("standard" if "text" in doms else "unknown")
        shape = {"preference": "preference", "unpaired": "unpaired preference", "prompt_verifier": "prompt-only"}
        extra = " (implicit prompt)" if self.implicit_prompt else ""
        if self.paired_unpaired:
            extra = " (paired: unpaired by TRL)"
        return f"{kind} {shape[self.ctx.family]}{extra}"

    # ------------------------------------------------------------------ content findings

    def _length_stats(self) -> list[LengthStats]:
        import numpy as np

        out = []
        limits = {"prompt": self.ctx.max_prompt_length, "chosen": self.ctx.max_response_length,
                  "rejected": self.ctx.max_response_length, "completion": self.ctx.max_response_length}
        for name, arr in self.lengths.items():
            a = np.frombuffer(arr, dtype=np.int32) if len(arr) else np.zeros(0, dtype=np.int32)
            a = a[a >= 0]
            if not a.size:
                continue
            limit = limits.get(name, self.ctx.max_seq_length if name.startswith("prompt+") else None)
            counts, edges = np.histogram(a, bins=min(30, max(1, int(a.max() - a.min()) + 1)))
            p50, p95, p99 = np.percentile(a, [50, 95, 99])
            out.append(LengthStats(name=name, count=int(a.size), mean=float(a.mean()), p50=float(p50), p95=float(p95),
                                   p99=float(p99), max=int(a.max()), limit=limit,
                                   over_limit=int((a > limit).sum()) if limit else 0,
                                   bin_edges=[float(e) for e in edges], bin_counts=[int(c) for c in counts]))
        return out

    def _rows_over(self, name: str, limit: int) -> tuple[list[int], int, Any]:
        import numpy as np

        arr = self.lengths.get(name)
        if arr is None or not len(arr):
            return [], 0, None
        a = np.frombuffer(arr, dtype=np.int32)
        idx = np.nonzero(a > limit)[0]
        valid = a[a >= 0]
        return [int(i) for i in idx[:KEEP_ROWS]], int(idx.size), valid

    def _overlong_fixes(self, p99: float) -> list[Fix]:
        table = (self.spec.get("overlong") or {}).get("fixes") or []
        return [tables.make_fix(self.ctx.framework, row, p99=int(math.ceil(p99)), seq_p99=int(math.ceil(p99)))
                for row in table]

    def _over_limit(self, name: str, limit: int | None, rule_id: str) -> tuple[list[AuditFinding], str | None]:
        if limit is None:
            return [], "skip: no limit in the Plan"
        rows, count, valid = self._rows_over(name, limit)
        if valid is None or not valid.size:
            return [], "skip: no lengths"
        if not count:
            return [], None
        import numpy as np

        p99 = float(np.percentile(valid, 99))
        total = int(valid.size)
        rule = self.rules[rule_id]
        sev = "error" if count / total >= rule["params"]["error_share"] else "warning"
        behaviour = (self.spec.get("overlong") or {}).get("prompt", "")
        ev = RowEvidence(field=name, count=count, total=total, rows=rows,
                         values={"limit": limit, "max": float(valid.max()), "p99": p99},
                         note=f"tokens: {self.counter.label}")
        return [self._finding(rule_id, f"{count} of {total} prompts ({count / total:.1%}) exceed "
                              f"max_prompt_length {limit} (max {int(valid.max())}, p99 {p99:.0f}). {behaviour}",
                              ev, severity=sev, fixes=self._overlong_fixes(p99))], None

    def _over_sequence(self) -> tuple[list[AuditFinding], str | None]:
        import numpy as np

        limit = self.ctx.max_seq_length
        if limit is None:
            return [], "skip: no limit in the Plan"
        names = [n for n in ("prompt+chosen", "prompt+rejected", "prompt+completion") if n in self.lengths]
        if not names:
            return [], "skip: no lengths"
        arrays = [np.frombuffer(self.lengths[n], dtype=np.int32) for n in names]
        size = min(len(a) for a in arrays)
        seq = np.max(np.stack([a[:size] for a in arrays]), axis=0)
        valid = seq[seq >= 0]
        idx = np.nonzero(seq > limit)[0]
        if not idx.size:
            return [], None
        p99 = float(np.percentile(valid, 99))
        rule = self.rules["sequence_over_limit"]
        share = idx.size / max(valid.size, 1)
        sev = "error" if share >= rule["params"]["error_share"] else "warning"
        behaviour = (self.spec.get("overlong") or {}).get("sequence", "")
        ev = RowEvidence(field=" / ".join(names), count=int(idx.size), total=int(valid.size),
                         rows=[int(i) for i in idx[:KEEP_ROWS]],
                         values={"limit": limit, "max": float(valid.max()), "p99": p99},
                         note=f"tokens: {self.counter.label}")
        return [self._finding("sequence_over_limit", f"{idx.size} of {valid.size} rows ({share:.1%}) have prompt + "
                              f"answer over {limit} tokens (max_prompt_length + max_response_length; max "
                              f"{int(valid.max())}, p99 {p99:.0f}). {behaviour}", ev, severity=sev,
                              fixes=self._overlong_fixes(p99))], None

    def _length_bias(self) -> tuple[list[AuditFinding], str | None]:
        import numpy as np

        if "chosen" not in self.lengths or "rejected" not in self.lengths:
            return [], "skip: no chosen/rejected lengths"
        c = np.frombuffer(self.lengths["chosen"], dtype=np.int32)
        r = np.frombuffer(self.lengths["rejected"], dtype=np.int32)
        size = min(len(c), len(r))
        c, r = c[:size], r[:size]
        ok = (c >= 0) & (r >= 0)
        longer, shorter = int(((c > r) & ok).sum()), int(((c < r) & ok).sum())
        n = longer + shorter
        p = self.rules["length_bias"]["params"]
        if n < p["min_pairs"]:
            return [], f"skip: {n} untied pairs (< {p['min_pairs']})"
        share = longer / n
        z = abs(longer - n / 2) / math.sqrt(n / 4)
        pval = math.erfc(z / math.sqrt(2))
        values = {"share_chosen_longer": round(share, 4), "p_value": pval, "pairs_untied": n,
                  "mean_chosen": float(c[ok].mean()), "mean_rejected": float(r[ok].mean())}
        if max(share, 1 - share) < p["share"] or pval >= p["p_value"]:
            return [], f"chosen longer in {share:.0%} of {n} untied pairs (p={pval:.2g})"
        direction = "longer" if share >= 0.5 else "shorter"
        mask = (c > r) if share >= 0.5 else (c < r)
        rows = [int(i) for i in np.nonzero(mask & ok)[0][:KEEP_ROWS]]
        ev = RowEvidence(field="chosen/rejected", count=max(longer, shorter), total=n, rows=rows, values=values,
                         note="token lengths of the answers; ties excluded")
        return [self._finding("length_bias", f"the chosen answer is the {direction} one in "
                              f"{max(share, 1 - share):.0%} of {n} pairs (binomial p={pval:.2g}; mean chosen "
                              f"{values['mean_chosen']:.0f} vs rejected {values['mean_rejected']:.0f} tokens): "
                              f"length alone predicts the label", ev)], None

    def _simple(self, bucket: str, rule_id: str, field_name: str, what: str) -> list[AuditFinding]:
        b = self.buckets.get(bucket)
        if not b or not b.count:
            return []
        rule = self.rules[rule_id]
        n = self.row
        sev = None
        if "error_share" in (rule.get("params") or {}):
            sev = "error" if b.count / max(n, 1) >= rule["params"]["error_share"] else "warning"
        return [self._finding(rule_id, f"{b.count} of {n} {what}",
                              RowEvidence(field=field_name, count=b.count, total=n, rows=b.rows, examples=b.examples),
                              severity=sev)]

    def _empty_answers(self) -> list[AuditFinding]:
        empty = self.buckets.get("empty")
        if not empty or not empty.count:
            return []
        return [self._finding("null_value", f"{empty.count} answer(s) are empty",
                              RowEvidence(field="/".join(sorted({e.field or '' for e in empty.examples})),
                                          count=empty.count, total=self.row, rows=empty.rows),
                              fixes=[Fix(framework=self.ctx.framework, key="drop the rows with empty answers",
                                         kind="action")])]

    def _truncated(self) -> list[AuditFinding]:
        import numpy as np

        p = self.rules["truncated_answer"]["params"]
        out = []
        for role in ANSWER_ROLES:
            if role not in self.lengths:
                continue
            a = np.frombuffer(self.lengths[role], dtype=np.int32)
            flags = np.frombuffer(bytes(self.clean_end[role][: len(a)]), dtype=np.uint8)
            valid = a >= 0
            if not valid.any():
                continue
            top = int(a[valid].max())
            near = valid & (a >= p["near_max"] * top)
            cut = near & (flags[: len(a)] == 0)
            count = int(cut.sum())
            total = int(valid.sum())
            # a cap makes a point mass at the top: rows per length value there vs in the upper half
            upper = valid & (a >= top / 2)
            per_value_upper = upper.sum() / max(1, top - math.ceil(top / 2) + 1)
            per_value_top = near.sum() / max(1, top - math.ceil(p["near_max"] * top) + 1)
            piled = per_value_top >= p["pile_factor"] * per_value_upper
            if piled and count >= p["min_rows"] and count / total >= p["min_share"]:
                rows = [int(i) for i in np.nonzero(cut)[0][:KEEP_ROWS]]
                out.append(self._finding("truncated_answer", f"{count} `{role}` answers are within "
                                         f"{1 - p['near_max']:.0%} of the longest ({top} tokens), pile up there "
                                         f"({per_value_top:.0f} rows per length vs {per_value_upper:.1f} below) "
                                         f"and end mid-sentence",
                                         RowEvidence(field=role, count=count, total=total, rows=rows,
                                                     values={"max_tokens": float(top)})))
        return out

    def _exact_duplicates(self, n: int) -> list[AuditFinding]:
        import numpy as np

        if n < 2:
            return []
        h = np.frombuffer(self.hashes, dtype=np.uint64)
        _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        firsts = first[inverse]
        dup = np.nonzero(firsts != np.arange(len(h)))[0]
        if not dup.size:
            return []
        share = dup.size / n
        if share < self.rules["exact_duplicate"]["params"]["min_share"]:
            return []
        what = {"prompt_verifier": "prompts", "preference": "pairs (prompt, chosen, rejected)",
                "unpaired": "examples (prompt, completion, label)"}[self.ctx.family]
        ex = [RowExample(row=int(i), note=f"same as row {int(firsts[i])}") for i in dup[:KEEP_EXAMPLES]]
        return [self._finding("exact_duplicate", f"{dup.size} of {n} rows ({share:.1%}) repeat earlier {what} "
                              f"(after lower-casing and collapsing whitespace)",
                              RowEvidence(count=int(dup.size), total=n, rows=[int(i) for i in dup[:KEEP_ROWS]],
                                          examples=ex))]

    def _near_dup_findings(self, n: int) -> list[AuditFinding]:
        if not self._nd_pairs:
            return []
        p = self._nd
        indexed = min(n, p["max_rows"])
        share = len(self._nd_pairs) / max(indexed, 1)
        sev = "warning" if share >= p["warn_share"] else "info"
        ex = [RowExample(row=a, note=f"Jaccard ~{j:.2f} with row {b}") for a, b, j in self._nd_pairs[:KEEP_EXAMPLES]]
        return [self._finding("near_duplicate", f"{len(self._nd_pairs)} of {indexed} rows ({share:.1%}) are near "
                              f"copies (MinHash Jaccard >= {p['threshold']} on word {p['shingle']}-grams) of an "
                              f"earlier row", RowEvidence(count=len(self._nd_pairs), total=indexed,
                                                          rows=[a for a, _, _ in self._nd_pairs[:KEEP_ROWS]],
                                                          examples=ex), severity=sev)]

    def _contamination_findings(self, n: int) -> tuple[list[AuditFinding], str | None]:
        if self._eval is None:
            return [], "skip: no evaluation set given (eval_path, or the Plan's data.val_files)"
        b = self.buckets.get("contaminated")
        if not b or not b.count:
            return [], f"{self._eval['size']} eval items, n = {self._eval['n']}"
        items = len(self._eval["hit_items"])
        share = items / self._eval["size"]
        p = self.rules["eval_contamination"]["params"]
        sev = "error" if share >= p["error_share"] else "warning"
        return [self._finding("eval_contamination", f"{b.count} of {n} training prompts share a "
                              f"{self._eval['n']}-gram with the evaluation set; {items} of {self._eval['size']} eval "
                              f"items ({share:.1%}) are contaminated",
                              RowEvidence(field="prompt", count=b.count, total=n, rows=b.rows, examples=b.examples,
                                          values={"n": self._eval["n"], "eval_items_hit": items}),
                              severity=sev)], None

    def _kto_single(self) -> tuple[list[AuditFinding], str | None]:
        if self.paired_unpaired:
            return [], "skip: paired data: one desirable and one undesirable example per pair"
        total = sum(self.labels.values())
        if not total:
            return [], "skip: no boolean labels"
        if len(self.labels) == 1:
            only = next(iter(self.labels))
            return [self._finding("kto_single_label", f"all {total} labels are {only}",
                                  RowEvidence(field="label", count=total, total=total),
                                  fixes=[Fix(framework=self.ctx.framework, kind="action",
                                             key=f"add {'undesirable' if only else 'desirable'} examples "
                                             f"(label={not only})")])], None
        return [], None

    def _kto_balance(self) -> tuple[list[AuditFinding], str | None]:
        if self.paired_unpaired:
            return [], "skip: paired data: balanced by construction"
        d, u = self.labels.get(True, 0), self.labels.get(False, 0)
        if not d or not u:
            return [], "skip: one label only (kto_single_label)"
        p = self.rules["kto_label_balance"]["params"]
        wd, wu = self.ctx.desirable_weight, self.ctx.undesirable_weight
        ratio = wd * d / (wu * u)
        if p["low"] <= ratio <= p["high"]:
            return [], f"weighted ratio {ratio:.2f} in [{p['low']}, {p['high']:.2f}]"
        lo, hi = u * wu / d * p["low"], u * wu / d * p["high"]
        suggest = round((lo + hi) / 2, 2)
        ev = RowEvidence(field="label", count=min(d, u), total=d + u,
                         values={"desirable": d, "undesirable": u, "weighted_ratio": round(ratio, 3),
                                 "desirable_weight_low": round(lo, 3), "desirable_weight_high": round(hi, 3)})
        return [self._finding("kto_label_balance", f"{d} desirable vs {u} undesirable examples: with weights "
                              f"{wd:g}/{wu:g} the weighted ratio is {ratio:.2f}, outside [1, 4/3]; "
                              f"desirable_weight in [{lo:.2f}, {hi:.2f}] brings it in range", ev,
                              desirable_weight=suggest)], None

    def _coverage(self) -> tuple[list[AuditFinding], str | None]:
        if not self.sources:
            return [], "skip: no data_source column"
        fw = self.ctx.framework
        if self.ctx.reward_sources is not None:
            known = set(self.ctx.reward_sources)
            scorer = f"the custom scorer {self.ctx.reward_function or ''} (reward_sources)".replace("  ", " ")
            covered = known.__contains__
        elif fw == "verl" and self.ctx.reward_function is None:
            t = tables.verl_default_scorers()
            exact, prefixes = set(t["exact"]), tuple(t["prefixes"])
            scorer = "veRL's default_compute_score"
            covered = lambda s: s in exact or s.startswith(prefixes)  # noqa: E731
        elif self.ctx.reward_function is not None:
            listed = ", ".join(f"{s} ({c})" for s, c in self.sources.most_common(12))
            return [], f"skip: custom scorer {self.ctx.reward_function} must handle: {listed}"
        else:
            return [], "skip: no scorer table for this framework (give reward_sources)"
        missing = [(s, c) for s, c in self.sources.most_common() if not covered(s)]
        if not missing:
            return [], f"{len(self.sources)} data_source values, all scored by {scorer}"
        rows_missing = sum(c for _, c in missing)
        ex = [RowExample(row=self.source_rows[s], field="data_source", text=s, note=f"{c} rows")
              for s, c in missing[:KEEP_EXAMPLES]]
        return [self._finding("reward_coverage", f"{len(missing)} data_source value(s) in {rows_missing} rows have no "
                              f"scorer in {scorer}: {', '.join(repr(s) for s, _ in missing[:6])}",
                              RowEvidence(field="data_source", count=rows_missing, total=self.row,
                                          rows=[self.source_rows[s] for s, _ in missing[:KEEP_ROWS]], examples=ex,
                                          note="rows: the first row of each unscored data_source"))], None


_SHAPE_WORDS = {"messages": "a message list", "text": "plain text", "text_or_messages": "plain text or a message list",
                "json_text": "a JSON string of messages", "mapping": "a mapping", "bool": "a boolean",
                "any": "a value", "list": "a list that is not a chat", "number": "a number", "other": "an object",
                "empty": "empty", "null": "null"}
