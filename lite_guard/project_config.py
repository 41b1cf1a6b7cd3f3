"""The project's own settings: ``[tool.lite_guard]`` in the nearest ``pyproject.toml``."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from lite_guard.errors import RegistryError, loads_toml

_KNOWN_KEYS = {"registries", "paths", "exclude"}
_SECTION = "[tool.lite_guard]"


class ProjectConfig(NamedTuple):  # a NamedTuple: a frozen dataclass costs ~1 ms of every import
    pyproject: Path | None = None
    registries: tuple[Path, ...] = ()
    paths: tuple[Path, ...] = ()
    exclude: tuple[str, ...] = ()


def find_pyproject(start: str | Path | None = None) -> Path | None:
    try:
        here = Path(start or Path.cwd()).resolve()
    except FileNotFoundError:  # the shell's directory was deleted under it
        raise RegistryError(".", 0, "the current directory no longer exists, so its pyproject.toml"
                            " cannot be found; cd into your project and run again") from None
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
        if os.path.lexists(candidate):  # not skipped for a parent's: that is another project
            raise RegistryError(candidate, 0, "pyproject.toml is not a regular file (a directory,"
                                " FIFO, device or dangling link); make it a file or remove it")
    return None


def load_project_config(start: str | Path | None = None) -> ProjectConfig:
    """Read ``[tool.lite_guard]``; relative paths are relative to the pyproject's folder."""
    pyproject = find_pyproject(start)
    if pyproject is None:
        return ProjectConfig()
    raw = b""
    try:
        raw = _read_bounded(pyproject)
        text = raw.decode("utf-8-sig")  # a BOM (Windows editors) is fine
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        line = raw.count(b"\n", 0, exc.start + 3 * raw.startswith(b"\xef\xbb\xbf")) + 1 \
            if isinstance(exc, UnicodeDecodeError) else 0
        raise RegistryError(pyproject, line, f"cannot read pyproject.toml: {reason}") from None
    held = _READ.get(pyproject)
    if held is not None and held[0] == text:  # the same text: the same settings (every compile asks)
        return held[1]
    data = loads_toml(pyproject, text)
    lines = text.split("\n")  # as TOML counts lines (splitlines also cuts at U+2028, U+0085)
    tool = data.get("tool", {})
    section = tool.get("lite_guard", {}) if isinstance(tool, dict) else None
    if not isinstance(section, dict):
        raise RegistryError(pyproject, _line_in_section(lines, "lite_guard"),
                            f"{_SECTION} must be a table")
    unknown = sorted(set(section) - _KNOWN_KEYS)
    if unknown:
        raise RegistryError(pyproject, _line_in_section(lines, unknown[0]),
                            f"unknown key '{unknown[0]}' in {_SECTION}; allowed:"
                            f" {', '.join(sorted(_KNOWN_KEYS))}")

    def strings(key: str) -> list[str]:
        value = section.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RegistryError(pyproject, _line_in_section(lines, key),
                                f"{_SECTION} {key} must be a list of paths (strings)")
        if any("\0" in v for v in value):  # no file system has such a name (os calls raise)
            raise RegistryError(pyproject, _line_in_section(lines, key),
                                f"{_SECTION} {key} holds a path with a NUL character; remove it")
        if key != "exclude" and "" in value:  # (a name of spaces is a name, as on the command line)
            # "" joined to the project folder is the folder: `paths = [""]` (an unset template
            # variable) linted the whole project instead, `registries = [""]` was "<folder>:0:
            # not a regular file", a line naming neither the pyproject nor the entry.
            raise RegistryError(pyproject, _line_in_section(lines, key),
                                f"{_SECTION} {key} holds an empty path; remove it or name a"
                                f" {'registry TOML file' if key == 'registries' else 'file or folder'}")
        return value

    patterns = strings("exclude")
    if len(patterns) > _MAX_EXCLUDE:  # every file is matched against every pattern
        raise RegistryError(pyproject, _line_in_section(lines, "exclude"),
                            f"{_SECTION} exclude has {len(patterns)} patterns, over the limit of"
                            f" {_MAX_EXCLUDE}; exclude folders (\"build/\") or patterns"
                            " (\"tests/*.py\") rather than files one by one")
    for pattern in patterns:
        try:  # as lint_rules.engine matches it: "", "/" and "." are no pattern (a ValueError there)
            PurePosixPath("x.py").match(pattern.rstrip("/"))
        except ValueError:
            raise RegistryError(pyproject, _line_in_section(lines, "exclude"),
                                f"{_SECTION} exclude: {pattern!r} is not a path pattern; write"
                                " e.g. \"build/\" or \"tests/*.py\"") from None
    base = pyproject.parent
    config = ProjectConfig(
        pyproject=pyproject,
        registries=tuple(_registry_file(base / v, v, pyproject, lines) for v in strings("registries")),
        paths=tuple(base / v for v in strings("paths")),
        # Patterns as written: matched against the linted files' paths (lint_rules.engine).
        exclude=tuple(strings("exclude")),
    )
    _READ.clear()
    _READ[pyproject] = (text, config)
    return config


