"""veRL 0.9.1: compose the rendered overrides with Hydra against the installed package's own
config directory (struct mode: an unknown key fails), then run veRL's own
``verl.utils.config.validate_config`` (batch divisibility, exactly one micro-batch setting,
mini <= train batch, loss_agg_mode, ...).

``import verl`` needs the GPU-side stack, but ``verl.utils.config`` and ``verl.workers.config``
import on CPU with a few small pure-Python deps (tensordict, codetiming, orjson, pyvers,
cloudpickle). The package's ``__init__`` is skipped by registering a bare package module for
``verl``; nothing from verl is copied. When those deps are missing the same rules are checked by
:func:`_fallback_rules` (from research/frameworks.md §1.3) and the result says so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
import time
import types
from functools import cache
from pathlib import Path

from advisor.render.models import Artifact, ValidationResult
from rl_advisor.validators.shell import argv_after

ENTRY = {"verl.trainer.main_ppo", "verl.trainer.sft_trainer"}


@cache
def verl_dir() -> Path | None:
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _bare_verl_package() -> None:
    """Make ``verl`` importable as a namespace for its submodules without running its __init__."""
    if "verl" in sys.modules:
        return
    pkg = types.ModuleType("verl")
    pkg.__path__ = [str(verl_dir())]
    pkg.__file__ = str(verl_dir() / "__init__.py")
    sys.modules["verl"] = pkg


def _split(words: list[str]) -> tuple[str | None, list[str]]:
    config_name = None
    overrides = []
    for w in words:
        if w.startswith("--config-name="):
            config_name = w.split("=", 1)[1]
        else:
            overrides.append(w)
    return config_name, overrides


def compose(config_name: str, overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(verl_dir() / "trainer" / "config"), version_base=None):
        return hydra_compose(config_name=config_name, overrides=overrides)


def validate(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    name = f"hydra compose on verl {'%s' % _version()} config"
    if verl_dir() is None:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, skipped=True,
                                warnings=["verl is not installed (pip install --no-deps verl==0.9.1)"])
    entry = artifact.entrypoint or "verl.trainer.main_ppo"
    try:
        config_name, overrides = _split(argv_after(artifact.content, ["-m", entry]))
    except ValueError as exc:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, errors=[str(exc)])
    default = "sft_trainer_engine" if entry == "verl.trainer.sft_trainer" else "ppo_trainer"
    config_name = config_name or default
    errors: list[str] = []
    warnings: list[str] = []
    try:
        cfg = compose(config_name, overrides)
    except Exception as exc:  # noqa: BLE001 - hydra raises several types; all mean "rejected"
        cause = exc.__cause__ or exc
        return ValidationResult(artifact=artifact.name, validator=name, ok=False,
                                errors=[f"{type(exc).__name__}: {exc}".strip() + (f" ({cause})" if cause is not exc else "")],
                                seconds=time.perf_counter() - t0)
    from omegaconf import OmegaConf

    missing = sorted(k for k in _missing_keys(cfg))
    if missing:
        errors.append(f"mandatory keys left unset (???): {', '.join(missing)}")
    validator = name
    checks: list[str] = []
    if not errors:
        validator, errs, warns, checks = _run_rules(cfg) if config_name != "sft_trainer_engine" else _sft_rules(cfg)
        errors += errs
        warnings += warns
    try:
        OmegaConf.to_container(cfg, resolve=True)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"interpolation failed: {exc}")
    return ValidationResult(artifact=artifact.name, validator=validator, ok=not errors, errors=errors,
                            warnings=warnings, checks=checks, seconds=time.perf_counter() - t0)


def _missing_keys(cfg, prefix: str = ""):
    """Mandatory (``???``) keys left unset, ignoring sections switched off with ``enable: false``."""
    from omegaconf import DictConfig, OmegaConf

    if "enable" in cfg and not OmegaConf.is_missing(cfg, "enable") and cfg.get("enable") is False:
        return
    for key in cfg.keys():
        full = f"{prefix}{key}"
        if OmegaConf.is_missing(cfg, key):
            yield full
            continue
        node = cfg._get_node(key)
        if isinstance(node, DictConfig):
            yield from _missing_keys(node, full + ".")


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("verl")
    except metadata.PackageNotFoundError:
        return "?"


def _uses(cfg) -> tuple[bool, bool]:
    """(use_reference_policy, use_critic), decided as veRL's trainer does."""
    actor = cfg.actor_rollout_ref.actor
    use_ref = bool(cfg.algorithm.get("use_kl_in_reward", False) or actor.get("use_kl_loss", False))
    enable = cfg.critic.get("enable", None)
    use_critic = bool(enable) if enable is not None else cfg.algorithm.adv_estimator == "gae"
    return use_ref, use_critic


