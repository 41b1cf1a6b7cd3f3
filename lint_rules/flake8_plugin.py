"""flake8 adapter: ``flake8 --select LG`` runs the same engine as ``lite_guard check`` on each file.

flake8 hands over one file at a time, so each file is its own tree here: the index rules (LG001)
see only that file, and a pass whose base class lives in another file of the project is found by
``lite_guard check`` (which indexes the whole tree), not by this adapter. LG003 (stale registry
entries) needs the whole tree too and is reported by ``lite_guard check`` alone.

flake8 prints the report lines itself: ``flake8 --format=lite-guard`` (``lint_rules.flake8_format``)
escapes a file name's undecodable byte, which flake8's own formatters cannot encode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from lite_guard import __version__


class LiteGuardFlake8:
    name = "lite-guard"
    version = __version__
    _registry: Any = None
    _registry_error: str | None = None

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def _load_registry(cls):
        if cls._registry is None and cls._registry_error is None:
            from lite_guard.registry import Registry, RegistryError

            try:
                cls._registry = Registry.load()
            except RegistryError as exc:
                cls._registry_error = str(exc)
        return cls._registry

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from lint_rules.engine import UNCHECKABLE, lint_source, torch_version_of
        from lint_rules.formats import escape_text
        from lint_rules.isolation import Unreadable, read_regular

        registry = self._load_registry()
        if registry is None:
            # Escaped as a finding is: a pass name in the error may hold an ESC or a newline
            # spelling a report line of its own.
            yield (1, 0, escape_text(f"{UNCHECKABLE} lite-guard registry error: {self._registry_error}"),
                   type(self))
            return
        path = Path(self.filename)
        try:
            data = read_regular(path)  # the bytes as on disk, so coding cookies apply
        except Unreadable:
            data = "".join(self.lines).encode("utf-8")
        version = torch_version_of(path) if path.exists() else None
        for finding in lint_source(self.filename, data, registry, version).findings:
            # One line each: a pass name holding a newline must not forge another report line.
            yield (finding.line, finding.col - 1, escape_text(f"{finding.code} {finding.message}"),
                   type(self))
