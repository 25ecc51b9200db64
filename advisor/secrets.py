"""Keep credentials (W&B, Hugging Face, cloud, API tokens) out of everything rl-advisor writes.

Three nets, applied together by :func:`scrub_text` / :func:`scrub`:

1. **Known values.** The current values of environment variables whose *name* marks a secret
   (``WANDB_API_KEY``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, anything ending in ``_TOKEN``,
   ``_SECRET``, ``_PASSWORD``, ``_API_KEY``...) are replaced wherever they appear, whatever their
   shape. This is the net that cannot miss a secret the user really has set.
2. **Assignments.** ``NAME=value``, ``NAME: value``, ``"NAME": "value"`` and ``--flag value`` with
   a secret-like name get their value masked, unless the value is a reference (``$NAME``,
   ``${NAME}``), which is how rendered artifacts are supposed to carry secrets.
3. **Token shapes.** Values that look like credentials whatever their context: Hugging Face
   ``hf_...``, OpenAI/Anthropic ``sk-...``, AWS access key ids ``AKIA...``/``ASIA...``, GitHub
   ``ghp_...``/``github_pat_...``, Slack ``xox?-...``, Google ``AIza...``, GitLab ``glpat-...``,
   bearer tokens, passwords in URLs, PEM private keys, and 40-hex W&B API keys (except where the
   text says it is a git commit / sha / revision, which share that shape).

A Plan carries only the *names* of the env vars that hold secrets (``logging.wandb_api_key_env``).
This module lives in the core so that every layer (core renderers, backends, the MCP/CLI faces)
calls the *same* scrubber on its way out: tool results, CLI text/JSON/HTML, rendered artifacts,
run-folder files, logs and registry rows. Pure functions, standard library only; the one piece of
process state it reads is ``os.environ`` (the values of secret-named variables), and only when no
``env`` is passed.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from typing import Any, Iterable, Mapping

REDACTED = "<redacted>"

SECRET_ENV_NAMES = frozenset({
    "WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
    "HUGGINGFACE_TOKEN", "HUGGINGFACEHUB_API_TOKEN", "HF_API_TOKEN", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AZURE_CLIENT_SECRET", "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_CONNECTION_STRING", "GOOGLE_API_KEY", "GCP_SERVICE_ACCOUNT_KEY",
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN",
    "COMET_API_KEY", "NEPTUNE_API_TOKEN", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
    "SWANLAB_API_KEY", "NGC_API_KEY", "DOCKER_PASSWORD", "RL_ADVISOR_TOKEN", "RAY_AUTH_TOKEN",
    "DATABRICKS_TOKEN", "MODELSCOPE_API_TOKEN", "TOGETHER_API_KEY", "REPLICATE_API_TOKEN",
})
"""Well-known names; :func:`is_secret_name` also matches the generic suffixes below."""

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"SECRET_?KEY|AUTH|CREDENTIALS?|SESSION_?KEY|CONNECTION_STRING|WANDB_?KEY)(?:_|$)", re.IGNORECASE)
_NOT_SECRET_NAME = re.compile(r"(?:_ENV|_FILE|_PATH|_DIR|_URL|_HOST|_NAME|_TYPE|_LEN|_LENGTH|"
                              r"_ID_ENV|TOKENS|_TOKENIZER.*)$|"
                              r"(?:^|_)(?:PAD|EOS|BOS|UNK|SEP|CLS|MASK|SPECIAL)_TOKEN(?:_ID)?$",
                              re.IGNORECASE)
_MIN_SECRET_LEN = 8  # shorter env values ("1", "true") would mask innocent text

_TOKEN_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("pem", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
                       re.DOTALL)),
    ("hf", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("sk", re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{20,}")),
    ("aws_id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("github", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("gitlab", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}\b")),
    ("slack", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}\b")),
    ("google", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}")),
]
_BEARER = re.compile(r"(?i)\b(bearer|token)(\s+)([A-Za-z0-9._~+/\-]{16,}=*)")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.\-]{0,20}://[^/\s:@]{1,128}:)([^@\s/]{1,256})(@)", re.IGNORECASE)
_HEX40 = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{40}(?![0-9a-fA-F])")
_HEX40_EXEMPT = re.compile(r"(?i)(commit|sha|hash|revision|rev|git|checksum|digest)\W{0,3}\w{0,12}\W{0,3}$")

# NAME=value / NAME: value / "NAME": "value" / 'NAME' = 'value' / --flag value / --flag=value.
# The key is any word; the callback decides whether it names a secret. Each key starts where a
# word starts and is at most 64 characters, so matching stays linear on hostile input.
_ASSIGN = re.compile(
    r"""(?<![\w.\-$\{])(?P<key>["']?(?P<name>[A-Za-z_][\w.\-]{0,63})["']?)"""
    r"""(?P<sep>\s{0,8}[:=]\s{0,8})(?P<q>["']?)(?P<val>[^\s"',;}\]]+)""")
_FLAG = re.compile(
    r"""(?P<key>(?<![\w\-])--(?P<name>[A-Za-z][\w.\-]{0,63}))(?P<sep>[= ]{1,4})(?P<q>["']?)(?P<val>[^\s"']+)""")
_KEY_FLAGS = frozenset({"use_wandb", "use-wandb"})  # OpenRLHF: --use_wandb takes the W&B key itself


def is_secret_name(name: str) -> bool:
    """Does an environment variable / key name mark a secret (``HF_TOKEN``: yes; ``HF_HOME``,
    ``hf_token_env``, ``max_tokens``: no)?"""
    if not isinstance(name, str) or not name:
        return False
    upper = name.upper()
    if upper in SECRET_ENV_NAMES:
        return True
    if _NOT_SECRET_NAME.search(upper):
        return False
    return bool(_SECRET_NAME.search(upper))


def looks_like_token(value: str) -> bool:
    """Does the whole value have a credential's shape (``hf_...``, ``sk-...``, 40 hex, ...)?"""
    if not isinstance(value, str):
        return False
    value = value.strip()
    return any(p.fullmatch(value) for _, p in _TOKEN_SHAPES) or bool(_HEX40.fullmatch(value))


def is_reference(value: str) -> bool:
    """``$NAME`` / ``${NAME}`` / ``${NAME:?msg}``: a pointer to a secret, safe to write."""
    return bool(re.fullmatch(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*(?::?[-?=+][^}]*)?\})",
                             value.strip().strip("\"'")))


