"""Wording classes and framework strings added for the misses of the blind batch 2 (session 4).

Each rule is tested on wordings other than the cases' own sentences, and on healthy texts that
share its words but report no failure (they must not fire, or at least raise no error):
host-memory OOMs (Ray, the kernel's OOM killer, a growing host memory) apart from GPU OOMs and plain
Ray worker deaths; a reward function that never scores; identical group rewards / zero loss and
gradient; every response clipped; rising entropy; DeepSpeed's batch assertions
(deepspeed/runtime/config.py); an OOM while ZeRO-3 gathers the weights to generate; and OOM words
that do not report an OOM (an avoided OOM, profiler set-up, framework config messages).
"""

from __future__ import annotations

import pytest

from advisor.diagnosis import diagnose_text


def _cats(text: str) -> list[str]:
    return [f.category for f in diagnose_text(text).findings]


def _errors(text: str) -> list[str]:
    return [f.category for f in diagnose_text(text).findings if f.severity == "error"]


RAY_DIED = "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
RAY_LIST_OLD = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. "
                "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection "
                "error code 2. End of file. There are some potential root causes. (1) The process is killed by "
                "SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called.\n")
RAY_LIST_NEW = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
                "detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common causes "
                "include: (1) the process was killed by the OOM killer due to high memory usage, (2) ray stop "
                "--force was called\n")