def _registry_file(path: Path, written: str, pyproject: Path, lines: list[str]) -> Path:
    """A listed registry that is a folder (``"."``, ``"registries/"``) is a mistake of this line
    of the pyproject: said there (it was "<folder>:0: not a regular file", naming no setting)."""
    if not os.path.exists(path):  # said on this line: "missing.toml:0: ..." named no setting
        dangling = " (a link that leads nowhere)" if os.path.lexists(path) else ""
        raise RegistryError(pyproject, _line_in_section(lines, "registries"),
                            f"{_SECTION} registries: {written!r} does not exist{dangling}; fix the"
                            " path (relative to this pyproject.toml's folder) or remove the entry")
    if path.is_dir():
        raise RegistryError(pyproject, _line_in_section(lines, "registries"),
                            f"{_SECTION} registries: {written!r} is a folder, not a registry file;"
                            " name each registry TOML file in it")
    return path


def check_paths_inside(config: ProjectConfig) -> None:
    """The lint's paths lie inside the pyproject's folder (symlinks followed): a pull request
    pointing them at /proc/self or a symlink out of the tree linted nothing of the project and
    passed. Only ``lite_guard check`` asks (the compiler reads the registries, not the paths)."""
    if config.pyproject is None:
        return
    base = config.pyproject.parent
    for path in config.paths:
        if not _inside(path, base):
            text = _READ.get(config.pyproject, ("", None))[0]
            written = str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
            raise RegistryError(config.pyproject, _line_in_section(text.split("\n"), "paths"),
                                f"{_SECTION} paths: {written!r} is outside the"
                                f" project folder {str(base)!r}; list paths inside it, or name that"
                                " path on the command line")


def missing_paths(config: ProjectConfig) -> list[str]:
    """One ``pyproject.toml:LINE: ...`` line per configured path that does not exist. It was
    "<project>/src: no such file or directory", naming neither the setting nor what to do."""
    if config.pyproject is None:
        return []
    base = config.pyproject.parent
    line = _line_in_section(_READ.get(config.pyproject, ("", None))[0].split("\n"), "paths")
    missing = []  # (the line once: 20,000 missing entries on their own lines were quadratic)
    for path in config.paths:
        if not os.path.lexists(path):  # (a dangling link is linted, and is an LG900 naming it)
            written = str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
            missing.append(f"{config.pyproject}:{line}: {_SECTION} paths:"
                           f" {written!r} does not exist; fix the path (relative to this"
                           " pyproject.toml's folder) or remove the entry")
    return missing


def _inside(path: Path, folder: Path) -> bool:
    """Is ``path`` (symlinks followed, as the lint walks it) inside ``folder``?"""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a symlink loop: the lint reports it on its own
        return True


_MAX_PYPROJECT_BYTES = 16 << 20
# 20,000 files against 1,000 patterns is seconds; 100,000 patterns took minutes.
_MAX_EXCLUDE = 1000


def _read_bounded(path: Path) -> bytes:
    """Bounded and never blocking: a pyproject.toml swapped for a FIFO or a link to /dev/zero
    since find_pyproject looked is refused, not waited on or read forever. (The registry reader
    does the same; it imports this module, so this one cannot import it.)"""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        data = os.read(fd, _MAX_PYPROJECT_BYTES + 1)  # a regular file: read whole at once
        if len(data) > _MAX_PYPROJECT_BYTES:
            raise OSError(0, f"over {_MAX_PYPROJECT_BYTES} bytes, not a pyproject.toml")
        return data
    finally:
        os.close(fd)


# The last pyproject.toml read: its text and settings (ProjectConfig is frozen: shared safely).
_READ: dict[Path, tuple[str, ProjectConfig]] = {}


_HEADER_NOISE = re.compile(r"""[\s"']""")


def _line_in_section(lines: list[str], key: str) -> int:
    """Line of ``key =`` inside [tool.lite_guard] (else of the section header, else 0)."""
    # As TOML reads a header: `[tool.lite_guard]  # ours`, `[ tool . "lite_guard" ]`, and the
    # array-of-tables `[[tool.lite_guard]]` (refused: on its line, not line 0) are the section.
    header = next((i for i, line in enumerate(lines)
                   if _HEADER_NOISE.sub("", line.split("#", 1)[0]).strip("[]") == _SECTION[1:-1]
                   and line.lstrip().startswith("[")), None)
    if header is None:
        return next((i + 1 for i, line in enumerate(lines)
                     if line.strip().startswith(("[tool", "tool"))), 0)
    for index in range(header + 1, len(lines)):
        stripped = lines[index].strip()
        if stripped.startswith("["):
            break
        written = stripped.split("=")[0].split(".")[0].strip()  # paths = / "paths" = / paths.x =
        if written == key or written[1:-1] == key and written[:1] == written[-1:] and written[:1] in "\"'":
            return index + 1
    return header + 1
