"""``rl-advisor demo``: the whole loop, for real, on this machine.

choose a method and a framework for a sample objective -> budget memory and plan placement for
the production-sized version of the run -> render a TRL GRPO run of a tiny model for this CPU ->
launch it (locally, or through a Ray head on 127.0.0.1 that the demo starts and stops) -> show a
live progress bar with the key metrics -> read the metrics back -> diagnose the run -> write an
HTML report with metric plots.

Every step uses the other parts' public functions. A part that is missing from this install
makes its step print why it was skipped; the rest of the loop still runs.

The narrative goes to stdout, the live progress bar to stderr; the run's own output goes to its
log file (the path is printed), never to this terminal.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

KEY_METRICS = ("reward_mean", "loss", "kl", "entropy", "response_length_mean")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "demo", help="Run the whole loop for real: choose, budget, place, render, launch a tiny "
        "TRL GRPO run on this CPU, watch it, diagnose it, write an HTML report.",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="local: a process group on this machine; ray: a Ray head on 127.0.0.1 "
                   "that the demo starts and stops")
    p.add_argument("--steps", type=int, default=30, help="GRPO steps of the tiny run [30]")
    p.add_argument("--out", default=None, help="HTML report path [<run dir>/report.html]")
    p.add_argument("--workdir", default=None,
                   help="where the tiny model and data are built [<data dir>/demo]")
    p.add_argument("--timeout", type=float, default=600.0, help="give up on the run after this many seconds")
    p.set_defaults(_run=run_demo)


# --------------------------------------------------------------------------- output helpers


def say(text: str = "") -> None:
    print(text, flush=True)


def step(n: int, title: str) -> None:
    say(f"\n[{n}/8] {title}")


def _try(what: str, fn: Callable[[], Any]) -> Any:
    """Run one step of the loop; a part missing from this install is skipped with the reason."""
    try:
        return fn()
    except ImportError as exc:
        say(f"  skipped: {what} is not available in this install ({exc})")
    except Exception as exc:  # noqa: BLE001 - a failing step must not hide the rest of the loop
        say(f"  {what} failed: {type(exc).__name__}: {exc}")
    return None


class ProgressBar:
    """One self-overwriting line on stderr when it is a terminal, else a line per few steps."""

    def __init__(self, total: int, stream: Any = None):
        self.total = max(total, 1)
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self._last_step = -1

    def update(self, step: int | None, state: str, last: dict[str, float]) -> None:
        step = step or 0
        frac = min(step / self.total, 1.0)
        width = 24
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        shown = "  ".join(f"{k.replace('_mean', '')} {last[k]:.4g}" for k in KEY_METRICS if k in last)
        line = f"  [{bar}] step {step:>3}/{self.total}  {shown}  {state} {time.monotonic() - self.t0:5.1f}s"
        if self.tty:
            self.stream.write("\r" + line[:160].ljust(160))
            self.stream.flush()
        elif step != self._last_step and (step % 5 == 0 or step == self.total):
            self.stream.write(line + "\n")
            self.stream.flush()
        self._last_step = step

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# --------------------------------------------------------------------------- the loop


def sample_objective():
    from advisor.plan import Budget, DataKind, Objective, TaskKind

    return Objective(task=TaskKind.MATH, data=[DataKind.PROMPTS_WITH_VERIFIER], dataset_size=7500,
                     needs_exploration=True, budget=Budget(gpu_hours=8))


def production_plan(method: Any, framework: Any) -> Any:
    """The run the sample objective really needs: a 0.5B instruct model on one L4."""
    from advisor.plan import plan_from_dict

    return plan_from_dict({
        "name": "math-grpo-0.5b", "method": getattr(method, "value", method) or "grpo",
        "framework": getattr(framework, "value", framework) or "trl",
        "objective": sample_objective().model_dump(mode="json"),
        "hardware": {"gpu": "L4", "gpus_per_node": 1, "nodes": 1},
        "policy": {"model": "Qwen2.5-0.5B-Instruct"},
        "reward_function": {"path": "rewards/math.py", "name": "compute_score"},
        "algorithm": {"learning_rate": 1e-6, "kl_coef": 0.0, "group_size": 8},
        "data": {"train_files": ["data/math.jsonl"], "max_prompt_length": 256,
                 "max_response_length": 512, "train_batch_size": 16, "mini_batch_size": 16,
                 "micro_batch_size_per_gpu": 8},
        "rollout": {"engine": "vllm", "tp": 1},
        "memory": {"recompute": "full", "rollout_memory_fraction": 0.4},
    })


def _choose() -> tuple[Any, Any]:
    from advisor.plan import Hardware

    hw = Hardware(gpu="L4", gpus_per_node=1, nodes=1)
    method = framework = None
    rec = _try("choose_method", lambda: __import__("advisor.choose_method", fromlist=["x"]).choose_method(
        objective=sample_objective(), model="Qwen2.5-0.5B-Instruct", hardware=hw))
    if rec is not None:
        method = rec.best
        for choice in rec.ranked[:3]:
            say(f"  {choice.method.value:<14} score {choice.score:>5.1f}  {choice.label}")
        say(f"  -> {getattr(method, 'value', method)}")
    fw = _try("choose_framework", lambda: __import__("advisor.choose_framework", fromlist=["x"]).choose_framework(
        method=method or "grpo", hardware=hw, model="Qwen2.5-0.5B-Instruct"))
    if fw is not None:
        framework = fw.best
        for choice in fw.ranked[:3]:
            say(f"  {choice.framework.value:<10} score {choice.score:>5.1f}  {choice.support}")
        say(f"  -> {getattr(framework, 'value', framework)}")
    return method, framework


def _budget_and_place(plan: Any) -> None:
    def budget():
        from advisor.memory import budget_memory

        b = budget_memory(plan)
        for pool in b.pools:
            say(f"  pool {pool.name}: peak {pool.peak_gib:.1f} GiB of {pool.capacity_gib:.1f} GiB per GPU "
                f"({'fits' if pool.fits else 'does NOT fit'}; binding: {pool.binding_phase})")
        return b

    def place():
        from advisor.placement import plan_placement

        rep = plan_placement(plan)
        best = rep.best
        say(f"  best layout: {best.label}: {best.time.step_s:.1f} s/step, "
            f"{best.time.tokens_per_s_per_gpu:,.0f} tokens/s/GPU, bottleneck {best.time.bottleneck}")
        if rep.runner_up_lost:
            say(f"  runner-up lost: {rep.runner_up_lost}")
        return rep

    say(f"  for the production run: {plan.policy.model} on {plan.hardware.nodes}x"
        f"{plan.hardware.gpus_per_node} {plan.hardware.gpu}, {plan.method.value} on {plan.framework.value}")
    _try("budget_memory", budget)
    _try("plan_placement", place)


def _watch(run_id: str, total: int, timeout: float) -> Any:
    from rl_advisor.launch_tools import run_metrics, run_status

    bar = ProgressBar(total)
    deadline = time.monotonic() + timeout
    status = run_status(run_id)
    try:
        while True:
            m = run_metrics(run_id, max_points=2)
            status = run_status(run_id)
            bar.update(m.last_step, status.state.value, m.last)
            if status.state.terminal or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        bar.close()
    return status


def run_demo(ns: argparse.Namespace) -> int:
    import os

    from advisor.plan import plan_to_yaml
    from backends.data_folder import data_dir
    from rl_advisor import tinymodel

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    t_start = time.monotonic()
    say("rl-advisor demo: plan -> budget -> place -> render -> launch -> watch -> diagnose -> report")

    step(1, "choose a method and a framework for a sample objective (math prompts with a verifier)")
    method, framework = _choose()

    step(2, "budget memory and plan placement for the production-sized run")
    prod = _try("building the production plan", lambda: production_plan(method, framework))
    if prod is not None:
        _budget_and_place(prod)

    step(3, "build a tiny stand-in for this CPU: random tiny Llama, char tokenizer, toy reward; audit its data")
    workdir = Path(ns.workdir) if ns.workdir else data_dir() / "demo"
    ws = tinymodel.build_toy_workspace(workdir)
    plan = tinymodel.toy_plan(ws, "grpo", steps=ns.steps, name="demo-grpo")
    say(f"  model {ws['model']} ({_param_count(ws['model'])} parameters); reward: fraction of "
        f"'{tinymodel.TARGET_CHAR}' characters in a completion")
    audit = _try("audit_data", lambda: __import__("rl_advisor.audit_tool", fromlist=["x"]).audit_data(
        str(ws["prompts"]), plan=plan))
    if audit is not None:
        p = next((ls for ls in audit.lengths if ls.name == "prompt"), None)
        say(f"  audit_data {Path(ws['prompts']).name}: {audit.status}, {audit.rows_read} rows, {audit.data_format}"
            + (f"; prompt tokens p99 {p.p99:.0f} / max_prompt_length {p.limit}" if p else "")
            + "".join(f"\n    [{f.severity}] {f.check}: {f.summary[:100]}" for f in audit.findings[:3]))
    chosen = (getattr(method, "value", method), getattr(framework, "value", framework))
    if chosen != ("grpo", "trl"):
        say(f"  (the advisor chose {chosen[0]} on {chosen[1]} for the production run; the CPU "
            f"stand-in is TRL GRPO, the combination that trains on a CPU)")

    step(4, "render the TRL GRPO run")
    from advisor.render import render_config

    rendered = render_config(plan)
    for art in rendered.artifacts:
        say(f"  {art.name:<22} {art.kind}")

    step(5, f"launch it ({ns.backend})")
    head = None
    address = None
    if ns.backend == "ray":
        from backends.ray_head import LocalRayHead

        say("  starting a Ray head on 127.0.0.1 (own ports and temp dir) ...")
        head = LocalRayHead(num_cpus=2, num_gpus=0)
        head.start()
        address = head.address
        say(f"  Ray head up at {address}")
    try:
        from rl_advisor.launch_tools import launch_run, run_logs, run_metrics

        res = launch_run(plan, backend=ns.backend, confirm=True, address=address)
        say(f"  run id {res.run_id}; log {res.log_path or res.run_dir}")

        step(6, "train (live progress on stderr)")
        status = _watch(res.run_id, ns.steps, ns.timeout)
        if not status.state.terminal:
            from rl_advisor.launch_tools import stop_run

            stop_run(res.run_id, confirm=True)
            say(f"  gave up after {ns.timeout:.0f} s and stopped the run")
        say(f"  run {status.state.value}: {status.message}")
        if status.state.value != "succeeded":
            say(run_logs(res.run_id, 20).text)

        step(7, "read the metrics back and diagnose the run")
        m = run_metrics(res.run_id)
        for key in KEY_METRICS:
            if key in m.first:
                say(f"  {key:<22} first {m.first[key]:>9.4g}   last {m.last[key]:>9.4g}")
        say(f"  {m.points} metric points from {', '.join(res.metrics_paths) or 'the log'}")
        diag = _try("diagnose_run", lambda: __import__("rl_advisor.diagnose_tool", fromlist=["x"]).diagnose_run(
            run_id=res.run_id))
        if diag is not None:
            text = diag.to_text() if hasattr(diag, "to_text") else str(diag)
            for line in text.splitlines()[:15]:
                say(f"  {line}")

        step(8, "write the HTML report")
        out = Path(ns.out) if ns.out else Path(res.run_dir) / "report.html"
        if diag is not None:
            written = _try("the HTML report", lambda: __import__("rl_advisor.report_html", fromlist=["x"]).write_html(
                diag, out, title=f"rl-advisor demo: {res.run_id}"))
            if written is not None:
                say(f"  report: {written}")
        (Path(res.run_dir) / "plan.yaml").write_text(plan_to_yaml(plan), encoding="utf-8")
    finally:
        if head is not None:
            say("  stopping the Ray head ...")
            head.stop()
    say(f"\ndone in {time.monotonic() - t_start:.0f} s: run {res.run_id} {status.state.value}. "
        f"Follow-ups: rl-advisor run-status --run-id {res.run_id}; rl-advisor run-metrics --run-id "
        f"{res.run_id}")
    return 0 if status.state.value == "succeeded" else 1


def _param_count(model_dir: Path) -> str:
    """Parameters stored in the model's safetensors files (informational)."""
    import math

    try:
        from safetensors import safe_open

        total = 0
        for f in Path(model_dir).glob("*.safetensors"):
            with safe_open(str(f), "np") as fh:
                total += sum(math.prod(fh.get_slice(k).get_shape()) for k in fh.keys())
        return f"{total:,}"
    except Exception:  # noqa: BLE001 - informational only
        return "?"


__all__ = ["register", "run_demo", "ProgressBar"]
