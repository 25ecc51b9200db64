"""Hostile strings in every string field of the Plan never change the structure of what is rendered.

For each string field (found by walking a Plan that sets every optional part) and each hostile
value, the plan is rendered for every framework path that reads it, and:

* shell scripts are run by the real ``bash`` with the launchers (python3, accelerate, ray, ...)
  replaced by stubs that record their argv and environment: the recorded argv is exactly the
  intended argv and the environment holds exactly the intended values; the same words come out of
  ``shlex`` (what the validators read);
* YAML files load (``yaml.safe_load_all``) to exactly the intended tree;
* JSON loads to the intended tree, and the Ray entrypoint splits to the intended words;
* the Python entry script parses, and its literals evaluate to the intended values;
* the structure (Hydra keys, flags, YAML key paths) is the same as for a benign value.

Fields with a pattern or an enum reject hostile values at the Plan boundary; the test checks
that too, and that the free-text fields (paths, names, env values) are really exercised.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from advisor.plan import Framework, Method, Plan
from advisor.render import render_config
from rl_advisor.validators.shell import script_words

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

HOSTILE = [
    "$(rm -rf ~)`id`'; echo pwned; '\\",
    '"; curl x | sh; echo "\na: {b: c}\n- x\n# not a comment',
    "- x #é☃ ${HOME} \u2028\t--flag=1 'q' \"dq\" \\n: {",
]
BASH = shutil.which("bash") or "bash"
LAUNCHERS = ["python3", "accelerate", "ray", "deepspeed", "torchrun", "uv"]


SPEC = {"name": "tiny", "architecture": "llama", "hidden_size": 64, "num_layers": 2, "num_heads": 4,
        "num_kv_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "source": "test"}


def rich_plan_data() -> dict[str, Any]:
    """A plan with every optional string-bearing part set."""
    role = {"model": "Qwen2.5-0.5B", "path": "/models/base", "spec": dict(SPEC)}
    return {
        "name": "inj", "method": "grpo", "framework": "verl",
        "hardware": {"gpu": "H100", "gpus_per_node": 8, "nodes": 1,
                     "gpu_spec": {"memory_gib": 80, "bandwidth_tbs": 3.35, "bf16_tflops": 989, "link": "nvlink",
                                  "link_gbs": 450, "source": "H100 datasheet"}},
        "policy": dict(role),
        "reference": {"model": "Qwen2.5-0.5B", "path": "/models/ref", "spec": dict(SPEC)},
        "reward": {"model": "Qwen2.5-0.5B", "path": "/models/rm", "spec": dict(SPEC)},
        "critic": {"model": "Qwen2.5-0.5B", "path": "/models/critic", "spec": dict(SPEC)},
        "reward_function": {"path": "rewards/r.py", "name": "compute_score"},
        "algorithm": {"group_size": 4, "kl_coef": 0.001},
        "data": {"train_files": ["data/train.parquet", "data/extra.parquet"], "val_files": ["data/val.parquet"],
                 "prompt_key": "prompt", "train_batch_size": 64, "mini_batch_size": 16,
                 "micro_batch_size_per_gpu": 2},
        "placement": {"mode": "colocated", "pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8,
                                                      "roles": ["policy", "rollout", "reference", "reward", "critic"]}]},
        "logging": {"backends": ["console", "file", "wandb", "tensorboard"], "project": "proj",
                    "experiment": "exp", "output_dir": "out"},
        "env": {"MY_VAR": "value", "OTHER": "x"},
        "profile": "cluster-a",
    }


def string_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Paths of every str leaf (and every dict key of env) in the plan's JSON form."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out += string_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += string_paths(v, prefix + (i,))
    elif isinstance(node, str):
        out.append(prefix)
    return out


def set_path(data: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        data = data[p]
    data[path[-1]] = value


BASE = Plan.model_validate(rich_plan_data()).model_dump(mode="json", exclude_none=True)
PATHS = string_paths(BASE)
# the renders that read each field (method, framework)
ROUTES = [(Method.GRPO, Framework.VERL), (Method.PPO, Framework.VERL), (Method.GRPO, Framework.OPENRLHF),
          (Method.DPO, Framework.OPENRLHF), (Method.GRPO, Framework.TRL), (Method.DPO, Framework.TRL),
          (Method.GRPO, Framework.NEMO_RL)]


def plan_with(path: tuple, value: str, method: Method, framework: Framework) -> Plan:
    data = json.loads(json.dumps(BASE))
    data["method"], data["framework"] = method.value, framework.value
    set_path(data, path, value)
    return Plan.model_validate(data)


# --------------------------------------------------------------------------- real bash


@pytest.fixture(scope="module")
def stub_bin(tmp_path_factory) -> Path:
    if shutil.which("bash") is None:
        pytest.skip("bash not installed")
    d = tmp_path_factory.mktemp("stubs")
    for name in LAUNCHERS:
        p = d / name
        p.write_text('#!/bin/bash\nprintf "%s\\0" "$(basename "$0")" "$@" > "$STUB_OUT"\nenv -0 > "$STUB_OUT.env"\n')
        p.chmod(0o755)
    for tool in ("dirname", "basename", "env", "printf"):
        real = shutil.which(tool)
        if real:
            (d / tool).symlink_to(real)
    return d


def run_bash(script: str, stub_bin: Path, tmp: Path) -> tuple[list[str], dict[str, str]]:
    """Run the script with the real bash; return the launcher's argv and environment."""
    path = tmp / "run.sh"
    path.write_text(script, encoding="utf-8")
    out = tmp / "argv"
    if out.exists():
        out.unlink()
    env = {"PATH": str(stub_bin), "HOME": str(tmp / "home"), "STUB_OUT": str(out), "WANDB_API_KEY": "k"}
    proc = subprocess.run([BASH, str(path)], env=env, cwd=tmp, capture_output=True, timeout=20)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    argv = out.read_bytes().decode().split("\0")[:-1]
    envs = dict(item.split("=", 1) for item in Path(str(out) + ".env").read_bytes().decode().split("\0") if "=" in item)
    return argv, envs


