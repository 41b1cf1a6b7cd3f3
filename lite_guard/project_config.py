"""The project's own settings: ``[tool.lite_guard]`` in the nearest ``pyproject.toml``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from lite_guard.registry import RegistryError

_KNOWN_KEYS = {"registries", "paths", "exclude"}


@dataclass(frozen=True)
class ProjectConfig:
    pyproject: Path | None = None
    registries: tuple[Path, ...] = ()
    paths: tuple[Path, ...] = ()
    exclude: tuple[str, ...] = field(default_factory=tuple)


def find_pyproject(start: str | Path | None = None) -> Path | None:
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_project_config(start: str | Path | None = None) -> ProjectConfig:
    """Read ``[tool.lite_guard]``; relative paths are relative to the pyproject's folder."""
    pyproject = find_pyproject(start)
    if pyproject is None:
        return ProjectConfig()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(pyproject, 0, f"malformed TOML: {exc}") from None
    section = data.get("tool", {}).get("lite_guard", {})
    if not isinstance(section, dict):
        raise RegistryError(pyproject, 0, "[tool.lite_guard] must be a table")
    unknown = sorted(set(section) - _KNOWN_KEYS)
    if unknown:
        raise RegistryError(pyproject, _line_of(pyproject, unknown[0]),
                            f"unknown key '{unknown[0]}' in [tool.lite_guard]; allowed:"
                            f" {', '.join(sorted(_KNOWN_KEYS))}")
    base = pyproject.parent

    def path_list(key: str) -> tuple[Path, ...]:
        value = section.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RegistryError(pyproject, _line_of(pyproject, key),
                                f"[tool.lite_guard] {key} must be a list of paths (strings)")
        return tuple(base / v for v in value)

    return ProjectConfig(
        pyproject=pyproject,
        registries=path_list("registries"),
        paths=path_list("paths"),
        exclude=tuple(str(p.relative_to(base)) for p in path_list("exclude")),
    )


def _line_of(path: Path, word: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip().startswith(word):
            return number
    return 0
