"""A tiny Llama, a character-level tokenizer and synthetic data sets, built locally on the fly.

Real TRL training runs on this machine's CPU (research/frameworks.md §3.4) but there is no model
hub: the demo and the integration tests need a model directory that ``from_pretrained`` can load
offline. This module builds one from a config (random weights, ~80k parameters) together with a
char-level WordLevel tokenizer that has a chat template, and writes the synthetic data of a toy
task whose reward reliably rises within a few GRPO steps:

* the **toy task** rewards the fraction of the target character (``TARGET_CHAR``) in a completion
  (``reward_target_fraction``). A random policy over a ~30-symbol vocabulary starts near 1/30 and
  the gradient signal is dense, so the mean reward climbs within ten steps at a high learning rate;
* **DPO pairs** prefer a completion made mostly of the target character over one without it.

Heavy imports (torch, transformers, tokenizers) happen inside functions.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TARGET_CHAR = "a"
"""The character the toy reward counts."""

# A small alphabet keeps the initial reward away from zero (1/len) so GRPO groups have variance.
ALPHABET = list("abcdefghijklmnopqrstuvwxyz .,?!:")
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<s>' + message['role'] + ':' + message['content'] + '</s>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<s>assistant:' }}{% endif %}"
)

REWARD_MODULE_SOURCE = '''"""Rule-based reward of the rl-advisor toy task (written by rl_advisor.tinymodel)."""

TARGET_CHAR = {target!r}


def _text(completion):
    if isinstance(completion, list):  # conversational: a list of messages
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    return str(completion)


def reward_target_fraction(completions, **kwargs):
    """Fraction of the completion's characters that are TARGET_CHAR (0 for an empty one)."""
    out = []
    for completion in completions:
        text = _text(completion)
        out.append(text.count(TARGET_CHAR) / len(text) if text else 0.0)
    return out


def compute_score(data_source=None, solution_str="", ground_truth=None, extra_info=None, **kwargs):
    """The same reward in veRL's custom_reward_function signature."""
    text = solution_str or ""
    return text.count(TARGET_CHAR) / len(text) if text else 0.0