def is_secret(name: str, value: Any = None) -> bool:
    """An env entry that must never be written as a literal: a secret name, a token value, or a
    value that holds a credential (a password in a URL, an embedded token)."""
    if isinstance(value, str) and is_reference(value):
        return False
    return is_secret_name(name) or (isinstance(value, str) and (
        looks_like_token(value) or scrub_text(value, env={}) != value))


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of the secret-named variables in ``env`` (default: this process's environment),
    longest first so a secret that contains another is masked whole."""
    env = os.environ if env is None else env
    vals = {v.strip() for k, v in env.items()
            if isinstance(v, str) and is_secret_name(k) and len(v.strip()) >= _MIN_SECRET_LEN}
    return sorted(vals, key=len, reverse=True)


def scrub_text(text: str, extra_values: Iterable[str] = (), env: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret replaced by ``<redacted>`` (see the module docstring)."""
    if not isinstance(text, str) or not text:
        return text
    for value in [*sorted({v for v in extra_values if isinstance(v, str) and
                           len(v) >= _MIN_SECRET_LEN}, key=len, reverse=True),
                  *secret_values(env)]:
        if value in text:
            text = text.replace(value, REDACTED)
    for _, pattern in _TOKEN_SHAPES:
        text = pattern.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _ASSIGN.sub(_mask_assignment, text)
    text = _FLAG.sub(_mask_assignment, text)
    text = _HEX40.sub(_mask_hex, text)
    return text


def _mask_assignment(m: re.Match[str]) -> str:
    name, val = m.group("name"), m.group("val")
    if not (name.lower() in _KEY_FLAGS or is_secret_name(name.replace("-", "_").replace(".", "_"))):
        return m.group(0)
    if val.startswith(("$", REDACTED)) or val.lower() in ("none", "null", "true", "false", "0", "1"):
        return m.group(0)
    return f"{m.group('key')}{m.group('sep')}{m.group('q')}{REDACTED}"


def _mask_hex(m: re.Match[str]) -> str:
    before = m.string[max(0, m.start() - 32):m.start()]
    return m.group(0) if _HEX40_EXEMPT.search(before) else REDACTED


def scrub(obj: Any, extra_values: Iterable[str] = (), env: Mapping[str, str] | None = None) -> Any:
    """A copy of a JSON-like structure with secrets masked: every string is scrubbed, and the
    value under a secret-named key is masked whole unless it is a reference."""
    extra = list(extra_values)
    if isinstance(obj, str):
        return scrub_text(obj, extra, env)
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str) and isinstance(v, str) and is_secret_name(k) and v and \
                    not is_reference(v) and v.lower() not in ("none", "null"):
                out[k] = REDACTED
            else:
                out[k] = scrub(v, extra, env)
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(scrub(v, extra, env) for v in obj)
    return obj


