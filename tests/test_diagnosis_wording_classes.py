"""Wording classes and framework strings added for the misses of the blind batches 2 to 5 (session 4, rounds 2-5).

Each rule is tested on wordings other than the cases' own sentences, and on healthy texts that
share its words but report no failure (they must not fire, or at least raise no error):
host-memory OOMs (Ray, the kernel's OOM killer, a growing host memory) apart from GPU OOMs and plain
Ray worker deaths; a reward function that never scores; identical group rewards / zero loss and
gradient; every response clipped; rising entropy; DeepSpeed's batch assertions
(deepspeed/runtime/config.py); an OOM while ZeRO-3 gathers the weights to generate; and OOM words
that do not report an OOM (an avoided OOM, profiler set-up, framework config messages). Later rounds
(5-10) add their tables below. Every round's table of first findings, of top-3 categories and of healthy
texts is run by one test per kind at the end of the module, with the round in each case's id.
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


def test_advice_conditional_on_an_oom_is_not_an_oom() -> None:
    text = "RuntimeError: Weight sync failed. If the underlying error is a CUDA OOM on the server, lower it.\n"
    assert _cats(text) == ["vllm_weight_sync_failure"]


def test_dpo_beta_zero_still_reads_as_no_learning_signal() -> None:
    assert _cats("# DPO run with beta = 0 and ref_model None\n")[:1] == ["no_learning_signal_config"]


# --- session 4, round 3: the vocabulary of each category (batches 1-3 development), other wordings ------------
WEIGHT_UPDATE = ("(LLMRayActor pid=7, ip=10.0.0.2) update weight: model.layers.3.mlp.up_proj.weight, dtype: "
                 "torch.bfloat16, shape: torch.Size([4864, 896])\n")

FIRST_VOCAB = [
    # NCCL errors during the trainer -> engine weight update (OpenRLHF vllm_worker_wrap.py update_weight)
    (WEIGHT_UPDATE + "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version "
     "2.21.5\nncclSystemError: System call (e.g. socket, malloc) or external library call failed\n",
     "vllm_weight_sync_failure"),
    ('  File "vllm_worker_wrap.py", line 50, in update_weight\n'
     "    torch.distributed.broadcast(weight, 0, group=self._model_update_group)\n"
     "ncclInternalError: Internal check failed.\n", "vllm_weight_sync_failure"),
    (WEIGHT_UPDATE + "(LLMRayActor pid=9) NET/IB : Got async event : port error\n", "vllm_weight_sync_failure"),
    # SIGKILL without Ray's monitor: the shell, containers, torchrun, the DeepSpeed launcher
    ("epoch 1 step 300 loss 0.41\nKilled\n", "oom_host_cpu"),
    ("trainer exited with code 137\n", "oom_host_cpu"),
    ("torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 4121)\n",
     "oom_host_cpu"),
    ("[2025-01-02 10:00:00] [ERROR] [launch.py:321:sigkill_handler] ['python', 'train.py'] exits with return code = -9\n",
     "oom_host_cpu"),
    ("# the pod's memory limit is 64Gi and the container RAM fills up before the crash\n" + RAY_DIED, "oom_host_cpu"),
    # a non-finite loss in a console record
    ("step 10 | loss 0.8812 | lr 1e-5\nstep 11 | loss nan | lr 1e-5\n", "grad_norm_nan"),
]


TOP3_VOCAB = [
    ("# we see NaN gradients from step 30 on\n", "grad_norm_nan"),
    ("# training in fp16 gives nan/inf loss after warmup\n", "grad_norm_nan"),
    ("# the loss turns into inf after a few hundred steps\n", "grad_norm_nan"),
    ("# it keeps producing NaNs with bf16 and lr 1e-5\n", "grad_norm_nan"),
    ("# 训练到第20步后loss变成nan\n", "grad_norm_nan"),
    ('# after step 80 every sample reads "!!!!!!" and the score is flat\n', "grad_norm_nan"),
    ("# the policy outputs only exclamation marks\n", "grad_norm_nan"),
    ("# approx_kl stays at 0 for the whole run with 4 mini-batches per step\n", "metric_artifact_check_first"),
    ("# pg_clipfrac is always zero, is it computed?\n", "metric_artifact_check_first"),
    ("# the eval win rate only ever moves in multiples of 0.125\n", "metric_artifact_check_first"),
    ("# 训练中ppo_kl一直为0\n", "metric_artifact_check_first"),
    ("# gen_kl_error spikes to 0.4 right after the first refit\n", "rollout_train_logprob_mismatch"),
    ("# rollouts are garbage right after wake_up\n", "rollout_train_logprob_mismatch"),
    ("# with sleep level 2 the generations are broken from step 2\n", "rollout_train_logprob_mismatch"),
    ("# half the completions exceed max_new_tokens\n", "response_truncation"),
    ("# our format_reward drops to 0 after 100 steps\n", "response_truncation"),
    ("# the completion lengths are abnormally long after step 500\n", "response_length_explosion"),
    ("# unusually long response lengths slow every step down\n", "response_length_explosion"),
]


HEALTHY_VOCAB = [
    # (text, a category that must not appear at all; None: only no error)
    (WEIGHT_UPDATE * 3 + "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1\nNCCL INFO Broadcast: opCount 4 sendbuff 0x7f\n",
     "vllm_weight_sync_failure"),
    ("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n", "vllm_weight_sync_failure"),
    ("# the pod has a memory limit of 200Gi and training runs fine\n", "oom_host_cpu"),
    ("process exited with code 0\n", "oom_host_cpu"),
    ("# rewards go through nan_to_num before the advantage\n", "grad_norm_nan"),
    ("# loss 0.53, grad_norm 0.8, no NaN so far\n", "grad_norm_nan"),
    ("actor.grad_norm_clip: inf\nkl_coef: inf\n", "grad_norm_nan"),
    ("# kl is 0 at step 0 and rises to 0.02 by step 100\n", "metric_artifact_check_first"),
    ("kl_coef always 0 in this config\n", "metric_artifact_check_first"),
    ("# gen_kl_error stays flat at 0.001\n", "rollout_train_logprob_mismatch"),
    ("# sleep level 2 frees the weights between steps; rollouts look normal\n", "rollout_train_logprob_mismatch"),
    ("# the format reward rises from 0 to 0.9\n", "response_truncation"),
    ("# the prompt length exceeds max_prompt_length for 3 samples\n", "response_truncation"),
    ("# response length is stable around 600 tokens\n", "response_length_explosion"),
]


# ---------------------------------------------------------------- round 4 (batch 4 joined development)
# OOM phases from words and frames, framework error strings read from source (NeMo-RL batched_data_dict,
# transformers HfArgumentParser, vLLM SamplingParams, Ray ActorDiedError, torch's WorkNCCL watchdog), and
# questions about metric meaning and speed. Wordings differ from the cases' sentences.
CUDA_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79 GiB\n"

FIRST_R4 = [
    ("# OOM during the backward pass with 8k responses\n" + CUDA_OOM, "oom_actor_train"),
    ("# 反向传播时显存不够\n" + CUDA_OOM, "oom_actor_train"),
    ('  File "train.py", line 210, in step\n    loss.backward()\n' + CUDA_OOM, "oom_actor_train"),
    # a vocabulary cross-entropy frame: the log-prob pass in an RL run, the training step in a DPO run
    ('  File "functional.py", line 3479, in cross_entropy\n    return torch._C._nn.cross_entropy_loss(\n' + CUDA_OOM,
     "oom_actor_logprob"),
    ("# ORPO run, 4 GPUs\n"
     '  File "functional.py", line 2140, in log_softmax\n    ret = input.log_softmax(dim)\n' + CUDA_OOM, "oom_actor_train"),
    ("# runs hit a Ray OOM after the first rollout\n", "oom_host_cpu"),
    ("# the Ray memory monitor keeps killing my reward workers (out of memory)\n", "oom_host_cpu"),
    # NeMo-RL nemo_rl/distributed/batched_data_dict.py and similar divisibility messages
    ("AssertionError: Data dict size (6) is not a multiple of the provided microbatch size (4)\n", "batch_size_misconfig"),
    ("AssertionError: rollout batch 30 not evenly divisible by num_generations=8\n", "batch_size_misconfig"),
    # transformers hf_argparser.py
    ("ValueError: Some specified arguments are not used by the HfArgumentParser: ['--reward_fn', 'math']\n",
     "config_key_error"),
    # vLLM sampling_params.py _verify_args
    ("ValueError: max_tokens must be at least 1, got 0.\n", "sequence_length_exceeds_model"),
    # Ray's actor-death sentences, in a log, in a title, and after Hydra's override echo
    ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n", "ray_actor_death"),
    ("# Job fails: The actor is dead because its worker process has died\n", "ray_actor_death"),
    ("Error executing job with overrides: ['trainer.n_gpus_per_node=8', 'data.train_batch_size=32']\n"
     "Traceback (most recent call last):\nray.exceptions.ActorDiedError: The actor died unexpectedly before "
     "finishing this task.\n", "ray_actor_death"),
    ("The actor died because of an error raised in its creation task, ray::WorkerDict.__init__()\n"
     "TypeError: ModelBridge.__init__() got an unexpected keyword argument 'foo_size'\n", "ray_actor_death"),
    ("TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'max_prompt_len'\n", "config_key_error"),
    # torch ProcessGroupNCCL watchdog, in a title
    ("# 70B PPO: WorkNCCL(SeqNum=12, OpType=ALLREDUCE) ran for 1800012 milliseconds before timing out\n", "nccl_timeout"),
    ("# NCCL Watchdog caught collective operation timeout on rank 3\n", "nccl_timeout"),
]


TOP3_R4 = [
    ("# Why does the logged KL go negative sometimes with k1?\n", "metric_artifact_check_first"),
    ("# policy/entropy is below zero after step 300, is that a bug?\n", "metric_artifact_check_first"),
    ("# 训练时 kl 为负数\n", "metric_artifact_check_first"),
    ("# kl shows NaN on every step; beta = 0 in my GRPOConfig\n", "metric_artifact_check_first"),
    ("# rollout generation is very slow, 3 min per step with G=16\n", "generation_bound"),
    ("# is this throughput normal for GRPO on 8xA100?\n", "generation_bound"),
    ("# reward climbs every epoch but the policy now writes aaaaaaa for higher reward\n", "reward_hacking"),
    ("# scores keep going up while output quality is going down\n", "reward_hacking"),
]


def test_speed_question_is_not_an_error() -> None:
    found = diagnose_text("# GRPO is much slower than PPO for me\n").findings
    assert [f.category for f in found] == ["generation_bound"] and found[0].severity in {"info", "warning"}


def test_tokenizer_length_warning_alone_is_not_an_error() -> None:
    warning = ("Token indices sequence length is longer than the specified maximum sequence length for this model "
               "(4100 > 4096). Running this sequence through the model will result in indexing errors\n")
    assert not _errors(warning), _cats(warning)
    # the actual failure still is one
    assert _errors(warning + "ValueError: Input prompt (5000 tokens) is too long and exceeds limit of 4096\n")


def test_nan_kl_with_nan_loss_stays_an_error() -> None:
    text = "# kl is nan and loss is nan from step 12, beta = 0.04\n"
    assert "grad_norm_nan" in _errors(text), _cats(text)


HEALTHY_R4 = [
    ("# the backward pass takes 40% of the step\n", "oom_actor_train"),
    ("# kl stays positive, entropy around 0.4\n", "metric_artifact_check_first"),
    ("# entropy is decreasing slowly, as expected\n", "metric_artifact_check_first"),
    ("# kl 0.02 at step 100, loss finite\n", "metric_artifact_check_first"),
    ("# generation takes 60% of the step\n", None),
    ("# step time 45 s, reward 0.62 and rising\n", "reward_hacking"),
    ("# reward improves and the outputs look better than the SFT model\n", "reward_hacking"),
    ("INFO: using DPOTrainer with beta 0.1, batch 64\n", "oom_actor_train"),
    ("# the Ray dashboard shows the actor is alive and healthy\n", "ray_actor_death"),
    ("NCCL INFO comm 0x55 rank 3 nranks 8 - Init COMPLETE; NCCL_TIMEOUT=1800\n", None),
    ("# Some specified arguments were checked against the HfArgumentParser and all were used\n", "config_key_error"),
    ("max_tokens: 1024\nSamplingParams(n=8, temperature=1.0, max_tokens=1024)\n", "sequence_length_exceeds_model"),
]


# ---------------------------------------------------------------- round 5 (batch 5's misses read)
# Framework strings (each with its source in diagnosis_signatures.yaml) and wording classes, in wordings other
# than the cases' own sentences.
FIRST_R5 = [
    # torch ProcessGroupNCCL.cpp HeartbeatMonitor: the watchdog itself hung
    ("[rank3]:[E1111 17:10:53.1 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0 Rank 3] ProcessGroupNCCL's watchdog "
     "got stuck for 600 seconds without making progress in monitoring enqueued collectives.\n", "nccl_timeout"),
    # vLLM's weight loader given a ZeRO-3 partitioned (empty) tensor
    ("[rank0]: AssertionError: Attempted to load weight (torch.Size([0])) into parameter "
     "(torch.Size([151936, 896]))\n", "vllm_weight_sync_failure"),
    # Ray's memory monitor kill message, other parts of it than the case's
    ("(raylet) Memory on the node (IP: 10.0.0.2) where the task was running was 120.1GB / 125.0GB (0.96), which "
     "exceeds the memory usage threshold of 0.95. To adjust the kill threshold, set the environment variable "
     "`RAY_memory_usage_threshold` when starting Ray.\n", "oom_host_cpu"),
    ("Refer to the documentation on how to address the out of memory issue: "
     "https://docs.ray.io/en/latest/ray-observability/user-guides/debug-apps/debug-memory.html.\n", "oom_host_cpu"),
    # vLLM's KV-cache message in any case: the engine's memory (the plain GPU OOM named beside it)
    ("ValueError: no available memory for the cache blocks. Try increasing `gpu_memory_utilization`\n",
     "oom_rollout_wakeup"),
]


TOP3_R5 = [
    ("# the run crashes whenever the policy writes a malformed tool call\n", "tool_call_parse_errors"),
    ("# KeyError raised from _call_tool after a few steps of multi-turn training\n", "tool_call_parse_errors"),
    ("# when the function call has invalid JSON the rollout worker fails\n", "tool_call_parse_errors"),
    ("WARNING tool_agent_loop.py:466: Invalid JSON in arguments for 'search': Expecting value\n",
     "tool_call_parse_errors"),
    ("WARNING tool_agent_loop.py:459: Unknown function 'calc'. Available tools: ['calc_gsm8k_reward']\n",
     "tool_call_parse_errors"),
    ("# completion lengths blow-up after step 300 and the reward stalls\n", "response_length_explosion"),
    ("# the response length explosion starts around epoch 3\n", "response_length_explosion"),
    # a shortcut in a rule-based reward, in other words
    ("# our format reward returns 1.0 even when the answer tag is empty\n", "reward_hacking_shortcut"),
    ("# a blank answer gets a reward of 1 because of the substring test\n", "reward_hacking_shortcut"),
    ("# the policy learned to list several labels at once and the matching reward still scores it\n",
     "reward_hacking_shortcut"),
    # "reward hacking" alone names both readings
    ("# I think we see reward hacking after step 500\n", "reward_hacking"),
    ("# I think we see reward hacking after step 500\n", "reward_hacking_shortcut"),
    # a preference/SFT loss of exactly 0 from the first steps: a non-finite loss the Trainer's log filter hides
    ("# DPOTrainer: the loss is 0.0 from step 2 on, lr 5e-7\n", "grad_norm_nan"),
    ("# SFT with fp16: after the first step the loss is 0\n", "grad_norm_nan"),
    ("# no available memory for the cache blocks on two 24 GB cards\n", "oom_gpu"),
    # the engine's weights not reaching it, in other words
    ("# weights never get synced to SGLang after the first step\n", "vllm_weight_sync_failure"),
    ("# vLLM still generates with the initial weights after 50 steps\n", "vllm_weight_sync_failure"),
    ("# the rollout engine's weights are not updated after wake_up\n", "vllm_weight_sync_failure"),
    # rollouts broken right after the weights change: both readings
    ("# once the first weight update lands, the generations are gibberish\n", "vllm_weight_sync_failure"),
    ("# once the first weight update lands, the generations are gibberish\n", "rollout_train_logprob_mismatch"),
    ("# outputs turn into nonsense after wake-up\n", "rollout_train_logprob_mismatch"),
    # a hang in a multi-GPU run (the NCCL timeout before its line), repetition collapse, under-used GPUs
    ("# training with 8 GPUs hangs at step 120, no error\n", "nccl_timeout"),
    ("# the job got stuck after the first epoch on 2 nodes\n", "nccl_timeout"),
    ("# 多卡训练卡住了\n", "nccl_timeout"),
    ("# the model keeps repeating the same sentence after step 300\n", "degenerate_repetition"),
    ("# outputs repeat the same phrase over and over until max length\n", "degenerate_repetition"),
    ("# generations get stuck in a repetition loop\n", "degenerate_repetition"),
    ("# GPU utilization is only 20% during training\n", "low_throughput"),
    ("# the GPUs sit idle while the reward model scores\n", "low_throughput"),
    ("# MFU is very low (5%)\n", "low_throughput"),
    # a reward that never scores, said with 'zero' or 'all rewards'; outputs cut off; a non-finite norm at line end
    ("# the reward is always zero\n", "reward_function_misconfig"),
    ("# all the rewards are 0 after the first epoch\n", "reward_function_misconfig"),
    ("# responses get truncated at max length\n", "response_truncation"),
    ("# most outputs are cut off at 1024 tokens\n", "response_truncation"),
    ("# grad_norm is inf\n", "grad_norm_nan"),
    # the required reasoning dropped (the shortcut category's own definition)
    ("# the model learned to skip the <think> part and only output the answer tag\n", "reward_hacking_shortcut"),
    ("# after step 200 the policy stopped writing any reasoning\n", "reward_hacking_shortcut"),
    # DPO metrics described going wrong (TRL's rewards/chosen, rewards/margins, rewards/accuracies)
    ("# DPO: chosen log probs decrease along with rejected ones\n", "dpo_overoptimization_high_lr"),
    ("# DPO margins explode after epoch 2\n", "dpo_overoptimization_high_lr"),
    ("# DPO rewards/accuracies is 1.0 after 100 steps\n", "dpo_overoptimization_high_lr"),
]


HEALTHY_R5 = [
    # negation: the wording classes must not fire on a denied symptom
    ("# no completion exceeds max_completion_length, the mean length is 300\n", "response_truncation"),
    ("# completions never exceed the max_completion_length\n", "response_truncation"),
    ("# not a single response goes over max_new_tokens\n", "response_truncation"),
    ("# the run finished without any NaN in the loss\n", "grad_norm_nan"),
    ("# no NaN in grad_norm after 2000 steps\n", "grad_norm_nan"),
    ("# no OOM so far at step 300 with micro batch 4\n", "oom_gpu"),
    ("# 200 steps without any OOM after enabling offload\n", "oom_gpu"),
    # tool calls described, not failing
    ("# the parser returns an error message to the model on an invalid tool call\n", "tool_call_parse_errors"),
    ("# the model makes about 3 tool calls per episode\n", "tool_call_parse_errors"),
    # a clip ratio is not the importance ratio
    ("# the clip ratio is huge at the start and settles later\n", "kl_explosion"),
    # a GRPO loss of 0 is normal (zero-mean advantages); a preference loss that falls slowly is learning
    ("# GRPO loss is 0 at the first step\n", "grad_norm_nan"),
    ("# DPO loss decreases from 0.69 to 0.3 over two epochs\n", "grad_norm_nan"),
    # a Ray OOM setting or its docs named, no kill
    ("export RAY_memory_usage_threshold=0.98\n", "oom_host_cpu"),
    ("# per the ray-oom-prevention docs we set RAY_memory_usage_threshold to 0.99 before the run\n", "oom_gpu"),
    # vLLM weight shapes that match, or a mismatch at model load (not a weight sync)
    ("INFO loader.py: Loading weights took 3.1 seconds\n", "vllm_weight_sync_failure"),
    ("AssertionError: Attempted to load weight (torch.Size([4096, 12288])) into parameter "
     "(torch.Size([4096, 8192]))\n", "vllm_weight_sync_failure"),
    ("# the reward keeps improving and the answers are correct on the held-out set\n", "reward_hacking_shortcut"),    ("# weights are synced to vLLM every step; the sync takes 3 s\n", "vllm_weight_sync_failure"),
    ("# we verified the vLLM weights are not stale\n", "vllm_weight_sync_failure"),
    ("# the reward model scores gibberish low, as it should\n", "vllm_weight_sync_failure"),
    ("# training hangs\n", "nccl_timeout"),   # no multi-GPU context: not read as a collective hang
    ("# no hang since we upgraded NCCL on 8 GPUs\n", "nccl_timeout"),
    ("# generations get stuck in a repetition loop\n", "nccl_timeout"),
    ("# repetition_penalty 1.05 and temperature 1.0\n", "degenerate_repetition"),
    ("# we repeat the experiment with 3 seeds\n", "degenerate_repetition"),
    ("# no repetitive output at all\n", "degenerate_repetition"),
    ("# GPU utilization is 95%\n", "low_throughput"),
    ("# MFU around 45%\n", "low_throughput"),
    ("# a few responses get truncated, most end with EOS\n", "response_truncation"),
    ("# rewards are not always zero\n", "reward_function_misconfig"),
    ("# we drop the reasoning traces from the SFT data to save tokens\n", "reward_hacking_shortcut"),
    ("INFO 12-01 10:00:00 engine.py:12] info: step 3 done\n", "grad_norm_nan"),
    ("# DPO: rewards/chosen rises slowly, margins 0.5\n", "dpo_overoptimization_high_lr"),
    ("# DPO rewards/accuracies around 0.7\n", "dpo_overoptimization_high_lr"),
    ("# the chosen reward falls in PPO\n", "dpo_overoptimization_high_lr"),   # no preference run named
    # frameworks' own warnings that name an OOM as a condition or a risk (accelerate, torch FSDP)
    ("UserWarning: Current model requires 4096 bytes of buffer for offloaded layers, which seems does not fit any "
     "GPU's remaining memory. If you are experiencing a OOM later, please consider using offload_buffers=True.\n",
     None),
    ("UserWarning: offload_to_cpu=True and rank0_only=False may result in the unsharded parameters being redundantly "
     "copied to CPU memory for GPUs sharing the same CPU memory, which risks CPU OOM.\n", None),
]


def test_negated_symptom_still_fires_when_a_later_mention_is_not_negated() -> None:
    text = "# no NaN in the first 100 steps, but at step 140 the loss becomes nan\n"
    assert "grad_norm_nan" in _errors(text), _cats(text)


def test_ambiguous_reading_ranks_below_the_sure_one() -> None:
    """An also_category twin carries lower confidence; a phase OOM read from a frame gets no plain-OOM twin."""
    found = diagnose_text("ValueError: No available memory for the cache blocks.\n").findings
    assert [f.category for f in found[:2]] == ["oom_rollout_wakeup", "oom_gpu"]
    assert found[0].confidence > found[1].confidence and found[0].score > found[1].score
    framed = ('  File "/x/vllm/worker/model_runner.py", line 9, in execute_model\n'
              "ValueError: No available memory for the cache blocks.\n")
    assert "oom_gpu" not in _cats(framed)
    # round 13: a start-up frame (the engine sizing its KV cache) is GPU memory at start, the phase-free category
    startup = ('  File "/x/vllm/worker/worker.py", line 9, in determine_num_available_blocks\n'
               "ValueError: No available memory for the cache blocks.\n")
    assert _cats(startup)[:1] == ["oom_gpu"], _cats(startup)


# ---------------------------------------------------------------- round 6 (batches 6 and 7's misses read)
# Framework strings (each with its source in diagnosis_signatures.yaml) and OOM phase words, in wordings and
# logs other than the cases' own.
FIRST_R6 = [
    # torch.multinomial's check on non-finite probabilities (the vLLM/HF sampler after a NaN update)
    ("  File \"generation/utils.py\", line 2410, in _sample\n"
     "    next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)\n"
     "RuntimeError: probability tensor contains either inf, nan or element < 0\n", "grad_norm_nan"),
    # DAPO dynamic sampling gave up: every group filtered as uniform (the newer message of the recipe)
    ("ValueError: num_gen_batches=4 >= max_num_gen_batches=4. Generated too many. Please check if your data are "
     "too difficult. You could also try set max_num_gen_batches=0 to enable endless trials.\n",
     "zero_variance_groups"),
    # SGLang's online weight update, another exception inside it
    ("[2025-03-02 10:01:02 TP0] Failed to update parameter online: size mismatch for "
     "model.layers.0.mlp.experts.w13_weight. The full weights of the ModelRunner are partially updated. Please "
     "discard the whole weights.\n", "vllm_weight_sync_failure"),
    # vLLM's KV cache too small for max_model_len: v0 and v1 wordings
    ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored "
     "in KV cache (20112). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
     "initializing the engine.\n", "oom_gpu"),
    ("(EngineCore_DP0 pid=12) ValueError: To serve at least one request with the models's max seq len (16384), "
     "(3.00 GiB KV cache is needed, which is larger than the available KV cache memory (1.10 GiB).\n", "oom_gpu"),
    # bash's notice of a child killed by SIGKILL (the kernel OOM killer), inside a script or as a job
    ("Loading checkpoint shards:  50%|#####     | 2/4\n./train.sh: line 7: 81234 Killed                  "
     "accelerate launch grpo.py --config cfg.yaml\n", "oom_host_cpu"),
    ("[1]+  Killed                  python train_dpo.py\n", "oom_host_cpu"),
    # the reference cluster's Ray actor prefix (ROLL) before a CUDA OOM in a log-prob frame
    ("(ActorWorker(reference-3) pid=81, ip=10.0.0.4)   File \"base_worker.py\", line 230, in compute_log_probs\n"
     "(ActorWorker(reference-3) pid=81, ip=10.0.0.4) torch.OutOfMemoryError: CUDA out of memory. Tried to "
     "allocate 9.00 GiB\n", "oom_ref_logprob"),
    # the phase in the OOM line's own words
    ("RuntimeError: CUDA out of memory while updating the policy, tried to allocate 4 GiB\n", "oom_actor_train"),
]


TOP3_R6 = [
    # OOM phase words in a description
    ("# we hit OOM during the actor update with 32k responses\n", "oom_actor_train"),
    ("# CUDA OOM as soon as the trainer starts updating the actor\n", "oom_actor_train"),
    ("# the policy update step goes OOM on 4 GPUs\n", "oom_actor_train"),
    ("# OOM when the reference model computes log probs for 16k tokens\n", "oom_ref_logprob"),
    ("# ref log prob pass OOMs with micro batch 8\n", "oom_ref_logprob"),
    ("# vLLM OOMs while waking up after the update\n", "oom_rollout_wakeup"),
    ("# the engine awaking at the same time as the optimizer offload leads to OOM\n", "oom_rollout_wakeup"),
    # category vocabulary: a NaN that 'appears', a steady entropy rise, outputs full of loops, reasoning cut off,
    # the rollout/trainer log-prob gap named first, LoRA weights that never reach the engine
    ("# after 300 steps the loss appears NaN and the reward drops to 0\n", "grad_norm_nan"),
    ("# policy entropy continues to rise over the whole run\n", "entropy_explosion"),
    ("# entropy steadily increasing from epoch 2 on\n", "entropy_explosion"),
    ("# after DPO the answers contain endless loops of the same clause\n", "degenerate_repetition"),
    ("# long thoughts run past the budget and get truncated before the answer\n", "response_truncation"),
    ("# we see a growing divergence between the vLLM logprobs and the trainer's\n", "rollout_train_logprob_mismatch"),
    ("# debug/vllm_vs_local_logprob_diff_max keeps climbing after step 200\n", "rollout_train_logprob_mismatch"),
    ("# with sleep mode the LoRA adapters are never synced to the rollout engine\n", "vllm_weight_sync_failure"),
    ("# accuracy_reward stays at 0 for every batch\n", "reward_function_misconfig"),
    ("# rewards/format_reward is always 0 from step 1\n", "reward_function_misconfig"),
    ("# the policy quickly exploited the reward model's love of long answers\n", "reward_hacking"),
    ("# our actor exploits a loophole in the judge prompt\n", "reward_hacking"),
]


HEALTHY_R6 = [
    # the frameworks' own success and progress lines beside the new strings
    ("[2025-03-02 10:01:02 TP0] Succeeded to update parameter online.\n", "vllm_weight_sync_failure"),
    ("num_gen_batches=2 < max_num_gen_batches=10. Keep generating...\n", "zero_variance_groups"),
    ("INFO 06-28 06:11:45 gpu_executor.py:45] # GPU blocks: 378, # CPU blocks: 1638\n", "oom_gpu"),
    ("INFO 06-28 06:11:46 worker.py:12] Maximum concurrency for 8192 tokens per request: 12.3x\n", "oom_gpu"),
    ("# we set max_num_gen_batches=8 for dynamic sampling; batches fill after 2 tries\n", "zero_variance_groups"),
    ("# sampling with temperature 1.0, no probability tensor errors so far\n", "grad_norm_nan"),
    ("Killed 3 stale Ray workers before the run\n", "oom_host_cpu"),
    # phase words with no OOM are not an OOM
    ("# the actor update takes 40 s per step, the reference model computes log probs in 10 s\n", None),
    ("# vLLM is waking up in 2 s after each update\n", None),
    ("# NaN never appears in our runs with bf16\n", "grad_norm_nan"),
    ("# entropy continues to decrease slowly, as expected\n", "entropy_explosion"),
    ("# the rollout loop has many steps per episode\n", "degenerate_repetition"),
    ("# a few rollouts get truncated, most finish with EOS\n", "response_truncation"),
    ("# the difference between vLLM logprobs and the trainer's stays below 1e-3\n", None),
    ("# LoRA adapters are synced to vLLM every step in 0.4 s\n", "vllm_weight_sync_failure"),
    ("# format_reward is not always 0: about 40% of samples score 1\n", "reward_function_misconfig"),
    ("# the agent exploits the search tool well after 100 steps\n", "reward_hacking"),
]


# ---------------------------------------------------------------- round 7 (batch 8's misses read, and the probe wordings)
# Framework strings read from their sources (ms-swift's remaining_argv, DeepSpeed's _batch_assertion frame, vLLM's
# prompt-length message cut after its verb, NVIDIA's "refit" weight update), an OOM written between CJK characters,
# and category vocabulary: repetition with a verb between / as a quantity / quoted, a sudden length rise, homogeneous
# groups, a flat reward, the same output for every input, zero loss and gradient with a qualifier, an agent that stops
# calling tools. Wordings differ from the cases' own sentences; other frameworks' phrasings are included.
FIRST_R7 = [
    # ms-swift's parser (swift/llm/base.py _parse_args): another flag, a 2.x frame before it
    ("ValueError: remaining_argv: ['--num_generation', '8']\n", "config_key_error"),
    ('  File "/usr/lib/python3.10/site-packages/swift/utils/run_utils.py", line 31, in x_main\n'
     "    raise ValueError(f'remaining_argv: {remaining_argv}')\n"
     "ValueError: remaining_argv: ['--sft_type', 'lora', '--lora_rank', '8']\n", "config_key_error"),
    ("[rank1]: ValueError: remaining_argv: ['--vllm_mode', 'colocate']\n", "config_key_error"),
    # DeepSpeed's batch assertion: the frame and assert line alone, the full message from a plain trainer, a cut message
    ('  File "/opt/conda/lib/python3.11/site-packages/deepspeed/runtime/config.py", line 712, in _batch_assertion\n'
     "    assert train_batch == micro_batch * grad_acc * self.world_size, (\nAssertionError\n", "batch_size_misconfig"),
    ("Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n"
     "    engine, *_ = deepspeed.initialize(model=model, config=ds_config)\n"
     "AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
     "gradient_acc_step * world_size 64 != 4 * 8 * 4\n", "batch_size_misconfig"),
    ("[rank0]: AssertionError: Check batch related paramet\n", "batch_size_misconfig"),
    # vLLM's input processor message, whole and cut after the verb; the comparison in words
    ("ValueError: The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
     "`max_model_len` is no smaller than the number of text tokens.\n", "sequence_length_exceeds_model"),
    ("(AsyncvLLMServer pid=88) ERROR: The prompt (length 40960) is longer than\n", "sequence_length_exceeds_model"),
    # the trainer -> engine weight update called "refit" (NeMo-Aligner TensorRT-LLM, NeMo-RL vLLM)
    ("RuntimeError: trt_llm_exporter.refit failed: tensor model.layers.3.attention.dense.weight is empty\n",
     "vllm_weight_sync_failure"),
    ("ERROR refit_policy_generation raised an exception: KeyError 'model.embed_tokens.weight'\n",
     "vllm_weight_sync_failure"),
]


TOP3_R7 = [
    # the refit failure in a description
    ("# GPTGenerateTRTLLM refit fails with a shape mismatch after we changed TP\n", "vllm_weight_sync_failure"),
    ("# Error during refit of the vLLM generation engine after the first step\n", "vllm_weight_sync_failure"),
    ("# refit_policy_generation hangs at step 12 with colocated vLLM\n", "vllm_weight_sync_failure"),
    # an OOM between CJK characters (the phase words still read)
    ("# 训练过程中偶尔OOM，显存不够\n", "oom_gpu"),
    ("# rollout 阶段 wake up 后就 OOM 了\n", "oom_rollout_wakeup"),
    ("# 显存溢出导致oom，batch调小后正常\n", "oom_gpu"),
    # repetition: a verb between, a unit produced one after another, a quantity, quoted degenerate text
    ("# the actor repeats outputting the same word until max_new_tokens\n", "degenerate_repetition"),
    ("# after PPO, the policy generates the same phrase over and over\n", "degenerate_repetition"),
    ("# the model keeps printing the same character one after another\n", "degenerate_repetition"),
    ("# outputs collapse into heavy repetition of \"ok ok ok ok ok\"\n", "degenerate_repetition"),
    ("# after DPO the responses show severe repetition\n", "degenerate_repetition"),
    # a sudden length rise (verb + adverb, a noun phrase, Chinese)
    ("# the response length increased sharply after step 120 and the reward collapsed\n", "response_length_explosion"),
    ("# completion lengths shot up dramatically after we removed the KL\n", "response_length_explosion"),
    ("# a sharp increase in response length at step 300\n", "response_length_explosion"),
    ("# 回复长度在第50步后暴涨，reward下降\n", "response_length_explosion"),
    # groups named by their property (English, Chinese)
    ("# 80% of the groups are homogeneous with num_generations=4, so most advantages are 0\n", "zero_variance_groups"),
    ("# zero-variance groups dominate after step 100\n", "zero_variance_groups"),
    ("# 大部分组内奖励都相同，advantage为0\n", "zero_variance_groups"),
    # a prompt over the engine's context in words
    ("# the prompt is larger than max_model_len for some samples\n", "sequence_length_exceeds_model"),
    ("# vLLM says the input length is greater than the max_model_len of 4096\n", "sequence_length_exceeds_model"),
    # probe wordings: a flat reward, the same output for every input, zero loss and gradient, tools given up
    ("# the reward does not increase at all after 500 steps\n", "zero_variance_groups"),
    ("# reward curve stays flat for the whole run\n", "zero_variance_groups"),
    ("# 奖励一直不上升\n", "zero_variance_groups"),
    ("# the score doesn't improve, whatever learning rate we try\n", "reward_function_misconfig"),
    ("# our model outputs the same answer for every prompt after 200 steps\n", "reward_hacking"),
    ("# no matter what the question is, it gives the same response\n", "reward_hacking"),
    ("# every query gets an identical reply: \"I cannot help with that\"\n", "entropy_collapse"),
    ("# pg_loss and grad_norm are both exactly 0 from step 1\n", "zero_variance_groups"),
    ("# policy loss and gradient norm stay identically zero\n", "zero_variance_groups"),
    ("# both the loss and the grad norm are 0 on every step\n", "zero_variance_groups"),
    ("# the model stops calling tools after 100 steps\n", "reward_hacking_shortcut"),
    ("# our agent no longer uses the search tool by step 200\n", "reward_hacking_shortcut"),
    ("# tool_call_count drops to 0 after epoch 2\n", "reward_hacking_shortcut"),
    ("# 模型不再调用工具\n", "reward_hacking_shortcut"),
]


HEALTHY_R7 = [
    # the framework strings' healthy neighbours
    ("[INFO:swift] remaining_argv: []\n", "config_key_error"),
    ("[2025-01-02 10:00:00] INFO config.py:700:_batch_assertion train_batch_size=64 micro=4 grad_acc=4 world=4 ok\n",
     "batch_size_misconfig"),
    ("# refit took 3.2 s, no errors\n", "vllm_weight_sync_failure"),
    ("# memory before TRT-LLM engine refit: 12 GiB\n", "vllm_weight_sync_failure"),
    ("# refit finished without any error in 2 s\n", "vllm_weight_sync_failure"),
    ("# we set max_model_len larger than the prompt length, all good\n", "sequence_length_exceeds_model"),
    ("# max_model_len is 8192 and prompts are up to 2048 tokens\n", "sequence_length_exceeds_model"),
    # 'oom' inside words, a negated OOM between CJK characters
    ("# the zoom level of the plot is wrong, the room is full\n", None),
    ("# we never see any OOM 问题 with offload\n", None),
    # repetition words that describe data or a normal answer
    ("# the model repeats the user's question once before answering\n", "degenerate_repetition"),
    ("# we generate the same prompts twice per step (n=2)\n", "degenerate_repetition"),
    ("# there is a lot of repetition in our dataset prompts, so we dedup it\n", "degenerate_repetition"),
    # length: a prompt length, a slow rise
    ("# the prompt length increases sharply in the second dataset\n", "response_length_explosion"),
    ("# response length increases slowly and steadily\n", "response_length_explosion"),
    # groups words that are not zero-variance groups
    ("# we sample 8 homogeneous GPUs per node\n", "zero_variance_groups"),
    ("# groups of 8 completions are scored by the reward model\n", "zero_variance_groups"),
    # a reward that rises (late, or never falls)
    ("# reward did not increase until step 50, then climbed steadily\n", "zero_variance_groups"),
    ("# the reward does not decrease, it climbs from 0.2 to 0.7\n", "zero_variance_groups"),
    # the same words about sampling or format, not a collapse
    ("# the same prompt gets different answers across the 8 samples\n", "reward_hacking"),
    ("# we use the same answer format for every prompt\n", "reward_hacking"),
    # non-zero loss and gradient
    ("# pg_loss is 0.03 and grad_norm 0.8\n", "zero_variance_groups"),
    ("# loss and grad_norm are both non-zero\n", "zero_variance_groups"),
    # tool use that ends by design, or rises
    ("# the agent stops calling tools once it has found the answer\n", "reward_hacking_shortcut"),
    ("# tool call count rises to 3 per episode\n", "reward_hacking_shortcut"),
    # configuration help and docstrings (the round-7 sweep): an OOM that may happen, is avoided or prevented, a hook's
    # moment, a hypothetical refit failure
    ("Number of steps to wait before calling `torch.cuda.empty_cache()`. Helps avoid CUDA OOM at a cost of ~10% slower "
     "performance.\n", None),
    ("# For FSDP (v1), it gathers all model parameters to each device, which may cause OOM.\n", None),
    ("- ``cpu_offload``: offload all the tensors to cpu. To prevent CPU OOM, only rank0 gets the state_dict.\n", None),
    ("# lowering the micro batch would avoid a GPU OOM, so we keep it at 2\n", None),
    ("Register one process-local callback that writes a snapshot at allocator OOM time.\n", None),
    ("# vLLM re-asserts the shapes, so a refit that hands back anything else fails loudly there\n", None),
]


def test_msswift_ignored_arguments_are_a_warning() -> None:
    """With ignore_args_error ms-swift only logs the leftover flags and runs on: a warning, not the error."""
    found = diagnose_text("[WARNING:swift] remaining_argv: ['--use_vllm_server', 'true']\n").findings
    assert [(f.category, f.severity) for f in found if f.rule != "similar_case"][:1] == [("config_key_error", "warning")]


def test_flat_reward_is_a_weak_warning() -> None:
    """A flat reward alone names no cause: a low-confidence warning, never an error."""
    found = [f for f in diagnose_text("# the reward does not increase at all\n").findings if f.rule != "similar_case"]
    assert found and all(f.severity == "warning" and f.confidence <= 0.5 for f in found), found


# ---------------------------------------------------------------- round 9 (batches 9 and 10's misses read)
# DeepSpeed's fp16 loss scaler at its minimum (deepspeed/runtime/fp16/loss_scaler.py, fused_optimizer.py,
# unfused_optimizer.py): the exception, a "reduction" to the same scale in each of its three messages. A routine
# back-off from a high scale must not fire.
FIRST_R9 = [
    ("[rank0]: Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n",
     "grad_norm_nan"),
    ('  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/fp16/loss_scaler.py", line 185, in update_scale\n'
     "    raise Exception(\nException: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n",
     "grad_norm_nan"),
    ("[2024-02-01 10:00:01,000] [INFO] [unfused_optimizer.py:282:_update_scale] Reducing dynamic loss scale from 1.0 to 1.0\n",
     "grad_norm_nan"),
    ("[2024-02-01 10:00:01,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
     "Attempted loss scale: 1, reducing to 1\n", "grad_norm_nan"),
]


HEALTHY_R9 = [
    "[2023-12-11 16:39:34,450] [INFO] [fused_optimizer.py:345:_update_scale] Reducing dynamic loss scale from 65536 to 32768.0\n",
    "[INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. Skipping step. Attempted loss scale: 65536, reducing to 32768.0\n",
    "[INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2, reducing to 1\n",
    "[INFO] [fused_optimizer.py:353:_update_scale] Increasing dynamic loss scale from 16384.0 to 32768.0\n",
    "[INFO] [unfused_optimizer.py:282:_update_scale] Reducing dynamic loss scale from 16 to 1.0\n",
    "# min_loss_scale: the loss scale never goes below it; at the minimum DeepSpeed raises unless told not to\n",
]


# Wording classes of round 9, each on wordings other than the cases' own and with near misses that must not fire:
# the scorer gamed (as a verb), the advantage / reward z-score that is or becomes 0, and Python's "unexpected keyword
# argument" TypeError paraphrased with the keyword in other quotes or bare.
TOP3_R9 = [
    ("# the policy learned to game the verifier by printing the expected answer format only\n", "reward_hacking"),
    ("# after 200 steps it was clearly gaming the reward model with flattering openers\n", "reward_hacking"),
    ("# my agent gamed the judge: every answer ends with 'this is correct'\n", "reward_hacking"),
    ("# all advantages went to zero once every sample hit the max length\n", "zero_variance_groups"),
    ("# the group z-score is 0 for every completion, so the policy gets no signal\n", "zero_variance_groups"),
    ("# normalized advantages (reward minus group mean) became 0 after step 30\n", "zero_variance_groups"),
    ("# GRPOTrainer fails: unexpected keyword argument `processing_class` with trl 0.11\n", "config_key_error"),
    ("# DPOTrainer got an unexpected keyword argument “tokenizer” after the upgrade\n", "config_key_error"),
    ("# error: __init__() got unexpected keyword argument max_prompt_length when I pass it to the trainer\n",
     "config_key_error"),
    ("# I get unexpected keyword argument padding_free.\n", "config_key_error"),
]


HEALTHY_R9_WORDS = [
    ("# in this game the reward is +1 for a win and -1 for a loss\n", "reward_hacking"),
    ("# we want to game-proof the reward function before training\n", "reward_hacking"),
    ("# the reward for the game is sparse, so we shape it\n", "reward_hacking"),
    ("# advantages are zero-mean within each group by construction\n", "zero_variance_groups"),
    ("# the advantage was 0.42 on average at step 100\n", "zero_variance_groups"),
    ("# z-scores are 0.8 and -0.8 in a group of two\n", "zero_variance_groups"),
    ("# **kwargs swallows any unexpected keyword argument so the call never fails\n", "config_key_error"),
    ("# unexpected keyword arguments are ignored by the collator\n", "config_key_error"),
    ("Raises TypeError on an unexpected keyword argument.\n", "config_key_error"),
]


@pytest.mark.parametrize("text,absent", HEALTHY_R9_WORDS, ids=[f"{i}" for i in range(len(HEALTHY_R9_WORDS))])
def test_round9_healthy_word_classes(text: str, absent: str) -> None:
    assert absent not in _cats(text), _cats(text)


# Round 10: wording classes written from the frameworks' own troubleshooting / FAQ / metric docs (the decide part of
# benchmarks/troubleshooting_wordings.py: veRL, TRL, NeMo-RL, OpenRLHF, ms-swift), each tested here on wordings that are
# not the docs' sentences, and on near misses that share the words. Ray's raylet-registration failure is a log string.
FIRST_R10 = [
    ("[2025-09-20 11:50:22,050 E 31652 31652] core_worker.cc:179: Failed to register worker 01000000ffffffff to Raylet. "
     "IOError: [RayletClient] Unable to register worker with raylet. No such file or directory\n", "ray_actor_death"),
    ("(raylet) IOError: [RayletClient] Unable to register worker with raylet. Failed to read data from the socket: End of file\n",
     "ray_actor_death"),
]


TOP3_R10 = [
    ("# actor grad norm keeps increasing over the whole run, no single spike\n", "rollout_train_logprob_mismatch"),
    ("# actor grad norm keeps increasing over the whole run, no single spike\n", "grad_norm_spike"),
    ("# the gradient norm steadily rises from 0.3 to 4 over 500 steps\n", "rollout_train_logprob_mismatch"),
    ("# we hit a gradient explosion around step 120 with lr 5e-6\n", "grad_norm_spike"),
    ("# sudden jump in the grad_norm right after the data mix changed\n", "grad_norm_spike"),
    ("# there is a big discrepancy between the training and the vLLM rollout engine on long prompts\n",
     "rollout_train_logprob_mismatch"),
    ("# train-inference mismatch grows after we enabled fp8 rollout\n", "rollout_train_logprob_mismatch"),
    ("# logprob error spikes whenever a MoE expert flips\n", "rollout_train_logprob_mismatch"),
    ("# rollout_probs_diff_mean is above 0.02 on our A100 nodes\n", "rollout_train_logprob_mismatch"),
    ("# the importance ratio drifts away from 1 even with a single PPO epoch\n", "rollout_train_logprob_mismatch"),
    ("# the PPO ratio is way too high, around 50 on some tokens\n", "kl_explosion"),
    ("# approxkl is very high after the first epoch\n", "kl_explosion"),
    ("# it gets high reward but the text is not coherent language at all\n", "reward_hacking"),
    ("# the policy outputs only emojis and gets higher scores every step\n", "reward_hacking"),
    ("# we were truncating way too much with max_response_length=512\n", "response_truncation"),
    ("# the model frequently produces completions that get cut off at 1024 tokens\n", "response_truncation"),
    ("# GRPO produces excessively long completions on the wrong answers\n", "response_length_explosion"),
    ("# critic loss spikes at every epoch boundary\n", "critic_divergence"),
    ("# the sampling settings caused the KL to go negative\n", "metric_artifact_check_first"),
    ("# multi-node training is much slower than on one node\n", "low_throughput"),
    ("# we got repetitive completions after 300 steps\n", "degenerate_repetition"),
]


HEALTHY_R10 = [
    ("# gradient clipping at 1.0 is there to avoid gradient explosion\n", "grad_norm_spike"),
    ("# grad_norm rose from 0.1 to 0.3 during warmup and then stayed flat\n", "rollout_train_logprob_mismatch"),
    ("# val/ratio should float around 1.0; clip_ratio is the fraction of clipped tokens\n", "kl_explosion"),
    ("# the clip ratio is too high at 0.3, should we lower epsilon?\n", "kl_explosion"),
    ("# the updates are small, nothing drastic happens between epochs\n", "kl_explosion"),
    ("# monitor the gap between the training loss and the eval loss\n", "rollout_train_logprob_mismatch"),
    ("# rollout_probs_diff_mean should stay below 0.005\n", "rollout_train_logprob_mismatch"),
    ("# the reward model gives high rewards to fluent, natural language answers\n", "reward_hacking"),
    ("# we penalise excessive emojis so they do not get high rewards\n", "reward_hacking"),
    ("# multi-node training is faster than a single node with HSDP\n", "low_throughput"),
    ("# the value loss at step 0 is large, as expected\n", "critic_divergence"),
    ("# Ray registered 8 workers with the raylet\n", "ray_actor_death"),
    ("# a large batch makes memory usage spike, potentially leading to OOM errors\n", "oom_gpu"),
    ("# longer responses are expected once the model learns to reason\n", "response_length_explosion"),
]


# ---------------------------------------------------------------- round 10b (batch 11's misses read)
# A batch requirement stated in words is read only in a text that reports a failure (an exception, a traceback, an
# error / failure word): the frameworks' documentation states the same requirement when nothing failed. An exception
# inside a sentence of prose is read to its first sentence end (a command line pasted after it names batch keys);
# one that starts the line, as a traceback ends, is read whole (multi-sentence framework messages).
FIRST_R10B = [
    ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
     "ValueError: ppo_mini_batch_size should be a multiple of ppo_micro_batch_size_per_gpu\n", "batch_size_misconfig"),
    ("# my run crashed at start-up: train_batch_size must be divisible by the number of GPUs (6)\n", "batch_size_misconfig"),
    ("# 报错：generation_batch_size must be divisible by num_generations\n", "batch_size_misconfig"),
    ("ValueError: num_update_steps_per_epoch must be positive, got 0. Check that your dataset is not smaller than "
     "train_batch_size.\n", "batch_size_misconfig"),
]
# an exception quoted inside prose, the user's command line after its sentence: the batch keys are not its subject
PROSE_EXCEPTION_THEN_COMMAND = [
    "# I hit this: AssertionError: max_position_embeddings (4096) should be greater than max_model_len (8192). My command: "
    "python train.py --train_batch_size 512 --ppo_mini_batch_size 64\n",
    "# got AssertionError: the model's max_position_embeddings should be greater than prompt_length + response_length. "
    "Script: bash run.sh --train_batch_size 1024 --rollout_n 8\n",
    "# I hit this: ValueError: max_model_len is larger than the model's context window and this is not supported. My "
    "command: python train.py --train_batch_size 512\n",
]


@pytest.mark.parametrize("text", PROSE_EXCEPTION_THEN_COMMAND, ids=range(len(PROSE_EXCEPTION_THEN_COMMAND)))
def test_batch_keys_after_an_exceptions_sentence_are_not_its_subject(text: str) -> None:
    assert "batch_size_misconfig" not in _cats(text), _cats(text)

# Wording classes of round 10, each on wordings other than the cases' own, with near misses below:
# Python's "unexpected keyword argument" with the straight quote glued to the word (config_key_error warning); the
# answers failing the format check rising (response_truncation: the same symptom as a format reward falling to 0);
# a preference run's loss falling to almost 0 / its accuracy reaching 1.0 (dpo_overoptimization_high_lr).
TOP3_R10B = [
    ("# TypeError: forward() got an unexpected keyword argument'labels'\n", "config_key_error"),
    ("# 报错 trainer.compute_loss()got an unexpected keyword argument'num_items_in_batch'\n", "config_key_error"),
    ("# In my GRPO run the responses with format errors keep increasing after step 200\n", "response_truncation"),
    ("# More and more completions have format issues as training goes on\n", "response_truncation"),
    ("# The fraction of outputs with format violations rises steadily during RL\n", "response_truncation"),
    ("# DPO training: rewards accuracy reaches 100% within 50 steps\n", "dpo_overoptimization_high_lr"),
    ("# ORPO run: the preference accuracy is 1.0 after 20 steps\n", "dpo_overoptimization_high_lr"),
    ("# With SimPO the loss drops to nearly zero after one epoch\n", "dpo_overoptimization_high_lr"),
    ("# preference tuning: the loss rapidly converges to 0 while the outputs do not change\n",
     "dpo_overoptimization_high_lr"),
    # an outcome-only reward paying a broken path (a malformed tool call still rewarded: the shortcut category)
    ("# the model emits malformed tool calls but still gets rewarded because the final answer is correct\n",
     "reward_hacking_shortcut"),
    ("# invalid function calls were followed by an answer that happened to be right, and the policy learned that "
     "pattern\n", "reward_hacking_shortcut"),
    ("# 工具调用格式错误但答案碰巧正确，仍然拿到奖励，模型学会了这种模式\n", "reward_hacking_shortcut"),
    # a memory growth the writer observed: its hedged consequence is this run's OOM (phase from its words)
    ("# GPU memory keeps growing after every step, which may lead to OOM in the update\n", "oom_gpu"),
    ("# there is an increase in GPU memory after each save that could cause OOM when waking up the vLLM engine\n",
     "oom_rollout_wakeup"),
]
HEALTHY_R10B = [
    # documentation of a batch requirement, as the frameworks' help texts and docstrings state it: no error finding
    # (the retrieval fallback may still name a similar batch case as a warning)
    "# Number of generations per prompt. The effective batch size (num_processes * per_device_train_batch_size * "
    "gradient_accumulation_steps) must be evenly divisible by this value.\n",
    "The global batch size must be divisible by the number of generations.\n",
    "# ppo_mini_batch_size should be a multiple of ppo_micro_batch_size_per_gpu\n",
    "Mini-batch size for PPO updates; must be >= micro_batch_size. Raises ValueError if it is not.\n",
    "# the micro batch should not be larger than the mini batch; an error is raised if it is\n",
    ("# format errors decrease as training goes on\n", "response_truncation"),
    ("# I fixed the format issue in the prompt template\n", "response_truncation"),
    ("# format errors increase the penalty applied by the reward\n", "response_truncation"),
    ("# DPO loss decreases from 0.69 to 0.45 and accuracy reaches 0.72\n", "dpo_overoptimization_high_lr"),
    ("# DPO loss drops to 0.3 after one epoch\n", "dpo_overoptimization_high_lr"),
    ("# PPO training: the value loss quickly goes to 0\n", "dpo_overoptimization_high_lr"),
    ("# DPO accuracy is 0.1 at the start\n", "dpo_overoptimization_high_lr"),
    ("# unexpected keyword arguments are ignored by the collator\n", "config_key_error"),
    ("# malformed tool calls get a reward of 0\n", "reward_hacking_shortcut"),
    ("# invalid tool calls are penalised with -1\n", "reward_hacking_shortcut"),
    ("# 格式错误的工具调用得到 0 分\n", "reward_hacking_shortcut"),
    ("# the answer happens to be correct in 30% of cases\n", "reward_hacking_shortcut"),
    ("# malformed tool calls still get a reward of 0 in our setup\n", "reward_hacking_shortcut"),
    # a hedged OOM without an observed growth, or a growth that is reduced or expected, stays no OOM
    "Setting this flag may cause OOM with long sequences.\n",
    "# enable_sleep_mode reduces the increase in memory that can cause OOM when waking up\n",
    "# memory usage is expected to increase with longer sequences and can cause OOM\n",
    "Avoids the growth of memory that could cause OOM on small GPUs.\n",
]


# ----------------------------------------------------------------------------- round 11 (batch 12's misses)
# Framework strings, each with its source file: vLLM's StatelessProcessGroup.barrier (the weight-transfer group of
# TRL's vllm_client), CANN's HCCL socket/notify timeouts (torch_npu, vllm-ascend), argparse's prefix without its list.
FIRST_R11 = [
    ("RuntimeError: Failed to signal barrier arrival\n", "vllm_weight_sync_failure"),
    ("  File \"/usr/lib/python3.11/site-packages/vllm/distributed/utils.py\", line 300, in barrier\n"
     "    raise RuntimeError(\"Failed to broadcast barrier_id\") from e\n"
     "RuntimeError: Failed to broadcast barrier_id\n", "vllm_weight_sync_failure"),
    ("[rank3]: EI0002: [PID: 4021] 2025-06-01-10:02:11.100.200 The wait execution of the Notify register times out. "
     "Reason: The Notify register has not received the Notify record from remote rank [1]\n", "nccl_timeout"),
    ("[rank0]: RuntimeError: HCCL function error: HcclAllGather, error code is 4. Wait for the collective timed out\n",
     "nccl_timeout"),
    ("[E ProcessGroupHCCL.cpp:812] [Rank 2] Watchdog caught collective operation timeout: WorkHCCL(SeqNum=41, OpType=BROADCAST)\n",
     "nccl_timeout"),
    ("train.py: error: unrecognized arguments --use_vllm_server\n", "config_key_error"),
    ("# eval_loss: nan after the first evaluation\n", "grad_norm_nan"),
    ("# validation loss is NaN from epoch 2 on\n", "grad_norm_nan"),
]

# Wording classes, each on wordings other than the case's sentence, English and Chinese.
TOP3_R11 = [
    ("# the update_model_params call times out after 600 s on the second step\n", "vllm_weight_sync_failure"),
    ("# init_communicator failed with a connection refused from the vllm-serve host\n", "vllm_weight_sync_failure"),
    ("# training hangs while broadcasting the updated weights to the vLLM engines\n", "vllm_weight_sync_failure"),
    ("# the weight sync gets stuck after the first PPO step\n", "vllm_weight_sync_failure"),
    ("# syncing the actor parameters to the rollout workers timed out\n", "vllm_weight_sync_failure"),
    ("# 每次权重同步都会卡住，最后 NCCL 超时\n", "vllm_weight_sync_failure"),
    ("# 广播权重到vllm时超时了\n", "vllm_weight_sync_failure"),
    ("# swift sft fails with: unrecognized arguments: --rpo_alpha\n", "config_key_error"),
    ("# the launcher says no such option: --num_rollouts\n", "config_key_error"),
    ("# got an error about an unknown argument --reward_funcs_weights\n", "config_key_error"),
    ("# 运行后提示不存在该参数 --vllm_mode\n", "config_key_error"),
    ("# 启动时报错：无法识别的参数 --beta\n", "config_key_error"),
    ("# the completion length explodes after step 200 and hits the cap\n", "response_length_explosion"),
    ("# mean response length grows out of control past 12k tokens\n", "response_length_explosion"),
    ("# 训练到 500 步后回复长度失控，全部截断\n", "response_length_explosion"),
    ("# the trainer/vLLM logprob gap is huge on the MoE layers\n", "rollout_train_logprob_mismatch"),
    ("# rollout-training difference grows after each weight update\n", "rollout_train_logprob_mismatch"),
    ("# train_rollout_logprob_abs_diff is above 0.3 from the start\n", "rollout_train_logprob_mismatch"),
    ("# 训推差异很大，reward 不涨\n", "rollout_train_logprob_mismatch"),
]

# Near misses: documentation, settings and healthy reports with the same words.
HEALTHY_R11 = [
    ("# unknown arguments are forwarded to the vLLM engine\n", "config_key_error"),
    ("Unrecognized arguments are ignored when ignore_args_error is set.\n", "config_key_error"),
    ("# 这个参数没有说明文档，默认值是多少？\n", "config_key_error"),
    ("# 没有这个参数也能正常训练\n", "config_key_error"),
    ("# Timeout in seconds for broadcasting weights to the vLLM engines (default 600)\n", "vllm_weight_sync_failure"),
    ("# the weights are synced to vLLM after every step and generation resumes\n", "vllm_weight_sync_failure"),
    ("# 每一步结束后同步参数到 vLLM，耗时 3 秒\n", "vllm_weight_sync_failure"),
    ("# the overlong penalty avoids a response length explosion\n", "response_length_explosion"),
    ("# sequence length is 4096 with packing\n", "response_length_explosion"),
    ("# the training/rollout difference stays below 0.01 throughout\n", "rollout_train_logprob_mismatch"),
    ("# training and rollout use the same tokenizer\n", "rollout_train_logprob_mismatch"),
    ("# HCCL_CONNECT_TIMEOUT=1200 is set in the environment\n", "nccl_timeout"),
    ("# eval_loss: 0.42, eval accuracy 0.81\n", "grad_norm_nan"),
    ("# barrier_id is generated by rank 0 and broadcast to the others\n", "vllm_weight_sync_failure"),
]


# ----------------------------------------------------------------------------- round 12 (batch 13's misses)
# Framework strings, each with its source file: TRL's vLLM client "Request failed: <status>" from a weight-update
# route (trl/generation/vllm_client.py, trl/scripts/vllm_serve.py), torch c10d's TCPStore connect timeout with the
# weight-update group in view, vLLM's AutoWeightsLoader name mismatch during a weight sync, the CUDA driver's
# CUDA_ERROR_OUT_OF_MEMORY, Python's AttributeError on a trainer/config class.
FIRST_R12 = [
    ("  File \"/opt/conda/lib/python3.11/site-packages/trl/extras/vllm_client.py\", line 240, in update_named_param\n"
     "    raise Exception(f\"Request failed: {response.status_code}, {response.text}\")\n"
     "Exception: Request failed: 500, Internal Server Error\n", "vllm_weight_sync_failure"),
    ("INFO:     10.0.0.5:41822 - \"POST /init_communicator/ HTTP/1.1\" 404 Not Found\n", "vllm_weight_sync_failure"),
    ("vllm_client.get_world_size() -> Exception: Request failed: 404, {\"detail\":\"Not Found\"}\n", "vllm_weight_sync_failure"),
    ("INFO:     127.0.0.1:5000 - \"POST /init_communicator/ HTTP/1.1\" 200 OK\n"
     "[W socket.cpp:752] [c10d] The client socket has timed out after 600000ms while trying to connect to (10.1.2.3, 51216).\n",
     "vllm_weight_sync_failure"),
    ("weight sync to the engine at step 1 fails:\n"
     "ValueError: There is no module or parameter named 'lm_head.base_layer' in Qwen2ForCausalLM\n", "vllm_weight_sync_failure"),
    ("RuntimeError: Triton Error [CUDA]: CUDA_ERROR_OUT_OF_MEMORY\n", "oom_gpu"),
    ("AttributeError: 'GRPOConfig' object has no attribute 'vllm_gpu_memory_utilization' after upgrading trl\n", "config_key_error"),
]

# The same classes in other wordings (a warning counts: the version is not stated).
TOP3_R12 = [
    ("# AttributeError: 'MyDPOTrainer' object has no attribute 'ref_model'\n", "config_key_error"),
    ("# I get AttributeError: 'TrainingArguments' object has no attribute 'generation_batch_size' with trl==0.14\n", "config_key_error"),
    ("# 升级 trl 之后报错 AttributeError: 'GRPOTrainer' object has no attribute '_get_train_sampler'\n", "config_key_error"),
]

# Near misses: the same strings outside a weight update, healthy access logs, attributes of non-framework objects.
HEALTHY_R12 = [
    ("INFO:     127.0.0.1:37996 - \"GET /get_world_size/ HTTP/1.1\" 200 OK\n", "vllm_weight_sync_failure"),
    ("INFO:     127.0.0.1:38010 - \"POST /init_communicator/ HTTP/1.1\" 200 OK\n", "vllm_weight_sync_failure"),
    ("Exception: Request failed: 404, {\"detail\":\"Not Found\"} from the /generate/ route of my reward server\n", "vllm_weight_sync_failure"),
    ("# init_communicator builds the weight update group on the server\n", "vllm_weight_sync_failure"),
    ("# update_named_param sends each parameter to the vLLM server\n", "vllm_weight_sync_failure"),
    ("# load_weights maps the checkpoint names to the model's parameters\n", "vllm_weight_sync_failure"),
    ("# CUDA_ERROR_OUT_OF_MEMORY is raised by the driver when an allocation fails\n", None),
    ("if result == CUresult.CUDA_ERROR_OUT_OF_MEMORY: retry with a smaller chunk\n", None),
    ("# hasattr(trainer, 'llm') checks whether the object has the attribute\n", "config_key_error"),
    ("AttributeError: 'NoneType' object has no attribute 'shape'\n", "config_key_error"),
]


# ----------------------------------------------------------------------------- round 13 (batch 14's misses)
# Crash-log ranking: an OOM's phase only from the frames or framework names that show it (vLLM's engine start-up
# frames -> GPU memory at start, not a wake-up; the reference model's actor class/file -> the reference pass; slime's
# train task -> the training step), a GPU-OOM message hedged or avoided in the words before it is no report, Ray's
# K8s hedge appended to every non-zero SystemExit is no host-memory report; and Trinity-RFT's own weight-sync failure
# line (trinity/trainer/trainer.py Trainer.sync_weight) with the same wording in other stacks.
FIRST_R13 = [
    # vLLM v0 start-up: determine_num_available_blocks -> profile_run, no wake-up frame
    ("Traceback (most recent call last):\n"
     "  File \"/usr/lib/python3.10/site-packages/vllm/worker/worker.py\", line 229, in determine_num_available_blocks\n"
     "    self.model_runner.profile_run()\n"
     "  File \"/usr/lib/python3.10/site-packages/vllm/worker/model_runner.py\", line 1311, in profile_run\n"
     "    self.execute_model(model_input, kv_caches, intermediate_tensors)\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.28 GiB. GPU 0 has a total capacity of 79.1 GiB\n",
     "oom_gpu"),
    # vLLM v1 engine core sizing its KV cache at start
    ("(EngineCore_0 pid=2211)   File \"/vllm/v1/engine/core.py\", line 83, in __init__\n"
     "(EngineCore_0 pid=2211)     self._initialize_kv_caches(vllm_config)\n"
     "(EngineCore_0 pid=2211)   File \"/vllm/v1/worker/gpu_worker.py\", line 230, in determine_available_memory\n"
     "(EngineCore_0 pid=2211) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "oom_gpu"),
    # a wake-up frame in the same trace still wins over a start-up frame
    ("  File \"/verl/workers/sharding_manager/fsdp_vllm.py\", line 190, in __enter__\n"
     "    self.inference_engine.wake_up()\n"
     "  File \"/vllm/device_allocator/cumem.py\", line 214, in wake_up\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB\n", "oom_rollout_wakeup"),
    # OpenRLHF's reference actor: its forward is the reference pass even through a shared log-prob helper
    ("    ref_values = ray.get(ref_refs)\n"
     "ray.exceptions.RayTaskError(OutOfMemoryError): ray::ReferenceModelActor.forward() (pid=5512, ip=10.0.0.3)\n"
     "  File \"/openrlhf/models/utils.py\", line 60, in log_probs_from_logits\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.00 GiB\n", "oom_ref_logprob"),
    # slime's train task named by Ray's task header, FSDP backend
    ("  File \"/slime/train.py\", line 70, in train\n"
     "    ray.get(actor_model.async_train(rollout_id, rollout_data_ref))\n"
     "ray.exceptions.RayTaskError(OutOfMemoryError): ray::FSDPTrainRayActor.train() (pid=811, ip=10.0.0.2)\n",
     "oom_actor_train"),
    # ... but a log-prob frame inside slime's train task is the more specific phase
    ("    ray.get(actor_model.async_train(rollout_id, rollout_data_ref))\n"
     "  File \"/slime/backends/megatron_utils/actor.py\", line 300, in train_actor\n"
     "    self.compute_log_prob(data_iterator, num_microbatches, store_prefix=\"\")\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB\n", "oom_actor_logprob"),
    # a Ray worker ended by SIGTERM in a K8s pod: Ray's hedge is no host-memory report
    ("(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker exit type: "
     "SYSTEM_ERROR Worker exit detail: Worker exits unexpectedly. Worker exits with an exit code None. The worker may have "
     "exceeded K8s pod memory limits.\n", "ray_actor_death"),
    ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
     "Worker exit detail: Worker exits with an exit code 1. The worker may have exceeded K8s pod memory limits.\n"
     "The process receives a SIGTERM.\n", "ray_actor_death"),
    # an OOM named only as what a setting was meant to avoid, beside a real death
    ("I lowered the micro batch size to prevent CUDA out of memory errors, but the job still ends with:\n"
     "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n", "ray_actor_death"),
    # an OOM named in a title above a log that shows a phase running and finishing, no frame: the phase is unknown
    ("# CUDA out of memory on rank 2 after the rollout\n"
     "Rollout generation: 100%|##########| 64/64 [03:10<00:00,  2.97s/it]\n"
     "(SGLangEngine pid=7712) [2026-01-27 06:50:01 TP2] Cache flushed successfully!\n", "oom_gpu"),
    # ... and above a traceback, its frames give the phase
    ("# torch.OutOfMemoryError in the middle of training\n"
     "Traceback (most recent call last):\n"
     "  File \"/verl/workers/fsdp_workers.py\", line 611, in update_actor\n"
     "    metrics = self.actor.update_policy(data=data)\n", "oom_actor_train"),
    # vLLM's engine core failing a collective RPC while the store-backed group times out (TRL vllm_serve.py's weight calls)
    ("[rank0]:[W1102 10:01:12 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=88, addr=[node1]:43110, "
     "remote=[::ffff:10.0.0.9]:51216) timed out after 600000ms\n"
     "(EngineCore_DP0 pid=3100) ERROR 11-02 10:01:12 [core.py:712] Invocation of collective_rpc method failed\n",
     "vllm_weight_sync_failure"),
    # Trinity-RFT's trainer line, and the same failure worded by other stacks
    ("(Trainer pid=4410) ERROR 11-02 09:12:01 [trainer.py:160] Trainer synchronizing weights failed.\n",
     "vllm_weight_sync_failure"),
    ("[rank0] ERROR: weight sync failed at step 12, the rollout engine keeps the old policy\n", "vllm_weight_sync_failure"),
    ("RuntimeError: Failed to synchronize model weights with the inference workers\n", "vllm_weight_sync_failure"),
]

# Prose and framework strings of round 12's documented misses, in other wordings (a warning counts).
TOP3_R13 = [
    # SGLang's function-call detector (base_format_detector.py) in a veRL multi-turn log
    ("(AsyncSglangServer pid=912) WARNING [base_format_detector.py:62] Failed to parse JSON part: {\"name\": \"calc\", "
     "\"arguments\": {\"x\": 1}, JSON parse error: Expecting ',' delimiter\n", "tool_call_parse_errors"),
    # veRL's empty-dataloader assertion, and the same in words
    ("AssertionError: Train dataloader is empty!\n", "data_filter_misconfig"),
    ("# my val_dataloader was empty after I set filter_overlong_prompts=True and max_prompt_length=256\n",
     "data_filter_misconfig"),
    ("# the whole dataset is empty after length filtering, so training never starts\n", "data_filter_misconfig"),
    # a batch that does not divide, in words
    ("# per-device batchsize 3 x 4 GPUs not divided by num_generations 8\n", "batch_size_misconfig"),
    ("# 报错：global batch size 12 cannot be evenly divided by 8\n", "batch_size_misconfig"),
    # the engine's log-probs called wrong or computed without the temperature
    ("# SGLang returns wrong logprobs when top_p < 1, so the IS ratio is far from 1\n", "rollout_train_logprob_mismatch"),
    ("# the rollout log probs ignore the sampling temperature, the importance ratio sits near 1.7\n",
     "rollout_train_logprob_mismatch"),
]

# Near misses: the same names and words where nothing failed.
HEALTHY_R13 = [
    ("(Trainer pid=4410) INFO 11-02 09:12:01 [trainer.py:152] Trainer synchronizing weights at step 3 starting..\n"
     "(Trainer pid=4410) INFO 11-02 09:12:04 [trainer.py:170] Trainer synchronizing weights at step 3 end.\n", None),
    # (a docstring's "if the weight sync fails" is still read by the older round-5 weight-sync pattern: not settled)
    ("# Synchronize the model weights with the explorer every sync_interval steps\n", None),
    ("# synchronizing weights over NCCL is faster than the checkpoint method; it failed over to checkpoint on one node\n",
     None),
    ("INFO 11-01 23:47:30 [gpu_worker.py:391] Free memory on device (22.52/23.51 GiB) on startup. Desired GPU memory "
     "utilization is (0.9, 21.2 GiB).\nINFO [core.py:210] init engine (profile, create kv cache, warmup model) took 41.2 s\n",
     None),
    ("# I set ppo_micro_batch_size_per_gpu=2 to avoid the possibility of CUDA out of memory, and training runs fine\n", None),
    ("# the reference model (ReferenceModelActor) is offloaded to CPU between steps\n", None),
    ("# if the train dataloader is empty, veRL stops with an assertion\n", "data_filter_misconfig"),
    ("# raises an error when the dataset is empty after filtering\n", "data_filter_misconfig"),
    ("# the loss is not divided by the batch size (sum reduction)\n", "batch_size_misconfig"),
    ("# batch size 16 is divided by 4 GPUs, so each GPU gets 4 prompts\n", "batch_size_misconfig"),
    ("# vLLM computes log probs with temperature 1 by default (logprobs_mode)\n", "rollout_train_logprob_mismatch"),
    ("# the vllm engine returns the correct log probs for every token\n", "rollout_train_logprob_mismatch"),
    ("# we parse the JSON part of each tool call with json.loads\n", "tool_call_parse_errors"),
    # a collective RPC failing without a store timeout: any engine RPC, not read as the weight update
    ("ERROR 11-02 10:01:12 [core.py:712] Invocation of collective_rpc method failed\n", "vllm_weight_sync_failure"),
]


# ----------------------------------------------------------------------------- round 14 (batch 15's misses)
# Weight-update failures read from the frameworks' code: NCCL's duplicate-GPU refusal (src/init.c, ncclInvalidUsage) and
# an NCCL error with the RL frameworks' weight-update group in view (`PyNcclCommunicator(pg, ...)` over a
# StatelessProcessGroup: TRL vllm_client.py, OpenRLHF distributed_util.py, veRL distributed.py); a traceback through the
# weight-update path (veRL update_weights_from_ipc, TRL _move_model_to_vllm / update_named_param, OpenRLHF update_weight,
# NeMo-RL refit_policy_generation), a CUDA OOM in it still first; an AttributeError on a vLLM engine object (vLLM V1's
# LLMEngine has no model_executor) as a version skew; a report's table with a step per column read as curves, and an
# entropy that collapses from its peak; prose classes in other wordings: a weight update that fails or breaks the
# policy, the log-prob mismatch named before its two sides, output degenerating into rows of a token, a quantity
# turned into NaN, Chinese entropy collapse and heavy repetition.
FIRST_R14 = [
    ('  File "/openrlhf/utils/distributed_util.py", line 25, in stateless_init_process_group\n'
     '    pynccl = PyNcclCommunicator(pg, device=device)\n'
     'node1:2231:2231 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 3 and rank 0 both on CUDA de'
     'vice 1b000\n'
     'RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)\n',
     'vllm_weight_sync_failure'),
    ('INFO vllm_client.py:201 init_communicator: world size 2\n'
     'torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317,'
     ' invalid usage, NCCL version 2.21.5\n'
     'ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n',
     'vllm_weight_sync_failure'),
    ('Traceback (most recent call last):\n'
     '  File "/trl/trainer/grpo_trainer.py", line 1201, in _generate\n'
     '    self._move_model_to_vllm()\n'
     '  File "/trl/trainer/grpo_trainer.py", line 988, in _move_model_to_vllm\n'
     '    self.vllm_client.update_named_param(name, param.data)\n',
     'vllm_weight_sync_failure'),
    ('(LLMRayActor pid=812)   File "/openrlhf/trainer/ray/vllm_worker_wrap.py", line 48, in update_weight\n'
     '(LLMRayActor pid=812)     self.model_runner.model.load_weights(weights=[(name, weight)])\n'
     "(LLMRayActor pid=812) KeyError: 'model.layers.0.mlp.experts.w13_weight'\n",
     'vllm_weight_sync_failure'),
    ('  File "/nemo_rl/algorithms/grpo.py", line 512, in refit_policy_generation\n'
     '    policy_generation.update_weights_from_ipc_handles(ipc_handles)\n'
     'RuntimeError: shape mismatch for lm_head.weight\n',
     'vllm_weight_sync_failure'),
    ('  File "/verl/workers/rollout/vllm_rollout/utils.py", line 180, in update_weights_from_ipc\n'
     '    buffer = rebuild_ipc(handle, self.device.index)\n'
     'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n',
     'oom_gpu'),
    ('Traceback (most recent call last):\n'
     '  File "/orz/vllm_engine.py", line 70, in offload\n'
     '    return self.llm.llm_engine.model_executor.driver_worker.offload_cpu()\n'
     "AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n",
     'config_key_error'),
    ("AttributeError: 'AsyncLLM' object has no attribute 'collective_rpc' after I upgraded vllm to 0.11\n",
     'config_key_error'),
]

TOP3_R14 = [
    ('# RuntimeError: NCCL error: invalid usage when the vllm server and the trainer run on a single GPU\n',
     'vllm_weight_sync_failure'),
    ('# the weight update fails on the second rollout worker because the checkpoint is gone\n',
     'vllm_weight_sync_failure'),
    ('# updating the policy weights in SGLang failed after step 20\n',
     'vllm_weight_sync_failure'),
    ('# with TP=4 the weight sync corrupts the model: rewards drop to zero at step 2\n',
     'vllm_weight_sync_failure'),
    ('# the policy is silently broken after every weight broadcast to vLLM\n',
     'vllm_weight_sync_failure'),
    ('# we see a discrepancy of token logprobs between vLLM and the Megatron trainer on the same sequences'
     '\n',
     'rollout_train_logprob_mismatch'),
    ('# big training-inference mismatch once we enabled MoE routing replay off\n',
     'rollout_train_logprob_mismatch'),
    ('# after 300 steps the answers degenerate into strings of the same emoji\n',
     'degenerate_repetition'),
    ('# 训练后期模型输出出现严重重复，最后只剩同一句话\n',
     'degenerate_repetition'),
    ('# 训练到 300 步熵坍塌了，reward 也不涨了\n',
     'entropy_collapse'),
    ('# the fp16 overflow turns the advantages into NaN at step 40\n',
     'grad_norm_nan'),
    ('# a bad attention position makes the loss to be NaN on long prompts\n',
     'grad_norm_nan'),
    ('# long sequences are causing KL NaN with the reference worker in bf16\n',
     'grad_norm_nan'),
    ('| metric | Step 10 | Step 200 | Step 400 | note |\n'
     '|---|---|---|---|---|\n'
     '| actor/entropy | 0.9 | 1.4 | 0.35 | peak then fall |\n',
     'entropy_collapse'),
]

# Near misses: the same names and words where nothing failed, or a conditional, a guard, a docstring.
HEALTHY_R14 = [
    ('NCCL INFO comm 0x5581 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n'
     'INFO vllm_client.py:201 init_communicator: world size 2\n',
     None),
    ('# NCCL reports invalid usage if two ranks share the same GPU; use separate devices\n',
     'vllm_weight_sync_failure'),
    ('# update_weights_from_ipc: receive the trained weights from the trainer over CUDA IPC\n',
     'vllm_weight_sync_failure'),
    ('def update_weights(self, weights):\n'
     '    """Update weights; raises RuntimeError if the weight update fails."""\n',
     'vllm_weight_sync_failure'),
    ('# if the weight sync corrupts the policy, compare the log-probs before and after\n',
     'vllm_weight_sync_failure'),
    ('# we reload after each weight sync to avoid corrupting the model\n',
     'vllm_weight_sync_failure'),
    ("AttributeError: 'MyRewardHelper' object has no attribute 'cache'\n",
     'config_key_error'),
    ('# compare the log probabilities between rollout and training as a sanity check\n',
     'rollout_train_logprob_mismatch'),
    ('# 为了防止熵坍塌，我们用了 clip-higher\n',
     'entropy_collapse'),
    ('# 数据集中有大量重复数据，我们先去重\n',
     'degenerate_repetition'),
    ('# clamp the log-ratio so the k3 term never turns the KL into NaN\n',
     None),
    ('| metric | Step 10 | Step 200 | Step 400 |\n'
     '|---|---|---|---|\n'
     '| actor/entropy | 0.9 | 0.8 | 0.7 |\n',
     'entropy_collapse'),
    ('| metric | Step 10 | Step 200 | Step 400 | Step 600 |\n'
     '|---|---|---|---|---|\n'
     '| actor/entropy | 0.5 | 1.4 | 0.3 | 0.9 |\n',
     'entropy_collapse'),
]


# ----------------------------------------------------------------------------- round 15 (batch 16's misses)
# Owners' run reports and threads, read from the frameworks' code and the taxonomy: the engine-side weight-update call
# of the RL frameworks' vLLM worker extensions (`self.model_runner.model.load_weights(weights=...)`: TRL vllm_serve.py,
# OpenRLHF vllm_worker_wrap.py) in a traceback; prose classes in other wordings than the cases': a failure named before
# the weight sync, an entropy that explodes (adjective first), TRL's frac_reward_zero_std at 1, a gradient norm told as
# zero, the agent protocol's tags swapped or drifting, a judge's "correct" answers that do not hold the reference, and
# veRL's rollout-vs-actor probability check (calculate_debug_metrics) named as out of range. A narrated metric
# ("KL = 3400 at step 180") is read as points by the prose reader (tests/test_readers.py).
FIRST_R15 = [
    ('(EngineCore_DP0 pid=11) ERROR [core.py:780] Traceback (most recent call last):\n'
     '(EngineCore_DP0 pid=11) ERROR [core.py:780]   File "/x/worker_ext.py", line 57, in receive_weights\n'
     '(EngineCore_DP0 pid=11) ERROR [core.py:780]     self.model_runner.model.load_weights(weights=batch)\n'
     '(EngineCore_DP0 pid=11) ERROR [core.py:780]   File "/vllm/model_executor/models/llama.py", line 500, in load_weights\n'
     "(EngineCore_DP0 pid=11) ERROR [core.py:780] KeyError: 'lora_A'\n",
     'vllm_weight_sync_failure'),
    ('(VllmWorker pid=9)   File "/my_pkg/ext.py", line 30, in push\n'
     '(VllmWorker pid=9)     self.model_runner.model.load_weights(weights=[(name, tensor)])\n'
     '(VllmWorker pid=9) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB\n',
     'oom_gpu'),
    ('# at step 180 the run blew up: KL = 3400 at step 180\n', 'kl_explosion'),
]

TOP3_R15 = [
    ('LoRA training fails on the first weight broadcast\n', 'vllm_weight_sync_failure'),
    ('the trainer crashed during the weight update to SGLang at step 12\n', 'vllm_weight_sync_failure'),
    ('we see skyrocketing policy entropy and garbled text after step 50\n', 'entropy_explosion'),
    ('# frac_reward_zero_std stuck at 1.0 for the whole run, nothing learns\n', 'zero_variance_groups'),
    ('| metric | value |\n|---|---|\n| note | frac_reward_zero_std = 100% from the first step |\n', 'zero_variance_groups'),
    ('gradient norm stays at zero for all 500 steps\n', 'vanishing_gradient'),
    ('训练了很久，梯度范数一直为0\n', 'vanishing_gradient'),
    ('The policy emits <answer> rather than <search> after 100 steps\n', 'agent_format_protocol_failure'),
    ('after GRPO the model drifted its special tokens and stopped calling tools\n', 'agent_format_protocol_failure'),
    ('only 12% of the "solved" answers contain the gold answer\n', 'reward_hacking'),
    ('many outputs were graded as correct by the judge but did not contain the reference answer\n', 'reward_hacking'),
    ('the rollout_probs_diff_max is far above 0.5 on every step with sglang\n', 'rollout_train_logprob_mismatch'),
    ('very high training/rollout_probs_diff_mean after switching to fp8\n', 'rollout_train_logprob_mismatch'),
    ('Our second run: the kl went from 0.02 to 45 within twenty steps.\n', 'kl_explosion'),
]

HEALTHY_R15 = [
    ('# if the grad norm is 0, check that the LoRA parameters require grad\n', 'vanishing_gradient'),
    ('grad_norm is 0.34 at step 10 and falls slowly\n', 'vanishing_gradient'),
    ('the grad norm is not 0 on any step\n', 'vanishing_gradient'),
    ('# use <answer> instead of <tool_call> for the final reply\n', 'agent_format_protocol_failure'),
    ('# frac_reward_zero_std < 1 means at least one group had spread\n', 'zero_variance_groups'),
    ('frac_reward_zero_std = 0.25 at step 40\n', 'zero_variance_groups'),
    ('# we lowered clip_ratio_high to avoid exploding entropy\n', 'entropy_explosion'),
    ('rollout_probs_diff_mean stays at 0.002, well within 0.01\n', 'rollout_train_logprob_mismatch'),
    ('the judge marked 80% as correct and all contained the reference answer\n', 'reward_hacking'),
    ('# returns False if the adapter fails on the first weight update\n', 'vllm_weight_sync_failure'),
    ('def receive(self, batch):\n    self.model_runner.model.load_weights(weights=batch)\n', 'vllm_weight_sync_failure'),
    ('kl_coef=0.001 at step 0, beta=0.04\n', None),
    ('KL was 0.02 at step 300, entropy 0.6 at step 300\n', 'kl_explosion'),
    ('the entropy went from 0.9 to 0.7 over 300 steps\n', 'entropy_collapse'),
]


# ----------------------------------------------------------------------------- round 16 (batch 17's misses)
# Symptoms told in words, read from the taxonomy and the frameworks' strings, in other wordings than the cases': a
# repetition collapse (one token emitted, outputs told as repeated, a reply that is one unit repeated), a policy
# collapsed onto one response for every input (entropy_collapse), correct outputs scored zero (reward_function_misconfig),
# parameters holding NaN (grad_norm_nan), a high rollout/train log-prob difference; and two framework strings: veRL's
# weight-transfer bucket assertion (bucketed_weight_transfer.py) and ChatLLaMA's prompt-length check (rlhf/actor.py).
FIRST_R16 = [
    ("AssertionError: Weight lm_head.weight(torch.Size([151936, 8192]), torch.float32) is too large to fit in the "
     "bucket.\n", "vllm_weight_sync_failure"),
    ("(WorkerDict pid=3) AssertionError: Weight model.embed_tokens.weight(torch.Size([262144, 5376]), torch.bfloat16) "
     "is too large to fit in the bucket.\n", "vllm_weight_sync_failure"),
    ("Traceback (most recent call last):\n  File \"rlhf/actor.py\", line 120, in generate\nValueError: The maximum "
     "completion available is <= 0 the prompt is too long w.r.t the model sequence length\n",
     "sequence_length_exceeds_model"),
    ("User: tell me a joke\nAssistant: ok ok ok ok ok ok ok ok\n", "degenerate_repetition"),
    # an OOM's phase told in a description: the training step's forward
    ("# CUDA OOM during the training forward pass with micro batch 8\n", "oom_actor_train"),
    ("# OOM in the forward pass during training of the 7B actor\n", "oom_actor_train"),
]

TOP3_R16 = [
    ("after PPO the policy just generates the same word over the whole reply\n", "degenerate_repetition"),
    ("It only outputs the same character, whatever we ask\n", "degenerate_repetition"),
    ("the responses of the policy model are repetitive after 200 steps\n", "degenerate_repetition"),
    ("after RLHF the bot started to reply repeatedly with the first sentence\n", "degenerate_repetition"),
    ("our checkpoint often produces repeated phrases compared with the base model\n", "degenerate_repetition"),
    ("for any question it answers with \"{} {} {} {} {} {}\"\n", "degenerate_repetition"),
    ("the policy collapsed onto one fixed reply for every email by step 300\n", "entropy_collapse"),
    ("By epoch 2 it had locked itself into the same action whatever the state was.\n", "entropy_collapse"),
    ("it settled on one fixed reply that the judge scores 0.4 regardless of the email\n", "entropy_collapse"),
    ("the reward is 0 even for completions whose final answer is right\n", "reward_function_misconfig"),
    ("correct solutions get 0 reward from the unit-test scorer\n", "reward_function_misconfig"),
    ("every score == 0 during the first 100 steps\n", "reward_function_misconfig"),
    ("after step 40 the weights have NaNs and generation crashes\n", "grad_norm_nan"),
    ("we found NaN parameters in the saved actor checkpoint\n", "grad_norm_nan"),
    ("训练后权重中出现了NaN\n", "grad_norm_nan"),
    ("large log prob gap between vLLM and FSDP right after loading the checkpoint\n", "rollout_train_logprob_mismatch"),
    ("the logprob diff jumped after we enabled fp8 rollout\n", "rollout_train_logprob_mismatch"),
    ("on 2 nodes rank 5 is stuck in all_reduce after step 30\n", "nccl_timeout"),
    ("the upgrade led to a deadlock in multi-node training\n", "nccl_timeout"),
    ("after 400 steps without KL the outputs devolved into word salad\n", "entropy_explosion"),
    ("the model turned into random tokens once the lr was raised\n", "entropy_explosion"),
    ("DPO run: margins grow and we reached a 100% preference accuracy in 200 steps\n", "dpo_overoptimization_high_lr"),
    ("after 200 steps the policy learned a cheap trick that the judge loves\n", "reward_hacking_shortcut"),
    ("the policy learned to append \"thank you so much\" to every answer\n", "reward_hacking_shortcut"),
    ("the model learned to add the phrase \"great movie\" at the end of each review\n", "reward_hacking_shortcut"),
]

HEALTHY_R16 = [
    ("vLLM and HF generate the same token at every position with greedy decoding\n", "degenerate_repetition"),
    ("the model outputs the same token as the reference implementation\n", "degenerate_repetition"),
    ("each prompt is repeated 8 times (num_generations=8) and the responses are scored\n", "degenerate_repetition"),
    ("we use repetition_penalty=1.1 to stop the model from generating repeated text\n", "degenerate_repetition"),
    ("Assistant: Edge is a web browser made by Microsoft.\n", "degenerate_repetition"),
    ("output: 0 0 0 0 0 0 0 0\n", "degenerate_repetition"),
    ("we settled on a single answer format for all prompts\n", "entropy_collapse"),
    ("each prompt has a single reference answer in the dataset\n", "entropy_collapse"),
    ("correct answers get a reward of 1 and wrong ones 0\n", "reward_function_misconfig"),
    ("the reward is 0 even when the format is right but the answer is wrong\n", "reward_function_misconfig"),
    ("incorrect solutions get 0 reward, as designed\n", "reward_function_misconfig"),
    ("# check whether the parameters contain NaN after each update\n", "grad_norm_nan"),
    ("no weights have NaNs after the fix\n", "grad_norm_nan"),
    ("logprob diff stays low (0.003) after resume\n", "rollout_train_logprob_mismatch"),
    ("# bucket size: 2048 MB fits every weight of this model\n", "vllm_weight_sync_failure"),
    ("multi-node: the fix avoids the hang we had in barrier\n", "nccl_timeout"),
    ("multi-node run: the broadcast finished in 3 s\n", "nccl_timeout"),
    ("we add gaussian noise to the reward of each sample\n", "entropy_explosion"),
    ("the tokenizer turned the emoji into random characters, so we filtered them\n", None),
    ("DPO eval: 100% accuracy is impossible on this noisy preference set\n", "dpo_overoptimization_high_lr"),
    ("we use a lazy loading strategy for the dataset\n", "reward_hacking_shortcut"),
    ("the collator learned to append the EOS token to every sequence\n", "reward_hacking_shortcut"),
    ("NaN weights are a fatal failure, so the checkpoint loader refuses them\n", "grad_norm_nan"),
]


# ----------------------------------------------------------------------------- round 17 (batch 18's misses)
# Start-up GPU-count refusals as the frameworks print them (signature gpu_count_short: veRL's resource-pool check, ROLL's
# ResourceManager, vLLM's Ray executor, Ray's infeasible-task warning; vLLM's "No supported device detected" in
# no_cuda_device), zero-variance groups told in run reports (every sample scored 0, reward_std falling to 0,
# frac_reward_zero_std rising to 1, a share of groups with zero variance, groups all-correct/all-wrong, a flat score),
# an entropy runaway / near-maximum entropy, a KL far above its target; and round 16's noticed false readings: a hang
# denied after its subject, the same output under greedy decoding, an OOM told as fixed, an OOM phase word inside
# another word, a collapse in another subject's clause; and a documented development miss's kind (trinityrft-608):
# truncated responses told as kept for training like finished ones.
FIRST_R17 = [
    ("(TaskRunner pid=2213) ValueError: Total available GPUs 4.0 is less than total desired GPUs 8\n", "needs_gpu"),
    ("ValueError: Total available GPUs 0.0 is less than total desired GPUs 16\n", "needs_gpu"),
    ("AssertionError: The Ray clusters(ray_num_nodes: 1) cannot meet the required number of nodes (`num_nodes`4). "
     "required per-node GPU >= 8\n", "needs_gpu"),
    ("AssertionError: num_gpus 16 > available_gpu 8.0\n", "needs_gpu"),
    ("ValueError: The number of required GPUs exceeds the total number of available GPUs in the cluster.\n", "needs_gpu"),
    ("ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}, {'GPU': 1.0}] within 1800 "
     "seconds. See `ray status` to make sure the cluster has enough resources.\n", "needs_gpu"),
    ("2025-03-02 10:11:12,345\tWARNING worker.py:1034 -- The actor or task with ID ffffa1 cannot be scheduled right now. "
     "It requires {GPU: 2.000000}, {CPU: 1.000000} for placement, however the cluster currently cannot provide the "
     "requested resources.\n", "needs_gpu"),
    ("  File \"vllm/config.py\", line 500, in __init__\n    raise RuntimeError(\"No supported device detected.\")\n"
     "RuntimeError: No supported device detected.\n", "needs_gpu"),
    # an OOM phase word inside another word is no phase ('factor updated' is no actor update)
    ("the loss scale factor updated to 1024, then torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
     "GiB\n", "oom_gpu"),
]

TOP3_R17 = [
    ("every rollout receives a reward of 0 because the parser never finds the boxed answer\n", "zero_variance_groups"),
    ("all the trajectories scored zero in the first 50 steps\n", "zero_variance_groups"),
    ("- Reward flat at 0.31 for the whole run\n", "zero_variance_groups"),
    ("frac_reward_zero_std: rose to 1.0 after the lr change\n", "zero_variance_groups"),
    ("after the lr change the reward_std dropped to 0 and never recovered\n", "zero_variance_groups"),
    ("about 60% of the prompt groups had zero reward variance\n", "zero_variance_groups"),
    ("by epoch 2 most groups were all-wrong on the hard split\n", "zero_variance_groups"),
    ("we saw an entropy explosion around step 120\n", "entropy_explosion"),
    ("by step 60 the policy was close to maximum entropy over the vocabulary\n", "entropy_explosion"),
    ("the KL is way above the target of 6 after 100 updates\n", "kl_explosion"),
    # truncated responses kept for training like finished ones (TRL mask_truncated_completions keeps them out)
    ("in our agent runs the truncated completions are still used for training like any other\n", "response_truncation"),
    ("length-truncated samples were kept as normal experiences in the buffer\n", "response_truncation"),
]

HEALTHY_R17 = [
    ("the run is fine now, no hang anymore after NCCL_P2P_DISABLE=1 on 2 nodes\n", "nccl_timeout"),
    ("with greedy decoding the model gives the same answer for every prompt on each rerun\n", "reward_hacking"),
    ("at temperature 0 the policy returns the same output for each prompt, as expected\n", "reward_hacking"),
    ("each sample gets 0 or 1 from the verifier\n", "zero_variance_groups"),
    ("each completion gets 0 if the answer is wrong\n", "zero_variance_groups"),
    ("groups with zero reward variance are filtered out by dynamic sampling\n", "zero_variance_groups"),
    ("the reward_std falls to 0.3 as the policy improves\n", "zero_variance_groups"),
    ("we pay a reward flat rate of 0.1 per tool call\n", "zero_variance_groups"),
    ("we use maximum entropy RL as the objective\n", "entropy_explosion"),
    ("an entropy bonus helps to prevent an entropy explosion\n", "entropy_explosion"),
    ("entropy kept increasing while the reward collapsed to zero\n", "entropy_collapse"),
    ("the KL stays well below the target of 0.1\n", "kl_explosion"),
    ("# after we fixed the OOM the run trained for 300 steps\n", "oom_gpu"),
    ("# OOM fix: lower micro batch size; the run is healthy now\n", "oom_gpu"),
    ("ray status shows 16 GPUs and the placement group of 8 bundles was created\n", "needs_gpu"),
    ("The actor or task with ID ab12 cannot be scheduled right now. It requires {CPU: 1.000000} for placement, however "
     "the cluster currently cannot provide the requested resources.\n", "needs_gpu"),
    ("the Total available GPUs check passes: 16 GPUs for 16 desired\n", "needs_gpu"),
    ("When enabled, truncated completions are excluded from the loss calculation\n", "response_truncation"),
    ("truncated responses are treated as failures and get reward 0\n", "response_truncation"),
    ("truncated responses are masked, so they are not used for training\n", "response_truncation"),
]


# ----------------------------------------------------------------------------- round 18 (batch 19's misses)
# Weight-update crashes read by their strings, not their surface: torch's store client timing out on TRL's default
# weight-update group port 51216 (trl/generation/vllm_client.py group_port, GRPOConfig.vllm_group_port), a vLLM weight
# loader given keywords it does not take during a weight update (vllm weight_utils.py default_weight_loader(param,
# loaded_weight)); run reports: tool-call parse failures at most turns or the tool-call format told not produced, a GPU
# utilisation level told before its noun, a mini-batch size told zero (veRL's 'should be larger than 0 after
# normalization' assert), and an OOM only as a condition ('unless OOM') is no OOM.
FIRST_R18 = [
    ("[E1021 10:00:00.100 socket.cpp:1019] [c10d] The client socket has timed out after 600000ms while trying to "
     "connect to (192.168.1.7, 51216).\n", "vllm_weight_sync_failure"),
    ("[W1021 10:00:01.2 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host node-3:51216 - retrying "
     "(try=2, timeout=600000ms, delay=1000ms)\n", "vllm_weight_sync_failure"),
    ("(EngineCore_0 pid=7) Exception: Call to collective_rpc method failed: FusedMoE.weight_loader() got an unexpected "
     "keyword argument 'return_success'\n", "vllm_weight_sync_failure"),
    ("INFO pushing the policy weights with load_weights\nTypeError: default_weight_loader() got an unexpected keyword "
     "argument 'shard_id'\n", "vllm_weight_sync_failure"),
]

TOP3_R18 = [
    ("we ran at low 12% GPU utilization for the whole rollout phase\n", "low_throughput"),
    ("the job has only 20% GPU utilization on the 8 trainer GPUs\n", "low_throughput"),
    ("the policy's tool-call parse failure rate was 81% at step 200\n", "agent_format_protocol_failure"),
    ("reward/parse_failure_rate: 0.72 in the last eval\n", "agent_format_protocol_failure"),
    ("after the SFT warm start the model is not producing the expected tool call format\n",
     "agent_format_protocol_failure"),
    ("after normalization the ppo_mini_batch_size became 0 on 16 GPUs\n", "batch_size_misconfig"),
    ("the critic mini batch size is 0 per rank\n", "batch_size_misconfig"),
    # the Chinese of 'abnormally long' (length_growth_written), and generations told repeatedly hitting the length limit
    ("训练到800步后 max_completion_length 异常升高，reward 一直下降\n", "response_length_explosion"),
    ("后期生成结果频繁达到最大长度，格式奖励也下降了\n", "response_length_explosion"),
]

HEALTHY_R18 = [
    ("vllm_group_port defaults to 51216; keep it open between trainer and server\n", "vllm_weight_sync_failure"),
    ("default_weight_loader(param, loaded_weight) copies one tensor into the parameter\n", "vllm_weight_sync_failure"),
    ("to avoid low GPU utilization, enable dynamic batch sizes\n", "low_throughput"),
    ("# larger models should work as well (unless OOM), so we move on to the 7B run\n", "oom_gpu"),
    ("the parse failure rate fell from 93% to 4% after the prompt fix\n", "agent_format_protocol_failure"),
    ("the parser checks that the model produces the correct tool call format\n", "agent_format_protocol_failure"),
    ("ppo_mini_batch_size = 0.25 of train_batch_size in this recipe\n", "batch_size_misconfig"),
    ("ppo_mini_batch_size = 64 and rollout.n = 8 on 16 GPUs\n", "batch_size_misconfig"),
    ("我们设置了 max_length 8000，模型的回复长度一直正常\n", "response_length_explosion"),
    ("把最大长度调大到 16k 之后训练稳定\n", "response_length_explosion"),
]


def test_weight_loader_keyword_error_without_a_weight_update_is_not_a_sync_failure() -> None:
    """At start-up (no weight update in the input) a loader's keyword mismatch is a model/vLLM mismatch, not a sync."""
    found = _cats("TypeError: weight_loader() got an unexpected keyword argument 'shard_id'\n")
    assert "vllm_weight_sync_failure" not in found, found


