"""Any model, any GPU (#17): published config.json files of popular architectures, read by folder
path; hub ids through huggingface_hub (a local mirror on 127.0.0.1, since there is no network);
GPUs beyond the catalog.

The fixtures under tests/fixtures/hf_configs are the models' config.json files as published on
the hub (config only, no weights).
"""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from advisor import catalog
from advisor.errors import AdvisorError
from advisor.memory.terms import kv_bytes_per_token
from advisor.plan import Plan

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"
NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())

# Model-card sizes (billions): total, and active where the card gives one. A wrong dimension in a
# fixture moves the count by far more than the tolerance.
PUBLISHED = {
    "DeepSeek-V2-Lite-Chat": (15.7, None), "DeepSeek-V3": (671, None),
    "Llama-3.1-8B-Instruct": (8.03, None), "Llama-3.2-1B-Instruct": (1.24, None),
    "Llama-3.2-3B-Instruct": (3.21, None), "Llama-3.3-70B-Instruct": (70.6, None),
    "Mistral-7B-Instruct-v0.1": (7.24, None), "Mistral-7B-Instruct-v0.3": (7.25, None),
    "Mistral-Nemo-Instruct-2407": (12.2, None), "Mixtral-8x7B-Instruct-v0.1": (46.7, 12.9),
    "OLMo-2-1124-7B-Instruct": (7.30, None), "Phi-3-mini-4k-instruct": (3.82, None),
    "Phi-4-mini-instruct": (3.84, None), "Qwen2.5-0.5B-Instruct": (0.49, None),
    "Qwen2.5-32B-Instruct": (32.8, None), "Qwen2.5-7B-Instruct": (7.62, None),
    "Qwen2.5-VL-7B-Instruct": (8.29, None), "Qwen3-0.6B": (0.6, None), "Qwen3-30B-A3B": (30.5, 3.3),
    "Qwen3-8B": (8.2, None), "SmolLM2-135M-Instruct": (0.135, None), "gemma-2-2b-it": (2.61, None),
    "gemma-2-9b-it": (9.24, None), "gemma-3-1b-it": (1.0, None), "gemma-3-4b-it": (4.3, None),
    "gpt-oss-20b": (20.9, None), "phi-4": (14.7, None),
}


def _transformers_count(folder: Path) -> tuple[int, int]:
    """(all parameters, vision-tower parameters) of the real transformers model, meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    raw = json.loads((folder / "config.json").read_text())
    config = transformers.CONFIG_MAPPING[raw["model_type"]].from_dict(raw)
    with torch.device("meta"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(config)
        except ValueError:
            model = transformers.AutoModelForImageTextToText.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    text = sum(p.numel() for n, p in model.named_parameters()
               if n.startswith("lm_head.") or ".language_model." in n)
    return total, (total - text if "vision_config" in raw else 0)


def test_fixture_set_covers_the_popular_architectures() -> None:
    assert len(NAMES) >= 20
    types = {json.loads((FIXTURES / n / "config.json").read_text())["model_type"] for n in NAMES}
    assert types >= {"llama", "qwen2", "qwen3", "qwen3_moe", "mistral", "mixtral", "gemma2", "gemma3_text",
                     "gemma3", "phi3", "deepseek_v2", "deepseek_v3", "gpt_oss", "olmo2", "qwen2_5_vl"}
    assert set(PUBLISHED) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_count_equals_transformers_meta_device(name: str) -> None:
    """The catalog formula, fed the config's dimensions, gives exactly transformers' count; the
    reader's spec carries it; it agrees with the model card."""
    from rl_advisor.hfconfig import load_model_spec, meta_count

    folder = FIXTURES / name
    total, vision = _transformers_count(folder)
    raw = json.loads((folder / "config.json").read_text())
    counted = meta_count(raw)
    formula_spec = catalog.spec_from_hf_config(counted.config, name=name, vision_params=vision or None)
    assert catalog.count_params(formula_spec) == total  # pure formula vs transformers
    spec = load_model_spec(folder)
    assert spec.name == name and spec.params == total and spec.vision_params == vision
    assert "= transformers" in spec.source  # formula and transformers agreed
    published_total, published_active = PUBLISHED[name]
    assert spec.params / 1e9 == pytest.approx(published_total, rel=0.02)
    if spec.is_moe:
        assert spec.active_params < spec.params
        assert spec.experts_per_token and spec.moe_intermediate_size  # the expert shape, for EP
    else:
        assert spec.active_params == spec.params
    if published_active:
        assert spec.active_params / 1e9 == pytest.approx(published_active, rel=0.03)