'''


def build_tokenizer(out_dir: str | Path):
    """A char-level WordLevel tokenizer over ``ALPHABET`` with a chat template, saved to out_dir."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(ALPHABET) | set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'\"-_/()"))
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    # Special tokens first (as whole words), then every other character on its own.
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"<pad>|<s>|</s>|<unk>|."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(SPECIAL_TOKENS)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>", unk_token="<unk>")
    tok.chat_template = CHAT_TEMPLATE
    tok.padding_side = "left"
    tok.save_pretrained(str(out_dir))
    return tok


def build_tiny_model(out_dir: str | Path, *, hidden_size: int = 64, num_layers: int = 2,
                     num_heads: int = 4, num_kv_heads: int = 2, seed: int = 0) -> Path:
    """Write a randomly initialised tiny Llama and its tokenizer to ``out_dir``; return the dir.

    Idempotent: an existing complete model dir is reused (the tests and the demo share one).
    """
    out = Path(out_dir)
    if (out / "config.json").is_file() and (out / "tokenizer.json").is_file() and \
            any(out.glob("*.safetensors")):
        return out
    out.mkdir(parents=True, exist_ok=True)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_tokenizer(out)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers, num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads, max_position_embeddings=256,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(str(out))
    return out


def _prompts(n: int, rng: random.Random) -> list[str]:
    words = ["say", "write", "type", "give", "show", "list"]
    things = ["letters", "a line", "some text", "a word", "chars"]
    return [f"{rng.choice(words)} {rng.choice(things)} {i % 97}:" for i in range(n)]


def write_prompt_dataset(path: str | Path, n: int = 64, seed: int = 0) -> Path:
    """JSONL of ``{"prompt": ...}`` rows (plain text, no verifier answer needed)."""
    rng = random.Random(seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for prompt in _prompts(n, rng):
            fh.write(json.dumps({"prompt": prompt}) + "\n")
    return path


def write_preference_dataset(path: str | Path, n: int = 64, seed: int = 0) -> Path:
    """JSONL of ``{"prompt", "chosen", "rejected"}``: chosen is rich in TARGET_CHAR, rejected has none."""
    rng = random.Random(seed)
    others = [c for c in ALPHABET if c != TARGET_CHAR and c != " "]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for prompt in _prompts(n, rng):
            length = rng.randint(6, 12)
            chosen = "".join(TARGET_CHAR if rng.random() < 0.8 else rng.choice(others)
                             for _ in range(length))
            rejected = "".join(rng.choice(others) for _ in range(length))
            fh.write(json.dumps({"prompt": prompt, "chosen": chosen, "rejected": rejected}) + "\n")
    return path


def write_reward_module(path: str | Path) -> Path:
    """The toy task's rule-based reward as an importable Python file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(REWARD_MODULE_SOURCE.format(target=TARGET_CHAR), encoding="utf-8")
    return path


def build_toy_workspace(root: str | Path) -> dict[str, Path]:
    """Model, tokenizer, prompt and preference data and the reward file under ``root``."""
    root = Path(root)
    return {
        "model": build_tiny_model(root / "tiny-llama"),
        "prompts": write_prompt_dataset(root / "data" / "prompts.jsonl"),
        "pairs": write_preference_dataset(root / "data" / "pairs.jsonl"),
        "reward": write_reward_module(root / "rewards" / "toy_reward.py"),
    }


def tiny_model_spec(model_dir: str | Path):
    """The tiny model's exact dimensions as a ModelSpec (it is not in the catalog)."""
    from advisor.plan import ModelSpec

    cfg = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    heads = cfg["num_attention_heads"]
    return ModelSpec(name="tiny-llama", architecture="llama", hidden_size=cfg["hidden_size"],
                     num_layers=cfg["num_hidden_layers"], num_heads=heads,
                     num_kv_heads=cfg["num_key_value_heads"], head_dim=cfg["hidden_size"] // heads,
                     intermediate_size=cfg["intermediate_size"], vocab_size=cfg["vocab_size"],
                     tie_embeddings=bool(cfg.get("tie_word_embeddings")),
                     max_position_embeddings=cfg["max_position_embeddings"],
                     source="rl_advisor.tinymodel (random weights, built locally)")


def toy_plan(workspace: dict[str, Path], method: str = "grpo", *, steps: int = 20,
             name: str | None = None, gpu: str = "cpu", output_dir: str = "outputs"):
    """A TRL Plan for the toy task on this machine's CPU (``hardware.gpu: cpu``).

    GRPO: 2 prompts x 4 completions of 16 characters per step, learning rate 3e-2, no KL (beta 0,
    so no reference model): the mean reward typically climbs from ~0.01 to >0.3 within 12 steps
    (measured: 0.0 -> 0.75 at step 12). DPO: 4 pairs per step, beta 0.1, learning rate 1e-2.
    """
    from advisor.plan import plan_from_dict

    model_dir = str(workspace["model"])
    spec = tiny_model_spec(model_dir).model_dump(mode="json", exclude_none=True)
    common = {
        "schema_version": 2,
        "framework": "trl",
        "hardware": {"gpu": gpu, "gpus_per_node": 1, "nodes": 1, "host_memory_gb": 16,
                     "cpus_per_node": 2},
        "policy": {"model": "tiny-llama", "path": model_dir, "spec": spec, "dtype": "fp32"},
        "memory": {"recompute": "none", "train_backend": "fsdp"},
        "logging": {"backends": ["console", "jsonl"], "project": "rl-advisor-toy",
                    "experiment": name or f"toy-{method}", "output_dir": output_dir},
    }
    if method == "grpo":
        data = {**common, "name": name or "toy-grpo", "method": "grpo",
                "objective": {"task": "other", "data": ["prompts_with_verifier"]},
                "reward_function": {"path": str(workspace["reward"]), "name": "reward_target_fraction"},
                "algorithm": {"learning_rate": 3e-2, "kl_coef": 0.0, "group_size": 4},
                "data": {"train_files": [str(workspace["prompts"])], "max_prompt_length": 32,
                         "max_response_length": 16, "train_batch_size": 2, "mini_batch_size": 2,
                         "micro_batch_size_per_gpu": 8, "total_steps": steps},
                "rollout": {"engine": "hf"}}
    elif method == "dpo":
        data = {**common, "name": name or "toy-dpo", "method": "dpo",
                "objective": {"task": "other", "data": ["preference_pairs"]},
                "algorithm": {"learning_rate": 1e-2, "beta": 0.1},
                "data": {"train_files": [str(workspace["pairs"])], "max_prompt_length": 32,
                         "max_response_length": 16, "train_batch_size": 4, "mini_batch_size": 4,
                         "micro_batch_size_per_gpu": 4, "total_steps": steps}}
    else:
        raise ValueError(f"toy_plan supports grpo and dpo, not {method!r}")
    return plan_from_dict(data)