def framework_argv(words: list[str]) -> list[str]:
    """Unwrap `ray job submit ... -- [bash -c 'exec ...'] CMD` to CMD words."""
    if words and words[0] == "ray" and "--" in words:
        words = words[words.index("--") + 1:]
        if words[:2] == ["bash", "-c"]:
            inner = shlex.split(words[2])
            assert inner[0] == "exec"
            words = inner[1:]
    return words


def structure(art) -> list[str]:
    """The shape of a data artifact with values removed: YAML/JSON key paths, Python statements."""
    if art.format == "yaml":
        return [".".join(map(str, p)) for p in _key_paths(list(yaml.load_all(art.content, Loader=LOADER)))]
    if art.format == "json":
        return [".".join(map(str, p)) for p in _key_paths(json.loads(art.content))]
    tree = ast.parse(art.content)
    return [type(n).__name__ for n in tree.body]


def same_command_shape(words: list[str], benign: list[str]) -> None:
    """Same number of words; every flag and every Hydra key where the benign command has one."""
    assert len(words) == len(benign), (words, benign)
    for w, b in zip(words, benign):
        if b.startswith("-"):
            assert w == b
        elif "=" in b:
            assert w.split("=", 1)[0] == b.split("=", 1)[0], (w, b)


def _key_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        out = []
        for k, v in node.items():
            out += [prefix + (k,)] + _key_paths(v, prefix + (k,))
        return out
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            out += _key_paths(v, prefix + (i,))
        return out
    return []