def test_architecture_details_from_configs() -> None:
    from rl_advisor.hfconfig import load_model_spec

    ds2 = load_model_spec(FIXTURES / "DeepSeek-V2-Lite-Chat")
    assert (ds2.attention, ds2.q_lora_rank, ds2.kv_lora_rank, ds2.first_k_dense_layers) == ("mla", 0, 512, 1)
    # MLA caches the latent: L x (kv_lora_rank + rope dim) x 2 bytes, not split by TP.
    assert kv_bytes_per_token(ds2) == 27 * (512 + 64) * 2 == kv_bytes_per_token(ds2, tp=8)
    gem3 = load_model_spec(FIXTURES / "gemma-3-1b-it")
    assert gem3.num_kv_heads == 1 and gem3.tie_embeddings  # MQA, tied
    assert (gem3.sliding_window, gem3.sliding_window_layers) == (512, 26 - 26 // 6)
    gem2 = load_model_spec(FIXTURES / "gemma-2-2b-it")
    assert (gem2.sliding_window, gem2.sliding_window_layers) == (4096, 13)  # even layers local
    oss = load_model_spec(FIXTURES / "gpt-oss-20b")
    assert (oss.num_experts, oss.experts_per_token, oss.sliding_window, oss.sliding_window_layers) == (32, 4, 128, 12)
    assert oss.qkv_bias and not oss.tie_embeddings
    q7 = load_model_spec(FIXTURES / "Qwen2.5-7B-Instruct")
    assert q7.sliding_window == 0  # sliding_window is in the file, use_sliding_window is false
    m01 = load_model_spec(FIXTURES / "Mistral-7B-Instruct-v0.1")
    assert (m01.sliding_window, m01.sliding_window_layers) == (4096, 32)
    assert load_model_spec(FIXTURES / "Mistral-7B-Instruct-v0.3").sliding_window == 0
    vl = load_model_spec(FIXTURES / "Qwen2.5-VL-7B-Instruct")
    assert vl.vision_params / 1e9 == pytest.approx(0.68, rel=0.02) and vl.qkv_bias
    assert load_model_spec(FIXTURES / "gemma-3-4b-it").vision_params / 1e9 == pytest.approx(0.42, rel=0.02)


def test_sliding_window_kv_bytes() -> None:
    """Windowed layers hold at most the window: at 32k context Mistral v0.1 keeps 4096 tokens."""
    from rl_advisor.hfconfig import load_model_spec

    m = load_model_spec(FIXTURES / "Mistral-7B-Instruct-v0.1")
    full = kv_bytes_per_token(m)
    assert full == 2 * 32 * 8 * 128 * 2
    assert kv_bytes_per_token(m, context=4096) == full
    assert kv_bytes_per_token(m, context=32768) == pytest.approx(full * 4096 / 32768)
    g = load_model_spec(FIXTURES / "gemma-2-9b-it")  # 21 of 42 layers local (4096)
    per_layer = 2 * 8 * 256 * 2
    assert kv_bytes_per_token(g, context=8192) == pytest.approx(per_layer * (21 + 21 * 4096 / 8192))
    dense = load_model_spec(FIXTURES / "Llama-3.1-8B-Instruct")
    assert kv_bytes_per_token(dense, context=100_000) == kv_bytes_per_token(dense)


def _plan(model: str, params: int, **extra) -> Plan:
    """A GRPO plan sized so the model's weights, grads and Adam states fit: ~40 B/param of H100."""
    nodes = max(1, math.ceil(params * 40 / (80 * 2**30 * 8)))
    body = {"name": "any-model", "method": "grpo", "framework": "verl",
            "hardware": {"gpu": "H100", "gpus_per_node": 8, "nodes": nodes},
            "policy": {"model": model}, "reward_function": {"path": "rewards/gsm8k.py"},
            "algorithm": {"group_size": 4},
            "data": {"max_prompt_length": 512, "max_response_length": 1024, "train_batch_size": 64 * nodes,
                     "mini_batch_size": 16 * nodes, "micro_batch_size_per_gpu": 2}}
    body.update(extra)
    return Plan.model_validate(body)


# DeepSeek-V3 (671B): no veRL placement on up to 40 x 8 H100 passes the rules and memory, the same
# answer as for the catalog's DeepSeek-V3; plan_placement says so by naming plan.hardware.
_NO_PLACEMENT = {"DeepSeek-V3"}


@pytest.mark.parametrize("name", NAMES)
def test_tools_answer_by_folder_path(name: str) -> None:
    """budget_memory, plan_placement and render_config, called as tools (the MCP/CLI path), with
    nothing but the model folder: no catalog entry, no spec given."""
    from advisor.memory import budget_memory
    from advisor.placement import plan_placement
    from rl_advisor.hfconfig import load_model_spec
    from rl_advisor.render_tool import render_config
    from rl_advisor.tools import guarded

    folder = str(FIXTURES / name)
    spec = load_model_spec(folder)
    plan = _plan(folder, spec.params)
    budget = guarded(budget_memory)(plan)
    weights = budget.pools[0]
    assert budget.pools and weights.peak_gib > 0
    if name in _NO_PLACEMENT:
        with pytest.raises(AdvisorError) as exc:
            guarded(plan_placement)(plan)
        assert exc.value.problems[0].field == "plan.hardware"
    else:
        report = guarded(plan_placement)(plan)
        assert report.best is not None and report.best.time.step_s > 0
        assert report.best_plan.policy.spec.params == spec.params  # the resolved dims travel in the Plan
    rendered = guarded(render_config)(plan, validate=False)
    assert any(folder in a.content for a in rendered.rendered.artifacts)  # path derived from the folder


def test_render_validates_for_dense_moe_and_vlm_folders() -> None:
    """The frameworks' own validators accept what is rendered from a folder path."""
    from rl_advisor.hfconfig import load_model_spec
    from rl_advisor.render_tool import render_config
    from rl_advisor.tools import guarded

    for name in ("Llama-3.2-3B-Instruct", "Qwen3-30B-A3B", "Qwen2.5-VL-7B-Instruct"):
        folder = str(FIXTURES / name)
        result = guarded(render_config)(_plan(folder, load_model_spec(folder).params), validate=True)
        assert result.valid, [v.errors for v in result.validation]


def test_vision_tower_is_counted_in_memory() -> None:
    """A VLM holds its vision tower's weights, grads and optimizer state: the same text model
    without it needs less memory."""
    from advisor.memory import budget_memory
    from rl_advisor.hfconfig import load_model_spec
    from rl_advisor.tools import guarded

    folder = str(FIXTURES / "Qwen2.5-VL-7B-Instruct")
    vl = load_model_spec(folder)
    text_only = vl.model_copy(update={"vision_params": 0, "params": None, "active_params": None})
    with_tower = guarded(budget_memory)(_plan(folder, vl.params))
    without = guarded(budget_memory)(_plan("x", vl.params, policy={"model": "x", "spec": text_only.model_dump()}))
    assert with_tower.pools[0].peak_gib > without.pools[0].peak_gib


def test_paths_for_rendering_are_derived() -> None:
    from rl_advisor.model_source import resolve_plan_models

    folder = str(FIXTURES / "Llama-3.2-3B-Instruct")
    assert resolve_plan_models(_plan(folder, 10**9)).policy.path == folder
    cfg_file = str(FIXTURES / "phi-4" / "config.json")
    resolved = resolve_plan_models(_plan(cfg_file, 10**9))
    assert resolved.policy.path == str(FIXTURES / "phi-4") and resolved.policy.spec.name == "phi-4"
    by_name = resolve_plan_models(_plan("Qwen2.5-7B-Instruct", 10**9))
    assert by_name.policy.path == "Qwen/Qwen2.5-7B-Instruct" and by_name.policy.spec is None  # catalog
    kept = resolve_plan_models(_plan("Qwen2.5-7B-Instruct", 10**9, policy={"model": "Qwen2.5-7B-Instruct",
                                                                          "path": "/ckpt/sft"}))
    assert kept.policy.path == "/ckpt/sft"
    with pytest.raises(AdvisorError) as exc:
        resolve_plan_models(_plan("./no/such/model", 10**9))
    assert exc.value.problems[0].field == "policy.model"


# --------------------------------------------------------------------------- hub ids


class _Mirror:
    """A hub mirror on 127.0.0.1 serving ``/{org}/{name}/resolve/{rev}/config.json`` the way the
    hub answers huggingface_hub (ETag, X-Repo-Commit), counting the requests it gets."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.requests: list[str] = []
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _answer(self, body: bool) -> None:
                mirror.requests.append(f"{self.command} {self.path}")
                parts = self.path.split("?")[0].strip("/").split("/")
                repo = "/".join(parts[:2])
                if len(parts) < 5 or parts[2] != "resolve" or repo not in mirror.files:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "RepoNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = mirror.files[repo]
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", f'"{abs(hash(data)):x}"')
                self.send_header("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "_Mirror":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_hub_id_resolves_through_huggingface_hub_and_cache_is_reused(monkeypatch, tmp_path) -> None:
    from advisor.memory import budget_memory
    from rl_advisor.model_source import hub_cache_dir
    from rl_advisor.tools import guarded

    cfg = (FIXTURES / "Llama-3.2-3B-Instruct" / "config.json").read_bytes()
    repo = "meta-llama/Llama-3.2-3B-Instruct"
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "")
    with _Mirror({repo: cfg}) as mirror:
        monkeypatch.setenv("HF_ENDPOINT", mirror.url)
        plan = _plan(repo, 3 * 10**9)
        first = guarded(budget_memory)(plan)
        assert mirror.requests and all(repo in r for r in mirror.requests)
        served = len(mirror.requests)
        second = guarded(budget_memory)(plan)
        assert len(mirror.requests) == served  # the cached config, no request
    # The server is gone: still answered from <data dir>/hf-configs.
    third = guarded(budget_memory)(plan)
    assert first.pools[0].peak_gib == second.pools[0].peak_gib == third.pools[0].peak_gib
    assert any(p.name == "config.json" for p in hub_cache_dir().rglob("*"))
    from rl_advisor.model_source import resolve_plan_models

    resolved = resolve_plan_models(plan)
    assert resolved.policy.path == repo and resolved.policy.spec.params / 1e9 == pytest.approx(3.21, rel=0.01)


def test_hub_unreachable_or_offline_says_what_to_pass(monkeypatch) -> None:
    from advisor.memory import budget_memory
    from rl_advisor.tools import guarded

    with _Mirror({}) as mirror:
        dead = mirror.url
    monkeypatch.setenv("HF_ENDPOINT", dead)  # nothing listens there any more
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(AdvisorError) as exc:
        guarded(budget_memory)(_plan("acme/new-model-7b", 7 * 10**9))
    prob = exc.value.problems[0]
    assert prob.field == "policy.model" and prob.value == "acme/new-model-7b"
    assert "local model folder or config.json path" in prob.allowed and "hf download acme/new-model-7b" in prob.allowed
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(AdvisorError) as exc:
        guarded(budget_memory)(_plan("acme/new-model-7b", 7 * 10**9))
    assert "HF_HUB_OFFLINE" in exc.value.problems[0].message
    with _Mirror({}) as mirror:  # online, but the hub has no such repo
        monkeypatch.setenv("HF_ENDPOINT", mirror.url)
        monkeypatch.delenv("HF_HUB_OFFLINE")
        with pytest.raises(AdvisorError) as exc:
            guarded(budget_memory)(_plan("acme/no-such-model", 7 * 10**9))
    assert exc.value.problems[0].field == "policy.model"


def test_catalog_names_never_touch_the_network(monkeypatch) -> None:
    """The catalog is the offline cache: a catalog hub id resolves with the hub unreachable."""
    from advisor.memory import budget_memory
    from rl_advisor.tools import guarded

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    budget = guarded(budget_memory)(_plan("Qwen/Qwen2.5-7B-Instruct", 7 * 10**9))
    assert budget.pools


# --------------------------------------------------------------------------- GPUs

NEW_GPUS = ["GB200", "B300", "MI325X", "MI355X", "A10G", "L40", "V100", "RTX-A6000", "RTX-6000-Ada",
            "RTX-3090", "RTX-4090", "RTX-5090"]


@pytest.mark.parametrize("name", NEW_GPUS)
def test_new_gpu_rows_name_their_source(name: str) -> None:
    g = catalog.get_gpu(name)
    assert "https://" in g.source
    assert 30 < g.ridge_flop_per_byte < 600  # dense, not the 2:4-sparse figure
    if g.fp8_tflops is not None:
        assert g.fp8_tflops == pytest.approx(2 * g.bf16_tflops, rel=0.05)
    assert g.family == ("rocm" if name.startswith("MI") else "cuda")


def test_consumer_card_aliases() -> None:
    assert catalog.get_gpu("RTX 4090").name == "RTX-4090"
    assert catalog.get_gpu("a6000").name == "RTX-A6000"
    assert catalog.get_gpu("RTX 6000 Ada").name == "RTX-6000-Ada"
    assert not catalog.get_gpu("V100").bf16_supported


def test_unknown_gpu_described_by_its_numbers() -> None:
    """A card the catalog does not know, given by its numbers: every tool reads them."""
    from advisor.memory import budget_memory
    from advisor.placement import plan_placement
    from rl_advisor.tools import guarded

    numbers = {"memory_gib": 24, "bandwidth_tbs": 0.936, "bf16_tflops": 71, "link": "pcie", "link_gbs": 32,
               "source": "my own card"}
    small = _plan("Qwen2.5-0.5B-Instruct", 5 * 10**8,
                  hardware={"gpu": "my-card", "gpus_per_node": 2, "nodes": 1, "gpu_spec": numbers})
    big = _plan("Qwen2.5-0.5B-Instruct", 5 * 10**8,
                hardware={"gpu": "my-card", "gpus_per_node": 2, "nodes": 1, "gpu_spec": {**numbers, "memory_gib": 96}})
    b_small, b_big = guarded(budget_memory)(small), guarded(budget_memory)(big)
    assert b_small.pools[0].capacity_gib < b_big.pools[0].capacity_gib
    assert b_small.pools[0].capacity_gib == pytest.approx(catalog.get_gpu("RTX-3090").hbm_gib * 0.99, rel=0.1)
    assert guarded(plan_placement)(small).best is not None
    with pytest.raises(AdvisorError) as exc:  # no numbers and an unknown name: named, with the way out
        guarded(budget_memory)(_plan("Qwen2.5-0.5B-Instruct", 5 * 10**8, hardware={"gpu": "my-card"}))
    assert exc.value.problems[0].field == "hardware.gpu" and "gpu_spec" in exc.value.problems[0].allowed
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="gpu_spec.memory_gib"):
        Plan.model_validate({**small.model_dump(), "hardware": {"gpu": "x", "gpu_spec": {**numbers, "memory_gib": -1}}})


def test_derived_path_never_guesses_another_org() -> None:
    assert catalog.weights_path_for("Qwen2.5-7B-Instruct") == "Qwen/Qwen2.5-7B-Instruct"
    assert catalog.weights_path_for("gemma-2-9b-it") == "google/gemma-2-9b-it"
    assert catalog.weights_path_for("DeepSeek-R1-Distill-Llama-8B") is None  # an alias from another org
    assert catalog.weights_path_for("my-private-llm") is None and catalog.weights_path_for("/ckpt/x") is None


def test_v100_bf16_role_is_warned() -> None:
    from advisor.plan_check import validate_plan

    v100 = _plan("Qwen2.5-0.5B-Instruct", 5 * 10**8, hardware={"gpu": "V100"})
    assert any("no bf16" in w and "policy.dtype" in w for w in validate_plan(v100).warnings)
    fp16 = _plan("Qwen2.5-0.5B-Instruct", 5 * 10**8, hardware={"gpu": "V100"},
                 policy={"model": "Qwen2.5-0.5B-Instruct", "dtype": "fp16"})
    assert not any("bf16" in w for w in validate_plan(fp16).warnings)
    assert not any("bf16" in w for w in validate_plan(_plan("Qwen2.5-0.5B-Instruct", 5 * 10**8)).warnings)


def test_catalog_agrees_with_the_published_configs() -> None:
    """The catalog is an offline cache: where it knows a fixture's model, its exact count equals
    the published config's (text model only: the catalog's Gemma-3 rows leave the vision tower out)."""
    from rl_advisor.hfconfig import load_model_spec

    checked = 0
    for name in NAMES:
        cached = catalog.find_model(name)
        if cached is None:
            continue
        spec = load_model_spec(FIXTURES / name)
        assert cached.params == spec.params - spec.vision_params, name
        assert (cached.num_layers, cached.hidden_size, cached.num_kv_heads, cached.num_experts) == \
            (spec.num_layers, spec.hidden_size, spec.num_kv_heads, spec.num_experts), name
        checked += 1
    assert checked >= 12


def test_config_budget_reads_a_local_checkpoint_named_in_the_framework_config() -> None:
    """budget_memory_from_config (the tool): the veRL launch's model.path is a folder the catalog
    does not know; its config.json gives the dimensions."""
    from rl_advisor.config_budget import budget_memory_from_config
    from rl_advisor.tools import guarded

    folder = FIXTURES / "OLMo-2-1124-7B-Instruct"
    launch = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=64 "
              "data.max_prompt_length=512 data.max_response_length=1024 "
              f"actor_rollout_ref.model.path={folder} actor_rollout_ref.actor.ppo_mini_batch_size=16 "
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 actor_rollout_ref.rollout.n=4 "
              "trainer.n_gpus_per_node=8 trainer.nnodes=1")
    result = guarded(budget_memory_from_config)(launch, gpu="H100")
    assert result.imported.plan.policy.spec.params / 1e9 == pytest.approx(7.30, rel=0.01)
    assert result.budget.pools[0].peak_gib > 0


def test_mcp_callers_read_configs_only_inside_the_allowed_folders(tmp_path, monkeypatch) -> None:
    """A model folder named by an MCP client is read like any file it names: confined to the
    working folder, the data folder and $RL_ADVISOR_ALLOWED_ROOTS."""
    import shutil

    from advisor.memory import budget_memory
    from rl_advisor.safe_paths import untrusted_caller
    from rl_advisor.tools import guarded

    outside = tmp_path / "elsewhere" / "Qwen3-0.6B"
    shutil.copytree(FIXTURES / "Qwen3-0.6B", outside)
    monkeypatch.chdir(FIXTURES.parent.parent.parent)
    plan = _plan(str(outside), 6 * 10**8)
    with untrusted_caller():
        with pytest.raises(AdvisorError) as exc:
            guarded(budget_memory)(plan)
        assert exc.value.problems[0].field == "policy.model"
        assert guarded(budget_memory)(_plan(str(FIXTURES / "Qwen3-0.6B"), 6 * 10**8)).pools  # inside the repo
    monkeypatch.setenv("RL_ADVISOR_ALLOWED_ROOTS", str(tmp_path))
    with untrusted_caller():
        assert guarded(budget_memory)(plan).pools
    fifo_dir = tmp_path / "fifo-model"
    fifo_dir.mkdir()
    import os

    os.mkfifo(fifo_dir / "config.json")  # never blocks: not a regular file
    with pytest.raises(AdvisorError) as exc:
        guarded(budget_memory)(_plan(str(fifo_dir), 6 * 10**8))
    assert exc.value.problems[0].field == "policy.model"
