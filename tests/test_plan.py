"""The Plan: its YAML form round-trips, and impossible values are rejected naming the field."""

from __future__ import annotations

import pytest
import yaml

from advisor.errors import AdvisorError
from advisor.plan import Method, Plan, plan_from_dict, plan_from_yaml, plan_to_yaml
from tests.conftest import example_plan_path


def _example() -> dict:
    return yaml.safe_load(example_plan_path().read_text())


def test_example_plan_loads_and_round_trips_byte_identically():
    plan = plan_from_yaml(example_plan_path().read_text())
    assert plan.method is Method.GRPO
    assert plan.hardware.total_gpus == 8
    text = plan_to_yaml(plan)
    again = plan_from_yaml(text)
    assert again == plan
    assert plan_to_yaml(again) == text


@pytest.mark.parametrize(
    ("path", "value", "field_fragment"),
    [
        (("data", "train_batch_size"), -4, "plan.data.train_batch_size"),
        (("data", "mini_batch_size"), 4096, "plan.data"),
        (("memory", "rollout_memory_fraction"), 1.5, "plan.memory.rollout_memory_fraction"),
        (("rollout", "tp"), 16, "plan"),  # 16 > the 8 GPUs of the example's hardware
        (("hardware", "gpus_per_node"), 0, "plan.hardware.gpus_per_node"),
        (("method",), "ppo2", "plan.method"),
        (("algorithm", "group_size"), 0, "plan.algorithm.group_size"),
        (("logging", "wandb_api_key_env"), "$(curl x)", "plan.logging.wandb_api_key_env"),
        (("policy", "parallel", "fsdp_size"), 0, "plan.policy.parallel"),
    ],
)
def test_impossible_values_name_the_field(path, value, field_fragment):
    data = _example()
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    with pytest.raises(AdvisorError) as info:
        plan_from_dict(data)
    fields = [p.field for p in info.value.problems]
    assert any(f.startswith(field_fragment) for f in fields), fields
    assert str(info.value)


def test_unknown_key_is_an_error_not_silently_ignored():
    data = _example()
    data["rollout"]["gpu_mem_util"] = 0.5
    with pytest.raises(AdvisorError) as info:
        plan_from_dict(data)
    assert info.value.problems[0].field == "plan.rollout.gpu_mem_util"
    assert "extra" in info.value.problems[0].message.lower() or "not permitted" in info.value.problems[0].message


def test_invalid_yaml_reports_the_position():
    with pytest.raises(AdvisorError) as info:
        plan_from_yaml("policy: {model: x\nmethod: [")
    assert "line" in str(info.value.problems[0].value)


def test_non_mapping_plan_is_rejected():
    with pytest.raises(AdvisorError) as info:
        plan_from_yaml("- just\n- a list\n")
    assert info.value.problems[0].field == "plan"


def test_pools_cannot_use_more_gpus_than_exist():
    data = _example()
    data["placement"] = {"mode": "split", "pools": [
        {"name": "train", "gpus_per_node": 8, "roles": ["policy", "reference"]},
        {"name": "rollout", "gpus_per_node": 8, "roles": ["rollout"]}]}
    with pytest.raises(AdvisorError, match="pools use 16 GPUs"):
        plan_from_dict(data)


def test_plan_json_schema_is_available_for_mcp_clients():
    schema = Plan.model_json_schema()
    assert "policy" in schema["required"]
    assert schema["additionalProperties"] is False