def _run_rules(cfg) -> tuple[str, list[str], list[str]]:
    use_ref, use_critic = _uses(cfg)
    try:
        _bare_verl_package()
        from verl.utils.config import validate_config
    except Exception as exc:  # noqa: BLE001 - missing optional deps: fall back to the documented rules
        errs = _fallback_rules(cfg)
        return ("hydra compose + rl-advisor's copy of veRL's rules (verl.utils.config not importable: "
                f"{type(exc).__name__}: {exc})", errs, [], [])
    out = io.StringIO()
    errors: list[str] = []
    warnings: list[str] = []
    try:
        with contextlib.redirect_stdout(out):
            validate_config(cfg, use_reference_policy=use_ref, use_critic=False)
    except ImportError as exc:
        # validate_config's last step (LoRA with vLLM) imports verl's GPU-side rollout package;
        # every other check has run by then. Apply that step's rule (vLLM's MaxLoRARanks).
        rank = _lora_rank(cfg)
        if not rank or cfg.actor_rollout_ref.rollout.name != "vllm":
            errors.append(_root_message(exc))
        else:
            warnings.append(f"vLLM LoRA-rank step checked by rl-advisor ({exc.name or exc}: not importable on CPU)")
            if rank > 512:
                errors.append(f"lora_rank must be less than or equal to 512, but got {rank}")
    except Exception as exc:  # noqa: BLE001 - assert/ValueError/InstantiationException all mean rejected
        errors.append(_root_message(exc))
    checks: list[str] = []
    if not errors:
        errors += _trainer_checks(cfg, checks, warnings)
    if use_critic and not errors:
        # critic validation reads the critic model's HF config from critic.model.path; only
        # possible offline when that is a local model directory
        path = os.path.expanduser(str(cfg.critic.model.path))
        if os.path.isdir(path):
            try:
                from verl.utils.config import omega_conf_to_dataclass

                n_gpus = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes
                with contextlib.redirect_stdout(out):
                    omega_conf_to_dataclass(cfg.critic).validate(n_gpus, cfg.data.train_batch_size)
            except Exception as exc:  # noqa: BLE001
                errors.append("critic: " + _root_message(exc))
        else:
            warnings.append(f"critic rules not run: critic.model.path {path!r} is not a local model dir "
                            "(veRL's critic check loads its HF config)")
            errors += _fallback_critic(cfg)
    name = "hydra compose + verl.utils.config.validate_config + trainer construction checks"
    return name, errors, warnings, checks


def trainer_class_file(mode: str) -> tuple[Path, str] | None:
    """The file and class that ``@register_trainer(mode)`` registers in the installed veRL (read from
    its source, so a renamed or moved class is found as released)."""
    import ast

    for path in sorted((verl_dir() / "trainer" / "ppo" / "v1").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "register_trainer"
                        and dec.args and getattr(dec.args[0], "value", None) == mode):
                    return path, node.name
    return None