def test_store_timeout_on_another_port_is_not_read_as_the_weight_update_group() -> None:
    found = _cats("[c10d] The client socket has timed out after 600000ms while trying to connect to (10.0.0.2, 29500).\n")
    assert found[:1] != ["vllm_weight_sync_failure"], found


# ----------------------------------------------------------------------------- round 19 (batch 20's misses)
# A weight-update failure read by where it is raised: an exception through the engine's collective_rpc frame on a server
# that served a weight-update route (TRL trl/scripts/vllm_serve.py runs /init_communicator/ and /update_named_param/ as
# fire-and-forget collective RPCs); vLLM V1's LLMEngine without model_executor in an RL trainer, and TRL's own name for
# the weight sync ('move the model to vLLM', GRPOTrainer._move_model_to_vllm) told failing; a run of '!' (token id 0) as
# the output of a LoRA run (veRL #3159, PR #3019: sleep level 2 discards the base weights the LoRA sync does not
# reload). A JVM out of memory is host memory (HotSpot's hs_err report, java.lang.OutOfMemoryError); a run told stalled
# in its generation phase is generation-bound.
FIRST_R19 = [
    ('INFO:     10.0.0.5:4211 - "POST /update_named_param/ HTTP/1.1" 200 OK\n'
     "Traceback (most recent call last):\n"
     '  File "/usr/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 312, in collective_rpc\n'
     "    return self.model_executor.collective_rpc(method, timeout, args, kwargs)\n"
     "RuntimeError: The size of tensor a (4096) must match the size of tensor b (2048)\n", "vllm_weight_sync_failure"),
    ("[rank0]: starting GRPO with use_vllm=True (trl 0.16.1, vllm 0.8.2)\n"
     "[rank0]: AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n", "vllm_weight_sync_failure"),
    ('Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n'
     "\tat org.apache.lucene.util.BytesRefHash.rehash(BytesRefHash.java:395)\n", "oom_host_cpu"),
    ("There is insufficient memory for the Java Runtime Environment to continue.\n"
     "Native memory allocation (malloc) failed to allocate 1048576 bytes for AllocateHeap\n", "oom_host_cpu"),
]

