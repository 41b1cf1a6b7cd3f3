"""``lite_guard check --fix``: fail-closed entries in the project's own registry, nowhere else."""

import json
import os

import pytest

from lite_guard.cli import main
from lite_guard.hints import WHY_PLACEHOLDER, config_hint
from lite_guard.registry import shipped_registry_files
from lint_rules.findings import Finding
from lint_rules.fix import FixError, choose_target, entries_of

PASSES = '''\
from torch._inductor import config
from torch._inductor.custom_graph_pass import CustomGraphPass
from torch._inductor.pattern_matcher import PatternMatcherPass


class FuseEverything(CustomGraphPass):
    def __call__(self, graph):
        pass

    def uuid(self):
        return "1"


my_patterns = PatternMatcherPass(pass_name="my_patterns")
'''

PYPROJECT = '''\
[project]
name = "proj"  # the user's own comment stays

[tool.lite_guard]
paths = ["proj"]
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "passes.py").write_text(PASSES)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path / ".cache"))
    return tmp_path


def check(capsys, *args):
    capsys.readouterr()
    code = main(["check", "--format", "json", "--no-cache", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def ours(findings, root):
    """Findings about this project's files (the shipped registry may have its own)."""
    return [f for f in findings if str(f["path"]).startswith(str(root))
            or not os.path.isabs(str(f["path"]))]


def test_fix_round_trip_leaves_only_the_why_placeholders(project, capsys):
    code, before, _ = check(capsys)
    lint = [f for f in ours(before["findings"], project) if f["code"] == "LG001"]
    assert code == 1 and [f["line"] for f in lint] == [6, 14]
    names = [f["name"] for f in lint]

    code, after, err = check(capsys, "--fix")
    registry = project / "lite_guard_registry.toml"
    assert f"created {registry}: 2 fail-closed entries" in err
    assert not [f for f in ours(after["findings"], project) if f["code"] == "LG001"]
    text = registry.read_text()
    lines = text.splitlines()
    name_lines = [lines.index(f'name = "{name}"') + 1 for name in names]
    assert [p for p in after["registry_problems"] if str(registry) in p] == [
        f"{registry}:{line - 1}: pass '{name}' still has the placeholder why written by --fix;"
        " decide its lite flag and replace the why with the reason"
        for name, line in zip(names, name_lines)]
    assert code == 1  # the placeholders are findings until a person fills them
    assert text.count('\nlite = "never"\n') == 2 and text.count(WHY_PLACEHOLDER) == 2
    pyproject = (project / "pyproject.toml").read_text()
    assert pyproject == PYPROJECT + 'registries = ["lite_guard_registry.toml"]\n'

    snapshot = registry.read_bytes(), (project / "pyproject.toml").read_bytes()
    check(capsys, "--fix")
    assert (registry.read_bytes(), (project / "pyproject.toml").read_bytes()) == snapshot

    registry.write_text(text.replace(WHY_PLACEHOLDER, "rewrites the graph; never in lite mode"))
    _, filled, _ = check(capsys)
    assert not [p for p in filled["registry_problems"] if str(registry) in p]


def test_fix_appends_to_the_existing_project_registry_keeping_its_style(project, capsys):
    own = project / "registry" / "mine.toml"
    own.parent.mkdir()
    original = ('# our passes, reviewed by the compiler team\n\n[[pass]]\nname = "passes:my_patterns"\n'
                'stage = "post_grad"   # aligned comment\nlite = "never"\nkind = "pattern"\n'
                'why = "pattern rewrites change numerics"\n')
    own.write_text(original)
    (project / "pyproject.toml").write_text(PYPROJECT + 'registries = ["registry/mine.toml"]\n')
    check(capsys, "--fix")
    text = own.read_text()
    assert text.startswith(original)
    assert text.count("[[pass]]") == 2 and "FuseEverything" in text
    assert not (project / "lite_guard_registry.toml").exists()


def test_fix_refuses_when_the_only_registry_is_shipped(project, capsys):
    shipped = shipped_registry_files()
    before = [p.read_bytes() for p in shipped]
    capsys.readouterr()
    code = main(["check", "--fix", "--no-cache", "--no-project", "proj"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines()[-1] == (
        "lite_guard check --fix: the only registries in use are shipped with lite_guard, which"
        " --fix never edits; create pyproject.toml with a [tool.lite_guard] table (or pass"
        " --registry PATH of your own file), then rerun --fix")
    assert [p.read_bytes() for p in shipped] == before
    assert not (project / "lite_guard_registry.toml").exists()


def test_a_registry_inside_the_shipped_folder_is_never_a_target(project):
    with pytest.raises(FixError, match="shipped with lite_guard, which --fix never edits"):
        choose_target([shipped_registry_files()[0]], [], project / "pyproject.toml")


def test_an_unclassified_gate_config_is_forced_off():
    hint = config_hint("reorder_for_speed", "inductor", "reorder")
    ((header, table),) = entries_of([Finding("c.py", 3, 1, "LG002", "m", "reorder_for_speed", hint)])
    assert header == "config" and table["lite_value"] is False
    assert list(table)[-1] == "why" and table["why"] == WHY_PLACEHOLDER
