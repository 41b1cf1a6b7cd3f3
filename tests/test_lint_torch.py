"""The linter on torch's own Inductor tree: clean with the shipped registry, in sync with it, and
every injected pass, pipeline step, pass module or config key is reported, nothing else.

The installed tree is linted once per session (cold, into a session cache) and a copy of it once;
each mutation then re-lints only the file it touched (the index rules rerun over the cached
summaries of the rest).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from lint_rules.cache import Cache
from lint_rules.command import TORCH_TREES, installed_torch_trees
from lint_rules.engine import lint_paths
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


def copy_torch(target: Path, version_py: bool = True) -> Path:
    """The .py files of the installed torch's pass trees under target/torch, with the package
    markers that make them torch.* modules, and version.py unless told otherwise."""
    source = installed_torch_trees()[0].parent
    root = target / "torch"
    for sub in TORCH_TREES:
        shutil.copytree(source / sub, root / sub,
                        ignore=lambda d, names: [n for n in names if n == "__pycache__"
                                                 or (not n.endswith(".py") and "." in n)])
    shutil.copy(source / "__init__.py", root / "__init__.py")
    shutil.copy(source / "fx" / "__init__.py", root / "fx" / "__init__.py")
    if version_py:
        shutil.copy(source / "version.py", root / "version.py")
    return root


@pytest.fixture(scope="session")
def torch_copy(tmp_path_factory) -> Path:
    return copy_torch(tmp_path_factory.mktemp("tree"))


def lint_tree(root: Path, registry: Registry, cache: Cache, **options):
    return lint_paths([root / sub for sub in TORCH_TREES], registry, cache=cache, jobs=2, **options)


@pytest.fixture(scope="session")
def copy_linter(registry, lint_cache, torch_copy):
    cache = Cache(lint_cache)

    def lint():
        return lint_tree(torch_copy, registry, cache)

    baseline = lint()
    assert [f.text() for f in baseline.findings] == []
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


POST_GRAD = "_inductor/fx_passes/post_grad.py"
JOINT_GRAPH = "_inductor/fx_passes/joint_graph.py"
CONFIG = "_inductor/config.py"
# Forms LG001 recognises (its own fixtures test them one by one; here: inside torch's real tree).
OBSERVER = "from torch.fx.passes.graph_transform_observer import GraphTransformObserver\n"
PASS_FORMS = {
    "observer-positional": (POST_GRAD, OBSERVER + 'def _inj(gm):\n    GraphTransformObserver(gm, '
                            '"inj_observer").apply_graph_pass(print)\n', "LG001", "inj_observer"),
    "observer-keyword": (POST_GRAD, OBSERVER + 'def _inj(gm):\n    with GraphTransformObserver(gm, '
                         'passname="inj_kw_observer"):\n        pass\n', "LG001", "inj_kw_observer"),
    "pattern-pass-name": (POST_GRAD, 'inj = PatternMatcherPass(pass_name="inj_named_patterns")\n',
                          "LG001", "inj_named_patterns"),
    "custom-graph-pass": (JOINT_GRAPH, "from ..custom_graph_pass import CustomGraphPass\n\n\n"
                          "class InjPass(CustomGraphPass):\n    def __call__(self, g):\n"
                          "        pass\n\n    def uuid(self):\n        return None\n", "LG001", "InjPass"),
}
# Config keys of every shape, with names no pattern would pick (digits, no pass-like word).
CONFIG_FORMS = {
    "config-digits": (CONFIG, "reorder_for_int8_overlap = True\n", "LG002", "reorder_for_int8_overlap"),
    "config-annotated": (CONFIG, "enable_softmax_rewrite: bool = False\n", "LG002",
                         "enable_softmax_rewrite"),
    "config-plain-word": (CONFIG, "drop_dead_nodes = True\n", "LG002", "drop_dead_nodes"),
    "config-version-suffix": (CONFIG, "fuse_rope_v3 = 1\n", "LG002", "fuse_rope_v3"),
    "config-functorch": ("_functorch/config.py", "use_alt_scheduler_order = False\n", "LG002",
                         "use_alt_scheduler_order"),
}
MUTATIONS = {**PASS_FORMS, **CONFIG_FORMS}


def _mutate(path: Path, edit):
    original = path.read_bytes()
    path.write_text(edit(path.read_text()))
    return original


def _reported(findings, root: Path) -> list[tuple[str, str, str]]:
    return [(Path(f.path).relative_to(root).as_posix(), f.code, f.name) for f in findings]


@pytest.mark.parametrize("form", list(MUTATIONS))
def test_injected_pass_or_config_is_reported_and_nothing_else(form, copy_linter, torch_copy):
    relative, snippet, code, name = MUTATIONS[form]
    path = torch_copy / relative
    original = _mutate(path, lambda text: text + "\n\n" + snippet)
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert _reported(findings, torch_copy) == [(relative, code, name)]


@pytest.mark.parametrize("nested", ["triton", "aten_distributed_optimizations"])
def test_injected_nested_class_config_is_reported_at_its_line(nested, copy_linter, torch_copy):
    path = torch_copy / CONFIG
    original = _mutate(path, lambda t: t.replace(f"class {nested}:\n",
                                                 f"class {nested}:\n    enable_gelu_swap_2 = True\n", 1))
    line = path.read_text().splitlines().index("    enable_gelu_swap_2 = True") + 1
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [("LG002", f"{nested}.enable_gelu_swap_2", line)]


def test_key_added_to_a_base_config_class_is_reported_for_every_class_that_inherits_it(
        copy_linter, torch_copy):
    path = torch_copy / CONFIG
    original = _mutate(path, lambda t: t.replace("class cutlass:\n", "class cutlass:\n"
                                                 "    enable_tma_v2 = False\n", 1))
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert sorted(f.name for f in findings) == ["cuda.enable_tma_v2", "cutlass.enable_tma_v2",
                                                "xpu.enable_tma_v2"]
    assert {f.code for f in findings} == {"LG002"}


# ---- pipelines: a plain call added to a pass pipeline, a new pass module --------------------

PIPELINE_CALLS = {
    "post_grad_passes": (POST_GRAD, "    if is_inference and config.reorder_for_locality:\n",
                         "    drop_dead_nodes(gm.graph)\n"),
    "joint_graph_passes": (JOINT_GRAPH, "    lazy_init(input_device)\n",
                           "    fold_softmax_rewrite(graph)\n"),
    "Scheduler._init": ("_inductor/scheduler.py", "        self.nodes = self.fuse_nodes(self.nodes)\n",
                        "        self.nodes = reorder_for_int8_overlap(self.nodes)\n"),
    # Inductor's compile drivers are roots too: a graph rewrite slipped in before the cache
    # lookup, or before AOTAutograd, runs in every compile.
    "_compile_fx_inner": ("_inductor/compile_fx.py", "    start = time.time()\n",
                          "    fold_int8_views(gm)\n"),
    "_compile_fx_main": ("_inductor/compile_fx.py",
                         "        fw_compiler = SerializableAOTDispatchCompiler(OutputCode, fw_compiler)\n",
                         "        model_ = strip_dropout_v2(model_)\n"),
    "fx_codegen_and_compile": ("_inductor/compile_fx.py", "        scheme = _InProcessFxCompile()\n",
                               "        gm = hoist_int8_consts(gm)\n"),
}


@pytest.mark.parametrize("root", list(PIPELINE_CALLS))
def test_new_call_inside_a_pipeline_root_is_reported(root, copy_linter, torch_copy):
    relative, anchor, call = PIPELINE_CALLS[root]
    path = torch_copy / relative
    assert anchor in path.read_text(), "the anchor line moved in this torch; pick another"
    original = _mutate(path, lambda t: t.replace(anchor, call + anchor, 1))
    line = path.read_text().splitlines().index(call.rstrip("\n")) + 1
    name = call.split("(")[0].split("=")[-1].strip()
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [("LG005", name, line)]
    assert f"calls '{name}', which no registry entry names" in findings[0].message


def test_new_module_in_fx_passes_is_reported(copy_linter, torch_copy):
    path = torch_copy / "_inductor" / "fx_passes" / "rope_fusion.py"
    path.write_text("def fuse_rope(graph):\n    return graph\n")
    try:
        findings = copy_linter().findings
    finally:
        path.unlink()
    assert _reported(findings, torch_copy) == [("_inductor/fx_passes/rope_fusion.py", "LG005",
                                                "torch/_inductor/fx_passes/rope_fusion.py")]


# ---- steps a pipeline runs without a plain call ---------------------------------------------

PRE_GRAD = "_inductor/fx_passes/pre_grad.py"
PRE_DISPATCH_LIST = "        remove_noop_pass,\n"  # an element of _run_pre_dispatch_passes' pass list


def _with_entry(registry_text: str, tmp_path: Path) -> Registry:
    extra = tmp_path / "extra.toml"
    extra.write_text(registry_text)
    return Registry.load(extra_paths=[extra], include_project=False)


def _line_of(path: Path, text: str) -> int:
    return path.read_text().splitlines().index(text.rstrip("\n")) + 1


def _inject_pre_dispatch_pass(torch_copy: Path) -> tuple[Path, bytes, int]:
    path = torch_copy / PRE_GRAD
    assert PRE_DISPATCH_LIST in path.read_text(), "the anchor line moved in this torch"
    original = _mutate(path, lambda t: t.replace(
        PRE_DISPATCH_LIST, PRE_DISPATCH_LIST + "        fuse_chunk_gelu_pass,\n", 1)
        + "\n\ndef fuse_chunk_gelu_pass(graph):\n    return graph\n")
    return path, original, _line_of(path, "        fuse_chunk_gelu_pass,")


def test_function_in_a_pipeline_pass_list_is_reported(copy_linter, torch_copy):
    path, original, line = _inject_pre_dispatch_pass(torch_copy)
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [("LG005", "fuse_chunk_gelu_pass", line)]
    assert findings[0].message.startswith(
        "'torch._inductor.fx_passes.pre_grad:_run_pre_dispatch_passes' lists"
        " 'fuse_chunk_gelu_pass': 'fuse_chunk_gelu_pass' runs as a step of the pipeline and no"
        " registry entry names it; register it: [[pass]] name = \"fuse_chunk_gelu_pass\"")


def test_function_in_a_pipeline_pass_list_is_silent_when_registered(torch_copy, lint_cache,
                                                                     tmp_path):
    registry = _with_entry('[[pass]]\nname = "fuse_chunk_gelu_pass"\nstage = "pre_grad"\n'
                           'lite = "never"\nsource = "torch/_inductor/fx_passes/pre_grad.py"\n',
                           tmp_path)
    path, original, _ = _inject_pre_dispatch_pass(torch_copy)
    try:
        findings = lint_tree(torch_copy, registry, Cache(lint_cache)).findings
    finally:
        path.write_bytes(original)
    assert [f.text() for f in findings] == []


NEW_ROOT_STEPS = {  # root: (file, anchor, the step added after the anchor, what it calls, stage)
    "Scheduler.__init__": ("_inductor/scheduler.py", "            self._init(nodes)\n",
                           "            self._reorder_for_cache_reuse()\n", "_reorder_for_cache_reuse",
                           "scheduler"),
    "GraphLowering._update_scheduler": (
        "_inductor/graph.py", "            self.scheduler = Scheduler(self.operations)\n",
        "        self.scheduler.nodes = reorder_kernels_for_locality(self.scheduler.nodes)\n",
        "reorder_kernels_for_locality", "scheduler"),
    "_InProcessFxCompile.codegen_and_compile": (
        "_inductor/compile_fx.py", "            view_to_reshape(gm)\n",
        "            remove_dead_placeholders(gm)\n", "remove_dead_placeholders", "post_grad"),
    "aot_stage2_inference": (
        "_functorch/_aot_autograd/graph_compile.py", "    _apply_tensorify_python_scalars(fw_module)\n",
        "    fw_module = _fold_inference_constants(fw_module)\n", "_fold_inference_constants", "aot"),
    "PythonWrapperCodegen.run_wrapper_ir_passes": (
        "_inductor/codegen/wrapper.py", "            self.memory_plan_reuse()\n",
        "        self.compact_buffer_lines()\n", "compact_buffer_lines", "codegen"),
}


@pytest.mark.parametrize("root", list(NEW_ROOT_STEPS))
def test_step_added_to_a_scheduler_or_wrapper_pipeline_is_reported(root, copy_linter, torch_copy):
    relative, anchor, step, name, stage = NEW_ROOT_STEPS[root]
    path = torch_copy / relative
    assert anchor in path.read_text(), "the anchor line moved in this torch; pick another"
    original = _mutate(path, lambda t: t.replace(anchor, anchor + step, 1))
    line = _line_of(path, step)
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [("LG005", name, line)]
    assert findings[0].message.endswith(f"calls '{name}', which no registry entry names; a step"
                                        f" of a pass pipeline must be registered: [[pass]] name ="
                                        f' "{name}", stage = "{stage}",'
                                        f' lite = "never", kind = "helper", source ='
                                        f' "torch/{relative}"')


COMMS = "_inductor/comms.py"
REORDER_PASS = ("def sink_waits_v2(snodes: list[BaseSchedulerNode]) -> list[BaseSchedulerNode]:\n"
                "    return snodes\n\n\n")


def test_function_shaped_like_a_by_name_reorder_pass_is_reported(copy_linter, torch_copy):
    """comms.reorder_compute_and_comm_for_overlap runs globals()[name] for each name of
    reorder_for_compute_comm_overlap_passes: a function of its signature is a pass."""
    path = torch_copy / COMMS
    original = _mutate(path, lambda t: t.replace("def raise_comms(", REORDER_PASS + "def raise_comms(", 1))
    line = _line_of(path, REORDER_PASS.splitlines()[0])
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [("LG005", "sink_waits_v2", line)]
    assert findings[0].message == (
        "'sink_waits_v2' has the signature of the passes"
        " 'torch._inductor.comms:reorder_compute_and_comm_for_overlap' looks up by name in its"
        " module (globals()[name]), so a config list can run it, and no registry entry names it;"
        ' register it: [[pass]] name = "sink_waits_v2", stage = "scheduler", lite = "never",'
        ' kind = "function", source = "torch/_inductor/comms.py"')


# ---- forms of real upstream work (bench/injected_torch.py u_*) --------------------------------

POST_GRAD_ROOT_AT = "    if config.pattern_matcher:\n"  # first statement of post_grad_passes' kind
GROUP_PASS = ("\n\nclass GroupNodesPass:\n    def __init__(self, pattern):\n"
              "        self.pattern = pattern\n\n"
              "    def apply(self, graph: torch.fx.Graph) -> None:\n"
              "        for node in graph.nodes:\n            pass\n\n\n"
              "norm_group_pass = GroupNodesPass(None)\n")


def test_graph_method_of_a_module_level_object_is_a_step_named_by_the_object(copy_linter,
                                                                            torch_copy):
    """group_fusion.py's GroupFusionPass: a plain class (no pass base) whose module-level
    instance a root applies to its graph. ``apply`` is also the registered name of a pattern
    pass's method; the step is the object, so that name cannot cover it."""
    path = torch_copy / POST_GRAD
    call = "    norm_group_pass.apply(gm.graph)\n"
    text = path.read_text()
    at = text.index("def post_grad_passes(")
    at = text.index(POST_GRAD_ROOT_AT, at)
    original = _mutate(path, lambda t: t[:at] + call + t[at:] + GROUP_PASS)
    line = _line_of(path, call)
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [("LG005", "norm_group_pass", line)]
    assert findings[0].message == (
        "'torch._inductor.fx_passes.post_grad:post_grad_passes' calls 'norm_group_pass', which no"
        " registry entry names; a step of a pass pipeline must be registered: [[pass]] name ="
        ' "norm_group_pass", stage = "post_grad", lite = "never", kind = "helper", source ='
        ' "torch/_inductor/fx_passes/post_grad.py"')