TOP3_R19 = [
    ("moving the policy weights into vLLM fails with vllm 0.8.3 and trl 0.15\n", "vllm_weight_sync_failure"),
    ("got an error when loading the model onto vLLM in the GRPO trainer\n", "vllm_weight_sync_failure"),
    ("actor_rollout_ref.model.lora_rank=32\n[response] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
     "vllm_weight_sync_failure"),
    ("with LoRA enabled the generated answers are all \"!!!!!!!!!!\" after step 1\n", "vllm_weight_sync_failure"),
    ("用lora训练以后模型输出全是叹号\n", "vllm_weight_sync_failure"),
    ("the job seems stuck in the generation phase: no step finished after 20 hours\n", "generation_bound"),
    ("训练一直卡在生成阶段，一个 step 都没有跑完\n", "generation_bound"),
]

HEALTHY_R19 = [
    ('  File "/usr/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 312, in collective_rpc\n',
     "vllm_weight_sync_failure"),
    ("the WebShop server runs with -Xmx8g, enough for 64 environments\n", "oom_host_cpu"),
    ("if generation gets stuck in the rollout phase, lower max_new_tokens\n", "generation_bound"),
    ("rollout generation is not stuck: steps finish every 40 s\n", "generation_bound"),
    ("we move the model to vLLM after every step with LoRA (lora_rank 16)\n", "vllm_weight_sync_failure"),
]


