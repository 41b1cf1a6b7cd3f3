"""The linter on torch's own Inductor tree: clean with the shipped registry, in sync with it, and
every injected pass or reorder config (one per syntactic form) is reported, nothing else.

The installed tree is linted once per session (cold, into a session cache) and a copy of it once;
each mutation then re-lints only the file it touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lint_rules.cache import Cache
from lint_rules.engine import lint_paths
from lint_rules.command import TORCH_TREES, installed_torch_trees
from lite_guard.registry import Registry


@pytest.fixture(scope="session")
def registry() -> Registry:
    return Registry.load(include_project=False)


@pytest.fixture(scope="session")
def lint_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lint-cache")


@pytest.fixture(scope="session")
def installed_report(registry, lint_cache):
    return lint_paths(installed_torch_trees(), registry, cache=Cache(lint_cache))


@pytest.fixture(scope="session")
def torch_copy(tmp_path_factory) -> Path:
    """The .py files of the installed torch's pass trees, plus version.py, under tmp/torch."""
    source = installed_torch_trees()[0].parent
    target = tmp_path_factory.mktemp("tree") / "torch"
    for sub in TORCH_TREES:
        shutil.copytree(source / sub, target / sub,
                        ignore=lambda d, names: [n for n in names if n == "__pycache__"
                                                 or (not n.endswith(".py") and "." in n)])
    shutil.copy(source / "version.py", target / "version.py")
    return target


@pytest.fixture(scope="session")
def copy_linter(registry, lint_cache, torch_copy):
    cache = Cache(lint_cache)

    def lint():
        return lint_paths([torch_copy / sub for sub in TORCH_TREES], registry, cache=cache, jobs=2)

    baseline = lint()
    assert baseline.findings == []
    return lint


def test_installed_torch_tree_is_clean_with_the_shipped_registry(installed_report):
    assert [f.text() for f in installed_report.findings] == []
    assert installed_report.files > 300