PARTITIONERS = "_functorch/partitioners.py"
SOLVERS = ("\n\ndef _remat_solve_dp(joint_module):\n    return joint_module\n\n\n"
           "def _remat_solve_greedy(joint_module):\n    return joint_module\n\n\n"
           '_REMAT_SOLVERS = {"dp": _remat_solve_dp, "greedy": _remat_solve_greedy}\n')


def test_dict_entry_picked_by_a_config_value_is_a_step_for_every_entry(copy_linter, torch_copy):
    """``_REMAT_SOLVERS[config.activation_memory_budget_solver](joint_module)`` in a root: the
    key is a setting (its default is only the value nobody set), so each entry may run."""
    path = torch_copy / PARTITIONERS
    call = ("    joint_module = _REMAT_SOLVERS[config.activation_memory_budget_solver]"
            "(joint_module)\n")
    text = path.read_text()
    at = text.index("    if config.cse:\n", text.index("def min_cut_rematerialization_partition("))
    original = _mutate(path, lambda t: t[:at] + call + t[at:] + SOLVERS)
    line = _line_of(path, call)
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [
        ("LG005", "_remat_solve_dp", line), ("LG005", "_remat_solve_greedy", line)]
    for finding in findings:
        assert finding.message == (
            f"'torch._functorch.partitioners:min_cut_rematerialization_partition' calls"
            f" '{finding.name}', which no registry entry names; a step of a pass pipeline must be"
            f' registered: [[pass]] name = "{finding.name}", stage = "aot", lite = "never", kind ='
            f' "helper", source = "torch/_functorch/partitioners.py"')


