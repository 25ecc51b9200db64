#!/usr/bin/env python3
"""Regenerate examples.md: real artifacts rendered by rl-advisor from the Plans in examples/plans/.

Nothing in examples.md is typed by hand. Each example names a Plan file and the artifacts to
show; this script renders the Plan with render_config (and, for the Ray example, computes the
placement groups with plan_placement's ``ray_resources``) and writes the results verbatim.
tests/test_examples.py checks that the committed examples.md is byte-identical to a fresh run
and that every rendered artifact passes the framework validators of the pinned releases.

Usage:
    python scripts/regenerate_examples.py           # rewrite examples.md
    python scripts/regenerate_examples.py --check   # exit 1 if examples.md is stale
    make examples
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PLANS = REPO / "examples" / "plans"
OUTPUT = REPO / "examples.md"

FENCE = {"shell": "bash", "yaml": "yaml", "python": "python", "json": "json"}


@dataclass(frozen=True)
class Example:
    """One section of examples.md: a Plan and which rendered artifacts to show."""

    anchor: str
    title: str
    plan: str
    kinds: tuple[str, ...]
    intro: str
    ray_resources: bool = False
    options: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """RenderOptions for the cluster side (namespace, image, queue), as (field, value) pairs."""


FRAMEWORK_KINDS = ("launch_script", "framework_config", "accelerate_config", "entry_script")

EXAMPLES: tuple[Example, ...] = (
    Example(
        anchor="grpo-on-verl",
        title="GRPO on veRL: Qwen2.5-7B-Instruct, math with a verifier, 8×H100",
        plan="grpo-qwen2.5-7b-8xh100.yaml",
        kinds=FRAMEWORK_KINDS,
        intro=("A colocated (hybrid-engine) GRPO run: actor, rollout and reference share the 8 GPUs. "
               "The launch script is a list of Hydra overrides for `verl.trainer.main_ppo`; batch "
               "sizes count prompts, and `actor_rollout_ref.rollout.n` is the group size."),
    ),
    Example(
        anchor="grpo-on-trl",
        title="GRPO on TRL: Qwen2.5-1.5B-Instruct, math with a verifier, 8×H100 with colocated vLLM",
        plan="grpo-qwen2.5-1.5b-trl-8xh100.yaml",
        kinds=FRAMEWORK_KINDS,
        intro=("The same task on TRL 1.16, for one node: `trl.GRPOTrainer` under `accelerate launch` "
               "(the same YAML also runs as `trl grpo`) with ZeRO-2, vLLM colocated in the training processes (`vllm_mode: colocate`, "
               "`vllm_gpu_memory_utilization` from the Plan's rollout fraction), `num_generations` "
               "as the group size and `beta` as the KL coefficient (TRL's default is 0: no "
               "reference model). GRPOConfig has no `max_prompt_length`, so that Plan field is "
               "reported as not carried over."),
    ),
    Example(
        anchor="ppo-on-openrlhf",
        title="PPO on OpenRLHF: Llama-3.1-8B-Instruct with a reward model and a critic, 2×8×H100",
        plan="ppo-llama3.1-8b-openrlhf-2x8xh100.yaml",
        kinds=FRAMEWORK_KINDS,
        intro=("Four models and the vLLM engines colocated on all 16 GPUs (OpenRLHF's hybrid engine, "
               "`--train.colocate_all`, which requires engines × TP = actor GPUs), time-sliced with "
               "vLLM and DeepSpeed sleep. OpenRLHF 0.11.2 flags are dotted (`--actor.num_nodes`, "
               "`--algo.advantage.estimator`); the flat flags of older posts are rejected."),
    ),
    Example(
        anchor="dpo-on-trl",
        title="DPO on TRL: Qwen2.5-7B-Instruct from preference pairs, 8×H100 with ZeRO-3",
        plan="dpo-qwen2.5-7b-trl-8xh100.yaml",
        kinds=FRAMEWORK_KINDS,
        intro=("Offline: no rollout engine, no reward model; the reference is implicit in the loss. "
               "TRL 1.16's DPOConfig has no `max_prompt_length`: sequences are truncated with "
               "`max_length`. The entry script adds a JSONL metrics callback so that run_metrics and "
               "diagnose_run read exact numbers."),
    ),
    Example(
        anchor="ray-placement",
        title="A Ray placement: DAPO on Qwen2.5-32B, split rollout and training pools, 4×8×H100",
        plan="dapo-qwen2.5-32b-verl-4x8xh100.yaml",
        kinds=("ray_job",),
        ray_resources=True,
        intro=("Disaggregated async layout: a rollout pool of two nodes and a training pool of two "
               "nodes, rendered as veRL's bounded-staleness `separate_async` trainer (weights pushed "
               "once per step over the NCCL checkpoint engine, samples at most one step stale). "
               "`ray_resources` turns the Plan's pools into placement groups (bundles "
               "and strategy per pool, with the reason); the Ray job spec submits the veRL driver "
               "to an existing cluster through the Job Submission API."),
    ),
    Example(
        anchor="kuberay-rayjob-with-kueue",
        title="A KubeRay RayJob admitted by Kueue: the same DAPO run on Kubernetes",
        plan="dapo-qwen2.5-32b-verl-4x8xh100.yaml",
        kinds=("k8s_manifest",),
        options=(("namespace", "rl-team"), ("image", "registry.example.com/rl/verl:0.9.1"),
                 ("queue_name", "rl-team-h100")),
        intro=("One worker group per pool, whole-node GPU pods, secrets by reference. The RayJob "
               "carries the `kueue.x-k8s.io/queue-name` label and starts suspended, so Kueue "
               "admits all of its pods at once (gang scheduling) against the ClusterQueue quota "
               "of the GPU ResourceFlavor."),
    ),
    Example(
        anchor="reward-model-recipe",
        title="A reward-model recipe: Bradley–Terry RM on Llama-3.1-8B with OpenRLHF, 8×H100",
        plan="rm-llama3.1-8b-openrlhf-8xh100.yaml",
        kinds=FRAMEWORK_KINDS,
        intro=("Pairs in (prompt, chosen, rejected); one epoch; the checkpoint it writes is the "
               "reward model (and the critic's initialisation) of the PPO example above. Before "
               "using it, check held-out pairwise accuracy (65–75% is typical), the score scale, "
               "and the correlation of score with length."),
    ),
)


def _fence(text: str, lang: str) -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}{lang}\n{text.rstrip(chr(10))}\n{ticks}\n"


def _yaml(data: object) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _bundles(bundles: list) -> str:
    """Consecutive identical bundles collapsed: '16 × {GPU: 1, CPU: 12}'."""
    groups: list[list] = []
    for b in bundles:
        shown = "{" + ", ".join(f"{k}: {v:g}" if isinstance(v, float) else f"{k}: {v}"
                                for k, v in b.model_dump(exclude_none=True).items()) + "}"
        if groups and groups[-1][0] == shown:
            groups[-1][1] += 1
        else:
            groups.append([shown, 1])
    return " + ".join(f"{n} × {s}" for s, n in groups)


def _placement_table(resources) -> str:
    rows = ["| pool | roles | bundles | strategy | nodes | why |", "|---|---|---|---|---|---|"]
    for p in resources.pools:
        rows.append(f"| {p.name} | {', '.join(p.roles)} | {_bundles(p.bundles)} | `{p.strategy}` | "
                    f"{p.nodes} | {p.reason} |")
    rows.append("")
    rows.append(f"Total {resources.total_gpus} GPUs and {resources.total_cpus:g} CPUs on {resources.nodes} "
                f"nodes of {resources.gpus_per_node} GPUs; feasible: {'yes' if resources.feasible else 'no'}"
                + ("; " + "; ".join(resources.problems) if resources.problems else "") + ".\n")
    return "\n".join(rows)


def rendered_for(ex: Example):
    """(plan text, Plan, RenderedConfig) for one example, exactly as examples.md shows it."""
    from advisor.plan import plan_from_yaml
    from advisor.render import RenderOptions, render_config

    plan_text = (PLANS / ex.plan).read_text(encoding="utf-8")
    plan = plan_from_yaml(plan_text)
    return plan_text, plan, render_config(plan, options=RenderOptions(**dict(ex.options)))


KNOBS_HEAD = "# Memory knobs:"


def elide_knobs(content: str) -> str:
    """The ``# Memory knobs:`` comment every artifact starts with (one line per knob of the Plan's
    memory section), folded to one line: on this page it would repeat in every artifact."""
    lines = content.split("\n")
    if KNOBS_HEAD not in lines:
        return content
    i = lines.index(KNOBS_HEAD)
    j = i + 1
    while j < len(lines) and lines[j].startswith("#   "):
        j += 1
    folded = f"{KNOBS_HEAD} ({j - i - 1} lines, the Plan's memory section; not shown on this page)"
    return "\n".join(lines[:i] + [folded] + lines[j:])


def render_example(ex: Example, first_shown: dict[str, Example] | None = None) -> str:
    """One section. A Plan already printed by an earlier section is linked, not printed again."""
    plan_text, plan, rendered = rendered_for(ex)
    stamp = rendered.stamp
    out = [f"## {ex.title}\n", f"{ex.intro}\n",
           f"Plan: [`examples/plans/{ex.plan}`](examples/plans/{ex.plan}) · rendered for "
           f"{stamp.framework.value} {stamp.framework_version} by rl-advisor {stamp.rl_advisor_version}\n"]
    earlier = (first_shown or {}).get(ex.plan)
    if earlier is not None:
        out.append(f"The Plan is the one shown in [{earlier.title.split(':')[0]}](#{earlier.anchor}).\n")
    else:
        out += ["<details><summary>The Plan</summary>\n", _fence(plan_text, "yaml"), "</details>\n"]
        if first_shown is not None:
            first_shown[ex.plan] = ex
    if ex.ray_resources:
        from advisor.placement.resources import ray_resources

        resources = ray_resources(plan)
        out += ["### Placement groups (`ray_resources`)\n", _placement_table(resources)]
    shown = [a for a in rendered.artifacts if a.kind in ex.kinds]
    if not shown:
        raise SystemExit(f"{ex.plan}: render_config produced no artifact of kinds {ex.kinds}")
    for artifact in shown:
        out += [f"### `{artifact.name}`\n", _fence(elide_knobs(artifact.content), FENCE.get(artifact.format, ""))]
    if rendered.not_carried:
        out.append("Not carried over (no equivalent in this framework):\n")
        out += [f"- `{n.field}` = `{n.value!r}`: {n.reason}" for n in rendered.not_carried]
        out.append("")
    if rendered.notes:
        out.append("Defaults chosen while rendering:\n")
        out += [f"- {n}" for n in rendered.notes]
        out.append("")
    return "\n".join(out)


HEADER = """# Examples: real artifacts rendered by rl-advisor