FIRST = [
    # (text, the first finding's category)
    ("# after ~3 hours the job dies; host RAM usage climbs steadily until the OOM\n", "oom_host_cpu"),
    ("# training stops with out of memory after a few hundred steps, memory keeps growing every epoch\n",
     "oom_host_cpu"),
    ("# our Ray tasks get OOM at step 40 with 16 rollouts per prompt\n", "oom_host_cpu"),
    ("# dmesg says the trainer process was OOM-killed\n" + RAY_DIED, "oom_host_cpu"),
    ("# system memory is at 100% right before the crash\n" + RAY_LIST_OLD, "oom_host_cpu"),
    ("# GPU memory keeps increasing until the CUDA OOM\n", "oom_gpu"),
    ("# GPU OOM even with CPU offload of the optimizer\n", "oom_gpu"),
    # Ray's own list of possible causes names memory: a plain worker death, no host-OOM finding
    (RAY_LIST_OLD, "ray_actor_death"),
    (RAY_LIST_NEW + RAY_DIED, "ray_actor_death"),
    # DeepSpeed's batch assertions (deepspeed/runtime/config.py _batch_assertion)
    ("AssertionError: Train batch size: 0 has to be greater than 0\n", "batch_size_misconfig"),
    ("AssertionError: Gradient accumulation steps: 0 has to be greater than 0\n", "batch_size_misconfig"),
    ("AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
     "gradient_acc_step * world_size 16 != 2 * 1 * 4\n", "batch_size_misconfig"),
    # the ZeRO-3 gather for generation, frames before the OOM line or the OOM named in a title above them
    ('  File "trainer.py", line 88, in rollout\n'
     "    with unwrap_model_for_generation(self.model_wrapped, self.accelerator) as unwrapped:\n"
     '  File "partition_parameters.py", line 2224, in __enter__\n'
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB\n", "oom_rollout_wakeup"),
    ("# CUDA out of memory in the PPO loop\n"
     '  File "ppo.py", line 700, in train\n'
     "    with unwrap_model_for_generation(model, accelerator) as unwrapped_model:\n", "oom_rollout_wakeup"),
]


@pytest.mark.parametrize("text,expected", FIRST, ids=[f"{i}-{e}" for i, (_, e) in enumerate(FIRST)])
def test_first_finding(text: str, expected: str) -> None:
    cats = _cats(text)
    assert cats[:1] == [expected], cats


def test_ray_death_yields_to_a_cuda_oom_in_the_same_log() -> None:
    text = "# CPU memory looks fine\ntorch.OutOfMemoryError: CUDA out of memory.\n" + RAY_DIED
    cats = _cats(text)
    assert cats[0] == "oom_gpu" and "oom_host_cpu" not in cats, cats


def test_ray_death_with_host_offload_lists_host_memory_second() -> None:
    text = RAY_LIST_OLD + "    --zero_stage 3 \\\n    --adam_offload \\\n"
    diag = diagnose_text(text)
    cats = [f.category for f in diag.findings]
    assert cats[0] == "ray_actor_death" and "oom_host_cpu" in cats[:3], cats
    assert next(f for f in diag.findings if f.category == "oom_host_cpu").severity == "warning"
    assert "oom_host_cpu" not in _cats(RAY_LIST_OLD + "    actor_rollout_ref.actor.fsdp_config.optimizer_offload=false\n")


TOP3 = [
    ("# the score stays at 0 for every batch since the start\n", "reward_function_misconfig"),
    ("# none of the completions ever gets a non-zero reward from my checker\n", "reward_function_misconfig"),
    ("# loss and grad_norm stay 0; could my custom reward function be the problem?\n", "reward_function_misconfig"),
    ("# grad norm and loss stay at zero the whole run\n", "zero_variance_groups"),
    ("# loss与grad_norm始终为0\n", "zero_variance_groups"),
    ("# every generation for a prompt receives the same reward\n", "zero_variance_groups"),
    ("# reward_std is always 0 in the logs\n", "zero_variance_groups"),
    ("# every completion hits the max length of 1024 tokens\n", "response_truncation"),
    ("# clipped_ratio = 1.0 since the first step\n", "response_truncation"),
    ("# response_length/clip_ratio: 100% at step 30\n", "response_truncation"),
    ("# policy entropy rises sharply after step 300 and the outputs turn to gibberish\n", "entropy_explosion"),
    ("# the entropy kept growing through the run\n", "entropy_explosion"),
]


@pytest.mark.parametrize("text,expected", TOP3, ids=[f"{i}-{e}" for i, (_, e) in enumerate(TOP3)])
def test_wording_class_in_top3(text: str, expected: str) -> None:
    cats = _cats(text)
    assert expected in cats[:3], cats


HEALTHY = [
    # (text, a category that must not appear at all; None: only no error)
    ("# we cut num_generations to 4 to avoid OOM; the curves look fine\n", "oom_gpu"),
    ("# batch size 16 would cause OOM on 40GB cards, so we use 8\n", "oom_gpu"),
    ("[torch_memory] cuda OOM snapshot observer attached\n", "oom_gpu"),
    ("[torch_memory] automatic OOM snapshots are only available on CUDA/NPU devices\n", "oom_gpu"),
    ("# memory usage is stable around 60 GB of host RAM\n", "oom_host_cpu"),
    ("# the loss increases at first, which is expected with pure on-policy updates\n", None),
    ("# entropy rises a little in the first steps, then settles at 0.4\n", "entropy_explosion"),
    ("# the reward is 0 at step 1 and climbs to 0.6 by step 200\n", "reward_function_misconfig"),
    ("# clipped_ratio is 0.1 and falling\n", "response_truncation"),
    ("# clipped_ratio 10% at step 50\n", "response_truncation"),
    ("# reward_std is 0.35 on average\n", "zero_variance_groups"),
    ("  --reward_funcs accuracy format \\\n# loss 0.3, reward rising\n", "reward_function_misconfig"),
    ("You passed `sync_ref_model=True` while `beta=0.0`, which means the reference model is not used during "
     "training.\n", "no_learning_signal_config"),
    ("# GRPO with beta=0 (no KL term) trains fine, reward 0.6 at step 400\n", "no_learning_signal_config"),
]


@pytest.mark.parametrize("text,absent", HEALTHY, ids=[f"{i}" for i in range(len(HEALTHY))])
def test_healthy_wordings_do_not_fire(text: str, absent: str | None) -> None:
    assert not _errors(text), _cats(text)
    if absent is not None:
        assert absent not in _cats(text)


def test_advice_conditional_on_an_oom_is_not_an_oom() -> None:
    text = "RuntimeError: Weight sync failed. If the underlying error is a CUDA OOM on the server, lower it.\n"
    assert _cats(text) == ["vllm_weight_sync_failure"]


def test_dpo_beta_zero_still_reads_as_no_learning_signal() -> None:
    assert _cats("# DPO run with beta = 0 and ref_model None\n")[:1] == ["no_learning_signal_config"]
