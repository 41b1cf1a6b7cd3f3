"""The flake8 plugin and the pre-commit hooks are thin adapters over the same engine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


FIXTURES = Path(__file__).parent / "lint_fixtures"
VOCABULARY = [FIXTURES / "bases.toml"]  # the pass vocabulary (the shipped registry has the hooks)


def _write_examples(root: Path) -> list[Path]:
    """Every per-file and index rule's INVALID and VALID examples as files, each in a package of
    its own, and a pyproject naming the vocabulary."""
    from lint_rules.rules import FILE_RULES, INDEX_RULES

    files = []
    for rule in (*FILE_RULES, *INDEX_RULES):
        for kind in ("INVALID", "VALID"):
            for i, example in enumerate(getattr(rule, kind)):
                package = root / f"{rule.CODE.lower()}_{kind.lower()}_{i}"
                path = package / example.path
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(example.code + "\n")
                files.append(path)
                # A package per example, so no two examples are the same module in check's
                # whole-tree index (flake8 sees one file at a time).
                for directory in (path.parent, *path.parent.parents):
                    if directory == root:
                        break
                    (directory / "__init__.py").touch()
    registries = ", ".join(f'"{path}"' for path in VOCABULARY)
    (root / "pyproject.toml").write_text(f"[tool.lite_guard]\nregistries = [{registries}]\n")
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
    (root / "suppressed.py").write_text(
        "from torch._inductor.pattern_matcher import PatternMatcherPass\n"
        "a = PatternMatcherPass()  # noqa: LG001\n"
        "b = PatternMatcherPass()  # lite-guard: ignore[LG001]\n")
    files.append(root / "suppressed.py")
    relative = [str(f.relative_to(root)) for f in files]
    check = subprocess.run([str(BIN / "lite_guard"), "check", *relative], cwd=root,
                           capture_output=True, text=True, env=_env(tmp_path), timeout=300)
    flake8 = subprocess.run([str(BIN / "flake8"), "--select", "LG", "--isolated", *relative],
                            cwd=root, capture_output=True, text=True, timeout=300)
    assert check.returncode == 1 and flake8.returncode == 1, check.stderr + flake8.stderr
    from_check, from_flake8 = _parse(check.stdout), _parse(flake8.stdout)
    assert from_check and from_check == from_flake8
    assert "LG001" in {code for *_, code in from_check}
    assert not any(path == "suppressed.py" for path, *_ in from_check)


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


_PASS_CLASS = ("from torch._inductor.custom_graph_pass import CustomGraphPass\n\n\n"
               "class {}(CustomGraphPass):\n    def __call__(self, graph):\n        return graph\n\n"
               "    def uuid(self):\n        return 1\n")


@pytest.mark.slow
def test_pre_commit_runs_the_hook_in_a_fresh_repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "passes").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["passes"]\n'
                                         'registries = ["passes.toml"]\n')
    (repo / "passes.toml").write_text((FIXTURES / "bases.toml").read_text()
                                      + '\n[[pass]]\nname = "mine:MinePass"\nstage = "post_grad"\n'
                                      'lite = "never"\nkind = "class"\nwhy = "ours"\n')
    (repo / "passes" / "mine.py").write_text(_PASS_CLASS.format("MinePass"))
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
    (repo / "passes" / "new.py").write_text(_PASS_CLASS.format("NewPass"))
    sh("git", "add", "-A")
    dirty = sh(str(BIN / "pre-commit"), "run", "--all-files")
    assert dirty.returncode == 1
    assert "passes/new.py:4:7 LG001 graph pass 'new:NewPass'" in dirty.stdout, dirty.stdout
