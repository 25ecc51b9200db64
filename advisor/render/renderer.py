"""render_config: a Plan -> every artifact one framework needs to launch it.

Pure: the Plan goes in, text comes out (the packaged templates are read once through the
cached jinja environment). Each framework module maps the Plan to structure (an argv of Hydra
overrides or flags, a config tree); the templates only lay that structure out, and every value
passes through a quoting filter. Unsupported method x framework pairs are refused with the
reason from the one support table (advisor/data/framework_facts.yaml, render rows).
"""

from __future__ import annotations

import json
from typing import Any

import jinja2

from advisor.errors import AdvisorError
from advisor.plan import Framework, Method, Plan
from advisor.render import k8s as k8s_map
from advisor.render import nemo as nemo_map
from advisor.render import openrlhf as orl_map
from advisor.render import trl as trl_map
from advisor.render import verl as verl_map
from advisor.render.common import (Carry, derive, framework_version, is_cpu, memory_knob_lines,
                                   renderable_frameworks, rl_advisor_version, support_row)
from advisor.render.loader import environment
from advisor.render.models import Artifact, RenderedConfig, VersionStamp
from advisor.render.options import RenderOptions
from advisor.render.quoting import RefValue, hydra_override, remote_command, shell_join
from advisor.run_files import METRICS_JSONL, run_files
from advisor.secrets import is_secret


def render_config(plan: Plan, framework: Framework | None = None,
                  options: RenderOptions | None = None,
                  env: jinja2.Environment | None = None) -> RenderedConfig:
    """Render ``plan`` for ``framework`` (default: ``plan.framework``).

    Raises AdvisorError naming ``framework`` / ``method`` with the reason when the pair cannot be
    rendered (e.g. KTO on veRL: veRL 0.9.1 has no KTO trainer).
    """
    fw = Framework(framework) if framework is not None else plan.framework
    renderable = renderable_frameworks()
    if fw not in renderable:
        raise AdvisorError(f"rl-advisor renders configs for {', '.join(sorted(f.value for f in renderable))}",
                           field="framework", value=fw.value,
                           allowed=", ".join(sorted(f.value for f in renderable)))
    support_row(fw, plan.method)  # refuses unsupported pairs with the documented reason
    options = options or RenderOptions()
    env = env or environment()
    notes: list[str] = []
    carry = Carry()
    d = derive(plan, notes)
    stamp = VersionStamp(framework=fw, framework_version=framework_version(fw),
                         rl_advisor_version=rl_advisor_version(), plan_name=plan.name)
    base = _base_context(plan, stamp, notes)
    builder = {Framework.VERL: _verl, Framework.TRL: _trl, Framework.OPENRLHF: _openrlhf,
               Framework.NEMO_RL: _nemo}[fw]
    artifacts, launch = builder(plan, d, carry, notes, base, env)
    _placement_notes(plan, notes)
    artifacts.append(_ray_job(plan, fw, launch, base, env, options))
    artifacts.append(k8s_map.manifests_artifact(plan, fw, launch, artifacts, base, env, options, notes))
    return RenderedConfig(framework=fw, method=plan.method, stamp=stamp, artifacts=artifacts,
                          not_carried=carry.items, notes=notes)


def _placement_notes(plan: Plan, notes: list[str]) -> None:
    """Surface what the placement's Ray resource plan says cannot be placed (Ray would wait forever)."""
    from advisor.placement.resources import ray_resources

    if is_cpu(plan):
        return
    rr = ray_resources(plan)
    notes.extend(f"ray placement: {p}" for p in rr.problems)


# --------------------------------------------------------------------------- shared context


class Launch:
    """What starts the run: launcher words + framework argv, env vars and secrets."""

    def __init__(self, launcher: list[str], argv: list[str], entrypoint: str,
                 env: dict[str, str], secrets: list[str], entry_gpus: int = 0,
                 files: list[str] | None = None):
        self.launcher, self.argv, self.entrypoint = launcher, argv, entrypoint
        self.env, self.secrets, self.entry_gpus = env, secrets, entry_gpus
        self.files = files or []

    @property
    def command(self) -> list[str]:
        return self.launcher + self.argv


def _secrets(plan: Plan) -> list[str]:
    out = []
    if "wandb" in plan.logging.backends:
        out.append(plan.logging.wandb_api_key_env)
    # Plan.env entries that are secrets (by name, e.g. HF_TOKEN, or by shape, e.g. hf_...) are
    # required from the environment by name and never written into an artifact.
    out += [k for k, v in sorted(plan.env.items()) if _is_secret(k, v) and k not in out]
    return out


def _is_secret(name: str, value: str) -> bool:
    return is_secret(name, value)