def test_exclamation_output_without_lora_is_not_read_as_a_weight_sync() -> None:
    """Without LoRA in view a run of '!' stays nan_written's reading (a NaN policy), not the LoRA base-weight loss."""
    found = _cats("[response] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n")
    assert "vllm_weight_sync_failure" not in found and "grad_norm_nan" in found, found


def test_model_executor_missing_outside_an_rl_trainer_is_not_a_weight_sync() -> None:
    found = _cats("AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n")
    assert "vllm_weight_sync_failure" not in found, found


def test_collective_rpc_frame_without_a_weight_update_is_not_a_weight_sync() -> None:
    found = _cats("Traceback (most recent call last):\n"
                  '  File "/usr/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 312, in collective_rpc\n'
                  "RuntimeError: sleep mode is not enabled\n")
    assert "vllm_weight_sync_failure" not in found, found


# ----------------------------------------------------------------------------- round 20 (batch 21's misses)
# A rate told only 0 or 1 where a batch of one is set (a mean over one sample: TRL dpo_trainer.py rewards/accuracies);
# keyword arguments the writer had to remove for a call to run (TRL 0.13 DPOTrainer no longer takes beta / max_length);
# a printed sample running one letter twenty times (neural text degeneration); the generation share told as "most of"
# the step; a length told grown into its cap (read also on a sentence the metric reader took values from); a shortcut
# or guessing told as what the policy learned; a veRL timing record pasted one key per line.
FIRST_R20 = [
    ("timing_s/step:   120.5\ntiming_s/gen:    90.2\ntiming_s/update_actor:  20.1\n", "generation_bound"),
]