Every file below was produced by `render_config` from a Plan in `examples/plans/`; nothing was
typed by hand (one comment block is folded: the `# Memory knobs:` list every artifact starts
with, which repeats the Plan's memory section). Regenerate with `python scripts/regenerate_examples.py` (or `make examples`). The
test suite checks that this page is byte-identical to a fresh regeneration and that every
artifact, key and flag on it is accepted by the pinned releases (veRL 0.9.1 Hydra schema,
OpenRLHF 0.11.2 argument parsers, TRL 1.16.0 config classes, KubeRay and Kueue CRD schemas).

To get the same files for your own run, write a Plan (see [SKILL.md](SKILL.md)) and call
`render_config` (MCP) or `rl-advisor render-config --plan plan.yaml` (CLI); change the Plan, not
the rendered files.

"""


AUDIT_ANCHOR = "audit-data"
AUDIT_TITLE = "Audit the data before the GPUs start: audit_data on the demo's data and on a seeded file"


def render_audit() -> str:
    """audit_data on the demo's toy workspace (built in a temporary folder, shown as <workdir>) and on
    the seeded TRL preference fixture of the tests; the text is the CLI's own report."""
    import tempfile

    from advisor.plan import Framework, Method
    from rl_advisor import tinymodel
    from rl_advisor.audit_tool import audit_data

    seeded = "tests/fixtures/audit/trl_pref_seeded.jsonl"
    with tempfile.TemporaryDirectory(prefix="rl-advisor-examples-") as tmp:
        ws = tinymodel.build_toy_workspace(Path(tmp) / "demo")
        demo = {m: audit_data(str(ws["prompts" if m == "grpo" else "pairs"]), plan=tinymodel.toy_plan(ws, m)).to_text()
                for m in ("grpo", "dpo")}
        seeded_text = audit_data(str(REPO / seeded), method=Method.DPO, framework=Framework.TRL,
                                 model=str(ws["model"])).to_text()

        def clean(text: str) -> str:
            return text.replace(str(Path(tmp) / "demo"), "<workdir>").replace(str(REPO) + "/", "")

        demo = {m: clean(t) for m, t in demo.items()}
        seeded_text = clean(seeded_text)
    return "\n".join([
        f"## {AUDIT_TITLE}\n",
        "`audit_data` (CLI `rl-advisor audit-data`) reads the data set the Plan will train on, streaming, and "
        "checks it against the loader of the Plan's framework and method (the fields and shapes it reads, a "
        "sample run through the framework's own data code) and against the Plan's limits, then for length "
        "bias, identical, empty and cut-off answers, exact and near duplicates, evaluation-set overlap, KTO "
        "label balance and reward coverage per `data_source`. Findings are ranked like `diagnose_run`'s, each "
        "with rows, cause and the key to set; `--html-report` adds length histograms. Thresholds and sources: "
        "`advisor/data/data_audit_rules.yaml`; fields per framework: `advisor/data/data_formats.yaml`.\n",
        "The demo's GRPO prompts (`rl-advisor demo` audits them before training; `<workdir>` is the demo's "
        "folder):\n",
        _fence("rl-advisor audit-data --path <workdir>/data/prompts.jsonl --plan plan.yaml   # the demo's toy GRPO Plan",
               "bash"),
        _fence(demo["grpo"], "text"),
        "The demo's DPO pairs: every chosen answer has the same length as its rejected one, so the length-bias "
        "test has no untied pair to count:\n",
        _fence(demo["dpo"], "text"),
        f"A seeded file ([`{seeded}`]({seeded}): a conversational row among plain-text rows, an empty "
        "answer, length bias, an identical pair, an exact and a near duplicate):\n",
        _fence(f"rl-advisor audit-data --path {seeded} --method dpo --framework trl --model <workdir>/tiny-llama",
               "bash"),
        _fence(seeded_text, "text"),
    ])


def build() -> str:
    toc = ["Contents:\n"] + [f"{i}. [{ex.title.split(':')[0]}](#{ex.anchor})"
                             for i, ex in enumerate(EXAMPLES, 1)] + \
        [f"{len(EXAMPLES) + 1}. [{AUDIT_TITLE.split(':')[0]}](#{AUDIT_ANCHOR})", ""]
    sections = []
    first_shown: dict[str, Example] = {}
    for ex in EXAMPLES:
        sections.append(f'<a id="{ex.anchor}"></a>\n\n' + render_example(ex, first_shown))
    sections.append(f'<a id="{AUDIT_ANCHOR}"></a>\n\n' + render_audit())
    return HEADER + "\n".join(toc) + "\n" + "\n".join(sections)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if examples.md is stale")
    args = parser.parse_args(argv)
    text = build()
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.is_file() else ""
    if args.check:
        if current != text:
            print("examples.md is stale: run python scripts/regenerate_examples.py", file=sys.stderr)
            return 1
        return 0
    if current != text:
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(REPO)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
