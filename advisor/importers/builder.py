"""Collects mapped values into a Plan dict, tracking which key set what, then validates it."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from advisor.errors import AdvisorError, problems_from_validation
from advisor.importers.convert import convert
from advisor.importers.models import ImportResult
from advisor.plan import Framework, Plan


def basename_model(path: str) -> str:
    """HF id or directory -> the model name the catalog knows (its last path component)."""
    return path.rstrip("/").split("/")[-1] or path


class PlanBuilder:
    def __init__(self, framework: Framework, version: str):
        self.framework = framework
        self.version = version
        self.data: dict[str, Any] = {"framework": framework.value, "policy": {"model": "unknown"}}
        self.extra: dict[str, Any] = {}  # framework-specific values resolved later
        self.not_understood: list[str] = []
        self.legacy: list[str] = []
        self.notes: list[str] = []
        self.mapped: dict[str, str] = {}
        self.settings: dict[str, str] = {}

    def split_total_length(self, key: str) -> None:
        """A framework key that bounds prompt + response together (``extra['max_total_len']``,
        set from ``key``) becomes the Plan's two lengths, split evenly, with a note."""
        total = self.extra.get("max_total_len")
        if total:
            self.set("data.max_prompt_length", total // 2)
            self.set("data.max_response_length", total - total // 2)
            self.notes.append(f"{key} {total}: bounds prompt + response together; split evenly")

    # -- plan dict helpers
    def set(self, path: str, value: Any) -> None:
        cur = self.data
        parts = path.split(".")
        for p in parts[:-1]:
            if not isinstance(cur.get(p), dict):
                cur[p] = {}
            cur = cur[p]
        cur[parts[-1]] = value

    def get(self, path: str, default: Any = None) -> Any:
        cur: Any = self.data
        for p in path.split("."):
            if not isinstance(cur, dict) or p not in cur:
                return default
            cur = cur[p]
        return cur

    def default(self, path: str, value: Any) -> None:
        if self.get(path) is None:
            self.set(path, value)

    # -- one key
    def apply(self, key: str, raw: Any, row: dict[str, Any] | None, known: bool) -> None:
        if row is not None and row["as"] == "env_ref":
            try:
                self.set(row["to"], convert("env_ref", raw))
            except ValueError as exc:  # a literal secret: never echoed into the result
                self.settings[key] = "<redacted>"
                self.not_understood.append(f"{key}=<redacted> ({exc})")
                return
            self.settings[key] = str(raw)
            self.mapped[key] = row["to"]
            return
        self.settings[key] = str(raw)
        if row is None:
            why = "not a Plan setting" if known else f"not a {self.version} key"
            self.not_understood.append(f"{key}={raw} ({why})")
            return
        if isinstance(raw, str) and "$" in raw:
            self.not_understood.append(f"{key}={raw} (unresolved shell variable)")
            return
        try:
            value = convert(row["as"], raw)
        except ValueError as exc:
            self.not_understood.append(f"{key}={raw} ({exc})")
            return
        to = row["to"]
        self.mapped[key] = to
        if to.startswith("ignore_"):
            self.notes.append(f"{key}={raw}: no memory/Plan effect ({to.removeprefix('ignore_').replace('_', ' ')})")
            return
        if row["as"] == "model_path":
            role = to.split(".")[0]
            self.set(f"{role}.model", basename_model(value))
        if to in ("method", "name"):
            self.set(to, value)
        elif "." in to and to.split(".")[0] in ("policy", "reference", "reward", "critic", "algorithm", "data",
                                              "rollout", "memory", "hardware", "logging", "reward_function"):
            if to in ("algorithm.kl_coef_reward", "algorithm.kl_coef_loss", "algorithm.use_kl_loss",
                      "data.micro_batch_size_global", "logging.tensorboard"):
                self.extra[to] = value
            else:
                self.set(to, value)
        else:
            self.extra[to] = value

    # -- result
    def build(self) -> ImportResult:
        try:
            plan = Plan.model_validate(self.data)
        except ValidationError as exc:
            problems = problems_from_validation(exc, prefix="plan")
            raise AdvisorError([p.model_copy(update={"message": p.message + " (imported from the "
                                                     f"{self.framework.value} config)"}) for p in problems]) from None
        return ImportResult(plan=plan, framework=self.framework, framework_version=self.version,
                            not_understood=self.not_understood, legacy=self.legacy, notes=self.notes,
                            mapped=self.mapped, settings=self.settings)