def scrub_obj(obj: Any, extra_values: Iterable[str] = (), env: Mapping[str, str] | None = None) -> Any:
    """Like :func:`scrub`, but also through pydantic models (a tool's result): every string in
    the object graph is scrubbed and a model is copied only where something changed, so the
    result keeps its type (and its ``to_text``) without being validated again."""
    values = tuple(sorted({*(v for v in extra_values if isinstance(v, str) and len(v) >= _MIN_SECRET_LEN),
                           *secret_values(env)}, key=len, reverse=True))
    return _scrub_obj(obj, values, 0)


@functools.lru_cache(maxsize=8192)
def _scrub_short(text: str, values: tuple[str, ...]) -> str:
    """Tool results repeat the same short strings (catalog names, keys, notes) call after call."""
    return scrub_text(text, values, env={})


def _scrub_obj(obj: Any, values: tuple[str, ...], depth: int) -> Any:
    if isinstance(obj, str):
        new = _scrub_short(obj, values) if len(obj) <= 512 else scrub_text(obj, values, env={})
        return obj if new == obj else new
    if depth > 200 or obj is None or isinstance(obj, (bool, int, float, bytes)):
        return obj
    fields = getattr(type(obj), "model_fields", None)
    if fields is not None and hasattr(obj, "model_copy"):
        update = {}
        for name in fields:
            value = getattr(obj, name, None)
            new = _scrub_obj(value, values, depth + 1)
            if new is not value:
                update[name] = new
        return obj.model_copy(update=update) if update else obj
    if isinstance(obj, Mapping):
        out, changed = {}, False
        for k, v in obj.items():
            if isinstance(k, str) and isinstance(v, str) and is_secret_name(k) and v and \
                    not is_reference(v) and v.lower() not in ("none", "null"):
                new = REDACTED
            else:
                new = _scrub_obj(v, values, depth + 1)
            changed |= new is not v
            out[k] = new
        return out if changed else obj
    if isinstance(obj, (list, tuple)):
        items = [_scrub_obj(v, values, depth + 1) for v in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return type(obj)(items) if isinstance(obj, list) else tuple(items)
    return obj


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment for display or storage: secret entries masked, the rest scrubbed."""
    return {k: (REDACTED if is_secret(k, v) else scrub_text(v, env=env)) for k, v in env.items()}


class ScrubbingFilter(logging.Filter):
    """A logging filter that scrubs each record's final message (install on handlers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: let logging report it as usual
            return True
        clean = scrub_text(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


def install_log_filter(logger: logging.Logger | None = None) -> ScrubbingFilter:
    """Scrub everything that reaches the handlers of ``logger`` (default: the root logger)."""
    logger = logger or logging.getLogger()
    filt = ScrubbingFilter()
    for handler in logger.handlers:
        if not any(isinstance(f, ScrubbingFilter) for f in handler.filters):
            handler.addFilter(filt)
    return filt


__all__ = ["REDACTED", "SECRET_ENV_NAMES", "is_secret_name", "looks_like_token", "is_reference",
           "is_secret", "secret_values", "scrub_text", "scrub", "scrub_obj", "scrub_env", "ScrubbingFilter",
           "install_log_filter"]
