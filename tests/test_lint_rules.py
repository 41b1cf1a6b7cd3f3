"""Each rule's own VALID / INVALID examples, and the engine's behaviour on one file at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lint_rules.engine import UNCHECKABLE, lint_paths, lint_source, tree_findings
from lint_rules.rule import EXAMPLE_REGISTRY, Example
from lint_rules.rules import FILE_RULES, TREE_RULES
from lite_guard.registry import Registry

LITE_GUARD = [sys.executable, "-m", "lite_guard"]


def registry_from(text: str | None, tmp_path: Path) -> Registry:
    path = tmp_path / "example_registry.toml"
    path.write_text(text if text is not None else EXAMPLE_REGISTRY, encoding="utf-8")
    return Registry.from_files([path])


NO_PASSES = Registry()  # for engine behaviour, where no entry should go stale


def run_example(rule, example: Example, tmp_path: Path) -> list:
    registry = registry_from(example.registry, tmp_path)
    result = lint_source(example.path, example.code.encode(), registry, parse=True)
    findings = result.findings
    if rule in TREE_RULES:
        findings = findings + tree_findings(registry, [result.facts], [example.path], "2.13.0")
    return [f for f in findings if f.code == rule.CODE]


def _cases(kind: str):
    for rule in (*FILE_RULES, *TREE_RULES):
        for i, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.CODE}-{kind.lower()}-{i}")


@pytest.mark.parametrize("rule, example", list(_cases("VALID")))
def test_valid_example_is_not_reported(rule, example, tmp_path):
    assert run_example(rule, example, tmp_path) == []


@pytest.mark.parametrize("rule, example", list(_cases("INVALID")))
def test_invalid_example_is_reported(rule, example, tmp_path):
    assert run_example(rule, example, tmp_path), f"{rule.CODE} missed:\n{example.code}"


def test_every_rule_has_a_code_a_message_and_examples():
    codes = [rule.CODE for rule in (*FILE_RULES, *TREE_RULES)]
    assert sorted(codes) == ["LG001", "LG002", "LG003", "LG004"]
    for rule in (*FILE_RULES, *TREE_RULES):
        assert rule.MESSAGE and rule.VALID and rule.INVALID, rule.CODE


def test_finding_names_the_pass_its_place_and_a_registry_snippet(tmp_path):
    registry = registry_from(None, tmp_path)
    source = b"import x\n\ndef run(gm):\n    GraphTransformObserver(gm, 'fuse_everything').apply_graph_pass(f)\n"
    (finding,) = lint_source("fx_passes/post_grad.py", source, registry).findings
    assert (finding.line, finding.col, finding.code, finding.name) == (4, 32, "LG001", "fuse_everything")
    assert finding.text().startswith("fx_passes/post_grad.py:4:32 LG001 graph pass 'fuse_everything'")
    assert '[[pass]] name = "fuse_everything", stage = "post_grad"' in finding.message
    import tomllib

    assert tomllib.loads(finding.hint)["pass"][0]["name"] == "fuse_everything"


@pytest.mark.parametrize("comment", ["# lite-guard: ignore[LG001]", "# lite-guard: ignore[LG002, LG001]",
                                     "# noqa: LG001", "# noqa", "# lite-guard: ignore"])
def test_inline_comment_naming_the_code_suppresses(comment, tmp_path):
    registry = registry_from(None, tmp_path)
    source = f"p = PatternMatcherPass(pass_name='mine')  {comment}\n".encode()
    assert lint_source("a.py", source, registry).findings == []


def test_comment_naming_another_code_does_not_suppress(tmp_path):
    registry = registry_from(None, tmp_path)
    source = b"p = PatternMatcherPass(pass_name='mine')  # noqa: LG002\n"
    assert [f.code for f in lint_source("a.py", source, registry).findings] == ["LG001"]


def test_syntax_error_is_one_finding_and_the_run_goes_on(tmp_path):
    (tmp_path / "broken.py").write_text("x = PatternMatcherPass(\n")
    (tmp_path / "good.py").write_text("my_patterns = PatternMatcherPass()\n")
    report = lint_paths([tmp_path], NO_PASSES, jobs=1)
    assert [(Path(f.path).name, f.code) for f in report.findings] == [
        ("broken.py", UNCHECKABLE), ("good.py", "LG001")]
    assert "cannot parse" in report.findings[0].message


def test_undecodable_file_is_one_finding(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"name = '\xff\xfe'\n")
    report = lint_paths([tmp_path], NO_PASSES, jobs=1)
    assert [(f.code, "cannot decode" in f.message) for f in report.findings] == [(UNCHECKABLE, True)]


def test_coding_cookie_is_honoured(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xff'\n")
    assert lint_paths([tmp_path], NO_PASSES, jobs=1).findings == []


def test_unreadable_file_is_one_finding(tmp_path):
    # Not a permission trick (root reads any file, so chmod 0 proved nothing there): a directory
    # entry that names a .py file nobody can read, a symlink whose target does not exist.
    (tmp_path / "gone.py").symlink_to(tmp_path / "deleted.py")
    (tmp_path / "clean.py").write_text("x = 1\n")
    report = lint_paths([tmp_path], NO_PASSES, jobs=1)
    assert [(Path(f.path).name, f.line, f.code) for f in report.findings] == [
        ("gone.py", 1, UNCHECKABLE)]
    assert report.findings[0].message.startswith("cannot read file:"), report.findings[0].message


def _check(args, tmp_path, **kwargs):
    env = {"LITE_GUARD_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    return subprocess.run([*LITE_GUARD, "check", "--no-project", *map(str, args)], cwd=tmp_path,
                          capture_output=True, text=True, env=env, **kwargs)


def test_check_exit_codes_clean_findings_and_missing_path(tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n")
    (tmp_path / "dirty.py").write_text("my_patterns = PatternMatcherPass()\n")
    assert _check([tmp_path / "clean.py"], tmp_path).returncode == 0
    dirty = _check([tmp_path / "dirty.py"], tmp_path)
    assert dirty.returncode == 1 and "dirty.py:1:15 LG001 graph pass 'my_patterns'" in dirty.stdout
    missing = _check([tmp_path / "nope.py", tmp_path / "dirty.py"], tmp_path)
    assert missing.returncode == 2
    assert "nope.py: no such file or directory" in missing.stderr
    assert "LG001" in missing.stdout  # the run went on


def test_check_json_and_sarif(tmp_path):
    (tmp_path / "dirty.py").write_text("my_patterns = PatternMatcherPass()\n")
    data = json.loads(_check(["--format", "json", tmp_path / "dirty.py"], tmp_path).stdout)
    assert [(f["code"], f["name"], f["line"]) for f in data["findings"]] == [("LG001", "my_patterns", 1)]
    sarif = json.loads(_check(["--format", "sarif", tmp_path / "dirty.py"], tmp_path).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0" and result["ruleId"] == "LG001"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 15}


def test_bad_jobs_is_a_usage_error(tmp_path):
    assert _check(["--jobs", "0", tmp_path], tmp_path).returncode == 2


def test_cache_is_used_and_invalidated_by_content(tmp_path):
    from lint_rules.cache import Cache

    source = tmp_path / "src"
    source.mkdir()
    (source / "a.py").write_text("my_patterns = PatternMatcherPass()\n")
    (source / "b.py").write_text("x = 1\n")
    registry = NO_PASSES
    cache = Cache(tmp_path / "cache")
    first = lint_paths([source], registry, jobs=1, cache=cache)
    second = lint_paths([source], registry, jobs=1, cache=cache)
    assert (first.cached, second.cached) == (0, 2) and first.findings == second.findings
    (source / "a.py").write_text("x = 2\n")
    third = lint_paths([source], registry, jobs=1, cache=cache)
    assert (third.cached, third.findings) == (1, [])
    assert not list((tmp_path / "cache").rglob(".tmp-*"))  # atomic writes leave no temp files


def test_cache_key_includes_the_registry(tmp_path):
    from lint_rules.cache import Cache

    (tmp_path / "a.py").write_text("p = PatternMatcherPass(pass_name='registered_pass')\n")
    cache = Cache(tmp_path / "cache")
    registered = lint_paths([tmp_path / "a.py"], registry_from(None, tmp_path), cache=cache)
    other = tmp_path / "other"
    other.mkdir()
    unregistered = lint_paths([tmp_path / "a.py"], registry_from("", other), cache=cache)
    assert (registered.findings, [f.code for f in unregistered.findings]) == ([], ["LG001"])


def test_corrupt_cache_entry_is_ignored(tmp_path):
    from lint_rules.cache import Cache

    (tmp_path / "a.py").write_text("my_patterns = PatternMatcherPass()\n")
    cache = Cache(tmp_path / "cache")
    registry = registry_from(None, tmp_path)
    lint_paths([tmp_path / "a.py"], registry, cache=cache)
    for entry in (tmp_path / "cache").rglob("*.json"):
        entry.write_text("{not json")
    assert [f.code for f in lint_paths([tmp_path / "a.py"], registry, cache=cache).findings] == ["LG001"]


def test_linting_never_imports_the_linted_code_nor_torch(tmp_path):
    (tmp_path / "boom.py").write_text("raise SystemExit('imported!')\nmy_patterns = PatternMatcherPass()\n")
    code = ("import sys; from pathlib import Path; from lite_guard.registry import Registry;"
            "from lint_rules.engine import lint_paths;"
            f"r = lint_paths([Path({str(tmp_path)!r})], Registry.load(include_project=False), jobs=1);"
            "print([f.code for f in r.findings], 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['LG001'] False"


def test_warm_run_does_not_import_libcst(tmp_path):
    (tmp_path / "a.py").write_text("my_patterns = PatternMatcherPass()\n")
    code = ("import sys; from pathlib import Path; from lite_guard.registry import Registry;"
            "from lint_rules.engine import lint_paths; from lint_rules.cache import Cache;"
            f"r = lint_paths([Path({str(tmp_path)!r})], Registry.load(include_project=False),"
            f" jobs=1, cache=Cache(Path({str(tmp_path / 'cache')!r})));"
            "print(r.cached, 'libcst' in sys.modules)")
    run = lambda: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,  # noqa: E731
                                 check=True).stdout.strip()
    assert run() == "0 True"
    assert run() == "1 False"


def test_syntax_error_in_a_file_no_rule_needs_is_still_reported(tmp_path):
    (tmp_path / "plain.py").write_text("def f(:\n    return 1\n")  # no trigger token at all
    report = lint_paths([tmp_path], NO_PASSES, jobs=1)
    assert [(f.line, f.code) for f in report.findings] == [(1, UNCHECKABLE)]
    assert report.parsed == 0  # found without a libcst parse


def test_lint_lg001_list_of_custom_passes_is_one_finding_per_name(tmp_path):
    from lint_rules.engine import lint_source
    from lite_guard.registry import Registry

    path = tmp_path / "reg.toml"
    path.write_text('[[pass]]\nname = "registered_pass"\nstage = "post_grad"\nlite = "never"\n')
    source = ("import torch\n"
              "torch._inductor.config.post_grad_custom_post_pass = [my_pass_a, registered_pass,"
              " my_pass_b]\n"
              "with torch._inductor.config.patch(joint_custom_pre_pass=(my_pass_c,)):\n    pass\n")
    result = lint_source("user_code.py", source.encode(), Registry.from_files([path]), parse=True)
    names = sorted(f.name for f in result.findings if f.code == "LG001")
    assert names == ["my_pass_a", "my_pass_b", "my_pass_c"]  # never 'list' / '<expression>'