def _trainer_checks(cfg, checks: list[str], warnings: list[str]) -> list[str]:
    """The checks veRL 0.9.1 runs while building the trainer, before any worker or GPU:
    ``TaskRunnerV1.run`` picks the class registered for ``trainer.v1.trainer_mode``; its
    ``__init__`` (e.g. ``PPOTrainerSeparateAsync``: sync step x mini-batch == train batch, no naive
    checkpoint engine), ``PPOTrainer.__init__`` builds the KL controller (``use_kl_in_reward``) and the
    replay buffer (``_resolve_filter_groups_metric``, ``ReplayBuffer.__init__``). Run from the
    installed source by :mod:`rl_advisor.validators.source_checks`."""
    from types import SimpleNamespace

    from rl_advisor.validators import source_checks

    if not cfg.trainer.get("use_v1", True):
        warnings.append("trainer.use_v1=false: the legacy trainer's construction checks are not run")
        return []
    mode = cfg.trainer.v1.trainer_mode
    v1 = verl_dir() / "trainer" / "ppo" / "v1"
    found = trainer_class_file(mode)
    if found is None:
        return [f"trainer.v1.trainer_mode={mode!r}: no trainer class is registered for it in verl "
                f"{_version()} (verl/trainer/ppo/v1: sync, colocate_async, separate_async)"]
    path, cls = found
    sampler = cfg.trainer.v1.sampler
    mode_cfg = cfg.trainer.v1.get(mode, {}) or {}
    me = SimpleNamespace(config=cfg, hybrid_rollout_config=mode_cfg.get("hybrid_rollout", SimpleNamespace(enable_switch=False)))
    runs = []
    if source_checks.has_function(path, f"{cls}.__init__"):
        runs.append(source_checks.run(path, f"{cls}.__init__", {"self": me, "config": cfg}))
    runs.append(source_checks.run(v1 / "trainer_base.py", "PPOTrainer._resolve_filter_groups_metric", {"self": me}))
    if not runs[-1].error:
        filter_metric = None
        fg = cfg.algorithm.get("filter_groups", None)
        if fg is not None and fg.get("enable", False):
            filter_metric = fg.get("metric", None)
        # the keyword arguments PPOTrainer._build_replay_buffer passes to the built-in sampler
        kwargs = dict(self=SimpleNamespace(), trainer_mode=mode, trainer_config=mode_cfg,
                      max_off_policy_threshold=sampler.max_off_policy_threshold,
                      max_off_policy_strategy=sampler.max_off_policy_strategy,
                      sampler_kwargs=sampler.sampler_kwargs, refill_fn=print, poll_interval=2.0,
                      filter_groups_metric=filter_metric,
                      sync_refill_failed_groups=bool(sampler.get("sync_refill_failed_groups", False)),
                      train_batch_size=cfg.data.train_batch_size, gen_batch_size=1 if filter_metric else None,
                      max_inflight_gen_batches=(fg.get("max_inflight_gen_batches", 1) if filter_metric else 1))
        runs.append(source_checks.run(v1 / "replay_buffer.py", "ReplayBuffer.__init__", kwargs))
    errors: list[str] = []
    for rep in runs:
        error = rep.record(checks, warnings)
        if error:
            errors.append(error)
            break
    if not errors and cfg.algorithm.get("use_kl_in_reward", False):
        try:
            from verl.trainer.ppo.core_algos import get_kl_controller

            get_kl_controller(cfg.algorithm.kl_ctrl)
            checks.append("verl.trainer.ppo.core_algos.get_kl_controller(algorithm.kl_ctrl) -> passed")
        except Exception as exc:  # noqa: BLE001 - veRL's own error for a bad KL controller
            errors.append(f"get_kl_controller: {_root_message(exc)} (change: algorithm.kl_ctrl)")
    return errors


def _lora_rank(cfg) -> int:
    model = cfg.actor_rollout_ref.model
    lora = model.get("lora", {}) or {}
    rank = lora.get("rank", 0) or 0
    if rank <= 0:
        rank = model.get("lora_rank", 0) or 0
    return 0 if lora.get("merge", False) else int(rank)


