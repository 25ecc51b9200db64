"""The real-case corpus of tests/cases/diagnosis, run through `rl-advisor diagnose FILE --json`.

Development cases must each pass (the rules are written against them). Validation cases are
judged together: the share that passes must stay >= 90% (the issue's goal); a single validation
miss is not a failure, and no rule is tuned to one. The split is by collection batch
(benchmarks/diagnose_accuracy.py: case_split): the newest held-out batch is validation, every older
batch development, so a case cannot be moved after a result (tests/cases/diagnosis/README.md).
"""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from advisor.diagnosis import taxonomy

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("diagnose_accuracy", REPO / "benchmarks" / "diagnose_accuracy.py")
acc = importlib.util.module_from_spec(_spec)
sys.modules["diagnose_accuracy"] = acc
_spec.loader.exec_module(acc)  # type: ignore[union-attr]

CASES = acc.load_cases(shared=None)
REQUIRED = ("id", "source", "repository", "framework", "input_kind", "expected", "ground_truth",
            "ground_truth_from", "batch", "files")


def test_corpus_shape() -> None:
    cats = set(taxonomy())
    ids = set()
    for c in CASES:
        meta = yaml.safe_load((c["folder"] / "case.yaml").read_text(encoding="utf-8"))
        missing = [k for k in REQUIRED if not meta.get(k)]
        assert not missing, f"{c['id']}: missing {missing}"
        assert meta["id"] == c["folder"].name and meta["id"] not in ids
        ids.add(meta["id"])
        # a GitHub thread, or (from batch 9) a public web page with the poster's own log: its
        # `repository` names the site, so the repository count stays honest
        assert meta["source"].startswith("https://"), meta["source"]
        if not meta["source"].startswith("https://github.com/"):
            assert meta["batch"] >= 9 and meta["repository"].split()[0] in meta["source"], (meta["id"], meta["repository"])
        assert meta["expected"] in cats, meta["expected"]
        assert meta["input_kind"] in ("log", "metric", "prose")
        assert meta["ground_truth_from"] in ("maintainer", "reporter", "error")
        for f in meta["files"]:
            text = (c["folder"] / f).read_text(encoding="utf-8")
            assert 0 < len(text) < 20_000, f"{c['id']}/{f}: excerpts only"
    repos = {c["repository"] for c in CASES}
    assert len(repos) >= 15, sorted(repos)


def test_split_is_by_batch() -> None:
    parts: dict[str, set[str]] = {}
    for c in CASES:
        assert isinstance(c["batch"], int) and c["batch"] >= 1, (c["id"], c["batch"])
        assert c["split"] == ("validation" if c["batch"] >= acc.VALIDATION_BATCH else "development")
        parts.setdefault(c["source"], set()).add(c["split"])
    assert all(len(v) == 1 for v in parts.values()), "one thread's cases belong to one batch"
    # batches 1 to 30 were read while the rules were written: never validation again
    assert all(c["split"] == "development" for c in CASES if c["batch"] <= 30)
    assert acc.VALIDATION_BATCH >= 42


def _thread(url: str) -> str:
    return url.split("#")[0].split("?")[0].rstrip("/").lower()


def test_held_out_threads_are_unseen() -> None:
    """A held-out case's thread is no development case, here or in ../shared/cases/diagnosis (when it is
    beside the repository): batch 12's collectors missed two shared threads, found only after measuring."""
    every = acc.load_cases(shared=acc.SHARED)
    if not any(c["origin"] == "shared" for c in every):
        pytest.skip("../shared/cases/diagnosis is not beside the repository: only this corpus is checked")
    seen = {_thread(c["source"]) for c in every if c["split"] == "development"}
    held = [c["id"] for c in every if c["split"] == "validation" and _thread(c["source"]) in seen]
    assert not held, f"held-out cases whose thread is already a development case: {held}"


@lru_cache(maxsize=None)
def _result(case_id: str) -> tuple[bool, str]:
    case = next(c for c in CASES if c["id"] == case_id)
    return acc.judge(case, acc.diagnose_cli(case["paths"], source=case["source"]))


