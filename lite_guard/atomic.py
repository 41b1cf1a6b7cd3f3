"""Atomic file writes: write a temporary file beside the target, then rename over it."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:  # name the file the caller asked for, not a temporary one
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        # mkstemp makes the file 0600: keep the mode of the file replaced (a pyproject.toml the
        # team reads), else what open() would give a new file (0666 less the umask).
        os.fchmod(fd, _mode_of(path))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)  # atomic on POSIX: readers see the old or the new file
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def _mode_of(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