def _base_context(plan: Plan, stamp: VersionStamp, notes: list[str]) -> dict[str, Any]:
    return {
        "stamp": {"rl_advisor_version": stamp.rl_advisor_version, "framework": stamp.framework.value,
                  "framework_version": stamp.framework_version, "plan_name": stamp.plan_name},
        "knobs": memory_knob_lines(plan),
        "notes": notes,
    }


def _env(plan: Plan, extra: dict[str, str]) -> dict[str, str]:
    env = dict(extra)
    env.update({k: v for k, v in plan.env.items() if not _is_secret(k, v)})
    return dict(sorted(env.items()))


def _render(jenv: jinja2.Environment, template: str, **ctx: Any) -> str:
    return jenv.get_template(template).render(**ctx)


# --------------------------------------------------------------------------- veRL


def _verl(plan, d, carry, notes, base, env):
    pairs = verl_map.overrides(plan, d, carry, notes)
    argv = [hydra_override(k, v) for k, v in pairs]
    cfg = verl_map.config_name(plan)
    if plan.method == Method.SFT:
        entry = "verl.trainer.sft_trainer"
        launcher = ["torchrun", "--standalone", "--nnodes=1", f"--nproc_per_node={d.gpus_per_node}", "-m", entry]
        if plan.hardware.nodes > 1:
            notes.append("veRL SFT on several nodes: replace --standalone with your torchrun rendezvous "
                         "(or use verl.trainer.sft_trainer_ray)")
    else:
        entry = "verl.trainer.main_ppo"
        launcher = ["python3", "-m", entry]
        if cfg != "ppo_trainer":
            launcher.append(f"--config-name={cfg}")
    extra = {}
    if not plan.logging.output_dir.startswith(("/", "~")) and plan.method != Method.SFT:
        notes.append("veRL trains inside a Ray actor whose working directory is Ray's job directory: the "
                     f"relative logging.output_dir {plan.logging.output_dir!r} (checkpoints, metrics file) lands "
                     "there; use an absolute path to find them")
    files = run_files(plan, Framework.VERL)
    if files.metrics_file:
        extra["VERL_FILE_LOGGER_PATH"] = files.metrics_file
    if files.tensorboard_dir:
        extra["TENSORBOARD_DIR"] = files.tensorboard_dir
    launch = Launch(launcher, argv, entry, _env(plan, extra), _secrets(plan))
    content = _render(env, "verl/run.sh.j2", **base, config_name=cfg, env=list(launch.env.items()),
                      secrets=launch.secrets, launcher=launcher, argv=argv)
    art = Artifact(name="run_verl.sh", kind="launch_script", format="shell", content=content,
                   framework=Framework.VERL, entrypoint=entry, argv=argv,
                   data={"config_name": cfg, "overrides": argv})
    return [art], launch


# --------------------------------------------------------------------------- TRL


TRL_CONFIG, TRL_ACCEL, TRL_ENTRY, TRL_RUN = "trl_config.yaml", "accelerate.yaml", "train.py", "run_trl.sh"


def _trl(plan, d, carry, notes, base, env):
    cfg = trl_map.config(plan, d, carry, notes)
    accel = trl_map.accelerate_config(plan, carry)
    entry = trl_map.entry_context(plan)
    arts = [
        Artifact(name=TRL_CONFIG, kind="framework_config", format="yaml", framework=Framework.TRL,
                 entrypoint=entry["config_class"], data=cfg,
                 content=_render(env, "trl/config.yaml.j2", **base, config_class=entry["config_class"], data=cfg)),
        Artifact(name=TRL_ACCEL, kind="accelerate_config", format="yaml", framework=Framework.TRL,
                 entrypoint="accelerate", data=accel,
                 content=_render(env, "trl/accelerate.yaml.j2", **base, data=accel)),
        Artifact(name=TRL_ENTRY, kind="entry_script", format="python", framework=Framework.TRL,
                 entrypoint=entry["trainer"], data=entry,
                 content=_render(env, "trl/train.py.j2", **base, metrics_file=METRICS_JSONL, **entry)),
    ]
    launcher = ["accelerate", "launch", "--config_file", TRL_ACCEL, TRL_ENTRY]
    argv = ["--config", TRL_CONFIG]
    extra = {}
    files = run_files(plan, Framework.TRL)
    if files.tensorboard_dir:
        extra["TENSORBOARD_LOGGING_DIR"] = files.tensorboard_dir
    if any(".experimental." in entry[k] for k in ("trainer", "config_class")):
        extra["TRL_EXPERIMENTAL_SILENCE"] = "1"
    if is_cpu(plan):
        extra["HF_HUB_OFFLINE"] = "1"
    launch = Launch(launcher, argv, entry["trainer"], _env(plan, extra), _secrets(plan),
                    entry_gpus=0 if is_cpu(plan) else trl_map.world_size(plan),
                    files=[TRL_CONFIG, TRL_ACCEL, TRL_ENTRY])
    run = _render(env, "trl/run.sh.j2", **base, cli=entry["cli"], config_file=TRL_CONFIG,
                  trainer=entry["trainer"], env=list(launch.env.items()), secrets=launch.secrets,
                  launcher=launcher, argv=argv)
    arts.append(Artifact(name=TRL_RUN, kind="launch_script", format="shell", content=run,
                         framework=Framework.TRL, entrypoint="accelerate", argv=argv))
    return arts, launch