DEVELOPMENT_MISSES: dict[str, str] = {
    "vllm-17117-deepspeed-grpo-72b-sleep-leaves-26gib-train-oom": (
        "'I wake up, do generations, and then go to sleep. Then deepspeed's turn, it experiences OOM': the wake-up words "
        "name the engine's phase first, and 'deepspeed's turn' (the training engine) is no phase word a general rule "
        "reads (DeepSpeed is in every frame of an OpenRLHF trace, generation included)"),
    "bullscows-grpo-qwen25-7b-partial-digit-reward-stuck-correctness-zero-kl-up": (
        "a Russian run table whose cells tell the result in words ('Mode collapse - KL=0.12, модель ушла') and a note that "
        "the format is learned but the logic is not; the stuck reward at correctness 0 is in the left-out report"),
    "researchvault-dpo-qwen25-05b-prism-v1-pref-acc-stuck-50-undertrained": (
        "a Korean note's 'Metric | Value' table with rows named in words ('Final loss 0.7109', 'Final pref_acc 50.00%'): "
        "the loss is near, not at, ln 2 (an under-trained run at lr 5e-7, not a dead one), so no exact rule reads it"),
    "unsloth-nb-gptoss-20b-grpo-t4-12h44-for-100-steps-slow-generation-expected": (
        "round 37: the table's 'completions / clipped_ratio' is read now (spaces around the slashes) and is 0.5-1.0 on "
        "every row, so the truncation error is a true reading of the table; the maintainer's note is about the speed, "
        "which is the case's label"),
    # batch 38, joined development at round 36: its held-out misses, read at round 36 (6 of 10 caught by general rules;
    # these four are left)
    "bugbamboo-grpo-chess-llama32-3b-legal-move-reward-up-eval-flat-mode-collapse": (
        "the reward saturating on legal moves while an evaluation reward stays flat, and three sampled outputs that "
        "repeat one sentence: the curve is told as values read off a figure in a comment, and the samples' sameness is "
        "across outputs (no reader compares samples with each other)"),
    "littlemex-slime-grpo-ppo-kl-030-step0-train-mode-dropout": (
        "ppo_kl 0.30 at step 0 of an on-policy run is read as a rollout/trainer mismatch; the table's own mis_kl "
        "(~7e-4) says the engine and trainer agree, which points at the trainer's two passes differing (dropout in "
        "train mode), but slime's mis_kl is no vocabulary name and no rule compares the two"),
    "attackllmjudge-trl-grpo-gemma3-1b-step394-grad-norm-983040-kl-14087": (
        "one record in a note's inline code (grad_norm=983040, loss=140.87, kl=14087) is read now, and its KL is an "
        "explosion by the KL rule; a grad-norm spike needs the neighbouring steps as points (told only as '~5'), and a "
        "single grad_norm with no baseline and no published ceiling is no spike the rules can judge"),
    "primerl-blogauthor-grpo-run12b-entropy-bonus-late-truncation-88pct-val-crash": (
        "the late blow-up is told in percent on a comment line (truncation s32 1.2% -> s40 47% -> s44 88%; every "
        "rollout at 4096 tokens): chains in percent are not read as a metric's logged scale, and 'truncation' is no "
        "metric name of the vocabulary"),
    # batches 34 and 35, joined development at round 33: their held-out misses, read at round 33 (12 of 17 caught by
    # general rules; these five are left)
    "goodturn-trl-dpo-adamw8bit-grad-norm-thousands-to-zero": (
        "grad_norm told falling from thousands to exactly 0 after spikes: read as a gradient spike (and a vanishing "
        "gradient would be as fair); the 8-bit optimizer state turning NaN is in the answer, not in the words"),
    "noisyrewards-2505-22653-rpr-only-peak-70-then-decline-7b-ppo": (
        "a keyword reward with no answer check, accuracy peaking then declining: the truncation (overthinking past the "
        "context limit) is in the authors' analysis left out of the excerpt; the words read as a hackable reward"),
    "visualthinker-2503-05132-rl-on-instruct-2b-think-length-drops-trivial": (
        "RL on an instruction model whose response length drops early and whose sample reasoning is one trivial "
        "sentence: a length drop alone is also the healthy shortening of a verbose start, and no rule reads a sample's "
        "reasoning as trivial"),
    "verifiers-661-vf-rl-wiki-search-oom-memory-grows-each-step": (
        "a phase-less CUDA OOM with 'memory accumulates with each step': the training step's autograd graph (entropy "
        "logged without detach) is the contributor's code reading; GPU memory growing per step is as often the "
        "rollout engine's, so the OOM stays the plain GPU one"),
    # batch 33, joined development at round 32: its held-out misses, read at round 32
    "tinyzeroexp-ppo-3b-entropy-coeff-005-entropy-10-crash-step-75": (
        "an entropy runaway told in a Chinese table whose header names the metric ('entropy 走势') and whose rows give "
        "the trend in words ('step 20-50 飙升至 ~10，step 75 崩溃'): no reader carries a column header's metric into "
        "its rows' sentences, and '崩溃' there is the run crashing, not the entropy collapsing"),
    # batch 32, joined development at round 31: its held-out misses, read at round 31
    "gahow-xtrain-grpo-1b-step-rollout-6s-of-8p5s": (
        "a commit message giving the training forwards' share of the step (~2.5 s of ~8.5 s, ~30%) with the rollout's "
        "share left out: the generation share is only the remainder, which no rule infers (round 31 removed its false "
        "OOM finding: 'no-OOM' now reads as a negation)"),
    "newcolab-aflow-grpo-code-tasks-zero-accuracy-test-result-unused": (
        "a Chinese fix plan's table where one task's accuracy sits at 0% beside others at 30-40%: a per-task reward "
        "that never pays is the cause (left out), and a 0% row beside non-zero rows is also what a hard task looks "
        "like, so no rule reads it without the stated cause"),
    "openclawverl-jiuwenclaw-async-grpo-lora-score-drop-tool-use-collapse": (
        "the owner's own columns (critic_mean, race_to_bottom: the share of groups dropped for max reward < 0.05) and "
        "agent timeouts; zero-advantage groups are named only by the owner's filter, which no vocabulary maps, and "
        "the 'timeout' wording is read as an NCCL timeout first"),
    # batch 31, joined development at round 30: its held-out misses, read at round 30
    "gpt2048-findings-gptoss-ellipsis-strategy-free-reward-zero-std": (
        "TRL dicts where the total reward is a constant +1 while the task component sits at its floor (-1, all "
        "timeouts), every group without variance and every completion clipped: the three findings above "
        "reward_hacking_shortcut (4th) are true of the records too; reading a component pinned at its floor under "
        "a positive total as a shortcut would rank one lenient term above a run that is clipped on every sample"),
    "kggrpo-iself-retrieval-reward-single-call-cliff-step300": (
        "a CSV pasted below comment lines (round 29 reads it: 11 rows), but its columns are the project's own names "
        "(r_outcome, r_retrieval_contrib, em, num_tool_calls): no vocabulary maps an 'r_' prefix to a reward "
        "component or 'em' to the task's accuracy without guessing one project's naming"),
    "maxentgrpo-token-entropy-bonus-drgrpo-05b-countdown-zero-solve": (
        "a LaTeX table of arms by pass/mean/coverage/distinct columns where one arm scores .000 everywhere on one "
        "domain; that the arm is an entropy bonus driving degenerate policies is in the authors' discussion, not "
        "in the table"),
    "areal-2505-24298-naive-ppo-staleness-4-aime24-23-vs-oracle-42": (
        "a paper's table of AIME scores by maximum staleness (0, 1, 2, 4, 8, 16) for naive PPO: the fall is a number in a "
        "column the table's header names only as 'staleness'; reading a table's score column against a staleness column "
        "would fit this table, and the scores are not monotonic in staleness"),
    "claimcheck-qwen9b-hosted-grpo-reward-saturates-quote-validity-drops": (
        "a blog's eval splits saturating at 1.000 while 'quote validity dropped' on a later checkpoint: the falling quantity "
        "is the project's own sub-score, named nowhere else; the round-28 class reads performance, accuracy or an eval "
        "score falling while the reward rises"),
    "kevin-2507-11948-qwq32b-multiturn-grpo-junk-repetition-collapse": (
        "the sentence 'producing repetitive and nonsensi- / cal outputs' is broken across lines with a hyphen by the PDF "
        "copy; round 28 reads 'repetitive and nonsensical outputs' on one line, not a word split over two"),
    "skypilot-10269-slime-14b-tp4-vocab-softmax-oom-optimizer-state-on-gpu": (
        "a CUDA OOM whose only frame is slime's vocab_parallel_softmax, which both the log-prob passes and the training "
        "loss call: the frame names no phase, and the PR's answer (optimizer state on the GPU) is not in the log"),
    # batch 28, joined development at round 27: its held-out misses, read at round 27 (an entry leaves when a general
    # rule catches it)
    "finetuningeval-cita-pbt-llama31-8b-negative-margin-gibberish": (
        "an owner's report of a DPO+KL variant tuned by population-based training: tables of learning rates, a loss that "
        "rises and margins in the minus thousands; DPO over-optimisation's rules read a loss going to 0 with margins "
        "exploding upwards, and reading negative margins with a rising loss as a too-high learning rate would fit this run"),
    "areal-138-qwen3-8b-code-task-reward-flat-no-eos": (
        "'Task reward does not increase' with the charts only linked: the responses without EOS (no_eos_ratios near 0.6, a "
        "max_new_tokens too small) are in the maintainer's reading of the charts, left out; round 24's no-EOS class "
        "(responses_without_eos_written) reads them when told, and a flat reward alone is no truncation"),
    "unlockdeepseek-40-grpo-tensor-1024-vs-1025-max-seq-length": (
        "'The size of tensor a (1024) must match the size of tensor b (1025) at non-singleton dimension 1' (and 780 vs "
        "781 in the title): no configured max length is in view to tie N to a sequence cap, and an N vs N+1 mismatch is "
        "as often an off-by-one in a label shift or an added token; not read at round 24"),
    "verl-3597-megatron-dapo-qwen3-14b-long-run-crash-train-rollout-mismatch": (
        "a Megatron DAPO run that crashes in long training while FSDP does not: the train/rollout mismatch is only in "
        "the reporter's later comment, left out; 'megatron aligned with fsdp' names a backend gap, and reading every "
        "long-run crash as a log-prob mismatch would be fitted to this thread"),
    # batch 26, joined development at round 25: its held-out misses, read at round 25 (an entry leaves when a general
    # rule catches it)
    "rllm-qwen35-swe-grpo-unfused-logits-oom-21gib": (
        "'Tried to allocate 21.48 GiB' on an 80 GB card with no frame or phase word in view: the log-prob pass (materialised "
        "logits of a 248K vocabulary over a 23K-token row) is in the left-out lines; reading every large allocation as "
        "the logits would misplace the update and rollout OOMs; not read at round 25"),
    "pvg-trl-ppo-1p5b-valid-answer-rate-zero-stale-lookup": (
        "a run-level valid_answer_rate=0 told in a comment beside a parseable rate of 42.58%: the contradiction between two "
        "of the owner's own metrics is what shows the stale lookup, and no vocabulary key names valid_answer_rate; a "
        "rule reading any rate of 0 against another rate would be fitted to this report"),
    "rlexploration-trl-grpo-spongebob-repeat-fills-128-tokens": (
        "every completion clipped at 128 tokens (clipped_ratio 1.0) while the keyword reward climbs to its maximum: "
        "truncation is found first; that a length-filling repetition earns the top reward is in the left-out analysis, "
        "and reading 'all clipped while the reward is high' as hacking would fire on runs whose reward is only the "
        "answer inside a long, truncated reasoning; not done at round 25"),
    "verlvllm-rlnotes-qwen3-06b-logprob-mismatch-degenerate-tails": (
        "the owner's ground truth is that the rollout-vs-actor disagreement sits in degenerate repetition tails of "
        "capped sequences; what is in view reads as the log-prob mismatch and truncation, and the tails are named only "
        "in the left-out localisation; not read at round 25"),
    # batch 22, joined development at round 21: its held-out misses, read at round 21 (an entry leaves when a general
    # rule catches it)
    "calagent-art-grpo-qwen25-15b-mixed-categories-59pct-skip-flat": (
        "a share of zero-variance groups told only as '35% training rate (59% skip)' with the accuracy flat: no finding. "
        "The owner reads the skips as groups whose rollouts all succeed or all fail (no reward contrast), but the words name neither groups "
        "nor rewards; reading a bare 'N% skip' as zero-variance groups would read other skips (filtered data, failed "
        "rollouts); not done at round 21"),
    # batch 19, joined development at round 18: its held-out misses, read at round 18 (an entry leaves when a
    # general rule catches it)
    "jasonfungmlx-granite-dpo-lr1e4-loss0-reward-diff-18": (
        "a DPO run at lr 1e-4 with the loss at 0 and reward margins of 18 in a metric table: no finding. The margin is "
        "written 'Reward Diff=18.2', a two-word key the reader does not take (only identifier keys), and reading a bare "
        "'reward diff' as the DPO margin would misread other runs' reward differences; not done at round 18"),
    "rlvr-eaaj-grpo-stageb-clipping-gate-stop-cap640": (
        "a clipping gate stopping a run at a 640-token cap: no finding. The clipped share (completions/clipped_ratio "
        "0.1406) is in one pretty-printed JSON record over several lines, which the reader does not join, and the stop "
        "reason in words ('exceeded 10% / completion clipping') is wrapped over two lines; left at round 18"),
    # batch 27, read at round 26: no general rule found for these seven
    "text2sqlrlvr-verl09-smoke-bird-reward-notimplementederror": (
        "a config key silently ignored (veRL 0.9 moved custom_reward_function under reward.) is named only in the left-out "
        "bullet; what is in view is a launch script and an owner's note that tells last milestone's 24 GB OOM as overcome "
        "('从 24GB OOM 到 ... 打通'), read as a GPU OOM. Round 26 stopped the script's switches naming the OOM's phase "
        "(enable_sleep_mode), but a Chinese OOM told as left behind by moving to a larger card is no general class yet"),
    "kencoken-qwen-grpo-e10-countdown-7b-zero-std-plateau": (
        "the zero-std share is a Markdown table column headed 'zero%' (the owner's short name for frac_reward_zero_std) "
        "rising 0.04 -> 0.61; reading an arbitrary column name as that metric would be fitted to this table, and the "
        "entropy column beside it reads as entropy collapse"),
    "text2sqlgrpo-trl-3b-1000-steps-reward-plateau-kl-keeps-rising": (
        "a KL rising monotonically while below 0.001 (0.000238 -> 0.000691) beside a reward plateau: the owner's reading is "
        "drift that buys no reward, but a KL that small is below every framework's warning level, and a rule firing on any "
        "rising KL would fire on every healthy run"),
    "pure-2504-15275-prm-vr-doubled-pseudo-positive-repetition-collapse-step-365": (
        "a repetition collapse told by a paper's 'repetition score' and 'high repetition ratio' (its own metric) rising with "
        "the clip ratio: the clip ratio reads as truncation; no framework logs a repetition ratio to read by name"),
    "gitcode-easyr1-resume-from-checkpoint-oom": (
        "a Chinese write-up's '内存不足(OOM)' on resuming from a checkpoint: 内存 is host RAM in the Chinese wording class "
        "(显存 is GPU memory), and the vLLM version cause is read from the answer; nothing in view names the GPU"),
    # batch 17, read at round 16: no general rule found for these two
    "ocamlergrpo-runaway-penalty-length-filling-hack": (
        "an owner's collapse analysis (entropy falling, frac_zero_std to 1, END-marker spam to the length limit) whose "
        "reward-hacking cause is in the left-out root-cause line; what is in view reads as entropy collapse (found) "
        "and repetition, and a reward table of one dominant value is no shortcut by itself"),
    "trinity-283-rollout-weight-sync-nccl-watchdog-timeout": (
        "an NCCL watchdog timeout in the process group named rollout_weight_sync: both readings are right (nccl_timeout "
        "expected, vllm_weight_sync_failure secondary) and the weight-sync finding ranks first"),
    # batch 16, read at round 15: no general rule found for these two (the owners' write-ups of one Space)
    "hfspace-chargebackops-grpo-eval-fallback-spec-gaming": (
        "an eval-score table whose last three GRPO checkpoints equal the heuristic baseline bit for bit, and a rollout "
        "whose completions are one invalid action each: the gaming is of the eval helper's fallback to the heuristic, "
        "which no metric or wording in the excerpt names; reading 'scores equal to a baseline' as a shortcut would fire "
        "on every run that merely matches its baseline"),
    "hfspace-chargebackops-grpo-post-sft-gradient-collapse": (
        "one row of a cross-iteration summary table ('grad_norm > 0.005 freq' 5%, 'KL max' 0, 'Entropy max' 0.017): the "
        "vanishing gradient is in a column that counts steps above a threshold; a reader of such derived columns, or "
        "of 'KL max 0' as a policy that never moved, would be fitted to this one table"),
    # batch 15, read at round 14: no general rule found for this one
    "msswift-3353-cosine-reward-chars-vs-tokens": (
        "the cause (cosine_max_len counted in characters vs max_completion_length in tokens) is read from the "
        "reward code, not from a log or a symptom a rule can see"),
    "coursia-13614-honest-reward-zero-last-match-extractor": (
        "the cause (an extractor keeping the last match while generation never stops) is read from the reward code; the French description names no symptom wording a general rule reads"),
    "qwen-107-dapo-lora-grad-explosion-bf16-nan": (
        "the NaN shows only in the reporter's own debug prints (gradient maxima per layer, Chinese labels); the cause (SDPA math fallback in bf16) is read from code"),
    "verl-224-rollout-workers-11g-host-ram-96g": (
        "host RAM shown only as a process table and '96g memory' beside the GPUs' 80g; the memory words read as a GPU OOM (before round 17, when the table's header 'MEM(GB)' was not read as one, its rollout frames read as the engine phase)"),
    "primerl-blogauthor-grpo-qwen35-9b-run5-train-reward-up-val-down-class-abandoned": (
        "the validation accuracy's arrow chain is read now (0.314 -> 0.132), but the training reward's rise is in the "
        "owner's verdict left out of the excerpt and told only as '\"rising reward\" MASKS'; a per-class recall table "
        "with one class falling to 0 has no reader"),
    "rllm-qwen35-swe-grpo-micro2-packing-logprob-mismatch": (
        "veRL's rollout-vs-actor metrics in an A/B Markdown table whose columns are two configurations (micro=1, micro=2), "
        "not steps, under a header with an empty first cell: the summary-row reader keeps the first column (the healthy "
        "arm: probs_diff_mean 0.0027), and the bad arm's 0.017 is below the shared log-prob diff bound; reading such "
        "comparison columns as separate runs, and a veRL-only bound of 0.01 for training/rollout_probs_diff_mean, are a "
        "reader change left for a later round"),
    "archercoder-6-code-reward-fn-1000s-gpu-idle": (
        "batch 41 (joined development at round 39; no rule written for it yet): a code reward function taking ~1000 s a step with the GPUs idle, told in words; no rule reads a slow reward function as low throughput, and the hypotheses rank reward_function_misconfig, generation_bound, reward_hacking"),
    "codescout-59-agent-rl-reward-drop-unclosed-think-final-turn-tool-calls": (
        "batch 41 (joined development at round 39; no rule written for it yet): an agent's reward drop from unclosed think tags on its final turn, told in words; the hypotheses rank reward_hacking_shortcut, tool_call_parse_errors, reward_function_misconfig"),
    "composerl-87-online-rl-runs-fail-timeout-on-distributed-call": (
        "batch 41 (joined development at round 39; no rule written for it yet): online RL runs failing on a distributed call's timeout, told in words without the NCCL or watchdog strings; the hypotheses rank the weight sync, the log-prob mismatch and reward hacking"),
    "mathverify-50-grpo-threaded-reward-signal-main-thread-verify-fails": (
        "batch 41 (joined development at round 39; no rule written for it yet): Math-Verify's signal-based timeout failing in a reward worker thread ('signal only works in main thread'); no signature reads it as the reward function's, the hypotheses are unrelated"),
    "nemogym-1304-finance-search-grpo-94pct-zero-tool-calls": (
        "batch 41 (joined development at round 39; no rule written for it yet): an agent learning to skip its search tool (94% of rollouts with zero tool calls) as a shortcut; tool_call_parse_errors and agent_format_protocol_failure are ranked, not the shortcut"),
    "nemoplatform-943-nemo-rl-dpo-smoke-train-loss-ln2-accuracy-zero": (
        "batch 41 (joined development at round 39; no rule written for it yet): a DPO smoke test's first record at ln 2 with accuracy 0 is the expected start, read as no learning signal (an error) and a repetition warning"),
    "riptvla-10-openvla-oft-ript-libero-spatial-uniform-success-rollout-loop-hangs": (
        "batch 41 (joined development at round 39; no rule written for it yet): a VLA RL rollout loop hanging when every sample of a group succeeds or fails (uniform groups filtered to nothing), read as a hang (NCCL timeout warning)"),
}
"""Development cases the rules do not catch, each with the reason it is left (a case no general rule
catches without fitting its own sentence). They are strict xfails: a rule that starts catching one
fails the test until the entry is removed. Session 4 round 4: four of batch 4 (its other 30 pass); round 5: none of batch 5, trl-5312 (its title's wording is a class now: weights not synced to vLLM) and dressage-1 (garbage rollouts right after a weight update: the round-3 class, which named only the rollout mismatch, names the weight sync too). Round 7: batch 8's ten documented misses, each caught by a framework string or a wording class tested on other wordings (tests/test_diagnosis_wording_classes.py, round 7). Round 10: batch 11's six misses, each caught by a general rule (round 10's tables there), none left. Round 13: six of batch 14's seven misses and five of round 12's six documented ones (slime-1497, openr1-365, azr-14, trl-4159, verl-3671) caught by general rules (round 13's tables); llamafactory-2819 and followcomplexinstruction-2 left. Round 14: ten of batch 15's eleven misses caught by general rules (round 14's tables); hfspace-trl-asyncgrpo left. Round 15: nine of batch 16's eleven misses caught by general rules (round 15's tables and the prose metric reader); the two ChargebackOps write-ups left. Round 16: fifteen of batch 17's seventeen misses caught by general rules and two framework strings (round 16's tables); ocamlergrpo and trinity-283 left. Round 17: batch 18 joined development with its eleven held-out misses, all caught by general rules (round 17's tables: the start-up GPU-count strings of veRL, ROLL, vLLM and Ray; zero-variance groups, entropy runaways and a KL far above its target told in run reports; an OOM told as fixed is no OOM); none left; and trinityrft-608 of batches 6-7 (truncated responses told as kept for training like finished ones). Round 18: batch 19 joined development with its ten held-out misses; eight caught by general rules (round 18's tables: an entropy fall while the reward rises is a warning, not an error; TRL's weight-update group port 51216 in a store connect timeout; a vLLM weight loader's keyword mismatch during a weight update; tool-call parse failures; a GPU utilisation level before its noun; a mini-batch size told zero; the Chinese of an abnormal length rise and of repeatedly hitting the length limit; an OOM only as a condition); jasonfungmlx and rlvr-eaaj left. Round 19: batch 20 joined development with its six held-out misses, all caught by general rules (round 19's tables: an exception through the engine's collective_rpc frame on a server that served a weight-update route; vLLM V1's missing model_executor and TRL's 'move the model to vLLM' told failing; a run of '!' as the output of a LoRA run; a JVM out of memory as host memory; a stall in the generation phase; a KL spike judged against the KL's non-zero values); none left. Round 20: batch 21 joined development with its nine held-out misses, all caught by general rules (round 20's tables: the frameworks' batch-arithmetic checks - veRL's split assertion 'N % M != 0', DeepSpeed's batch assertion as its traceback prints it and its _configure_train_batch_size frame, veRL/TRL/OpenRLHF checks in other words; a rate told only 0 or 1 at batch size 1; keyword arguments removed to make a call run; a printed sample running one letter; a veRL timing record pasted one key per line; the generation share told as 'most of' the step; a length told grown into its cap, read also on a sentence the metric reader took values from; a shortcut or guessing told as learned); none left. Round 21: batch 22 joined development with its eight held-out misses; seven caught by general rules (round 21's tables: the weight-update call sites of a native or py-spy stack; an OOM named as what a change fixes is no OOM; garbled '!!!!' output told as starting after the weight sync, also in Chinese; a vLLM KV-cache allocation at start-up as the rollout engine's memory and the Chinese of a GPU out of memory; the generation share as a ratio's label; a throughput told fallen in one sentence; a clip fraction told at 0.3 or more; the Chinese of a quantity all NaN); calagent-59pct left. Round 22: batch 23 joined development with its six held-out misses, all caught by general rules (round 22's tables: one negation for every described failure, English and Chinese, and an OOM told as avoided; XLA's RESOURCE_EXHAUSTED device-buffer allocation and Apple Metal's out-of-memory status; a printed rollout running one special token; all exclamation marks told in Chinese, and 'N卡在' read as N GPUs, not stuck; the entropy told fallen by orders of magnitude or to 1e-3 or less; the advantages told all zero, also in Chinese); none left. Round 23: batch 24 joined development with its three held-out misses, all caught by general rules (round 23's tables: torch autograd anomaly mode's "Function 'XBackward0' returned nan values in its Nth output" as a non-finite gradient, so a backward traceback is no longer read as an update OOM by retrieval; an OOM message whose sentence runs on to the next line that names the phase, and the update frames of veRL 0.9.1's engine workers and OpenRLHF 0.11.2's optimizer_step; the generation cap told too small, and a reward told falling under a configured cap as a check-first info); none left, and none of the sixteen older ones caught. Round 24: batch 25 joined development with its fifteen held-out misses; eleven caught by general rules (round 24's tables: 'train-infer' and NeMo-RL's logprob error above a value, the rollout importance-sampling ratio told at 2 or more (ms-swift is_weight_mean, veRL rollout_corr); veRL's DataProto.chunk assertion as batch arithmetic, not a config error; torch's view size error where rewards are grouped (TRL, slime, OpenRLHF); the batch size lowered by auto_find_batch_size in a group trainer; rollouts degrading at lr 0 and a reward at 0 after each validation as the weight update; a logged loss scaling with the micro-batches and NeMo-RL's clamped ratio outside its clamp interval as metric artifacts; the Chinese of a GPU's memory, CUDA/GPU/显卡 + 内存不足); areal-138, orz-20, unlockdeepseek-40 and verl-3597 left, and none of the sixteen older ones caught. Round 25: batch 26 joined development with its sixteen held-out misses; ten caught by general rules (round 25's tables: trends told in words with the same rising verbs - the share of prompts with accuracy 1 or 0 or of all-correct groups growing, the entropy and the response length rising together, the length still growing after the reward stalls, the gradient norm climbing or swinging wildly, also in Chinese; a gap in the tokens' probabilities between the training and the inference side; host memory told growing linearly, also in Chinese; zero tool calls in a batch; GPUs at 0% utilisation with full memory; the Chinese of a median length at the cap; DPO margins told all zero); rllm-micro2, rllm-21gib, pvg, rlexploration, verlvllm and zingnex left, and none of the twenty older ones caught. Round 26: batch 27 joined development with its thirteen held-out misses; six caught by general rules (round 26's tables: a configuration assignment or a switch's name - a launch script's override, a flag, a YAML key, enable_*/use_* in a sentence - names no OOM phase; the share of prompts at a pass rate of 90% or more and dynamic sampling's falling efficiency as zero-variance groups (DAPO filter_groups, veRL num_gen_batches); GPUs idle during the rollout; a length staying at its cap and a reward at 0 over a run, also in Chinese; an entropy spike; a training reward rising while the correctness falls; and a trend verb negated or prevented inside its match through the one negation, which removed the false alarm on "we clip the grad norm so it does not keep increasing"); verl09, kencoken-e10, text2sqlgrpo's length and KL, pure, srt and the EasyR1 resume OOM left, and none of the twenty-six older ones caught. Round 27: batch 28 joined development with its fourteen held-out misses; eleven caught by general rules (round 27's tables: a zero gradient on one or two steps that log groups with reward variance; the gradient norm and the KL told zero together; a called-back function's positional-argument TypeError; a LoRA adapter told not synced and stale adapters used by the rollouts; an entropy told rising sharply as a noun; low-precision and stale rollouts told doing damage; a coding agent exiting early, skipping or editing the unit tests; a critic's explained variance told negative or low and its gradient norm told large; printed completions with none of the tag pairs the prompt asks for, advisor/diagnosis/samples.py); finetuningeval, sao's collapse and the retokenisation blog left, and none of the thirty-three older ones caught. Round 28: batch 29 joined development with its twelve held-out misses; eight caught by general rules (round 28's tables: a check that finds the trainer's and the engine's log-probs unequal; the engine crashing after every weight sync; malformed tool calls told increasing, also in Chinese; the weight broadcast told as the step's bottleneck; repetitive and nonsensical outputs; performance falling despite the reward's rise, and training rewards not matched by an oracle; generated code calling or copying the reference implementation; a policy that learned to output empty strings; a group of two samples in a group-relative run); areal's staleness table, claimcheck's sub-score, kevin's hyphen-broken sentence and skypilot's phase-less OOM left, and none of the thirty-six older ones caught. Round 29: batch 30 joined development with its fourteen held-out misses; nine caught by general rules (round 29's tables: the length told climbing or shooting up to an abnormal value; the reasoning told shrinking, fading, or short and uninformative; pass@k no better than pass@1 and samples landing on one answer; the scorer's values lost before the trainer logged the reward as 0; the reward's spread told falling; the weight-update path told failing and a FileNotFoundError on the engine side; a KL spike whose stated peak is below the metric rule's kl_floor is no explosion, nor the KL told falling after it; and a CSV pasted below comment lines or after another table is read); gpt2048's lenient term, kggrpo's own column names, maxentgrpo's arm table and rango's two Korean write-ups left, and none of the forty older ones caught. Round 30: batch 31 joined development with its eight held-out misses; seven caught by general rules (round 30's tables: the Chinese of a model repeating itself; skipping the reasoning to answer directly and answers guessed without reasoning; a generated kernel with an empty body; the entropy told swinging severely; the vLLM OpenAI server's prompt-validation frames; an NCCL error in a NeMo-RL run with generation on its own GPUs; evaluations told unharmed temper a training-dynamics error told in words to a warning, a new signature field `tempers`); AutoTriton's ablation count table left, and none of the forty-five older ones caught. Round 31: batch 32 joined development with its eighteen held-out misses; fifteen caught by general rules (round 31's tables: an engine hanging inside its weight-update call and a weight broadcast deadlocking the run; Ray's ActorUnavailableError beside a crashed worker; frac_reward_zero_std at 1 on most steps; a zero gradient norm for every update with the loss unchanged; torch's 'does not require grad and does not have a grad_fn' as frozen parameters; a format score rising while the accuracy is destroyed, and a score reached through verbosity; an agent that stopped acting; a log-prob diff that should be 0 and is not; NaN as a verb; rollouts turning to gibberish within a few optimizer steps; Unsloth's failed TRL patch warnings; a completion ending in special tokens against an end-anchored format regex; the response cap read from a pasted override for veRL's clip-ratio check); gahow's remainder, newcolab's per-task table and openclaw's own columns left, and none of the forty-six older ones caught. Round 32: batch 33 joined development with its ten held-out misses; nine caught by general rules (round 32's tables: a sentence hard-wrapped over two lines read across the break; a hypothesis named and answered no, 'Reward hacking? No.', also in Chinese; an all-zero or all-one group rate at 0.7 or more and frac_reward_zero_std as a report's field at 1; the format reward rising while the accuracy reward stays flat, also in Chinese; the Chinese of the reasoning shrinking and of jumping to the conclusion; a GRPO run told too slow in Chinese; garbage or NaN logits after a weight update; prime-rl's Mismatch KL as the rollout/trainer KL; an OOM during the weight hand-over into the engine as the engine's, the plain GPU OOM named too, and an OOM told as another problem than this one is none); tinyzeroexp's trend table left, and none of the forty-nine older ones caught. Round 33: batches 34 and 35 joined development with their seventeen held-out misses; twelve caught by general rules (round 33's tables: a reward manager's KeyError on a field of veRL's data format; Python's ImportError for a name the installed package does not define, as a version mismatch; an MoE model under ZeRO-3 told slow, and '慢的' as '慢得'; the entropy told running away or going from below 1 to 3 or more; the train-rollout KL told rising; an advantage told in the hundreds or more, beyond what normalisation allows; a near-perfect reward while the ground-truth accuracy stays low; a strict format reward told harming the run; no response receiving a positive reward; a per-token length reward with repetition in the input); msswift-8309, goodturn, noisyrewards, visualthinker's trivial reasoning and verifiers-661 left, and none of the fifty older ones caught. Round 34: batch 36 joined development with its nine held-out misses, all caught by general rules (round 34's tables: all-zero / all-one groups and scores all 0 in Chinese; a pairwise loss at 0.69 beside a reward-model or preference context; the Chinese of the inference/training log-prob gap; veRL's rollout_corr/kl as the train-rollout KL; an engine's LoRA slot never filled; a run failing during a weight update and a hang named with a weight-update mode; rollouts garbled a few words after the weight sync; an OOM while syncing the rollout's weights, in Chinese; and a weight-sync failure word no longer read across into a next sentence that denies it); none left, and none of the fifty-five older ones caught. Round 35: batch 37 joined development with its eight held-out misses; five caught by general rules and a framework's own message (round 35's tables: OpenPipe ART's 'Skipping tuning as there is no suitable data' and '(no training occurred)'; a model config's RoPE scaling newer than the installed transformers, its ValueError and the KeyError 'type'; a format reward a model never meets; a length penalty told to collapse the reward; and two note formats read as records - Markdown inline code around key=value pairs and a metric's values joined by arrows, with TRL's sampling_logp_difference stem as the rollout/trainer log-prob gap); attackllmjudge's single grad-norm record and primerl's two write-ups left; of the fifty-five older ones text2sqlgrpo's length at its cap is caught (a typed table's row of no metric is no longer taken as a record, so its sentence is read). Round 36: batch 38 joined development with its ten held-out misses; six caught by general rules (round 36's tables: a step time and a generation time told in one sentence read as timing records; asked how to cut the generation time; a throughput drop told in Chinese; a value function told worse than predicting a constant; a KL told climbed to 1 or more; DPO's reward/acc told converging to 1; LLaMA-Factory's trainer_log.jsonl records with DPO saturation read from loss and accuracy alone); anakin87, bugbamboo, littlemex and sarthakb v2 left, and none of the fifty-six older ones caught. Round 37: batch 39 joined development with its fourteen held-out misses; eleven caught by general rules and framework strings (round 37's tables: SGLang's context-length refusal; Megatron-core's scheduler assertion of a zero-step schedule, ROLL's and slime's batch arithmetic; TRL's PPO mini-batch update beside a log-prob frame; 'OOM-killed' as host memory; the scorer hacked, tricked or fooled as a verb, and wrong content rated well by the reward model; a thinking or reasoning collapse and plural subjects dropping their reasoning; the Korean of all-positive samples; '≈' between a key and its value, NeMo-RL's gen_kl_error; keys with spaces around their slashes, so a notebook's 'completions / clipped_ratio' is read; a constant reward under full truncation told as a warning beside the truncation error; one KL spike that falls back at once a warning); bullscows' Russian table, researchvault's worded table and spiral's fixed-opponent table left, and unsloth-nb's T4 notebook now gets a true truncation error from the clip ratio it could not read before; none of the sixty-one older ones caught. Round 38: batch 40 joined development with its eleven held-out misses; eight caught by general rules and framework strings (round 38's tables: torch's optimizer-state allocation (_init_group, exp_avg_sq) as the update's OOM; SGLang's scheduler exception in a log that served a weight update; numpy's zero-size reduction where batch sizes are named, an empty batch; veRL's and slime's dynamic-batching token budget smaller than one sample; an OOM told as a different problem is none; an OOM told as following from turning gradient checkpointing off as the update's; memory told growing until the program ends as host memory; the agent or parser told to receive or extract no tool calls); rllm-765 passes through the similar-known-cases guess (its sibling pull request rllm-768, another thread, joined the index); easyr1-pr1's hedged OOM and vllm-17117's 'deepspeed's turn' left; none of the sixty-five older ones caught. Round 39 (session 21) adds no rule (and reads the kept text for retrieval without runner prefixes, so a Ray worker's prefix on every line no longer moves the guesses): when no rule and no similar case finds anything and no metric record was read, a description of 25 known terms or more gets the three problem categories its wording is nearest to as a whole (Rocchio centroids of the known cases, info-level hypotheses, advisor/diagnosis/similar.py class_findings; nothing when the healthy cases are nearest), chosen on fourteen held-out batches each scored with the rules of its own freeze and an index of the batches before it (benchmarks/class_fallback_retro.py: 109/267 = 41% -> 166/267 = 62%). Judged without its own thread in the index, it names the expected category of eighteen of the sixty-seven documented misses (anakin87, autotriton's test-only reward, easyr1-pr1, followcomplexinstruction-2, hfspace-trl-asyncgrpo, llamafactory-2819, msswift-8233 and -8309, openr1-628, orz-20, rango's two write-ups, sao, sarthakb v2, spiral, srt, the retokenisation blog and zingnex); forty-nine left, among them primerl's blog-author run and rllm's micro2 packing, which it names too but whose metric records were read (a run with metrics gets no hypotheses). Batch 41 joined development at round 39 unread: its seven misses at round 39 (four of them told in words, with hypotheses that miss) are listed, none worked."""


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES if c["split"] == "development"])
def test_development_case(case_id: str) -> None:
    ok, got = _result(case_id)
    if case_id in DEVELOPMENT_MISSES:
        assert not ok, f"{case_id} now passes: remove it from DEVELOPMENT_MISSES"
        pytest.xfail(f"documented development miss: {DEVELOPMENT_MISSES[case_id]}")
    case = next(c for c in CASES if c["id"] == case_id)
    assert ok, f"{case_id}: expected {case['expected']} ({case['input_kind']}); {got}"


