"""The declarative pass registry: every graph pass and pass-gating config, tagged for lite mode.

Registries are TOML files read with ``tomllib``. Loading never imports torch and never
executes anything from the files, so the linter, the CLI and the compiler can all trust it.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

STAGES = ("pre_grad", "joint_graph", "aot", "post_grad", "lowering", "scheduler", "codegen")

# never: must not run in lite mode; always: runs everywhere because correctness needs it and it
# is numerics-neutral; region: runs only inside regions annotated for Inductor.
LITE_FLAGS = ("never", "always", "region")
LITE_SAFE_FLAGS = ("always", "region")

PASS_KINDS = ("observer", "pattern", "function", "class", "custom_hook", "scheduler", "config")
CONFIG_KINDS = ("reorder", "pass_gate", "optimization", "mode")
CONFIG_MODULES = {"inductor": "torch._inductor.config", "functorch": "torch._functorch.config"}

SHIPPED_DIR = Path(__file__).parent / "registries"

_PASS_FIELDS = {"name", "stage", "lite", "gated_by", "kind", "guard", "torch", "source", "why"}
_CONFIG_FIELDS = {"key", "module", "kind", "lite_value", "torch", "why"}


class RegistryError(Exception):
    """Bad registry input. ``str()`` is one line: ``path:line: what is wrong``."""

    def __init__(self, path: Path | str, line: int, message: str):
        self.path, self.line, self.message = str(path), line, message
        super().__init__(f"{self.path}:{line}: {message}")


@dataclass(frozen=True)
class PassEntry:
    name: str
    stage: str
    lite: str
    why: str = ""
    gated_by: tuple[str, ...] = ()
    kind: str = "function"
    guard: str = ""
    torch: str = ""
    source: str = ""
    origin: str = ""
    line: int = 0

    @property
    def lite_safe(self) -> bool:
        return self.lite in LITE_SAFE_FLAGS

    def exists_in(self, torch_version: str | None) -> bool:
        return _version_matches(self.torch, torch_version)


@dataclass(frozen=True)
class ConfigEntry:
    key: str
    lite_value: Any
    module: str = "inductor"
    kind: str = "pass_gate"
    why: str = ""
    torch: str = ""
    origin: str = ""
    line: int = 0

    @property
    def qualified_key(self) -> str:
        return f"{CONFIG_MODULES[self.module]}.{self.key}"

    def exists_in(self, torch_version: str | None) -> bool:
        return _version_matches(self.torch, torch_version)


def _version_matches(spec: str, torch_version: str | None) -> bool:
    if not spec or torch_version is None:
        return True
    # "2.13.0+cpu" and "2.14.0a0" must match ">=2.13": compare the release part only.
    release = Version(torch_version).release
    return Version(".".join(map(str, release))) in SpecifierSet(spec)


@dataclass
class Registry:
    passes: tuple[PassEntry, ...] = ()
    configs: tuple[ConfigEntry, ...] = ()
    files: tuple[Path, ...] = ()
    _by_name: dict[str, PassEntry] = field(default_factory=dict, repr=False)
    _by_key: dict[tuple[str, str], ConfigEntry] = field(default_factory=dict, repr=False)

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        extra_paths: Iterable[str | Path] = (),
        project_root: str | Path | None = None,
        include_shipped: bool = True,
        include_project: bool = True,
    ) -> "Registry":
        """Shipped registries, then the project's (``[tool.lite_guard] registries``), then extras."""
        return cls.from_files(registry_paths(extra_paths, project_root, include_shipped,
                                             include_project))

    @classmethod
    def from_files(cls, paths: Iterable[str | Path]) -> "Registry":
        registry = cls()
        for path in paths:
            passes, configs = parse_registry_file(Path(path))
            registry._add(Path(path), passes, configs)
        return registry

    def _add(self, path: Path, passes: list[PassEntry], configs: list[ConfigEntry]) -> None:
        for entry in passes:
            previous = self._by_name.get(entry.name)
            if previous is not None:
                raise RegistryError(
                    path, entry.line,
                    f"duplicate pass '{entry.name}' (first defined at {previous.origin}:{previous.line});"
                    " remove one of them",
                )
            self._by_name[entry.name] = entry
        for entry in configs:
            previous = self._by_key.get((entry.module, entry.key))
            if previous is not None:
                raise RegistryError(
                    path, entry.line,
                    f"duplicate config '{entry.module}:{entry.key}' (first defined at"
                    f" {previous.origin}:{previous.line}); remove one of them",
                )
            self._by_key[(entry.module, entry.key)] = entry
        self.passes += tuple(passes)
        self.configs += tuple(configs)
        self.files += (path,)

    # ---- queries -------------------------------------------------------------------------
    def get_pass(self, name: str) -> PassEntry | None:
        return self._by_name.get(name)

    def match_pass(self, name: str) -> PassEntry | None:
        """The entry for a pass name as Inductor reports it: an exact name first, else a
        wildcard entry such as ``group_batch_fusion_*`` (names built at run time)."""
        exact = self._by_name.get(name)
        if exact is not None:
            return exact
        for pattern, entry in self._wildcards().items():
            if fnmatch.fnmatchcase(name, pattern):
                return entry
        return None

    def _wildcards(self) -> dict[str, PassEntry]:
        return {n: e for n, e in self._by_name.items() if "*" in n}

    def get_config(self, key: str, module: str = "inductor") -> ConfigEntry | None:
        return self._by_key.get((module, key))

    def filter(self, stage: str | None = None, lite: str | None = None) -> list[PassEntry]:
        return [
            p for p in self.passes
            if (stage is None or p.stage == stage) and (lite is None or p.lite == lite)
        ]

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """Close names for a "did you mean" line, passes and config keys alike."""
        candidates = list(self._by_name) + [key for _, key in self._by_key]
        return difflib.get_close_matches(name, candidates, n=limit, cutoff=0.6)

    def derive_lite_config(
        self, module: str = "inductor", torch_version: str | None = None
    ) -> dict[str, Any]:
        """The config patch lite mode applies, derived from the registry, never written by hand."""
        return {
            c.key: c.lite_value
            for c in sorted(self.configs, key=lambda c: c.key)
            if c.module == module and c.exists_in(torch_version)
        }

    def content_hash(self) -> str:
        """Stable hash of every registry file in use: part of the lint cache key."""
        digest = hashlib.sha256()
        for path in self.files:
            digest.update(str(path).encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]