def test_check_torch_exits_0_with_zero_findings(installed_report, lint_cache, tmp_path):
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(lint_cache)}
    run = subprocess.run([sys.executable, "-m", "lite_guard", "check", "--torch", "--no-project"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert (run.returncode, run.stdout) == (0, ""), run.stderr
    assert "0 finding(s)" in run.stderr


def test_every_pass_the_rules_find_is_registered(installed_report, registry):
    unregistered = set()
    for facts in installed_report.facts.values():
        unregistered.update(n for n in facts.passes if registry.get_pass(n) is None)
        for spellings in facts.alternatives:
            if not any(registry.get_pass(n) for n in spellings):
                unregistered.add(spellings[-1])
        for key in facts.configs:
            module, _, name = key.partition(":")
            from lint_rules.inductor_names import is_gating_key

            if is_gating_key(name, module) and not (registry.get_config(name, module)
                                                    or registry.get_pass(name)):
                unregistered.add(key)
    assert sorted(unregistered) == []


def test_every_registry_entry_for_this_torch_is_found_in_the_tree(installed_report, registry):
    from lint_rules.engine import _tree_version, tree_findings

    files = [Path(p) for p in installed_report.facts]
    stale = tree_findings(registry, list(installed_report.facts.values()),
                          [p.as_posix() for p in files], _tree_version(files))
    assert [f.text() for f in stale] == []


POST_GRAD = "_inductor/fx_passes/post_grad.py"
MUTATIONS = {
    "observer-positional": (POST_GRAD, 'def _inj(gm):\n    GraphTransformObserver(gm, "inj_observer")'
                            '.apply_graph_pass(print)\n', "LG001", "inj_observer"),
    "observer-keyword": (POST_GRAD, 'def _inj(gm):\n    with GraphTransformObserver(gm, passname='
                         '"inj_kw_observer"):\n        pass\n', "LG001", "inj_kw_observer"),
    "observer-f-string": (POST_GRAD, 'def _inj(gm, i):\n    GraphTransformObserver(gm, f"inj_{i}_x")'
                          '.apply_graph_pass(print)\n', "LG001", "inj_*_x"),
    "register-fusion": ("_inductor/fx_passes/group_batch_fusion.py",
                        '@register_fusion("inj_batch", pre_grad=False)\nclass InjFusion(BatchFusion):\n'
                        "    pass\n", "LG001", "inj_batch"),
    "pattern-pass-name": (POST_GRAD, 'inj = PatternMatcherPass(pass_name="inj_named_patterns")\n',
                          "LG001", "inj_named_patterns"),
    "pattern-variable": (POST_GRAD, "inj_patterns = PatternMatcherPass()\n", "LG001",
                         "inj_patterns"),
    "pattern-in-function": (POST_GRAD, "def _inj(gm):\n    inj_local = PatternMatcherPass()\n",
                            "LG001", "post_grad._inj.inj_local"),
    "pattern-list": (POST_GRAD, "inj_list = [PatternMatcherPass(), PatternMatcherPass()]\n",
                     "LG001", "inj_list"),
    "custom-graph-pass": ("_inductor/fx_passes/joint_graph.py",
                          "class InjPass(CustomGraphPass):\n    pass\n", "LG001", "InjPass"),
    "custom-graph-module-pass": ("_inductor/compile_fx.py",
                                 "class InjModulePass(custom_graph_pass.CustomGraphModulePass):\n"
                                 "    pass\n", "LG001", "InjModulePass"),
    "hook-assignment": ("_inductor/compile_fx.py", "config.post_grad_custom_post_pass = inj_hook\n",
                        "LG001", "inj_hook"),
    "hook-patch-keyword": ("_inductor/compile_fx.py", "with config.patch(joint_custom_pre_pass="
                           "inj_patch_hook):\n    pass\n", "LG001", "inj_patch_hook"),
    "hook-patch-dict": ("_inductor/compile_fx.py", 'with config.patch({"pre_grad_custom_pass": '
                        "InjHook()}):\n    pass\n", "LG001", "InjHook"),
    "scheduler-reorder": ("_inductor/comms.py", "def reorder_inj(snodes: list[BaseSchedulerNode])"
                          " -> list[BaseSchedulerNode]:\n    return snodes\n", "LG001",
                          "reorder_inj"),
    "config-module-level": ("_inductor/config.py", "reorder_for_inj = True\n", "LG002",
                            "reorder_for_inj"),
    "config-annotated-passes": ("_inductor/config.py", "inj_fx_passes: list[str] = []\n", "LG002",
                                "inj_fx_passes"),
    "config-functorch": ("_functorch/config.py", "use_inj_passes = True\n", "LG002",
                         "use_inj_passes"),
}


def _mutate(path: Path, edit):
    original = path.read_bytes()
    text = original.decode()
    path.write_text(edit(text))
    return original


@pytest.mark.parametrize("form", list(MUTATIONS))
def test_injected_pass_or_config_is_reported_and_nothing_else(form, copy_linter, torch_copy):
    relative, snippet, code, name = MUTATIONS[form]
    path = torch_copy / relative
    original = _mutate(path, lambda text: text + "\n\n" + snippet)
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(Path(f.path).relative_to(torch_copy).as_posix(), f.code, f.name) for f in findings] \
        == [(relative, code, name)]


def test_injected_nested_class_config_is_reported(copy_linter, torch_copy):
    path = torch_copy / "_inductor/config.py"
    original = _mutate(path, lambda t: t.replace(
        "class triton:\n", "class triton:\n    reorder_inj_nested = True\n", 1))
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name) for f in findings] == [("LG002", "triton.reorder_inj_nested")]


def test_drifted_lite_mode_options_is_reported(copy_linter, torch_copy):
    path = torch_copy / "_inductor/__init__.py"
    original = _mutate(path, lambda t: t.replace('"use_dce": False,', '"use_dce": True,', 1))
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name) for f in findings] == [("LG004", "use_dce")]


def test_removed_config_makes_its_registry_entry_stale(copy_linter, torch_copy):
    path = torch_copy / "_inductor/config.py"
    original = _mutate(path, lambda t: t.replace("\nreorder_for_peak_memory = True\n", "\n", 1))
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name) for f in findings] == [("LG003", "reorder_for_peak_memory")]
    assert findings[0].path.endswith("torch_inductor.toml")
