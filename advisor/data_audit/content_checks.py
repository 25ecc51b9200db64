"""Content checks of the audit: lengths against the Plan, length bias, identical, empty and cut-off
answers, exact and near duplicates, evaluation-set contamination, KTO labels and reward coverage.
Thresholds and sources: advisor/data/data_audit_rules.yaml.

A mixin of ``AuditSession`` (session.py), which keeps the per-row state these read: int32 token
lengths, 64-bit hashes, end-of-answer flags, MinHash pairs, label and data_source counts.
"""

from __future__ import annotations

import math
from typing import Any

from advisor.data_audit import tables
from advisor.data_audit.model import (ANSWER_ROLES, KEEP_EXAMPLES, KEEP_ROWS, AuditFinding, LengthStats, RowEvidence,
                                      RowExample)
from advisor.diagnosis.model import Fix



class ContentChecks:
    """Content findings over the state ``AuditSession`` keeps."""

    ctx: Any
    spec: dict[str, Any]
    rules: dict[str, Any]
    row: int
    lengths: dict[str, Any]
    clean_end: dict[str, bytearray]
    buckets: dict[str, Any]
    hashes: Any
    labels: Any
    sources: Any
    source_rows: dict[str, int]
    counter: Any
    paired_unpaired: bool
    _nd: dict[str, Any]
    _nd_pairs: list[tuple[int, int, float]]
    _eval: dict[str, Any] | None

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

