"""Each rule's own VALID / INVALID examples, and the engine's behaviour on one file at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lint_rules.engine import UNCHECKABLE, lint_paths, lint_source, tree_findings
from lint_rules.rule import EXAMPLE_REGISTRY, Example
from lint_rules.rules import ALL_RULES, FILE_RULES, INDEX_RULES, TREE_RULES
from lite_guard.registry import Registry

LITE_GUARD = [sys.executable, "-m", "lite_guard"]
FIXTURES = Path(__file__).parent / "lint_fixtures"
BASES = FIXTURES / "bases.toml"  # the pass vocabulary: base classes, observers, pattern passes
VOCABULARY = FIXTURES / "vocabulary.toml"  # hook keys (and torch's fx_graph_cse), no user pass


def registry_from(text: str | None, tmp_path: Path) -> Registry:
    path = tmp_path / "example_registry.toml"
    path.write_text(text if text is not None else EXAMPLE_REGISTRY, encoding="utf-8")
    return Registry.from_files([path])


VOCAB = Registry.from_files([BASES, VOCABULARY])  # recognises passes, registers none of them


def run_example(rule, example: Example, tmp_path: Path) -> list:
    registry = registry_from(example.registry, tmp_path)
    result = lint_source(example.path, example.code.encode(), registry, parse=True)
    findings = result.findings
    if rule in TREE_RULES:
        findings = findings + tree_findings(registry, [result.facts], [example.path], "2.13.0")
    return [f for f in findings if f.code == rule.CODE]


def _cases(kind: str):
    for rule in ALL_RULES:
        for i, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.CODE}-{kind.lower()}-{i}")


@pytest.mark.parametrize("rule, example", list(_cases("VALID")))
def test_valid_example_is_not_reported(rule, example, tmp_path):
    assert run_example(rule, example, tmp_path) == []


@pytest.mark.parametrize("rule, example", list(_cases("INVALID")))
def test_invalid_example_is_reported_at_its_line_with_its_message(rule, example, tmp_path):
    assert example.expected, f"{rule.CODE}: an INVALID example must state its line and message"
    found = [(f.line, f.message) for f in run_example(rule, example, tmp_path)]
    assert found == example.expected, f"{rule.CODE} on:\n{example.code}"


def test_every_rule_declares_its_metadata_and_examples():
    codes = [rule.CODE for rule in ALL_RULES]
    assert len(codes) == len(set(codes)) and codes == sorted(codes)
    for rule in ALL_RULES:
        assert rule.NAME and rule.DESCRIPTION and rule.MESSAGE, rule.CODE
        assert rule.VALID and rule.INVALID, rule.CODE
        assert rule.metadata()["id"] == rule.CODE
    assert set(ALL_RULES) == {*FILE_RULES, *INDEX_RULES, *TREE_RULES}


def test_sarif_lists_every_discovered_rule():
    from lint_rules import formats

    sarif = json.loads(formats.to_sarif([], [], []))
    listed = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {rule.CODE for rule in ALL_RULES} <= listed


PMP = "from torch._inductor.pattern_matcher import PatternMatcherPass\n"
GTO = "from torch.fx.passes.graph_transform_observer import GraphTransformObserver\n"
DIRTY = PMP + "my_patterns = PatternMatcherPass()\n"  # an unnamed pattern pass: line 2, col 15


def test_finding_names_the_pass_its_place_and_a_registry_snippet(tmp_path):
    source = (GTO + "\ndef run(gm):\n    GraphTransformObserver(gm, 'fuse_everything').apply_graph_pass(f)\n"
              ).encode()
    (finding,) = lint_source("torch/_inductor/fx_passes/post_grad.py", source, VOCAB).findings
    assert (finding.line, finding.col, finding.code, finding.name) == (4, 32, "LG001", "fuse_everything")
    assert finding.text().startswith(
        "torch/_inductor/fx_passes/post_grad.py:4:32 LG001 graph pass 'fuse_everything'")
    assert '[[pass]] name = "fuse_everything", stage = "post_grad"' in finding.message
    import tomllib

    assert tomllib.loads(finding.hint)["pass"][0]["name"] == "fuse_everything"


def test_hint_is_exactly_what_silences_the_finding(tmp_path):
    source = (PMP + "from torch._inductor import config\n"
              "def strip_mask(g):\n    return g\npass_fn = strip_mask\n"
              "config.post_grad_custom_post_pass = pass_fn\n").encode()
    (finding,) = lint_source("myproj/passes.py", source, VOCAB).findings
    assert finding.name == "myproj.passes:strip_mask"  # the function, not the variable
    hint = tmp_path / "hint.toml"
    hint.write_text(finding.hint)
    registry = Registry.from_files([BASES, VOCABULARY, hint])
    assert lint_source("myproj/passes.py", source, registry).findings == []


@pytest.mark.parametrize("comment", ["# lite-guard: ignore[LG001]", "# lite-guard: ignore[LG002, LG001]",
                                     "# noqa: LG001", "# noqa", "# lite-guard: ignore"])
def test_inline_comment_naming_the_code_suppresses(comment, tmp_path):
    source = f"{PMP}p = PatternMatcherPass(pass_name='mine')  {comment}\n".encode()
    assert lint_source("a.py", source, VOCAB).findings == []


def test_comment_naming_another_code_does_not_suppress(tmp_path):
    source = f"{PMP}p = PatternMatcherPass(pass_name='mine')  # noqa: LG002\n".encode()
    assert [f.code for f in lint_source("a.py", source, VOCAB).findings] == ["LG001"]


def test_syntax_error_is_one_finding_and_the_run_goes_on(tmp_path):
    (tmp_path / "broken.py").write_text("x = PatternMatcherPass(\n")
    (tmp_path / "good.py").write_text(DIRTY)
    report = lint_paths([tmp_path], VOCAB, jobs=1)
    assert [(Path(f.path).name, f.code) for f in report.findings] == [
        ("broken.py", UNCHECKABLE), ("good.py", "LG001")]
    assert "cannot parse" in report.findings[0].message


def test_undecodable_file_is_one_finding(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"name = '\xff\xfe'\n")
    report = lint_paths([tmp_path], VOCAB, jobs=1)
    assert [(f.code, "cannot decode" in f.message) for f in report.findings] == [(UNCHECKABLE, True)]


def test_coding_cookie_is_honoured(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xff'\n")
    assert lint_paths([tmp_path], VOCAB, jobs=1).findings == []


def test_unreadable_file_is_one_finding(tmp_path):
    # Not a permission trick (root reads any file, so chmod 0 proved nothing there): a directory
    # entry that names a .py file nobody can read, a symlink whose target does not exist.
    (tmp_path / "gone.py").symlink_to(tmp_path / "deleted.py")
    (tmp_path / "clean.py").write_text("x = 1\n")
    report = lint_paths([tmp_path], VOCAB, jobs=1)
    assert [(Path(f.path).name, f.line, f.code) for f in report.findings] == [
        ("gone.py", 1, UNCHECKABLE)]
    assert report.findings[0].message.startswith("cannot read file:"), report.findings[0].message


def _check(args, tmp_path, **kwargs):
    env = {"LITE_GUARD_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    # The shipped registry brings the hook keys; BASES the vocabulary (whatever the shipped rows).
    return subprocess.run([*LITE_GUARD, "check", "--no-project", "--registry", str(BASES),
                           *map(str, args)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          **kwargs)


def test_check_exit_codes_clean_findings_and_missing_path(tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n")
    (tmp_path / "dirty.py").write_text(DIRTY)
    assert _check([tmp_path / "clean.py"], tmp_path).returncode == 0
    dirty = _check([tmp_path / "dirty.py"], tmp_path)
    assert dirty.returncode == 1 and "dirty.py:2:15 LG001 graph pass 'dirty:my_patterns'" in dirty.stdout
    missing = _check([tmp_path / "nope.py", tmp_path / "dirty.py"], tmp_path)
    assert missing.returncode == 2
    assert "nope.py: no such file or directory" in missing.stderr
    assert "LG001" in missing.stdout  # the run went on


def test_check_json_and_sarif(tmp_path):
    (tmp_path / "dirty.py").write_text(DIRTY)
    data = json.loads(_check(["--format", "json", tmp_path / "dirty.py"], tmp_path).stdout)
    assert [(f["code"], f["name"], f["line"]) for f in data["findings"]] == [
        ("LG001", "dirty:my_patterns", 2)]
    sarif = json.loads(_check(["--format", "sarif", tmp_path / "dirty.py"], tmp_path).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0" and result["ruleId"] == "LG001"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 15}


def test_bad_jobs_is_a_usage_error(tmp_path):
    assert _check(["--jobs", "0", tmp_path], tmp_path).returncode == 2


def test_cache_is_used_and_invalidated_by_content(tmp_path):
    from lint_rules.cache import Cache

    source = tmp_path / "src"
    source.mkdir()
    (source / "a.py").write_text(DIRTY)
    (source / "b.py").write_text("x = 1\n")
    cache = Cache(tmp_path / "cache")
    first = lint_paths([source], VOCAB, jobs=1, cache=cache)
    second = lint_paths([source], VOCAB, jobs=1, cache=cache)
    assert (first.cached, second.cached) == (0, 2) and first.findings == second.findings
    assert [f.name for f in second.findings] == ["a:my_patterns"]  # found again from the cache
    (source / "a.py").write_text("x = 2\n")
    third = lint_paths([source], VOCAB, jobs=1, cache=cache)
    assert (third.cached, third.findings) == (1, [])


def test_cross_file_finding_follows_an_edit_of_the_other_file(tmp_path):
    """The index is rebuilt every run from cached summaries: editing only the base's file turns
    an unchanged subclass into a pass (or back)."""
    from lint_rules.cache import Cache

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "base.py").write_text("class Base:\n    pass\n")
    (tmp_path / "pkg" / "leaf.py").write_text(
        "from pkg.base import Base\nclass Leaf(Base):\n    def __call__(self, g):\n        pass\n")
    cache = Cache(tmp_path / "cache")
    assert lint_paths([tmp_path / "pkg"], VOCAB, jobs=1, cache=cache).findings == []
    (tmp_path / "pkg" / "base.py").write_text(
        "from torch._inductor.custom_graph_pass import CustomGraphPass\n"
        "class Base(CustomGraphPass):\n    def uuid(self):\n        return None\n")
    report = lint_paths([tmp_path / "pkg"], VOCAB, jobs=1, cache=cache)
    # __init__.py came from the cache; leaf.py is parsed now: the first run skipped it (it held
    # no trigger word until base.py made Base one, lint_rules.prefilter)
    assert report.cached == 1
    assert [(Path(f.path).name, f.line, f.name) for f in report.findings] == [
        ("leaf.py", 2, "pkg.leaf:Leaf")]


def test_cache_key_includes_the_registry(tmp_path):
    from lint_rules.cache import Cache

    (tmp_path / "a.py").write_text(PMP + "p = PatternMatcherPass(pass_name='mine')\n")
    cache = Cache(tmp_path / "cache")
    registered = tmp_path / "registered.toml"
    registered.write_text('[[pass]]\nname = "a:mine"\nstage = "post_grad"\nlite = "never"\n')
    clean = lint_paths([tmp_path / "a.py"], Registry.from_files([BASES, VOCABULARY, registered]),
                       cache=cache)
    dirty = lint_paths([tmp_path / "a.py"], VOCAB, cache=cache)
    assert (clean.findings, [f.code for f in dirty.findings]) == ([], ["LG001"])


def test_linting_never_imports_the_linted_code_nor_torch(tmp_path):
    (tmp_path / "boom.py").write_text("raise SystemExit('imported!')\n" + DIRTY)
    code = ("import sys; from pathlib import Path; from lite_guard.registry import Registry;"
            "from lint_rules.engine import lint_paths;"
            f"r = lint_paths([Path({str(tmp_path)!r})],"
            f" Registry.from_files([{str(BASES)!r}, {str(VOCABULARY)!r}]), jobs=1);"
            "print([f.code for f in r.findings], 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['LG001'] False"


def test_warm_run_does_not_import_libcst(tmp_path):
    (tmp_path / "a.py").write_text("lite_mode_options = {}\n" + DIRTY)  # LG004 parses it cold
    code = ("import sys; from pathlib import Path; from lite_guard.registry import Registry;"
            "from lint_rules.engine import lint_paths; from lint_rules.cache import Cache;"
            f"r = lint_paths([Path({str(tmp_path)!r})],"
            f" Registry.from_files([{str(BASES)!r}, {str(VOCABULARY)!r}]), jobs=1,"
            f" cache=Cache(Path({str(tmp_path / 'cache')!r})));"
            "print(r.cached, len(r.findings), 'libcst' in sys.modules)")
    run = lambda: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,  # noqa: E731
                                 check=True).stdout.strip()
    assert run() == "0 1 True"
    assert run() == "1 1 False"


def test_syntax_error_in_a_file_no_rule_parses_is_still_reported(tmp_path):
    (tmp_path / "plain.py").write_text("def f(:\n    return 1\n")  # no trigger token at all
    # check_syntax (--check-syntax): the prefilter skips a file with no trigger token unparsed
    report = lint_paths([tmp_path], VOCAB, jobs=1, check_syntax=True)
    assert [(f.line, f.code) for f in report.findings] == [(1, UNCHECKABLE)]
    assert report.parsed == 0  # found without a libcst parse


def test_list_of_custom_passes_is_one_finding_per_pass(tmp_path):
    registered = tmp_path / "reg.toml"
    registered.write_text('[[pass]]\nname = "user_code:registered_pass"\nstage = "post_grad"\n'
                          'lite = "never"\n')
    source = ("import torch\n"
              "def my_pass_a(g): pass\ndef my_pass_b(g): pass\ndef my_pass_c(g): pass\n"
              "def registered_pass(g): pass\n"
              "torch._inductor.config.post_grad_custom_post_pass = [my_pass_a, registered_pass,"
              " my_pass_b]\n"
              "with torch._inductor.config.patch(joint_custom_pre_pass=(my_pass_c,)):\n    pass\n")
    result = lint_source("user_code.py", source.encode(),
                         Registry.from_files([BASES, VOCABULARY, registered]))
    assert sorted(f.name for f in result.findings) == [
        "user_code:my_pass_a", "user_code:my_pass_b", "user_code:my_pass_c"]


def test_two_files_of_one_module_name_are_both_checked(tmp_path):
    for project, line in (("a", "p = PatternMatcherPass(pass_name='one')"), ("b", "q = PatternMatcherPass()")):
        (tmp_path / project).mkdir()
        (tmp_path / project / "conftest.py").write_text(PMP + line + "\n")
    report = lint_paths([tmp_path], VOCAB, jobs=1)
    assert [(Path(f.path).parent.name, f.line, f.name) for f in report.findings] == [
        ("a", 2, "conftest:one"), ("b", 2, "conftest:q")]


# ---- a real-world-shaped tree (tests/lint_fixtures/vllm_like) --------------------------------

VLLM_LIKE = FIXTURES / "vllm_like"
VLLM_REGISTRY = VLLM_LIKE / "registry.toml"  # registers every pass of the tree
# Every pass of the tree, each form once: (file, line, col, identity).
VLLM_FINDINGS = [
    ("fusion.py", 13, 7, "vllmx.compilation.fusion:RMSNormQuantFusionPass"),  # base via 2 files
    # outside torch a pattern pass's name is qualified by the module that builds it
    ("fusion.py", 17, 39, "vllmx.compilation.fusion:rms_norm_quant_fusion"),  # PMP alias, self.attr
    ("fusion.py", 23, 7, "vllmx.compilation.fusion:AttnFusionPass"),  # base re-exported by __init__
    ("fusion.py", 25, 39, "vllmx.compilation.fusion:attn_fusion"),  # name from another module
    ("fusion.py", 31, 7, "vllmx.compilation.fusion:NoOpElimination"),
    ("fusion.py", 37, 26, "vllmx.compilation.fusion:make_dynamic.name"),  # unresolvable: by owner
    ("hooks.py", 57, 37, "vllmx.compilation.hooks:strip_causal_mask"),  # through a variable
    ("hooks.py", 59, 47, "vllmx.compilation.hooks:pre_pass"),  # torch._inductor.config.<key>
    ("hooks.py", 60, 38, "vllmx.compilation.hooks:joint_pass"),  # functorch's joint_custom_pass
    ("hooks.py", 61, 32, "vllmx.compilation.hooks:partition"),  # custom_partitioner_fn
    ("hooks.py", 62, 50, "sink_waits"),  # a torch pass named in a list-valued hook
    ("hooks.py", 62, 50, "vllmx.compilation.hooks:reorder_overlap"),  # list-valued hook
    ("hooks.py", 63, 55, "vllmx.compilation.hooks:reorder_overlap"),  # .append to it
    ("hooks.py", 64, 42, "vllmx.compilation.hooks:setattr_pass"),  # setattr(config, key, p)
    ("hooks.py", 66, 41, "vllmx.compilation.hooks:item_pass"),  # options["key"] = p
    ("hooks.py", 67, 42, "vllmx.compilation.hooks:patched_pass"),  # config.patch(key=p)
    ("hooks.py", 69, 49, "vllmx.compilation.hooks:dict_pass"),  # config.patch({key: p})
    ("hooks.py", 75, 39, "vllmx.compilation.hooks:local_dict_pass"),  # config.patch(local_dict)
    ("hooks.py", 77, 73, "vllmx.compilation.hooks:options_pass"),  # torch.compile(options={...})
    ("hooks.py", 81, 41, "vllmx.compilation.hooks:install.passes"),  # a parameter: by owner
    ("passes.py", 9, 7, "vllmx.compilation.passes:FxCleanup"),  # torch.fx PassBase
    ("passes.py", 23, 11, "vllmx.compilation.passes:STAGES"),  # unnamed, in a comprehension
    ("passes.py", 24, 39, "vllmx.compilation.passes:stage_a"),  # name from a comprehension
    ("passes.py", 24, 39, "vllmx.compilation.passes:stage_b"),
    ("third_party.py", 10, 36, "vllmx.compilation.third_party:fx_graph_cse"),  # not torch's
    ("unresolved.py", 12, 37, "vllmx.compilation.unresolved:VendorFusion"),  # unknown base
]


def _vllm_findings(*registries: Path) -> list[tuple]:
    report = lint_paths([VLLM_LIKE], Registry.from_files([BASES, VOCABULARY, *registries]), jobs=1)
    return sorted((Path(f.path).name, f.line, f.col, f.name) for f in report.findings)


def test_every_form_in_the_vllm_like_tree_is_found_when_unregistered():
    assert _vllm_findings() == sorted(VLLM_FINDINGS)


def test_the_vllm_like_tree_is_clean_when_its_passes_are_registered():
    assert _vllm_findings(VLLM_REGISTRY) == []


@pytest.mark.parametrize("name", sorted({f[3] for f in VLLM_FINDINGS}))
def test_each_registration_silences_exactly_its_pass(name, tmp_path):
    import tomllib

    entries = tomllib.loads(VLLM_REGISTRY.read_text())["pass"]
    kept = tmp_path / "all_but_one.toml"
    kept.write_text("".join(
        f'[[pass]]\nname = "{e["name"]}"\nstage = "{e["stage"]}"\nlite = "never"\n\n'
        for e in entries if e["name"] != name))
    assert {f[3] for f in _vllm_findings(kept)} == {name}


def test_abstract_project_bases_are_not_passes():
    names = {f[3] for f in VLLM_FINDINGS}
    assert not {"vllmx.compilation.inductor_pass:VllmInductorPass",
                "vllmx.compilation.inductor_pass:VllmPatternMatcherPass",
                "vllmx.compilation.passes:HalfDone"} & names


def test_unresolvable_base_is_reported_with_its_name():
    report = lint_paths([VLLM_LIKE / "vllmx" / "compilation" / "unresolved.py"], VOCAB, jobs=1)
    (finding,) = report.findings
    assert "its base 'some_vendor.passes.VendorBase' cannot be resolved" in finding.message


def test_a_pattern_pass_subclass_from_another_file_is_a_pattern_pass(tmp_path):
    package = tmp_path / "pk"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(PMP + "class MyPatterns(PatternMatcherPass):\n    pass\n")
    (package / "use.py").write_text("from pk.base import MyPatterns\n"
                                    "p = MyPatterns(pass_name='cross_file')\n"
                                    "q = dict(pass_name='not_a_pass')\n")
    report = lint_paths([package], VOCAB, jobs=1)
    assert [(Path(f.path).name, f.line, f.name) for f in report.findings] == [("use.py", 2, "pk.use:cross_file")]


def test_a_base_the_project_registry_declares_makes_passes_without_its_source(tmp_path):
    # vllm-ascend derives from vLLM's base, which is neither in the linted tree nor installed.
    declared = tmp_path / "project.toml"
    declared.write_text('[[base]]\nname = "vllm.compilation.vllm_inductor_pass:VllmInductorPass"\n'
                        'role = "pass_class"\n')
    source = (b"from vllm.compilation.vllm_inductor_pass import VllmInductorPass\n"
              b"class AscendFusion(VllmInductorPass):\n    def __call__(self, graph):\n"
              b"        return graph\nclass AscendBase(VllmInductorPass):\n    pass\n")
    assert lint_source("vllm_ascend/fusion.py", source, VOCAB).findings == []  # unknown base
    found = lint_source("vllm_ascend/fusion.py", source, Registry.from_files([BASES, declared]))
    assert [(f.line, f.name) for f in found.findings] == [(2, "vllm_ascend.fusion:AscendFusion")]


def test_third_party_observer_named_like_a_torch_pass_gets_a_qualified_identity():
    # Outside torch an observed pass is qualified by the module that applies it, as the runtime
    # guard names it (lite_compiler.custom_passes.applied_identity): torch's entry cannot match.
    source = (GTO + "def run(gm):\n    GraphTransformObserver(gm, 'fx_graph_cse')\n").encode()
    (finding,) = lint_source("myproj/cse.py", source, VOCAB).findings
    assert (finding.line, finding.name) == (3, "myproj.cse:fx_graph_cse")
    assert finding.message.startswith("graph pass 'myproj.cse:fx_graph_cse' (GraphTransformObserver)")


def test_third_party_pass_named_like_a_torch_pass_is_not_silenced_by_torchs_entry():
    assert VOCAB.get_pass("fx_graph_cse") is not None  # torch's own entry is there
    report = lint_paths([VLLM_LIKE / "vllmx" / "compilation" / "third_party.py"], VOCAB, jobs=1)
    assert [f.name for f in report.findings] == ["vllmx.compilation.third_party:fx_graph_cse"]


def test_lint_names_the_example_passes_as_the_guards_registry_does():
    # examples/opt_in_bucketing/lite_guard.toml is the registry the runtime guard is run with
    # (tests/test_distributed.py): the lint must ask for exactly those identities.
    import tomllib

    example = Path(__file__).parent.parent / "examples" / "opt_in_bucketing"
    registered = {e["name"] for e in tomllib.loads((example / "lite_guard.toml").read_text())["pass"]}
    found = lint_paths([example / "bucketing_pass.py"], VOCAB, jobs=1).findings
    assert {f.name for f in found} == registered
    clean = Registry.from_files([BASES, VOCABULARY, example / "lite_guard.toml"])
    assert lint_paths([example / "bucketing_pass.py"], clean, jobs=1).findings == []


# ---- inside torch: torch names (tests/lint_fixtures/torch_like) -----------------------------

TORCH_LIKE = FIXTURES / "torch_like" / "torch"


def _lg001(tree: Path, *registries: Path) -> list[tuple]:
    report = lint_paths([tree], Registry.from_files([BASES, VOCABULARY, *registries]), jobs=1)
    return [(Path(f.path).name, f.line, f.col, f.name) for f in report.findings if f.code == "LG001"]


def test_passes_inside_torch_are_named_by_their_torch_names():
    # Bases resolve inside the tree (its own custom_graph_pass.py, pattern_matcher.py), an
    # observer aliased through functools.partial is still an observer, and the base observing
    # its own instances (PatternMatcherPass.apply) is not a new pass.
    assert _lg001(TORCH_LIKE) == [
        ("post_grad.py", 8, 18, "pass_patterns"),  # unnamed, known by its variable
        ("post_grad.py", 9, 48, "my_new_fusion"),
        ("post_grad.py", 22, 18, "remove_noop_ops"),
        ("post_grad.py", 23, 18, "my_new_pass"),
        # f"pass_pattern_{i}" over enumerate(pass_patterns), a list of two: each name
        ("post_grad.py", 25, 36, "pass_pattern_0"),
        ("post_grad.py", 25, 36, "pass_pattern_1"),
        ("post_grad.py", 28, 7, "NewGraphPass"),
    ]


def test_the_torch_like_tree_is_clean_when_registered_by_torch_names():
    assert _lg001(TORCH_LIKE, FIXTURES / "torch_like" / "registry.toml") == []


def test_cycles_in_names_and_classes_end_and_are_reported():
    assert _lg001(FIXTURES / "cycles" / "pkg") == [
        ("a.py", 23, 7, "pkg.a:E"),
        ("a.py", 31, 37, "pkg.a:q"),  # p = q, q = p: reported by the variable, never a hang
        ("a.py", 32, 36, "pkg.a:C(...).x.y.z"),
        ("a.py", 36, 37, "pkg.a:f.f.g.h"),
    ]


# ---- adding a rule is adding a file ------------------------------------------------------------

THROWAWAY_RULE = '''
from lint_rules.examples import Example
from lint_rules.findings import Finding
from lint_rules.rule import IndexRule


class EveryModule(IndexRule):
    CODE = "LG999"
    NAME = "every-module"
    DESCRIPTION = "names every module (a throwaway rule)"
    MESSAGE = "module {module}"
    VALID = [Example("")]
    INVALID = [Example("x = 1", line=1, message="module example")]

    @classmethod
    def check(cls, index, registry):
        return [Finding(index.paths[m], 1, 1, cls.CODE, cls.MESSAGE.format(module=m))
                for m in index.modules], set()
'''


def test_a_rule_file_dropped_into_the_rules_package_is_discovered_and_run(tmp_path):
    import shutil

    import lint_rules

    copy = tmp_path / "site" / "lint_rules"
    shutil.copytree(Path(lint_rules.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "rules" / "lg999_every_module.py").write_text(THROWAWAY_RULE)
    (tmp_path / "code.py").write_text("x = 1\n")
    script = ("from pathlib import Path; from lite_guard.registry import Registry;"
              "import lint_rules; from lint_rules.rules import ALL_RULES;"
              "from lint_rules.engine import lint_paths;"
              f"r = lint_paths([Path({str(tmp_path / 'code.py')!r})], Registry(), jobs=1);"
              "print(lint_rules.__file__.startswith(" + repr(str(copy)) + "),"
              " [c.CODE for c in ALL_RULES][-1], [f.text().split(' ', 1)[1] for f in r.findings])")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "True LG999 ['LG999 module code']"
