"""The lintrunner adapter, run by the real ``lintrunner`` on a fixture repository."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lite_guard.cli import main

LINTRUNNER = Path(sys.executable).parent / "lintrunner"

PASSES = '''\
from torch._inductor.custom_graph_pass import CustomGraphPass
from torch._inductor.pattern_matcher import PatternMatcherPass


class FuseEverything(CustomGraphPass):
    def __call__(self, graph):
        pass

    def uuid(self):
        return "1"


my_patterns = PatternMatcherPass(pass_name="my_patterns")
'''

CLEAN = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "passes.py").write_text(PASSES)
    (tmp_path / "proj" / "clean.py").write_text(CLEAN)
    (tmp_path / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["proj"]\n')
    # The README's snippet, with this interpreter.
    (tmp_path / ".lintrunner.toml").write_text(
        '[[linter]]\ncode = "LITE_GUARD"\ninclude_patterns = ["**/*.py"]\n'
        f'command = ["{sys.executable}", "-P", "-m", "lint_rules.lintrunner", "@{{{{PATHSFILE}}}}"]\n')
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "."], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path / ".cache"))
    return tmp_path


def engine_findings(capsys):
    """What ``check`` itself reports for passes.py (the adapter must carry exactly this)."""
    capsys.readouterr()
    main(["check", "--format", "json", "--no-cache", "proj"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return [f for f in found if f["path"].endswith("passes.py")]


def test_check_format_lintrunner_prints_one_lint_message_a_line(repo, capsys):
    expected = engine_findings(capsys)
    assert [(f["line"], f["code"]) for f in expected] == [(5, "LG001"), (13, "LG001")]
    code = main(["check", "--format", "lintrunner", "--no-cache", "proj"])
    lines = capsys.readouterr().out.splitlines()
    messages = [json.loads(line) for line in lines]
    ours = [m for m in messages if m["path"] and m["path"].endswith("passes.py")]
    assert code == 0  # lintrunner reads findings from the messages; non-zero = the linter failed
    assert [(m["path"], m["line"], m["char"], m["name"]) for m in ours] == [
        (f["path"], f["line"], f["col"], f["code"]) for f in expected]
    assert [m["description"].split("\n\n")[0] for m in ours] == [f["message"] for f in expected]
    for message in ours:
        assert set(message) == {"path", "line", "char", "code", "severity", "name", "original",
                                "replacement", "description", "bypassChangedLineFiltering"}
        assert message["code"] == "LITE_GUARD" and message["severity"] == "error"
        assert message["bypassChangedLineFiltering"] is False
        assert message["original"] is None and message["replacement"] is None
    assert "FuseEverything" in ours[0]["description"] and "my_patterns" in ours[1]["description"]
    assert ours[0]["description"].endswith(expected[0]["hint"])  # the TOML to add, after the message


@pytest.mark.skipif(not LINTRUNNER.exists(), reason="lintrunner is in the test extra: pip install -e .[test]")
def test_lintrunner_runs_the_adapter_on_a_fixture_repo(repo, capsys):
    expected = engine_findings(capsys)
    run = subprocess.run([str(LINTRUNNER), "--all-files", "--output", "json"], cwd=repo,
                         capture_output=True, text=True, timeout=300)
    messages = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    # (A stale-entry finding on the installed package's own registry is not this repo's.)
    messages = [m for m in messages if Path(m["path"]).resolve().is_relative_to(repo.resolve())]
    assert run.returncode == 1, run.stderr  # lintrunner's own status: lint errors were found
    found = [(Path(m["path"]).name, m["line"], m["char"], m["code"], m["name"], m["severity"])
             for m in messages]
    assert found == [("passes.py", 5, f["col"], "LITE_GUARD", "LG001", "error") for f in expected[:1]] + [
        ("passes.py", 13, f["col"], "LITE_GUARD", "LG001", "error") for f in expected[1:]]
    assert [m["description"].split("\n\n")[0] for m in messages] == [f["message"] for f in expected]


@pytest.mark.skipif(not LINTRUNNER.exists(), reason="lintrunner is in the test extra: pip install -e .[test]")
def test_lintrunner_on_clean_files_reports_nothing(repo):
    (repo / "proj" / "passes.py").write_text(CLEAN)
    run = subprocess.run([str(LINTRUNNER), "--all-files", "--output", "json"], cwd=repo,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not [line for line in run.stdout.splitlines() if line.startswith("{")]
