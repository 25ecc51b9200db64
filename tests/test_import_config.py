"""import_config: veRL launch scripts, OpenRLHF command lines (0.11.2 and legacy 0.9.5), TRL YAML.

Every mapped key must be a real key of the framework version (checked against the shared schemas),
and everything else must be reported, never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from advisor.errors import AdvisorError
from advisor.importers import detect_framework, import_config
from advisor.importers.tables import known_keys, maps
from advisor.memory.from_config import budget_memory_from_config
from advisor.plan import Framework

VERL_LORA_14B = r"""
# GRPO-LoRA search on 2 x H100 (veRL examples/tuning style)
MODEL_PATH=Qwen/Qwen2.5-14B-Instruct
nproc_per_gpu=58 # 32 fits, 64 oom, 58 fits, 59 oom
nnodes=1
ngpu_per_node=2
total_procs=$(( nproc_per_gpu * nnodes * ngpu_per_node ))
mini_batch_size=$(( total_procs ))
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=data/gsm8k/train.parquet \
    data.train_batch_size=${total_procs} \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=$MODEL_PATH  \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.model.lora_rank=32 \
    actor_rollout_ref.model.lora_alpha=32 \
    actor_rollout_ref.actor.ppo_mini_batch_size=${mini_batch_size} \
    actor_rollout_ref.actor.ppo_micro_batch_size=${mini_batch_size} \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.fsdp_config.param_offload=True \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.25 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.max_num_seqs=512 \
    actor_rollout_ref.rollout.max_num_batched_tokens=1536 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 \
    actor_rollout_ref.actor.entropy_coeff=0.001 \
    actor_rollout_ref.actor.made_up_knob=3 \
    trainer.n_gpus_per_node=2 \
    trainer.nnodes=1 \
    trainer.experiment_name=run-$(date +%Y%m%d) $@ 2>&1 | tee log.txt
"""

OPENRLHF_011 = """
ray job submit --address="http://127.0.0.1:8265" -- python3 -m openrlhf.cli.train_ppo_ray \
   --ref.num_nodes 1 --ref.num_gpus_per_node 4 \
   --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
   --vllm.num_engines 4 --vllm.tensor_parallel_size 2 --vllm.gpu_memory_utilization 0.6 \
   --actor.model_name_or_path meta-llama/Llama-3.1-8B-Instruct \
   --reward.remote_url http://localhost:5000/get_reward \
   --algo.advantage.estimator group_norm --algo.kl.use_loss --algo.kl.init_coef 0.001 \
   --ds.zero_stage 3 --ds.adam_offload --actor.gradient_checkpointing_enable --ds.packing_samples \
   --train.micro_batch_size 2 --train.batch_size 128 --rollout.batch_size 32 \
   --rollout.n_samples_per_prompt 4 --rollout.max_new_tokens 1024 --data.max_len 2048 \
   --actor.adam.lr 5e-7 --ds.not_a_flag 7
"""

OPENRLHF_LEGACY = """
python3 -m openrlhf.cli.train_ppo_ray --pretrain OpenRLHF/Llama-3-8b-sft-mixture \
  --actor_num_nodes 1 --actor_num_gpus_per_node 8 --colocate_all_models \
  --vllm_num_engines 4 --vllm_tensor_parallel_size 2 --vllm_gpu_memory_utilization 0.5 \
  --zero_stage 3 --adam_offload --gradient_checkpointing --micro_train_batch_size 4 \
  --advantage_estimator group_norm --n_samples_per_prompt 8 --prompt_max_len 1024 --generate_max_len 1024 \
  --init_kl_coef 0.01 --use_kl_loss --flash_attn
