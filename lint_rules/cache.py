"""A content-hash cache of per-file lint results, one small JSON file per entry.

Keys hash the file's bytes, its path, the tool version, the registry and the rule set, so a
stale entry is never read; writes go to a temp file and ``os.replace`` so readers never see a
half-written entry, even with several runs at once.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from lint_rules.findings import FileResult

ENV = "LITE_GUARD_CACHE_DIR"


def default_cache_dir() -> Path:
    override = os.environ.get(ENV)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("lite-guard"))


class Cache:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = (directory or default_cache_dir()) / "lint-v1"
        self._writable = True

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> FileResult | None:
        try:
            with open(self._path(key), encoding="utf-8") as handle:
                return FileResult.from_dict(json.load(handle))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or corrupt: lint again

    def put(self, key: str, result: FileResult) -> None:
        if not self._writable:
            return
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(result.to_dict(), handle, separators=(",", ":"))
            os.replace(tmp, target)
        except OSError:
            self._writable = False  # a read-only cache dir must not fail the lint
