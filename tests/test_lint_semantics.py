"""What a registry entry means to the lint: torch ranges, config keys it names, wildcards, and
where a finding points. Each case runs ``lite_guard check`` on real files, as a user would, and
asserts the exact path, line, column, code and message (or the one-line registry error, exit 2).
Found by a red team with hostile registries and sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
REAL_PASS = '''from torch._inductor.custom_graph_pass import CustomGraphPass


class MyPass(CustomGraphPass):
    def __call__(self, graph):
        return graph

    def uuid(self):
        return "my-pass"
'''
UNREGISTERED = ("real_pass.py:4:7 LG001 graph pass 'real_pass:MyPass' (class deriving from"
                " CustomGraphPass) is not in any registry; register it: [[pass]] name ="
                ' "real_pass:MyPass", stage = "post_grad", lite = "never", kind = "class"')


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _check(root: Path, registry: str | None, *extra: str) -> subprocess.CompletedProcess:
    args = [str(BIN / "lite_guard"), "check", "--no-project", "--no-cache", *extra]
    if registry is not None:
        path = root.parent / "r.toml"
        path.write_text(registry, encoding="utf-8")
        args += ["--registry", str(path)]
    result = subprocess.run([*args, "."], cwd=root, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "LITE_GUARD_CACHE_DIR": str(root.parent / "cache")})
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _entry(name: str = "real_pass:MyPass", **fields: str) -> str:
    lines = ["[[pass]]", f'name = "{name}"', 'stage = "post_grad"', 'lite = "never"',
             'why = "reviewed"']
    lines += [f"{key} = {value}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"


# ---- (a) an entry out of range for the tree's torch registers nothing there --------------------

def test_an_entry_for_older_torch_only_leaves_the_pass_unregistered_on_this_torch(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    registry = _entry(torch='"<2.0"').replace('lite = "never"', 'lite = "always"')
    result = _check(root, registry, "--torch-version", "2.13.0")
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "real_pass.py:4:7 LG001 graph pass 'real_pass:MyPass' (class deriving from"
        " CustomGraphPass) is registered only for torch \"<2.0\""
        f" ({root.parent / 'r.toml'}:1: 'real_pass:MyPass'), not for this tree's torch 2.13.0,"
        " so it is unregistered here; widen that entry's torch range if the pass is the same in"
        " this release"]


def test_the_same_entry_registers_the_pass_for_a_torch_in_its_range(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    result = _check(root, _entry(torch='">=2.12"'), "--torch-version", "2.13.0")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


def test_an_out_of_range_wildcard_registers_nothing_and_no_hint_duplicates_it(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    result = _check(root, _entry("real_pass:*", torch='">=2.14"'), "--torch-version", "2.13.0")
    assert result.returncode == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith("real_pass.py:4:7 LG001 graph pass 'real_pass:MyPass' (class deriving"
                           " from CustomGraphPass) is registered only for torch \">=2.14\"")


# ---- (b) gated_by / when must name a classified config key -----------------------------------

def test_a_gate_no_inventory_holds_is_a_registry_error(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    result = _check(root, _entry(gated_by='["no_such_key"]'))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == (
        f"lite_guard: {root.parent / 'r.toml'}:6: pass 'real_pass:MyPass' gated_by 'no_such_key':"
        " no registry classifies the inductor config key 'no_such_key'; name a key of torch's"
        " config the registry classifies, or remove it")


def test_a_when_key_no_inventory_holds_is_a_registry_error(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    result = _check(root, _entry(when='"no_such_key"'))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"lite_guard: {root.parent / 'r.toml'}:6: pass 'real_pass:MyPass' when 'no_such_key':"
        " no registry classifies the inductor config key 'no_such_key'; name a key of torch's"
        " config the registry classifies, or remove it")


def test_a_functorch_key_written_as_inductors_says_which_module_has_it(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    result = _check(root, _entry(gated_by='["use_post_grad_passes", "joint_custom_pass"]'))
    assert result.returncode == 2
    assert "gated_by 'joint_custom_pass': no registry classifies the inductor config key" \
           " 'joint_custom_pass' (functorch's has it: write 'functorch:joint_custom_pass')" \
           in result.stderr


def test_gates_that_are_keys_nested_keys_or_dict_options_are_accepted(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    gates = ('["use_post_grad_passes", "triton.cudagraphs", "functorch:joint_custom_pass",'
             ' "post_grad_fusion_options.some_fusion"]')
    result = _check(root, _entry(gated_by=gates, when='"functorch:activation_memory_budget"'))
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


def test_the_shipped_registries_name_only_classified_gates():
    from lint_rules.command import check_config_references
    from lite_guard.registry import Registry

    check_config_references(Registry.load(include_project=False))  # raises on the first bad key


# ---- (c) a wildcard entry exists while a pass it matches does --------------------------------

def test_a_wildcard_entry_matching_a_found_pass_is_not_stale(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    result = _check(root, _entry("real_pass:*"), "--torch-version", "2.13.0")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


def test_a_wildcard_entry_matching_nothing_is_stale(tmp_path):
    root = _tree(tmp_path, {"real_pass.py": REAL_PASS})
    registry = _entry() + "\n" + _entry("other_pass:*")
    result = _check(root, registry, "--torch-version", "2.13.0")
    assert result.stdout.splitlines() == [
        f"{root.parent / 'r.toml'}:7:1 LG003 registry pass 'other_pass:*' is not found in the"
        " linted tree (torch 2.13.0); remove the entry, or limit it with torch = \"<2.13.0\" if it"
        " was removed upstream"]


# ---- (d) columns count characters, and only Python's line breaks count ----------------------

def test_a_class_named_with_a_fullwidth_letter_is_reported_at_its_name(tmp_path):
    # ast gives the NFKC name "Hidden3"; the column is that of "Ｈidden3" in the line.
    hidden = REAL_PASS.replace("class MyPass", "class \uff28idden3")
    root = _tree(tmp_path, {"real_pass.py": hidden})
    result = _check(root, None)
    assert result.stdout.splitlines() == [UNREGISTERED.replace("MyPass", "Hidden3")]


def test_columns_after_non_ascii_text_count_characters_not_bytes(tmp_path):
    source = ("from torch._inductor.pattern_matcher import PatternMatcherPass\n"
              "\u00e9t\u00e9 = 1; patterns = PatternMatcherPass()\n")
    root = _tree(tmp_path, {"real_pass.py": source})
    (line,) = _check(root, None).stdout.splitlines()  # in UTF-8 bytes it would be 23
    assert line.startswith("real_pass.py:2:21 LG001 graph pass 'real_pass:patterns' ")


def test_a_unicode_line_separator_cannot_move_a_suppression_onto_a_pass(tmp_path):
    # str.splitlines breaks at U+2028: line 1's comment used to count as line 2's.
    source = ('s = "\u2028"  # lite-guard: ignore[LG001]\n'
              "from torch._inductor.pattern_matcher import PatternMatcherPass; p = PatternMatcherPass()\n")
    root = _tree(tmp_path, {"sup.py": source})
    (line,) = _check(root, None).stdout.splitlines()
    assert line.startswith("sup.py:2:69 LG001 graph pass 'sup:p' (PatternMatcherPass without a name")


# ---- passes found by what they do: graph functions handed on, registrations via parameters ----

GRAPH_FN = '''import torch


def strip_detach(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in list(gm.graph.nodes):
        gm.graph.erase_node(node)
    return gm


def count_nodes(gm: torch.fx.GraphModule) -> int:
    return len(gm.graph.nodes)
'''


def test_a_graph_function_another_file_lists_as_a_pass_is_reported_at_its_def(tmp_path):
    root = _tree(tmp_path, {"passes.py": GRAPH_FN, "__init__.py": "",
                            "pipeline.py": "from .passes import strip_detach, count_nodes\n"
                                           "PASSES = [strip_detach]\nn = count_nodes(None)\n"})
    lines = _check(root, None).stdout.splitlines()
    assert lines == [
        "passes.py:4:5 LG001 graph pass 'tree.passes:strip_detach' (function taking an FX graph"
        " (annotated GraphModule), handed on as 'strip_detach' in tree.pipeline) is not in any"
        ' registry; register it: [[pass]] name = "tree.passes:strip_detach", stage = "post_grad",'
        ' lite = "never", kind = "function"']  # count_nodes is only called: a helper


def test_a_graph_function_registered_by_a_decorator_that_keeps_it_is_a_pass(tmp_path):
    registry = ("PASSES = []\n\n\ndef lowering_pass(fn):\n    PASSES.append(fn)\n    return fn\n\n\n"
                "def timed(fn):\n    def wrapper(*a):\n        return fn(*a)\n    return wrapper\n")
    source = ("import torch\nfrom .registry import lowering_pass, timed\n\n\n@lowering_pass\n"
              "def fold(gm: torch.fx.GraphModule):\n    return gm\n\n\n@timed\n"
              "def inspect(gm: torch.fx.GraphModule):\n    return gm\n")
    root = _tree(tmp_path, {"__init__.py": "", "registry.py": registry, "lower.py": source})
    (line,) = _check(root, None).stdout.splitlines()
    assert line.startswith("lower.py:6:5 LG001 graph pass 'tree.lower:fold' (function taking an"
                           " FX graph (annotated GraphModule), registered by its decorator"
                           " @lowering_pass) is not in any registry")


REGISTER = '''import torch
from torch._inductor.pattern_matcher import PatternMatcherPass, fwd_only, register_replacement


def _pattern(x):
    return x * 1


def _replacement(x):
    return x


def install(pass_dicts):
    register_replacement(_pattern, _replacement, [torch.empty(2)], fwd_only, pass_dicts)


def install_typed(pm_pass: PatternMatcherPass):
    register_replacement(_pattern, _replacement, [torch.empty(2)], fwd_only, pm_pass)
'''


def test_a_pattern_registered_into_a_parameter_is_reported_not_skipped(tmp_path):
    root = _tree(tmp_path, {"reg.py": REGISTER})
    assert _check(root, None).stdout.splitlines() == [
        "reg.py:14:5 LG001 graph pass 'reg:install' (a pattern registered by register_replacement"
        " into 'pass_dicts', whose pattern pass cannot be resolved statically (a parameter); if it"
        " is one of torch's, the pattern runs under that pass's name: register what flows in) is"
        ' not in any registry; register it: [[pass]] name = "reg:install", stage = "post_grad",'
        ' lite = "never", kind = "pattern"']  # install_typed: a PatternMatcherPass is handed in


def test_a_custom_knapsack_solver_is_a_pass_class(tmp_path):
    # It decides what AOTAutograd's partitioner saves vs recomputes (a [[base]] of role
    # pass_class in torch_pipelines.toml), like CustomPartitionerFn.
    source = ("from torch._inductor.custom_graph_pass import CustomKnapsackSolver\n\n\n"
              "class GreedySolver(CustomKnapsackSolver):\n"
              "    def __call__(self, memory, runtimes, max_memory):\n        return 0.0, [], []\n\n"
              "    def uuid(self):\n        return 'greedy'\n")
    root = _tree(tmp_path, {"solver.py": source})
    assert _check(root, None).stdout.splitlines() == [
        "solver.py:4:7 LG001 graph pass 'solver:GreedySolver' (class deriving from"
        " CustomKnapsackSolver) is not in any registry; register it: [[pass]] name ="
        ' "solver:GreedySolver", stage = "post_grad", lite = "never", kind = "class"']


# ---- hook-key constants defined outside the linted paths are reported, never skipped ---------

def test_a_key_constant_from_outside_the_linted_paths_is_reported_where_it_is_stored(tmp_path):
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "lib" / "__init__.py").write_text("")
    (root / "lib" / "keys.py").write_text('PASS_KEY = "post_grad_custom_post_pass"\n')
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "use.py").write_text(
        "import torch\nfrom torch._inductor import config\nfrom lib.keys import PASS_KEY\n\n\n"
        "def my_pass(graph):\n    return graph\n\n\n"
        "def install():\n    setattr(config, PASS_KEY, my_pass)\n\n\n"
        "def compile_it(fn):\n    return torch.compile(fn, options={PASS_KEY: my_pass})\n")
    args = [str(BIN / "lite_guard"), "check", "--no-project", "--no-cache"]
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")}
    alone = subprocess.run([*args, "app"], cwd=root, capture_output=True, text=True, env=env)
    tail = (" a custom-pass hook installed so is not checked: write the key as a literal or a"
            " constant, or review the store and add '# lite-guard: ignore[LG006]' to its line"
            " ('PASS_KEY' is defined in lib.keys, outside the linted paths: lint it too and the key"
            " is read)")
    assert alone.stdout.splitlines() == [
        "app/use.py:11:21 LG006 store into torch._inductor.config under a key that cannot be"
        " resolved statically ('PASS_KEY', setattr(...));" + tail,
        "app/use.py:15:39 LG006 store into torch._inductor.config under a key that cannot be"
        " resolved statically ('PASS_KEY', options={...} entry);" + tail]
    both = subprocess.run([*args, "app", "lib"], cwd=root, capture_output=True, text=True, env=env)
    assert [line.split(" (")[0] for line in both.stdout.splitlines()] == [
        "app/use.py:11:31 LG001 graph pass 'app.use:my_pass'",
        "app/use.py:15:49 LG001 graph pass 'app.use:my_pass'"]


# ---- BENCH's hostile repros (round 5) ---------------------------------------------------------

HOOK_FILE = "import torch._inductor.config as config\n\n\ndef my_pass(graph):\n    return graph\n\n\n"


def test_a_chained_assignment_into_two_hooks_is_two_findings(tmp_path):
    root = _tree(tmp_path, {"chain.py": HOOK_FILE + "config.post_grad_custom_post_pass ="
                            " config.post_grad_custom_pre_pass = my_pass\n"})
    assert [line.split(" is not")[0] for line in _check(root, None).stdout.splitlines()] == [
        "chain.py:8:72 LG001 graph pass 'chain:my_pass' (installed in post_grad_custom_post_pass)",
        "chain.py:8:72 LG001 graph pass 'chain:my_pass' (installed in post_grad_custom_pre_pass)"]


def test_object_setattr_on_the_config_module_is_a_hook_install(tmp_path):
    root = _tree(tmp_path, {"objset.py": HOOK_FILE + "object.__setattr__(config,"
                            ' "post_grad_custom_post_pass", my_pass)\n'})
    (line,) = _check(root, None).stdout.splitlines()
    assert line.startswith("objset.py:8:58 LG001 graph pass 'objset:my_pass' (installed in"
                           " post_grad_custom_post_pass) is not in any registry")


def test_a_callable_class_with_starred_bases_is_reported_not_skipped(tmp_path):
    source = ("from torch._inductor.custom_graph_pass import CustomGraphPass\n\n"
              "BASES = (CustomGraphPass,)\n\n\nclass P(*BASES):\n    def __call__(self, g):\n"
              "        return g\n\n    def uuid(self):\n        return 'p'\n")
    root = _tree(tmp_path, {"starred.py": source})
    assert _check(root, None).stdout.splitlines() == [
        "starred.py:6:7 LG001 graph pass 'starred:P' (callable class whose bases are starred"
        " ('*...'), which cannot be resolved statically; if one is a pass base it is a pass: write"
        " the bases out) is not in any registry; register it: [[pass]] name = \"starred:P\","
        ' stage = "post_grad", lite = "never", kind = "class"']