"""

TRL_GRPO = """
# GRPOConfig for trl grpo --config
model_name_or_path: Qwen/Qwen2.5-7B-Instruct
dtype: bfloat16
per_device_train_batch_size: 4
gradient_accumulation_steps: 2
num_generations: 8
max_completion_length: 1024
use_vllm: true
vllm_mode: colocate
vllm_gpu_memory_utilization: 0.4
vllm_enable_sleep_mode: true
beta: 0.04
learning_rate: 1.0e-6
gradient_checkpointing: true
output_dir: out/grpo
bogus_field: 1
"""


def test_verl_script_with_shell_arithmetic():
    r = import_config(VERL_LORA_14B)
    assert r.framework == Framework.VERL
    p = r.plan
    assert p.method.value == "grpo" and p.policy.model == "Qwen2.5-14B-Instruct"
    assert p.data.train_batch_size == 116 and p.data.mini_batch_size == 116
    # deprecated global micro batch -> per data-parallel rank: 116 // (2 GPUs / sp 2)
    assert p.data.micro_batch_size_per_gpu == 116
    assert p.memory.lora_rank == 32 and p.memory.param_offload and p.memory.ref_offload
    assert p.memory.rollout_memory_fraction == 0.25 and p.rollout.tp == 2 and p.policy.parallel.sp == 2
    assert p.algorithm.kl_coef == 0.001 and not p.algorithm.kl_in_reward and p.algorithm.kl_estimator == "k3"
    joined = "\n".join(r.not_understood)
    assert "actor_rollout_ref.actor.made_up_knob=3 (not a veRL 0.9.1 key)" in joined
    assert "unresolved shell variable" in joined  # $(date ...) is never guessed


def test_verl_defaults_are_verls_own():
    r = import_config("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct "
                      "algorithm.adv_estimator=grpo")
    assert r.plan.rollout.tp == 2 and r.plan.memory.rollout_memory_fraction == 0.5  # veRL 0.9.1 defaults
    assert r.plan.algorithm.kl_coef == 0.0 and any("no reference" in n for n in r.notes)


def test_verl_megatron_config_name():
    r = import_config("python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer "
                      "actor_rollout_ref.model.path=Qwen/Qwen2.5-32B "
                      "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8 "
                      "actor_rollout_ref.actor.megatron.param_offload=True")
    assert r.plan.memory.train_backend == "megatron" and r.plan.policy.parallel.tp == 8


def test_openrlhf_dotted_flags_and_pools():
    r = import_config(OPENRLHF_011)
    p = r.plan
    assert r.framework == Framework.OPENRLHF and p.method.value == "grpo"
    assert p.memory.zero_stage == 3 and p.memory.optimizer_offload and p.memory.recompute == "full"
    assert p.memory.remove_padding and p.memory.rollout_memory_fraction == 0.6
    assert p.data.max_response_length == 1024 and p.data.max_prompt_length == 1024
    assert p.data.train_batch_size == 32 and p.data.mini_batch_size == 32  # 128 samples / n=4
    pools = {pool.name: pool for pool in p.placement.pools}
    assert pools["actor"].gpus == 8 and pools["ref"].gpus == 4 and pools["vllm"].gpus == 8
    assert p.reward is None and p.reward_function is not None
    assert any("--ds.not_a_flag" in x for x in r.not_understood)
    assert not r.legacy


def test_openrlhf_legacy_flags_are_reported_and_imported():
    r = import_config(OPENRLHF_LEGACY)
    assert any(x.startswith("--zero_stage ") for x in r.legacy)
    assert any(x.startswith("--pretrain ") for x in r.legacy)
    p = r.plan
    assert p.memory.zero_stage == 3 and p.memory.optimizer_offload and p.rollout.tp == 2
    assert p.data.max_prompt_length == 1024 and p.algorithm.group_size == 8
    assert p.placement.pools[0].name == "all" and "rollout" in p.placement.pools[0].roles
    # --flash_attn existed in 0.9.5 but has no mapping: reported, not dropped
    assert any("--flash_attn" in x for x in r.not_understood)


def test_trl_yaml():
    r = import_config(TRL_GRPO)
    p = r.plan
    assert r.framework == Framework.TRL and p.method.value == "grpo"
    assert p.algorithm.kl_coef == 0.04 and p.algorithm.group_size == 8
    assert p.rollout.engine == "vllm" and p.rollout.sleep_level == 1 and p.memory.rollout_memory_fraction == 0.4
    assert p.data.micro_batch_size_per_gpu == 4 and p.data.train_batch_size == 4 * 8 * 2 // 8
    assert not p.memory.master_weights_fp32  # dtype bfloat16
    assert any("bogus_field" in x and "not a TRL 1.16.0 key" in x for x in r.not_understood)


def test_trl_sleep_mode_default_is_off():
    r = import_config("model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\nuse_vllm: true\nnum_generations: 4\n",
                      Framework.TRL)
    assert r.plan.rollout.sleep_level == 0  # TRL's vllm_enable_sleep_mode defaults to False


def test_detection_and_bad_input():
    assert detect_framework(VERL_LORA_14B) == Framework.VERL
    assert detect_framework(OPENRLHF_011) == Framework.OPENRLHF
    assert detect_framework(TRL_GRPO) == Framework.TRL
    with pytest.raises(AdvisorError) as e:
        import_config("hello world")
    assert e.value.problems[0].field == "framework"
    with pytest.raises(AdvisorError):
        import_config("   ")
    with pytest.raises(AdvisorError) as e:
        import_config("x: 1", Framework.NEMO_RL)
    assert "verl" in (e.value.problems[0].allowed or "")


def test_budget_from_imported_config_matches_hand_converted_case():
    """The imported launch script and the hand-written case file give the same verdict and peak."""
    from advisor.memory import budget_memory
    from advisor.plan import plan_from_dict

    case = yaml.safe_load((Path(__file__).parent / "cases/memory/verl_grpo_lora_qwen2.5-14b_2xh100.yaml").read_text())
    by_hand = budget_memory(plan_from_dict(case["plan"]))
    imported = budget_memory_from_config(VERL_LORA_14B, gpu="H100", mean_prompt_length=105, mean_response_length=239)
    assert imported.budget.fits == by_hand.fits
    assert imported.budget.pools[0].peak_gib == pytest.approx(by_hand.pools[0].peak_gib, rel=0.01)
    with pytest.raises(AdvisorError):
        budget_memory_from_config(VERL_LORA_14B, mean_prompt_length=0)


def test_tables_match_the_framework_schemas(shared_dir):
    """memory_import_keys.yaml was generated from the shared schema dumps: re-derive and compare; and
    every key the maps and the fix ladder name must be a real key of its framework version."""
    fw = shared_dir / "research" / "frameworks"

    def first_column(name: str) -> set[str]:
        return {line.split("\t")[0] for line in (fw / name).read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#")}
    verl = first_column("verl-0.9.1-ppo_trainer.keys.tsv") | first_column("verl-0.9.1-ppo_megatron_trainer.keys.tsv")
    assert known_keys()["verl_keys"] == verl
    orl = set().union(*(first_column(f"openrlhf-0.11.2-{s}.flags.tsv") for s in ("train_ppo_ray", "train_dpo", "train_sft", "train_rm")))
    assert known_keys()["openrlhf_flags"] == orl
    for key in maps()["verl"]:
        assert key in verl, key
    for flag in maps()["openrlhf"]:
        assert flag in orl, flag
    legacy = first_column("openrlhf-0.9.5-LEGACY-train_ppo_ray.flags.tsv")
    for old, new in maps()["openrlhf_legacy"].items():
        assert old in legacy, old
        assert new in orl or new == "legacy_prompt_max_len", new
    sft = first_column("verl-0.9.1-sft_trainer_engine.keys.tsv")
    assert known_keys()["verl_sft_keys"] == sft
    for key in maps()["verl_sft"]:
        assert key in sft, key
    from advisor.memory.fixes import fix_table

    trl = known_keys()["trl_fields"]
    assert trl == _trl_fields(fw)
    for key in maps()["trl"]:
        assert key in trl, key
    for row in fix_table():
        for framework, keys in row["keys"].items():
            for key in keys:
                ok = {"verl": verl, "openrlhf": orl, "trl": trl}[framework]
                assert key in ok, (row["id"], framework, key)


def _trl_fields(fw: Path) -> set[str]:
    """Every field of the TRL 1.16.0 config classes: the rows of each dump, plus the inherited
    TrainingArguments fields its 'section 3' comment lists by name."""
    out: set[str] = set()
    for path in fw.glob("trl-1.16.0-*.fields.tsv"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# section 3:"):
                out |= {name.strip() for name in line.split(":", 2)[2].split(",") if name.strip()}
            elif line and not line.startswith("#"):
                out.add(line.split("\t")[0])
    return out


def test_trl_script_fields_exist_in_installed_trl():
    """Script-level keys (datasets, dataset_name, reward_funcs) are not in the config-class dumps:
    check them against the installed trl 1.16.0 script argument classes."""
    import dataclasses

    import trl
    from trl import ScriptArguments
    from trl.scripts.grpo import GRPOScriptArguments
    from trl.scripts.utils import DatasetMixtureConfig

    assert trl.__version__ == "1.16.0"
    names = {f.name for cls in (ScriptArguments, DatasetMixtureConfig, GRPOScriptArguments)
             for f in dataclasses.fields(cls)}
    for key in maps()["trl_script"]:
        assert key in names, key


def test_worst_case_lengths_get_a_combined_fix_in_verl_keys():
    """Without typical lengths the 14B search point is budgeted at max lengths and does not fit; no
    single rung fixes it, so the ladder leads with a combination that does (in veRL keys)."""
    r = budget_memory_from_config(VERL_LORA_14B, gpu="H100")
    assert not r.budget.fits
    first = r.budget.fixes[0]
    assert first.id.startswith("combined:") and first.fits_after
    assert all(k.startswith("actor_rollout_ref.") or k.startswith("trainer.") for k in first.settings)


def test_trl_reward_funcs_become_the_reward_function():
    text = """model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct
num_generations: 4
reward_funcs: [my_lib.rewards.math_score, think_format_reward]
reward_model_name_or_path: /models/rm
"""
    r = import_config(text, Framework.TRL)
    assert r.plan.reward_function.path == "my_lib/rewards.py" and r.plan.reward_function.name == "math_score"
    assert r.plan.reward.path == "/models/rm"
    assert any("think_format_reward" in x and "built-in" in x for x in r.not_understood)