def test_helper_of_another_signature_in_comms_is_not_a_pass(copy_linter, torch_copy):
    path = torch_copy / COMMS
    original = _mutate(path, lambda t: t.replace(
        "def raise_comms(", "def _count_waits(snodes: list[BaseSchedulerNode]) -> int:\n"
        "    return len(snodes)\n\n\ndef raise_comms(", 1))
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [f.text() for f in findings] == []


def test_loop_variable_reused_by_two_loops_names_each_loops_own_pattern_passes(copy_linter,
                                                                              torch_copy):
    """split_cat builds PatternMatcherPass(pass_name=pass_name) in two loops over two name lists;
    a name added to the first list is reported once, at the first loop's constructor."""
    path = torch_copy / "_inductor/fx_passes/split_cat.py"
    first = '    "normalization_pass",\n'
    assert first in path.read_text()
    original = _mutate(path, lambda t: t.replace(first, first + '    "int8_split_cat_pass",\n', 1))
    text = path.read_text().splitlines()
    loop = text.index("for pass_name in pre_grad_pass_names:")
    line = next(n for n in range(loop, len(text)) if "pass_name=pass_name" in text[n]) + 1
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name, f.line) for f in findings] == [("LG001", "int8_split_cat_pass", line)]


def test_drifted_lite_mode_options_is_reported(copy_linter, torch_copy):
    path = torch_copy / "_inductor/__init__.py"
    original = _mutate(path, lambda t: t.replace('"use_dce": False,', '"use_dce": True,', 1))
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name) for f in findings] == [("LG004", "use_dce")]


