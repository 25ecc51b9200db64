"""How the audit counts tokens: the model's tokenizer (rl_advisor/audit_tool.py builds one when the
Plan's model is a local folder) or a stated estimate.

The estimate is 4 characters per token plus 4 tokens per chat message for the role markers
(data_audit_rules.yaml: tokens_estimated, with its source). Findings made on estimates say so.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

from advisor.data_audit.text import as_text


class TokenCounter(Protocol):
    exact: bool
    label: str
    has_chat_template: bool | None  # None: unknown (no tokenizer)

    def count_texts(self, texts: Sequence[str]) -> list[int]: ...

    def count_chats(self, chats: Sequence[list[dict[str, Any]]], generation_prompt: bool) -> list[int]: ...


class EstimateCounter:
    """ceil(chars / chars_per_token) (+ per_message tokens per chat message)."""

    exact = False
    has_chat_template = None

    def __init__(self, chars_per_token: float = 4.0, per_message: int = 4):
        self.chars_per_token = chars_per_token
        self.per_message = per_message
        self.label = (f"estimate: ceil(characters / {chars_per_token:g}) + {per_message} per chat message "
                      "(no local tokenizer for the model)")

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return [math.ceil(len(t) / self.chars_per_token) for t in texts]

    def count_chats(self, chats: Sequence[list[dict[str, Any]]], generation_prompt: bool) -> list[int]:
        extra = self.per_message if generation_prompt else 0
        return [math.ceil(len(as_text(c)) / self.chars_per_token) + self.per_message * len(c) + extra
                for c in chats]