def _sft_rules(cfg) -> tuple[str, list[str], list[str]]:
    """The SFT trainer itself needs the GPU-side stack to import; its engine and optimizer configs
    are veRL dataclasses whose __post_init__ checks run on CPU."""
    try:
        _bare_verl_package()
        from verl.utils.config import omega_conf_to_dataclass
    except Exception as exc:  # noqa: BLE001
        return "hydra compose on verl sft_trainer_engine", [], [f"verl config classes not importable ({exc}); composed only"], []
    errors = []
    out = io.StringIO()
    for section in ("engine", "optim", "checkpoint"):
        try:
            with contextlib.redirect_stdout(out):
                omega_conf_to_dataclass(cfg[section])
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{section}: " + _root_message(exc))
    return "hydra compose + verl engine/optim/checkpoint config classes", errors, [], []


def _root_message(exc: BaseException) -> str:
    msgs = []
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        msgs.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return " <- ".join(m.split("\n")[0] for m in msgs[:3])


def _fallback_rules(cfg) -> list[str]:
    """veRL's validate_config rules (research/frameworks.md §1.3), for when verl cannot import."""
    errs: list[str] = []
    a = cfg.actor_rollout_ref.actor
    r = cfg.actor_rollout_ref.rollout
    n_gpus = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes
    use_ref, use_critic = _uses(cfg)
    if not a.use_dynamic_bsz:
        if a.strategy == "megatron":
            m = a.megatron
            mp = m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size
            if n_gpus % mp:
                errs.append(f"n_gpus ({n_gpus}) must be divisible by tp*pp*cp ({mp})")
            minimal = (n_gpus // mp) * (a.ppo_micro_batch_size_per_gpu or 1)
        else:
            minimal = n_gpus
        real = cfg.data.train_batch_size * r.n
        if real % minimal:
            errs.append(f"real_train_batch_size ({real}) must be divisible by minimal possible batch size ({minimal})")
        pairs = [("actor_rollout_ref.actor", a.ppo_micro_batch_size, a.ppo_micro_batch_size_per_gpu),
                 ("actor_rollout_ref.rollout", r.log_prob_micro_batch_size, r.log_prob_micro_batch_size_per_gpu)]
        if use_ref:
            ref = cfg.actor_rollout_ref.ref
            pairs.append(("actor_rollout_ref.ref", ref.log_prob_micro_batch_size, ref.log_prob_micro_batch_size_per_gpu))
        for section, mbs, per_gpu in pairs:
            if (mbs is None) == (per_gpu is None):
                errs.append(f"[{section}] set exactly one of the micro batch size settings")
    if cfg.data.train_batch_size < a.ppo_mini_batch_size:
        errs.append(f"train_batch_size ({cfg.data.train_batch_size}) must be >= actor.ppo_mini_batch_size "
                    f"({a.ppo_mini_batch_size})")
    modes = {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}
    if a.loss_agg_mode not in modes:
        errs.append(f"Invalid loss_agg_mode: {a.loss_agg_mode}")
    if r.val_kwargs.do_sample and not r.temperature > 0:
        errs.append("validation gen temperature should be greater than 0 when enabling do_sample")
    if use_critic:
        errs += _fallback_critic(cfg)
    return errs


def _fallback_critic(cfg) -> list[str]:
    c = cfg.critic
    errs = []
    if c.get("use_dynamic_bsz", False):
        return errs
    if (c.ppo_micro_batch_size is None) == (c.ppo_micro_batch_size_per_gpu is None):
        errs.append("[critic] set exactly one of ppo_micro_batch_size / ppo_micro_batch_size_per_gpu")
    if cfg.data.train_batch_size < c.ppo_mini_batch_size:
        errs.append(f"train_batch_size ({cfg.data.train_batch_size}) must be >= critic.ppo_mini_batch_size "
                    f"({c.ppo_mini_batch_size})")
    return errs