def test_removed_config_makes_its_registry_entry_stale(copy_linter, torch_copy):
    path = torch_copy / CONFIG
    original = _mutate(path, lambda t: t.replace("\nreorder_for_peak_memory = True\n", "\n", 1))
    try:
        findings = copy_linter().findings
    finally:
        path.write_bytes(original)
    assert [(f.code, f.name) for f in findings] == [("LG003", "reorder_for_peak_memory")]
    assert findings[0].path.endswith("torch_configs.toml")


# ---- versions --------------------------------------------------------------------------------

def test_checkout_layout_with_version_txt_has_no_stale_findings(registry, tmp_path):
    """A PyTorch source checkout has version.txt at its root and no torch/version.py: its version
    comes from version.txt, so no ranged entry is reported stale (issue 11: 10 false LG003)."""
    root = copy_torch(tmp_path / "pytorch", version_py=False)
    (tmp_path / "pytorch" / "version.txt").write_text("2.13.0a0\n")
    report = lint_tree(root, registry, None)
    assert [f.text() for f in report.findings] == []


def test_unknown_torch_version_never_reports_ranged_entries_stale(registry, tmp_path):
    root = copy_torch(tmp_path / "nowhere", version_py=False)
    report = lint_tree(root, registry, None)
    ranged = {e.name for e in registry.passes if e.torch} | {e.key for e in registry.configs if e.torch}
    assert [f.text() for f in report.findings if f.name in ranged] == []
    assert [f.text() for f in report.findings] == []