TOP3_R20 = [
    ("per_device_train_batch_size: 1\nthe logged rewards/accuracies are always either 0 or 1\n",
     "metric_artifact_check_first"),
    ("batch size 设为 1 之后，accuracy 不是0就是1\n", "metric_artifact_check_first"),
    ("PPOTrainer refused to start, so we had to remove the following arguments: kl_coef, cliprange\n",
     "config_key_error"),
    ("It only trains after I comment out these three parameters in the trainer call.\n", "config_key_error"),
    ("step 3 sample: The answer isssssssssssssssssssssssssssssssss\n", "degenerate_repetition"),
    ("Each step takes ~15 minutes and the vast majority of that time is spent in generation.\n", "generation_bound"),
    ("rollout takes most of the step; the update is fast\n", "generation_bound"),
    ("completion length grew from 300 to 2048 tokens (max_completion_length) within 50 steps\n",
     "response_length_explosion"),
    ("the response length went from 400 to 4096 (the cap) and the reward dropped from 0.6 to 0.1\n",
     "response_length_explosion"),
    ("all responses were generated up to the maximum token limit after step 30\n", "response_length_explosion"),
    ("the policy learned a shortcut: it prints a bare number with no working\n", "reward_hacking_shortcut"),
    ("after 100 steps the model learned to guess: short outputs, no reasoning\n", "reward_hacking_shortcut"),
    ("accuracy increased from 0.2 to 0.5, but through guessing the final number\n", "reward_hacking_shortcut"),
]

HEALTHY_R20 = [
    ("the verifier's reward is always 0 or 1 (binary), with per-device batch 8\n", "metric_artifact_check_first"),
    ("Should I remove the following parameters from the config?\n", "config_key_error"),
    ("You can comment out the following parameters if you do not need them.\n", "config_key_error"),
    ("output: ==========================================\n", "degenerate_repetition"),
    ("most of the time is spent in the reward function, not in generation\n", "generation_bound"),
    ("the response length went from 900 to 600 tokens, well below the cap\n", "response_length_explosion"),
    ("we add a format reward to avoid shortcuts\n", "reward_hacking_shortcut"),
]


def test_a_timing_block_without_namespaced_keys_is_not_a_record() -> None:
    """Only namespaced metric keys one per line are a record: a config echo ('max_response_length: 1024',
    'gpu_memory_utilization: 0.3') is not."""
    found = _cats("max_response_length: 1024\ngpu_memory_utilization: 0.3\ntrain_batch_size: 16\n")
    assert "generation_bound" not in found, found


# ----------------------------------------------------------------------------- round 21 (batch 22's misses)
# The weight-update call sites as a native or py-spy stack prints them (SGLang update_weights_from_tensor /
# _distributed / _disk, NeMo-RL refit_policy_generation, TRL update_named_param), a real CUDA OOM in the same frames
# staying the engine's OOM; an OOM named as what a change fixes is no OOM; garbled output ('!!!!', exclamation marks)
# told as starting after the weight sync, also in Chinese; a vLLM KV-cache allocation at start-up as the rollout
# engine's memory, and the Chinese of a GPU out of memory; the generation share as a ratio's label (gen time / step
# time: 73%); a throughput told fallen to half in one sentence; a clip fraction told at 0.3 or more; the Chinese of a
# quantity all NaN.
FIRST_R21 = [
    ("Thread 0x7F2A (active): \"MainThread\"\n    cuStreamSynchronize\n"
     "    update_weights_from_distributed (sglang/srt/managers/scheduler.py:2210)\n"
     "    event_loop_normal (sglang/srt/managers/scheduler.py:980)\n"
     "the rollout server hangs here after the first step\n", "vllm_weight_sync_failure"),
    ("#4 0x00007f3b2c1d in refit_policy_generation ()\n#5 0x00007f3b2c9e in grpo_train ()\n", "vllm_weight_sync_failure"),
    # a real CUDA OOM in the same frames is the engine's OOM (the frame yields to it)
    ("  File \"/opt/sglang/srt/managers/scheduler.py\", line 2210, in update_weights_from_tensor\n"
     "    self.tp_worker.update_weights_from_tensor(recv_req)\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "oom_rollout_wakeup"),
    # the engine allocating its KV cache at start-up (vLLM V0 _initialize_kv_caches -> initialize_cache)
    ("Traceback (most recent call last):\n"
     "  File \"/usr/lib/python3/site-packages/vllm/engine/llm_engine.py\", line 429, in _initialize_kv_caches\n"
     "    self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB\n", "oom_rollout_wakeup"),
    ("# 训练时 vllm 初始化报显存不足\n  File \"/site-packages/vllm/engine/llm_engine.py\", line 276, in __init__\n"
     "    self._initialize_kv_caches()\n", "oom_rollout_wakeup"),
]

TOP3_R21 = [
    ("After the first weight sync to the vLLM server every completion degenerates into !!!!!!!!!!!!\n",
     "vllm_weight_sync_failure"),
    ("since the first weights update the rollouts are garbled\n", "vllm_weight_sync_failure"),
    ("每次同步权重后，模型的输出出现乱码\n", "vllm_weight_sync_failure"),
    ("| rollout time / step time | 81.5% |\n", "generation_bound"),
    ("gen time / step time: 64%\n", "generation_bound"),
    ("Around step 300 throughput fell from 2400 to 1100 tokens/s with nothing else changed\n", "low_throughput"),
    ("tokens/s dropped 3000 -> 1200 after the second node joined\n", "low_throughput"),
    ("actor/pg_clipfrac reached 0.41 on the very first update\n", "rollout_train_logprob_mismatch"),
    ("clip fraction of 45% from step 1\n", "rollout_train_logprob_mismatch"),
    ("actor/pg_loss、ppo_kl 每步全 NaN\n", "grad_norm_nan"),
    ("从第 3 步起 entropy_loss 与 kl 均 NaN\n", "grad_norm_nan"),
]

HEALTHY_R21 = [
    ("Fix the OOM issue in update_weights_from_tensor for MTP models (this PR)\n", "oom_rollout_wakeup"),
    ("update_weights_from_tensor finished in 2.1 s\n", "vllm_weight_sync_failure"),
    ("if the rollouts are garbled after a weight sync, check the conversion\n", "vllm_weight_sync_failure"),
    ("| generation / step | 31% |\n", "generation_bound"),
    ("throughput dropped from 2400 to 2200 tokens/s at the eval step\n", "low_throughput"),
    ("pg_clipfrac 0.02, critic/vf_clipfrac 0.5\n", "rollout_train_logprob_mismatch"),
    ("grad_norm 没有 nan, loss 不是全 0\n", "grad_norm_nan"),
    # a Chinese negator right before the symptom (an error on main before round 21)
    ("梯度没有变成 nan，loss 正常\n", "grad_norm_nan"),
    ("训练 50 步，loss 没有出现 nan\n", "grad_norm_nan"),
    ("loss 不是 nan，只是很大\n", "grad_norm_nan"),
]


# round 22 (batch 23's misses): one negation for every described failure (English and Chinese, with a verb of occurring
# or a device word between, one item coordinated under the negator), an OOM told as avoided, XLA's out-of-memory status
# (RESOURCE_EXHAUSTED while allocating a device buffer, TPU HBM) and Apple Metal's command-buffer out-of-memory status.
FIRST_R22 = [
    ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 1.00G. "
     "That was not possible. There are 512.00M free.; (0x0x0_HBM0)\n", "oom_gpu"),
    ("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 bytes.\n", "oom_gpu"),
    ("Error: command buffer exited with error status.\n\tThe Metal Performance Shaders operations encoded on it may not "
     "have completed.\n\tError: \n\t(null)\n\tInsufficient Memory\n\t(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n",
     "oom_gpu"),
    # a printed rollout running one chat-template special token (Holtzman et al. 1904.09751, as round 20's letter run)
    ("[DEBUG] rollout='</tool_call><|box_start|>\\n<|box_start|>\\n<|box_start|>\\n<|box_start|>\\n<|box_start|>\\n"
     "<|box_start|>\\n<|box_start|>\\n<|box_start|>\\n<|box_start|>\\n<|box_start|>\\n<|box_start|>'\n",
     "degenerate_repetition"),
    # all exclamation marks told in Chinese (token id 0 sampled from NaN logits), with the GPU count written N卡
    ("8卡中有2卡在第三步以后输出全是感叹号，loss 一直是 0\n", "grad_norm_nan"),
]

