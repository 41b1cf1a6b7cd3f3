"""Rewrite one "## Title" section of BENCHMARKS.md, leaving the other sections alone.

Every section written here starts with its provenance line (bench/provenance.py reads it back
to tell whether the section is stale)::

    Measured: `<the command that measured it>` at commit `<sha>` (<when>, load average <1 min>).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from lite_guard.atomic import write_text_atomic

REPO = Path(__file__).resolve().parent.parent
# Uncommitted edits here make a measurement unrepeatable: the line says so (and it is stale).
# (bench/results/ is excluded: a script writes its results file there before its section.)
CODE_PATHS = ("lite_compiler", "lite_guard", "lint_rules", "bench", "tests", "examples",
              ":(exclude)bench/results")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=repo).stdout.strip()


def this_command() -> str:
    """The command line of this process, as someone would retype it from the repository root."""
    argv = list(sys.argv)
    try:
        argv[0] = str(Path(argv[0]).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    return shlex.join([".venv/bin/python", *argv])


def measured_line(command: str | None = None, commit: str | None = None, note: str = "",
                  repo: Path = REPO) -> str:
    """The provenance line. Defaults: this process's command line and ``repo``'s HEAD (plus a
    count of uncommitted edits to code, if any). A script that renders results measured earlier
    must pass the command and commit of that measurement instead."""
    if commit is None:
        commit = _git(repo, "rev-parse", "--short", "HEAD") or "unknown"
        dirty = _git(repo, "status", "--porcelain", "--", *CODE_PATHS).splitlines()
        if dirty:
            note = (f"{note}; " if note else "") + f"with uncommitted edits to {len(dirty)} file(s)"
    if os.environ.get("BENCH_MEASURED_NOTE"):  # set by bench/run_all.py --worktree
        note = (f"{note}; " if note else "") + os.environ["BENCH_MEASURED_NOTE"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    details = ", ".join(filter(None, [note, when, f"load average {os.getloadavg()[0]:.1f}"]))
    return f"Measured: `{command or this_command()}` at commit `{commit}` ({details})."


def replace_section(path: Path, title: str, body: str, measured: str | None = None) -> None:
    """Replace the section headed ``## {title}`` (or append it) with ``body``; atomic.

    ``body`` gets the provenance line ``measured`` (default: :func:`measured_line` of this
    process and the checkout ``path`` lives in) unless it already has a ``Measured:`` line."""
    if not any(line.startswith("Measured: `") for line in body.splitlines()):
        body = f"{measured or measured_line(repo=Path(path).resolve().parent)}\n\n{body.strip()}"
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
    dirty = _git(repo, "status", "--porcelain", "--", "lite_compiler", "lite_guard", "tests/compiler_models.py")
    return f"commit {_git(repo, 'rev-parse', '--short', 'HEAD')}" + (
        f" plus uncommitted edits to {len(dirty.splitlines())} compiler/registry file(s)" if dirty else "")