def check_artifact(art, stub_bin: Path, tmp: Path, benign: list[str] | None = None) -> None:
    """``benign``: the launcher argv (shell) or structure() of the same artifact rendered benignly."""
    if art.format == "shell":
        argv, envs = run_bash(art.content, stub_bin, tmp)
        words = framework_argv(argv)
        refs = {f"${{{k}}}": envs[k] for k in ("RAY_ADDRESS", "WANDB_API_KEY") if k in envs}
        if art.argv:
            # a secret reference arrives expanded (local launch) or still as a reference (remote)
            got = words[-len(art.argv):]
            assert len(got) == len(art.argv)
            assert all(g == w or refs.get(w) == g for g, w in zip(got, art.argv)), (got, art.argv)
        # shlex (what the validators read) agrees with bash, once bash's expansion of the
        # renderer's own references (whole words like "${RAY_ADDRESS}") is applied
        assert [refs.get(w, w) for w in script_words(art.content)[-len(argv):]] == argv
        # every exported value arrives exactly
        all_words = script_words(art.content)
        for i, w in enumerate(all_words[:-1]):
            if w == "export":
                key, value = all_words[i + 1].split("=", 1)
                if not value.startswith("${RAY_ADDRESS"):
                    assert envs.get(key) == value
        if benign is not None:
            same_command_shape(words, benign)
        return
    if art.format == "yaml":
        docs = list(yaml.load_all(art.content, Loader=LOADER))
        loaded = docs if art.kind == "k8s_manifest" else docs[0]
        assert loaded == art.data
    elif art.format == "json":
        spec = json.loads(art.content)
        assert spec == art.data
        if art.kind == "ray_job":
            assert shlex.split(spec["entrypoint"])  # splits cleanly
    elif art.format == "python":
        tree = ast.parse(art.content)
        consts = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Name) and t.id.isupper()}
        assert consts["REWARD_FUNCTIONS"] == art.data["reward_functions"]
        assert consts["REWARD_MODELS"] == art.data["reward_models"]
        assert consts["TRAINER"] == art.data["trainer"]
    if benign is not None:
        assert structure(art) == benign


# --------------------------------------------------------------------------- the tests


def _model_str_fields(model, prefix: str = "") -> set[str]:
    """Every str-typed field of a pydantic model tree (list items as .0, dict values as .*)."""
    import types
    import typing

    from pydantic import BaseModel

    out: set[str] = set()

    def walk(tp, path):
        origin = typing.get_origin(tp)
        if origin in (typing.Union, types.UnionType):
            for a in typing.get_args(tp):
                walk(a, path)
        elif origin is list:
            walk(typing.get_args(tp)[0], path + ".0")
        elif origin is dict:
            walk(typing.get_args(tp)[1], path + ".*")
        elif isinstance(tp, type) and issubclass(tp, BaseModel):
            out.update(_model_str_fields(tp, path + "."))
        elif tp is str:
            out.add(path)

    for name, f in model.model_fields.items():
        walk(f.annotation, prefix + name)
    return out


def test_every_string_field_of_the_plan_is_exercised():
    found = {".".join("*" if p[0] == "env" and i == 1 else str(x) for i, x in enumerate(p)) for p in PATHS}
    assert _model_str_fields(Plan) <= found, _model_str_fields(Plan) - found


def test_fields_are_found_and_free_text_ones_accept_hostile_values():
    accepted, rejected = set(), set()
    for path in PATHS:
        try:
            plan_with(path, HOSTILE[0], Method.GRPO, Framework.VERL)
            accepted.add(".".join(map(str, path)))
        except ValidationError:
            rejected.add(".".join(map(str, path)))
    for must in ("name", "policy.path", "policy.model", "reference.path", "reward.path", "critic.path",
                 "reward_function.path", "data.train_files.0", "data.val_files.0", "data.prompt_key",
                 "logging.project", "logging.experiment", "logging.output_dir", "env.MY_VAR", "hardware.gpu"):
        assert must in accepted, must
    # pattern-constrained names and enums stop hostile values at the Plan boundary
    for must in ("reward_function.name", "logging.wandb_api_key_env", "placement.pools.0.name", "method"):
        assert must in rejected, must


FREE = [p for p in PATHS if p[0] not in ("method", "framework")]