TOP3_R22 = [
    # the entropy told fallen by orders of magnitude or to 1e-3 or less (Cui et al. 2505.22617)
    ("policy entropy dropped by five orders of magnitude over 300 steps\n", "entropy_collapse"),
    ("by step 200 the token entropy is down to ~3e-06\n", "entropy_collapse"),
    ("actor/entropy went from 0.9 to 2e-05 while the reward hit 0\n", "entropy_collapse"),
    # the advantages told all zero (GRPO: equal rewards in a group), in English and Chinese
    ("all-zero advantages on 40% of the steps\n", "zero_variance_groups"),
    ("第 3 到 9 步 advantage 全为 0\n", "zero_variance_groups"),
]

HEALTHY_R22 = [
    # padding printed with a batch is no repetition (Qwen2's pad token is <|endoftext|>)
    ("input_ids: hi<|endoftext|><|endoftext|><|endoftext|><|endoftext|><|endoftext|><|endoftext|><|endoftext|>"
     "<|endoftext|><|endoftext|><|endoftext|><|endoftext|>\n", "degenerate_repetition"),
    ("8卡在 3 小时内跑完 100 步\n", "nccl_timeout"),
    ("actor.entropy_coeff: 1e-3\n", "entropy_collapse"),
    ("advantage 均值为 0（组内中心化）\n", "zero_variance_groups"),
    ("训练跑完 200 步，无 OOM、无崩溃，指标正常\n", "oom_gpu"),
    ("8 卡跑了两天，没有 OOM\n", "oom_gpu"),
    ("全程未出现 OOM 或 NaN\n", "oom_gpu"),
    ("未出现显存不足\n", "oom_gpu"),
    ("ran 300 steps with no CUDA out of memory\n", "oom_gpu"),
    ("the step-40 OOM was avoided by halving the micro-batch\n", "oom_gpu"),
    ("the job ran for a day without any hang or NCCL timeout\n", "nccl_timeout"),
    ("没有发生 NCCL 超时\n", "nccl_timeout"),
    ("no nan/inf in the loss over 500 steps\n", "grad_norm_nan"),
]


def test_a_question_about_fixing_an_oom_stays_an_oom() -> None:
    """An OOM named as what a change fixes is not this run's OOM; a question or request to fix one is."""
    assert any(c.startswith("oom") for c in _cats("How to fix the CUDA OOM issue during generation?\n"))
    assert any(c.startswith("oom") for c in _cats("please help me fix this OOM problem in the rollout\n"))


def test_a_dummy_sampler_run_at_start_up_stays_a_plain_gpu_oom() -> None:
    """vLLM's start-up profiling (the dummy forward's peak) is a plain GPU OOM, even inside _initialize_kv_caches
    (V1 profiles there): only the KV-cache allocation itself is the engine's memory budget."""
    text = ("  File \"/site-packages/vllm/v1/engine/core.py\", line 120, in _initialize_kv_caches\n"
            "    available_gpu_memory = self.model_executor.determine_available_memory()\n"
            "  File \"/site-packages/vllm/v1/worker/gpu_worker.py\", line 200, in determine_available_memory\n"
            "    self.model_runner.profile_run()\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB\n")
    assert _cats(text)[:1] == ["oom_gpu"], _cats(text)


# round 23 (batch 24's misses): torch autograd anomaly mode's NaN in a backward node (torch/csrc/autograd/engine.cpp
# Engine::evaluate_function: "Function '<node>' returned nan values in its <i>th output."), a non-finite gradient, read
# before the backward frames' update phase; an OOM message whose sentence runs on to the next line, which names the
# phase, and the update frames of veRL 0.9.1's engine workers (train_mini_batch, optimizer_step) and OpenRLHF 0.11.2
# (strategy.optimizer_step); the generation cap told too small, and a reward told falling under a configured cap (an
# info: check the truncated share first).
_DS_BACKWARD = ('  File "/site-packages/accelerate/accelerator.py", line 2240, in backward\n'
                "    self.deepspeed_engine_wrapped.backward(loss, **kwargs)\n"
                '  File "/site-packages/deepspeed/runtime/engine.py", line 2053, in backward\n'
                "    self.optimizer.backward(loss, retain_graph=retain_graph)\n")
FIRST_R23 = [
    ("[rank3]: RuntimeError: Function 'SoftmaxBackward0' returned nan values in its 0th output.\n", "grad_norm_nan"),
    ("RuntimeError: Function 'DivBackward0' returned nan values in its 1th output.\n" + _DS_BACKWARD, "grad_norm_nan"),
    (_DS_BACKWARD + "RuntimeError: Function 'CompiledFunctionBackward' returned nan values in its 2th output.\n",
     "grad_norm_nan"),
    ('  File "/site-packages/openrlhf/trainer/ray/ppo_actor.py", line 355, in training_step\n'
     "    self.strategy.backward(loss, self.actor, self.actor_optim)\n"
     "RuntimeError: Function 'ExpBackward0' returned nan values in its 0th output.\n", "grad_norm_nan"),
    # an OOM whose sentence names the phase on the next line
    ("The job crashed with torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB during\n"
     "the actor update (update_actor) at step 40.\n", "oom_actor_train"),
    ("RuntimeError: CUDA error: out of memory inside ->\nActorPPOTrainer.training_step -> strategy.optimizer_step\n",
     "oom_actor_train"),
    ("torch.OutOfMemoryError: CUDA out of memory (3.2 GiB) in\ncompute_log_prob -> logprobs_from_logits\n",
     "oom_actor_logprob"),
    # not a sentence that runs on: a later line naming a phase is not where the OOM happened
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB\n"
     "(WorkerDict pid=1) update_policy finished in 3.2 s\n", "oom_gpu"),
    ("torch.OutOfMemoryError: CUDA out of memory (12 GiB) at\nstep 188 of 191.\n", "oom_gpu"),
    # veRL 0.9.1's engine workers and OpenRLHF 0.11.2's optimizer step as traceback frames before the OOM
    ('  File "/site-packages/verl/workers/engine_workers.py", line 250, in train_mini_batch\n'
     "    output = self.train_batch(mini_batch)\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB\n", "oom_actor_train"),
    ('  File "/site-packages/openrlhf/utils/deepspeed/deepspeed.py", line 190, in optimizer_step\n'
     "    optimizer.step()\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB\n", "oom_actor_train"),
]

TOP3_R23 = [
    # the generation cap told too small (TRL docs: cutting generations off too soon)
    ("# max_response_length=1024 is too short for long CoT, most answers never finish\n", "response_truncation"),
    ("# The 2048 token limit is not enough for the model to finish its reasoning on AIME\n", "response_truncation"),
    ("# I think 4096 tokens are not enough for Qwen3 thinking mode\n", "response_truncation"),
    ("# with max_completion_length 256 there are not enough tokens to complete the proof\n", "response_truncation"),
    ("# max new tokens is capped at 3000, which is not enough for the hard problems\n", "response_truncation"),
    # a reward told falling under a configured cap (DeepScaleR, rllm #33)
    ("python train_grpo.py --max_completion_length 1024\n# after step 300 the reward went down steadily\n",
     "response_truncation"),
    ("data.max_response_length=2048\n# the mean reward drops from 0.6 to 0.4 after 200 steps\n", "response_truncation"),
    ("ppo.gen.max_new_tokens=8192\n# 训练到后面 reward 反而下降\n", "response_truncation"),
]

HEALTHY_R23 = [
    ("# max_new_tokens: raise it if 1024 is too short for your task\n", "response_truncation"),
    ("# max_new_tokens=4096 is more than enough for gsm8k\n", "response_truncation"),
    ("# Is max_completion_length=512 too small?\n", "response_truncation"),
    ("# the reward drops after step 300, lr 1e-6\n", "response_truncation"),
    ("--max_completion_length 1024\n# the reward rises steadily to 0.8\n", "response_truncation"),
    ("max_completion_length: 512\n# rewards/chosen decreases while rewards/margins grows\n", "response_truncation"),
    ("max_new_tokens=2048\n# the reward does not decrease at all\n", "response_truncation"),
    # anomaly mode set up or warned about is no NaN
    ("torch.autograd.set_detect_anomaly(True)  # find the op whose backward returns nan values\n", "grad_norm_nan"),
    ("UserWarning: Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
     "for debugging.\n", "grad_norm_nan"),
]


def test_a_nan_in_a_backward_node_is_no_oom() -> None:
    """Anomaly mode's NaN raised through the update's backward frames (accelerate, DeepSpeed) is a non-finite gradient:
    no OOM reading at all, not even a similar case's (trl-2564 was read as an actor-update OOM by retrieval)."""
    text = ("RuntimeError: Function 'Log1PBackward0' returned nan values in its 0th output.\n"
            '  File "/site-packages/transformers/trainer.py", line 3688, in training_step\n'
            "    self.accelerator.backward(loss, **kwargs)\n" + _DS_BACKWARD)
    cats = _cats(text)
    assert cats[:1] == ["grad_norm_nan"] and not any(c.startswith("oom") for c in cats), cats


# round 24 (batch 25's misses): the train-inference mismatch vocabulary (train-infer, NeMo-RL's logprob error above a
# value, the rollout importance-sampling ratio told at 2 or more: ms-swift is_weight_mean, veRL rollout_corr/rollout_is_mean);
# the frameworks' batch arithmetic (veRL DataProto.chunk's "only support equal chunk" is no config error; torch's view size
# error where the rewards are grouped; the batch size lowered by auto_find_batch_size in a group trainer); rollouts that
# degrade at lr 0 and a reward at 0 after each validation (the weight update); a logged loss that scales with the
# micro-batches and NeMo-RL's clamped ratio outside its clamp interval (metric artifacts); the Chinese of a GPU's memory
# (CUDA/GPU/显卡 + 内存不足); responses without an EOS token.
_GROUP_VIEW = "    mean_grouped_rewards = rewards.view(-1, self.num_generations).mean(dim=1)\n"
FIRST_R24 = [
    ("AssertionError: only support equal chunk. Got size of DataProto 6 and chunk 4.\n", "batch_size_misconfig"),
    (_GROUP_VIEW + "RuntimeError: shape '[-1, 8]' is invalid for input of size 12\n", "batch_size_misconfig"),
    ('  File "rollout.py", line 88, in post_process_rewards\n'
     "    rewards = rewards.reshape(-1, n_samples_per_prompt)\n"
     "RuntimeError: shape '[-1, 16]' is invalid for input of size 40\n", "batch_size_misconfig"),
    ("  'probs_ratio_min': 0.21,\n  'probs_ratio_clamped_max': 0.35,\n", "metric_artifact_check_first"),
]

TOP3_R24 = [
    ("# the train-infer mismatch grows after step 100\n", "rollout_train_logprob_mismatch"),
    ("# train/infer mismatch is large with the fp8 rollout\n", "rollout_train_logprob_mismatch"),
    ("# the logprob error is above 1.5 on the MoE model\n", "rollout_train_logprob_mismatch"),
    ("# we are tracking down the high logprob error on Megatron\n", "rollout_train_logprob_mismatch"),
    ("# rollout_corr/rollout_is_mean: 2.7 at step 0\n", "rollout_train_logprob_mismatch"),
    ("# the importance sampling ratio is ~5 for the MoE model\n", "rollout_train_logprob_mismatch"),
    ("# the IS weights are far from 1 right after the refit\n", "rollout_train_logprob_mismatch"),
    ("# auto_find_batch_size halved my per_device_train_batch_size to 3 and GRPO crashed\n", "batch_size_misconfig"),
    ("# the batch size got reduced automatically by accelerate after the first step\n", "batch_size_misconfig"),
    ("# even with lr=0 the accuracy drops from 0.6 to 0.3 after a few steps\n", "vllm_weight_sync_failure"),
    ("# the reward collapses even at lr 0, so it is not the optimizer\n", "vllm_weight_sync_failure"),
    ("# Reward goes to 0 after each validation step\n", "vllm_weight_sync_failure"),
    ("# after every evaluation the accuracy drops to 0\n", "vllm_weight_sync_failure"),
    ("# the generation engine is not woken up after the offload\n", "vllm_weight_sync_failure"),
    ("# the reported KL scales linearly with the number of micro-batches\n", "metric_artifact_check_first"),
    ("# changing gradient accumulation steps from 1 to 8 changes the logged loss by 8x\n", "metric_artifact_check_first"),
    ("训练第一步就报 GPU 内存不足\n", "oom_gpu"),
    ("跑 vllm 的时候显卡内存溢出了\n", "oom_gpu"),
    ("# no_eos_ratios/avg is nearly 0.6 from the start\n", "response_truncation"),
    ("# most responses never emit an EOS token and hit the cap\n", "response_truncation"),
    ("# the model never stops generating until max_new_tokens\n", "response_truncation"),
]

HEALTHY_R24 = [
    ("# the logprob error is below 1.01, all good\n", "rollout_train_logprob_mismatch"),
    ("# is_weight_mean stays around 1.0\n", "rollout_train_logprob_mismatch"),
    ("# we set rollout_is_threshold=2\n", "rollout_train_logprob_mismatch"),
    ("# clip the importance ratio at 3 (TIS)\n", "rollout_train_logprob_mismatch"),
    ("# importance ratio of 1.02 on average\n", "rollout_train_logprob_mismatch"),
    ("    attn_output = attn_output.view(bsz, q_len, self.hidden_size)\n"
     "RuntimeError: shape '[4, 512, 4096]' is invalid for input of size 8392704\n", "batch_size_misconfig"),
    ("# set auto_find_batch_size=True to avoid OOMs in SFT\n", "batch_size_misconfig"),
    ("# accelerate launch --num_processes 8 train.py, batch size 64\n", "batch_size_misconfig"),
    ("# lr=0 warmup, then the reward falls\n", "vllm_weight_sync_failure"),
    ("# with lr = 0.0001 the reward drops\n", "vllm_weight_sync_failure"),
    ("# the reward drops to 0.3 after validation\n", "vllm_weight_sync_failure"),
    ("# validation accuracy is 0 at step 0 (no training yet)\n", "vllm_weight_sync_failure"),
    ("# a larger micro batch size reduces the training time\n", "metric_artifact_check_first"),
    ("  'probs_ratio_clamped_min': 0.81,\n  'probs_ratio_clamped_max': 1.19,\n", "metric_artifact_check_first"),
    ("数据预处理时内存不足, 机器只有 32G\n", "oom_gpu"),
    ("没有出现 CUDA 内存不足\n", "oom_gpu"),
    ("# I was able to resolve the dependency and OOM issues we were seeing before\n", "oom_gpu"),
    ("# | no_eos_ratios/avg | 0.035 | healthy |\n", "response_truncation"),
    ("# set eos_token_id so generation stops\n", "response_truncation"),
    ("# responses end with EOS properly\n", "response_truncation"),
]


# round 25 (batch 26's misses): training trends told only in words with the same rising verbs (the share of prompts with
# accuracy 1 or 0 / of all-correct groups growing, DAPO; the entropy and the response length rising together, DAPO Figure 4;
# the length still growing after the reward stalls, Dr. GRPO; the gradient norm climbing or swinging wildly, also in
# Chinese); a gap in the tokens' probabilities between the training and the inference side (MiniMax-M1); host memory told
# growing linearly (veRL #429), also in Chinese; zero tool calls in a batch; GPUs at 0% utilisation with full memory; the
# Chinese of a median length at the cap; DPO margins told all zero (TRL rewards/margins).
TOP3_R25 = [
    ("# the fraction of prompts with accuracy equal to 1 keeps growing over training\n", "zero_variance_groups"),
    ("# the number of samples whose accuracy is 0 continues to increase\n", "zero_variance_groups"),
    ("# the share of all-correct groups rose from 20% to 60%\n", "zero_variance_groups"),
    ("# the entropy and the response length both increase after step 200\n", "entropy_explosion"),
    ("# we saw a steady rise of the policy entropy\n", "entropy_explosion"),
    ("# the model keeps producing longer responses even after the reward plateaus\n", "response_length_explosion"),
    ("# response length keeps growing after the accuracy saturates\n", "response_length_explosion"),
    ("# the gradient norm fluctuates wildly after step 3000\n", "grad_norm_spike"),
    ("# grad_norm keeps climbing from step 500 on\n", "grad_norm_spike"),
    ("训练到后期梯度范数不断上升\n", "grad_norm_spike"),
    ("# a large gap in token probabilities between vLLM and the trainer\n", "rollout_train_logprob_mismatch"),
    ("# the mismatch of probabilities between rollout and training grows with the context\n", "rollout_train_logprob_mismatch"),
    ("# system RAM grows steadily every step until the job is killed\n", "oom_host_cpu"),
    ("# host memory increases linearly with the number of rollouts\n", "oom_host_cpu"),
    ("训练时主机内存持续增长, 最后被 kill\n", "oom_host_cpu"),
    ("# the rollouts contain zero tool calls, every trajectory ends after one turn\n", "tool_call_parse_errors"),
    ("# GPUs 4-7 sit at 0% util / 100% memory during the rollout\n", "low_throughput"),
    ("长度的中位数已经卡在 2048 上限\n", "response_truncation"),
    ("# the median completion length is exactly at the max length\n", "response_truncation"),
    ("# the DPO reward margins are all zero from step 1\n", "no_learning_signal_config"),
]

HEALTHY_R25 = [
    ("# the fraction of prompts with accuracy equal to 1 stays around 10%\n", "zero_variance_groups"),
    ("# accuracy keeps growing on the eval set\n", "zero_variance_groups"),
    ("# the entropy falls while the response length increases, as in R1-Zero\n", "entropy_explosion"),
    ("# a rising entropy bonus is used to avoid collapse\n", "entropy_explosion"),
    ("# response length increases along with the training reward\n", "response_length_explosion"),
    ("# we clip the gradient norm at 1.0\n", "grad_norm_spike"),
    ("梯度范数保持稳定\n", "grad_norm_spike"),
    ("# a difference in probabilities between the two classes\n", "rollout_train_logprob_mismatch"),
    ("# host memory does not grow linearly with the fix\n", "oom_host_cpu"),
    ("# we offload the optimizer to host memory\n", "oom_host_cpu"),
    ("显存使用量持续增长\n", "oom_host_cpu"),
    ("# a single-turn task with no tool calls needed\n", "tool_call_parse_errors"),
    ("# GPU util 95%, memory 80%\n", "low_throughput"),
    ("# 长度中位数约 900, 远低于 4096 上限\n", "response_truncation"),
    ("# the DPO reward margins grow steadily to 2.1\n", "no_learning_signal_config"),
]

