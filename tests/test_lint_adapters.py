"""The flake8 plugin and the pre-commit hooks are thin adapters over the same engine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lint_rules.rules import FILE_RULES

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _write_examples(root: Path) -> list[Path]:
    """Every file rule's INVALID and VALID examples as files (config ones under torch/...)."""
    files = []
    for rule in FILE_RULES:
        for kind in ("INVALID", "VALID"):
            for i, example in enumerate(getattr(rule, kind)):
                relative = Path(example.path)
                name = f"{rule.CODE.lower()}_{kind.lower()}_{i}.py"
                path = root / (relative if relative.name == "config.py" else name)
                if path.exists():  # several config examples: one tree each
                    path = root / f"{name[:-3]}" / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(example.code + "\n")
                files.append(path)
    return files


def _env(tmp_path: Path) -> dict:
    return {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")}


_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+):? (?P<code>LG\d+) ")


def _parse(output: str) -> set[tuple]:
    return {(m["path"], int(m["line"]), int(m["col"]), m["code"])
            for m in map(_LINE.match, output.splitlines()) if m}


def test_flake8_reports_the_same_findings_as_check(tmp_path):
    root = tmp_path / "src"
    files = _write_examples(root)
    (root / "suppressed.py").write_text("a = PatternMatcherPass()  # noqa: LG001\n"
                                        "b = PatternMatcherPass()  # lite-guard: ignore[LG001]\n")
    files.append(root / "suppressed.py")
    relative = [str(f.relative_to(root)) for f in files]
    check = subprocess.run([str(BIN / "lite_guard"), "check", "--no-project", *relative], cwd=root,
                           capture_output=True, text=True, env=_env(tmp_path))
    flake8 = subprocess.run([str(BIN / "flake8"), "--select", "LG", "--isolated", *relative],
                            cwd=root, capture_output=True, text=True)
    assert check.returncode == 1 and flake8.returncode == 1, check.stderr + flake8.stderr
    from_check, from_flake8 = _parse(check.stdout), _parse(flake8.stdout)
    assert from_check and from_check == from_flake8
    assert {code for *_, code in from_check} == {"LG001", "LG002", "LG004"}


def test_hooks_manifest_is_valid():
    from pre_commit.clientlib import load_manifest

    hooks = {hook["id"]: hook for hook in load_manifest(str(REPO / ".pre-commit-hooks.yaml"))}
    assert hooks["lite-guard"]["entry"] == "lite_guard check"
    assert hooks["lite-guard"]["pass_filenames"] is False
    assert set(hooks) == {"lite-guard", "lite-guard-files"}


def test_repo_pre_commit_config_is_valid():
    from pre_commit.clientlib import load_config

    (repo,) = load_config(str(REPO / ".pre-commit-config.yaml"))["repos"]
    assert repo["hooks"][0]["id"] == "lite-guard"


@pytest.mark.slow
def test_pre_commit_runs_the_hook_in_a_fresh_repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "passes").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["passes"]\n'
                                         'registries = ["passes.toml"]\n')
    (repo / "passes.toml").write_text('[[pass]]\nname = "my_patterns"\nstage = "post_grad"\n'
                                      'lite = "never"\n')
    (repo / "passes" / "mine.py").write_text("my_patterns = PatternMatcherPass()\n")
    # The hook as this repo ships it, run through the installed package (offline: no clone).
    hook = (REPO / ".pre-commit-hooks.yaml").read_text()
    first = hook.split("\n- id:")[1]
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id:" + first.replace("\n", "\n      ")
        .replace("language: python", "language: system")
        .replace("entry: lite_guard check", f"entry: {BIN / 'lite_guard'} check") + "\n")
    env = {**_env(tmp_path), "PRE_COMMIT_HOME": str(tmp_path / "pc-home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}

    def sh(*args):
        return subprocess.run(args, cwd=repo, capture_output=True, text=True, env=env)

    sh("git", "init", "-q")
    sh("git", "add", "-A")
    clean = sh(str(BIN / "pre-commit"), "run", "--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (repo / "passes" / "new.py").write_text("def reorder_mine(n) -> list[BaseSchedulerNode]:\n"
                                            "    return n\n")
    sh("git", "add", "-A")
    dirty = sh(str(BIN / "pre-commit"), "run", "--all-files")
    assert dirty.returncode == 1
    assert "new.py:1:5 LG001 graph pass 'reorder_mine'" in dirty.stdout