# --------------------------------------------------------------------------- OpenRLHF


def _openrlhf(plan, d, carry, notes, base, env):
    module, launcher, argv = orl_map.command(plan, d, carry, notes)
    launch = Launch(launcher, argv, module, _env(plan, {}), _secrets(plan))
    if module == "openrlhf.cli.train_ppo_ray":
        # ray job submit -- ARGV: Ray re-joins ARGV with shlex.join and runs it through a shell
        runtime_env = {"env_vars": _ray_env_vars(launch)}
        submit = ["ray", "job", "submit", "--address", RefValue("RAY_ADDRESS"),
                  "--runtime-env-json", json.dumps(runtime_env, sort_keys=True), "--"]
        wrapped = remote_command(launch.command)
        if wrapped == launch.command:
            script_launcher, script_argv = submit + launcher, argv
        else:  # bash -c 'exec ...' keeps the secret reference for the remote shell
            script_launcher, script_argv = submit + wrapped[:2], wrapped[2:]
        via_ray = True
    else:
        script_launcher, script_argv, via_ray = launcher, argv, False
    content = _render(env, "openrlhf/run.sh.j2", **base, module=module, env=list(launch.env.items()),
                      secrets=launch.secrets, launcher=script_launcher, argv=script_argv,
                      via_ray=via_ray)
    art = Artifact(name="run_openrlhf.sh", kind="launch_script", format="shell", content=content,
                   framework=Framework.OPENRLHF, entrypoint=module, argv=argv)
    return [art], launch


# --------------------------------------------------------------------------- NeMo-RL


def _nemo(plan, d, carry, notes, base, env):
    script, base_config, pairs = nemo_map.overrides(plan, d, carry, notes)
    argv = ["--config", base_config] + [hydra_override(k, v) for k, v in pairs]
    launcher = ["uv", "run", "python", script]
    launch = Launch(launcher, argv, script, _env(plan, {}), _secrets(plan))
    content = _render(env, "nemo_rl/run.sh.j2", **base, script=script, env=list(launch.env.items()),
                      secrets=launch.secrets, launcher=launcher, argv=argv)
    art = Artifact(name="run_nemo_rl.sh", kind="launch_script", format="shell", content=content,
                   framework=Framework.NEMO_RL, entrypoint=script, argv=argv,
                   data={"base_config": base_config, "overrides": dict(pairs)})
    return [art], launch


# --------------------------------------------------------------------------- Ray job


def _ray_env_vars(launch: Launch) -> dict[str, str]:
    env_vars = dict(launch.env)
    for name in launch.secrets:
        env_vars[name] = "${" + name + "}"  # expanded by Ray from the cluster's environment
    return dict(sorted(env_vars.items()))


def ray_job_spec(plan: Plan, fw: Framework, launch: Launch, options: RenderOptions) -> dict[str, Any]:
    """A Ray Jobs API submission (``JobSubmissionClient.submit_job(**spec)``).

    The entrypoint is ``shlex.join`` of the argv, exactly what ``ray job submit -- ARGV`` sends
    (Ray runs it through a shell, which splits it back to the same words); secret references
    stay double-quoted so that shell expands them. Secrets are
    ``${NAME}`` references that Ray expands from the cluster's environment.
    """
    runtime_env: dict[str, Any] = {"env_vars": _ray_env_vars(launch)}
    if launch.files:
        runtime_env["working_dir"] = options.working_dir
    return {
        "entrypoint": shell_join(launch.command),
        "runtime_env": runtime_env,
        "entrypoint_num_cpus": 1,
        "entrypoint_num_gpus": launch.entry_gpus,
        "metadata": {"rl_advisor_plan": plan.name, "framework": fw.value,
                     "framework_version": framework_version(fw), "rl_advisor_version": rl_advisor_version()},
    }


def _ray_job(plan, fw, launch, base, env, options) -> Artifact:
    spec = ray_job_spec(plan, fw, launch, options)
    content = _render(env, "ray/job.json.j2", data=spec)
    return Artifact(name="ray_job.json", kind="ray_job", format="json", content=content,
                    framework=fw, entrypoint=launch.entrypoint, data=spec)