# round 26 (batch 27's misses): zero-variance groups told by their numbers (a majority of prompts at a pass rate of 90% or
# more; dynamic sampling told losing its sampling efficiency: DAPO filter_groups, veRL num_gen_batches, TRL
# frac_reward_zero_std); GPUs told idle during the rollout (generation's long tail); the length told staying at its cap,
# also in Chinese; the reward at 0 over a whole run, also in Chinese; an entropy spike (DAPO clip-higher); the training
# reward rising while the correctness falls (reward hacking); a trend verb negated or prevented inside its match
# (the one negation, signatures._NEGATOR); a configuration key or a switch's name is no OOM phase.
TOP3_R26 = [
    ("# over half of all prompts achieve accuracy over 90% after 200 steps\n", "zero_variance_groups"),
    ("# 60% of the training prompts have a pass rate of 1 by step 300\n", "zero_variance_groups"),
    ("# the majority of problems reach a pass rate above 0.95\n", "zero_variance_groups"),
    ("# with dynamic sampling we saw a diminishing sampling efficiency late in training\n", "zero_variance_groups"),
    ("# more rollouts are required to fill a batch of fixed size\n", "zero_variance_groups"),
    ("# the GPUs sit idle during the rollout while a few long samples finish\n", "generation_bound"),
    ("# most GPUs remain idle while waiting for a few long rollouts\n", "generation_bound"),
    ("| 生成长度 | 255 | 256 | — 稳定在最大长度 |\n", "response_truncation"),
    ("# the completion length is always at the 256 cap\n", "response_truncation"),
    ("回复长度一直在 1024 上限\n", "response_truncation"),
    ("# the reward was 0 for 150 steps\n", "reward_function_misconfig"),
    ("# the score stayed zero throughout training\n", "reward_function_misconfig"),
    ("训练跑完 150 步后 reward 全程为 0\n", "reward_function_misconfig"),
    ("奖励一直为 0\n", "reward_function_misconfig"),
    ("# the grad norm keeps increasing after step 300\n", "grad_norm_spike"),
    ("# Clip-Higher induces an early entropy spike (steps 10 to 80)\n", "entropy_explosion"),
    ("# a sudden increase in the self-reward, despite a decline in actual output correctness\n", "reward_hacking"),
    ("# the training reward increases while the test accuracy declines\n", "reward_hacking"),
    ("# the loss does not converge and the grad norm keeps increasing\n", "grad_norm_spike"),
    # a launch script pasted beside an OOM told in words: its switches name no phase (the OOM stays a plain GPU OOM,
    # not the rollout wake-up's)
    ("# the run hit a CUDA OOM at the first weight sync\n++actor_rollout_ref.rollout.enable_sleep_mode=False \\\n"
     "actor_rollout_ref.rollout.name=sglang \\\n", "oom_gpu"),
    ("# GPU OOM. We turned off `enable_sleep_mode` because the container lacks cuMem\n", "oom_gpu"),
    # a real OOM message keeps the phase of its frames beside the same switches
    ("++actor_rollout_ref.rollout.enable_sleep_mode=True \\\n"
     '  File "/verl/workers/sharding_manager/fsdp_vllm.py", line 120, in __enter__\n'
     "    self.inference_engine.wake_up()\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "oom_rollout_wakeup"),
]

HEALTHY_R26 = [
    ("# about 20% of prompts achieve accuracy over 90%\n", "zero_variance_groups"),
    ("# to prevent an entropy spike we lower clip_ratio_high\n", "entropy_explosion"),
    ("# there was no entropy spike during training\n", "entropy_explosion"),
    ("# the training reward increases while the test accuracy also increases\n", "reward_hacking"),
    ("# a sudden increase in the reward, along with a rise in accuracy\n", "reward_hacking"),
    ("# over half of all prompts achieve accuracy over 60%\n", "zero_variance_groups"),
    ("# sampling efficiency improves with the new filter\n", "zero_variance_groups"),
    ("# more rollouts are required to estimate the value better\n", "zero_variance_groups"),
    ("# GPUs are idle during data loading\n", "generation_bound"),
    ("# no GPU idle time during rollout with the async engine\n", "generation_bound"),
    ("| 生成长度 | 180 | 210 | 远低于最大长度 |\n", "response_truncation"),
    ("# the completion length stays well below the cap\n", "response_truncation"),
    ("# the reward was 0 for the first 20 steps, then rose to 0.6\n", "reward_function_misconfig"),
    ("# reward 0 for wrong answers and 1 for correct ones\n", "reward_function_misconfig"),
    ("奖励从 0 上升到 0.8\n", "reward_function_misconfig"),
    ("# We clip the grad norm so it does not keep increasing.\n", "grad_norm_spike"),
    ("# We clip the grad norm so it does not keep increasing.\n", "rollout_train_logprob_mismatch"),
    ("# We clip the grad norm so that it doesn't keep growing.\n", "grad_norm_spike"),
    ("# the gradient norm no longer keeps rising after warmup\n", "grad_norm_spike"),
    ("# to keep the grad norm from continuing to grow we set max_grad_norm=1.0\n", "grad_norm_spike"),
    ("# gradient clipping stops the gradient norm from continuing to grow\n", "rollout_train_logprob_mismatch"),
    ("梯度裁剪是为了防止梯度范数持续上升\n", "grad_norm_spike"),
    ("# the grad norm doesn't spike anymore after the fix\n", "grad_norm_spike"),
]

FIRST_R27 = [
    ("[rank0]: TypeError: accuracy_reward() takes 1 positional argument but 2 were given\n", "config_key_error"),
    ("TypeError: my_reward_fn() missing 1 required positional argument: 'prompts'\n", "config_key_error"),
]

TOP3_R27 = [
    ("# grad_norm: 0.0 and kl: 0.0 on every step of the GRPO run, the reward looks fine\n", "no_learning_signal_config"),
    ("# kl and grad_norm are both 0 after 200 steps\n", "no_learning_signal_config"),
    ("# grad_norm和kl都为0，reward正常\n", "no_learning_signal_config"),
    ("# the lora adapters are never refreshed, rollouts look identical across steps\n", "vllm_weight_sync_failure"),
    ("# the generation keeps serving stale lora adapters in rollouts after each update\n", "vllm_weight_sync_failure"),
    ("# policy entropy showed a sudden surge right before the reward dropped\n", "entropy_explosion"),
    ("# with FP8 rollouts the run became unstable after 300 steps\n", "rollout_train_logprob_mismatch"),
    ("# the quantized rollout training collapsed at step 120\n", "rollout_train_logprob_mismatch"),
    ("# high staleness hurts the accuracy of the async run\n", "rollout_train_logprob_mismatch"),
    ("# with more off-policy steps the clip fraction rises sharply\n", "rollout_train_logprob_mismatch"),
    ("# during RL the coding agent learned to call sys.exit(0) before the tests ran\n", "reward_hacking_shortcut"),
    ("# the policy special-cases the unit tests instead of fixing the bug, and the reward goes up\n", "reward_hacking_shortcut"),
    ("# the PPO critic has negative explained variance for the whole run\n", "critic_divergence"),
    ("# the value model's gradient norm keeps growing while the policy collapses\n", "critic_divergence"),
]

HEALTHY_R27 = [
    ("# grad_norm: 0.35, kl: 0.002 - the run looks fine\n", "no_learning_signal_config"),
    ("# the kl is 0 at step 1 by construction, grad_norm is 0.4\n", "no_learning_signal_config"),
    ("# the LoRA adapter is synced to vLLM after every step, as expected\n", "vllm_weight_sync_failure"),
    ("# entropy did not show a sharp increase with clip-higher\n", "entropy_explosion"),
    ("# FP8 rollouts matched the BF16 reward curve closely\n", "rollout_train_logprob_mismatch"),
    ("# staleness of 1 step is the default of the one-step-off recipe\n", "rollout_train_logprob_mismatch"),
    ("# I skip the slow unit tests in CI with pytest -m 'not slow'\n", "reward_hacking_shortcut"),
    ("# the agent did not modify the tests during RL\n", "reward_hacking_shortcut"),
    ("# explained variance rises to 0.8 once the critic warms up\n", "critic_divergence"),
    ("# the critic gradient norm is not larger than the actor's\n", "critic_divergence"),
]


FIRST_R28 = [
    ("AssertionError: check failed: log_probs (-3.2) != rollout_log_probs (-0.41)\n", "rollout_train_logprob_mismatch"),
    ("RuntimeError: rollout_log_probs does not match old_log_probs at step 0\n", "rollout_train_logprob_mismatch"),
]

TOP3_R28 = [
    ("# the SGLang engine fails on the first request after each weight update\n", "vllm_weight_sync_failure"),
    ("# invalid tool calls keep increasing before the reward collapses\n", "tool_call_parse_errors"),
    ("# 函数调用格式错误明显增多\n", "tool_call_parse_errors"),
    ("# update_weights is the main bottleneck of each step with 16 engines\n", "low_throughput"),
    ("# the weight sync takes over 40% of the step time\n", "low_throughput"),
    ("# 参数同步成为瓶颈\n", "low_throughput"),
    ("# later the policy emits repetitive and incoherent completions\n", "degenerate_repetition"),
    ("# test accuracy declines despite rising rewards after step 300\n", "reward_hacking"),
    ("# training rewards not matched by held-out rewards after step 200\n", "reward_hacking"),
    ("# during RL the model learned to copy the reference implementation into its answer\n", "reward_hacking_shortcut"),
    ("# the policy learned to output empty answers to avoid the penalty\n", "reward_hacking_shortcut"),
    ("GRPO run with num_generations: 2 and a binary reward\n", "zero_variance_groups"),
]

HEALTHY_R28 = [
    ("# log_probs and rollout_log_probs agree to 1e-3 at step 0\n", "rollout_train_logprob_mismatch"),
    ("# the engine restarts once after the first weight sync, then runs fine\n", "vllm_weight_sync_failure"),
    ("# malformed tool calls decrease steadily over training\n", "tool_call_parse_errors"),
    ("# the weight sync is not the bottleneck: it takes 3% of the step\n", "low_throughput"),
    ("# accuracy rises together with the reward\n", "reward_hacking"),
    ("# the reference implementation is used to check the kernel's output\n", "reward_hacking_shortcut"),
    ("GRPO run with num_generations: 8 and a binary reward\n", "zero_variance_groups"),
    ("PPO run with actor_rollout_ref.rollout.n=2 for the critic baseline\n", "zero_variance_groups"),
]


def test_printed_completions_without_the_asked_for_tags_are_a_reward_format_problem() -> None:
    """Round 27 (samples.py): veRL's [prompt]/[response] prints and a printed completions list whose
    completions hold none of the tag pairs the prompt asks for; the same prints with the tags filled are fine."""
    verl = ("[prompt] <|im_start|>user\nSolve 2+2. Think in <think> </think> and answer in <answer> </answer>.\n"
            "[response] The answer is 4.\n[ground_truth] 4\n[score] 0.0\n"
            "[prompt] <|im_start|>user\nSolve 3+3. Think in <think> </think> and answer in <answer> </answer>.\n"
            "[response] 6\n[ground_truth] 6\n[score] 0.0\n")
    assert "reward_function_misconfig" in _cats(verl)[:3]
    good = verl.replace("[response] The answer is 4.", "[response] <think>2+2</think><answer>4</answer>")
    assert "reward_function_misconfig" not in _cats(good)
    trl = ("prompts [[{'role': 'user', 'content': 'Answer in <answer> </answer> tags: what is 2+2?'}]]\n"
           "completions [[{'role': 'assistant', 'content': 'It is 4, I think.'}], "
           "[{'role': 'assistant', 'content': 'The sum is four.'}]]\n")
    assert "reward_function_misconfig" in _cats(trl)[:3]
    one = trl.replace("[{'role': 'assistant', 'content': 'The sum is four.'}]", "")
    assert "reward_function_misconfig" not in _cats(one), "one completion is too few"


# ----------------------------------------------------------------------------- one test per kind over every round's table
def _tagged(rows_by_round: dict[str, list], healthy: bool = False) -> list:
    """Each round's rows as pytest params with the round in the id; a healthy row without an
    ``absent`` category (round 9's) gets None."""
    out = []
    for tag, rows in rows_by_round.items():
        for i, row in enumerate(rows):
            row = (row, None) if isinstance(row, str) else row
            out.append(pytest.param(*row, id=f"{tag}-{i}" if healthy else f"{tag}-{i}-{row[1]}"))
    return out


# round 29 (batch 30's misses, read after its measurement): the length told climbing or shooting up to an abnormal
# value; the reasoning told shrinking, fading or short and uninformative; pass@k no better than pass@1 and samples
# landing on one answer; the scorer's values lost before the trainer's log; the reward's spread told falling; the
# weight-update path told failing, and a FileNotFoundError on the engine side; a KL spike whose stated peak is below
# the metric rule's kl_floor is not an explosion (these sentences are written for the class, not copied from a case)
TOP3_R29 = [
    ("# the response length climbs up fast after step 400 and hits the cap\n", "response_length_explosion"),
    ("# output length shoots up to 4000 tokens around step 700\n", "response_length_explosion"),
    ("# the completion length reached an abnormally high value mid-training\n", "response_length_explosion"),
    ("# over training the thinking blocks shrink to a single sentence\n", "reward_hacking_shortcut"),
    ("# the policy writes short, useless reasoning before the answer\n", "reward_hacking_shortcut"),
    ("# pass@16 equals pass@1 on the hard split after RL\n", "entropy_collapse"),
    ("# all 8 samples land on the same answer for most prompts\n", "entropy_collapse"),
    ("# the verifier returned 0.8 for most samples while the trainer logged reward 0.0\n", "reward_function_misconfig"),
    ("# the reward model returned 0.6, 0.7 etc. while the trainer logged reward=0\n", "reward_function_misconfig"),
    ("# reward std drops sharply at step 50, long before the reward collapses\n", "zero_variance_groups"),
    ("# our weight update path had several race conditions under load\n", "vllm_weight_sync_failure"),
    ("# FileNotFoundError on the rollout server right after the trainer saved step 12\n", "vllm_weight_sync_failure"),
]

HEALTHY_R29 = [
    ("# the KL shows a small spike around step 600, reaching ~0.05, then settles\n", "kl_explosion"),
    ("# the KL went back to 0.02 after the spike\n", "kl_explosion"),
    ("# the reasoning length shrinks by 30% without hurting accuracy\n", "reward_hacking_shortcut"),
    ("# pass@8 is well above pass@1 after training\n", "entropy_collapse"),
    ("# reward std stays around 0.4 throughout training\n", "zero_variance_groups"),
    ("# the weight sync has no issues in our runs\n", "vllm_weight_sync_failure"),
    ("# the output length climbs slowly from 300 to 350 tokens\n", "response_length_explosion"),
]


# round 30 (batch 31's misses, read after its measurement): the Chinese of a model repeating itself; a listed
# behaviour of skipping the reasoning to answer directly, and answers guessed without reasoning; a generated kernel
# with an empty body; the entropy told swinging severely; vLLM's OpenAI-server prompt validation frames; an NCCL error
# in a NeMo-RL run with generation on its own GPUs; evaluations told unharmed temper a spike told in words (these
# sentences are written for the class, not copied from a case)
FIRST_R30 = [
    ('(AsyncWorker pid=77) ERROR 03-01 10:02:11 [serving_chat.py:250]   File "/venv/lib/python3.12/site-packages/vllm/'
     'entrypoints/openai/serving_engine.py", line 990, in _normalize_prompt_text_to_input\n', "sequence_length_exceeds_model"),
    ('  File "/usr/lib/python3/site-packages/vllm/entrypoints/openai/serving_engine.py", line 700, in _validate_input\n',
     "sequence_length_exceeds_model"),
    ("uv run examples/run_grpo_math.py policy.generation.colocated.enabled=false cluster.gpus_per_node=8\n"
     "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n",
     "vllm_weight_sync_failure"),
]

TOP3_R30 = [
    ("# 训练后模型总是自我重复，回答里同一句话出现很多遍\n", "degenerate_repetition"),
    ("# DPO 之后模型一直在重复开头那句话\n", "degenerate_repetition"),
    ("# observed in early runs: skipping the reasoning step and directly outputting the final answer\n",
     "reward_hacking_shortcut"),
    ("# the policy keeps guessing the answer without any reasoning after step 80\n", "reward_hacking_shortcut"),
    ("# during RL most generated kernels had an empty body while the module still called torch ops; reward kept rising\n",
     "reward_hacking_shortcut"),
    ("# GRPO for CUDA code: the policy learned to emit a no-op kernel and the tests still passed\n",
     "reward_hacking_shortcut"),
    ("# the baseline shows large entropy oscillations and the return never improves\n", "entropy_explosion"),
    ("# policy entropy fluctuates wildly from step 30 on while success stays flat\n", "entropy_explosion"),
]

HEALTHY_R30 = [
    ("# the KL spikes around step 2000, but evals on the standard benchmarks don't show any degradation\n", None),
    ("# grad norm spikes at 1.5k steps; no drop in the validation accuracy so far\n", None),
    ("# entropy falls from 1.2 to 0.3 without large oscillations\n", "entropy_explosion"),
    ("# we skip the warm-up step and directly start training\n", "reward_hacking_shortcut"),
    ("# the kernel body is compiled once and cached\n", "reward_hacking_shortcut"),
    ("# 我们重复了三次实验，结果一致\n", "degenerate_repetition"),
]


def test_evaluations_told_unharmed_temper_a_spike_told_in_words() -> None:
    """Round 30: a KL spike told in words is an error; the same sentence beside evaluations told unharmed is a
    warning (still named), and the evaluations' sentence alone is no finding of a problem."""
    spike = "# KL and grad norm spike hard after step 2300 and stay noisy\n"
    assert "kl_explosion" in _errors(spike)
    both = spike + "# The evaluations across the benchmarks don't seem to show any degradation.\n"
    assert not _errors(both) and "kl_explosion" in _cats(both)
    assert not _errors("# eval metrics are still going up\n")

# round 31 (batch 32's misses, read after its measurement): an engine hanging inside its weight-update call and a
# weight broadcast deadlocking a run; Ray's ActorUnavailableError beside a crashed worker; frac_reward_zero_std at 1
# on most steps; a zero gradient norm for every update with the loss unchanged; a format score rising while the
# accuracy is destroyed, and a score reached through verbosity; an agent that stopped acting; a log-prob diff that
# should be 0 and is not; NaN as a verb; rollouts turning to gibberish within a few optimizer steps; Unsloth's failed
# TRL patch; a completion ending in special tokens against an end-anchored format regex; "no-OOM" as a negation; the
# response cap read from a pasted override for the clip-ratio check (these sentences are written for the class)
FIRST_R31 = [
    ("(RayWorker pid=12) Unsloth: Warning - regex did not match, VLLMGeneration.sync_weights patch may have failed\n",
     "vllm_weight_sync_failure"),
    ("ray.exceptions.ActorUnavailableError: The actor is temporarily unavailable: Socket closed (the worker crashed "
     "with SIGSEGV)\n", "ray_actor_death"),
]

TOP3_R31 = [
    ("# the vllm server hangs inside update_weights_from_distributed at step 12\n", "vllm_weight_sync_failure"),
    ("# since we switched weight_sync to nccl, every resume deadlocks the trainer and the engines\n",
     "vllm_weight_sync_failure"),
    ("# frac_reward_zero_std was 1 on about 80% of steps\n", "zero_variance_groups"),
    ("# grad_norm 0 for all steps; loss stayed at 0.6931 and the logprobs are identical\n", "no_learning_signal_config"),
    ("# the format reward rose to 1.0 but it destroyed the accuracy on the test split\n", "reward_hacking"),
    ("# the judge score climbed to 9.1 via verbosity and padding\n", "reward_hacking"),
    ("# after 30 steps the agent simply stopped asking questions and let the episode time out\n",
     "reward_hacking_shortcut"),
    ("# the model learned to do nothing until the timeout\n", "reward_hacking_shortcut"),
    ("# logprob diff between vllm rollout and megatron trainer is non-zero in the bitwise mode\n",
     "rollout_train_logprob_mismatch"),
    ("# the run NaNs at step 3 with fp16\n", "grad_norm_nan"),
    ("# samples turn into gibberish after 3 optimizer steps with the LoRA adapter\n", "vllm_weight_sync_failure"),
    ("# reward regex r\"^<answer>.*?</answer>$\" never matches: the completion is <answer>4</answer><|eot_id|>\n",
     "reward_function_misconfig"),
]

HEALTHY_R31 = [
    ("# the end-to-end no-OOM smoke passed on one GPU\n", "oom_gpu"),
    ("# the weight sync never hangs since the fix\n", "vllm_weight_sync_failure"),
    ("# frac_reward_zero_std stays around 0.1 during the run\n", "zero_variance_groups"),
    ("# the episode stops once the agent finds the answer\n", "reward_hacking_shortcut"),
    ("# the format reward rose to 1.0 and the accuracy also improved\n", "reward_hacking"),
    ("# <answer>4</answer><|im_end|> is what the model writes; our regex is r\"<answer>(.*?)</answer>\"\n",
     "reward_function_misconfig"),
]


def test_a_pasted_response_cap_turns_a_clip_ratio_below_it_into_the_metric_caveat() -> None:
    """Round 31: veRL records whose response_length/max stays below the data.max_response_length the input states
    are not truncation, whatever response_length/clip_ratio says; without the stated cap the ratio is still read."""
    rec = "".join(f"step:{i} - response_length/mean:230.0 - response_length/max:256.0 - response_length/clip_ratio:0.6"
                  f" - critic/score/mean:0.5\n" for i in range(1, 4))
    assert "response_truncation" in _errors(rec)
    with_cap = "# launched with data.max_response_length=4096\n" + rec
    assert not _errors(with_cap) and "metric_artifact_check_first" in _cats(with_cap)

# round 32 (batch 33's misses, read after its measurement): a hypothesis named and answered no ("X? No."); an
# all-zero / all-one group rate at 0.7 or more and frac_reward_zero_std as a report's field at 1; a format reward up
# while the accuracy reward stays flat, also in Chinese; the reasoning told shrinking and jumping to the conclusion in
# Chinese; a GRPO run told too slow in Chinese; garbage or NaN logits after "a" weight update; prime-rl's "Mismatch
# KL" as the rollout/trainer KL, not the KL to the reference; an importance ratio told not staying around 1; an OOM
# during the weight hand-over into the engine (these sentences are written for the class)
FIRST_R32 = [
    ("torch.OutOfMemoryError: CUDA out of memory while syncing weights to the vLLM engine. Tried to allocate 1.20 GiB\n",
     "oom_rollout_wakeup"),
]

TOP3_R32 = [
    ("# eval summary: all_zero_group_rate = 0.91 over 40 steps\n", "zero_variance_groups"),
    ("# all-correct-group share: 85%\n", "zero_variance_groups"),
    ("- **frac_reward_zero_std**: 1.0 after the lr change\n", "zero_variance_groups"),
    ("# the format reward increased to 0.95 while the accuracy reward stayed flat around 0.2\n", "reward_hacking_shortcut"),
    ("# 训练中格式奖励快速上升，但准确率一直没有明显提升\n", "reward_hacking_shortcut"),
    ("# RL 之后模型的推理过程明显变短，很多回答直接给出答案\n", "reward_hacking_shortcut"),
    ("# 用 DAPO 训练 7B 模型时 rollout 阶段太慢了，一步要四十分钟\n", "generation_bound"),
    ("# after an update_weights call the engine returns NaN logits for every request\n", "vllm_weight_sync_failure"),
    ("# Mismatch KL rose from 0.002 to 0.9 at the first step on the new weights\n", "rollout_train_logprob_mismatch"),
    ("# the importance sampling ratio drifts far from 1 once top_p is below 1\n", "rollout_train_logprob_mismatch"),
    ("# OOM during weight sync on the 24 GB card (trainer 13 GiB, engine 10 GiB)\n", "oom_gpu"),
]

HEALTHY_R32 = [
    ("# Entropy collapse? No - entropy stays near 0.6 for the whole run\n", "entropy_collapse"),
    ("# Reward hacking？不是，验证集准确率同步提升\n", "reward_hacking"),
    ("# all-zero-group rate: 0.12 at the end of training\n", "zero_variance_groups"),
    ("# the format reward rose to 1.0 and the accuracy reward rose with it\n", "reward_hacking_shortcut"),
    ("# the KL rose from 0.001 to 0.004 over the run\n", "rollout_train_logprob_mismatch"),
    ("# the importance ratio stays around 1 throughout\n", "rollout_train_logprob_mismatch"),
    ("# this report is separate from the OOM issue in #812\n", "oom_gpu"),
]

# round 33 (batches 34 and 35's misses, read after their measurement): a reward manager's KeyError on a field of veRL's
# data format; an ImportError of a name the installed package lacks; an MoE model under ZeRO-3 told slow; the entropy
# running away or going from below 1 to 3 or more; the train-rollout KL told rising; an advantage in the hundreds; a
# near-perfect reward beside a low ground-truth accuracy; a strict format reward told harmful; no positive reward
# at all; a per-token length reward with repetition (these sentences are written for the class)
FIRST_R33 = [
    ("Traceback (most recent call last):\n  File \"/app/verl/workers/reward_manager/dapo.py\", line 88, in __call__\n"
     "    data_source = data_item.non_tensor_batch[self.reward_fn_key]\nKeyError: 'data_source'\n",
     "reward_function_misconfig"),
    ("ImportError: cannot import name 'SamplingParams' from 'sglang.srt.sampling' (/opt/venv/lib/python3.11/site-packages/sglang/srt/sampling/__init__.py)\n",
     "config_key_error"),
]

TOP3_R33 = [
    ("# Mixtral-8x7B PPO with DeepSpeed zero3 on 16 H100s is very slow, about 12 minutes per step\n", "low_throughput"),
    ("# the policy entropy ran away after step 300 and the rewards went to zero\n", "entropy_explosion"),
    ("# entropy went from 0.45 to 6.2 within 40 steps\n", "entropy_explosion"),
    ("# rollout_train_kl keeps growing, 30x since step 100\n", "rollout_train_logprob_mismatch"),
    ("# advantages max 2950 on two steps, then the loss jumped\n", "grad_norm_spike"),
    ("# the policy reached a near-perfect judge score of 0.97 while the test accuracy stayed low at 12%\n", "reward_hacking"),
    ("# the 3B model failed under the strict format penalty and never learned the task\n", "reward_function_misconfig"),
    ("# on the competition split the model never receives a positive reward\n", "zero_variance_groups"),
    ("# we added a bonus of 0.002 per generated token\n# samples: the same sentence repeated until the limit\n",
     "reward_hacking"),
]

HEALTHY_R33 = [
    ("# every row of the parquet has data_source and reward_model.ground_truth; the reward manager reads them fine\n", "reward_function_misconfig"),
    ("ImportError: cannot import name 'Foo' from partially initialized module 'mypkg.bar' (most likely due to a circular import)\n", "config_key_error"),
    ("# ZeRO-3 with the dense 7B model runs at 40 s a step, as expected\n", "low_throughput"),
    ("# the entropy coefficient went from 0.001 to 5 in the sweep\n", "entropy_explosion"),
    ("# the entropy did not run away: it stays around 0.4\n", "entropy_explosion"),
    ("# rollout_train_kl stays flat near 0.001 for the whole run\n", "rollout_train_logprob_mismatch"),
    ("# advantages are within +-2.5 and grad_norm stays below 1\n", "grad_norm_spike"),
    ("# we used 512 advantage samples per step\n", "grad_norm_spike"),
    ("# high rewards and the test accuracy rose with them to 71%\n", "reward_hacking"),
    ("# we use a length penalty to keep responses short and it works\n", "reward_hacking"),
]

# round 34 (batch 36's misses, read after its measurement): all-zero / all-one groups and scores all 0 in Chinese; a
# pairwise (reward-model / DPO) loss at 0.69; the Chinese of the inference/training log-prob gap; an engine's LoRA slot
# never filled; a run failing during a weight update, and a hang named with a weight-update mode; rollouts garbled
# after a few words and the weight sync; an OOM while syncing the rollout's weights, in Chinese (these sentences are
# written for the class)
FIRST_R34 = [
    ("# 在同步 rollout 权重时显存 OOM，训练只跑了两步\n", "oom_rollout_wakeup"),
]

TOP3_R34 = [
    ("# 前三步 rollout 全部是全零组，grad_norm 为 0\n", "zero_variance_groups"),
    ("# 这一步 reward 全为 0，没有任何梯度\n", "zero_variance_groups"),
    ("# training the reward model with --stage rm: the loss stays at 0.69 for three epochs\n", "no_learning_signal_config"),
    ("# 我们比较了推理引擎与训练引擎的 logprob，发现两者差异很大\n", "rollout_train_logprob_mismatch"),
    ("# the adapter is never loaded into the vLLM server during the run\n", "vllm_weight_sync_failure"),
    ("# the run always crashes during the first weight update to SGLang\n", "vllm_weight_sync_failure"),
    ("# with weight_sync_mode=nccl the trainer hangs at the second rollout\n", "vllm_weight_sync_failure"),
    ("# after the first optimizer step and weight sync the samples are pure gibberish\n", "vllm_weight_sync_failure"),
]

HEALTHY_R34 = [
    ("# the SFT loss is 0.69 after the first epoch and the eval accuracy keeps improving\n", "no_learning_signal_config"),
    ("# 完全对齐之后，训练和推理的 logprob 差异很小，KL 稳定\n", None),
    ("# after the weight sync the rollouts are coherent again\n", "vllm_weight_sync_failure"),
    ("# update_weights finished in 3.2 s. No error was raised and the step completed\n", "vllm_weight_sync_failure"),
    ("# 权重同步之后 rollout 正常，显存占用 60 GB\n", "oom_rollout_wakeup"),
]


# round 35 (batch 37's misses, read after its measurement): OpenPipe ART's own skipped-update message; a model config's
# RoPE scaling newer than the installed transformers; a format reward a model never meets; a length penalty told to
# collapse the reward (these sentences are written for the class)
FIRST_R35 = [
    ("Skipping tuning as there is no suitable data. This can happen when all the trajectories in the same group "
     "have the same reward and thus no advantage to train on.\nAdvanced step from 3 to 4 (no training occurred)\n",
     "zero_variance_groups"),
    ("  File \"/usr/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py\", line 110, in __init__\n"
     "    self.rope_type = config.rope_scaling.get(\"rope_type\", config.rope_scaling[\"type\"])\nKeyError: 'type'\n",
     "config_key_error"),
    ("ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'factor': 8.0, "
     "'rope_type': 'llama3'}\n", "config_key_error"),
]

TOP3_R35 = [
    ("# the R1 distill never gets the format reward, while Qwen2.5 gets it after ten steps\n", "reward_function_misconfig"),
    ("# our models do not seem to satisfy the format check at all\n", "reward_function_misconfig"),
    ("# adding the length penalty made the accuracy reward collapse after 600 steps\n", "reward_hacking_shortcut"),
    ("# `sampling_logp_difference` mean grows 0.02 → 0.21 over six steps\n", "rollout_train_logprob_mismatch"),
]

HEALTHY_R35 = [
    ("# the model does not follow the format reward at first, then learns it by step 40\n", "reward_function_misconfig"),
    ("# the length penalty is there to avoid a collapse of the reasoning length\n", "reward_hacking_shortcut"),
    ("KeyError: 'type'\n", "config_key_error"),
    ("# `sampling_logp_difference` mean stays 0.004 → 0.005 over six steps\n", "rollout_train_logprob_mismatch"),
]

# round 36 (batch 38's misses, read after its measurement): a step time and a generation time in one sentence; asked how
# to cut the generation time; a throughput drop told in Chinese; a value function worse than predicting a constant; a KL
# told climbed to a value of 1 or more (these sentences are written for the class)
TOP3_R36 = [
    ("# each iteration takes 10 minutes and the rollout takes about 6 minutes of it\n", "generation_bound"),
    ("# how can we speed up the rollout time of GRPO on 32B models?\n", "generation_bound"),
    ("# 刚开始吞吐有 5000 tokens\n# 跑了几个 step 以后吞吐降到了 1200\n", "low_throughput"),
    ("# the critic's predictions were worse than predicting the mean return\n", "critic_divergence"),
    ("# over 800 steps the KL had steadily risen to 2.7 while the eval score fell\n", "kl_drift"),
    ("# 用 LLaMA-Factory 做 dpo，rewards/accuracies 几步之后就变成 1.0 了\n", "dpo_overoptimization_high_lr"),
]

HEALTHY_R36 = [
    ("# each iteration takes 10 minutes and the rollout takes about 2 minutes of it\n", "generation_bound"),
    ("# we improved the generation time by 3x with vLLM\n", "generation_bound"),
    ("# 吞吐是 5000 tokens\n# 后来吞吐下降到 4600\n", "low_throughput"),
    ("# the KL rose to 0.05 by the end of training\n", "kl_drift"),
    ("# dpo 训练时 reward/acc 一直在 0.6 左右\n", "dpo_overoptimization_high_lr"),
]

# round 37 (batch 39's misses, read after its measurement): SGLang's context-length refusal; Megatron-core's scheduler
# assertion of a zero-step schedule; TRL's PPO mini-batch update beside a log-prob frame; an OOM-killed job as host
# memory; hacking / tricking the scorer as a verb; wrong content rated well by the reward model; a thinking collapse;
# the Korean of all-positive samples; '≈' between a key and its value (these sentences are written for the class)
FIRST_R37 = [
    ("openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': \"Requested token count exceeds the model's "
     "maximum context length of 32768 tokens. You requested a total of 33000 tokens: 1000 tokens from the input messages "
     "and 32000 tokens for the completion.\"}\n", "sequence_length_exceeds_model"),
    ("  File \"/opt/Megatron-LM/megatron/core/optimizer_param_scheduler.py\", line 110, in __init__\n"
     "    assert self.lr_decay_steps > 0\nAssertionError\n", "batch_size_misconfig"),
    ("File /usr/local/lib/python3.10/dist-packages/trl/trainer/ppo_trainer.py:817, in PPOTrainer.step(self, queries)\n"
     "--> 817     logprobs, logits, vpreds, _ = self.batched_forward_pass(self.model, q, r, inputs, return_logits=True)\n"
     "    824     train_stats = self.train_minibatch(\n"
     "File /usr/local/lib/python3.10/dist-packages/trl/core.py:62, in logprobs_from_logits(logits, labels)\n"
     "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "oom_actor_train"),
]

TOP3_R37 = [
    ("# saving the checkpoint OOM-killed every worker after a few seconds\n", "oom_host_cpu"),
    ("# later in the run the policy learned to hack the reward model with long lists\n", "reward_hacking"),
    ("# its summaries trick the judge into rating invented facts as faithful\n", "reward_hacking"),
    ("# the answers are wrong but still receive a high score from the reward model\n", "reward_hacking"),
    ("# after step 300 we saw a reasoning collapse: answers shrank to a single token\n", "reward_hacking_shortcut"),
    ("# the policies abandon reasoning and output the answer tag alone\n", "reward_hacking_shortcut"),
    ("# 이 문제들은 rollout 8개가 모두 정답이라 advantage 가 0 입니다\n", "zero_variance_groups"),
    ("# at step 0 `mismatch_kl ≈ 4.2` and `reward ≈ 0.0` already\n", "rollout_train_logprob_mismatch"),
]

HEALTHY_R37 = [
    ("# the KV cache holds 32768 tokens; prompts are at most 4096 tokens\n", "sequence_length_exceeds_model"),
    ("# we added a KL term to prevent reasoning collapse, and the reasoning stays long\n", "reward_hacking_shortcut"),
    ("# the judge scores wrong answers low and right answers high, as it should\n", "reward_hacking"),
    ("# 이 문제들은 rollout 8개 중 절반이 정답입니다\n", "zero_variance_groups"),
    ("# `mismatch_kl ≈ 0.001` and `reward ≈ 0.6` at step 40\n", "rollout_train_logprob_mismatch"),
]


# round 38 (batch 40's misses, read after its measurement): torch's optimizer-state allocation as the update's OOM; SGLang's
# scheduler exception after a weight update; numpy's empty reduction with batch sizes named; a sample longer than the
# dynamic-batching token budget; gradient checkpointing turned off; host memory growing until the program ends; no tool
# calls received (these sentences are written for the class)
FIRST_R38 = [
    ("  File \"/usr/lib/python3.11/site-packages/torch/optim/adamw.py\", line 160, in _init_group\n"
     "    state[\"exp_avg\"] = torch.zeros_like(p, memory_format=torch.preserve_format)\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.\n", "oom_actor_train"),
    ("INFO:     127.0.0.1:40112 - \"POST /update_weights_from_distributed HTTP/1.1\" 200 OK\n"
     "[2026-02-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
     "  File \"/sgl/python/sglang/srt/managers/scheduler.py\", line 2901, in run_scheduler_process\n", "vllm_weight_sync_failure"),
    ("+ trainer.train_batch_size=4 actor.ppo_mini_batch_size=4\n"
     "ValueError: zero-size array to reduction operation maximum which has no identity\n", "batch_size_misconfig"),
    ("AssertionError: max_token_len must be greater than the sequence length. Got max_token_len=4096 and max_seq_len=9216\n",
     "batch_size_misconfig"),
]

TOP3_R38 = [
    ("# turning off gradient checkpointing, the 7B run goes OOM right away; without gradient checkpointing it cannot fit\n",
     "oom_actor_train"),
    ("# host side: the memory usage keeps growing over the epochs and the job was killed near 400 GB\n", "oom_host_cpu"),
    ("# the environment received no tool calls at all, so every episode ended after one turn\n", "tool_call_parse_errors"),
    ("# one sequence of 12k tokens is longer than max_tokens_per_gpu (8192) and the packer fails\n", "batch_size_misconfig"),
]

HEALTHY_R38 = [
    ("# we use gradient checkpointing and ZeRO-3; memory peaks at 61 GB of 80\n", "oom_actor_train"),
    ("# the OOM in the comments below is a different problem; this run trains fine\n", "oom_gpu"),
    ("# memory usage keeps increasing during the first epoch and then stays flat at 90 GB\n", "oom_host_cpu"),
    ("# the agent made 3.2 tool calls per episode on average\n", "tool_call_parse_errors"),
]


def test_one_kl_spike_that_falls_back_is_a_warning() -> None:
    """Round 37: a KL that jumps once and is back at its level on the next log (the k3 estimator's heavy tail) is a
    warning; the same jump that stays up, or two such jumps, is an error (an explosion)."""
    base = [0.004, 0.006, 0.005, 0.03, 0.05, 0.04]
    once = base + [4.5, 0.09, 0.12, 0.1, 0.2, 0.11, 0.1]
    stays = base + [4.5, 3.9, 5.2, 6.0, 4.8, 5.5, 6.1]
    twice = base + [4.5, 0.09, 0.12, 3.8, 0.2, 0.11, 0.1]

    def kl_findings(vals: list[float]) -> list[str]:
        text = "".join(f"{{'loss': 0.01, 'reward': 1.{i}, 'kl': {v}, 'epoch': 0.{i:02d}}}\n" for i, v in enumerate(vals))
        d = diagnose_text(text)
        return [f.severity for f in d.findings if f.category == "kl_explosion"]
    assert kl_findings(once) == ["warning"]
    assert kl_findings(stays) == ["error"]
    assert kl_findings(twice) == ["error"]


def test_a_reward_at_zero_under_full_truncation_is_told_as_truncation() -> None:
    """Round 37: every response cut at the cap and the reward constant at 0 - the truncation explains the reward, so it
    is the error and the constant reward a warning; with normal lengths the constant reward stays the error."""
    head = "step\treward\treward_std\tcompletions / mean_length\tcompletions / clipped_ratio\n"
    cut = head + "".join(f"{i}\t0.0\t0.0\t4096.0\t1.0\n" for i in range(1, 9))
    normal = head + "".join(f"{i}\t0.0\t0.0\t300.0\t0.0\n" for i in range(1, 9))
    d = diagnose_text(cut)
    sev = {f.category: f.severity for f in d.findings}
    assert d.findings[0].category == "response_truncation" and sev.get("reward_function_misconfig") == "warning", sev
    sev = {f.category: f.severity for f in diagnose_text(normal).findings}
    assert sev.get("reward_function_misconfig") == "error" and "response_truncation" not in sev, sev


def test_a_sentence_wrapped_over_two_lines_is_read_across_the_break() -> None:
    """Round 32: a description hard-wrapped mid-sentence is read across the line break (comment lines or plain
    lines); a line that ends its sentence, or a next line that starts a new one, is not joined."""
    wrapped = ("# in the second run the importance sampling ratio between vLLM and the trainer\n"
               "# does not stay around 1 once the temperature is lowered\n")
    assert "rollout_train_logprob_mismatch" in _cats(wrapped)
    plain = ("In the second run the importance sampling ratio between vLLM and the trainer\n"
             "does not stay around 1 once the temperature is lowered.\n")
    assert "rollout_train_logprob_mismatch" in _cats(plain)
    ended = ("# in the second run we plotted the importance sampling ratio of each step.\n"
             "# does not stay around 1 is what the docs warn about for other engines\n")
    assert "rollout_train_logprob_mismatch" not in _cats(ended)
    mixed = ("# in the second run the importance sampling ratio between vLLM and the trainer\n"
             "does not stay around 1 once the temperature is lowered\n")
    assert "rollout_train_logprob_mismatch" not in _cats(mixed)
    negated = ("Dynamics over the windows: the completion length stays stable from start to end (~182-191,\n"
               "no shrink phase unlike the filtered runs), and the entropy declines smoothly.\n")
    assert "response_truncation" not in _cats(negated)


def test_mismatch_kl_is_not_the_kl_to_the_reference() -> None:
    """Round 32: "Mismatch KL" names prime-rl's rollout/trainer KL; the same jump named "KL" is the KL to the reference."""
    assert "rollout_train_logprob_mismatch" in _cats("# Mismatch KL jumps from 0.001 to 3\n")
    assert "kl_explosion" not in _cats("# Mismatch KL jumps from 0.001 to 3\n")
    assert "kl_explosion" in _cats("# the KL jumps from 0.001 to 3 at step 40\n")


_FIRST_ALL = _tagged({"base": FIRST, "vocab": FIRST_VOCAB, "round4": FIRST_R4, "round5": FIRST_R5,
                      "round6": FIRST_R6, "round7": FIRST_R7, "round9": FIRST_R9, "round10": FIRST_R10,
                      "round10b": FIRST_R10B, "round11": FIRST_R11, "round12": FIRST_R12, "round13": FIRST_R13,
                      "round14": FIRST_R14, "round15": FIRST_R15, "round16": FIRST_R16,
                      "round17": FIRST_R17, "round18": FIRST_R18, "round19": FIRST_R19, "round20": FIRST_R20,
                      "round21": FIRST_R21, "round22": FIRST_R22, "round23": FIRST_R23, "round24": FIRST_R24,
                      "round27": FIRST_R27, "round28": FIRST_R28, "round30": FIRST_R30, "round31": FIRST_R31, "round32": FIRST_R32, "round33": FIRST_R33, "round34": FIRST_R34, "round35": FIRST_R35, "round37": FIRST_R37, "round38": FIRST_R38})
_TOP3_ALL = _tagged({"base": TOP3, "vocab": TOP3_VOCAB, "round4": TOP3_R4, "round5": TOP3_R5,
                     "round6": TOP3_R6, "round7": TOP3_R7, "round9": TOP3_R9, "round10": TOP3_R10,
                     "round10b": TOP3_R10B, "round11": TOP3_R11, "round12": TOP3_R12, "round13": TOP3_R13,
                     "round14": TOP3_R14, "round15": TOP3_R15, "round16": TOP3_R16,
                     "round17": TOP3_R17, "round18": TOP3_R18, "round19": TOP3_R19, "round20": TOP3_R20,
                     "round21": TOP3_R21, "round22": TOP3_R22, "round23": TOP3_R23, "round24": TOP3_R24, "round25": TOP3_R25,
                     "round26": TOP3_R26, "round27": TOP3_R27,
                     "round28": TOP3_R28, "round29": TOP3_R29, "round30": TOP3_R30, "round31": TOP3_R31, "round32": TOP3_R32, "round33": TOP3_R33, "round34": TOP3_R34, "round35": TOP3_R35, "round36": TOP3_R36, "round37": TOP3_R37, "round38": TOP3_R38})
_HEALTHY_ALL = _tagged({"base": HEALTHY, "vocab": HEALTHY_VOCAB, "round4": HEALTHY_R4, "round5": HEALTHY_R5,
                        "round6": HEALTHY_R6, "round7": HEALTHY_R7, "round9": HEALTHY_R9,
                        "round10": HEALTHY_R10, "round10b": HEALTHY_R10B, "round11": HEALTHY_R11, "round12": HEALTHY_R12,
                        "round13": HEALTHY_R13, "round14": HEALTHY_R14, "round15": HEALTHY_R15,
                        "round16": HEALTHY_R16, "round17": HEALTHY_R17, "round18": HEALTHY_R18,
                        "round19": HEALTHY_R19, "round20": HEALTHY_R20,
                        "round21": HEALTHY_R21, "round22": HEALTHY_R22, "round23": HEALTHY_R23, "round24": HEALTHY_R24,
                        "round25": HEALTHY_R25, "round26": HEALTHY_R26, "round27": HEALTHY_R27,
                        "round28": HEALTHY_R28, "round29": HEALTHY_R29, "round30": HEALTHY_R30, "round31": HEALTHY_R31, "round32": HEALTHY_R32, "round33": HEALTHY_R33, "round34": HEALTHY_R34, "round35": HEALTHY_R35, "round36": HEALTHY_R36, "round37": HEALTHY_R37, "round38": HEALTHY_R38}, healthy=True)


@pytest.mark.parametrize("text,expected", _FIRST_ALL)
def test_first_finding(text: str, expected: str) -> None:
    found = _cats(text)
    assert found[:1] == [expected], found


@pytest.mark.parametrize("text,expected", _TOP3_ALL)
def test_in_top3(text: str, expected: str) -> None:
    found = _cats(text)
    assert expected in found[:3], found


@pytest.mark.parametrize("text,absent", _HEALTHY_ALL)
def test_healthy_wordings_do_not_fire(text: str, absent: str | None) -> None:
    found = _cats(text)
    assert not _errors(text), found
    if absent is not None:
        assert absent not in found, found
