"""Read a rendered launch script back into the argv a shell would run.

Validators never trust the renderer's own ``argv``: they parse the script text with ``shlex``
(POSIX rules, comments dropped) and take the words after the launcher, so what is checked is what
bash would execute.
"""

from __future__ import annotations

import shlex

PASS_THROUGH = "$@"
"""The script's own arguments (bash's ``\"$@\"``), appended by some launch scripts."""


def join_continuations(content: str) -> str:
    """Remove backslash-newline pairs outside single quotes and comments, as bash does.

    ``shlex`` has no line continuations (it turns ``\\<newline>`` into a newline word), so this
    pass runs first. It tracks single/double quotes, escapes and ``#`` comments.
    """
    out: list[str] = []
    i, n = 0, len(content)
    quote: str | None = None
    word_start = True
    while i < n:
        c = content[i]
        if quote == "'":
            out.append(c)
            if c == "'":
                quote = None
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            if content[i + 1] == "\n":
                i += 2
                continue
            out.append(content[i:i + 2])
            i += 2
            word_start = False
            continue
        if quote == '"':
            out.append(c)
            if c == '"':
                quote = None
            i += 1
            continue
        if c == "#" and word_start:
            j = content.find("\n", i)
            j = n if j < 0 else j
            out.append(content[i:j])
            i = j
            continue
        if c in "'\"":
            quote = c
        out.append(c)
        word_start = c in " \t\n;|&()"
        i += 1
    return "".join(out)


def script_words(content: str) -> list[str]:
    """All words of the script, as bash would split them (continuations joined, comments removed)
    when it runs without arguments (a ``"$@"`` that passes them through expands to nothing)."""
    return [w for w in shlex.split(join_continuations(content), comments=True, posix=True)
            if w != PASS_THROUGH]


def argv_after(content: str, marker: list[str]) -> list[str]:
    """The words after the first occurrence of ``marker`` (e.g. ``["-m", "verl.trainer.main_ppo"]``).

    A ``bash -c 'exec ...'`` wrapper (used to keep secret references expandable remotely) is
    unwrapped first.
    """
    words = script_words(content)
    for i in range(len(words) - 1):
        if words[i] == "bash" and words[i + 1] == "-c" and i + 2 < len(words):
            inner = shlex.split(words[i + 2])
            if inner and inner[0] == "exec":
                words = words[:i] + inner[1:]
            break
    n = len(marker)
    for i in range(len(words) - n + 1):
        if words[i:i + n] == marker:
            return words[i + n:]
    raise ValueError(f"launcher {' '.join(marker)!r} not found in the script")