def test_stale_entry_suggests_a_valid_specifier_for_a_local_version(registry, tmp_path):
    """A CUDA wheel says 2.12.0+cu130: the suggested range must still be valid PEP 440."""
    root = copy_torch(tmp_path / "cuda")
    (root / "version.py").write_text("__version__ = '2.99.0+cu130'\n")
    report = lint_tree(root, registry, None)
    stale = [f for f in report.findings if f.code == "LG003"]
    assert stale, "entries ranged >=2.14 are not in a 2.13 tree labelled 2.99"
    for finding in stale:
        spec = finding.message.split('torch = "')[1].split('"')[0]
        SpecifierSet(spec)  # raises InvalidSpecifier on e.g. "<2.99.0+cu130"
        assert "+" not in spec and spec.endswith("<2.99.0")


def test_torch_version_option_is_used_when_the_tree_cannot_say(registry, tmp_path):
    root = copy_torch(tmp_path / "given", version_py=False)
    report = lint_tree(root, registry, None, torch_version="2.99.0")
    suggestion = 'torch = ">=2.14,<2.99.0" if it was removed upstream'
    assert any(f.code == "LG003" and f.message.endswith(suggestion) for f in report.findings)


@pytest.mark.parametrize("present, expected", [
    (["2.11.0", "2.12.0", "2.12.1", "2.13.0", "2.14.1"], ""),
    (["2.13.0", "2.14.1"], ">=2.13"),
    (["2.11.0", "2.12.0", "2.12.1"], "<2.13"),
    (["2.12.1", "2.13.0"], ">=2.12.1,<2.14"),
    (["2.14.1"], ">=2.14"),
])
def test_scanned_version_ranges_are_the_narrowest_valid_specifiers(present, expected):
    from lint_rules.versions import matches, range_of

    scanned = ["2.11.0+cu130", "2.12.0+cu130", "2.12.1+cu130", "2.13.0+cpu", "2.14.1+cu130"]
    present = [v for v in scanned if v.split("+")[0] in present]
    assert range_of(present, scanned) == expected
    SpecifierSet(expected)
    assert [v for v in scanned if matches(expected, v)] == present


def test_version_comes_from_version_py_then_version_txt_then_the_option(tmp_path):
    from lint_rules.versions import torch_version_of

    module = tmp_path / "checkout" / "torch" / "_inductor" / "config.py"
    module.parent.mkdir(parents=True)
    module.write_text("")
    assert torch_version_of(module) is None
    assert torch_version_of(module, fallback="2.13.0") == "2.13.0"
    (tmp_path / "checkout" / "version.txt").write_text("2.14.0a0\n")
    assert torch_version_of(module) == "2.14.0a0"
    (tmp_path / "checkout" / "torch" / "version.py").write_text("__version__ = '2.14.1+cu130'\n")
    assert torch_version_of(module) == "2.14.1+cu130"
