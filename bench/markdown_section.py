"""Rewrite one "## Title" section of BENCHMARKS.md, leaving the other sections alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lite_guard.atomic import write_text_atomic


def replace_section(path: Path, title: str, body: str) -> None:
    """Replace the section headed ``## {title}`` (or append it) with ``body``; atomic."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    section = f"## {title}\n\n{body.strip()}\n"
    start = text.find(f"## {title}\n")
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end:] if end != -1 else "")
    write_text_atomic(path, text)


def code_state(repo: Path) -> str:
    """The commit measured, and whether the compiler / registry had uncommitted edits."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=repo).stdout.strip()

    dirty = git("status", "--porcelain", "--", "lite_compiler", "lite_guard", "tests/compiler_models.py")
    return f"commit {git('rev-parse', '--short', 'HEAD')}" + (
        f" plus uncommitted edits to {len(dirty.splitlines())} compiler/registry file(s)" if dirty else "")
