"""The registry loader: good files load, every kind of bad input is one line with file:line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lite_guard.registry import Registry, RegistryError

GOOD = """\
[[pass]]
name = "my_fusion"
stage = "post_grad"
lite = "never"
gated_by = ["use_my_fusion"]
why = "fuses ops, changes rounding"

[[pass]]
name = "my_safe_pass"
stage = "lowering"
lite = "always"
torch = ">=2.11"
why = "only renames buffers"

[[config]]
key = "use_my_fusion"
lite_value = false
why = "gates my_fusion"

[[config]]
key = "my_recompute_budget"  # a project key: every torch key is in the shipped inventory
module = "functorch"
kind = "optimization"
lite_value = 1.0
"""


def write(tmp_path: Path, text: str, name: str = "reg.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_good_registry_loads_and_answers_queries(tmp_path):
    registry = Registry.from_files([write(tmp_path, GOOD)])
    assert registry.get_pass("my_fusion").gated_by == ("use_my_fusion",)
    assert [p.name for p in registry.filter(lite="always")] == ["my_safe_pass"]
    assert [p.name for p in registry.filter(stage="post_grad")] == ["my_fusion"]
    assert registry.derive_lite_config() == {"use_my_fusion": False}
    assert registry.derive_lite_config(module="functorch") == {"my_recompute_budget": 1.0}
    assert registry.suggest("my_fusoin")[0] == "my_fusion"


def test_torch_version_range_filters_derived_config(tmp_path):
    text = GOOD + '\n[[config]]\nkey = "new_flag"\nlite_value = false\ntorch = ">=2.14"\n'
    registry = Registry.from_files([write(tmp_path, text)])
    assert "new_flag" not in registry.derive_lite_config(torch_version="2.13.0+cpu")
    assert registry.derive_lite_config(torch_version="2.14.0a0")["new_flag"] is False


BAD_INPUTS = {
    "malformed_toml": ('[[pass]]\nname = "x\n', 2, "malformed TOML"),
    "unknown_stage": ('[[pass]]\nname = "x"\nstage = "postgrad"\nlite = "never"\n', 3,
                      "unknown stage 'postgrad' (did you mean 'post_grad'?)"),
    "unknown_flag": ('[[pass]]\nname = "x"\nstage = "post_grad"\nlite = "sometimes"\n', 4,
                     "unknown lite 'sometimes'"),
    "lite_safe_without_why": ('\n[[pass]]\nname = "x"\nstage = "lowering"\nlite = "always"\n', 2,
                              "is lite-safe (lite = \"always\") but has no 'why'"),
    "unknown_field": ('[[pass]]\nname = "x"\nstage = "lowering"\nlite = "never"\nwhy2 = "a"\n', 5,
                      "unknown field 'why2'"),
    "inline_array": ('pass = [{name = "x", stage = "lowering", lite = "never"}]\n', 1,
                     "write each entry under its own [[pass]] header"),
    "config_without_value": ('[[config]]\nkey = "k"\n', 1, "has no 'lite_value'"),
    "bad_torch_range": ('[[pass]]\nname = "x"\nstage = "lowering"\nlite = "never"\ntorch = "2.x"\n',
                        5, "invalid torch version range"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_registry_input_is_one_line_with_file_and_line(tmp_path, case):
    text, line, message = BAD_INPUTS[case]
    path = write(tmp_path, text)
    with pytest.raises(RegistryError) as info:
        Registry.from_files([path])
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_duplicate_pass_across_files_names_both_places(tmp_path):
    first = write(tmp_path, GOOD, "a.toml")
    second = write(tmp_path, '[[pass]]\nname = "my_fusion"\nstage = "lowering"\nlite = "never"\n',
                   "b.toml")
    with pytest.raises(RegistryError, match=rf"^{second}:1: duplicate pass 'my_fusion' \(first"
                                            rf" defined at {first}:1\)"):
        Registry.from_files([first, second])


def test_missing_registry_path_is_an_error(tmp_path):
    with pytest.raises(RegistryError, match="registry file does not exist"):
        Registry.from_files([tmp_path / "nope.toml"])


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lite_guard", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case", ["malformed_toml", "unknown_stage", "lite_safe_without_why"])
def test_cli_reports_bad_registry_in_one_line_exit_2(tmp_path, case):
    text, line, _ = BAD_INPUTS[case]
    path = write(tmp_path, text)
    result = run_cli("check", "--registry", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert f"{path}:{line}:" in result.stderr
    assert "Traceback" not in result.stderr


def test_project_registry_from_pyproject_is_used(tmp_path):
    write(tmp_path, GOOD, "team_passes.toml")
    (tmp_path / "pyproject.toml").write_text('[tool.lite_guard]\nregistries = ["team_passes.toml"]\n')
    result = run_cli("registry", "show", "my_fusion", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "post_grad" in result.stdout


def test_project_registry_path_that_does_not_exist_exits_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.lite_guard]\nregistries = ["missing.toml"]\n')
    result = run_cli("check", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: {tmp_path / 'pyproject.toml'}:2: [tool.lite_guard] registries: 'missing.toml'"
        " does not exist; fix the path (relative to this pyproject.toml's folder) or remove the entry"]


def test_registry_show_unknown_name_is_one_stderr_line_exit_2_with_did_you_mean(tmp_path):
    result = run_cli("registry", "show", "use_dc", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "did you mean: use_dce" in result.stderr


def test_registry_list_filters_by_stage_and_flag(tmp_path):
    write(tmp_path, GOOD, "team.toml")
    result = run_cli("registry", "list", "--registry", "team.toml", "--lite", "always", "--json",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '"name": "my_safe_pass"' in result.stdout and "my_fusion" not in result.stdout


def test_check_flags_always_pass_whose_gate_is_forced_off(tmp_path):
    write(tmp_path, '[[pass]]\nname = "p"\nstage = "lowering"\nlite = "always"\nwhy = "w"\n'
                    'gated_by = ["use_p"]\n[[config]]\nkey = "use_p"\nlite_value = false\n',
          "team.toml")
    result = run_cli("check", "--registry", "team.toml", "--no-project", cwd=tmp_path)
    assert result.returncode == 1
    assert "pass 'p' is lite = \"always\" but its gate 'use_p' is forced off" in result.stdout


def test_import_lite_guard_does_not_import_torch():
    code = ("import sys, lite_guard, lite_guard.registry, lite_guard.cli;"
            "r = lite_guard.registry.Registry.load(); r.derive_lite_config();"
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_version_flag():
    result = subprocess.run([sys.executable, "-m", "lite_guard", "--version"],
                            capture_output=True, text=True, timeout=60)
    from lite_guard import __version__

    assert result.returncode == 0 and result.stdout.strip() == f"lite_guard {__version__}"


def test_wildcard_entries_match_names_built_at_run_time(tmp_path):
    path = write(tmp_path, '[[pass]]\nname = "my_project.fusion:group_*"\nstage = "post_grad"\n'
                           'lite = "region"\nwhy = "fusions named per group"\n[[pass]]\n'
                           'name = "my_project.fusion:group_exact"\nstage = "post_grad"\nlite = "never"\n')
    registry = Registry.from_files([path])
    assert registry.match_pass("my_project.fusion:group_3").name == "my_project.fusion:group_*"
    assert registry.match_pass("my_project.fusion:group_exact").lite == "never"  # exact name wins
    assert registry.match_pass("group_3") is None


@pytest.mark.parametrize("name", ["*", "fx_*", "torch._inductor.fx_passes:*", "my_project*"])
def test_wildcard_that_allows_passes_outside_a_qualified_namespace_is_refused(tmp_path, name):
    path = write(tmp_path, f'[[pass]]\nname = "{name}"\nstage = "post_grad"\nlite = "always"\n'
                           'why = "all of them"\n')
    with pytest.raises(RegistryError) as error:
        Registry.from_files([path])
    assert str(error.value) == (
        f"{path}:2: wildcard pass '{name}' may not be lite = \"always\": a wildcard can only allow"
        " passes inside your own qualified namespace; write e.g. name = \"my_project.passes:*\" or"
        " list the passes one by one")


def test_never_wildcards_need_no_namespace(tmp_path):
    path = write(tmp_path, '[[pass]]\nname = "fx_*"\nstage = "post_grad"\nlite = "never"\n')
    assert Registry.from_files([path]).match_pass("fx_anything").lite == "never"


SCHEMA_ERRORS = {
    "string_for_bool": ('[[config]]\nkey = "epilogue_fusion"\nkind = "optimization"\ntype = "bool"\n'
                        'lite_value = "false"\n', 1,
                        "lite_value 'false' of 'epilogue_fusion' is str, but torch's config declares"
                        " bool; write a bool value"),
    "int_for_bool": ('[[config]]\nkey = "k"\nkind = "reorder"\ntype = "bool"\nlite_value = 0\n', 1,
                     "lite_value 0 of 'k' is int, but torch's config declares bool; write a bool value"),
    "unknown_type": ('[[config]]\nkey = "k"\nkind = "tuning"\ntype = "boolean"\n', 4,
                     "unknown type 'boolean' for 'k'"),
    "forced_kind_without_value": ('[[config]]\nkey = "k"\nkind = "reorder"\ntype = "bool"\n', 1,
                                  "config 'k' (kind = \"reorder\") has no 'lite_value'"),
    "free_kind_with_value": ('[[config]]\nkey = "k"\nkind = "debug"\nlite_value = true\n', 4,
                             "config 'k' is kind = \"debug\", which lite mode does not force"),
    "bad_region_policy": ('[[config]]\nkey = "k"\nkind = "tuning"\nregion = "sometimes"\n', 4,
                          "region policy 'sometimes' of 'k' must be"),
    "region_value_of_wrong_type": ('[[config]]\nkey = "k"\nkind = "tuning"\ntype = "int"\n'
                                   'region = [1, "two"]\n', 1, "region value 'two' of 'k' is not int"),
    "hook_not_qualified": ('[[pass]]\nname = "p"\nstage = "scheduler"\nlite = "never"\n'
                           'hook = "torch._inductor.scheduler.fuse"\n', 5,
                           "hook 'torch._inductor.scheduler.fuse' is not 'module:qualname'"),
    "when_not_a_key": ('[[pass]]\nname = "p"\nstage = "scheduler"\nlite = "never"\nwhen = "a b"\n', 5,
                       "when 'a b' is not a config key"),
    "pipeline_root_not_qualified": ('[[pipeline]]\nroot = "post_grad_passes"\nstage = "post_grad"\n', 2,
                                    "root 'post_grad_passes' is not 'module:qualname'"),
    "observer_base_without_name_arg": ('[[base]]\nname = "m:Observer"\nrole = "observer"\n', 1,
                                       "base 'm:Observer' (role = \"observer\") must say which argument"),
    "unknown_table": ('[[passes]]\nname = "p"\n', 1, "unknown table 'passes'"),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_ERRORS))
def test_schema_errors_are_one_line_at_their_line(tmp_path, case):
    text, line, message = SCHEMA_ERRORS[case]
    path = write(tmp_path, text)
    with pytest.raises(RegistryError) as error:
        Registry.from_files([path])
    assert str(error.value).startswith(f"{path}:{line}: {message}"), str(error.value)
    assert "\n" not in str(error.value)


def test_pipelines_bases_hooks_and_custom_hooks_load(tmp_path):
    path = write(tmp_path, textwrap.dedent('''\
        [[pass]]
        name = "fuse_nodes"
        stage = "scheduler"
        lite = "never"
        kind = "scheduler"
        hook = "torch._inductor.scheduler:Scheduler.fuse_nodes"
        when = "triton.cudagraphs"

        [[pass]]
        name = "joint_custom_pass"
        stage = "aot"
        lite = "never"
        kind = "custom_hook"
        hook = "torch._functorch.config:joint_custom_pass"

        [[pipeline]]
        root = "torch._inductor.fx_passes.post_grad:post_grad_passes"
        stage = "post_grad"

        [[base]]
        name = "torch.fx.passes.graph_transform_observer:GraphTransformObserver"
        role = "observer"
        name_arg = "passname"
        name_position = 1
        '''))
    registry = Registry.from_files([path])
    assert [p.name for p in registry.hooked_passes()] == ["fuse_nodes"]
    assert registry.hooked_passes()[0].when_key == ("inductor", "triton.cudagraphs")
    assert [(p.name, p.hook) for p in registry.custom_hooks()] == [
        ("joint_custom_pass", "torch._functorch.config:joint_custom_pass")]
    assert registry.pipelines[0].root == "torch._inductor.fx_passes.post_grad:post_grad_passes"
    assert [b.name_position for b in registry.bases_by_role("observer")] == [1]


def test_lite_null_forces_none_where_toml_has_no_null(tmp_path):
    path = write(tmp_path, '[[config]]\nkey = "cpp.inject_relu_bug_TESTING_ONLY"\nkind = "numerics"\n'
                           'type = "str|none"\nlite_null = true\n')
    entry = Registry.from_files([path]).get_config("cpp.inject_relu_bug_TESTING_ONLY")
    assert entry.forced and entry.lite_value is None
    assert entry.region_allows("compile_error")[0] is False and entry.region_allows(None) == (True, "")


def test_lite_null_beside_a_lite_value_is_refused(tmp_path):
    path = write(tmp_path, '[[config]]\nkey = "k"\nkind = "numerics"\ntype = "str|none"\n'
                           'lite_null = true\nlite_value = "x"\n')
    with pytest.raises(RegistryError) as error:
        Registry.from_files([path])
    assert str(error.value).startswith(f"{path}:5: config 'k': lite_null must be true")


def test_region_policy_forced_free_and_listed(tmp_path):
    path = write(tmp_path, textwrap.dedent('''\
        [[config]]
        key = "inplace_buffers"
        kind = "optimization"
        type = "bool"
        lite_value = false

        [[config]]
        key = "cpp.simdlen"
        kind = "tuning"
        type = "int|none"

        [[config]]
        key = "max_autotune"
        kind = "optimization"
        type = "bool"
        lite_value = false
        region = [false, true]
        '''))
    registry = Registry.from_files([path])
    forced = registry.get_config("inplace_buffers")
    assert forced.region_allows(False) == (True, "")
    allowed, why = forced.region_allows(True)
    assert not allowed and why.startswith("the registry forces inplace_buffers = False in regions too")
    simdlen = registry.get_config("cpp.simdlen")
    assert simdlen.region_allows(16) == (True, "") and simdlen.region_allows(None) == (True, "")
    allowed, why = simdlen.region_allows("sixteen")
    assert not allowed and why == "cpp.simdlen is int|none in torch's config, got str 'sixteen'"
    assert registry.get_config("max_autotune").region_allows(True) == (True, "")
    assert registry.derive_lite_config() == {"inplace_buffers": False, "max_autotune": False}


def test_content_hash_changes_when_bytes_change_even_with_same_size_and_mtime(tmp_path):
    import os

    path = write(tmp_path, '[[pass]]\nname = "a"\nstage = "post_grad"\nlite = "never"\n')
    before = Registry.from_files([path]).content_hash()
    stat = path.stat()
    path.write_text('[[pass]]\nname = "b"\nstage = "post_grad"\nlite = "never"\n')
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert Registry.from_files([path]).content_hash() != before


def test_a_fifo_as_registry_is_refused_not_waited_on(tmp_path):
    import os

    fifo = tmp_path / "reg.toml"
    os.mkfifo(fifo)
    with pytest.raises(RegistryError) as error:
        Registry.from_files([fifo])
    assert str(error.value).startswith(f"{fifo}: cannot read registry file: not a regular file")


PYPROJECT_ERRORS = {
    "malformed": ('[tool.lite_guard]\npaths = ["src"\n', 2, "malformed TOML"),
    "tool_not_a_table": ('tool = 1\n', 1, "[tool.lite_guard] must be a table"),
    "unknown_key": ('[tool.other]\npaths = 1\n[tool.lite_guard]\npaths = ["a"]\npath = ["b"]\n', 5,
                    "unknown key 'path' in [tool.lite_guard]"),
    "paths_not_strings": ('[tool.other]\npaths = 1\n[tool.lite_guard]\npaths = [1]\n', 4,
                          "[tool.lite_guard] paths must be a list of paths"),
}


@pytest.mark.parametrize("case", sorted(PYPROJECT_ERRORS))
def test_bad_project_config_is_one_line_with_its_line_exit_2(tmp_path, case):
    text, line, message = PYPROJECT_ERRORS[case]
    (tmp_path / "pyproject.toml").write_text(text)
    result = run_cli("check", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"pyproject.toml:{line}: " in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_configured_lint_path_that_does_not_exist_exits_2(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["srcc"]\n')
    result = run_cli("check", cwd=tmp_path)
    assert result.returncode == 2
    assert "srcc" in result.stderr