@pytest.mark.parametrize("path", FREE, ids=[".".join(map(str, p)) for p in FREE])
def test_hostile_values_keep_structure(path: tuple, stub_bin: Path, tmp_path: Path):
    exercised = 0
    for method, framework in ROUTES:
        try:
            benign_plan = plan_with(path, "benign-value", method, framework)
        except ValidationError:  # an enum or patterned field: hostile values must be refused too
            for value in HOSTILE:
                with pytest.raises(ValidationError):
                    plan_with(path, value, method, framework)
            return
        benign = render_config(benign_plan)
        shapes = {a.name: (framework_argv(run_bash(a.content, stub_bin, tmp_path)[0]) if a.format == "shell"
                           else structure(a)) for a in benign.artifacts}
        for value in HOSTILE:
            try:
                plan = plan_with(path, value, method, framework)
            except ValidationError:
                continue  # rejected at the boundary with the field named (enum / pattern / identifier)
            rendered = render_config(plan)
            for art, ben in zip(rendered.artifacts, benign.artifacts):
                assert art.name == ben.name
                check_artifact(art, stub_bin, tmp_path, benign=shapes[art.name])
            exercised += 1
    # profile: a pattern-constrained name that no artifact renders (every hostile value refused)
    if path[-1] not in ("gpu",) and path[0] not in ("placement", "profile") and not str(path[-1]).endswith("_env"):
        assert exercised or path[-1] == "name" and path[0] == "reward_function"


def test_hostile_env_key_is_rejected():
    data = json.loads(json.dumps(BASE))
    data["env"]["BAD; rm -rf ~"] = "x"
    with pytest.raises(ValidationError):
        Plan.model_validate(data)


def test_secrets_are_references_only(stub_bin: Path, tmp_path: Path):
    secret = "sk-THIS-MUST-NOT-APPEAR"
    for method, framework in ROUTES:
        rendered = render_config(plan_with(("name",), "n", method, framework))
        for art in rendered.artifacts:
            assert secret not in art.content
            assert "WANDB_API_KEY" in art.content or art.kind in ("framework_config", "accelerate_config",
                                                                   "entry_script") or framework == Framework.NEMO_RL
        k8s = next(a for a in rendered.artifacts if a.kind == "k8s_manifest")
        envs = [e for doc in k8s.data for e in _all_env(doc)]
        wandb = [e for e in envs if e["name"] == "WANDB_API_KEY"]
        assert wandb and all("valueFrom" in e and "value" not in e for e in wandb)
        # OpenRLHF passes the key as a flag: bash expands the reference at launch, from the environment
        if framework == Framework.OPENRLHF:
            art = rendered.artifacts[0]
            argv, _ = run_bash(art.content, stub_bin, tmp_path)
            words = framework_argv(argv)
            # a reference (expanded remotely by Ray's shell) or the value bash took from the environment
            assert words[words.index("--logger.wandb.key") + 1] in ("${WANDB_API_KEY}", "k")


def _all_env(node: Any):
    if isinstance(node, dict):
        if isinstance(node.get("env"), list):
            yield from node["env"]
        for v in node.values():
            yield from _all_env(v)
    elif isinstance(node, list):
        for v in node:
            yield from _all_env(v)


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1,
               max_size=40)


@pytest.mark.integration
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=TEXT, path=TEXT, out=TEXT, env_value=TEXT)
def test_random_text_round_trips(name: str, path: str, out: str, env_value: str, stub_bin: Path,
                                 tmp_path: Path):
    data = json.loads(json.dumps(BASE))
    data["name"], data["policy"]["path"], data["logging"]["output_dir"] = name[:200], path, out
    data["env"]["MY_VAR"] = env_value
    for method, framework in [(Method.GRPO, Framework.VERL), (Method.GRPO, Framework.TRL),
                              (Method.GRPO, Framework.OPENRLHF)]:
        data["method"], data["framework"] = method.value, framework.value
        rendered = render_config(Plan.model_validate(data))
        for art in rendered.artifacts:
            check_artifact(art, stub_bin, tmp_path)
        if framework == Framework.VERL:
            from hydra.core.override_parser.overrides_parser import OverridesParser
            from omegaconf import OmegaConf

            argv, envs = run_bash(rendered.artifacts[0].content, stub_bin, tmp_path)
            assert envs["MY_VAR"] == env_value
            parser = OverridesParser.create()
            values = {}
            for w in argv[3:]:
                o = parser.parse_override(w)
                values[o.key_or_group] = OmegaConf.to_container(OmegaConf.create({"v": o.value()}), resolve=True)["v"]
            assert values["actor_rollout_ref.model.path"] == path
            assert values["trainer.default_local_dir"] == out
        if framework == Framework.TRL:
            cfg = yaml.load(rendered.artifact("trl_config.yaml").content, Loader=LOADER)
            assert cfg["model_name_or_path"] == path and cfg["output_dir"] == out
