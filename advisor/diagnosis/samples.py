"""Printed rollout samples: do the completions use the format the prompt asks for?

Users paste what their run printed: veRL's reward managers print the first samples of a batch as
``[prompt] ...`` / ``[response] ...`` / ``[ground_truth] ...`` / ``[score] ...`` lines
(verl/workers/reward_manager/naive.py), and GRPO scripts print the prompts and completions lists
(``prompts [[{'role': 'user', 'content': ...}]]`` / ``completions [[{'role': 'assistant',
'content': ...}]]``, TRL's conversational format). When the prompt asks for tags (``<think> </think>``,
``<answer> </answer>``) and no printed completion holds a tag pair with content, a format reward scores
every sample 0, and a tag-anchored accuracy reward does too (open-r1 rewards.py format_reward,
``^<think>.*?</think>\\s*<answer>.*?</answer>$``): the reward does not fit the model's output, the
taxonomy's reward_function_misconfig.

Only the lines the engine reads in full (the prose zone at the head of a file) are looked at: a
pasted excerpt, not a million-line log. Bounded: at most ``MAX_SAMPLES`` completions are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from advisor.metrics.line_prefix import strip_prefix

MAX_SAMPLES = 64

# a line that holds prompts / completions (veRL's reward-manager prints; a printed python list)
_PROMPT_LINE = re.compile(r"^\s*(?:\[prompt\]|prompts?\s*[:=]?\s*\[|\{?'role':\s*'(?:user|system)')", re.I)
_COMPLETION_LINE = re.compile(r"^\s*(?:\[response\]|completions?\s*[:=]?\s*\[|responses?\s*[:=]\s*\[)", re.I)
# a tag pair named in the instruction: <x> ... </x> on one line (chat-template tokens such as <|im_start|>
# have no \w-only name and no closing twin)
_TAG_PAIR = re.compile(r"<(\w{2,20})>.{0,200}?</\1>")
# the content of one assistant turn in a printed list, or the rest of a [response] line
_ASSISTANT = re.compile(r"'role':\s*'assistant',\s*'content':\s*'((?:[^'\\]|\\.)*)'")
_RESPONSE = re.compile(r"^\s*\[response\]\s*(.*)$", re.I)
_STRINGS = re.compile(r"'((?:[^'\\]|\\.){8,})'")
_IGNORED_TAGS = frozenset({"image", "video", "audio", "s", "pad", "eos", "bos", "unk"})


@dataclass
class SampleFormat:
    """Collects the tags the printed prompts ask for and the printed completions."""

    required: dict[str, int] = field(default_factory=dict)  # tag -> line it was first asked for on
    completions: list[tuple[int, str]] = field(default_factory=list)
    _mode: str | None = None  # inside a veRL [prompt] / [response] block
    _block: int = -1  # the line of the current [response]

    def feed(self, line_no: int, text: str) -> None:
        text = strip_prefix(text)  # a Ray/vLLM/logging/torchrun/kubectl prefix, colour codes
        low = text.lower()
        head = low.lstrip()[:20]
        if head.startswith("["):  # veRL's print blocks: a [prompt] or [response] runs until the next [key]
            self._mode = "prompt" if head.startswith("[prompt]") else "response" if head.startswith("[response]") \
                else None
        elif self._mode == "response" and self.completions and self.completions[-1][0] == self._block:
            n, c = self.completions[-1]  # a multi-line response continues
            if len(c) < 4000:
                self.completions[-1] = (n, f"{c}\n{text}")
            return
        if "<" not in text and self._mode != "response" and "completion" not in low:
            return
        if self._mode == "prompt" or _PROMPT_LINE.search(text):
            for m in _TAG_PAIR.finditer(text):
                tag = m.group(1).lower()
                if tag not in _IGNORED_TAGS:
                    self.required.setdefault(tag, line_no)
            return
        if len(self.completions) >= MAX_SAMPLES or not _COMPLETION_LINE.search(text):
            return
        m = _RESPONSE.match(text)
        if m:
            self._block = line_no
            self.completions.append((line_no, m.group(1)))
            return
        found = _ASSISTANT.findall(text) or _STRINGS.findall(text)
        for c in found[:MAX_SAMPLES - len(self.completions)]:
            self.completions.append((line_no, c))

    def missing(self, min_samples: int) -> tuple[list[str], list[tuple[int, str]]] | None:
        """(the tags asked for, the completions) when at least ``min_samples`` completions were printed
        and none holds any asked-for tag pair with content; None otherwise."""
        if not self.required or len(self.completions) < min_samples:
            return None
        tags = sorted(self.required, key=self.required.get)
        for _, c in self.completions:
            for tag in tags:
                for m in re.finditer(rf"<{tag}>(.*?)</{tag}>", c, re.I | re.S):
                    if m.group(1).strip():
                        return None
        return tags, self.completions
