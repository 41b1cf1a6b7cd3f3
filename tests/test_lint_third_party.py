"""Third-party pass code (vLLM, vllm-ascend, torch-spyre, torchao shapes): what the lint finds in a
tree it does not own, and one identity for lint and guard.

tests/lint_fixtures/acme_like is a package written the way those projects write passes: a base
deriving from a class outside the linted tree, pattern-pass names passed in through
``super().__init__``, a pass manager with no base, a factory returning a nested joint pass, a
namespace portion (a directory without ``__init__.py`` inside the package), and callables that are
not passes (a compile backend, an abstract ``__call__``, a scalar function object).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import torch

from lint_rules.engine import lint_paths
from lite_guard.registry import Registry, shipped_registry_files

FIXTURES = Path(__file__).parent / "lint_fixtures"
ACME = FIXTURES / "acme_like"
ACME_REGISTRY = ACME / "registry.toml"  # registers every pass of the tree
SHIPPED = shipped_registry_files()  # what `lite_guard check --no-project` runs with

# Every pass of the tree: (file, line, col, identity). Identities are what the guard checks.
ACME_FINDINGS = [
    ("cleanup.py", 1, 7, "acme.compilation.cleanup:DeadViewCleanup"),  # no base: uses gm.graph
    ("delegating.py", 4, 7, "acme.compilation.delegating:FoldViews"),  # __call__ hands g on
    ("fusions.py", 6, 7, "acme.compilation.fusions:RopeFusion"),  # inherits the graph __call__
    ("fusions.py", 8, 34, "acme.compilation.base:acme_rope_fusion"),  # name via super().__init__
    ("fusions.py", 11, 7, "acme.compilation.fusions:NormFusion"),
    ("fusions.py", 13, 44, "acme.compilation.base:acme_norm_fusion"),  # ... as a keyword
    ("joint.py", 10, 36, "acme.compilation.joint:make_joint_pass.<locals>.joint_pass"),  # factory
    ("manager.py", 4, 7, "acme.compilation.manager:AcmePassManager"),  # a manager, no base
    ("named.py", 6, 54, "acme.compilation.named:SelfNamed"),  # self.__class__.__name__
    ("named.py", 9, 46, "acme.compilation.named:remove_noop_ops"),  # not torch's remove_noop_ops
    ("direct.py", 6, 7, "acme.compilation.passes.direct:DirectFusion"),
    ("direct.py", 8, 44, "acme.compilation.base:acme_direct_fusion"),
    ("rope2.py", 5, 7, "acme.compilation.passes.rope2:Rope2Fusion"),  # names no pass vocabulary
    ("rope2.py", 7, 34, "acme.compilation.base:acme_rope2_fusion"),
    ("spyre_passes.py", 6, 7, "acme.ext.spyre_passes:SpyrePrePasses"),  # namespace portion
    # Hook keys held in constants of another module (imported, aliased, re-exported, module.X)
    ("install.py", 21, 30, "acme.hooks.install:drop_views"),
    ("install.py", 22, 39, "acme.hooks.install:fold_scales"),
    ("install.py", 23, 56, "acme.hooks.install:fuse_joint"),
    # Patterns registered into torch's own pattern passes (torchao x86 style), by handler
    ("x86.py", 10, 46, "acme.quant.x86:acme_quant_patterns"),  # the project's own pattern pass
    ("x86.py", 14, 6, "acme.quant.x86:_register_weight_prepack.<locals>.prepack_weight"),
    ("x86.py", 19, 2, "acme.quant.x86:lower_relu"),
    ("x86.py", 38, 5, "acme.quant.x86:register_doubling"),  # register_replacement, a call
]


def _acme(*registries: Path) -> list:
    report = lint_paths([ACME], Registry.from_files([*SHIPPED, *registries]), jobs=1)
    return sorted(report.findings)


def _rows(findings: list) -> list[tuple]:
    return sorted((Path(f.path).name, f.line, f.col, f.name) for f in findings)


def test_every_third_party_form_is_found_with_its_identity():
    assert _rows(_acme()) == sorted(ACME_FINDINGS)


def test_third_party_tree_is_silent_when_its_passes_are_registered():
    assert _acme(ACME_REGISTRY) == []


@pytest.mark.parametrize("name", sorted({f[3] for f in ACME_FINDINGS}))
def test_each_registration_silences_exactly_its_pass(name, tmp_path):
    entries = tomllib.loads(ACME_REGISTRY.read_text())["pass"]
    kept = tmp_path / "all_but_one.toml"
    kept.write_text("".join(
        f'[[pass]]\nname = "{e["name"]}"\nstage = "{e["stage"]}"\nlite = "never"\n\n'
        for e in entries if e["name"] != name))
    assert {f.name for f in _acme(kept)} == {name}


def _message(findings: list, name: str) -> str:
    (finding,) = [f for f in findings if f.name == name]
    return finding.message


def test_a_class_called_with_a_graph_whose_base_is_outside_the_tree_says_so():
    message = _message(_acme(), "acme.compilation.fusions:RopeFusion")
    assert message == (
        "graph pass 'acme.compilation.fusions:RopeFusion' (class whose __call__ takes an FX graph"
        " (annotated Graph, inherited from AcmeFusionBase); its base"
        " 'vllm.compilation.passes.vllm_inductor_pass.VllmInductorPass' cannot be resolved) is not"
        ' in any registry; register it: [[pass]] name = "acme.compilation.fusions:RopeFusion",'
        ' stage = "post_grad", lite = "never", kind = "class"')


def test_a_base_whose_subclasses_name_its_pattern_pass_is_a_template_not_a_pass():
    # AcmeFusionBase(config, pass_name) cannot run without the name a subclass gives it; the
    # guard only ever sees the subclasses (their instances), so they are what is reported.
    assert "acme.compilation.base:AcmeFusionBase" not in {f.name for f in _acme()}


def test_a_class_with_no_base_is_a_pass_by_what_its_call_does_with_the_graph():
    message = _message(_acme(), "acme.compilation.cleanup:DeadViewCleanup")
    assert message.startswith("graph pass 'acme.compilation.cleanup:DeadViewCleanup' (class whose"
                              " __call__ takes an FX graph (uses gm.recompile)) is not in any"
                              " registry")


def test_a_pattern_pass_name_passed_to_super_init_is_reported_where_it_is_passed():
    message = _message(_acme(), "acme.compilation.base:acme_rope_fusion")
    assert message.startswith("graph pass 'acme.compilation.base:acme_rope_fusion' (PatternMatcher"
                              "Pass built by AcmeFusionBase.__init__ with the name passed here) is"
                              " not in any registry")


def test_linting_one_file_still_resolves_its_base_from_the_package_on_disk():
    # Only fusions.py is linted; its base (base.py, next to it) is read, never reported on.
    report = lint_paths([ACME / "acme" / "compilation" / "fusions.py"],
                        Registry.from_files(SHIPPED), jobs=1)
    assert _rows(report.findings) == [row for row in sorted(ACME_FINDINGS)
                                      if row[0] == "fusions.py"]


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_a_pass_directory_linted_alone_finds_subclasses_of_a_base_outside_it(prefilter,
                                                                              monkeypatch):
    # acme/compilation/passes/ alone: rope2.py mentions no pass vocabulary, only a base that
    # lives one directory up; the prefilter must still parse it (asked for by the index).
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    report = lint_paths([ACME / "acme" / "compilation" / "passes"], Registry.from_files(SHIPPED),
                        jobs=1)
    assert _rows(report.findings) == [row for row in sorted(ACME_FINDINGS)
                                      if row[0] in ("direct.py", "rope2.py")]


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_a_hook_key_held_in_another_modules_constant_is_followed(prefilter, monkeypatch):
    # acme/hooks/install.py installs with POST_PASS_KEY / PRE_KEY / keys.JOINT_PASS_KEY, whose
    # strings live in keys.py (re-exported by the package): neither file alone says "hook".
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    findings = lint_paths([ACME / "acme" / "hooks"], Registry.from_files(SHIPPED), jobs=1).findings
    assert [(f.line, f.col, f.name, f.message) for f in sorted(findings)] == [
        (21, 30, "acme.hooks.install:drop_views",
         "graph pass 'acme.hooks.install:drop_views' (installed in post_grad_custom_post_pass) is"
         " not in any registry; register it: [[pass]] name = \"acme.hooks.install:drop_views\","
         " stage = \"post_grad\", lite = \"never\", kind = \"function\""),
        (22, 39, "acme.hooks.install:fold_scales",
         "graph pass 'acme.hooks.install:fold_scales' (installed in post_grad_custom_pre_pass) is"
         " not in any registry; register it: [[pass]] name = \"acme.hooks.install:fold_scales\","
         " stage = \"post_grad\", lite = \"never\", kind = \"function\""),
        (23, 56, "acme.hooks.install:fuse_joint",
         "graph pass 'acme.hooks.install:fuse_joint' (installed in joint_custom_pass) is not in"
         " any registry; register it: [[pass]] name = \"acme.hooks.install:fuse_joint\","
         " stage = \"aot\", lite = \"never\", kind = \"function\""),
    ]
    registered = lint_paths([ACME / "acme" / "hooks"],
                            Registry.from_files([*SHIPPED, ACME_REGISTRY]), jobs=1)
    # (the registry's other entries name passes outside acme/hooks: LG003 stale, not ours here)
    assert [f for f in registered.findings if f.path.endswith(".py")] == []


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_a_pattern_registered_into_a_torch_pattern_pass_is_reported_by_its_handler(
        prefilter, monkeypatch):
    # acme/quant/x86.py: register_freezing_graph_pattern (a torch wrapper with a fixed target),
    # register_lowering_pattern(pass_dict=torch's pass_patterns[1]), register_replacement into
    # [torch's pass_patterns[0]]; the registrations into the project's own acme_patterns are not
    # findings (that pass is, at its constructor).
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    findings = lint_paths([ACME / "acme" / "quant"], Registry.from_files(SHIPPED), jobs=1).findings
    assert _rows(findings) == [row for row in sorted(ACME_FINDINGS) if row[0] == "x86.py"]
    assert _message(findings, "acme.quant.x86:lower_relu") == (
        "graph pass 'acme.quant.x86:lower_relu' (a pattern registered by register_lowering_pattern"
        " into torch's pattern pass torch._inductor.fx_passes.post_grad.pass_patterns; it runs"
        " under that torch pass's name, which is all the runtime guard sees) is not in any"
        " registry; register it: [[pass]] name = \"acme.quant.x86:lower_relu\", stage ="
        " \"post_grad\", lite = \"never\", kind = \"pattern\"")
    assert "register_freezing_graph_pattern into torch's pattern pass"  \
        " torch._inductor.fx_passes.freezing_patterns (that module's own)" in _message(
            findings, "acme.quant.x86:_register_weight_prepack.<locals>.prepack_weight")


def test_backends_abstract_calls_and_plain_callables_are_not_passes():
    report = lint_paths([ACME / "acme" / "compilation" / "not_passes.py"],
                        Registry.from_files(SHIPPED), jobs=1)
    assert report.findings == []


# ---- one identity, end to end: lint -> registry -> guard on real torch ------------------------

E2E_MODULE = '''\
"""A third-party pass module: a custom graph pass applying two pattern passes."""
from torch._inductor.custom_graph_pass import CustomGraphPass
from torch._inductor.pattern_matcher import PatternMatcherPass


class CosFusion(CustomGraphPass):
    shared = PatternMatcherPass()  # a class attribute: CosFusion.shared

    def __init__(self):
        self.named = PatternMatcherPass(pass_name="remove_noop_ops")  # a torch pass's name
        self.unnamed = PatternMatcherPass()

    def __call__(self, graph):
        self.named.apply(graph)
        self.unnamed.apply(graph)
        self.shared.apply(graph)
        for extra in EXTRA:  # held by a module-level list: named by the list, not the loop
            extra.apply(graph)

    def uuid(self):
        return "acme-e2e"


EXTRA = [PatternMatcherPass()]
PASS = CosFusion()
'''
E2E_NAMES = ["acme_e2e_passes:CosFusion", "acme_e2e_passes:CosFusion.shared",
             "acme_e2e_passes:CosFusion.unnamed", "acme_e2e_passes:EXTRA",
             "acme_e2e_passes:remove_noop_ops"]


def _region_fn(x):
    import lite_compiler

    y = x.sin()
    with lite_compiler.region(id="r"):
        y = y.cos() * 2
    return y


@pytest.fixture
def e2e_module(tmp_path, monkeypatch):
    path = tmp_path / "acme_e2e_passes.py"
    path.write_text(E2E_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "acme_e2e_passes", raising=False)
    return path


def _suggested_entries(path: Path) -> list[str]:
    """Exactly the TOML the lint suggests, one entry per finding (lite decided by a person)."""
    report = lint_paths([path], Registry.from_files(SHIPPED), jobs=1)
    assert sorted(f.name for f in report.findings) == E2E_NAMES
    return [f.hint for f in report.findings]


def _compile_with(pass_object, registries: list[Path], monkeypatch):
    from compiler_models import compile_lite

    monkeypatch.setenv("LITE_GUARD_REGISTRIES", ":".join(str(p) for p in registries))
    x = torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=pass_object):
        return compile_lite(_region_fn, fullgraph=True)(x), x


def test_the_guard_accepts_exactly_the_identities_the_lint_suggests(e2e_module, tmp_path,
                                                                     monkeypatch):
    import importlib

    import lite_compiler

    hints = _suggested_entries(e2e_module)
    registry = tmp_path / "project.toml"
    # The person's one decision: this pass may run inside regions. Names are taken verbatim.
    registry.write_text("\n".join(re.sub(r'lite = "never"', 'lite = "region"', h) for h in hints))
    module = importlib.import_module("acme_e2e_passes")
    out, x = _compile_with(module.PASS, [registry], monkeypatch)
    torch.testing.assert_close(out, _region_fn(x))  # the region ran through Inductor
    seen = {e.name: e.allowed for e in lite_compiler.last_ledger()}
    assert {name: seen.get(name) for name in E2E_NAMES} == dict.fromkeys(E2E_NAMES, True)


@pytest.mark.parametrize("missing", E2E_NAMES)
def test_the_guard_refuses_each_identity_without_its_entry(missing, e2e_module, tmp_path,
                                                           monkeypatch):
    import importlib

    import lite_compiler

    hints = [h for h in _suggested_entries(e2e_module) if f'name = "{missing}"' not in h]
    registry = tmp_path / "project.toml"
    registry.write_text("\n".join(re.sub(r'lite = "never"', 'lite = "region"', h) for h in hints))
    module = importlib.import_module("acme_e2e_passes")
    # torch's own remove_noop_ops entry is there, and lends nothing to the third-party pass
    assert Registry.from_files(SHIPPED).get_pass("remove_noop_ops") is not None
    with pytest.raises(lite_compiler.LitePassViolation) as refused:
        _compile_with(module.PASS, [registry], monkeypatch)
    assert refused.value.pass_name == missing
    assert "no registry names this pass" in refused.value.reason


def test_torchs_unnamed_pattern_passes_are_named_as_the_registry_spells_them():
    # Observed on default Inductor: every pattern pass and observer torch applies is recorded by
    # a name the shipped registry has (no "unnamed_pattern_matcher_pass"), as LG001 names them.
    import lite_compiler

    def f(x, w):
        return torch.nn.functional.relu(x @ w).sum(1)

    with lite_compiler.observe() as ledger:
        torch._dynamo.reset()
        args = (torch.randn(8, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True))
        torch.compile(f)(*args).sum().backward()
    names = {e.name for e in ledger if e.kind in ("pattern", "observer")}
    registry = Registry.from_files(SHIPPED)
    assert {"joint_graph.patterns", "post_grad.pass_patterns", "early_patterns"} <= names
    assert [n for n in sorted(names) if registry.match_pass(n) is None] == []


# ---- stores into Inductor's / functorch's config under keys that are not literals -------------

DYNAMIC = FIXTURES / "dynamic_like"  # keys split into literals, and keys computed at run time


def _hook_message(name: str, key: str, stage: str) -> str:
    return (f"graph pass '{name}' (installed in {key}) is not in any registry; register it:"
            f' [[pass]] name = "{name}", stage = "{stage}", lite = "never", kind = "function"')


def _store_message(module: str, key: str, form: str) -> str:
    return (f"store into {module} under a key that cannot be resolved statically ('{key}', {form});"
            " a custom-pass hook installed so is not checked: write the key as a literal or a"
            " constant, or review the store and add '# lite-guard: ignore[LG006]' to its line")


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_hook_keys_split_into_literals_are_folded_and_their_passes_reported(prefilter,
                                                                              monkeypatch):
    # split_keys.py never writes a hook key whole: "a" + "b", "a" "b" in a constant, an f-string
    # of another module's constant, "_".join([...]), an f-string of a loop variable.
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    findings = lint_paths([DYNAMIC], Registry.from_files(SHIPPED), jobs=1).findings
    assert [(f.line, f.col, f.code, f.name, f.message) for f in sorted(findings)
            if f.path.endswith("split_keys.py")] == [
        (11, 65, "LG001", "dyn.passes:strip_views",
         _hook_message("dyn.passes:strip_views", "post_grad_custom_post_pass", "post_grad")),
        (12, 65, "LG001", "dyn.passes:fold_bias",
         _hook_message("dyn.passes:fold_bias", "post_grad_custom_pre_pass", "post_grad")),
        (13, 64, "LG001", "dyn.passes:rewrite_joint",
         _hook_message("dyn.passes:rewrite_joint", "joint_custom_pre_pass", "joint_graph")),
        (17, 30, "LG001", "dyn.passes:drop_masks",
         _hook_message("dyn.passes:drop_masks", "post_grad_custom_post_pass", "post_grad")),
        # the loop installs it into both hooks its f-string can name: one finding each
        (23, 54, "LG001", "dyn.passes:fuse_rope",
         _hook_message("dyn.passes:fuse_rope", "joint_custom_post_pass", "joint_graph")),
        (23, 54, "LG001", "dyn.passes:fuse_rope",
         _hook_message("dyn.passes:fuse_rope", "post_grad_custom_post_pass", "post_grad")),
    ]


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_a_config_store_whose_key_cannot_be_resolved_is_reported(prefilter, monkeypatch):
    # computed.py: setattr with a key from a dict's items, patch(**options), __dict__[name]:
    # reported (LG006). A loop over a constant tuple of cache keys resolves (no hook: silent),
    # and setattr on an object that is not a config module is not a config store.
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    findings = lint_paths([DYNAMIC], Registry.from_files(SHIPPED), jobs=1).findings
    assert [(f.line, f.col, f.code, f.name, f.message) for f in sorted(findings)
            if f.path.endswith("computed.py")] == [
        (13, 34, "LG006", "torch._inductor.config:key",
         _store_message("torch._inductor.config", "key", "setattr(...)")),
        (17, 41, "LG006", "torch._inductor.config:**options",
         _store_message("torch._inductor.config", "**options", "patch(**...)")),
        (22, 31, "LG006", "torch._functorch.config:name",
         _store_message("torch._functorch.config", "name", "item assignment into its namespace")),
    ]


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_a_hook_key_constant_reached_through_two_attribute_levels_is_followed(prefilter,
                                                                              monkeypatch):
    # nested.py: options[dyn.hookkeys.names.JOINT_KEY] = fn and options[hookkeys.names.X] = fn
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    findings = lint_paths([DYNAMIC], Registry.from_files(SHIPPED), jobs=1).findings
    assert [(f.line, f.col, f.code, f.name, f.message) for f in sorted(findings)
            if f.path.endswith("nested.py")] == [
        (14, 45, "LG001", "dyn.nested:fold_casts",
         _hook_message("dyn.nested:fold_casts", "joint_custom_post_pass", "joint_graph")),
        (15, 41, "LG001", "dyn.nested:dedupe_views",
         _hook_message("dyn.nested:dedupe_views", "joint_custom_post_pass", "joint_graph")),
    ]


def test_registering_the_folded_hooks_passes_silences_them_but_not_the_unresolved_stores(
        tmp_path):
    registry = tmp_path / "dyn.toml"
    registry.write_text("".join(
        f'[[pass]]\nname = "dyn.{name}"\nstage = "post_grad"\nlite = "never"\n\n'
        for name in ("passes:strip_views", "passes:fold_bias", "passes:rewrite_joint",
                     "passes:drop_masks", "passes:fuse_rope", "nested:fold_casts",
                     "nested:dedupe_views")))
    findings = lint_paths([DYNAMIC], Registry.from_files([*SHIPPED, registry]), jobs=1).findings
    assert [(Path(f.path).name, f.line, f.code) for f in sorted(findings)] == [
        ("computed.py", 13, "LG006"), ("computed.py", 17, "LG006"), ("computed.py", 22, "LG006")]


# ---- what counts as "takes an FX graph" is registry data -------------------------------------

GRAPHY = FIXTURES / "graph_like"


def _graph_type_registry(tmp_path: Path, members: list[str]) -> Path:
    path = tmp_path / "graph_types.toml"
    path.write_text('[[base]]\nname = "torch.fx.graph:Graph"\nrole = "graph_type"\n'
                    f"members = {members!r}\n".replace("'", '"'))
    return path


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_the_graph_evidence_of_a_pass_by_effect_is_the_registrys_graph_type_members(
        prefilter, monkeypatch, tmp_path):
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    shipped = lint_paths([GRAPHY], Registry.from_files(SHIPPED), jobs=1).findings
    assert [(Path(f.path).name, f.line, f.name) for f in shipped] == [
        ("passes.py", 1, "graphy.passes:CountNodes")]  # graph.nodes: a shipped Graph member
    assert "(class whose __call__ takes an FX graph (uses graph.nodes))" in shipped[0].message
    # A registry whose Graph has only python_code: the other class is the pass now.
    own = Registry.from_files([_graph_type_registry(tmp_path, ["python_code"])])
    assert [(f.line, f.name) for f in lint_paths([GRAPHY], own, jobs=1).findings] == [
        (6, "graphy.passes:PrintCode")]


# ---- one more pattern pass in torch's own list of them -----------------------------------------

PASS_LIST = FIXTURES / "pass_list_like"  # post_grad's pass_patterns with a fourth element


@pytest.mark.parametrize("prefilter", ["on", "off"])
def test_a_fourth_pattern_pass_in_a_registered_list_is_reported_by_its_observed_name(
        prefilter, monkeypatch):
    # The observer names each element f"pass_pattern_{i}" over enumerate(pass_patterns): the
    # list display has four elements, the registry three names, so pass_pattern_3 is new.
    if prefilter == "off":
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", "1")
    registry = Registry.from_files([FIXTURES / "bases.toml", PASS_LIST / "registry.toml"])
    findings = lint_paths([PASS_LIST], registry, jobs=1).findings
    assert [(Path(f.path).name, f.line, f.col, f.name, f.message) for f in findings] == [
        ("post_grad.py", 15, 36, "pass_pattern_3",
         "graph pass 'pass_pattern_3' (GraphTransformObserver) is not in any registry; register"
         ' it: [[pass]] name = "pass_pattern_3", stage = "post_grad", lite = "never",'
         ' kind = "observer"')]