def test_documented_misses_are_development_cases() -> None:
    dev = {c["id"] for c in CASES if c["split"] == "development"}
    assert set(DEVELOPMENT_MISSES) <= dev, set(DEVELOPMENT_MISSES) - dev
    assert all(len(why) > 20 for why in DEVELOPMENT_MISSES.values())


MEASURED_VALIDATION: tuple[int, int] | None = (0, 1)
"""The validation batch (``VALIDATION_BATCH``, now 42) as first measured, blind, at its rule freeze:
(passed, cases), the floor below which a change is a regression on held-out cases. None until it is
measured (the validation tests skip until batch 34 is measured); whoever measures it records the figure
here and in tests/cases/diagnosis/README.md (the history: batch 1's hash-split part 25/33 = 76%, batch 2
26/38 = 68%, batch 3 20/32 = 62%, batch 4 13/34 = 38%, batch 5 19/29 = 66%; batches 6 and 7, measured
together at the session-5 round-5 freeze: 12/24 and 12/24, 24/48 = 50%; batch 8 at the round-6 freeze:
4/15 = 27%; batch 9, 14 GitHub threads and 3 web pages, at the session-6 round-7 freeze: 14/17 = 82%;
batch 10 at the round-8 freeze: 13/17 = 76%, batches 9 and 10 together 27/34 = 79%; both joined
development at round 9; batch 11 at the round-9 freeze: 9/15 = 60%, joined development at round 10; batch 12, two blind collectors
(10 English issue threads; 14 threads, 7 of them in Chinese, and 1 web page), at the session-7 round-10 freeze:
17/25, and 15/23 = 65% once two threads already in ../shared were removed; joined development at round 11; batch 13, two blind collectors (14 English threads
aimed at metric questions, healthy runs and new projects; 14 threads found by error strings), at the round-11
freeze: 17/28 = 61%, joined development at round 12; batch 14, two blind collectors, at the round-12
freeze: 12/19 = 63%, joined development at round 13; batch 15, four blind collectors (18 threads of 13
repositories, 7 web pages or posts), at the round-13 freeze: 14/25 = 56%, joined development at round 14;
batch 16, two blind collectors (12 recent threads of 9 repositories, 6 owners' run reports on web pages), at the
round-14 freeze: 7/18 = 39%, joined development at round 15; batch 17, five blind collectors (14 threads of the
frameworks, downstream projects and DeepSpeed-Chat; 7 web pages; 10 files committed to public repositories and a
model card), at the round-15 freeze: 14/31 = 45%, joined development at round 16; batch 18, three blind collectors
(7 files committed to public repositories, 4 Hugging Face model cards, 4 threads found by error strings), at the
round-16 freeze: 4/15 = 27%, joined development at round 17; batch 19, five blind collectors (7 threads on training
dynamics, 6 owners' journals and 5 raw run records committed to repositories, 5 web pages and model cards, 9 crash
threads found by error strings; 14 of the 32 healthy runs), at the round-17 freeze: 22/32 = 69%, joined development at round 18; batch 20, four blind collectors (7 threads of
less-mined projects, 4 owners' notes and committed logs, 3 raw run records, 6 crash threads by error strings; one case
dropped before measuring), at the round-18 freeze: 14/20 = 70%, joined development at round 19; batch 21, six blind
collectors (3 pull-request runs of the main stacks, 3 web pages, 1 crash thread by error string, 7 single-GPU threads,
5 multi-GPU threads, 7 owners' committed records; one case dropped before measuring), at the round-19 freeze: 17/26 = 65%,
joined development at round 20; batch 22, five blind collectors (5 downstream-project threads, 1 Chinese thread, 1
systems-project thread, 8 owners' journals, 2 cards and documentation pages), at the round-20 freeze: 9/17 = 53%,
joined development at round 21; batch 23, four blind collectors (5 non-NVIDIA/non-PyTorch stack threads, 4 vision-language
RL threads, 7 committed logs and owners' notes; forum threads gave none), at the round-21 freeze: 10/16 = 63%, joined development at round 22; batch 24, four blind
collectors cut short by the library's search budget (3 cases after one dropped), at the round-22 freeze: 0/3, joined
development at round 23; batch 25, six blind collectors (3 downstream-project threads, 4 crash threads by error strings,
3 metric threads, 1 web page, 5 pull-request threads, 6 recent framework threads; one dropped before measuring), at the
round-23 freeze: 7/22 = 32%, joined development at round 24; batch 26, six blind collectors sent to wells other than issue
threads (3 troubleshooting pages of one project, 8 Chinese write-ups, 5 blogs and repositories' analyses, 10 committed
run records and owners' reports, 8 papers' failed runs; none dropped), at the round-24 freeze: 18/34 = 53%, joined development at round 25; batch 27, four blind collectors (6 papers' failed
runs, 4 technical reports' RL-stage failures, 4 Chinese write-ups, 7 owners' run reports of three repositories; none
dropped), at the round-25 freeze: 8/21 = 38%, joined development at round 26; batch 28, five blind collectors (5
papers' failed runs, 5 engineering blog posts, 5 Chinese-language threads, 2 owners' committed records, 6 downstream
projects' threads; none dropped), at the round-26 freeze: 9/23 = 39%, joined development at round 27; batch 29, five blind collectors (5 papers' failed
runs, 8 threads of the main stacks and the projects next to them, 5 Chinese-language threads, 2 owners' write-ups, 5
engineering reports and owners' notes; none dropped), at the round-27 freeze: 13/25 = 52%, joined development at round 28; batch 30, five blind collectors (3 crash
threads, 2 metric threads, 3 healthy runs' reports, 6 owners' run records of three repositories, 7 papers' failed runs;
none dropped), at the round-28 freeze: 7/21 = 33%, joined development at round 29; batch 31, five blind collectors (4 crash
threads, 3 metric threads, 2 healthy runs, 4 Chinese-language threads, 4 papers' failed runs; none dropped), at the
round-29 freeze: 9/17 = 53%, joined development at round 30; batch 32, five blind collectors (5 committed run
records and owners' notes, 7 pull-request threads, 5 web pages, 5 threads of projects beside the frameworks, 4 healthy
runs; none dropped), at the round-30 freeze: 8/26 = 31%, joined development at round 31; batch 33, four blind
collectors (4 committed run records, 4 pull-request threads, 6 healthy runs, 3 Chinese-language sources; none dropped),
at the round-31 freeze: 7/17 = 41%, joined development at round 32; batch 34, five blind collectors (3 crash
threads by error strings, 5 metric threads and pull requests, 7 papers' failed runs, 2 threads of projects beside
the frameworks; the healthy-run collector kept none; none dropped), at the round-32 freeze: 5/17 = 29%; batch 35,
four blind collectors (3 papers' failed runs, 5 crash threads by error strings, 3 English web pages, 1 Korean page;
none dropped), measured at the same freeze: 7/12 = 58%; batches 34 and 35 together 12/29 = 41%, both joined development at round 33; batch 36, four blind collectors (7 committed run records, 2 threads of the inference libraries opened by RL users, 5 recent framework threads, 3 Chinese-language sources; none dropped), at the round-33 freeze: 8/17 = 47%, joined development at round 34; batch 37, four blind collectors (5 owners' experiment notes and a committed log, 2 Hugging Face discussions, 3 threads of projects beside the frameworks, 2 papers' failed runs; none dropped), at the round-34 freeze: 4/12 = 33%, joined development at round 35; batch 38, four blind collectors (7 English write-ups of people's own runs, 6 threads of fine-tuning toolkits, 4 Japanese reports committed by their owners, 3 framework threads of 2024-25; none dropped), at the round-35 freeze: 10/20 = 50%, 7/16 = 44% without the four cases of the collector that saw rule text, joined development at round 36; batch 39, four blind collectors (4 papers' failed runs, 6 notebooks and Korean/Russian owners' reports, 5 threads and pull requests of infrastructure-heavy stacks, no forum thread; none dropped), at the round-36 freeze: 1/15 = 7%, the lowest yet, joined development at round 37; batch 40, six blind collectors (8 threads of agentic RL stacks, 3 threads of the inference engines opened by RL users, 3 threads of fine-tuning toolkits, 2 write-ups outside issue trackers, 4 threads of newer stacks, 4 threads of reasoning-reproduction and vision-language RL repositories; none dropped), at the round-37 freeze: 13/24 = 54%, joined development at round 38; batch 41, three blind collectors (3 threads of domain-specific agent RL repositories, 3 threads of other modalities' and domains' RL, 5 threads of reward-model, preference and reward-side training; none dropped), at the round-38 freeze: 3/11 = 27% (4/11 = 36% with round 39's hypotheses), joined development at round 39 unread; batch 42, three collectors who started at or after their deadline (one 2026 NeMo-RL thread; the other two collected none), at the round-39 freeze: 0/1; the validation part is batch 42)."""


