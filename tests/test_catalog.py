"""Catalog tests: exact parameter counts against transformers, complete GPU rows, name errors,
and config.json import."""

from __future__ import annotations

import json

import pytest
import yaml

from advisor import catalog
from advisor.errors import AdvisorError
from advisor.plan import ModelSpec, RoleModel

ENTRIES = catalog.model_entries()


def _hf_meta_count(spec: ModelSpec) -> int:
    """Parameters of the real transformers CausalLM for this spec, built on the meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(spec.architecture, **catalog.hf_config_kwargs(spec))
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    # model.parameters() yields a tied embedding/head tensor once, as count_params counts it.
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.spec.name for e in ENTRIES])
def test_param_count_equals_transformers_meta_device(entry: catalog.ModelEntry) -> None:
    spec = entry.spec
    assert spec.params == catalog.count_params(spec)
    assert _hf_meta_count(spec) == spec.params


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.spec.name for e in ENTRIES])
def test_param_count_matches_model_card(entry: catalog.ModelEntry) -> None:
    """The dimensions themselves: the count agrees with the size the model card states
    (a wrong layer count or width moves it by far more than 2%)."""
    assert entry.published_params_b, f"{entry.spec.name}: no published size to check against"
    assert entry.spec.params / 1e9 == pytest.approx(entry.published_params_b, rel=0.02)
    if entry.spec.is_moe:
        assert entry.published_active_b
        assert entry.spec.active_params / 1e9 == pytest.approx(entry.published_active_b, rel=0.03)
        assert entry.spec.active_params < entry.spec.params
    else:
        assert entry.spec.active_params == entry.spec.params


def test_architecture_specific_details() -> None:
    """Facts from the HF configs that a generic decoder formula gets wrong."""
    q05 = catalog.get_model("Qwen2.5-0.5B-Instruct")
    assert q05.qkv_bias and q05.tie_embeddings
    assert not catalog.get_model("Qwen2.5-7B-Instruct").tie_embeddings
    q3 = catalog.get_model("Qwen3-8B")
    assert q3.qk_norm and q3.head_dim == 128 and q3.hidden_size // q3.num_heads == 128
    assert catalog.get_model("Qwen3-0.6B").hidden_size // 16 != catalog.get_model("Qwen3-0.6B").head_dim
    g2 = catalog.get_model("gemma-2-9b-it")
    assert g2.head_dim == 256 and g2.tie_embeddings
    assert catalog.get_model("Gemma-2-27B").head_dim == 128
    ds = catalog.get_model("deepseek-ai/DeepSeek-V3")
    assert (ds.first_k_dense_layers, ds.num_shared_experts, ds.moe_intermediate_size) == (3, 1, 2048)
    assert (ds.q_lora_rank, ds.kv_lora_rank, ds.qk_nope_head_dim, ds.qk_rope_head_dim, ds.v_head_dim) == \
        (1536, 512, 128, 64, 128)
    assert (ds.intermediate_size, ds.vocab_size, ds.attention) == (18432, 129280, "mla")


def test_catalog_dims_agree_with_published_cases(shared_dir) -> None:
    """Every model named in the published cases resolves, with the same dimensions."""
    data = yaml.safe_load((shared_dir / "cases" / "published-dev.yaml").read_text())
    keys = {"layers": "num_layers", "hidden": "hidden_size", "heads": "num_heads",
            "kv_heads": "num_kv_heads", "head_dim": "head_dim", "intermediate": "intermediate_size",
            "vocab": "vocab_size", "experts": "num_experts", "routed_experts": "num_experts",
            "experts_per_token": "experts_per_token", "moe_intermediate": "moe_intermediate_size",
            "kv_lora_rank": "kv_lora_rank", "qk_rope_head_dim": "qk_rope_head_dim",
            "shared_experts": "num_shared_experts"}
    checked = 0
    for name, dims in data["models"].items():
        spec = catalog.find_model(name)
        if spec is None:
            assert name == "OPT-350M", f"{name} from published cases is not in the catalog"
            continue
        for theirs, ours in keys.items():
            if theirs in dims:
                assert getattr(spec, ours) == dims[theirs], f"{name}.{ours}"
                checked += 1
    assert checked > 100
    for case in data["cases"]:
        model = case.get("model", "")
        if model and "unnamed" not in str(model):
            catalog.get_model(model, field="case.model")


GPU_REQUIRED = ["A100-40G", "A100-80G", "A800", "H100", "H800", "H20", "H200", "B200", "L40S", "L4",
                "MI300X", "TPU-v5e", "TPU-v5p", "TPU-v6e"]


@pytest.mark.parametrize("name", GPU_REQUIRED)
def test_gpu_rows_complete_with_source(name: str) -> None:
    g = catalog.get_gpu(name)
    assert g.hbm_gib > 0 and g.hbm_bandwidth_tbs > 0 and g.bf16_tflops > 0
    assert g.intra_node_bandwidth_gbs > 0 and g.intra_node_link
    assert g.source.strip() and ("http" in g.source or "datasheet" in g.source.lower()
                                 or "brief" in g.source.lower())
    # Dense, not sparse: no catalog GPU has a bf16 ridge point beyond ~600 FLOP/B.
    assert 30 < g.ridge_flop_per_byte < 600
    if g.fp8_tflops is not None:
        assert g.fp8_tflops == pytest.approx(2 * g.bf16_tflops, rel=0.05)
    assert g.family == ("tpu" if name.startswith("TPU") else "rocm" if name == "MI300X" else "cuda")


def test_gpu_aliases_and_known_values() -> None:
    assert catalog.get_gpu("h100-sxm").name == "H100"
    assert catalog.get_gpu("A100").name == "A100-80G"
    assert catalog.get_gpu("nvidia/a100 80gb").name == "A100-80G"
    assert catalog.get_gpu("A800-SXM4").name == "A800"
    assert catalog.get_gpu("H200").hbm_gib == 141
    assert catalog.get_gpu("H800").intra_node_bandwidth_gbs < catalog.get_gpu("H100").intra_node_bandwidth_gbs
    assert catalog.get_gpu("TPU v5e").fp8_tflops is None
    names = [g.name for g in catalog.list_gpus()]
    assert len(names) == len(set(names)) >= len(GPU_REQUIRED)


def test_unknown_names_name_the_field_with_close_matches() -> None:
    with pytest.raises(AdvisorError) as exc:
        catalog.get_gpu("H1000")
    prob = exc.value.problems[0]
    assert prob.field == "hardware.gpu" and prob.value == "H1000" and "H100" in prob.allowed
    with pytest.raises(AdvisorError) as exc:
        catalog.get_model("Qwen2.5-7B-Instrcut", field="policy.model")
    prob = exc.value.problems[0]
    assert prob.field == "policy.model" and "Qwen2.5-7B" in prob.allowed
    with pytest.raises(AdvisorError) as exc:
        catalog.resolve_role_model(RoleModel(model="my-private-llm"), "reward")
    assert exc.value.problems[0].field == "reward.model"
    assert "reward.spec" in exc.value.problems[0].allowed


def test_resolve_role_model() -> None:
    by_name = catalog.resolve_role_model(RoleModel(model="Qwen/Qwen2.5-7B-Instruct"), "policy")
    assert by_name.name == "Qwen2.5-7B" and by_name.params == 7615616512
    by_path = catalog.resolve_role_model(
        RoleModel(model="my-sft-run", path="/ckpt/Llama-3.1-8B-Instruct"), "policy")
    assert by_path.name == "Llama-3.1-8B"
    spec = catalog.get_model("Mistral-7B").model_copy(update={"name": "custom", "params": None,
                                                              "active_params": None})
    explicit = catalog.resolve_role_model(RoleModel(model="anything", spec=spec), "critic")
    assert explicit.params == catalog.get_model("Mistral-7B").params


def _write_config(tmp_path, cfg: dict, dirname: str = "model") -> str:
    d = tmp_path / dirname
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


@pytest.mark.parametrize("name", ["Qwen2.5-7B", "Qwen3-30B-A3B", "DeepSeek-V3", "Gemma-3-4B", "OPT-13B",
                                  "Mixtral-8x7B", "Llama-2-7B"])
def test_config_json_import_round_trip(tmp_path, name: str) -> None:
    """A config.json written by transformers itself imports to the same dims and count."""
    transformers = pytest.importorskip("transformers")
    from rl_advisor.hfconfig import load_model_spec

    spec = catalog.get_model(name)
    cfg = transformers.AutoConfig.for_model(spec.architecture, **catalog.hf_config_kwargs(spec))
    path = _write_config(tmp_path, cfg.to_dict(), dirname=name)
    imported = load_model_spec(path)
    assert imported.name == name
    assert imported.params == spec.params and imported.active_params == spec.active_params
    for f in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "vocab_size",
              "tie_embeddings", "qkv_bias", "qk_norm", "num_experts", "experts_per_token",
              "moe_intermediate_size", "attention", "kv_lora_rank"):
        assert getattr(imported, f) == getattr(spec, f), f


def test_config_json_multimodal_wrapper(tmp_path) -> None:
    """Gemma-3 4B+ configs nest the language model under text_config."""
    from rl_advisor.hfconfig import load_model_spec

    g = catalog.get_model("Gemma-3-12B")
    text = {"model_type": "gemma3_text", **{k: v for k, v in catalog.hf_config_kwargs(g).items()}}
    path = _write_config(tmp_path, {"model_type": "gemma3", "text_config": text,
                                    "vision_config": {"hidden_size": 1152}})
    spec = load_model_spec(path, name="g")
    # The vision tower (SigLIP, transformers' defaults) is counted on top of the catalog's text model.
    assert spec.vision_params > 0 and spec.params == g.params + spec.vision_params
    assert spec.params == catalog.count_params(spec)
    with pytest.raises(AdvisorError) as exc:  # without transformers to count the tower: refused, with why
        catalog.spec_from_hf_config({"model_type": "gemma3", "text_config": text, "vision_config": {}})
    assert exc.value.problems[0].field == "config.vision_config"
    assert "vision tower" in exc.value.problems[0].message


def test_config_json_errors_name_the_key(tmp_path) -> None:
    from rl_advisor.hfconfig import load_model_spec, read_hf_config

    with pytest.raises(AdvisorError) as exc:  # the pure reader names the missing key
        catalog.spec_from_hf_config({"model_type": "llama", "hidden_size": 64})
    assert exc.value.problems[0].field.startswith("config.")
    with pytest.raises(AdvisorError) as exc:  # transformers cannot build it: named, no traceback
        load_model_spec(_write_config(tmp_path, {"model_type": "llama", "hidden_size": 64,
                                                 "num_attention_heads": 5, "num_key_value_heads": 2}, "a"))
    assert exc.value.problems[0].field.startswith("config")
    with pytest.raises(AdvisorError) as exc:
        read_hf_config(tmp_path / "missing")
    assert exc.value.problems[0].field == "config"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(AdvisorError, match="not valid JSON"):
        read_hf_config(bad)
    with pytest.raises(AdvisorError) as exc:
        catalog.spec_from_hf_config({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                     "num_attention_heads": 4, "num_key_value_heads": 3,
                                     "vocab_size": 10, "intermediate_size": 8})
    assert "num_kv_heads" in str(exc.value)


def test_list_catalog_tool() -> None:
    gpus = catalog.list_catalog("gpus")
    assert {r.name for r in gpus.rows} >= set(GPU_REQUIRED)
    assert "H100" in gpus.to_text()
    models = catalog.list_catalog("models")
    assert len(models.rows) == len(ENTRIES)
    assert "DeepSeek-V3" in models.to_text() and "671.03B" in models.to_text()


def test_unsupported_model_type_is_marked_approximate() -> None:
    """A model_type without an exact formula is still counted (Llama family) but says so."""
    spec = catalog.spec_from_hf_config({"model_type": "internlm2", "hidden_size": 4096, "num_hidden_layers": 32,
                                        "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 92544,
                                        "intermediate_size": 14336}, name="internlm2_5-7b")
    assert "approximate" in spec.source and spec.params / 1e9 == pytest.approx(7.74, rel=0.01)
    exact = catalog.spec_from_hf_config({"model_type": "llama", **catalog.hf_config_kwargs(
        catalog.get_model("Llama-2-7B"))})
    assert exact.source == "config.json"


def test_role_model_from_local_checkpoint_dir(tmp_path) -> None:
    """A role whose weights are a local directory not in the catalog is read from its config.json."""
    from rl_advisor.hfconfig import resolve_role_model_with_files

    spec = catalog.get_model("Qwen3-4B")
    kw = {"model_type": "qwen3", **catalog.hf_config_kwargs(spec)}
    path = _write_config(tmp_path, kw, "my-finetune-step-400")
    got = resolve_role_model_with_files(RoleModel(model="my-finetune", path=path), "policy")
    assert got.name == "my-finetune-step-400" and got.params == spec.params
    with pytest.raises(AdvisorError) as exc:
        resolve_role_model_with_files(RoleModel(model="nowhere", path=str(tmp_path / "absent")), "reward")
    assert exc.value.problems[0].field == "reward.model"
