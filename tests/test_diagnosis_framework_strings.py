"""Round 8: the wording classes of the frameworks' own config-validation errors (signatures framework_config_rejected,
framework_batch_check, and context_too_long's max_model_len comparison), measured from the frameworks' sources by
benchmarks/framework_strings.py.

Each class is tested on wordings that are NOT messages of the installed sources the rules were decided on (other
frameworks' phrasings, Ray/rank/pytest prefixes, other keys and values), and on near-miss texts that share the words
but report no rejected configuration: Python's own errors of a code bug, docstrings' "Raises:" sections, config help
texts, and log lines without an exception's prefix. Those must raise no error finding of the class.
"""

from __future__ import annotations

import pytest

from advisor.diagnosis import diagnose_text


def _first(text: str) -> tuple[str, str] | None:
    fs = diagnose_text(text).findings
    return (fs[0].category, fs[0].severity) if fs else None


def _errors(text: str) -> list[str]:
    return [f.category for f in diagnose_text(text).findings if f.severity == "error"]


FIRES = [
    # config_key_error: a value or a combination the framework rejects
    ("ValueError: Unsupported rollout backend: 'hf'. Supported backends are vllm and sglang\n", "config_key_error"),
    ("(TaskRunner pid=2210) ValueError: Invalid value 'fp4' for quantization; must be one of ['fp8', 'none']\n",
     "config_key_error"),
    ("[rank0]: AssertionError: use_kl_loss and use_kl_in_reward cannot be used together\n", "config_key_error"),
    ("E   ValueError: `reward_weights` is required when several reward functions are passed\n", "config_key_error"),
    ("NotImplementedError: sequence packing is not supported with the sglang backend\n", "config_key_error"),
    ("omegaconf.errors.ConfigValueError: Unknown policy loss 'gspo_v2'\n", "config_key_error"),
    ("ValueError: --colocate_all_models and --async_train are mutually exclusive\n", "config_key_error"),
    ("AssertionError: Context parallel is only supported with the megatron strategy\n", "config_key_error"),
    # batch_size_misconfig: sizes that do not divide, batch keys rejected
    ("AssertionError: rollout.n * train_batch_size (96) must be divisible by the data-parallel size (64)\n",
     "batch_size_misconfig"),
    ("ValueError: tensor_parallel_size 3 is not divisible by the number of GPUs per node (8)\n", "batch_size_misconfig"),
    ("(WorkerDict pid=91) AssertionError: Got ppo_mini_batch_size=6 and dp_size=4\n", "batch_size_misconfig"),
    ("ValueError: You set both `per_device_eval_batch_size` and `eval_batch_size`; remove one\n", "batch_size_misconfig"),
    # round 20: batch arithmetic in other words (veRL v1 trainer, TRL's on-policy distillation configs, OpenRLHF's
    # launcher and PPO/SFT checks, veRL's split helpers, DeepSpeed's batch check as its traceback prints it); other
    # keys and values than the sources'
    ("ValueError: num_rollouts (30) must be a positive multiple of gen_batch_size (8)\n", "batch_size_misconfig"),
    ("[rank1]: ValueError: generation_batch_size * num_generations must equal per_device_train_batch_size * "
     "gradient_accumulation_steps. Got 3 * 4 != 2 * 5.\n", "batch_size_misconfig"),
    ("(pid=31) ValueError: Insufficient batch size for run_method: total_length=2, effective_actors=6\n",
     "batch_size_misconfig"),
    ("AssertionError: The number of sample batches must be greater than or equal to the number of actor ranks.\n",
     "batch_size_misconfig"),
    ("ValueError: Training needs one complete gradient-accumulation window; num_update_steps must be positive.\n",
     "batch_size_misconfig"),
    ("AssertionError: input data batch size: 0, split batch size: 16\n", "batch_size_misconfig"),
    ("(TaskRunner pid=7) actor.ppo_mini_batch_size=16\n(WorkerDict pid=9) AssertionError: 40 % 16 != 0\n",
     "batch_size_misconfig"),
    ("    assert (grad_acc > 0), f\"Gradient accumulation steps: {grad_acc} has to be greater than 0\"\n",
     "batch_size_misconfig"),
    ('  File "/opt/venv/lib/python3.11/site-packages/deepspeed/runtime/config.py", line 960, in '
     "_configure_train_batch_size\n", "batch_size_misconfig"),
    # sequence_length_exceeds_model: the engine's length above the model's positions
    ("ValueError: max_model_len 32768 must be less than or equal to max_position_embeddings 4096\n",
     "sequence_length_exceeds_model"),
]


@pytest.mark.parametrize("text,expected", FIRES, ids=[f"{i}-{e}" for i, (_, e) in enumerate(FIRES)])
def test_framework_error_wordings(text: str, expected: str) -> None:
    assert _first(text) == (expected, "error"), diagnose_text(text).findings[:2]


QUIET = [
    # Python's own errors of a code bug, not a rejected setting
    ("TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'\n", "config_key_error"),
    ("ValueError: invalid literal for int() with base 10: 'abc'\n", "config_key_error"),
    ("TypeError: accuracy_reward() missing 1 required positional argument: 'solution'\n", "config_key_error"),
    # docstrings' Raises sections and help texts: the same words, no failure
    ("Raises:\n    ValueError: If `loss_type` is not one of the supported values.\n", "config_key_error"),
    ("Raises: NotImplementedError: Always, as synchronous generation is not supported by this engine.\n", "config_key_error"),
    ("    ValueError: If the tensor parallel size is not divisible by the number of GPUs per node\n",
     "batch_size_misconfig"),
    ("# scale_rewards: must be one of 'batch', 'group' or 'none'; unknown values are rejected\n", "config_key_error"),
    ("loss_type (str): Unsupported values raise an error. Must be one of 'grpo', 'dr_grpo'.\n", "config_key_error"),
    ("tensor_parallel_size must be divisible by the number of GPUs per node (see the rollout docs)\n",
     "batch_size_misconfig"),
    # round 20: a bare modulo assert with no batch or veRL in the text (a shape check of another program)
    ("AssertionError: 4096 % 3 != 0\n", "batch_size_misconfig"),
    # a log line naming the words without an exception's prefix
    ("INFO 12-01 10:00:00 Unsupported rollout backend option ignored, falling back to vllm\n", "config_key_error"),
]


@pytest.mark.parametrize("text,category", QUIET, ids=[f"{i}-{c}" for i, (_, c) in enumerate(QUIET)])
def test_near_misses_raise_no_error_of_the_class(text: str, category: str) -> None:
    assert category not in _errors(text), diagnose_text(text).findings[:2]


def test_a_specific_signature_stays_first() -> None:
    """The general class is weaker (confidence 0.6) than the specific signatures: merged into one finding, the Hydra
    key error leads it and keeps its confidence."""
    text = ("omegaconf.errors.ConfigAttributeError: Key 'rollout_n' is not in struct\n"
            "ValueError: Unknown advantage estimator: grpo_v2\n")
    fs = diagnose_text(text).findings
    assert fs[0].category == "config_key_error" and fs[0].rule.startswith("hydra_key_error"), fs[:2]
    assert fs[0].confidence == 0.9, fs[0]