def _validation() -> tuple[list[str], list[tuple[str, str]], int]:
    val = [c for c in CASES if c["split"] == "validation"]
    if not val:
        pytest.skip(f"no held-out cases of batch {acc.VALIDATION_BATCH} yet: it is collected blind and measured "
                    "once at the rule freeze (earlier batches' figures are recorded in tests/cases/diagnosis/README.md)")
    passed = [c["id"] for c in val if _result(c["id"])[0]]
    misses = [(c["id"], _result(c["id"])[1]) for c in val if c["id"] not in passed]
    return passed, misses, len(val)


def _measured(n: int) -> tuple[int, int]:
    if MEASURED_VALIDATION is None:
        pytest.skip(f"batch {acc.VALIDATION_BATCH} ({n} cases) is not measured yet: measure it once with "
                    "benchmarks/diagnose_accuracy.py --show-misses and record the figure in MEASURED_VALIDATION")
    return MEASURED_VALIDATION


def test_validation_share_not_below_its_first_measurement() -> None:
    passed, misses, n = _validation()
    floor, measured_n = _measured(n)
    if n != measured_n:
        pytest.fail(f"the validation batch has {n} cases, measured on {measured_n}: a new held-out "
                    "batch is measured once, blind, and its figure recorded here")
    assert len(passed) >= floor, f"{len(passed)}/{n} validation cases; misses: {misses}"


@pytest.mark.xfail(strict=True, reason="batch 42 measured once at the round-39 freeze: 0/1 (goal 90%; one case, BATCH42.md). "
                   "Its miss, by kind (from the miss line only; not read yet): told in words, no rule finding, and the "
                   "three hypotheses by wording name other categories")
def test_validation_share() -> None:
    """The issue's goal on the held-out batch (>= 90%). If the recorded first measurement is below it, the
    recorder marks this a strict xfail naming the misses' kinds (as batch 2's was), not a rule fitted to them."""
    passed, misses, n = _validation()
    _measured(n)
    assert len(passed) / n >= 0.9, f"{len(passed)}/{n} validation cases; misses: {misses}"
