"""Format checks of the audit: the fields, shapes and file type the framework's loader reads
(advisor/data/data_formats.yaml), as findings naming the field, the rows and the key or column fix.

A mixin of ``AuditSession`` (session.py), which collects the per-field shapes while rows stream by.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.data_audit import tables
from advisor.data_audit.model import ANSWER_ROLES, KEEP_ROWS, AuditFinding, RowEvidence
from advisor.diagnosis.model import Fix

if TYPE_CHECKING:
    from advisor.data_audit.session import FieldSpec



class FormatChecks:
    """Format findings over the state ``AuditSession`` keeps (``self.shapes``, ``self.absent`` ...)."""

    ctx: Any
    spec: dict[str, Any]
    fields: list[Any]
    shapes: dict[str, Any]
    shape_rows: dict[Any, Any]
    absent: dict[str, Any]
    present: Any
    columns: dict[str, None]
    counter: Any
    implicit_prompt: bool
    paired_unpaired: bool

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
                rows = (self.shape_rows[(f.name, "null")].rows if (f.name, "null") in self.shape_rows else []) + \
                    (self.shape_rows[(f.name, "empty")].rows if (f.name, "empty") in self.shape_rows else [])
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


_SHAPE_WORDS = {"messages": "a message list", "text": "plain text", "text_or_messages": "plain text or a message list",
                "json_text": "a JSON string of messages", "mapping": "a mapping", "bool": "a boolean",
                "any": "a value", "list": "a list that is not a chat", "number": "a number", "other": "an object",
                "empty": "empty", "null": "null"}
