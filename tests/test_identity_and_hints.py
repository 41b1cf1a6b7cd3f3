"""One identity per pass, one TOML writer, one stage heuristic: the core helpers every consumer uses."""

from __future__ import annotations

import tomllib

import pytest

from lite_guard.hints import WHY_PLACEHOLDER, config_hint, one_line, pass_hint
from lite_guard.identity import is_qualified, pass_identity, qualified_name, split_qualified
from lite_guard.registry import Registry
from lite_guard.stages import STAGES, guess_stage


def test_a_pass_outside_torch_is_qualified_and_cannot_take_a_torch_name():
    assert pass_identity("my_project.passes", "fx_graph_cse") == "my_project.passes:fx_graph_cse"
    assert pass_identity("torch._inductor.fx_passes.post_grad", "fx_graph_cse") == "fx_graph_cse"
    assert pass_identity("torch._inductor.fx_utils", "Obs", torch_name="remove_noop_ops") == "remove_noop_ops"


def test_qualified_names_split_back():
    name = qualified_name("vllm.compilation.fusion", "RMSNormQuantFusionPass")
    assert is_qualified(name) and split_qualified(name) == ("vllm.compilation.fusion", "RMSNormQuantFusionPass")
    assert not is_qualified("fx_graph_cse") and split_qualified("fx_graph_cse") is None


@pytest.mark.parametrize("name", ['plain', 'quote"d', "new\nline", "[red]markup[/red]", "back\\slash"])
def test_pass_hint_is_valid_toml_that_the_registry_loads_with_the_exact_name(tmp_path, name):
    hint = pass_hint(name, "post_grad", "function", source="x.py", gated_by=("use_x",))
    data = tomllib.loads(hint)
    assert data["pass"][0]["name"] == name and data["pass"][0]["lite"] == "never"
    assert data["pass"][0]["why"] == WHY_PLACEHOLDER
    path = tmp_path / "r.toml"
    path.write_text(hint)
    assert Registry.from_files([path]).get_pass(name).gated_by == ("use_x",)
    assert "\n" not in one_line(hint)


def test_config_hint_round_trips():
    data = tomllib.loads(config_hint("reorder_for_int8_overlap", "inductor", "reorder", "bool", False))
    assert data["config"][0] == {"key": "reorder_for_int8_overlap", "module": "inductor", "kind": "reorder",
                                 "type": "bool", "lite_value": False, "why": WHY_PLACEHOLDER}


@pytest.mark.parametrize("where, stage", [
    ("torch/_inductor/fx_passes/post_grad.py", "post_grad"),
    ("torch/_inductor/fx_passes/split_cat.py", "pre_grad"),
    ("torch/_inductor/fx_passes/joint_graph.py", "joint_graph"),
    ("torch/_inductor/scheduler.py", "scheduler"),
    ("torch/_inductor/codegen/wrapper.py", "codegen"),
    ("torch/_functorch/partitioners.py", "aot"),
    ("torch._inductor.fx_passes.pre_grad", "pre_grad"),
    ("vllm/compilation/fusion.py", "post_grad"),
])
def test_guess_stage(where, stage):
    assert guess_stage(where) == stage and stage in STAGES
