"""Rewrite one "## Title" section of BENCHMARKS.md, leaving the other sections alone."""

from __future__ import annotations

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