def shipped_registry_files() -> list[Path]:
    return sorted(SHIPPED_DIR.glob("*.toml"))


def registry_paths(
    extra_paths: Iterable[str | Path] = (),
    project_root: str | Path | None = None,
    include_shipped: bool = True,
    include_project: bool = True,
) -> list[Path]:
    """The registry files in use, in load order."""
    paths: list[Path] = []
    if include_shipped:
        paths += shipped_registry_files()
    if include_project:
        from lite_guard.project_config import load_project_config

        paths += load_project_config(project_root).registries
    return paths + [Path(p) for p in extra_paths]


# ---- parsing and validation -------------------------------------------------------------

_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
_TABLE_HEADER = re.compile(r"^\s*\[\[\s*(pass|config)\s*\]\]")


def parse_registry_file(path: Path) -> tuple[list[PassEntry], list[ConfigEntry]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistryError(path, 0, "registry file does not exist; fix the path in"
                            " [tool.lite_guard] registries or on the command line") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError(path, 0, f"cannot read registry file: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(path, exc, text) from None

    text_lines = text.splitlines()  # split once; every line lookup below shares it
    lines = _entry_lines(text_lines)
    unknown_tables = set(data) - {"pass", "config", "meta"}
    if unknown_tables:
        table = sorted(unknown_tables)[0]
        raise RegistryError(path, _line_of(text_lines, table), f"unknown table '{table}'; expected"
                            " [[pass]], [[config]] or [meta]")
    raw_passes = _as_table_list(path, data, "pass", text_lines, lines["pass"])
    raw_configs = _as_table_list(path, data, "config", text_lines, lines["config"])
    passes = [_parse_pass(path, raw, line, text_lines) for raw, line in zip(raw_passes, lines["pass"])]
    configs = [_parse_config(path, raw, line, text_lines)
               for raw, line in zip(raw_configs, lines["config"])]
    return passes, configs


def toml_error(path: Path, exc: tomllib.TOMLDecodeError, text: str = "") -> RegistryError:
    """A TOML syntax error as one ``path:line: malformed TOML: ...`` line."""
    match = _TOML_POSITION.search(str(exc))
    # tomllib says "(at end of document)" for what is left open: that is the last line.
    line = int(match.group(1)) if match else len(text.splitlines())
    return RegistryError(path, line, f"malformed TOML: {_TOML_POSITION.sub('', str(exc)).strip()}")


def _as_table_list(path: Path, data: dict, table: str, lines: Sequence[str],
                   headers: list[int]) -> list[dict]:
    """The entries of ``[[table]]``; each must be written as its own header (that is where its
    line number comes from), not as an inline array."""
    value = data.get(table, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value) \
            or len(value) != len(headers):
        raise RegistryError(path, _line_of(lines, table), f"'{table}' must be an array of tables:"
                            f" write each entry under its own [[{table}]] header")
    return value


def _entry_lines(lines: Sequence[str]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {"pass": [], "config": []}
    for number, line in enumerate(lines, start=1):
        match = _TABLE_HEADER.match(line)
        if match:
            found[match.group(1)].append(number)
    return found


def _line_of(lines: Sequence[str], word: str) -> int:
    for number, line in enumerate(lines, start=1):
        if word in line:
            return number
    return 0


@functools.lru_cache(maxsize=None)
def _field_pattern(field_name: str) -> re.Pattern[str]:
    return re.compile(rf"^\s*{re.escape(field_name)}\s*=")


def _field_line(lines: Sequence[str], entry_line: int, field_name: str) -> int:
    """Line of ``field =`` inside the entry that starts at entry_line (or the header line).

    ``lines`` is the file split once (``str.splitlines``), shared by every lookup in the file.
    """
    pattern = _field_pattern(field_name)
    for index in range(entry_line, len(lines)):
        line = lines[index]
        if _TABLE_HEADER.match(line) or line.lstrip().startswith("["):
            break
        if pattern.match(line):
            return index + 1
    return entry_line


def _require_str(path, raw, key, line, lines, *, choices=None, required=True) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise RegistryError(path, _field_line(lines, line, key),
                            f"'{key}' must be a string, got {type(value).__name__}")
    if required and not value:
        raise RegistryError(path, line, f"entry has no '{key}'; add {key} = \"...\"")
    if choices and value and value not in choices:
        hint = difflib.get_close_matches(value, choices, n=1)
        did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise RegistryError(path, _field_line(lines, line, key), f"unknown {key} '{value}'{did_you_mean};"
                            f" expected one of: {', '.join(choices)}")
    return value


def _check_fields(path, raw, allowed, line, lines, what) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise RegistryError(path, _field_line(lines, line, unknown[0]),
                            f"unknown field '{unknown[0]}' in [[{what}]]; allowed:"
                            f" {', '.join(sorted(allowed))}")


def _check_torch_spec(path, spec, line, lines) -> None:
    if not spec:
        return
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        raise RegistryError(path, _field_line(lines, line, "torch"),
                            f"invalid torch version range '{spec}'; write e.g. \">=2.11,<2.14\"") from None


def _parse_pass(path: Path, raw: dict, line: int, lines: Sequence[str]) -> PassEntry:
    _check_fields(path, raw, _PASS_FIELDS, line, lines, "pass")
    name = _require_str(path, raw, "name", line, lines)
    stage = _require_str(path, raw, "stage", line, lines, choices=STAGES)
    lite = _require_str(path, raw, "lite", line, lines, choices=LITE_FLAGS)
    why = _require_str(path, raw, "why", line, lines, required=False)
    if lite in LITE_SAFE_FLAGS and not why.strip():
        raise RegistryError(path, line, f"pass '{name}' is lite-safe (lite = \"{lite}\") but has no"
                            " 'why'; add why = \"<one line: why it is numerics-neutral>\"")
    gated_by = raw.get("gated_by", [])
    if not isinstance(gated_by, list) or not all(isinstance(g, str) for g in gated_by):
        raise RegistryError(path, _field_line(lines, line, "gated_by"),
                            "'gated_by' must be a list of config keys (strings)")
    torch_spec = _require_str(path, raw, "torch", line, lines, required=False)
    _check_torch_spec(path, torch_spec, line, lines)
    return PassEntry(
        name=name, stage=stage, lite=lite, why=why, gated_by=tuple(gated_by),
        kind=_require_str(path, raw, "kind", line, lines, choices=PASS_KINDS, required=False)
        or "function",
        guard=_require_str(path, raw, "guard", line, lines, required=False),
        torch=torch_spec,
        source=_require_str(path, raw, "source", line, lines, required=False),
        origin=str(path), line=line,
    )


def _parse_config(path: Path, raw: dict, line: int, lines: Sequence[str]) -> ConfigEntry:
    _check_fields(path, raw, _CONFIG_FIELDS, line, lines, "config")
    key = _require_str(path, raw, "key", line, lines)
    module = _require_str(path, raw, "module", line, lines, choices=tuple(CONFIG_MODULES),
                          required=False) or "inductor"
    if "lite_value" not in raw:
        raise RegistryError(path, line, f"config '{key}' has no 'lite_value'; add the value lite"
                            " mode forces, e.g. lite_value = false")
    torch_spec = _require_str(path, raw, "torch", line, lines, required=False)
    _check_torch_spec(path, torch_spec, line, lines)
    return ConfigEntry(
        key=key, lite_value=raw["lite_value"], module=module,
        kind=_require_str(path, raw, "kind", line, lines, choices=CONFIG_KINDS, required=False)
        or "pass_gate",
        why=_require_str(path, raw, "why", line, lines, required=False),
        torch=torch_spec, origin=str(path), line=line,
    )
